"""Issue 36 defect 10 and usability: tune's and sweep's inputs refused with one line, exit 2, before any work:
a negative --holdout-seeds (a raw ValueError, exit 1, before); a tag with one case (was told "use --folds 1 or
fewer", below the minimum of 2); the same test set twice, or two sharing a name (was "some cases got no score"
after every candidate ran). And ``ragrig tune`` with no FILE tunes the built-in space and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError, RagrigError
from ragrig.flows.cli import main


def _testset(path: Path, name: str = "t", first_tags: tuple[str, ...] = ("single-hop",) * 6) -> Path:
    path.write_text(f"name: {name}\ncases:\n" + "".join(
        f"  - {{id: c{i}, query: q{i}, expect: [{{doc: a.md}}], tags: [{t}]}}\n" for i, t in enumerate(first_tags)))
    return path


def _space(tmp_path: Path) -> Path:
    p = tmp_path / "space.yaml"
    p.write_text(f"name: s\nset: ['corpus.path={tmp_path}']\nconfigs: [{{retrieval.top_k: 5}}]\nfolds: 2\n")
    return p


@pytest.fixture
def no_work(monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("work started before the inputs were checked")

    monkeypatch.setattr("ragrig.eval.tune.run.run_sweep", started)
    monkeypatch.setattr("ragrig.eval.sweep.run.IngestPipeline.run", started)


def _err(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_negative_holdout_seeds_are_one_line_exit_2(tmp_path, capsys, no_work):
    ts = _testset(tmp_path / "ts.yaml")
    assert main(["tune", str(_space(tmp_path)), "-t", str(ts), "--holdout-fraction", "0.5",
                 "--holdout-seeds", "-1"]) == 2
    assert _err(capsys) == "error: tune: --holdout-seeds -1: a seed is a whole number 0 or more"


def test_a_one_case_tag_is_told_what_fixes_it(tmp_path, capsys, no_work):
    ts = _testset(tmp_path / "ts.yaml", first_tags=("single-hop",) * 5 + ("broad",))
    assert main(["tune", str(_space(tmp_path)), "-t", str(ts)]) == 2
    err = _err(capsys)
    assert "tag 'broad'" in err and "--no-stratify" in err and "--folds 1" not in err
    # and what it says works: the same tune without stratification passes the check (and reaches the work)
    assert main(["tune", str(_space(tmp_path)), "-t", str(ts), "--no-stratify"]) == 1
    assert "work started" in _err(capsys)


def test_the_same_test_set_twice_is_refused_naming_it(tmp_path, capsys, no_work):
    ts = _testset(tmp_path / "ts.yaml")
    assert main(["tune", str(_space(tmp_path)), "-t", str(ts), "-t", str(ts)]) == 2
    assert _err(capsys) == f"error: test set {ts} is given twice; give each test set once"


def test_two_test_sets_sharing_a_name_are_refused_naming_both(tmp_path, capsys, no_work):
    a = _testset(tmp_path / "a.yaml", name="same")
    b = _testset(tmp_path / "b.yaml", name="same")
    assert main(["tune", str(_space(tmp_path)), "-t", str(a), "-t", str(b)]) == 2
    assert _err(capsys) == (f"error: test sets {a} and {b} are both named 'same'; give each its own name "
                            "(results are kept by test-set name)")


def test_a_sweep_refuses_a_duplicate_test_set_before_any_ingest(tmp_path, no_work):
    from ragrig.eval.sweep.run import run_sweep
    from ragrig.eval.sweep.spec import load_sweep

    ts = _testset(tmp_path / "ts.yaml")
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: s\nset: ['corpus.path={tmp_path}']\ntestsets: [{ts}, ./ts.yaml]\n"
                 "configs: [{retrieval.top_k: 5}]\n")
    with pytest.raises(InputError, match="is given twice"):
        run_sweep(load_sweep(p), progress=False)
    assert not (tmp_path / "ragrig-home" / "mlflow").exists()


def test_tune_with_no_file_tunes_the_built_in_space_and_says_so(tmp_path, capsys, monkeypatch):
    from ragrig.eval.tune.space import BUILT_IN, load_space, resolve_space, with_options

    seen = {}

    def run_tune(spec, extra, **kw):
        seen.update(spec=spec, configs=kw["configs"], testsets=kw["testsets"])
        raise RagrigError("stopped here by the test")

    monkeypatch.setattr("ragrig.eval.tune.run.run_tune", run_tune)
    cfg = tmp_path / "my.yaml"
    cfg.write_text(f"corpus: {{path: {tmp_path}}}\nretrieval: {{top_k: 7}}\n")
    ts = _testset(tmp_path / "ts.yaml")
    assert main(["tune", "--config", str(cfg), "-t", str(ts), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("tuning the built-in space (first.yaml:") and str(cfg) in err[0]
    assert err[1] == "error: stopped here by the test"
    assert seen["spec"].name == "first" and seen["testsets"] == [str(ts)]
    labels = [label for label, _, _ in seen["configs"]]
    assert labels[0] == "default" and len(labels) == 12
    assert all(c.retrieval.top_k == 7 for _, _, c in seen["configs"])  # the user's config is the base
    second = [c for _, ov, c in seen["configs"] if "retrieval.fusion.weights.vector2" in ov]
    assert len(second) == 1 and second[0].retrieval.views.second_model == "bge-small-en-v1.5"
    assert any(c.retrieval.rerank.enabled for _, _, c in seen["configs"])
    # the packaged file is the one the CLI read, and resolves on the default config too
    assert BUILT_IN.is_file() and BUILT_IN.parent.name == "tune"
    assert len(resolve_space(with_options(load_space(BUILT_IN)))) == 12
