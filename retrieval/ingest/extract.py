"""Extraction: raw documents -> Markdown with docling (md, html, docx, pptx, pdf); BEIR records as-is.

One bad document never stops a batch: ``Extractor.extract`` raises ``ExtractionError`` with a
reason, and ``extract_sources`` (ingest's batch function, through the extraction cache) records it.
YAML frontmatter is parsed into metadata before conversion so it never reaches the text. PDFs use
docling's layout pipeline when its models are installed, otherwise the model-free native pipeline,
with a warning that headings are lost.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import re
import threading
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.extractions import ExtractCache
from ragrig.retrieval.cache.sqlite import CacheCorruptError
from ragrig.retrieval.documents import Document, FailedDoc, SourceDoc, sha256_bytes
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.beir_records import RecordError, RecordFiles, beir_source
from ragrig.retrieval.ingest.discover import NotRegularFile, read_regular
from ragrig.retrieval.markdown import FrontmatterRefused, parse_headers, split_frontmatter

log = logging.getLogger(__name__)

NATIVE_PDF_WARNING = (
    "PDF converted with docling's model-free native pipeline (layout models not available offline): "
    "headings and tables are lost, so the whole document is one section"
)


class ExtractionError(Exception):
    """A document that could not be extracted; the message is the reason recorded in the run summary."""


def _decode(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise ExtractionError("binary content (NUL bytes) in a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _jsonable(meta: dict[str, Any]) -> dict[str, Any]:
    """Frontmatter values as JSON-safe scalars/lists (dates become ISO strings)."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            out[k] = v
        elif isinstance(v, (list, tuple)):
            out[k] = [x if isinstance(x, (str, int, float, bool)) else str(x) for x in v]
        else:
            out[k] = str(v)
    return out


_HASH_LINE = re.compile(r"^( {0,3})#", flags=re.M)


def beir_markdown(title: str, text: str) -> str:
    """A BEIR record as Markdown: the title becomes the H1; '#' at line starts in the text is escaped."""
    body = _HASH_LINE.sub(r"\1\\#", text.strip())
    title = " ".join(title.split())
    return f"# {title}\n\n{body}\n" if title else f"{body}\n"


def _promote_headings(markdown: str) -> str:
    """docling writes Word's "Heading N" with N+1 '#'s (only the "Title" style gets one '#'); with no
    '#'-level header at all, shift every header up one level so "Heading 1" is '#', as in HTML and Markdown."""
    headers = parse_headers(markdown)
    if not headers or min(h.level for h in headers) < 2:
        return markdown
    out, pos = [], 0
    for h in headers:
        i = markdown.index("#", h.start)
        out.append(markdown[pos:i])
        pos = i + 1
    return "".join(out) + markdown[pos:]


