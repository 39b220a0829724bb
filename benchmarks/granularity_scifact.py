"""Does a sentence-level dense view lift SciFact hybrid retrieval? (an experiment, not a default)

    python benchmarks/granularity_scifact.py [-c configs/scifact.yaml] [--testset FOLDER]

The default hybrid embeds each chunk (a SciFact abstract, or a window-sized piece of one, with its title)
as one vector. Claims usually restate one finding, i.e. one sentence. This script scores every chunk of
the published index by a second, finer view and fuses it with BM25 the way the retriever does (weighted
z-score over each source's top `retrieval.candidates`, equal weights; a missing item gets the source's
floor), so the figures are comparable with `ragrig eval`:

* chunk:              the index's own chunk vectors (the default hybrid);
* sentence:           best cosine over the chunk's sentences, embedded alone;
* title + sentence:   the same with the header path (the paper title) in front of each sentence;
* chunk + sentence:   the sum of the chunk and best-sentence cosines (both on the same scale).

Each query's top `retrieval.candidates` chunks, de-duplicated as the retriever does, are scored with `ragrig eval`'s own metrics
(eval.metrics.query_metrics against the test set's resolved targets). Scores are exact (a dot product over
every vector, not Chroma's approximate HNSW), so the chunk row can differ from `ragrig eval` in the fourth
decimal. Sentence vectors are cached in <home>/bench-granularity/ (keyed by the
model and the sentence texts); the first run embeds ~49k sentences twice (~16 min on 2 cores). Writes benchmarks/results/granularity_scifact.json and prints a Markdown table.
Nothing here is tuned: every combination uses equal weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# a sentence ends at . ! ? followed by space and an upper-case letter, digit or bracket
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in SENTENCE_END.split(text)) if s] or [text]


def ranked_rows(scores: np.ndarray, keys: list, prone: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` best scored rows after the retriever's de-duplication (retrieval.search.select.dedup_walk: one
    piece per section, one copy per text), best first; ties keep row order; -inf rows are not candidates."""
    from ragrig.retrieval.search.select import dedup_walk

    order = np.argsort(-scores, kind="stable")
    order = order[np.isfinite(scores[order])]
    keep = dedup_walk([keys[i] for i in order], prone[order], n)
    return order[keep][:n]


def top_run(scores: np.ndarray, n: int) -> dict[int, float]:
    """A source's candidates: its ``n`` best rows and their scores."""
    idx = np.argpartition(-scores, min(n, len(scores) - 1))[:n]
    return {int(i): float(scores[i]) for i in idx}


def candidates_only(scores: np.ndarray, n: int) -> np.ndarray:
    """One source alone, as the retriever runs it: its ``n`` best rows keep their scores, the rest -inf."""
    out = np.full(len(scores), -np.inf)
    run = top_run(scores, n)
    out[list(run)] = list(run.values())
    return out


