"""Rendering lives under flows/: no module outside it imports ``rich`` (read from the source with ast, so
an import inside a function counts too), and the library never imports the CLI or the renderers."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("configs", "retrieval", "eval", "tasks", "flows", "ragrig")


def imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def sources() -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): imports(p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def test_the_scan_sees_the_renderers():
    found = sources()
    assert "rich.table" in found["flows/render/gate.py"] and "rich.console" in found["flows/render/console.py"]


def test_only_flows_imports_rich():
    offenders = {f for f, mods in sources().items()
                 if not f.startswith("flows/") and any(m == "rich" or m.startswith("rich.") for m in mods)}
    assert offenders == set()


def test_the_library_never_imports_flows_or_tasks():
    offenders = {(f, m) for f, mods in sources().items() if f.split("/")[0] in ("configs", "retrieval", "eval")
                 for m in mods if m.startswith(("ragrig.flows", "ragrig.tasks", "prefect"))}
    assert offenders == set()