def check_zip(data: bytes, max_bytes: int) -> None:
    """Refuse an Office file whose parts would unzip beyond ``max_bytes`` (a zip bomb) before docling opens it."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            total = sum(i.file_size for i in z.infolist())
    except zipfile.BadZipFile as exc:
        raise ExtractionError(f"not a valid Office file (bad zip: {exc})") from None
    if total > max_bytes:
        raise ExtractionError(
            f"unzips to {total / 2**20:,.0f} MB > corpus.max_unzipped_mb ({max_bytes / 2**20:,.0f} MB): "
            "refused as a zip bomb"
        )


class Extractor:
    """Converts SourceDocs to Documents. Holds one docling converter per process (built lazily)."""

    def __init__(self, markdown_extractor: str = "docling", pdf_pipeline: str = "auto",
                 max_doc_chars: int = 5_000_000, max_unzipped_mb: float = 200.0) -> None:
        self.markdown_extractor = markdown_extractor
        self.pdf_pipeline = pdf_pipeline
        self.max_doc_chars = max_doc_chars
        self.max_unzipped_bytes = int(max_unzipped_mb * 1024 * 1024)
        self._converter: Any = None
        self._lock = threading.Lock()
        self.native_pdf = pdf_pipeline == "native" or (
            pdf_pipeline == "auto" and importlib.util.find_spec("docling_ibm_models") is None
        )

    @property
    def cache_key(self) -> str:
        """Identifies the extraction settings; part of the extraction-cache key."""
        try:
            from importlib.metadata import version

            dv = version("docling-slim")
        except Exception:  # pragma: no cover
            dv = "unknown"
        return f"md={self.markdown_extractor}-v2;pdf={'native' if self.native_pdf else 'layout'};docling={dv};docx-h1"

    def _docling(self) -> Any:
        if self._converter is None:
            from docling.datamodel.base_models import InputFormat
            from docling.document_converter import DocumentConverter, PdfFormatOption

            options: dict[Any, Any] = {}
            if self.native_pdf:
                from docling.datamodel.pipeline_options import NativePdfPipelineOptions
                from docling.pipeline.native_pdf_pipeline import NativePdfPipeline

                options[InputFormat.PDF] = PdfFormatOption(
                    pipeline_cls=NativePdfPipeline, pipeline_options=NativePdfPipelineOptions()
                )
            self._converter = DocumentConverter(
                allowed_formats=[InputFormat.MD, InputFormat.HTML, InputFormat.DOCX, InputFormat.PPTX, InputFormat.PDF],
                format_options=options,
            )
        return self._converter

    def _convert(self, name: str, data: bytes) -> str:
        from docling.datamodel.base_models import ConversionStatus, DocumentStream

        with self._lock:
            conv = self._docling()
            try:
                result = conv.convert(DocumentStream(name=name, stream=io.BytesIO(data)), raises_on_error=False)
            except Exception as exc:  # docling raises on unreadable containers (bad zip, …)
                raise ExtractionError(f"docling could not convert: {type(exc).__name__}: {exc}") from None
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            errs = "; ".join(e.error_message for e in (result.errors or [])) or str(result.status)
            raise ExtractionError(f"docling conversion failed: {errs}")
        return result.document.export_to_markdown()

    def extract(self, src: SourceDoc, records: RecordFiles | None = None) -> Document:
        """``src`` as a Document; ``records``: the corpus files a batch's BEIR records are read from (opened once for
        the batch; ``beir_records.py``). Raises ExtractionError with the reason."""
        if src.format == "beir":
            try:
                title, text = beir_source(src, records)
            except RecordError as exc:
                raise ExtractionError(str(exc)) from None
            return Document(
                doc_id=src.doc_id,
                sha256=src.sha256,
                format="beir",
                markdown=beir_markdown(title, text),
                metadata={"title": title},
            )
        if src.path is None:
            raise ExtractionError("no path to read")
        try:
            data = read_regular(src.path)  # never blocks on a file swapped for a FIFO since discovery
        except NotRegularFile as exc:
            raise ExtractionError(f"unreadable: {exc}") from None
        except OSError as exc:
            raise ExtractionError(f"unreadable: {exc.strerror or exc}") from None
        if not data.strip():
            raise ExtractionError("empty file")
        warnings: list[str] = []
        # the document is keyed by the bytes extracted here, never by an earlier read: a file edited between
        # discovery and extraction is stored under the hash of what was read now (the next ingest compares
        # the file against that), so a hash never names text that came from other bytes
        sha = sha256_bytes(data)
        if sha != src.sha256:
            log.warning("%s changed between discovery and extraction; extracting the bytes read now", src.doc_id)
            warnings.append(f"changed while being ingested: extracted the content read at extraction "
                            f"(sha256 {sha[:12]}…), not the one discovered ({src.sha256[:12]}…)")
        meta: dict[str, Any] = {}
        if src.format in ("docx", "pptx"):
            check_zip(data, self.max_unzipped_bytes)
        if src.format == "txt":
            markdown = _decode(data)  # as written
            if len(markdown) > self.max_doc_chars:
                raise ExtractionError(f"{len(markdown):,} characters > corpus.max_doc_chars ({self.max_doc_chars:,})")
        elif src.format == "md":
            text = _decode(data)
            if len(text) > self.max_doc_chars:
                raise ExtractionError(f"{len(text):,} characters > corpus.max_doc_chars ({self.max_doc_chars:,})")
            try:
                fm, body_start, fm_error = split_frontmatter(text)
            except FrontmatterRefused as exc:
                raise ExtractionError(str(exc)) from None
            if fm_error:
                warnings.append(fm_error)
            meta.update(_jsonable(fm))
            body = text[body_start:]
            if self.markdown_extractor == "plain":
                markdown = text  # as written: offsets are the file's (the chunker skips the frontmatter)
            else:
                markdown = self._convert(src.path.stem + ".md", body.encode("utf-8")) if body.strip() else ""
        else:
            markdown = self._convert(src.path.name, data)
            if src.format == "docx":
                markdown = _promote_headings(markdown)
            if src.format == "pdf" and self.native_pdf:
                warnings.append(NATIVE_PDF_WARNING)
        if not markdown.strip():
            raise ExtractionError("no text extracted")
        if len(markdown) > self.max_doc_chars:
            raise ExtractionError(
                f"{len(markdown):,} characters extracted > corpus.max_doc_chars ({self.max_doc_chars:,})"
            )
        meta["format"] = src.format
        return Document(
            doc_id=src.doc_id, sha256=sha, format=src.format, markdown=markdown, metadata=meta, warnings=warnings
        )


# ---- batches, as ingest runs them ----------------------------------------------
BEIR_EXTRACTOR = "beir:v1"

_EXTRACTORS: dict[tuple[str, str, int, float], Extractor] = {}
_EXTRACT_CACHES: dict[str, ExtractCache] = {}


def extractor_for(cfg: RagrigConfig) -> Extractor:
    """This process's extractor for the config's extraction settings (one docling converter each)."""
    c = cfg.corpus
    key = (c.markdown_extractor, c.pdf_pipeline, c.max_doc_chars, c.max_unzipped_mb)
    extractor = _EXTRACTORS.get(key)
    if extractor is None:
        extractor = _EXTRACTORS[key] = Extractor(*key)
    return extractor


def extractor_key(cfg: RagrigConfig, src: SourceDoc) -> str:
    """What produced a document's Markdown; a stored document with another key is re-extracted."""
    return BEIR_EXTRACTOR if src.format == "beir" else extractor_for(cfg).cache_key


