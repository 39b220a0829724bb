"""Readers against a publisher: N reader processes query in a loop while M ingests publish and prune
(``keep_versions: 1``, the most aggressive pruning), bounded in time. Issue 19, item 4.

Every generation of the corpus has its own document names and text (``g<N>-*.md``, "generation N"), so a
version's answers can only come from that generation: an answer with a hit from another generation, a chunk
id the version does not hold, or a result labelled with another version is a *mixed-version answer*. Each
reader alternates a long-lived retriever (kept open across several publishes) with fresh ones (opened, one
query batch, released: the race with the prune that used to lose 2 of 400). Counted per reader: answers,
errors (any exception), mixed answers, versions seen.

    .venv/bin/python benchmarks/reader_soak.py --readers 3 --ingests 20 --seconds 600   # by hand
    (tests/reliability/test_reader_soak.py runs a short one in the default suite)

Prints one JSON object with the counts (and writes it with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["how far does a model move", "charge into engagement", "shooting at a visible target"]


def write_generation(corpus: Path, n: int) -> None:
    for p in corpus.glob("*.md"):
        p.unlink()
    for part in ("a", "b", "c"):
        (corpus / f"g{n}-{part}.md").write_text(
            f"# Generation {n} part {part}\n\n## Moving\n\nIn generation {n} a model moves {n + 3} inches.\n\n"
            f"## Charging\n\nIn generation {n} a charge into engagement range needs {n + 5} inches.\n\n"
            f"## Shooting\n\nIn generation {n} roll attack dice against a visible target ({part}).\n",
            encoding="utf-8")


def overrides(corpus: Path, home: Path) -> list[str]:
    return [f"corpus.path={corpus}", f"home={home}", "retrieval.synonyms=null", "eval.testsets=[]",
            "index.keep_versions=1", "corpus.markdown_extractor=plain", "retrieval.cache_size=0",
            "retrieval.fusion.weights.vector2=0"]  # the reader's own costs; the second encoder: views_cost.py


# ---- a reader process ----------------------------------------------------------------------------------------
def check(retriever, results) -> int:  # type: ignore[no-untyped-def]
    """The number of mixed-version answers in ``results`` (each should come from the retriever's version)."""
    version = retriever.version.version
    gens = {d.split("-")[0] for d in retriever.version.documents_by_id}
    assert len(gens) == 1, gens  # a version holds one generation
    (gen,) = gens
    marker = f"generation {gen[1:]} "
    mixed = 0
    for res in results:
        bad = res.version != version or not res.hits
        for h in res.hits:
            bad |= (not h.doc_id.startswith(f"{gen}-") or marker not in h.text.lower()
                    or h.chunk_id not in retriever.version.chunk_index)
        mixed += bad
    return mixed


def release(retriever) -> None:  # type: ignore[no-untyped-def]
    """Let go of the reader's version (a ragrig without reader leases has nothing to let go of)."""
    getattr(retriever.version, "release", lambda: None)()


def reader(corpus: Path, home: Path, stop: Path, out: Path, ready: Path) -> None:
    from ragrig.configs.load import load_config
    from ragrig.retrieval.embedding import Embedder
    from ragrig.retrieval.search.retriever import Retriever

    cfg = load_config(overrides=overrides(corpus, home))
    embedder = Embedder(cfg.embedding)
    _ = embedder.model
    counts = {"answers": 0, "errors": 0, "mixed": 0, "fresh_opens": 0, "long_lived": 0, "versions": [],
              "error_samples": []}
    seen: set[str] = set()
    ready.write_text("ready")
    long_lived = None
    long_uses = 0
    while not stop.exists():
        try:
            if long_lived is None or long_uses >= 25:  # a long-lived reader: kept for 25 batches
                if long_lived is not None:
                    release(long_lived)
                long_lived = Retriever(cfg, embedder=embedder)
                long_uses = 0
                counts["long_lived"] += 1
            for r in (long_lived, None):
                retriever = r or Retriever(cfg, embedder=embedder)  # a fresh one: opened for one batch
                counts["fresh_opens"] += r is None
                results = retriever.search_many(QUERIES, top_k=5)
                counts["mixed"] += check(retriever, results)
                counts["answers"] += len(results)
                seen.add(retriever.version.version)
                if r is None:
                    release(retriever)
            long_uses += 1
        except Exception as exc:
            counts["errors"] += 1
            if len(counts["error_samples"]) < 5:
                counts["error_samples"].append("".join(traceback.format_exception_only(exc)).strip()[:500])
            long_lived = None
    counts["versions"] = sorted(seen)
    out.write_text(json.dumps(counts))


# ---- the publisher -------------------------------------------------------------------------------------------
def run_soak(readers: int = 2, ingests: int = 4, seconds: float = 60.0, workdir: Path | None = None,
             pause_s: float = 0.5) -> dict:
    """Start ``readers`` reader processes, then publish ``ingests`` generations (or until ``seconds`` pass),
    stop the readers and return the counts."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.health import check_index
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    work = Path(workdir or tempfile.mkdtemp(prefix="ragrig-soak-"))
    corpus, home = work / "corpus", work / "home"
    corpus.mkdir(parents=True, exist_ok=True)
    write_generation(corpus, 1)
    cfg = load_config(overrides=overrides(corpus, home))
    IngestPipeline(cfg).run()
    stop = work / "stop"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    procs = []
    for i in range(readers):
        args = [sys.executable, __file__, "--reader", str(corpus), str(home), str(stop), str(work / f"reader{i}.json"),
                str(work / f"ready{i}")]
        procs.append(subprocess.Popen(args, env=env, cwd=ROOT, start_new_session=True))
    t0 = time.monotonic()
    deadline = t0 + seconds
    while not all((work / f"ready{i}").exists() for i in range(readers)):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            break
        time.sleep(0.2)
    started = time.monotonic()
    published, kept_in_use = 0, 0
    for n in range(2, ingests + 2):
        if time.monotonic() > deadline:
            break
        write_generation(corpus, n)
        stats = IngestPipeline(cfg).run()
        published += stats.published
        kept_in_use += len(getattr(stats, "kept_in_use", []))
        time.sleep(pause_s)
    time.sleep(pause_s)
    stop.write_text("stop")
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
    per_reader = []
    for i in range(readers):
        f = work / f"reader{i}.json"
        per_reader.append(json.loads(f.read_text()) if f.exists() else {"answers": 0, "errors": 1, "mixed": 0,
                                                                         "error_samples": ["reader died"]})
    health = check_index(cfg, all_versions=True)
    return {
        "readers": readers, "ingests_published": published, "publish_seconds": round(time.monotonic() - started, 1),
        "answers": sum(r["answers"] for r in per_reader), "errors": sum(r["errors"] for r in per_reader),
        "mixed": sum(r["mixed"] for r in per_reader), "fresh_opens": sum(r.get("fresh_opens", 0) for r in per_reader),
        "long_lived_readers": sum(r.get("long_lived", 0) for r in per_reader),
        "versions_seen": sorted({v for r in per_reader for v in r.get("versions", [])}),
        "prunes_deferred_for_a_reader": kept_in_use, "healthy_after": health.ok, "leftovers_after": health.leftovers,
        "versions_after": [v.version for v in health.versions],
        "error_samples": [s for r in per_reader for s in r.get("error_samples", [])],
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--reader":
        reader(*(Path(a) for a in sys.argv[2:7]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readers", type=int, default=3)
    ap.add_argument("--ingests", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run_soak(a.readers, a.ingests, a.seconds)
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
