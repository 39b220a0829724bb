"""The lean forward (``encoders/bert_forward.py``) gives sentence-transformers' bits for the models it runs, refuses
the others, and is used only where ``forward_check.py`` recorded it equal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.encoders import forward_check
from ragrig.retrieval.encoders.bert_forward import BertForward
from ragrig.retrieval.encoders.torch_backend import TorchEncoder
from ragrig.retrieval.embedding import resolve_model

ROOT = Path(__file__).resolve().parents[3]
MINILM = Path(resolve_model("all-MiniLM-L6-v2"))


@pytest.fixture(scope="module")
def st():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(MINILM), device="cpu")


def _texts() -> list[str]:
    """The sample corpus's paragraphs and every query of our test sets: real text, every length up to past the
    window, besides the probes' edge cases."""
    out = list(forward_check.PROBES)
    for f in sorted((ROOT / "datasets" / "sample").rglob("*.md"))[:8]:
        out += [p for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()][:25]
    for f in sorted((ROOT / "datasets" / "testsets").glob("*.yaml")):
        out += [c["query"] for c in yaml.safe_load(f.read_text(encoding="utf-8"))["cases"]][:40]
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.slow
def test_the_lean_forward_gives_sentence_transformers_bits(st):
    lean = BertForward.open(MINILM)
    assert lean is not None
    texts = _texts()
    assert len(texts) > 150 and max(lean.count_tokens(texts)) > lean.window  # some are cut at the window
    assert (lean.window, lean.dim) == (st.max_seq_length - 2, 384)
    assert lean.count_tokens(texts) == [len(x) for x in st.tokenizer(texts, add_special_tokens=False)["input_ids"]]
    for size, normalize, part in ((32, True, texts), (7, False, texts[:60]), (1, True, texts[:25])):
        ours = lean.encode(part, batch_size=size, normalize=normalize)
        theirs = st.encode(part, batch_size=size, normalize_embeddings=normalize, convert_to_numpy=True)
        assert ours.dtype == np.float32 and np.array_equal(_bits(ours), _bits(theirs)), (size, normalize)
    assert lean.encode([], batch_size=32, normalize=True).shape == (0, 384)


@pytest.mark.slow
def test_a_folder_sentence_transformers_saved_runs_lean_too(st, tmp_path):
    """The format ``ragrig adapt`` writes (sentence-transformers' own save: no max_seq_length in
    sentence_bert_config.json, the window in tokenizer_config.json, prompts listed but none by default)."""
    st.save(str(tmp_path / "saved"))
    lean = BertForward.open(tmp_path / "saved")
    assert lean is not None and lean.window == 254
    assert forward_check.same_output(lean, st, batch_size=32, normalize=True)


def _variant(tmp_path: Path, edit) -> Path:
    """A copy of the packaged model's small files (the weights linked), changed by ``edit(folder)``."""
    folder = tmp_path / "variant"
    shutil.copytree(MINILM, folder, ignore=shutil.ignore_patterns("model.safetensors"))
    (folder / "model.safetensors").symlink_to(MINILM / "model.safetensors")
    edit(folder)
    return folder


def _set(path: Path, **values) -> None:
    data = json.loads(path.read_text())
    data.update(values)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("edit", [
    lambda f: _set(f / "config.json", model_type="roberta"),
    lambda f: _set(f / "config.json", position_embedding_type="relative_key"),
    lambda f: _set(f / "sentence_bert_config.json", do_lower_case=True),
    lambda f: (f / "config_sentence_transformers.json").write_text(json.dumps({"default_prompt_name": "query",
                                                                                "prompts": {"query": "q: "}})),
    lambda f: _set(f / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True),
    lambda f: (f / "modules.json").write_text(json.dumps(
        [*json.loads((f / "modules.json").read_text()),
         {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}])),
    lambda f: (f / "modules.json").write_text("not json"),
    lambda f: (f / "1_Pooling" / "config.json").write_text("[1, 2]"),
    lambda f: (f / "tokenizer.json").unlink(),
    lambda f: (f / "model.safetensors").unlink(),
], ids=["roberta", "relative-positions", "lower-cased-by-st", "default-prompt", "max-pooling", "dense-layer",
        "garbage-modules", "pooling-not-an-object", "no-tokenizer-json", "no-safetensors"])
def test_models_it_does_not_run_are_left_to_sentence_transformers(tmp_path, edit):
    assert BertForward.open(_variant(tmp_path, lambda f: None)) is not None  # the unchanged copy runs
    shutil.rmtree(tmp_path / "variant")
    assert BertForward.open(_variant(tmp_path, edit)) is None


@pytest.fixture
def fresh_verdicts(monkeypatch, tmp_path):
    """This process's verdicts emptied for the test, and a machine cache of its own (the home's file is the
    test's own too). The tests using it are about when a check runs and what is recorded, not about the probes
    (the two tests above compare every probe and more): a check here encodes three short probes, not the
    window-long one (~1.5 s of a worker's core a check, seven checks)."""
    monkeypatch.setattr(forward_check, "_verdicts", {})
    monkeypatch.setenv(forward_check.CACHE_ENV, str(tmp_path / "machine-cache"))
    monkeypatch.setattr(forward_check, "PROBES", ("", "How does grappling work?", "naïve café 日本語 🙂"))


def _encoder(check: Path, identity: str = "minilm-test") -> TorchEncoder:
    return TorchEncoder(str(MINILM), EmbeddingConfig(), identity=identity, check_file=check)


