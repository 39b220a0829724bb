"""benchmarks/retrieval_latency.py's synthetic index (which reader_memory.py builds too) goes through the ingest
pipeline's own build: a small one, with the graph, builds, publishes and answers a query with its target chunk.
(Its build handed the pipeline an array after the build came to take rows, 588742d, and failed unseen until a
1M run.)"""

from __future__ import annotations

import json


def test_the_synthetic_index_builds_with_its_graph_and_answers(load_benchmark, tmp_path):
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.search.retriever import Retriever

    bench = load_benchmark("retrieval_latency")
    n, home = 3000, tmp_path / "bench-scale" / "3000"
    sets = ["index.vector_search.mode=hnsw"]
    built = bench.build(n, home, sets)
    assert built["reused"] is False and (home / "build.json").is_file()
    assert json.loads((home / "generator.json").read_text())["n"] == n
    cfg = load_config(None, [f"corpus.path={home / 'corpus'}", f"index.name=synthetic-{n}", "retrieval.synonyms=null",
                             "eval.testsets=[]", "index.keep_versions=1", "retrieval.fusion.weights.vector2=0", *sets])
    version = IndexVersion.current(cfg)
    assert version.manifest["counts"]["chunks"] == n and version.manifest["vectors"]["hnsw"] is not None
    texts, qvecs = bench.synthetic_queries(n, 3)
    r = Retriever(cfg)
    assert r.sources.vector_search.kind == "hnsw"
    for text, qvec in zip(texts, qvecs):
        assert len(bench.one(r, text, qvec).hits) == cfg.retrieval.top_k
    assert bench.build(n, home, sets)["reused"] is True  # the same generator: reused, not rebuilt
