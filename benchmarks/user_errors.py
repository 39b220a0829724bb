"""The user-error table: each common user error of tests/reliability/test_user_errors.py, run as a user runs it
(the installed ``ragrig``, a fresh home, offline), with what it printed and its exit code. Prints a Markdown
table and writes benchmarks/results/user_errors.json; docs/first-contact.md shows the table.

    python benchmarks/user_errors.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from test_user_errors import CASES, make_world, run_case  # noqa: E402  (the cases live with their test)

import ragrig  # noqa: E402,F401  (fails early when ragrig is not installed)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        w = make_world(Path(d))
        try:
            for i, case in enumerate(CASES):
                p = run_case(case, w, Path(d) / f"home-{i}")
                line = p.stderr.strip().replace(d, "<tmp>")
                rows.append({"case": case.name, "command": "ragrig " + " ".join(case.args).replace("{tmp}", "<tmp>")
                             .replace("{port}", "<a taken port>"),
                             "stderr": line, "stdout_chars": len(p.stdout), "exit": p.returncode,
                             "expected_exit": case.code})
                print(f"{case.name}: exit {p.returncode}", file=sys.stderr)
        finally:
            w["socket"].close()
    out = ROOT / "benchmarks" / "results" / "user_errors.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print("| case | command | what it printed (stderr; stdout empty) | exit |\n|---|---|---|---:|")
    for r in rows:
        said = r["stderr"].replace("|", "\\|")
        print(f"| {r['case']} | `{r['command']}` | {said} | {r['exit']} |")
    bad = [r["case"] for r in rows if r["exit"] != r["expected_exit"] or r["stdout_chars"]]
    if bad:
        raise SystemExit(f"not as documented: {', '.join(bad)}")


if __name__ == "__main__":
    main()
