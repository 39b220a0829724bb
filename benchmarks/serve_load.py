"""``ragrig serve`` under load, from a real HTTP client (httpx, keep-alive, one client per thread), on 127.0.0.1.

1. Latency: SciFact's published index (configs/scifact.yaml; its home given by --home, opened read-only) served
   by ``ragrig serve`` in its own process group, its 300 test queries sent by 1, 4 and 16 concurrent clients
   (--requests each level, after a warm-up); p50/p95/p99 client-side latency, throughput, errors, and the
   server's own per-stage means from /metrics. The query cache is off (``retrieval.cache_size=0``): every request
   is a real search. Then, with the server stopped, the same queries one after another through ``Retriever.search``
   in this process (torch's default threads, and the thread count the server chose: ``serve.torch_threads``,
   /health): the served p50 over the in-process p50, and where the difference goes (client and HTTP, the app
   around the search, the search itself). ``--config configs/default.yaml --testset datasets/testsets/sample.yaml``
   does the same on the sample corpus (small, quick to ingest) for development.
2. A publish mid-run: a scratch home (a copy of datasets/sample plus a "generation" document, ingested once),
   served; 16 clients query it without pause while a separate ``ragrig ingest`` publishes v2 (the generation
   document and five others edited); every answer is checked against the chunk table of the version it names
   (a hit whose text is not that version's: a mixed-version answer), per client the versions must never go
   back, and every request must succeed.

Writes benchmarks/results/serve_load.json and prints Markdown tables.

    python benchmarks/serve_load.py --home /work/state/home [--requests 300] [--levels 1 4 16] [--skip-latency]
    python benchmarks/serve_load.py --config configs/default.yaml --testset datasets/testsets/sample.yaml \
        --home .ragrig --levels 1 --skip-switch --out /tmp/serve_load-sample.json
    python benchmarks/serve_load.py --home HOME --gc-freeze both --rounds 2 --levels 1 4 16 --skip-switch
        (serve.gc_freeze off vs on, alternated, side by side: docs/serve-latency.md "Freezing the index")
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import stop_group  # noqa: E402
BIN = Path(sys.executable).parent / "ragrig"
OUT = ROOT / "benchmarks" / "results"
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
GEN = "# Generation\n\n## Marker\n\nThe marker of this corpus is generation {n}, written for version {n}.\n"
REVISED = "\n\n## Revision\n\nThis document was revised for generation {n}.\n"


@contextmanager
def serve(args: list[str], env: dict[str, str], log: Path, timeout_s: float = 600) -> Iterator[str]:
    """``ragrig serve --port 0 ARGS`` in its own process group; yields its URL; stops the group."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(BIN), "serve", "--port", "0", *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while not (m := re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ragrig serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield m.group(1)
    finally:
        stop_group(proc)


def wait_until(cond: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.05)


def scifact_queries() -> list[str]:
    ids = {line.split("\t")[0] for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:] if line}
    rows = [json.loads(x) for x in (SCIFACT / "queries.jsonl").read_text().splitlines() if x.strip()]
    return [r["text"] for r in rows if str(r["_id"]) in ids]


def stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
            "p99_ms": float(np.percentile(a, 99)), "mean_ms": float(a.mean())}


def stage_means(url: str) -> dict[str, float]:
    """Mean ms per stage from the server's Prometheus histograms."""
    sums, counts = server_sums(url)
    return {s: 1000 * sums[s] / counts[s] for s in sums if counts.get(s, 0) > 0 and s != "request"}


