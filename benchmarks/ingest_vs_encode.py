"""Ingest wall time against the limit on this hardware: raw ``model.encode`` over the same chunk texts.

Measured side by side in one process: a cold full ingest in a fresh ragrig home (no caches), then
``SentenceTransformer.encode`` over exactly the chunk texts that ingest embedded (same model, batch
size and normalisation) in one call -- the library's default, which orders a call by character length --
and again in batches ordered by token count, as ingest embeds them (the limit at equal padding), then
(corpora that ingest in under a minute) the same cold-cache ingest again into a second fresh home once the
process has paid its start-up (imports, converter, tokenizer), then an unchanged re-ingest, then a
re-ingest after changing 1% of documents
(directory corpora: a copy of the corpus is edited; BEIR: a copy of corpus.jsonl is edited).
Prints a table and writes JSON to benchmarks/results/ingest_<name>.json.

    python benchmarks/ingest_vs_encode.py                       # the sample corpus
    python benchmarks/ingest_vs_encode.py --config configs/scifact.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def copy_corpus(src: Path, dst: Path) -> Path:
    if src.is_dir() and not (src / "corpus.jsonl").exists():
        shutil.copytree(src, dst)
        return dst
    dst.mkdir(parents=True)
    shutil.copy(src / "corpus.jsonl" if src.is_dir() else src, dst / "corpus.jsonl")
    return dst


def edit_corpus(dst: Path, fraction: float) -> int:
    """Change ``fraction`` of the documents of the corpus copy in ``dst`` (append a sentence)."""
    if not (dst / "corpus.jsonl").exists():
        files = sorted(p for p in dst.rglob("*.md"))
        n = max(1, round(len(files) * fraction))
        for p in files[:: max(1, len(files) // n)][:n]:
            p.write_text(p.read_text(encoding="utf-8") + "\n\nAn edited closing sentence for the benchmark.\n", encoding="utf-8")
        return n
    lines = (dst / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    n = max(1, round(len(lines) * fraction))
    step = max(1, len(lines) // n)
    changed = 0
    for i in range(0, len(lines), step):
        if changed >= n:
            break
        rec = json.loads(lines[i])
        rec["text"] = rec["text"] + " An edited closing sentence for the benchmark."
        lines[i] = json.dumps(rec, ensure_ascii=False)
        changed += 1
    (dst / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=None)
    ap.add_argument("--name", default=None)
    args = ap.parse_args()

    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    work = Path(tempfile.mkdtemp(prefix="ragrig-bench-"))
    os.environ["RAGRIG_HOME"] = str(work / "home")
    base = load_config(args.config, ["retrieval.synonyms=null", "eval.testsets=[]"])
    name = args.name or (base.index.name or Path(base.corpus.path).name)
    corpus = copy_corpus(Path(base.corpus.path), work / "corpus")
    # ingest against one model's raw encode: the second encoder's view off (its cost: benchmarks/views_cost.py)
    overrides = ["retrieval.synonyms=null", "eval.testsets=[]", f"corpus.path={corpus}",
                 "retrieval.fusion.weights.vector2=0"]
    cfg = load_config(args.config, overrides)

    t0 = time.perf_counter()
    full = IngestPipeline(cfg, progress=True).run()
    full_s = time.perf_counter() - t0
    chunks = IndexVersion.current(cfg).chunks
    texts = list(dict.fromkeys(c.search_text for c in chunks))  # what ingest embedded (unique texts)

    from ragrig.retrieval.embedding import resolve_model
    from sentence_transformers import SentenceTransformer

    t0 = time.perf_counter()
    model = SentenceTransformer(resolve_model(cfg.embedding.model), device=cfg.embedding.device)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.encode(texts, batch_size=cfg.embedding.batch_size, normalize_embeddings=cfg.embedding.normalize,
                 show_progress_bar=True)
    encode_s = time.perf_counter() - t0
    # the same texts in batches of similar token counts (what ingest does): the limit with equal padding
    t0 = time.perf_counter()
    lengths = [len(x) for x in model.tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]]
    ordered = [texts[i] for i in sorted(range(len(texts)), key=lambda i: -lengths[i])]
    size = cfg.embedding.batch_size
    for i in range(0, len(ordered), size):
        model.encode(ordered[i : i + size], batch_size=size, normalize_embeddings=cfg.embedding.normalize)
    sorted_s = time.perf_counter() - t0

    warm_s = None
    if full_s < 60:  # small corpora: start-up is a large share of the first ingest; time the work itself too
        warm_cfg = load_config(args.config, [*overrides, f"home={work / 'home-warm'}"])
        t0 = time.perf_counter()
        IngestPipeline(warm_cfg).run()
        warm_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    again = IngestPipeline(cfg).run()
    again_s = time.perf_counter() - t0

    n_changed = edit_corpus(corpus, 0.01)
    t0 = time.perf_counter()
    changed = IngestPipeline(cfg).run()
    changed_s = time.perf_counter() - t0

    result = {
        "corpus": name,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "model": cfg.embedding.model,
        "documents": full.docs_seen,
        "chunks": full.chunks,
        "unique_texts": len(texts),
        "full_ingest_s": round(full_s, 2),
        "stage_s": full.seconds,
        "raw_encode_s": round(encode_s, 2),
        "model_load_s": round(load_s, 2),
        "ratio_ingest_over_encode": round(full_s / encode_s, 3),
        "raw_encode_token_sorted_s": round(sorted_s, 2),
        "ratio_ingest_over_token_sorted_encode": round(full_s / sorted_s, 3),
        "warm_ingest_s": None if warm_s is None else round(warm_s, 2),
        "ratio_warm_ingest_over_encode": None if warm_s is None else round(warm_s / encode_s, 3),
        "unchanged_reingest_s": round(again_s, 3),
        "unchanged_embedded": again.chunks_embedded,
        "ratio_unchanged_over_full": round(again_s / full_s, 4),
        "changed_docs": n_changed,
        "changed_reingest_s": round(changed_s, 2),
        "changed_embedded": changed.chunks_embedded,
        "ratio_changed_over_full": round(changed_s / full_s, 4),
    }
    out = ROOT / "benchmarks" / "results" / f"ingest_{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    rows = [
        ("documents / chunks / unique texts", f"{result['documents']} / {result['chunks']} / {result['unique_texts']}"),
        ("full ingest (cold caches)", f"{full_s:.1f} s"),
        ("raw model.encode, same texts", f"{encode_s:.1f} s (+ {load_s:.1f} s model load)"),
        ("ratio ingest / encode (goal <= 1.15)", f"{result['ratio_ingest_over_encode']:.3f}"),
        ("raw encode, token-ordered batches", f"{sorted_s:.1f} s (counting tokens included)"),
        ("ratio ingest / token-ordered encode", f"{result['ratio_ingest_over_token_sorted_encode']:.3f}"),
        *([("same ingest again, fresh home, warm process", f"{warm_s:.1f} s"),
           ("ratio warm ingest / encode", f"{warm_s / encode_s:.3f}")] if warm_s is not None else []),
        ("re-ingest, nothing changed", f"{again_s:.2f} s, {again.chunks_embedded} embedded"),
        ("ratio unchanged / full (goal <= 0.05)", f"{result['ratio_unchanged_over_full']:.4f}"),
        (f"re-ingest, {n_changed} docs changed (1%)", f"{changed_s:.1f} s, {changed.chunks_embedded} embedded"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\ningest vs raw encode: {name} ({os.cpu_count()} CPUs)")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print("  stage seconds: " + ", ".join(f"{k}={v:.1f}" for k, v in full.seconds.items()))
    print(f"wrote {out}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
