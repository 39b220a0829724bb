"""A reader does not hash a version's files again when this machine checked them and they have not changed since
(retrieval/index/verified.py): any change to a file (even with its modification time set back) is hashed and
refused, a record made within the racy window is not trusted, a home that cannot keep records is checked in full,
health always hashes everything, and a pruned version's record goes with it."""

from __future__ import annotations

import os

import pytest
from ragrig.configs.errors import IndexDamagedError
from ragrig.configs.load import load_config
from ragrig.retrieval import file_stamps
from ragrig.retrieval.index import verified, verify
from ragrig.retrieval.index.health import check_index
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion

pytestmark = pytest.mark.slow
DOCS = {"a.md": "# Alpha\n\n## Move\n\nMove six inches.\n\n## Shoot\n\nRoll dice to shoot.\n",
        "b.md": "# Beta\n\n## Cover\n\nCover gives a save.\n"}


@pytest.fixture
def cfg(published):
    corpus = published(DOCS)
    return load_config(None, [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"])


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The files the checks hash, by name."""
    seen: list[str] = []
    real = verify.file_sha256

    def spy(path):
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(verify, "file_sha256", spy)
    return seen


def open_once(cfg) -> IndexVersion:
    v = IndexVersion.current(cfg)
    v.release()
    return v


def test_a_file_checked_before_and_unchanged_is_not_hashed_again(cfg, hashed, monkeypatch):
    monkeypatch.setattr(file_stamps, "RACY_NS", 0)
    v = open_once(cfg)
    files = v.manifest["files"]
    assert sorted(hashed) == sorted(os.path.basename(f) for f in files)  # the first check hashes every file
    rec = verified.known(Layout(cfg).verified_dir, v.dir)
    assert {rel: got[0] for rel, got in rec.items()} == files
    hashed.clear()
    open_once(cfg)
    assert hashed == []


def test_a_file_changed_since_is_hashed_and_refused_even_with_its_mtime_set_back(cfg, hashed, monkeypatch):
    monkeypatch.setattr(file_stamps, "RACY_NS", 0)
    v = open_once(cfg)
    path = v.dir / "vectors.npy"
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # one bit, same size
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the modification time as it was
    hashed.clear()
    with pytest.raises(IndexDamagedError, match="vectors.npy does not match the manifest"):
        IndexVersion.current(cfg)
    assert hashed == ["vectors.npy"]


def test_a_record_the_manifest_disagrees_with_is_not_trusted(cfg, hashed, monkeypatch):
    monkeypatch.setattr(file_stamps, "RACY_NS", 0)
    v = open_once(cfg)
    stamps = Layout(cfg).verified_dir
    rec = verified.known(stamps, v.dir)
    rec["chunks.jsonl"][0] = "0" * 64  # recorded against another sha256
    verified.record(stamps, v.dir, rec)
    hashed.clear()
    open_once(cfg)
    assert hashed == ["chunks.jsonl"]


def test_files_changed_just_before_the_record_are_hashed_again(cfg, hashed):
    open_once(cfg)  # the published files were written moments ago: inside the racy window
    hashed.clear()
    open_once(cfg)
    assert "chunks.jsonl" in hashed and "vectors.npy" in hashed


def test_a_home_that_cannot_keep_records_is_checked_in_full(cfg, hashed, monkeypatch):
    monkeypatch.setattr(file_stamps, "RACY_NS", 0)
    stamps = Layout(cfg).verified_dir
    stamps.write_text("not a folder")
    v = open_once(cfg)
    hashed.clear()
    open_once(cfg)
    assert len(hashed) == len(v.manifest["files"]) and stamps.read_text() == "not a folder"


def test_health_hashes_everything_whatever_was_recorded(cfg, hashed, monkeypatch):
    monkeypatch.setattr(file_stamps, "RACY_NS", 0)
    v = open_once(cfg)
    hashed.clear()
    check_index(cfg)
    assert sorted(hashed) == sorted(os.path.basename(f) for f in v.manifest["files"])


def test_a_pruned_version_takes_its_record_with_it(cfg, monkeypatch):
    from ragrig.retrieval.index.publish import prune
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    v1 = open_once(cfg)
    stamps = Layout(cfg).verified_dir
    assert verified.record_file(stamps, v1.dir).is_file()
    one = cfg.model_copy(update={"index": cfg.index.model_copy(update={"keep_versions": 1})})
    assert IngestPipeline(one, force=True).run().version == "v000002"
    prune(Layout(one), one.index)
    assert not verified.record_file(stamps, v1.dir).exists()
