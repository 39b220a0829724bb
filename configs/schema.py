"""The one typed config model. YAML in, validated model out; unknown keys are errors.

Layering: ``configs/default.yaml`` (embedded) < ``--config FILE`` < ``--set a.b=value``.
Relative paths are resolved against the directory of the file that set them
(``--set`` values against the current directory), so a config works from any CWD.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from configs.errors import InputError
from configs.yamlio import LocatedYaml, load_yaml

DEFAULT_CONFIG = Path(__file__).with_name("default.yaml")

# Bump when chunking, tokenisation or index layout change meaning: indexes get a new key (and are rebuilt,
# with every unchanged text still served from the embedding cache). Extraction changes are tracked per
# document instead (Document.extractor), so they re-extract only what they touch.
PIPELINE_VERSION = 1

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.docx", "**/*.pptx", "**/*.pdf"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class CorpusConfig(Strict):
    path: str = Field("datasets/sample", description="A directory of documents, or a BEIR folder/corpus.jsonl")
    format: Literal["auto", "directory", "beir"] = "auto"
    include: list[str] = Field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = Field(default_factory=list)
    markdown_extractor: Literal["docling", "plain"] = "docling"
    pdf_pipeline: Literal["auto", "layout", "native"] = "auto"
    max_file_mb: float = Field(50.0, gt=0)
    max_doc_chars: int = Field(5_000_000, ge=1000, description="extracted text longer than this fails the document")
    max_unzipped_mb: float = Field(200.0, gt=0, description="DOCX/PPTX whose parts unzip larger fail (zip bombs)")


class ChunkingConfig(Strict):
    max_header_level: int = Field(4, ge=2, le=4)
    max_tokens: int | None = Field(None, ge=16, description="default: the embedding model's window")
    frontmatter: bool = True
    drop_empty_sections: bool = True


class EmbeddingConfig(Strict):
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(32, ge=1, le=4096)
    device: str = "cpu"
    normalize: bool = True
    query_prefix: str = ""
    document_prefix: str = ""


class Bm25Config(Strict):
    engine: Literal["bm25s"] = "bm25s"
    method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = "lucene"
    k1: float = Field(1.2, gt=0, le=10)
    b: float = Field(0.75, ge=0, le=1)
    stemmer: Literal["english", "none"] = "english"
    stopwords: Literal["english", "none"] = "english"


class ChromaConfig(Strict):
    mode: Literal["embedded", "http"] = "embedded"
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)


class IndexConfig(Strict):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]{1,60}$")
    keep_versions: int = Field(3, ge=1, le=100)
    chroma: ChromaConfig = Field(default_factory=ChromaConfig)
    bm25: Bm25Config = Field(default_factory=Bm25Config)


class FusionConfig(Strict):
    method: Literal["rrf", "weighted"] = "weighted"
    rrf_k: float = Field(60.0, gt=0)
    weights: dict[str, float] = Field(default_factory=lambda: {"bm25": 1.0, "vector": 1.0})
    normalization: Literal["minmax", "zscore"] = "zscore"

    @field_validator("weights")
    @classmethod
    def _known_sources(cls, v: dict[str, float]) -> dict[str, float]:
        allowed = {"bm25", "vector", "header"}
        bad = sorted(set(v) - allowed)
        if bad:
            raise ValueError(f"unknown source(s) {bad}; supported: {sorted(allowed)}")
        if any(w < 0 for w in v.values()):
            raise ValueError("weights must be >= 0")
        if not any(w > 0 for w in v.values()):
            raise ValueError("at least one weight must be > 0")
        return v


class AdaptiveConfig(Strict):
    enabled: bool = False
    min_results: int = Field(3, ge=1)
    max_results: int = Field(10, ge=1)
    gap: float = Field(0.25, gt=0, le=1)

    @model_validator(mode="after")
    def _order(self) -> AdaptiveConfig:
        if self.min_results > self.max_results:
            raise ValueError(f"min_results ({self.min_results}) > max_results ({self.max_results})")
        return self


class JudgeConfig(Strict):
    kind: Literal["reference", "llm"] = "reference"
    max_items: int = Field(3, ge=1, le=20, description="missing items asked for per hop")
    # reference judge: follow the top chunk's references only when the query names a specific rule itself
    anchored: bool = True
    # llm: any OpenAI-compatible chat endpoint; the key comes only from the environment variable named here
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    timeout_s: float = Field(30.0, gt=0, le=600)
    retries: int = Field(3, ge=0, le=10)
    backoff_s: float = Field(1.0, ge=0, le=60)
    max_context_chars: int = Field(6000, ge=200)


class RetrievalConfig(Strict):
    top_k: int = Field(10, ge=1, le=1000)
    candidates: int = Field(100, ge=1, le=10000)
    fusion: FusionConfig = Field(default_factory=FusionConfig)
    min_relevance: float = Field(0.0, ge=0)
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    normalise: bool = True
    expansion: bool = True
    synonyms: str | None = None
    header_threshold: float = Field(0.85, ge=0, le=1)
    max_query_chars: int = Field(2000, ge=10)
    max_hops: int = Field(0, ge=0, le=5)
    hop_chunks: int = Field(3, ge=1, le=50)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    section_expansion_tokens: int = Field(0, ge=0)
    dedup: bool = True
    cache_size: int = Field(256, ge=0)
    cache_ttl_s: float = Field(600.0, ge=0)


class EvalConfig(Strict):
    testsets: list[str] = Field(default_factory=list)
    k_values: list[int] = Field(default_factory=lambda: [1, 3, 5, 10, 20, 100])
    repeats: int = Field(1, ge=1, le=100)
    ragas: bool = True

    @field_validator("k_values")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(k < 1 for k in v):
            raise ValueError("k_values must be a non-empty list of integers >= 1")
        return sorted(set(v))


class MlflowConfig(Strict):
    enabled: bool = True
    tracking_uri: str | None = Field(None, description="default: sqlite:///<home>/mlflow/mlflow.db")
    experiment: str = "ragrig"
    artifact_location: str | None = None


class FlowConfig(Strict):
    task_runner: Literal["threads", "dask"] = "threads"
    max_workers: int = Field(2, ge=1, le=256)
    dask_address: str | None = None
    extract_batch: int = Field(64, ge=1)


class RagrigConfig(Strict):
    home: str | None = Field(None, description="all state; default $RAGRIG_HOME or ./.ragrig")
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)
    flow: FlowConfig = Field(default_factory=FlowConfig)

    # ---- derived values -------------------------------------------------
    @property
    def home_dir(self) -> Path:
        return Path(self.home or os.environ.get("RAGRIG_HOME") or ".ragrig").resolve()

    def ingest_fingerprint(self) -> dict[str, Any]:
        """Everything that changes what an index contains (and nothing that does not)."""
        return {
            "pipeline": PIPELINE_VERSION,
            "corpus": self.corpus.model_dump(),
            "chunking": self.chunking.model_dump(),
            "embedding": {k: v for k, v in self.embedding.model_dump().items() if k not in ("batch_size", "device")},
            "bm25": self.index.bm25.model_dump(),
        }

    def ingest_hash(self) -> str:
        blob = json.dumps(self.ingest_fingerprint(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:10]

    def index_key(self) -> str:
        name = self.index.name or (Path(self.corpus.path).name or "corpus")
        safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in name)[:40] or "corpus"
        return f"{safe}-{self.ingest_hash()}"

    def flat(self) -> dict[str, Any]:
        """Dotted-key view of the resolved config (for MLflow params)."""
        out: dict[str, Any] = {}

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict) and value:
                for k, v in value.items():
                    walk(f"{prefix}.{k}" if prefix else k, v)
            else:
                out[prefix] = value

        walk("", self.model_dump())
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(), sort_keys=False)


# ---- loading ------------------------------------------------------------
PATH_FIELDS: list[tuple[str, ...]] = [
    ("home",),
    ("corpus", "path"),
    ("retrieval", "synonyms"),
]
LIST_PATH_FIELDS: list[tuple[str, ...]] = [("eval", "testsets")]


def _resolve_paths(layer: dict[str, Any], base: Path) -> None:
    def get_parent(keys: tuple[str, ...]) -> dict[str, Any] | None:
        node: Any = layer
        for k in keys[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(k), dict):
                return None
            node = node[k]
        return node if isinstance(node, dict) else None

    for keys in PATH_FIELDS:
        parent = get_parent(keys)
        if parent is not None and isinstance(parent.get(keys[-1]), str):
            parent[keys[-1]] = _absolute(parent[keys[-1]], base)
    for keys in LIST_PATH_FIELDS:
        parent = get_parent(keys)
        if parent is not None and isinstance(parent.get(keys[-1]), list):
            parent[keys[-1]] = [_absolute(p, base) if isinstance(p, str) else p for p in parent[keys[-1]]]


def _absolute(value: str, base: Path) -> str:
    expanded = os.path.expandvars(os.path.expanduser(value))
    p = Path(expanded)
    return str(p if p.is_absolute() else (base / p).resolve())


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def parse_override(item: str) -> tuple[list[str], Any]:
    """``retrieval.rrf_k=40`` -> (["retrieval", "rrf_k"], 40); the value is parsed as a YAML scalar/list."""
    if "=" not in item:
        raise InputError(f"--set {item!r}: expected KEY.PATH=VALUE")
    key, raw = item.split("=", 1)
    keys = [k.strip() for k in key.split(".")]
    if not all(keys):
        raise InputError(f"--set {item!r}: empty key segment in {key!r}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return keys, value


def _apply_override(data: dict[str, Any], keys: list[str], value: Any, item: str) -> None:
    node: Any = data
    model: type[BaseModel] | None = RagrigConfig
    for i, k in enumerate(keys):
        fields = model.model_fields if model is not None else {}
        if model is not None and k not in fields:
            dotted = ".".join(keys[: i + 1])
            raise InputError(f"--set {item!r}: unknown key '{dotted}'; known here: {sorted(fields)}")
        ann = fields[k].annotation if model is not None else None
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if i == len(keys) - 1:
            node[k] = value
        else:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]


def _format_validation(exc: ValidationError, sources: list[tuple[str, LocatedYaml | None]]) -> str:
    msgs = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        dotted = ".".join(str(p) for p in loc)
        where = "config"
        for label, located in reversed(sources):
            if located is not None and located.lines.get(loc[:1]) is not None and _has_path(located.data, loc):
                where = located.where(loc)
                break
            if located is None and label.startswith("--set") and label[6:].split("=", 1)[0] == dotted:
                where = label
                break
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        value = err.get("input")
        shown = "" if err["type"] == "extra_forbidden" or isinstance(value, dict) else f" (got {value!r})"
        msgs.append(f"{where}: {dotted}: {msg}{shown}")
    return "invalid config:\n  " + "\n  ".join(msgs)


def _has_path(data: Any, loc: tuple[Any, ...]) -> bool:
    node = data
    for k in loc:
        if isinstance(node, dict) and k in node:
            node = node[k]
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            node = node[k]
        else:
            return False
    return True


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> RagrigConfig:
    """Build the resolved config: embedded defaults, then ``path``, then ``--set`` overrides."""
    sources: list[tuple[str, LocatedYaml | None]] = []
    merged: dict[str, Any] = {}
    files = [DEFAULT_CONFIG] + ([Path(path)] if path else [])
    for f in files:
        located = load_yaml(f)
        if located.data is None:
            located.data = {}
        if not isinstance(located.data, dict):
            raise InputError(f"{f}: a config must be a YAML mapping, got {type(located.data).__name__}")
        layer = copy.deepcopy(located.data)
        _resolve_paths(layer, f.resolve().parent)
        merged = _deep_merge(merged, layer)
        sources.append((str(f), located))
    for item in overrides or []:
        keys, value = parse_override(item)
        layer: dict[str, Any] = {}
        _apply_override(layer, keys, value, item)
        _resolve_paths(layer, Path.cwd())
        merged = _deep_merge(merged, layer)
        sources.append((f"--set {item}", None))
    try:
        return RagrigConfig.model_validate(merged)
    except ValidationError as exc:
        raise InputError(_format_validation(exc, sources)) from None
