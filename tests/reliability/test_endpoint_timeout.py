"""Issue 36, item 5: ``embedding.endpoint.timeout_s`` bounds a whole request, retries included.

Before: httpx's timeout is per socket read, so an endpoint that sent its headers and then one byte every half
second never timed out: ``ingest`` ran on for as long as the server dripped (``timeout_s: 3, retries: 1``: past
60 s). Now each attempt ends at ``timeout_s`` whatever the server does, the whole call within
``(retries + 1) * timeout_s`` plus the back-off, with one line. Against tests/ops/endpoint_stub.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from ragrig.configs.errors import RagrigError
from ragrig.flows.cli import main

sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
from endpoint_stub import embed_stub  # noqa: E402, F401 - the stand-in endpoint


def test_a_dripping_answer_times_out_within_the_budget(embed_stub):
    import httpx  # noqa: F401 - imported before the clock starts (seconds on a loaded machine, once per process)
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.encoders.endpoint_backend import EndpointEncoder

    stub, url = embed_stub
    stub.drip_s = 0.1  # headers, then a byte every 0.1 s (for 6 s): each read well inside a 0.5 s per-read timeout
    enc = EndpointEncoder(EmbeddingConfig(model="stub-embed-1", backend="openai",
                                          endpoint={"base_url": url, "timeout_s": 0.5, "retries": 1, "backoff_s": 0}))
    t0 = time.monotonic()
    with pytest.raises(RagrigError) as err:
        enc.encode(["a"])
    took = time.monotonic() - t0
    assert str(err.value) == f"embedding endpoint {url}/embeddings (model 'stub-embed-1'): timed out after 0.5 s " \
                             "(2 attempts)"
    assert took < 2 * 0.5 + 2, took  # two attempts of 0.5 s, and slack for a loaded machine (before: 60 s)


def test_ingest_against_a_dripping_endpoint_ends_with_one_line(embed_stub, tmp_path, write_files, capsys):
    stub, url = embed_stub
    stub.drip_s = 0.1
    corpus = write_files(tmp_path / "corpus", {"a.md": "# A\n\n## Dash\n\nA dash moves three inches.\n"})
    t0 = time.monotonic()
    rc = main(["ingest", "--no-prefect", "-q", "--set", f"corpus.path={corpus}", "--set", "eval.testsets=[]",
               "--set", "embedding.backend=openai", "--set", "embedding.model=stub-embed-1",
               "--set", f"embedding.endpoint.base_url={url}", "--set", "embedding.endpoint.timeout_s=0.5",
               "--set", "embedding.endpoint.retries=1", "--set", "embedding.endpoint.backoff_s=0",
               "--set", "mlflow.enabled=false"])
    took = time.monotonic() - t0
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and "timed out after 0.5 s (2 attempts)" in err, err
    assert took < 2 * 0.5 + 10, took  # two 0.5 s attempts, plus the CLI's imports on a loaded machine (before: 60 s)
