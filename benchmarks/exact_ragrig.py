"""Run a tree's `ragrig` CLI with Chroma's approximate (and run-to-run varying) HNSW query replaced by an exact
cosine search over the collection's stored vectors, ties by id: deterministic candidates, so per-query metrics
of two code versions can be compared exactly. Usage: python exact_ragrig.py TREE/.venv/bin/ragrig ARGS..."""
import runpy, sys
import numpy as np
from chromadb.api.models.Collection import Collection

_cache = {}

def query(self, query_embeddings=None, n_results=10, include=None, ids=None, **kw):
    key = self.name
    if key not in _cache:
        got = self.get(include=["embeddings"])
        _cache[key] = (list(got["ids"]), np.asarray(got["embeddings"], dtype=np.float64))
    all_ids, mat = _cache[key]
    idx = np.arange(len(all_ids))
    if ids is not None:
        allowed = set(ids)
        idx = np.array([i for i, x in enumerate(all_ids) if x in allowed], dtype=np.int64)
    sub = mat[idx]
    norms = np.linalg.norm(sub, axis=1) + 1e-12
    out_ids, out_d = [], []
    for q in np.asarray(query_embeddings, dtype=np.float64):
        d = 1.0 - (sub @ q) / (norms * (np.linalg.norm(q) + 1e-12))
        d = d.astype(np.float32)
        order = sorted(range(len(idx)), key=lambda j: (float(d[j]), all_ids[idx[j]]))[:n_results]
        out_ids.append([all_ids[idx[j]] for j in order])
        out_d.append([float(d[j]) for j in order])
    return {"ids": out_ids, "distances": out_d}

Collection.query = query
script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