def test_the_first_encoder_checks_and_records_later_ones_skip_sentence_transformers(tmp_path, fresh_verdicts, st):
    check = tmp_path / "torch-forward.json"
    first = _encoder(check)
    assert first._st is not None and first.lean is not None  # loaded by sentence-transformers, then checked
    [(key, verdict)] = json.loads(check.read_text()).items()
    assert verdict is True and key.startswith("minilm-test | cpu | normalize=True | torch==")
    assert all(f"{lib}==" in key for lib in ("transformers", "sentence-transformers", "tokenizers"))

    forward_check._verdicts.clear()  # a new process: only the file knows
    later = _encoder(check)
    assert later._st is None and later.lean is not None
    queries = ["how does grappling work", "what does lethal do?"]
    assert np.array_equal(_bits(later.encode(queries)),
                          _bits(st.encode(queries, batch_size=32, normalize_embeddings=True)))
    docs = ["a document about grappling", "another, longer document " * 20]
    assert np.array_equal(_bits(later.encode(docs)), _bits(st.encode(docs, batch_size=32, normalize_embeddings=True)))
    assert (later.window, later.dim, later.count_tokens(["a b"])) == (254, 384, [2])
    assert later._st is None  # none of that loaded sentence-transformers
    later.encode(docs, progress=True)  # its progress bar is sentence-transformers' own
    assert later._st is not None


def test_a_verdict_one_home_recorded_is_found_by_a_new_home_on_the_same_machine(tmp_path, fresh_verdicts,
                                                                               monkeypatch):
    home_a, home_b = tmp_path / "a" / "torch-forward.json", tmp_path / "b" / "torch-forward.json"
    assert _encoder(home_a)._st is not None  # the first home checks (sentence-transformers loaded)
    machine = forward_check.machine_file()
    assert machine == tmp_path / "machine-cache" / "torch-forward.json"
    assert json.loads(machine.read_text()) == json.loads(home_a.read_text())

    forward_check._verdicts.clear()  # a new process
    later = _encoder(home_b)
    assert later._st is None and later.lean is not None  # no check: the machine's file knew
    assert json.loads(home_b.read_text()) == json.loads(machine.read_text())  # and the new home keeps it

    forward_check._verdicts.clear()
    monkeypatch.setenv(forward_check.CACHE_ENV, "")  # no machine cache: a new home checks again
    assert forward_check.machine_file() is None
    assert _encoder(tmp_path / "c" / "torch-forward.json")._st is not None


def test_the_machine_cache_defaults_to_the_users_cache_and_an_unwritable_one_costs_only_a_check(
        tmp_path, fresh_verdicts, monkeypatch):
    monkeypatch.delenv(forward_check.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert forward_check.machine_file() == tmp_path / "xdg" / "ragrig" / "torch-forward.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert forward_check.machine_file() == tmp_path / "user" / ".cache" / "ragrig" / "torch-forward.json"
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv(forward_check.CACHE_ENV, str(tmp_path / "file"))  # its folder cannot be made
    check = tmp_path / "home" / "torch-forward.json"
    forward_check.record(check, "k", True)
    assert json.loads(check.read_text()) == {"k": True} and forward_check.recorded(check, "k") is True


def test_a_lean_forward_that_differs_is_recorded_and_never_used(tmp_path, fresh_verdicts, monkeypatch, st):
    check = tmp_path / "torch-forward.json"
    real = BertForward._pool
    monkeypatch.setattr(BertForward, "_pool", lambda self, t, m: real(self, t, m) * (1 + 1e-6))
    enc = _encoder(check)
    assert enc.lean is None and list(json.loads(check.read_text()).values()) == [False]
    got = enc.encode(["lethal"])
    assert np.array_equal(_bits(got), _bits(st.encode(["lethal"], normalize_embeddings=True)))

    monkeypatch.setattr(BertForward, "_pool", real)
    forward_check._verdicts.clear()
    assert _encoder(check).lean is None  # the recorded verdict stands: no check, no lean forward


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"other key": true}'])
def test_a_damaged_or_foreign_record_costs_only_a_check(tmp_path, fresh_verdicts, content):
    check = tmp_path / "torch-forward.json"
    check.write_text(content)
    enc = _encoder(check)
    assert enc._st is not None and enc.lean is not None
    assert True in json.loads(check.read_text()).values()


def test_no_identity_or_another_device_means_sentence_transformers(tmp_path, fresh_verdicts):
    assert _encoder(tmp_path / "c.json", identity="").lean is None  # a hub model: no folder identity
    assert not (tmp_path / "c.json").exists()


def test_weights_the_lean_forward_cannot_run_are_a_false_verdict_not_an_error(tmp_path, fresh_verdicts, caplog):
    """A config that names a seventh layer the weights lack: sentence-transformers loads it (a new layer at
    random), the lean forward fails on the probes: recorded unequal, one warning, queries by sentence-transformers."""
    folder = _variant(tmp_path, lambda f: _set(f / "config.json", num_hidden_layers=7))
    check = tmp_path / "torch-forward.json"
    enc = TorchEncoder(str(folder), EmbeddingConfig(model=str(folder)), identity="seven-layers", check_file=check)
    assert enc.lean is None and list(json.loads(check.read_text()).values()) == [False]
    assert any("cannot run" in r.getMessage() and "KeyError" in r.getMessage() for r in caplog.records)
    assert enc.encode(["lethal"]).shape == (1, 384)