def server_sums(url: str) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds and counts so far of each stage, and of whole /retrieve requests (``request``: arrival to response,
    as the server measures it)."""
    text = httpx.get(url + "/metrics", timeout=30).text
    sums = {k: float(v) for k, v in re.findall(r'ragrig_stage_seconds_sum\{stage="(\w+)"\} ([\d.e+-]+)', text)}
    counts = {k: float(v) for k, v in re.findall(r'ragrig_stage_seconds_count\{stage="(\w+)"\} ([\d.e+-]+)', text)}
    for name, kind in (("sum", sums), ("count", counts)):
        m = re.search(rf'ragrig_request_seconds_{name}\{{endpoint="/retrieve"\}} ([\d.e+-]+)', text)
        kind["request"] = float(m.group(1)) if m else 0.0
    return sums, counts


def level_server_means(before: tuple[dict, dict], after: tuple[dict, dict]) -> dict[str, float]:
    """Mean ms per stage (and per whole request) over the requests between two ``server_sums``."""
    out = {}
    for s, total in after[0].items():
        n = after[1].get(s, 0) - before[1].get(s, 0)
        if n > 0:
            out[s] = 1000 * (total - before[0].get(s, 0.0)) / n
    return out


def in_process(config: Path, sets: list[str], home: Path, queries: list[str], requests: int, threads: int | None,
               top_k: int = 10) -> dict[str, Any]:
    """The served search, called in this process: ``Retriever.search`` on the same index and queries, one after
    another (after the same warm-up), with torch's default threads or ``threads``."""
    import torch
    from ragrig.configs.load import load_config
    from ragrig.retrieval.search.retriever import Retriever

    os.environ["RAGRIG_HOME"] = str(home)
    cfg = load_config(config, [s for s in sets if s != "--set"])
    r = Retriever(cfg)
    default = torch.get_num_threads()
    torch.set_num_threads(threads or default)
    try:
        for j in range(20):
            r.search(queries[j % len(queries)], top_k=top_k)
        ms, embed = [], []
        for j in range(requests):
            t0 = time.perf_counter()
            res = r.search(queries[j % len(queries)], top_k=top_k)
            ms.append((time.perf_counter() - t0) * 1000)
            embed.append(res.timings_ms.get("embed", 0.0))
    finally:
        torch.set_num_threads(default)
    return {"torch_threads": threads or default, "requests": requests, **stats(ms),
            "embed_p50_ms": float(np.percentile(embed, 50))}


def load(url: str, queries: list[str], clients: int, requests: int, top_k: int = 10) -> dict[str, Any]:
    """``requests`` queries in all, split over ``clients`` threads, each with its own keep-alive connection."""
    lat: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []

    def client(i: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            for j in range(i, requests, clients):
                t0 = time.perf_counter()
                try:
                    r = c.post("/retrieve", json={"query": queries[j % len(queries)], "top_k": top_k})
                    if r.status_code != 200:
                        errors.append(f"{r.status_code}: {r.text[:200]}")
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))
                lat[i].append((time.perf_counter() - t0) * 1000)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    flat = [x for xs in lat for x in xs]
    return {"clients": clients, "requests": len(flat), "errors": len(errors), "error_samples": errors[:3],
            "seconds": wall, "qps": len(flat) / wall, **stats(flat)}


