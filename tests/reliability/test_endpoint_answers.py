"""Issue 36, items 2, 3, 4 and 10 (the endpoint part): what an embeddings endpoint answers is checked where it
arrives, whatever it is. Against the stand-in endpoint (tests/ops/endpoint_stub.py).

Before: ``{"data": [[...]]}``, ``"embedding": 1.0``, ragged widths and a non-UTF-8 body were a raw
AttributeError / IndexError / ValueError / UnicodeDecodeError; NaN, infinite or zero vectors were cached and
published (ingest exit 0, ``health`` INCONSISTENT, a plain re-ingest "(unchanged)"); a NaN query vector ranked
the first chunks in table order with score 1.0; ``[]`` answers published a (n, 0) ``vectors.npy`` that health
called healthy, 8-wide documents under a 16-wide probe published, and a query of the wrong width was a raw
numpy broadcasting error.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from ragrig.configs.errors import RagrigError
from ragrig.flows.cli import main

sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
from endpoint_stub import embed_stub  # noqa: E402, F401 - the stand-in endpoint

DOCS = {"rules.md": "# Rules\n\n## Dash\n\nA dash moves three more inches.\n\n## Cover\n\nCover gives a save.\n\n"
                    "## Charge\n\nA charge ends in contact.\n"}
PROBE = "ragrig model probe"
RAW = re.compile(r"\b(Attribute|Index|Value|Type|Key|UnicodeDecode)Error\b|broadcast")


def encoder(url: str, **endpoint):
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.encoders.endpoint_backend import EndpointEncoder

    return EndpointEncoder(EmbeddingConfig(model="stub-embed-1", backend="openai", batch_size=4,
                                           endpoint={"base_url": url, "backoff_s": 0.0, "retries": 0, **endpoint}))


def sets(corpus: Path, url: str) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]",
            "--set", "embedding.backend=openai", "--set", "embedding.model=stub-embed-1",
            "--set", f"embedding.endpoint.base_url={url}", "--set", "embedding.endpoint.backoff_s=0",
            "--set", "embedding.endpoint.retries=0", "--set", "mlflow.enabled=false"]


def one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text and not RAW.search(text), text
    return lines[0]


def cache_rows(home: Path) -> list[np.ndarray]:
    with sqlite3.connect(home / "cache" / "embeddings.sqlite") as db:
        return [np.frombuffer(blob, dtype=np.float32) for (blob,) in db.execute("SELECT vec FROM vectors")]


# ---- item 10: malformed answers, one line each -------------------------------------------------------------
RAGGED = {"data": [{"index": 0, "embedding": [0.1] * 8}, {"index": 1, "embedding": [0.1] * 4}]}


@pytest.mark.parametrize("answer, what", [
    ({"data": [[0.1, 0.2], [0.3, 0.4]]}, "data[0] is a list, not an object with an embedding"),
    ({"data": [{"embedding": 1.0}, {"embedding": 2.0}]}, "data[0].embedding is a float, not a list of numbers"),
    ({"data": [{"embedding": ["x"]}, {"embedding": ["y"]}]}, "data[0].embedding is a list holding other than numbers"),
    ({"data": [{"embedding": [[1.0]]}, {"embedding": [[2.0]]}]}, "data[0].embedding is a list holding other than"),
    ({"data": [{"embedding": [1.0, None]}, {"embedding": [2.0]}]}, "data[0].embedding is a list holding other than"),
    ({"data": [{"embedding": [[1.0], [2.0, 3.0]]}, {"embedding": [2.0]}]}, "data[0].embedding is a list holding"),
    (RAGGED, "vectors of different widths in one answer (4, 8 values)"),
    (b'{"data": [\xff\xfe]}', "the response is not UTF-8 text (byte 0xff at offset 10)"),
    ({"data": {"embedding": [1.0]}}, "the response has no data list"),
    ({"data": [{"embedding": [1.0]}]}, "1 vectors for 2 texts"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}, "repeats an index"),
])
def test_a_malformed_answer_is_one_line_naming_the_endpoint_and_the_model(embed_stub, answer, what):
    stub, url = embed_stub
    stub.answer = lambda texts: answer
    with pytest.raises(RagrigError) as err:
        encoder(url).encode(["a", "b"])
    msg = str(err.value)
    assert msg.startswith(f"embedding endpoint {url}/embeddings (model 'stub-embed-1'): "), msg
    assert what in msg and "\n" not in msg, msg


# ---- items 2 and 4 at the encoder: every vector checked where it arrives -----------------------------------
@pytest.mark.parametrize("value, what", [(math.nan, "NaN or infinite values"), (math.inf, "NaN or infinite values"),
                                         (0.0, "a zero vector")])
def test_non_finite_or_zero_vectors_are_refused_where_they_arrive(embed_stub, value, what):
    stub, url = embed_stub
    stub.answer = lambda texts: stub.payload(texts, lambda t: [value] * 8 if t == "bad" else stub.vector(t))
    enc = encoder(url)
    assert enc.encode(["good"]).shape == (1, 8)
    with pytest.raises(RagrigError, match=rf"\(model 'stub-embed-1'\): the vector for input 1 is unusable: {what}"):
        enc.encode(["good", "bad"])


def test_an_empty_probe_and_a_narrower_document_vector_are_refused(embed_stub):
    stub, url = embed_stub
    stub.answer = lambda texts: stub.payload(texts, lambda t: [])
    with pytest.raises(RagrigError, match="the vector for input 0 is unusable: an empty vector"):
        _ = encoder(url).dim
    stub.answer = lambda texts: stub.payload(texts, lambda t: [0.5] * (16 if t.startswith(PROBE) else 8))
    enc = encoder(url)
    assert enc.dim == 16
    with pytest.raises(RagrigError, match="unusable: 8 values, the model has 16"):
        enc.encode(["a document"])


def test_ingest_verifies_what_any_model_makes_before_caching_it(tmp_path):
    """The check in ingest's embed step, for every backend (a local model can answer NaN too)."""
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.cache.embeddings import EmbeddingCache
    from ragrig.retrieval.ingest.embed import embed_with_cache

    class Fake:
        id, dim, cfg = "fake-model [x]", 4, EmbeddingConfig()

        def count_tokens(self, texts):
            return [1] * len(texts)

        def encode_sorted(self, texts, prefix="", on_batch=None):
            out = np.tile(np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32), (len(texts), 1))
            out[[t == "poison" for t in texts]] = np.nan
            return out

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    vecs, n = embed_with_cache(Fake(), cache, ["a", "b"], ["sa", "sb"])  # type: ignore[arg-type]
    assert n == 2 and vecs.shape == (2, 4)
    with pytest.raises(RagrigError, match=r"embedding model fake-model \[x\]: a document vector is unusable "
                                          r"\(NaN or infinite values\); nothing of it was cached or published"):
        embed_with_cache(Fake(), cache, ["c", "poison"], ["sc", "sp"])  # type: ignore[arg-type]
    assert cache.count() == 2  # only the good first call's rows


