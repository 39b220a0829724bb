"""``evaluate_testsets``, the one evaluate-and-log sequence: the order of its steps (through a recording
executor), what it skips when the caller already holds a part, when it logs, and that a bad test set fails
before the index is opened. The steps' own work is faked here; tests/flows covers it end to end."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.evaluate import evaluate_testsets, load_testsets
from ragrig.eval.tracking.runs import RunOptions

import ragrig
from ragrig.retrieval.executor import Executor

TESTSET = "name: {name}\ncases:\n  - id: a\n    query: how do I move?\n    expect: [{{doc: rules.md}}]\n"
RETRIEVER = SimpleNamespace(version=SimpleNamespace(documents_by_id={}))


@pytest.fixture
def cfg(make_config, tmp_path):
    (tmp_path / "corpus").mkdir()
    return make_config()


@pytest.fixture
def paths(tmp_path):
    out = []
    for name in ("one", "two"):
        p = tmp_path / f"{name}.yaml"
        p.write_text(TESTSET.format(name=name))
        out.append(str(p))
    return out


class Recorder(Executor):
    """An executor that records each step and fakes the index, resolution, scoring and logging."""

    def __init__(self, make_report):
        self.steps: list[str] = []
        self.args: dict[str, list[tuple]] = {}
        self.make_report = make_report

    def call(self, name, fn, *args):
        self.steps.append(name)
        self.args.setdefault(name, []).append(args)
        if name == "open-index":
            return RETRIEVER
        if name == "resolve-expectations":
            return [{"a": [f"target of {ts.name}"]} for ts in args[0]]
        if name == "retrieve-and-score":
            return self.make_report(testset=args[1].name)
        if name == "log-mlflow":
            return f"run-{args[1].testset}"
        return fn(*args)  # load-testsets: the real loader


def test_steps_run_in_order_and_every_expectation_resolves_before_anything_is_logged(cfg, paths, make_report):
    rec = Recorder(make_report)
    options = RunOptions(run_name="nightly")
    reports = evaluate_testsets(cfg, paths, repeats=3, max_hops=1, label="x", log=options, executor=rec)
    assert rec.steps == ["load-testsets", "open-index", "resolve-expectations",
                         "retrieve-and-score", "log-mlflow", "retrieve-and-score", "log-mlflow"]
    assert [(r.testset, r.mlflow_run_id) for r in reports] == [("one", "run-one"), ("two", "run-two")]
    assert reports[0].to_dict()["mlflow_run_id"] == "run-one"
    # each test set is scored with its own resolved targets, on the one retriever, with the caller's settings
    scored = rec.args["retrieve-and-score"]
    assert [(a[1].name, a[2], a[3], a[4], a[5], a[6]) for a in scored] == [
        ("one", RETRIEVER, {"a": ["target of one"]}, 3, 1, "x"),
        ("two", RETRIEVER, {"a": ["target of two"]}, 3, 1, "x"),
    ]
    assert [a[2] for a in rec.args["log-mlflow"]] == [options, options]


@pytest.mark.parametrize("log, sets", [(None, []), (RunOptions(), ["mlflow.enabled=false"])],
                         ids=["log=None (the gate)", "mlflow disabled"])
def test_nothing_is_logged_without_options_or_with_mlflow_off(make_config, tmp_path, paths, make_report, log, sets):
    (tmp_path / "corpus").mkdir()
    rec = Recorder(make_report)
    reports = evaluate_testsets(make_config(None, *sets), paths, log=log, executor=rec)
    assert "log-mlflow" not in rec.steps and [r.mlflow_run_id for r in reports] == [None, None]
    assert "mlflow_run_id" not in reports[0].to_dict()


def test_what_the_caller_holds_is_not_loaded_opened_or_resolved_again(cfg, paths, make_report):
    """A sweep passes loaded test sets, its own retriever and targets it resolved once per index."""
    rec = Recorder(make_report)
    sets = load_testsets(cfg, paths)
    targets = [{"a": ["mine"]}, {"a": ["mine too"]}]
    evaluate_testsets(cfg, sets, retriever=RETRIEVER, targets=targets, log=None, executor=rec)
    assert rec.steps == ["retrieve-and-score", "retrieve-and-score"]
    assert [a[3] for a in rec.args["retrieve-and-score"]] == targets


def test_default_test_sets_come_from_the_config(make_config, tmp_path, paths, make_report):
    (tmp_path / "corpus").mkdir()
    cfg = make_config(None, f"eval.testsets=[{paths[1]}]")
    reports = evaluate_testsets(cfg, executor=Recorder(make_report), log=None)
    assert [r.testset for r in reports] == ["two"]


def test_a_bad_test_set_fails_before_the_index_is_opened(cfg, paths, tmp_path, make_report):
    rec = Recorder(make_report)
    with pytest.raises(InputError, match="missing.yaml"):
        evaluate_testsets(cfg, [paths[0], str(tmp_path / "missing.yaml")], executor=rec)
    assert rec.steps == ["load-testsets"]
    with pytest.raises(InputError, match="no test set: pass --testset FILE or set eval.testsets"):
        evaluate_testsets(cfg, [], executor=rec)


def test_the_public_api_is_this_function():
    assert ragrig.evaluate is evaluate_testsets
