"""Issue 36, item 1: a key for the embeddings endpoint shows nowhere, given in ``embedding.endpoint.base_url``
(``http://user:KEY@host/v1``) or by environment variable (``embedding.endpoint.api_key_env``).

Before: a key in the URL was part of the model id, so it was in ``health -v``, ingest's and eval's
``--output-json`` (``model_id``), the version's ``manifest.json`` and ``config.yaml``, the embedding cache's
rows, serve's start-up line and ``GET /health`` (which needs no token). Now the URL's credentials are sent as
HTTP basic auth (as curl sends them, and as ragrig did through httpx) and are no part of the endpoint's name:
the model id, the index key, the files, logs and answers hold the URL without them, and an id without
credentials is the same as before. The grep below reads every file under the home, every JSON output, every
log line (DEBUG, the libraries' included) and every served answer. Against tests/ops/endpoint_stub.py.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest
from ragrig.flows.cli import main

sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
from endpoint_stub import embed_stub  # noqa: E402, F401 - the stand-in endpoint
from servers import free_port, server  # noqa: E402

URL_KEY = "sk-url-SECRET-7a6b5c"  # written into base_url
ENV_KEY = "sk-env-SECRET-1d2e3f"  # in the environment variable api_key_env names
DOCS = {"rules.md": "# Rules\n\n## Dash\n\nA dash moves three more inches.\n\n## Cover\n\nCover gives a save.\n"}
TESTSET = "name: t\ncases:\n  - id: cover\n    query: what does cover do?\n    expect: [{doc: rules.md, section: Cover}]\n"
BIN = Path(sys.executable).parent


def with_key(url: str) -> str:
    return url.replace("http://", f"http://embed:{URL_KEY}@")


def sets(corpus: Path, url: str) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]",
            "--set", "embedding.backend=openai", "--set", "embedding.model=stub-embed-1",
            "--set", f"embedding.endpoint.base_url={url}", "--set", "embedding.endpoint.api_key_env=RAGRIG_EMBED_KEY",
            "--set", "embedding.endpoint.backoff_s=0"]


def leaks(text: str | bytes) -> list[str]:
    """The forms of either key found in ``text``: raw, percent-encoded, or inside a basic-auth header."""
    blob = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    forms = [URL_KEY, ENV_KEY, quote(URL_KEY), base64.b64encode(f"embed:{URL_KEY}".encode()).decode()]
    return [f for f in forms if f.encode() in blob]


def test_an_id_without_credentials_is_unchanged_and_credentials_change_no_id(make_config):
    from ragrig.retrieval.embedding import model_id

    url = "http://127.0.0.1:8080/v1/"
    plain = make_config(None, "embedding.backend=openai", "embedding.model=m", f"embedding.endpoint.base_url={url}")
    keyed = make_config(None, "embedding.backend=openai", "embedding.model=m",
                        f"embedding.endpoint.base_url={with_key(url)}")
    assert plain.ingest_fingerprint()["embedding"]["endpoint"] == url  # as every index key was made so far
    assert model_id(plain.embedding) == "m @ http://127.0.0.1:8080/v1 [openai-compatible]"  # the probe joins later
    assert model_id(keyed.embedding) == model_id(plain.embedding)
    assert keyed.index_key() == plain.index_key()
    assert not leaks(json.dumps(keyed.ingest_fingerprint()))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["url", "env"])
def test_a_key_in_the_url_or_the_environment_shows_nowhere(embed_stub, tmp_path, write_files, ragrig_home,
                                                            monkeypatch, capsys, caplog, where):
    stub, bare = embed_stub
    url = with_key(bare) if where == "url" else bare
    monkeypatch.setenv("RAGRIG_EMBED_KEY", ENV_KEY)  # set in both cases: the URL's credentials take precedence
    caplog.set_level(logging.DEBUG)  # every library's log records, httpx's request lines included
    corpus = write_files(tmp_path / "corpus", DOCS)
    testset = write_files(tmp_path, {"t.yaml": TESTSET}) / "t.yaml"
    out = tmp_path / "out"
    texts: list[str | bytes] = []

    def cli(*args: str) -> int:
        rc = main(["--log-json", "--log-level", "DEBUG", *args, *sets(corpus, url)])
        got = capsys.readouterr()
        texts.extend([got.out, got.err])
        return rc

    assert cli("ingest", "--no-prefect", "-q", "--output-json", str(out / "ingest.json")) == 0
    assert cli("eval", "--no-prefect", "--testset", str(testset), "--output-json", str(out / "eval.json")) == 0
    assert cli("health", "-v", "--output-json", str(out / "health.json")) == 0
    assert cli("query", "what does cover do?", "--local", "--json") == 0
    model = json.loads((out / "health.json").read_text())["versions"][0]["model_id"]
    assert f'"{model}"' in (out / "eval.json").read_text()  # eval's report names the model too
    assert model.startswith(f"stub-embed-1 @ {bare} [openai-compatible; probe:"), model

    port = free_port()  # serve: its start-up line, GET /health (no token), POST /retrieve
    log = tmp_path / "serve.log"
    cmd = [str(BIN / "ragrig"), "serve", "--port", str(port), *sets(corpus, url)]
    with server(cmd, f"http://127.0.0.1:{port}/health", timeout_s=120, log=log,
                env={**os.environ, "RAGRIG_HOME": str(ragrig_home), "RAGRIG_EMBED_KEY": ENV_KEY}):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
            health = r.read()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/retrieve", json.dumps({"query": "cover"}).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = r.read()
    assert json.loads(health)["model"] == model and json.loads(answer)["hits"]
    served = log.read_bytes()
    assert f"{model}) on".encode() in served, served  # the start-up line names the model, without the key

    auth = {h.get("Authorization") for h in stub.headers}  # what the endpoint was sent: the key, as chosen
    want = "Basic " + base64.b64encode(f"embed:{URL_KEY}".encode()).decode() if where == "url" else f"Bearer {ENV_KEY}"
    assert auth == {want}, auth

    files = [p for p in ragrig_home.rglob("*") if p.is_file()] + sorted(out.iterdir())
    assert len(files) > 10 and any(p.name == "embeddings.sqlite" for p in files)
    found = {str(p): leaks(p.read_bytes()) for p in files}
    found |= {f"output {i}": leaks(t) for i, t in enumerate(texts)}
    found |= {"log records": leaks(caplog.text), "GET /health": leaks(health), "POST /retrieve": leaks(answer),
              "serve's log": leaks(served)}
    print(f"{where}: {len(found)} files and texts grepped for both keys, {sum(map(bool, found.values()))} hits")
    assert {k: v for k, v in found.items() if v} == {}