@pytest.mark.slow
@pytest.mark.parametrize("value", [math.nan, math.inf, 0.0, None])
def test_ingest_never_caches_or_publishes_a_bad_document_vector(embed_stub, tmp_path, write_files, ragrig_home,
                                                                 capsys, value):
    """None: the endpoint answers ``[]`` for every text, the probe included (item 4)."""
    stub, url = embed_stub
    corpus = write_files(tmp_path / "corpus", DOCS)
    bad = (lambda t: []) if value is None else (lambda t: [value] * 8 if "Cover" in t else stub.vector(t))
    stub.answer = lambda texts: stub.payload(texts, bad)
    rc = main(["ingest", "--no-prefect", "-q", *sets(corpus, url)])
    line = one_line(capsys.readouterr().err)
    assert rc != 0 and f"embedding endpoint {url}/embeddings (model 'stub-embed-1')" in line, line
    assert not list((ragrig_home / "indexes").glob("*/CURRENT"))  # nothing published
    rows = cache_rows(ragrig_home) if (ragrig_home / "cache" / "embeddings.sqlite").exists() else []
    assert all(len(r) == 8 and np.isfinite(r).all() and np.linalg.norm(r) > 0 for r in rows), rows


@pytest.mark.slow
def test_document_vectors_narrower_than_the_probe_are_not_published(embed_stub, tmp_path, write_files, ragrig_home,
                                                                    capsys):
    stub, url = embed_stub
    corpus = write_files(tmp_path / "corpus", DOCS)
    stub.answer = lambda texts: stub.payload(texts, lambda t: [0.5] * (16 if t.startswith(PROBE) else 8))
    rc = main(["ingest", "--no-prefect", "-q", *sets(corpus, url)])
    line = one_line(capsys.readouterr().err)
    assert rc != 0 and "8 values, the model has 16" in line and "stub-embed-1" in line, line
    assert not list((ragrig_home / "indexes").glob("*/CURRENT"))


# ---- item 2: a version published with bad rows is rebuilt by the next plain ingest -------------------------
@pytest.fixture
def published(embed_stub, tmp_path, write_files, capsys):
    stub, url = embed_stub
    corpus = write_files(tmp_path / "corpus", DOCS)
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus, url)]) == 0
    capsys.readouterr()
    return stub, url, corpus


