"""Pre-ingestion checks of a corpus folder: what ingest would fail on, and what would make retrieval or
test-set expectations worse. Nothing is written.

- error: unreadable or unextractable files (ingest records them as failed)
- warning: a file with no header at the chunking levels (it becomes one chunk, or pieces of one)
- warning: a header path that appears twice in one file (a test-set `section:` cannot name either)
- info: a section longer than the embedding model's window (ingest splits it into pieces)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document
from ragrig.retrieval.ingest.discover import discover
from ragrig.retrieval.markdown import sections

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass
class Finding:
    level: str
    doc_id: str
    message: str


@dataclass
class ValidationReport:
    files: int = 0
    findings: list[Finding] = field(default_factory=list)

    def count(self, level: str) -> int:
        return sum(1 for f in self.findings if f.level == level)

    @property
    def ok(self) -> bool:
        return self.count(ERROR) == 0

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "ok": self.ok, "findings": [asdict(f) for f in self.findings]}


def validate_corpus(cfg: RagrigConfig, count_tokens: Any = None, window: int | None = None) -> ValidationReport:
    from ragrig.retrieval.ingest.beir_records import RecordFiles
    from ragrig.retrieval.ingest.extract import ExtractionError, Extractor

    report = ValidationReport()
    found = discover(cfg.corpus)
    report.files = len(found.docs) + len(found.failed)
    for f in found.failed:
        report.findings.append(Finding(ERROR, f.doc_id, f.reason))
    for rel, why in found.not_regular:
        report.findings.append(Finding(WARNING, rel, why))
    c = cfg.corpus
    extractor = Extractor(c.markdown_extractor, c.pdf_pipeline, c.max_doc_chars, c.max_unzipped_mb)  # no cache: writes nothing
    docs = []
    with RecordFiles() as records:  # a BEIR corpus's records read through one open file
        for src in found.docs:
            try:
                docs.append(extractor.extract(src, records))
            except ExtractionError as exc:
                report.findings.append(Finding(ERROR, src.doc_id, str(exc)))
            except Exception as exc:
                report.findings.append(Finding(ERROR, src.doc_id, f"{type(exc).__name__}: {exc}"))
    max_level = cfg.chunking.max_header_level
    for d in docs:
        secs = sections(d.markdown, max_level=6)
        if not any(2 <= s.header.level <= max_level for s in secs):
            report.findings.append(Finding(WARNING, d.doc_id, f"no header at levels 2-{max_level}: one section for the whole file"))
        paths = Counter(" > ".join(s.path) for s in secs)
        for path, n in sorted(paths.items()):
            if n > 1:
                report.findings.append(Finding(WARNING, d.doc_id, f"header path '{path}' appears {n} times"))
        for w in d.warnings:
            report.findings.append(Finding(WARNING, d.doc_id, w))
        if count_tokens is not None and window is not None:
            params = ChunkingParams(max_header_level=max_level, max_tokens=window,
                                    drop_empty_sections=cfg.chunking.drop_empty_sections,
                                    frontmatter=cfg.chunking.frontmatter)
            pieces = Counter(c.header for c in chunk_document(d, params, count_tokens) if c.part)
            for header, n in sorted(pieces.items()):
                report.findings.append(Finding(INFO, d.doc_id, f"section '{header}' exceeds the model window: {n} pieces"))
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    report.findings.sort(key=lambda f: (order[f.level], f.doc_id, f.message))
    return report
