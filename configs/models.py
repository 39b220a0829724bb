"""The one typed config model (a pydantic tree whose every level rejects unknown keys) and the index identity
derived from it: which settings change what an index contains (``ingest_fingerprint``), hence its key.

Loading and layering YAML into this model lives in ``load.py``. One module per part of the one model: this one
(every section that makes or runs an index, and the identity), ``retrieval.py`` (the retrieval section, the
largest and no part of the identity) and ``strict.py`` (the base every level shares); each class is imported
from here as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator
from ragrig.configs.redact import split_credentials
from ragrig.configs.retrieval import MAX_HOPS_MAX as MAX_HOPS_MAX
from ragrig.configs.retrieval import TOP_K_MAX as TOP_K_MAX
from ragrig.configs.retrieval import AdaptiveConfig as AdaptiveConfig
from ragrig.configs.retrieval import FusionConfig as FusionConfig
from ragrig.configs.retrieval import JudgeConfig as JudgeConfig
from ragrig.configs.retrieval import RerankConfig as RerankConfig
from ragrig.configs.retrieval import RetrievalConfig
from ragrig.configs.retrieval import ViewsConfig as ViewsConfig
from ragrig.configs.strict import Strict

# Bump when chunking, tokenisation or index layout change meaning: indexes get a new key (and are rebuilt,
# with every unchanged text still served from the embedding cache). Extraction changes are tracked per
# document instead (Document.extractor), so they re-extract only what they touch.
PIPELINE_VERSION = 1

# How the BM25 index is cut into shards changes its files, never its rankings (tested), so these settings are
# not part of the ingest fingerprint: changing them does not make a new index. The auto threshold is the
# measured one of docs/scale.md ("Lexical index").
SHARD_MAX_CHUNKS = 1_000_000
HNSW_SHARD_MAX_CHUNKS = 250_000  # docs/scale.md: the build divides by shards, a search costs one walk per shard
BM25_LAYOUT = {"shards", "shard_max_chunks"}
MAX_SHARDS = 4096  # the most shards a BM25 index or an HNSW graph is cut into (a reader trusts no more)

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown", "**/*.txt", "**/*.html", "**/*.htm", "**/*.docx", "**/*.pptx",
                   "**/*.pdf"]


class CorpusConfig(Strict):
    path: str = Field("datasets/sample", min_length=1, pattern=r"\S",
                      description="A directory of documents, or a BEIR folder/corpus.jsonl")
    format: Literal["auto", "directory", "beir"] = "auto"
    include: list[str] = Field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = Field(default_factory=list)
    markdown_extractor: Literal["plain", "docling"] = Field("plain", description=(
        "plain: Markdown indexed as written (offsets are the file's); docling: converted first (it rewrites "
        "inline markup)"))
    pdf_pipeline: Literal["auto", "layout", "native"] = "auto"
    max_file_mb: float = Field(50.0, gt=0)
    max_doc_chars: int = Field(5_000_000, ge=1000, description="extracted text longer than this fails the document")
    max_unzipped_mb: float = Field(200.0, gt=0, description="DOCX/PPTX whose parts unzip larger fail (zip bombs)")


class ChunkingConfig(Strict):
    max_header_level: int = Field(4, ge=2, le=4)
    max_tokens: int | None = Field(None, ge=16, description="default: the embedding model's window")
    frontmatter: bool = True
    drop_empty_sections: bool = True
    title_path: bool = Field(False, description=(
        "a document without an H1: its title (frontmatter title, else the file name) heads every chunk's header "
        "path, so what BM25 and the model see says which document a section is from"))


class EndpointConfig(Strict):
    """``embedding.backend: openai``: an OpenAI-compatible embeddings endpoint (retrieval/encoders/endpoint_backend.py)."""

    base_url: str = Field("http://127.0.0.1:8080/v1", pattern=r"^https?://", description=(
        "credentials in it (http://user:KEY@host/v1) are sent as HTTP basic auth and are no part of the model id"))
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                             description="the environment variable holding the key (never a file, never logged)")
    timeout_s: float = Field(30.0, gt=0, le=600, description="seconds for a whole request, headers and body")
    retries: int = Field(3, ge=0, le=10)
    backoff_s: float = Field(1.0, ge=0, le=60)
    window: int = Field(510, ge=16, le=100_000, description="tokens per text the endpoint reads (chunking fits it)")


PairKind = Literal["header_body", "cloze", "keyword_section", "parent_child"]
PAIR_KINDS: tuple[str, ...] = typing.get_args(PairKind)


class AdaptConfig(Strict):
    """``ragrig adapt``'s recipe (retrieval/adapt/, docs/adapt.md): a self-supervised fine-tune of the torch encoder
    on pairs made from the published index version's structure (no test case, no label, no LLM). Not part of the
    index identity: the adapted model is used only through ``embedding.model: <its folder>``."""

    pairs: list[PairKind] = Field(
        default_factory=lambda: ["header_body", "cloze", "keyword_section", "parent_child"], min_length=1, description=(
            "pair kinds: header_body (a section's header path -> its body), cloze (one sentence of a body -> the "
            "rest: the inverse cloze task), keyword_section (a keyword-library term -> the section that defines it), "
            "parent_child (a parent header -> a child section)"))
    max_pairs: int | None = Field(None, ge=1, description="at most this many pairs, sampled by seed; null: all")
    hard_negatives: int = Field(0, ge=0, le=8, description=(
        "BM25-mined negatives per pair from other sections (0: in-batch negatives only; docs/adapt.md: one cost "
        "~1.7x the training for no gain on the dev suite)"))
    epochs: float = Field(1.0, gt=0, le=100)
    lr: float = Field(3e-5, gt=0, le=1)
    warmup_ratio: float = Field(0.1, ge=0, lt=1, description="share of the steps the learning rate warms up over")
    batch_size: int = Field(32, ge=2, le=65536, description="pairs per step (the in-batch negatives)")
    max_tokens: int = Field(128, ge=16, le=8192, description=(
        "texts are cut to this many tokens while training (a cost: the saved model keeps the base's window, so "
        "the index is chunked as before)"))
    seed: int = Field(0, ge=0)
    loss: Literal["mnrl", "cached_mnrl"] = Field("mnrl", description=(
        "in-batch negatives ranking loss; cached_mnrl: the same loss in mini-batches (GradCache): big batches "
        "in little memory"))
    symmetric: bool = Field(True, description="also rank the anchors for each positive (symmetric loss)")
    mini_batch_size: int = Field(32, ge=1, le=65536, description="cached_mnrl: texts per forward pass")
    scale: float = Field(20.0, gt=0, le=1000, description="the similarity scale (inverse temperature)")

    @field_validator("pairs")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) < len(v):
            raise ValueError(f"pair kinds listed twice: {v}")
        return v


class EmbeddingConfig(Strict):
    model: str = "all-MiniLM-L6-v2"
    backend: Literal["auto", "torch", "onnx", "openai"] = Field(
        "auto", description="auto: ONNX for packaged ONNX models and folders with model.onnx and no torch weights; "
        "openai: the model at an OpenAI-compatible embeddings endpoint (embedding.endpoint)")
    batch_size: int = Field(32, ge=1, le=4096)
    device: str = Field("cpu", description="a torch device, or auto: CUDA when torch sees a GPU, else the CPU")
    normalize: bool = True
    query_prefix: str | None = Field(None, description="null: the model's own (bge v1.5: its retrieval instruction)")
    document_prefix: str = ""
    endpoint: EndpointConfig = Field(default_factory=EndpointConfig)
    adapt: AdaptConfig = Field(default_factory=AdaptConfig)


class Bm25Config(Strict):
    engine: Literal["bm25s"] = "bm25s"
    method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = "lucene"
    k1: float = Field(1.2, gt=0, le=10)
    b: float = Field(0.75, ge=0, le=1)
    stemmer: Literal["english", "none"] = "english"
    stopwords: Literal["english", "none"] = "english"
    shards: Annotated[int, Field(ge=1, le=MAX_SHARDS)] | Literal["auto"] = Field(
        "auto", description="BM25 in this many shards, each a contiguous run of chunks with its own postings and "
        "the corpus-wide term statistics, so rankings equal one index's (retrieval/index/bm25_shards.py; "
        "docs/scale.md). auto: one shard per shard_max_chunks chunks")
    shard_max_chunks: int = Field(SHARD_MAX_CHUNKS, ge=1, description="auto: chunks per BM25 shard at most")


class ChromaConfig(Strict):
    mode: Literal["embedded", "http"] = "embedded"
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)


class HnswConfig(Strict):
    """The approximate index ragrig builds itself (usearch, one build thread, rows in order: the same vectors
    give the same graph and the same answers in every process)."""

    connectivity: int = Field(16, ge=4, le=128)
    expansion_add: int = Field(128, ge=8, le=4096)
    expansion_search: int = Field(128, ge=8, le=4096)
    shards: Annotated[int, Field(ge=1, le=MAX_SHARDS)] | Literal["auto"] = Field(
        "auto", description="the graph in this many shards, each a contiguous run of rows built on its own "
        "(on the workers under a distributed ingest) and searched together, every candidate rescored exactly "
        "(retrieval/index/hnsw.py; docs/scale.md). auto: one shard per shard_max_chunks chunks")
    shard_max_chunks: int = Field(HNSW_SHARD_MAX_CHUNKS, ge=1_000, description="auto: chunks per graph shard at most")


class VectorSearchConfig(Strict):
    """Which search answers vector queries. ``auto``: exact up to ``exact_max_chunks`` chunks, the seeded HNSW
    above (docs/determinism.md has the measurements behind the threshold); ``chroma``: Chroma's own HNSW, whose
    build is not deterministic (answers vary from one build to the next)."""

    mode: Literal["auto", "exact", "hnsw", "chroma"] = "auto"
    exact_max_chunks: int = Field(20_000, ge=0)
    hnsw: HnswConfig = Field(default_factory=HnswConfig)


class IndexConfig(Strict):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]{1,60}$")
    keep_versions: int = Field(3, ge=1, le=100)
    chroma: ChromaConfig = Field(default_factory=ChromaConfig)
    vector_search: VectorSearchConfig = Field(default_factory=VectorSearchConfig)
    bm25: Bm25Config = Field(default_factory=Bm25Config)


def settings_digest(model: BaseModel) -> str:
    """A short hash of a config section's values (a server and its client compare retrieval settings by it)."""
    return hashlib.sha256(json.dumps(model.model_dump(), sort_keys=True).encode()).hexdigest()[:12]