def extract_sources(cfg: RagrigConfig, batch: list[SourceDoc], *, store: bool = True,
                    ) -> tuple[list[Document], list[FailedDoc]]:
    """Extract a batch of documents; failures are returned, never raised (one bad file never stops a run).

    A plain function of (config, batch) so Prefect can map it over batches on any task runner,
    Dask workers in other processes included; each process keeps one extractor and cache connection.
    ``store=False``: read the extraction cache but leave new extractions out of it (a distributed ingest's
    driver stores them: ``remember_extractions``).
    """
    extractor = extractor_for(cfg)
    cache_path = Layout(cfg).extract_cache
    cache = _EXTRACT_CACHES.get(str(cache_path))
    if cache is None or cache.stale:  # a cache file deleted or replaced since: open the one there now (the old
        cache = _EXTRACT_CACHES[str(cache_path)] = ExtractCache(cache_path)  # connection closes when unused)
    docs: list[Document] = []
    failed: list[FailedDoc] = []
    ckey = extractor.cache_key
    with RecordFiles() as records:  # a batch's BEIR records read from their corpus file through one open file
        for src in batch:
            try:
                cached = cache.get(src.sha256, ckey, src.doc_id) if src.format != "beir" else None
                if cached is not None:
                    docs.append(cached)
                    continue
                doc = extractor.extract(src, records)
                doc.extractor = extractor_key(cfg, src)
                if src.format != "beir" and store:
                    cache.put(doc, ckey)  # under doc.sha256: the hash of the bytes this extraction read
                docs.append(doc)
            except ExtractionError as exc:
                failed.append(FailedDoc(src.doc_id, "extract", str(exc)))
            except CacheCorruptError:
                raise  # the cache file, not this document: the whole run stops with the one clear line
            except Exception as exc:  # a library crash on one file: record it, go on
                failed.append(FailedDoc(src.doc_id, "extract", f"{type(exc).__name__}: {exc}"))
    return docs, failed


def remember_extractions(cfg: RagrigConfig, docs: list[Document]) -> None:
    """Store documents extracted elsewhere (Dask workers) in this home's extraction cache, as
    ``extract_sources`` would have (BEIR records are never cached)."""
    path = Layout(cfg).extract_cache
    cache = _EXTRACT_CACHES.get(str(path))
    if cache is None or cache.stale:
        cache = _EXTRACT_CACHES[str(path)] = ExtractCache(path)
    for doc in docs:
        if doc.format != "beir" and doc.extractor:
            cache.put(doc, doc.extractor)
