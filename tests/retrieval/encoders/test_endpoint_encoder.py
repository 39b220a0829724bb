"""The OpenAI-compatible embeddings endpoint encoder against a loopback stub (mirroring conftest's llm_stub):
batches, retries with back-off, the key only in the Authorization header, and an index built by a model the
endpoint no longer serves refused (the stand-in: tests/ops/endpoint_stub.py). Plus ``embedding.device: auto``."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from ragrig.configs.errors import ModelMismatchError, RagrigError

sys.path.insert(0, str(Path(__file__).parents[2] / "ops"))
from endpoint_stub import embed_stub  # noqa: E402, F401 - the stand-in endpoint (tests/ops/endpoint_stub.py)

SECRET = "sk-test-never-logged-42"


def config(url: str, **endpoint):
    from ragrig.configs.models import EmbeddingConfig

    return EmbeddingConfig(model="stub-embed-1", backend="openai", batch_size=2,
                           endpoint={"base_url": url, "backoff_s": 0.0, "retries": 2, **endpoint})


def test_batches_and_the_key_only_in_the_header(embed_stub, monkeypatch, caplog):
    from ragrig.retrieval.encoders.endpoint_backend import EndpointEncoder

    stub, url = embed_stub
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    enc = EndpointEncoder(config(url))
    vecs = enc.encode(["a", "b", "c", "d", "e"])
    assert [r["input"] for r in stub.requests] == [["a", "b"], ["c", "d"], ["e"]]  # batch_size 2
    assert {r["model"] for r in stub.requests} == {"stub-embed-1"}
    assert all(h["Authorization"] == f"Bearer {SECRET}" for h in stub.headers)
    want = np.array(stub.vector("c"), dtype=np.float32)
    assert vecs[2] == pytest.approx(want / np.linalg.norm(want), abs=1e-6)
    assert enc.count_tokens(["abcdefghi"]) == [3] and enc.window == 510 and enc.dim == 8


def test_retries_with_backoff_then_gives_up_without_the_key(embed_stub, monkeypatch, caplog):
    from ragrig.retrieval import http_json
    from ragrig.retrieval.encoders.endpoint_backend import EndpointEncoder

    stub, url = embed_stub
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    waits: list[float] = []
    # only http_json's clock: patching time.sleep itself would also record other threads' sleeps (a library's
    # background thread left by an earlier test in the same process)
    monkeypatch.setattr(http_json, "time", SimpleNamespace(sleep=waits.append, monotonic=time.monotonic))
    enc = EndpointEncoder(config(url, backoff_s=0.5, retries=2))
    stub.fail = [503, 429]  # two failures, then success: 3 attempts, waits 0.5 and 1.0 (doubling)
    caplog.set_level(logging.DEBUG)
    assert enc.encode(["x"]).shape == (1, 8)
    assert len(stub.requests) == 3 and waits == [0.5, 1.0]
    stub.fail = [500, 500, 500]  # retries 2: three attempts, then one error naming the URL and the status
    with pytest.raises(RagrigError) as err:
        enc.encode(["y"])
    assert str(err.value) == f"embedding endpoint {url}/embeddings (model 'stub-embed-1'): HTTP 500 (3 attempts)"
    stub.fail = [401]  # a client error is not retried
    n = len(stub.requests)
    with pytest.raises(RagrigError, match="HTTP 401"):
        enc.encode(["z"])
    assert len(stub.requests) == n + 1
    assert SECRET not in caplog.text and SECRET not in str(err.value)


@pytest.mark.slow
def test_an_index_built_by_a_changed_model_is_refused(embed_stub, make_config, write_files, tmp_path):
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever

    stub, url = embed_stub
    corpus = write_files(tmp_path / "corpus", {"a.md": "# A\n\n## Dash\n\nMove three inches.\n\n## Cover\n\nA save.\n"})
    cfg = make_config(corpus, "embedding.backend=openai", "embedding.model=stub-embed-1",
                      f"embedding.endpoint.base_url={url}", "embedding.endpoint.backoff_s=0", "mlflow.enabled=false")
    assert IngestPipeline(cfg).run().published
    r = Retriever(cfg)
    assert r.version.model_id.startswith(f"stub-embed-1 @ {url} [openai-compatible; probe:")
    assert r.search("how far is a dash", use_cache=False).hits
    stub.weights = "v2"  # the server now answers with other weights under the same name
    with pytest.raises(ModelMismatchError, match=r"was built with embedding model 'stub-embed-1 @ .*probe:"):
        Retriever(cfg)


@pytest.mark.parametrize("setting, cuda, want", [("auto", True, "cuda"), ("auto", False, "cpu"),
                                                  ("cuda:1", False, "cuda:1"), ("cpu", True, "cpu")])
def test_device_auto_uses_a_gpu_when_torch_sees_one(monkeypatch, setting, cuda, want):
    import torch
    from ragrig.retrieval.encoders.device import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert resolve_device(setting) == want