def embed_cached(embedder, texts: list[str], cache: Path, label: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    key = hashlib.sha256(("\x1f".join(texts) + "\x1e" + str(embedder.cfg.model)).encode()).hexdigest()[:16]
    path = cache / f"{label}-{key}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    vecs = embedder.encode(texts, progress=True)
    print(f"embedded {len(texts):,} {label} texts in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", default=str(ROOT / "configs" / "scifact.yaml"))
    ap.add_argument("--testset", default=None, help="a BEIR folder (default: the config's first test set)")
    args = ap.parse_args(argv)

    from ragrig.configs.load import load_config
    from ragrig.eval.metrics import mean_metrics, query_metrics
    from ragrig.eval.relevance import resolve_testset
    from ragrig.eval.testset import import_beir
    from ragrig.configs.models import FusionConfig
    from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, SourceRun
    from ragrig.retrieval.search.fusion import fuse
    from ragrig.retrieval.search.retriever import Retriever

    cfg = load_config(args.config)
    ts = import_beir(args.testset or cfg.eval.testsets[0])
    r = Retriever(cfg)
    chunks = r.chunks
    chunk_vecs = r.sources.vectors_of(np.arange(len(chunks)))  # the version's own (unit) vectors, row order

    sents: list[str] = []
    titled: list[str] = []
    owner: list[int] = []
    for row, c in enumerate(chunks):
        title = " / ".join(c.header_path)
        for s in split_sentences(c.text):
            sents.append(s)
            titled.append(f"{title}\n{s}" if title else s)
            owner.append(row)
    owner_np = np.asarray(owner)
    cache = cfg.home_dir / "bench-granularity"
    sent_vecs = embed_cached(r.embedder, sents, cache, "sentence")
    titled_vecs = embed_cached(r.embedder, titled, cache, "title-sentence")

    queries = [case.query for case in ts.cases]
    qvecs = r.embedder.encode_queries(queries)
    n = cfg.retrieval.candidates

    def best_per_chunk(sims: np.ndarray) -> np.ndarray:
        out = np.full(len(chunks), -1.0, dtype=np.float64)
        np.maximum.at(out, owner_np, sims)
        return out

    views = {"chunk": [], "sentence": [], "title + sentence": [], "chunk + sentence": []}
    bm25 = []
    for qi, q in enumerate(queries):
        pq = r.processor.process(q)
        index = r.sources.bm25_index
        bm25.append(index.scores(index.tokenizer(pq.bm25_text)).astype(np.float64))
        chunk = chunk_vecs @ qvecs[qi]
        sent = best_per_chunk(sent_vecs @ qvecs[qi])
        views["chunk"].append(chunk)
        views["sentence"].append(sent)
        views["title + sentence"].append(best_per_chunk(titled_vecs @ qvecs[qi]))
        views["chunk + sentence"].append(chunk + sent)

    targets = resolve_testset(ts, r.version.documents_by_id)

    keys, prone = r.dedup.keys, r.dedup.prone

    def score(per_query: list[np.ndarray]) -> dict[str, float]:
        """`ragrig eval`'s metrics (eval.metrics) over each query's de-duplicated top `candidates` chunks."""
        m = mean_metrics([query_metrics([chunks[int(i)] for i in ranked_rows(s, keys, prone, n)], targets[case.id],
                                        (10, n)) for s, case in zip(per_query, ts.cases)])
        return {"ndcg@10": m["ndcg@10"], f"recall@{n}": m[f"recall@{n}"]}

    zscore = FusionConfig(method="weighted", weights={"bm25": 1.0, "vector": 1.0}, normalization="zscore")

    def fused(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The retriever's own fusion (retrieval.search.fusion) of the two sources' top ``n``."""
        runs = {s: SourceRun.of(list(top_run(x, n).items())) for s, x in (("bm25", a), ("vector", b))}
        batch = CandidateBatch.of([CandidateSet.build(runs, r.order, None)])
        f = fuse(batch, zscore)
        out = np.full(len(chunks), -np.inf)  # not a candidate of either source
        out[batch.rows[f.order]] = f.scores
        return out

    rows = [{"system": "BM25 alone", **score([candidates_only(s, n) for s in bm25])}]
    for name, per_query in views.items():
        rows.append({"system": f"{name} (dense alone)", **score([candidates_only(s, n) for s in per_query])})
        rows.append({"system": f"BM25 + {name}", **score([fused(a, b) for a, b in zip(bm25, per_query)])})
    result = {"config": os.path.relpath(Path(args.config).resolve(), ROOT), "testset": ts.name,
              "queries": len(queries), "chunks": len(chunks), "sentences": len(sents), "model": cfg.embedding.model,
              "rows": rows}
    out = ROOT / "benchmarks" / "results" / "granularity_scifact.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{ts.name}: {len(queries)} queries, {len(chunks):,} chunks, {len(sents):,} sentences\n")
    print(f"| system | nDCG@10 | R@{n} |")
    print("|---|---:|---:|")
    for row in rows:
        print(f"| {row['system']} | {row['ndcg@10']:.4f} | {row[f'recall@{n}']:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
