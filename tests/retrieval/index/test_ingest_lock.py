"""The ingest lock: an index folder left holding nothing but its lock goes with it (a refused first ingest leaves
no empty index behind), and a waiter blocked on a lock file that was removed locks the file there now, so two
holders never exist at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from ragrig.configs.errors import LockedError
from ragrig.flows.cli import main
from ragrig.retrieval.index.files import ingest_lock


def test_a_folder_holding_only_its_lock_goes_with_it_and_one_holding_more_stays(tmp_path: Path) -> None:
    lock = tmp_path / "indexes" / "corpus-abc" / "ingest.lock"
    with ingest_lock(lock):
        assert lock.read_text().startswith("pid ")
    assert not lock.parent.exists() and (tmp_path / "indexes").is_dir()  # only the index's own folder

    with ingest_lock(lock):
        (lock.parent / "v000001").mkdir()
    assert lock.parent.is_dir() and lock.is_file() and lock.read_text() == ""


def test_a_waiter_on_a_removed_lock_file_locks_the_one_there_now(tmp_path: Path) -> None:
    lock = tmp_path / "idx" / "ingest.lock"
    release, got, holding, done = threading.Event(), threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with ingest_lock(lock):
            holding.set()
            release.wait(10)  # on release the folder holds only the lock: both are removed

    def waiter() -> None:
        with ingest_lock(lock, wait_s=10):
            got.set()
            done.wait(10)

    a, b = threading.Thread(target=first), threading.Thread(target=waiter)
    a.start()
    assert holding.wait(5)
    b.start()
    time.sleep(0.5)  # the waiter has opened the file and is polling its lock
    release.set()
    a.join(5)
    assert got.wait(10)
    try:
        assert lock.read_text().startswith("pid ")  # the waiter holds the file at the path
        with pytest.raises(LockedError):  # so a third is refused (it would hold a second lock on a new file)
            with ingest_lock(lock):
                pass
    finally:
        done.set()
        b.join(5)
    assert not lock.parent.exists()


def test_a_refused_first_ingest_leaves_no_index_folder(tmp_path: Path, ragrig_home: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["ingest", "--no-prefect", "-q", "--set", f"corpus.path={empty}", "--set", "eval.testsets=[]"]) == 2
    assert "nothing to index" in capsys.readouterr().err
    assert not any((ragrig_home / "indexes").iterdir())
