"""``ragrig adapt``'s sequence: check the encoder is a torch one, open the published version, make the pairs
(and hard negatives), train into a temp folder, rename it into place. Each step runs through an ``Executor``
(``retrieval/executor.py``: here by default; the Prefect flow passes one that makes each a task)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig, RagrigConfig
from ragrig.retrieval.adapt import negatives, output
from ragrig.retrieval.adapt.pairs import Pair, counts, make_pairs, sample
from ragrig.retrieval.adapt.train import OnStep, train
from ragrig.retrieval.encoders.device import resolve_device
from ragrig.retrieval.encoders.resolve import ModelRef, resolve
from ragrig.retrieval.executor import IN_PROCESS, Executor


@dataclass
class Prepared:
    """What training needs, read from the published version (which is released afterwards)."""

    pairs: list[Pair]
    pair_counts: dict[str, int]
    index_key: str
    version: str
    corpus: str  # the version's content digest
    base: str  # what sentence-transformers loads
    base_model_id: str
    target: Path
    default_target: bool
    digest: str  # the recipe hash: the recipe, the base model, the corpus and the query prefix (output.py)


@dataclass
class AdaptResult:
    model: str
    pairs: int
    pair_counts: dict[str, int]
    steps: int
    seconds: float
    train_seconds: float  # the training loop alone (pairs_per_s is over it)
    load_seconds: float  # libraries, the base model and the trainer set up
    pairs_per_s: float
    losses: list[float]
    device: str
    index_key: str
    version: str
    base_model: str
    recipe: dict[str, Any]
    recipe_hash: str
    reused: bool = False
    compare: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def int8_by_default(embedding: EmbeddingConfig) -> bool:
    """Whether ``embedding`` runs a packaged int8 graph that has a float torch form only under ``backend: torch``
    (bge-small-en-v1.5 under auto: the form adapt cannot train)."""
    from ragrig.retrieval.encoders.catalog import packaged

    form = packaged(embedding.model, "torch") if embedding.backend == "auto" else None
    return form is not None and form.converted


def torch_model(cfg: RagrigConfig) -> ModelRef:
    """The configured encoder, refused in one line unless it runs on sentence-transformers (torch)."""
    if cfg.embedding.backend == "openai":
        raise InputError("embedding.backend: openai is an endpoint ragrig cannot train; ragrig adapt fine-tunes a "
                         "sentence-transformers (torch) model")
    if int8_by_default(cfg.embedding):
        raise InputError(f"embedding.model: ragrig adapt fine-tunes a sentence-transformers (torch) model; "
                         f"{cfg.embedding.model!r} runs as int8 ONNX by default: set embedding.backend: torch to "
                         "adapt the float copy of its weights (and ingest with it first: adapt learns from that "
                         "index and compares with it)")
    ref = resolve(cfg.embedding)
    if ref.backend != "torch":
        raise InputError(f"embedding.model: ragrig adapt fine-tunes a sentence-transformers (torch) model; "
                         f"{cfg.embedding.model!r} runs on the {ref.backend} backend (set embedding.model to a "
                         "torch model, e.g. all-MiniLM-L6-v2)")
    return ref


def preflight(cfg: RagrigConfig) -> None:
    """The one-line refusals, before any library loads: a non-torch encoder, no published index."""
    from ragrig.configs.errors import IndexNotFoundError
    from ragrig.retrieval.index.layout import Layout

    torch_model(cfg)
    layout = Layout(cfg)
    if layout.current_version() is None and not layout.current_file.exists():
        raise IndexNotFoundError(f"no published index for this config (looked in {layout.index_dir}); run "
                                 "`ragrig ingest` first (adapt learns from the published version)")


def with_prefixes(pairs: list[Pair], query_prefix: str, document_prefix: str) -> list[Pair]:
    """The pairs as the encoder will see them in use: anchors play the queries (bge's retrieval instruction
    before them), positives and negatives the documents."""
    if not query_prefix and not document_prefix:
        return pairs
    return [replace(p, anchor=query_prefix + p.anchor, positive=document_prefix + p.positive,
                    negatives=tuple(document_prefix + n for n in p.negatives)) for p in pairs]


def prepare(cfg: RagrigConfig, out: str | None = None) -> Prepared:
    """Open the published version, make its pairs, and decide the target folder."""
    from ragrig.retrieval.embedding import model_id
    from ragrig.retrieval.index.bm25 import Bm25Index
    from ragrig.retrieval.index.version import IndexVersion

    ref = torch_model(cfg)
    version = IndexVersion.current(cfg)  # no published index: one line telling the user to ingest
    try:
        recipe = cfg.embedding.adapt
        chunks = version.chunks
        pairs = sample(make_pairs(chunks, version.keywords, recipe.pairs, recipe.seed), recipe.max_pairs, recipe.seed)
        if recipe.hard_negatives:
            bm25 = Bm25Index.load(version.bm25_dir, cfg.index.bm25)
            pairs = negatives.mine(pairs, chunks, negatives.bm25_search(bm25), recipe.hard_negatives)
        prefix = ref.query_prefix(cfg.embedding)
        pairs = with_prefixes(pairs, prefix, cfg.embedding.document_prefix)
        if len(pairs) < 2:
            raise InputError(f"embedding.adapt.pairs: {recipe.pairs} make {len(pairs)} training pair(s) from index "
                             f"{version.layout.key}@{version.version}; a fine-tune needs sections with bodies "
                             "(add pair kinds, or ingest a larger corpus)")
        base_id = model_id(cfg.embedding)
        corpus = output.corpus_digest(chunks)
        digest = output.recipe_hash(cfg, base_id, corpus, prefix)
        target = Path(out).expanduser().resolve() if out else output.default_dir(
            cfg, version.layout.key, version.version, digest)
        return Prepared(pairs, counts(pairs), version.layout.key, version.version, corpus, ref.target, base_id,
                        target, out is None, digest)
    finally:
        version.release()


def fit(cfg: RagrigConfig, prep: Prepared, force: bool, progress: bool, on_step: OnStep | None) -> dict[str, Any]:
    """Train into a temp folder beside the target and rename it into place (or reuse the default folder
    when it already holds this training's result); the record written into the folder."""
    recipe = cfg.embedding.adapt
    digest = prep.digest
    found = output.read_record(prep.target) if prep.default_target and not force else None
    if found is not None and found.get("recipe_hash") == digest:
        return {**found, "reused": True, "train_seconds": 0.0, "device": resolve_device(cfg.embedding.device)}
    if not prep.default_target:  # the user's folder: checked again after the pairs were made (it may have changed)
        output.check_output(prep.target, force)
    device = resolve_device(cfg.embedding.device)
    with output.placed(prep.target, replace=force or prep.default_target) as tmp:
        stats = train(prep.pairs, prep.base, tmp, recipe, device, progress=progress, on_step=on_step)
        record = {"recipe": recipe.model_dump(), "recipe_hash": digest, "base_model": prep.base_model_id,
                  "index_key": prep.index_key, "version": prep.version, "corpus": prep.corpus,
                  "pairs": len(prep.pairs), "pair_counts": prep.pair_counts, "steps": stats.steps,
                  "losses": stats.losses, "adapt_version": output.ADAPT_VERSION}
        output.write_record(tmp, record)
    return {**record, "reused": False, "train_seconds": stats.seconds, "load_seconds": stats.load_seconds,
            "device": stats.device}


def adapt(cfg: RagrigConfig, out: str | None = None, *, force: bool = False, progress: bool = True,
          on_step: OnStep | None = None, executor: Executor = IN_PROCESS) -> AdaptResult:
    """Fine-tune ``cfg``'s encoder on its published version; the model folder and what it took."""
    call = executor.call
    t0 = time.perf_counter()
    prep = call("adapt-pairs", prepare, cfg, out)
    rec = call("adapt-train", fit, cfg, prep, force, progress, on_step)
    seconds = time.perf_counter() - t0
    train_s = float(rec["train_seconds"])
    return AdaptResult(
        model=str(prep.target), pairs=len(prep.pairs), pair_counts=prep.pair_counts, steps=int(rec["steps"]),
        seconds=seconds, train_seconds=train_s, load_seconds=float(rec.get("load_seconds", 0.0)),
        pairs_per_s=(len(prep.pairs) * cfg.embedding.adapt.epochs / train_s) if train_s > 0 else 0.0,
        losses=list(rec["losses"]), device=str(rec["device"]), index_key=prep.index_key, version=prep.version,
        base_model=prep.base_model_id, recipe=cfg.embedding.adapt.model_dump(), recipe_hash=str(rec["recipe_hash"]),
        reused=bool(rec["reused"]))
