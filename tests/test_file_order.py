"""The suite's file order (tests/file_order.py): measured seconds per file from pytest's JUnit XML, longest first,
an unmeasured file estimated from its slow tests; the committed figures name only files that exist."""

from __future__ import annotations

from pathlib import Path

from file_order import DURATIONS, SLOW_TEST_S, estimate, from_junit, load, mean_of

ROOT = Path(__file__).resolve().parents[1]


def test_seconds_per_file_add_up_each_tests_time_from_the_junit_xml(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text("""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.ops.test_servers" name="test_a" time="1.25"/>
<testcase classname="tests.ops.test_servers" name="test_b" time="2.5"/>
<testcase classname="tests.eval.test_gate.TestVerdicts" name="test_c" time="0.3"/>
<testcase classname="tests.eval.test_gate" name="test_d"/>
<testcase classname="conftest" name="weird" time="9"/>
</testsuite></testsuites>""")
    assert from_junit(xml) == {"tests/eval/test_gate.py": 0.3, "tests/ops/test_servers.py": 3.8}


def test_several_runs_give_each_files_mean_over_the_runs_that_have_it() -> None:
    assert mean_of([{"a.py": 1.0, "b.py": 4.0}, {"a.py": 2.0}]) == {"a.py": 1.5, "b.py": 4.0}


def test_a_measured_file_uses_its_seconds_and_a_new_one_its_slow_tests() -> None:
    seconds = {"tests/a/test_x.py": 42.0}
    assert estimate("tests/a/test_x.py", 0, seconds) == 42.0
    assert estimate("tests/a/test_new.py", 3, seconds) == 3 * SLOW_TEST_S
    assert estimate("tests/a/test_new.py", 0, seconds) == 0.0


def test_missing_or_damaged_figures_order_by_slow_tests(tmp_path: Path) -> None:
    assert load(tmp_path / "none.json") == {}
    for text in ("{not json", "[1, 2]", '"text"'):
        (tmp_path / "d.json").write_text(text)
        assert load(tmp_path / "d.json") == {}
    (tmp_path / "d.json").write_text('{"tests/test_x.py": 3, "tests/test_y.py": "slow", "tests/test_z.py": true}')
    assert load(tmp_path / "d.json") == {"tests/test_x.py": 3.0}


def test_the_committed_figures_name_only_test_files_that_exist() -> None:
    figures = load(DURATIONS)
    assert len(figures) > 100 and all(v >= 0 for v in figures.values())
    assert [p for p in figures if not (ROOT / p).is_file()] == []
