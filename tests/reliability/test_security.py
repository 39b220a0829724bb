"""Security properties that a refactor could silently break: safe YAML only, no unpickling of index or cache
files, expectations cannot reach outside the index, servers default to loopback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["configs", "retrieval", "eval", "tasks", "flows", "benchmarks", "datasets/tools"]
FORBIDDEN = [
    (re.compile(r"yaml\.load\((?![^)]*SafeLoader)"), "yaml.load without SafeLoader"),
    (re.compile(r"yaml\.(unsafe_load|full_load)\("), "unsafe YAML loading"),
    (re.compile(r"\bpickle\.loads?\("), "unpickling"),
    (re.compile(r"allow_pickle\s*=\s*True"), "numpy allow_pickle=True"),
    (re.compile(r"\btorch\.load\("), "torch.load (unpickles)"),
    (re.compile(r"\beval\((?!uate)"), "eval()"),
]


def source_files() -> list[Path]:
    return [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]


@pytest.mark.parametrize("pattern, what", FORBIDDEN, ids=[w for _, w in FORBIDDEN])
def test_no_unsafe_loading_in_the_code(pattern, what):
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in source_files()
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if pattern.search(line) and not line.lstrip().startswith("#")]
    assert not offenders, f"{what}: {offenders}"


def test_yaml_tags_that_build_python_objects_are_refused(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("retrieval: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(InputError, match="evil.yaml"):
        load_config(p)


def test_expectations_cannot_reach_outside_the_index():
    from ragrig.eval.relevance import resolve_case
    from ragrig.eval.testset import Case, Expectation

    case = Case(id="x", query="q", expect=[Expectation(doc="../../../etc/passwd")])
    with pytest.raises(InputError, match="is not in the index"):
        resolve_case(case, {}, "ts.yaml")


def test_servers_default_to_loopback():
    cfg = load_config()
    assert cfg.index.chroma.host == "127.0.0.1"
    assert cfg.retrieval.judge.base_url.startswith("http://127.0.0.1")
    from ragrig.flows.runners import task_runner_for

    runner = task_runner_for(load_config(overrides=["flow.runner=dask"]))
    assert runner.cluster_kwargs["host"] == "127.0.0.1" and runner.cluster_kwargs["dashboard_address"] is None
