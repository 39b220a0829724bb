"""Repository hygiene: no large file is committed outside datasets/ (a 10.6 MB wheel once sat at the root,
used by nothing), and a test session leaves no ``ragrig-test-prefect-*`` or ``ragrig-test-cache-*`` folder in the
temp dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 1 * 2**20  # 1 MB: data sets live under datasets/, everything else is code, docs and small results


def _tracked() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    p = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"not a git checkout: {p.stderr.decode(errors='replace').strip()}")
    return [f for f in p.stdout.decode().split("\0") if f]


def test_no_tracked_file_over_1_mb_outside_datasets():
    tracked = _tracked()
    assert "pyproject.toml" in tracked  # the listing is this repository's
    large = {f: (ROOT / f).stat().st_size for f in tracked
             if not f.startswith("datasets/") and (ROOT / f).is_file() and (ROOT / f).stat().st_size > MAX_BYTES}
    assert large == {}, f"tracked files over 1 MB outside datasets/ (build outputs belong in .gitignore): {large}"


def test_a_test_session_leaves_no_prefect_home_behind(tmp_path):
    """conftest.py gives each test process a temporary PREFECT_HOME; a session in a fresh temp dir must remove
    it (and whatever Prefect wrote there) when it ends."""
    (tmp_path / "tmp").mkdir()
    test = tmp_path / "test_prefect_home.py"
    test.write_text("import os\n\ndef test_home():\n    home = os.environ['PREFECT_HOME']\n"
                    "    open(os.path.join(home, 'written.txt'), 'w').write('x')\n")
    # the test file lies outside tests/, so tests/conftest.py is loaded as a plugin (-p conftest)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": str(ROOT / "tests")}
    # a fresh session: the caller's settings and plugins stay out
    for name in ("PREFECT_HOME", "RAGRIG_CACHE_DIR", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(name, None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-p", "conftest", "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "basetemp"),
                        str(test)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert list((tmp_path / "tmp").glob("ragrig-test-prefect-*")) == []
    assert list((tmp_path / "tmp").glob("ragrig-test-cache-*")) == []  # nor its machine cache
