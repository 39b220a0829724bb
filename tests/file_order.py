"""The order `make test`'s parallel workers take the test files in: the longest first, by measured seconds.

With ``--dist loadfile`` each worker takes whole files, the next one in collection order whenever it is free, so
the suite ends when the last file does. Longest first (the classic LPT rule) leaves the short files for the
end, where they even out the workers. The seconds per file are ``tests/durations.json``, measured on a full run;
a file it does not name (new since) is estimated from its slow tests. Stale figures only cost balance, never a
test. Rewrite them after a change that moves the suite's times:

    .venv/bin/python -m pytest -q -n 2 --dist loadfile --junitxml=/tmp/suite.xml
    .venv/bin/python tests/file_order.py /tmp/suite.xml [/tmp/suite2.xml ...]

(several runs: the mean per file, which evens out the first test on a worker paying that worker's set-up.)
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
SLOW_TEST_S = 10.0  # a file the figures do not name: this much per slow test (the suite's slow tests' median is ~4 s)


def load(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test file (its path from the repository root); {} when the file is missing or damaged."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def estimate(path: str, slow_tests: int, durations: dict[str, float]) -> float:
    return durations.get(path, SLOW_TEST_S * slow_tests)


def from_junit(xml_path: Path) -> dict[str, float]:
    """Seconds per test file from pytest's JUnit XML (each test's setup, call and teardown), by its classname
    (``tests.ops.test_servers`` or ``tests.x.test_y.TestClass`` -> ``tests/ops/test_servers.py``)."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(xml_path).iter("testcase"):
        parts = case.get("classname", "").split(".")
        ends = [i for i, p in enumerate(parts) if p.startswith("test_")]
        if ends:
            seconds["/".join(parts[: ends[0] + 1]) + ".py"] += float(case.get("time") or 0.0)
    return {k: round(v, 1) for k, v in sorted(seconds.items())}


def mean_of(runs: list[dict[str, float]]) -> dict[str, float]:
    """Seconds per file averaged over the runs that name it."""
    files = sorted({f for run in runs for f in run})
    return {f: round(sum(run[f] for run in runs if f in run) / sum(f in run for run in runs), 1) for f in files}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tests/file_order.py JUNIT_XML [JUNIT_XML ...]")
    figures = mean_of([from_junit(Path(a)) for a in sys.argv[1:]])
    DURATIONS.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {DURATIONS}: {len(figures)} files, {sum(figures.values()):.0f} s")
