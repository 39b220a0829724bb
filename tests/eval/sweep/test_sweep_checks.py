"""Every sweep config and tune candidate is checked before any work (``eval/sweep/checks.py``): found by hostile
probes (2026-11-29), each of these used to ingest, train or evaluate first and fail later, or fail naming the wrong
thing."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.sweep import run as sweep_run
from ragrig.eval.sweep.spec import load_sweep, resolve
from ragrig.eval.tune.space import load_space, resolve_space


def write(tmp_path: Path, body: str, name: str = "space.yaml") -> Path:
    p = tmp_path / name
    p.write_text("name: s\nset: [\"retrieval.synonyms=null\", \"eval.testsets=[]\"]\n" + body)
    return p


@pytest.mark.parametrize("value", ["'yes'", "1", "null", "[true]"])  # bare yes is YAML's true
@pytest.mark.parametrize("key", ["embedding.adapt", "retrieval.views.adapt"])
def test_a_flag_that_is_not_true_or_false_says_so(tmp_path, key, value):
    p = write(tmp_path, f"configs: [{{{key}: {value}}}]\n")
    with pytest.raises(InputError) as err:
        resolve_space(load_space(p))
    msg = str(err.value)
    assert msg.startswith(f"{p}: candidate '") and f"{key}: " in msg and "is not true or false" in msg, msg
    assert "not a setting" not in msg and "\n" not in msg  # not the --set refusal: this is a space file


@pytest.mark.parametrize("candidate, says", [
    ("{embedding.adapt: true, embedding.backend: openai}", "embedding.backend: openai is an endpoint"),
    ("{embedding.adapt: true, embedding.model: bge-small-en-v1.5}", "runs as int8 ONNX by default"),
])
def test_an_adapted_candidate_adapt_cannot_train_fails_before_any_work(tmp_path, monkeypatch, candidate, says):
    from ragrig.eval.sweep import adapted

    monkeypatch.setattr(adapted, "materialize", lambda *a, **k: pytest.fail("trained or ingested before refusing"))
    for make, load in ((resolve_space, load_space), (resolve, load_sweep)):
        p = write(tmp_path, f"configs: [{candidate}]\n")
        with pytest.raises(InputError, match=says) as err:
            make(load(p))
        assert "candidate '" in str(err.value) or "sweep config '" in str(err.value)


@pytest.mark.parametrize("candidate, key", [
    ("{embedding.model: MISSING}", "embedding.model"),
    ("{embedding.adapt: true, embedding.model: MISSING}", "embedding.model"),
    ("{retrieval.views.second_model: MISSING}", "retrieval.views.second_model"),
    ("{retrieval.views.second_model: MISSING, retrieval.views.adapt: true}", "retrieval.views.second_model"),
])
def test_a_model_folder_that_is_not_there_is_named_before_any_work(tmp_path, candidate, key):
    missing = tmp_path / "no-such-model"
    p = write(tmp_path, f"configs: [{candidate.replace('MISSING', str(missing))}]\n")
    with pytest.raises(InputError) as err:
        resolve_space(load_space(p))
    msg = str(err.value)
    assert f"{key}: " in msg and str(missing) in msg and "no model folder" in msg, msg
    if key != "embedding.model":
        assert "embedding.model" not in msg  # the view's key, not the main encoder's


def test_an_error_in_the_base_names_the_base_not_a_candidate(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("retrieval:\n  top_k: ten\n")
    p = write(tmp_path, f"base: {base}\nconfigs: [{{retrieval.candidates: 50}}]\n")
    with pytest.raises(InputError) as err:
        resolve_space(load_space(p))
    msg = str(err.value)
    assert "the base config (" in msg and str(base) in msg and "retrieval.top_k" in msg, msg
    assert "candidate 'base'" not in msg and "candidate 'default'" not in msg


def test_a_sweep_metric_is_checked_when_the_file_is_read(tmp_path):
    with pytest.raises(InputError, match=r"sweep.yaml:3: metric: .*unknown metric 'bogus@10'"):
        load_sweep(write(tmp_path, "metric: bogus@10\nconfigs: [{retrieval.top_k: 5}]\n", "sweep.yaml"))
    with pytest.raises(InputError, match=r"metric: .*unknown metric 'ndcg@0'"):
        load_sweep(write(tmp_path, "metric: ndcg@0\nconfigs: [{retrieval.top_k: 5}]\n", "sweep.yaml"))


def test_a_sweep_reads_its_test_sets_before_training(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_run, "materialize", lambda *a, **k: pytest.fail("trained before the test sets were read"))
    p = write(tmp_path, f"testsets: [{tmp_path / 'nope.yaml'}]\nconfigs: [{{embedding.adapt: true}}]\n", "sweep.yaml")
    with pytest.raises(InputError, match="nope.yaml"):
        sweep_run.run_sweep(load_sweep(p), log_mlflow=False, progress=False)