def rewrite_vectors(home: Path, change) -> Path:
    """What the old code published: ``vectors.npy`` changed by ``change`` and the manifest agreeing with it."""
    from ragrig.retrieval.index.format import file_sha256

    (current,) = (home / "indexes").glob("*/CURRENT")
    vdir = current.parent / "versions" / current.read_text().strip()
    manifest = json.loads((vdir / "manifest.json").read_text())
    vecs = change(np.load(vdir / "vectors.npy"), manifest)
    np.save(vdir / "vectors.npy", vecs)
    manifest["files"]["vectors.npy"] = file_sha256(vdir / "vectors.npy")
    (vdir / "manifest.json").write_text(json.dumps(manifest))
    return vdir


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["nan", "zero"])
def test_a_version_published_with_bad_rows_is_rebuilt_by_a_plain_ingest(published, ragrig_home, capsys, damage):
    stub, url, corpus = published

    def poison(vecs, manifest):
        vecs[1] = np.nan if damage == "nan" else 0.0
        return vecs

    old = rewrite_vectors(ragrig_home, poison)
    assert main(["health", *sets(corpus, url)]) == 1  # INCONSISTENT
    capsys.readouterr()
    assert main(["ingest", "--no-prefect", *sets(corpus, url)]) == 0
    out = capsys.readouterr()
    assert "(unchanged)" not in out.out and "rows that are not finite unit vectors" in out.out + out.err, out
    (current,) = (ragrig_home / "indexes").glob("*/CURRENT")
    assert current.read_text().strip() != old.name
    assert main(["health", *sets(corpus, url)]) == 0


@pytest.mark.slow
def test_health_refuses_a_version_of_width_zero(published, ragrig_home, capsys):
    """What ``[]`` answers published before: a (n, 0) vectors.npy and a manifest of width 0."""
    stub, url, corpus = published

    def empty(vecs, manifest):
        manifest["embedding"]["dim"] = 0
        return np.zeros((len(vecs), 0), dtype=np.float32)

    rewrite_vectors(ragrig_home, empty)
    capsys.readouterr()
    assert main(["health", "-v", *sets(corpus, url)]) == 1
    assert "embedding width is 0" in capsys.readouterr().out


# ---- items 3 and 4 at query time: a NaN or mis-sized query vector is an error, never a ranking -------------
@pytest.mark.slow
def test_a_nan_query_vector_is_an_error_not_a_ranking(published, capsys, make_config):
    stub, url, corpus = published
    stub.answer = lambda texts: stub.payload(texts, lambda t: [math.nan] * 8 if "poison" in t else stub.vector(t))
    rc = main(["query", "poison dash", "--local", "--json", *sets(corpus, url)])
    out = capsys.readouterr()
    line = one_line(out.err)
    assert rc != 0 and not out.out.strip(), out
    assert "stub-embed-1" in line and "NaN or infinite values" in line, line

    from fastapi.testclient import TestClient
    from ragrig.retrieval.serve.app import create_app

    cfg = make_config(corpus, "embedding.backend=openai", "embedding.model=stub-embed-1",
                      f"embedding.endpoint.base_url={url}", "embedding.endpoint.backoff_s=0",
                      "embedding.endpoint.retries=0", "mlflow.enabled=false")
    with TestClient(create_app(cfg, watch=False)) as client:
        bad = client.post("/retrieve", json={"query": "poison dash"})
        good = client.post("/retrieve", json={"query": "how far is a dash"})
    assert bad.status_code == 503 and "NaN or infinite values" in bad.json()["error"], bad.text
    assert good.status_code == 200 and good.json()["hits"], good.text


@pytest.mark.slow
def test_a_query_vector_of_another_width_names_the_mismatch(published, capsys, make_config, monkeypatch):
    stub, url, corpus = published
    stub.answer = lambda texts: stub.payload(texts, lambda t: [0.5] * 16 if "wide" in t else stub.vector(t))
    rc = main(["query", "a wide query", "--local", *sets(corpus, url)])
    line = one_line(capsys.readouterr().err)
    assert rc != 0 and "16 values, the model has 8" in line and "broadcast" not in line, line

    from ragrig.retrieval.search.retriever import Retriever

    cfg = make_config(corpus, "embedding.backend=openai", "embedding.model=stub-embed-1",
                      f"embedding.endpoint.base_url={url}", "mlflow.enabled=false")
    r = Retriever(cfg)  # any model (not only an endpoint) answering another width: the retriever's own check
    monkeypatch.setattr(r.embedder, "encode_queries", lambda texts: np.ones((len(texts), 16), dtype=np.float32))
    with pytest.raises(RagrigError, match=r"answers 16-wide query vectors, but index .* holds 8-wide ones: "
                                          r"re-ingest \(`ragrig ingest`\)"):
        r.search("how far is a dash", use_cache=False)
