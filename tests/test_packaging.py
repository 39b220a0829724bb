"""What ``pip install`` ships and says: one top-level name (``ragrig``), every data file of a package folder
listed in ``[tool.setuptools.package-data]``, and none of the causes of the setuptools warnings an install used
to print (a license table, data folders mistaken for unlisted packages)."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_the_installed_distribution_adds_one_top_level_name():
    dist = importlib.metadata.distribution("ragrig")
    assert (dist.read_text("top_level.txt") or "").split() == ["ragrig"]
    assert [ep.value for ep in dist.entry_points if ep.name == "ragrig"] == ["ragrig.flows.cli:main"]


def _globbed(rel: str, pattern: str) -> bool:
    """setuptools' package-data glob: ``*`` stays within one folder (``*.yaml`` does not reach ``sweeps/a.yaml``)."""
    parts, pats = rel.split("/"), pattern.split("/")
    return len(parts) == len(pats) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pats))


def test_every_data_file_of_a_package_folder_is_shipped():
    """With ``include-package-data = false`` only the listed globs ship: a new YAML folder under configs/ that is
    not listed would silently be missing from a wheel."""
    package_dir = SETUPTOOLS["package-dir"]
    data = SETUPTOOLS["package-data"]
    missing = []
    for package, folder in package_dir.items():
        for p in (ROOT / folder).rglob("*"):
            if not p.is_file() or p.suffix in (".py", ".pyc") or "__pycache__" in p.parts:
                continue
            rel = p.relative_to(ROOT / folder).as_posix()
            if not any(_globbed(rel, g) for g in data.get(package, [])):
                missing.append(f"{folder}/{rel}")
    assert missing == []
    assert not _globbed("sweeps/a.yaml", "*.yaml") and _globbed("sweeps/a.yaml", "sweeps/*.yaml")


def test_no_cause_of_a_setuptools_warning():
    # a license table is deprecated (setuptools >= 77 takes an SPDX string)
    assert isinstance(PYPROJECT["project"]["license"], str)
    req = next(r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    assert int(re.search(r">=\s*(\d+)", req).group(1)) >= 77
    # include-package-data (the default) makes every data folder under a package "an importable package absent
    # from the packages configuration": configs/gate, configs/sweeps, configs/synonyms each printed ~40 lines
    assert SETUPTOOLS["include-package-data"] is False
