"""The shape of the code, read from the source with ast (imports inside functions count too):

- imports point one way: flows -> tasks -> eval -> retrieval.serve -> retrieval.search -> {retrieval.multihop,
  retrieval.index, retrieval.cache, retrieval.ingest, the retrieval leaves} -> configs; nothing imports "up" that chain;
- no import cycle between modules;
- only flows/ imports rich (rendering), and the library (configs, retrieval, eval) never imports Prefect;
- every import of the project goes through the one namespace, ``ragrig.``;
- every package folder is listed in pyproject.toml, so ``pip install`` ships it.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("configs", "retrieval", "eval", "tasks", "flows", "ragrig")

# Layers, lowest first: a module may import its own layer or lower ones only. Within retrieval, search (the
# pipeline and facade) sits above everything else it uses; multihop, index, cache and ingest never import it.
LAYERS = [
    ("configs",),
    ("retrieval",),  # the leaves: documents, results, markdown, keywords, tokenize, headers, embedding, context...
    ("retrieval.adapt", "retrieval.cache", "retrieval.index", "retrieval.ingest", "retrieval.multihop"),
    ("retrieval.search",),
    ("retrieval.serve",),  # the retriever over HTTP (FastAPI; no rich, no Prefect): above the search it serves
    ("eval",),
    ("tasks",),
    ("flows",),
    ("ragrig",),  # the public API re-exports from every layer
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts[0] == "ragrig" else "ragrig." + ".".join(parts)


def raw_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def sources() -> dict[str, set[str]]:
    return {module_name(p): raw_imports(p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def layer(module: str) -> int:
    """The layer of a ragrig module (the most specific prefix that names one)."""
    name = module.removeprefix("ragrig.") if module != "ragrig" else "ragrig"
    best, depth = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    return best if best >= 0 else len(LAYERS) - 1  # ragrig/ itself (the API, __main__) is the top


def project_edges() -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from pkg import name`` counts as the module ``pkg.name``
    when that is a module, else as ``pkg``)."""
    found = sources()
    mods = set(found)
    edges = {}
    for m, imps in found.items():
        targets = set()
        for i in imps:
            if not i.startswith("ragrig"):
                continue
            while i and i not in mods:
                i = i.rpartition(".")[0]
            if i and i != m:
                targets.add(i)
        edges[m] = targets
    return edges


def test_the_scan_sees_the_modules_and_their_imports():
    edges = project_edges()
    assert "ragrig.retrieval.search.fusion" in edges["ragrig.retrieval.search.retriever"]
    assert "ragrig.retrieval.multihop.hops" in edges["ragrig.retrieval.search.retriever"]
    assert len(edges) > 80


def test_imports_point_down_the_layers():
    against = sorted(f"{m} ({LAYERS[layer(m)][0]}) imports {t} ({LAYERS[layer(t)][0]})"
                     for m, ts in project_edges().items() for t in ts if layer(t) > layer(m))
    assert against == []


def test_no_import_cycles():
    edges = project_edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in edges:
        if v not in index:
            strong(v)
    assert cycles == []


def test_only_flows_imports_rich_and_the_library_never_imports_prefect():
    found = sources()
    rich = {m for m, imps in found.items() if not m.startswith("ragrig.flows") and any(
        i == "rich" or i.startswith("rich.") for i in imps)}
    assert rich == set()
    prefect = {m for m, imps in found.items() if layer(m) <= layer("ragrig.eval") and any(
        i.split(".")[0] in ("prefect", "prefect_dask") for i in imps)}
    assert prefect == set()


def test_the_project_is_imported_through_its_one_namespace():
    bare = {(m, i) for m, imps in sources().items() for i in imps if i.split(".")[0] in PACKAGES[:-1]}
    assert bare == set()


def test_every_package_folder_is_installed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {module_name(p.parent / "__init__.py") for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")}
    assert folders == listed
