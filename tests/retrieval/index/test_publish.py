"""A version's life on disk: staged, completed, published, pruned; and the sweep of a crashed run's leftovers."""

from __future__ import annotations

import pytest
from ragrig.retrieval.index import chroma, publish
from ragrig.retrieval.index.format import collection_name, write_manifest
from ragrig.retrieval.index.layout import Layout


@pytest.fixture
def layout(tmp_path, make_config):
    cfg = make_config(tmp_path / "corpus", index__keep_versions=2)
    return cfg, Layout(cfg)


def make_version(layout: Layout, client=None) -> str:
    """A complete (if empty) version, with its collection when a client is given."""
    version, staged = publish.stage(layout)
    write_manifest(staged, {"version": version})
    if client is not None:
        chroma.create_collection(client, collection_name(layout.key, version), 2)
    publish.complete(layout, version, staged)
    return version


def collections(client, layout: Layout) -> list[str]:
    return sorted(chroma.list_collections(client))


def test_a_staged_version_is_no_version_until_complete_and_current_once_published(layout):
    _, lay = layout
    version, staged = publish.stage(lay)
    assert (version, staged) == ("v000001", lay.versions_dir / ".tmp-v000001")
    assert staged.is_dir() and not any(staged.iterdir())
    assert lay.published_versions() == [] and lay.leftovers() == [staged]
    write_manifest(staged, {"version": version})
    assert lay.published_versions() == []  # a manifest in a staging folder does not make a version
    final = publish.complete(lay, version, staged)
    assert final == lay.version_dir("v000001") and (final / "manifest.json").is_file() and not staged.exists()
    assert lay.published_versions() == ["v000001"] and lay.leftovers() == []
    assert lay.current_version() is None  # complete, not yet published
    publish.publish(lay, version)
    assert lay.current_file.read_text() == "v000001\n" and lay.current_version() == "v000001"


def test_a_leftover_number_is_never_reused(layout):
    _, lay = layout
    make_version(lay)
    lay.staging_dir("v000003").mkdir()
    assert lay.next_version() == "v000004"
    assert publish.stage(lay)[0] == "v000004"


def test_prune_keeps_the_newest_and_always_the_current(layout):
    cfg, lay = layout
    client = chroma.chroma_client(cfg.index.chroma, lay.chroma_dir)
    versions = [make_version(lay, client) for _ in range(4)]
    assert versions == ["v000001", "v000002", "v000003", "v000004"]
    publish.publish(lay, "v000004")
    assert publish.prune(lay, cfg.index).removed == ["v000001", "v000002"]  # keep_versions=2
    assert lay.published_versions() == ["v000003", "v000004"] and lay.leftovers() == []
    assert collections(client, lay) == [collection_name(lay.key, v) for v in ("v000003", "v000004")]
    assert publish.prune(lay, cfg.index).removed == []

    make_version(lay, client)  # v000005, while CURRENT goes back to v000003
    publish.publish(lay, "v000003")
    assert publish.prune(lay, cfg.index).removed == ["v000004"]  # of 3 versions: the oldest that is not current
    assert lay.published_versions() == ["v000003", "v000005"]
    assert collections(client, lay) == [collection_name(lay.key, v) for v in ("v000003", "v000005")]


def test_sweep_removes_staging_trash_and_orphan_collections_of_this_index_only(layout):
    cfg, lay = layout
    client = chroma.chroma_client(cfg.index.chroma, lay.chroma_dir)
    make_version(lay, client)
    publish.publish(lay, "v000001")
    _, staged = publish.stage(lay)  # a crashed build: its folder and its collection
    (staged / "chunks.jsonl").write_text("{}\n")
    chroma.create_collection(client, collection_name(lay.key, "v000002"), 2)
    lay.trash_dir("v000000").mkdir()  # a crashed prune
    chroma.create_collection(client, collection_name("other-index", "v000009"), 2)  # another config's
    removed = publish.sweep_leftovers(lay, cfg.index.chroma)
    assert removed == [".tmp-v000002", ".trash-v000000", collection_name(lay.key, "v000002")]
    assert lay.leftovers() == [] and lay.published_versions() == ["v000001"]
    assert collections(client, lay) == sorted([collection_name(lay.key, "v000001"), "other-index-v000009"])
    assert publish.sweep_leftovers(lay, cfg.index.chroma) == []


def test_sweep_before_any_ingest_opens_no_store(layout):
    cfg, lay = layout
    assert publish.sweep_leftovers(lay, cfg.index.chroma) == []
    assert not lay.chroma_dir.exists()
