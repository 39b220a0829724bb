"""The diff against the published version: which documents to (re-)extract, which to carry over with their
chunks, which are gone; and, after extraction and chunking, the new version's documents and chunks.

A document is carried over when its content sha256 and its extractor are the ones the published version
holds. A document that fails now (cannot be read, extracted or chunked) keeps its last good version: a bad
edit never loses data. A BEIR corpus is one file, so when that file's hash is the one the published
version was built from, nothing is parsed at all (``unchanged_corpus_file``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Chunk, Document, SourceDoc
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.discover import Discovery, beir_file, file_sha256
from ragrig.retrieval.ingest.extract import BEIR_EXTRACTOR
from ragrig.retrieval.ingest.stats import IngestStats

log = logging.getLogger("ragrig.retrieval.ingest.pipeline")  # the warning's logger, as before this moved


@dataclass
class Plan:
    sources: list[SourceDoc]
    to_extract: list[SourceDoc]
    reused: list[Document]  # unchanged documents carried over from the published version
    reused_chunks: dict[str, list[Chunk]]
    removed: list[str]
    previous: str | None  # the version diffed against (None: no published version, or --force)
    previous_docs: dict[str, Document] = field(default_factory=dict)  # to keep a last good version on failure
    new: int = 0  # of to_extract: documents the published version does not have
    changed: int = 0  # of to_extract: documents it has with other content or another extractor

    @property
    def changed_nothing(self) -> bool:
        """Nothing to extract, nothing removed, and a version to keep (never under --force)."""
        return not self.to_extract and not self.removed and self.previous is not None

    def forget_sources(self) -> None:
        """Drop the documents' records and the previous version's rows once the version's tables are written (no
        later stage reads them; ~0.4 kB a document of a driver's memory at 1M): the lists are emptied in place, as
        an executor may still hold this plan (``sources`` is the discovery's own list, emptied with it)."""
        for rows in (self.sources, self.to_extract, self.reused):
            rows.clear()
        self.reused_chunks.clear()
        self.previous_docs.clear()

    def only_failures(self, extracted: int) -> bool:
        """Every document to (re-)extract failed (``extracted``: how many were) and none was removed: the published
        version still holds."""
        return self.previous is not None and not extracted and not self.removed


def plan_changes(
    sources: list[SourceDoc],
    previous: IndexVersion | None,
    failed: Iterable[str],
    extractor_key: Callable[[SourceDoc], str],
) -> Plan:
    """Diff ``sources`` against ``previous`` (None: everything is new). ``failed``: documents that could not
    be read this time; ``extractor_key(src)``: what would extract ``src`` now."""
    prev_docs = previous.documents_by_id if previous is not None else {}
    plan = Plan(sources, [], [], {}, [], previous.version if previous is not None else None, prev_docs)
    seen: set[str] = set()
    for src in sources:
        seen.add(src.doc_id)
        old = prev_docs.get(src.doc_id)
        if old is not None and old.sha256 == src.sha256 and old.extractor == extractor_key(src):
            plan.reused.append(old)
        else:
            plan.to_extract.append(src)
            if old is None:
                plan.new += 1
            else:
                plan.changed += 1
    # a document that now fails to be read is not "removed": keep its last good version
    for doc_id in sorted(set(failed) & set(prev_docs)):
        plan.reused.append(prev_docs[doc_id])
        seen.add(doc_id)
    plan.removed = sorted(set(prev_docs) - seen)
    if previous is not None and (plan.to_extract or plan.removed):  # the old chunks matter only on a change
        by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for c in previous.chunks:
            by_doc[c.doc_id].append(c)
        plan.reused_chunks = dict(by_doc)
    return plan


def corpus_file_record(cfg: RagrigConfig) -> dict[str, Any]:
    """A BEIR corpus file's identity, as the manifest's ``corpus_file`` stores it (with ``failed`` added)."""
    return {"sha256": file_sha256(beir_file(cfg.corpus)), "extractor": BEIR_EXTRACTOR}


def unchanged_corpus_file(record: dict[str, Any], manifest: dict[str, Any]) -> list[dict[str, str]] | None:
    """When a version was built from exactly this file (same bytes, same extractor) and nothing but bad
    records failed in it (the same bytes repeat those), the failures it recorded: nothing can have changed.
    Else None: the file must be parsed (a later-stage failure is retried that way)."""
    before = manifest.get("corpus_file")
    if not isinstance(before, dict) or {k: before.get(k) for k in record} != record:
        return None
    failed = before.get("failed", [])
    if any(f.get("stage") != "discover" for f in failed):
        return None
    return list(failed)


def unchanged_beir(record: dict[str, Any], kept: IndexVersion | None, stats: IngestStats) -> Discovery | None:
    """A BEIR corpus file identical to the one the kept version was built from (``record``:
    ``corpus_file_record``): nothing to parse; its recorded failures and counts go into ``stats``. Else None."""
    if kept is None:
        return None
    manifest = kept.manifest
    failed = unchanged_corpus_file(record, manifest)
    if failed is None:
        return None
    for f in failed:
        stats.fail(f["doc_id"], f["stage"], f["reason"])
    docs = int(manifest["counts"]["documents"])
    stats.docs_seen, stats.docs_unchanged, stats.previous_version = docs + len(failed), docs, kept.version
    return Discovery(unchanged_since=kept.version)


def comparable_version(cfg: RagrigConfig, layout: Layout, version: str | None, model_id: str,
                       stats: IngestStats) -> IndexVersion | None:
    """The published ``version`` to diff against, unless its vectors came from another model than ``model_id``
    (new weights at the same path, another package release): then every chunk is chunked and embedded again,
    so one index never mixes two embedding spaces (a warning says so, once)."""
    if version is None:
        return None
    previous = IndexVersion(cfg, layout, version)
    if previous.model_id != model_id:
        note = (f"the embedding model changed since {version} ({previous.model_id} -> {model_id}): "
                "every chunk is embedded again")
        if note not in stats.warnings:
            log.warning(note)
            stats.warnings.append(note)
        return None
    return previous