def latency(home: Path, levels: list[int], requests: int, tmp: Path, config: Path,
            queries: list[str], extra: list[str] = (), in_process_too: bool = True) -> dict[str, Any]:
    env = {**os.environ, "RAGRIG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    sets = ["--set", "retrieval.cache_size=0", *(x for item in extra for x in ("--set", item))]
    before = {p: p.stat().st_mtime_ns for p in home.rglob("*") if p.is_file()}
    out: dict[str, Any] = {"home": str(home), "config": str(config), "queries": len(queries), "levels": []}
    t0 = time.perf_counter()
    log = tmp / f"serve-latency-{len(list(tmp.glob('serve-latency*.log')))}.log"
    with serve(["-c", str(config), *sets], env, log) as url:
        out["startup_s"] = time.perf_counter() - t0
        out["health"] = httpx.get(url + "/health", timeout=30).json()
        load(url, queries, 1, 20)  # warm-up
        for c in levels:
            sums = server_sums(url)
            level = load(url, queries, c, requests)
            level["server_mean_ms"] = level_server_means(sums, server_sums(url))
            print(f"  {c:>2} clients: p50 {level['p50_ms']:.1f} ms, p95 {level['p95_ms']:.1f} ms, "
                  f"{level['qps']:.1f} req/s, {level['errors']} errors", flush=True)
            out["levels"].append(level)
        out["server_stage_mean_ms"] = stage_means(url)
    after = {p: p.stat().st_mtime_ns for p in home.rglob("*") if p.is_file()}
    out["home_files_changed"] = sorted(str(p) for p in set(before) | set(after) if before.get(p) != after.get(p))
    if not in_process_too:
        return out
    # right after, the server stopped: the same search in this process, on torch's default threads and on the
    # server's (its serve.torch_threads choice)
    served_threads = out["health"].get("torch_threads")
    out["in_process"] = [in_process(config, sets, home, queries, requests, None)]
    if served_threads and served_threads != out["in_process"][0]["torch_threads"]:
        out["in_process"].append(in_process(config, sets, home, queries, requests, served_threads))
    one = next((lv for lv in out["levels"] if lv["clients"] == 1), None)
    if one is not None:
        # the goal's ratio: against in-process search as a library user gets it (torch's default threads); and
        # against in-process search on the server's thread count (what HTTP and the app add, threads aside)
        inp = out["in_process"][0]
        same = next((x for x in out["in_process"] if x["torch_threads"] == served_threads), inp)
        out["serve_over_in_process_p50"] = one["p50_ms"] / inp["p50_ms"]
        out["serve_over_in_process_same_threads_p50"] = one["p50_ms"] / same["p50_ms"]
        for x in out["in_process"]:
            print(f"  in process ({x['torch_threads']} torch threads): p50 {x['p50_ms']:.1f} ms, p95 "
                  f"{x['p95_ms']:.1f} ms; served (on {served_threads}) / in-process p50 "
                  f"{one['p50_ms'] / x['p50_ms']:.2f}x", flush=True)
    return out


def gc_freeze_pairs(run: tuple, sets: list[str], rounds: int) -> dict[str, Any]:
    """The latency part without and with ``serve.gc_freeze``, alternated ``rounds`` times (a load change on the
    shared machine hits both), each a fresh server on the same index and queries; per level, every run's
    percentiles and the medians over the runs."""
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    for r in range(rounds):
        for mode in ("off", "on"):
            print(f"  round {r + 1}, serve.gc_freeze {mode}:", flush=True)
            runs[mode].append(latency(*run, [*sets, f"serve.gc_freeze={mode == 'on'}"], in_process_too=False))
    levels = [lv["clients"] for lv in runs["off"][0]["levels"]]
    table = []
    for i, clients in enumerate(levels):
        row: dict[str, Any] = {"clients": clients}
        for mode, xs in runs.items():
            for q in ("p50_ms", "p95_ms", "p99_ms", "qps"):
                row[f"{mode}_{q}"] = float(np.median([x["levels"][i][q] for x in xs]))
                row[f"{mode}_{q}_runs"] = [x["levels"][i][q] for x in xs]
        table.append(row)
    return {"rounds": rounds, "levels": table, "runs": runs}


def write_corpus(corpus: Path, n: int) -> None:
    (corpus / "gen.md").write_text(GEN.format(n=n), encoding="utf-8")
    for p in sorted(corpus.rglob("*.md"))[:6]:
        if p.name != "gen.md":
            text = re.sub(r"\n\n## Revision\n\n.*\n$", "", p.read_text(encoding="utf-8"))
            p.write_text(text + (REVISED.format(n=n) if n > 1 else ""), encoding="utf-8")


def switch(tmp: Path, clients: int, before_n: int, after_n: int) -> dict[str, Any]:
    home, corpus = tmp / "home", tmp / "corpus"
    shutil.copytree(ROOT / "datasets" / "sample", corpus)
    write_corpus(corpus, 1)
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.cache_size=0", "--set", "eval.testsets=[]"]
    env = {**os.environ, "RAGRIG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([str(BIN), "ingest", "--no-prefect", "-q", *sets], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    queries = ["which generation is the marker of this corpus", "what was revised for this generation",
               "how does a grappled creature get free", "what does cover do", "lethal 5+", "how far can I dash"]
    answers: list[list[tuple[str, list[tuple[str, str]], float]]] = [[] for _ in range(clients)]
    errors: list[str] = []
    stop = threading.Event()

    def client(i: int, url: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            k = i
            while not stop.is_set() and len(answers[i]) < 5000:
                t0 = time.perf_counter()
                try:
                    r = c.post("/retrieve", json={"query": queries[k % len(queries)], "top_k": 10})
                    ms = (time.perf_counter() - t0) * 1000
                    if r.status_code != 200:
                        errors.append(f"{r.status_code}: {r.text[:200]}")
                    else:
                        b = r.json()
                        answers[i].append((b["version"], [(h["chunk_id"], h["text"]) for h in b["hits"]], ms))
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))
                k += clients

    def total() -> int:
        return sum(map(len, answers))

    with serve(sets, env, tmp / "serve-switch.log") as url:
        threads = [threading.Thread(target=client, args=(i, url)) for i in range(clients)]
        for t in threads:
            t.start()
        wait_until(lambda: total() >= before_n, 600, f"{before_n} answers before the publish")
        write_corpus(corpus, 2)
        t_pub = time.perf_counter()
        p = subprocess.run([str(BIN), "ingest", "--no-prefect", "-q", *sets], env=env, capture_output=True, text=True)
        publish_s = time.perf_counter() - t_pub
        assert p.returncode == 0, p.stderr
        wait_until(lambda: any(v == "v000002" for a in answers for v, _, _ in a[-1:]), 120, "an answer from v2")
        switched_at = total()
        wait_until(lambda: total() >= switched_at + after_n, 600, f"{after_n} answers after the switch")
        stop.set()
        for t in threads:
            t.join()
        health = httpx.get(url + "/health", timeout=30).json()
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.layout import Layout
    from ragrig.retrieval.index.version import IndexVersion

    os.environ["RAGRIG_HOME"] = str(home)
    cfg = load_config(overrides=[s for s in sets if s != "--set"])
    tables = {v: {c.chunk_id: c.text for c in IndexVersion(cfg, Layout(cfg), v).chunks} for v in ("v000001", "v000002")}
    changed = sum(1 for cid, text in tables["v000002"].items() if tables["v000001"].get(cid) != text)
    flat = [a for xs in answers for a in xs]
    mixed = [v for v, hits, _ in flat if any(tables[v].get(cid) != text for cid, text in hits)]
    went_back = sum(1 for xs in answers for (a, _, _), (b, _, _) in zip(xs, xs[1:]) if b < a)
    per_version = {v: sum(1 for x, _, _ in flat if x == v) for v in tables}
    return {"clients": clients, "requests": len(flat) + len(errors), "errors": len(errors),
            "error_samples": errors[:3], "mixed_version_answers": len(mixed), "went_back_a_version": went_back,
            "answers_per_version": per_version, "chunks_changed_in_v2": changed, "publish_ingest_s": publish_s,
            "latency": stats([ms for _, _, ms in flat]), "health_after": health}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=Path(os.environ.get("RAGRIG_HOME", ROOT / ".ragrig")),
                    help="the ragrig home holding the SciFact index (only read)")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests", type=int, default=300, help="requests per concurrency level")
    ap.add_argument("--switch-clients", type=int, default=16)
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-switch", action="store_true")
    ap.add_argument("--config", type=Path, default=ROOT / "configs" / "scifact.yaml",
                    help="the served config (default SciFact's)")
    ap.add_argument("--testset", type=Path, default=None,
                    help="the queries: this test set's (default: SciFact's test queries)")
    ap.add_argument("--out", type=Path, default=OUT / "serve_load.json")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override for the latency part, e.g. serve.torch_threads=1 (repeatable)")
    ap.add_argument("--gc-freeze", choices=["on", "off", "both"], default="on",
                    help="serve.gc_freeze for the latency part; both: servers without and with it, alternated "
                         "--rounds times (off first, then on), side by side in one table (no in-process part)")
    ap.add_argument("--rounds", type=int, default=2, help="--gc-freeze both: off/on pairs (default 2)")
    args = ap.parse_args()
    result: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load_avg_start": os.getloadavg()}}
    with tempfile.TemporaryDirectory(prefix="ragrig-serve-load-") as tmp:
        if not args.skip_latency:
            print(f"latency ({args.config.name}):", flush=True)
            if args.testset is not None:
                from ragrig.eval.testset import load_testset

                queries = [c.query for c in load_testset(args.testset).cases]
            else:
                queries = scifact_queries()
            run = (args.home.resolve(), args.levels, args.requests, Path(tmp), args.config.resolve(), queries)
            if args.gc_freeze == "both":
                result["gc_freeze"] = gc_freeze_pairs(run, args.sets, args.rounds)
            else:
                result["latency"] = latency(*run, [*args.sets, f"serve.gc_freeze={args.gc_freeze == 'on'}"])
        if not args.skip_switch:
            print("publish mid-run:", flush=True)
            result["switch"] = switch(Path(tmp), args.switch_clients, 300, 300)
            s = result["switch"]
            print(f"  {s['requests']} requests, {s['errors']} errors, {s['mixed_version_answers']} mixed-version "
                  f"answers, {s['went_back_a_version']} went back, per version {s['answers_per_version']}", flush=True)
    result["machine"]["load_avg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    lines = []
    if "gc_freeze" in r:
        g = r["gc_freeze"]
        lines += [f"serve.gc_freeze off vs on: medians of {g['rounds']} alternated runs each (every run in brackets)",
                  "", "| clients | p50 ms off / on | p99 ms off / on | p99 on / off | req/s off / on |",
                  "|---:|---|---|---:|---|"]
        for row in g["levels"]:
            runs = " ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(row["off_p99_ms_runs"], row["on_p99_ms_runs"]))
            lines.append(f"| {row['clients']} | {row['off_p50_ms']:.1f} / {row['on_p50_ms']:.1f} | "
                         f"{row['off_p99_ms']:.1f} / {row['on_p99_ms']:.1f} ({runs}) | "
                         f"{row['on_p99_ms'] / row['off_p99_ms']:.2f} | {row['off_qps']:.1f} / {row['on_qps']:.1f} |")
    if "latency" in r:
        lines += ["| clients | requests | p50 ms | p95 ms | p99 ms | req/s | errors |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for lv in r["latency"]["levels"]:
            lines.append(f"| {lv['clients']} | {lv['requests']} | {lv['p50_ms']:.1f} | {lv['p95_ms']:.1f} | "
                         f"{lv['p99_ms']:.1f} | {lv['qps']:.1f} | {lv['errors']} |")
        st = r["latency"]["server_stage_mean_ms"]
        lines.append("\nserver-side mean ms per stage: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(st.items())))
        lines += breakdown(r["latency"])
    if "switch" in r:
        s = r["switch"]
        lines += ["", "| clients | requests | errors | mixed-version answers | went back a version | v1 / v2 answers | "
                  "p50 / p95 ms |", "|---:|---:|---:|---:|---:|---|---|",
                  f"| {s['clients']} | {s['requests']} | {s['errors']} | {s['mixed_version_answers']} | "
                  f"{s['went_back_a_version']} | {s['answers_per_version']['v000001']} / "
                  f"{s['answers_per_version']['v000002']} | "
                  f"{s['latency']['p50_ms']:.1f} / {s['latency']['p95_ms']:.1f} |"]
    return "\n".join(lines)


def breakdown(lat: dict[str, Any]) -> list[str]:
    """Where one client's request time goes (means, ms): the client and HTTP (client-side mean minus the server's
    own request time), the app around the search (parsing, the worker-thread hop, to_dict, JSON, metrics), waiting
    for the search thread, the search in the server, and that search in this process."""
    one = next((lv for lv in lat["levels"] if lv["clients"] == 1 and "server_mean_ms" in lv), None)
    if one is None or not lat.get("in_process"):
        return []
    sm = one["server_mean_ms"]
    request, search, queue = sm.get("request", 0.0), sm.get("total", 0.0), sm.get("queue", 0.0)
    inp = lat["in_process"]
    rows = [("client (httpx) + HTTP + uvicorn", one["mean_ms"] - request),
            ("app: parse, thread hop, to_dict, JSON, metrics", request - search - queue),
            ("waiting for the search thread", queue),
            (f"search in the server ({lat['health'].get('torch_threads')} torch threads)", search)]
    for x in inp:
        rows.append((f"search in process ({x['torch_threads']} torch threads; its query encoding p50 "
                     f"{x['embed_p50_ms']:.1f})", x["mean_ms"]))
    out = ["", f"one client, means: served {one['mean_ms']:.1f} ms (p50 {one['p50_ms']:.1f}), in process "
           f"{inp[0]['mean_ms']:.1f} ms (p50 {inp[0]['p50_ms']:.1f}); served / in-process p50 "
           f"{lat.get('serve_over_in_process_p50', float('nan')):.2f}x (default threads), "
           f"{lat.get('serve_over_in_process_same_threads_p50', float('nan')):.2f}x (the server's threads)", "",
           "| where the served request's time goes | mean ms |", "|---|---:|"]
    out += [f"| {name} | {ms:.2f} |" for name, ms in rows]
    return out


if __name__ == "__main__":
    main()
