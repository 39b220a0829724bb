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


def fresh_session(tmp_path: Path, test: Path, args: list[str], env: dict[str, str], unset: tuple[str, ...]) -> None:
    """Run ``test`` (a file outside tests/, so tests/conftest.py is loaded as a plugin: ``-p conftest``) in a fresh
    pytest session: this session's settings and plugins and the variables ``unset`` stay out, ``env`` goes in."""
    full = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", *unset):
        full.pop(name, None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "-p", "conftest",
                        "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "basetemp"), str(test)],
                       cwd=ROOT, env={**full, **env}, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


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
    fresh_session(tmp_path, test, ["-p", "no:xdist"], {"TMPDIR": str(tmp_path / "tmp")},
                  ("PREFECT_HOME", "RAGRIG_CACHE_DIR"))
    assert list((tmp_path / "tmp").glob("ragrig-test-prefect-*")) == []
    assert list((tmp_path / "tmp").glob("ragrig-test-cache-*")) == []  # nor its machine cache


@pytest.mark.parametrize("user", [None, "3"])
def test_each_parallel_worker_gets_its_share_of_the_cores_or_the_users_setting(tmp_path, user):
    """conftest.py sets OMP_NUM_THREADS to the cores divided by `make test`'s workers; xdist's controller
    imports conftest first and the workers inherit its environment, so the controller's whole-machine value
    must not pass for the user's own (it did: both workers ran machine-wide OpenMP pools, and the suite took
    ~1.3x its time on 2 cores, its encoder-heavy files 2x). A value the user set is kept."""
    seen = tmp_path / "seen"
    seen.mkdir()
    test = tmp_path / "test_threads.py"
    test.write_text("import os\n\ndef test_threads():\n    w = os.environ['PYTEST_XDIST_WORKER']\n"
                    f"    open(os.path.join({str(seen)!r}, w), 'w').write(os.environ['OMP_NUM_THREADS'])\n\n"
                    "def test_second():\n    test_threads()\n")
    fresh_session(tmp_path, test, ["-n", "2", "--dist", "load"], {} if user is None else {"OMP_NUM_THREADS": user},
                  ("OMP_NUM_THREADS", "RAGRIG_TEST_USER_OMP_NUM_THREADS", "PYTEST_XDIST_WORKER",
                   "PYTEST_XDIST_WORKER_COUNT"))
    share = user or str(max(1, (os.cpu_count() or 1) // 2))
    assert {f.read_text() for f in seen.iterdir()} == {share}