REPEATS_MAX = 100  # runs of one evaluation (latency percentiles, variance); also `ragrig eval -n`'s bound


class EvalConfig(Strict):
    testsets: list[str] = Field(default_factory=list)
    k_values: list[int] = Field(default_factory=lambda: [1, 3, 5, 10, 20, 100])
    repeats: int = Field(1, ge=1, le=REPEATS_MAX)
    ragas: bool = True

    @field_validator("k_values")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(k < 1 or k > TOP_K_MAX for k in v):  # a k is a retrieval depth: the same bound as top_k
            raise ValueError(f"k_values must be a non-empty list of integers from 1 to {TOP_K_MAX}")
        return sorted(set(v))


class MlflowConfig(Strict):
    enabled: bool = True
    tracking_uri: str | None = Field(None, description="default: sqlite:///<home>/mlflow/mlflow.db")
    experiment: str = "ragrig"
    artifact_location: str | None = None


# keys renamed since an earlier release: a config that still has one is refused with the new name (configs/load.py
# names them for --set too)
RENAMED = {"flow.task_runner": "flow.runner (local | dask; 'threads' is now 'local')",
           "flow.max_workers": "flow.workers", "flow.dask_address": "flow.address"}


class FlowConfig(Strict):
    """Where the flows' work runs (flows/runners.py): ``local`` in this process (``workers`` threads), or ``dask``:
    a ``distributed.LocalCluster`` of ``workers`` processes, or the running cluster whose scheduler is ``address``.
    With dask, ingest maps its stages and a sweep or tune evaluates each config as a task on the cluster."""

    runner: Literal["local", "dask"] = "local"
    workers: int = Field(2, ge=1, le=256, description="threads (local) or LocalCluster worker processes (dask)")
    address: str | None = Field(None, pattern=r"^(tcp|tls)://\S+$", description=(
        "a Dask scheduler to join (tcp://host:8786; tls:// is refused: no TLS settings); null with runner dask: a "
        "LocalCluster on 127.0.0.1"))
    connect_timeout_s: float = Field(10.0, gt=0, le=600, description="how long to wait for the scheduler at address")
    extract_batch: int = Field(64, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        old = [k for k in RENAMED if isinstance(data, dict) and k.split(".")[1] in data]
        if old:
            raise ValueError("renamed: " + "; ".join(f"{k} is now {RENAMED[k]}" for k in old))
        return data

    @field_validator("address")
    @classmethod
    def _address_needs_dask(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v and info.data.get("runner", "dask") != "dask":
            raise ValueError(f"an address needs flow.runner: dask (got {info.data['runner']})")
        return _scheduler_address(v) if v else v


def _scheduler_address(v: str) -> str:
    """A ``tcp://host:port`` that parses. ``tls://`` is refused: joining a TLS cluster needs a CA, a certificate
    and a key on every side, which ragrig has no settings for (use tcp:// on a trusted network, or an SSH tunnel)."""
    from urllib.parse import urlsplit

    if v.startswith("tls://"):
        raise ValueError("tls:// is not supported: a TLS cluster needs certificate and key files, which ragrig has no "
                         "settings for; use tcp://HOST:PORT on a trusted network or through an SSH tunnel")
    try:
        parts = urlsplit(v)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{v} is not a scheduler address ({exc}); e.g. tcp://10.0.0.5:8786 or "
                         "tcp://[::1]:8786") from None
    if not parts.hostname or parts.path not in ("", "/") or port == 0:
        raise ValueError(f"{v} is not a scheduler address; e.g. tcp://10.0.0.5:8786 or tcp://[::1]:8786")
    return v


class ServeConfig(Strict):
    """``ragrig serve`` (the retriever over HTTP) and where ``ragrig query`` finds a running one."""

    host: str = Field("127.0.0.1", description="the address to listen on; loopback unless you mean otherwise")
    port: int = Field(8765, ge=1, le=65535)
    url: str | None = Field(None, pattern=r"^https?://", description="a running server `ragrig query` asks "
                            "(the environment variable RAGRIG_SERVER_URL wins); null: query the index directly")
    token_env: str = Field("RAGRIG_SERVE_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                           description="the environment variable holding the bearer token (unset: no token)")
    max_top_k: int = Field(100, ge=1, le=10000)
    max_request_bytes: int = Field(65536, ge=1024, le=64 * 1024 * 1024)
    max_context_tokens: int = Field(16384, ge=16)
    poll_s: float = Field(1.0, gt=0, le=3600, description="how often the server looks for a newly published version")
    torch_threads: Annotated[int, Field(ge=1, le=256)] | Literal["auto"] = Field(
        "auto", description="torch threads for query encoding in the server, which encodes one query at a time. "
        "auto: time 1 thread against torch's default at start-up and keep the default only when it is clearly "
        "faster (quiet 2 cores: 2 threads ~11 ms a query, 1 ~15 ms; busy: 2 threads measured 6-10x slower, "
        "OpenMP threads spin when the cores are oversubscribed); retrieval/serve/threads.py")
    timeout_s: float = Field(30.0, gt=0, le=3600, description="the client's timeout per request")
    gc_freeze: bool = Field(True, description="freeze the loaded index against Python's cyclic garbage collector "
                            "while serving (a full collection would walk all of it; refrozen on each switch); "
                            "false only to measure the difference (docs/serve-latency.md)")


class RagrigConfig(Strict):
    home: str | None = Field(None, min_length=1, pattern=r"\S",
                             description="all state; default $RAGRIG_HOME or ./.ragrig")
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)
    flow: FlowConfig = Field(default_factory=FlowConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)

    # ---- derived values -------------------------------------------------
    @property
    def home_dir(self) -> Path:
        return Path(self.home or os.environ.get("RAGRIG_HOME") or ".ragrig").resolve()

    def ingest_fingerprint(self) -> dict[str, Any]:
        """Everything that changes what an index contains (and nothing that does not)."""
        return {
            "pipeline": PIPELINE_VERSION,
            "corpus": self.corpus.model_dump(),
            "chunking": self._chunking_fingerprint(),
            "embedding": self._embedding_fingerprint(),
            "bm25": self.index.bm25.model_dump(exclude=BM25_LAYOUT),
        }

    def _chunking_fingerprint(self) -> dict[str, Any]:
        out = self.chunking.model_dump()
        if not out["title_path"]:  # off keys as configs written before the setting did
            del out["title_path"]
        return out

    def _embedding_fingerprint(self) -> dict[str, Any]:
        out = {k: v for k, v in self.embedding.model_dump().items() if k not in ("batch_size", "device", "adapt")}
        if out["backend"] == "auto":  # the default keys as configs written before the setting did
            del out["backend"]
        out["query_prefix"] = out["query_prefix"] or ""  # likewise for null (the prefix changes no stored vector)
        endpoint = out.pop("endpoint")  # only an endpoint model's URL changes what an index holds
        if out.get("backend") == "openai":  # without credentials: a new key is the same model at the same place
            out["endpoint"] = split_credentials(endpoint["base_url"])[0]
        return out

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
