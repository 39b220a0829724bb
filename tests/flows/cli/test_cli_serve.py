"""``ragrig serve`` as a user runs it (a subprocess on 127.0.0.1 in its own process group, stopped by SIGTERM), and
``ragrig query`` through it: the same hits as the local path, the context block, a config the server does not
serve refused in one line, and a clean stop."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent / "ragrig"
DOCS = {"w.md": "# Weapons\n\n## Lethal x+\n\nSuccesses on x+ are critical.\n\n"
                "## Balanced\n\nRe-roll one attack die.\n",
        "m.md": "# Moving\n\n## Dash\n\nA dash moves three inches.\n\n## Climb\n\nClimbing costs double.\n"}


def test_serve_and_query_through_it(tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", DOCS)
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGRIG_SERVER")}
    env["RAGRIG_HOME"] = str(tmp_path / "home")

    def ragrig(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN), *args, *sets], env={**env, **extra}, capture_output=True, text=True,
                              timeout=300)

    assert ragrig("ingest", "--no-prefect", "-q").returncode == 0
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([str(BIN), "serve", "--port", "0", *sets], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (m := re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())) and time.monotonic() < deadline:
            assert server.poll() is None, log.read_text()
            time.sleep(0.2)
        assert m, log.read_text()
        url = m.group(1)
        assert re.match(r"^serving corpus-\w+@v000001 \(\d+ chunks, sentence-transformers/all-MiniLM-L6-v2\) on "
                        r"http://127\.0\.0\.1:\d+; Ctrl-C stops$", log.read_text().strip())
        health = json.loads(urllib.request.urlopen(url + "/health", timeout=10).read())
        assert health["version"] == "v000001" and health["documents"] == 2

        for query in ("lethal 5+", "how far does a dash move"):
            remote = ragrig("query", query, "--json", "-k", "3", RAGRIG_SERVER_URL=url)
            local = ragrig("query", query, "--json", "-k", "3", "--local", RAGRIG_SERVER_URL=url)
            assert remote.returncode == 0 and local.returncode == 0, (remote.stderr, local.stderr)
            r, lo = json.loads(remote.stdout), json.loads(local.stdout)
            assert [(h["chunk_id"], h["text"], h["header_path"]) for h in r["hits"]] == \
                [(h["chunk_id"], h["text"], h["header_path"]) for h in lo["hits"]]
            assert set(r) == set(lo) and r["version"] == "v000001"
        ctx = ragrig("query", "lethal 5+", "--context", "--context-tokens", "200", RAGRIG_SERVER_URL=url)
        assert ctx.returncode == 0 and ctx.stdout.startswith("[1] w.md — Weapons > Lethal x+")
        table = ragrig("query", "lethal 5+", "-k", "2", RAGRIG_SERVER_URL=url)
        assert table.returncode == 0 and "Lethal x+" in table.stdout and "@v000001" in table.stdout

        other = ragrig("query", "lethal 5+", "--set", "retrieval.fusion.method=rrf", RAGRIG_SERVER_URL=url)
        assert other.returncode == 2 and other.stdout == ""
        assert re.fullmatch(r"error: the ragrig server at http://127\.0\.0\.1:\d+ \(\$RAGRIG_SERVER_URL or "
                            r"serve\.url\) refused the query: this server's retrieval settings \(\w+\) differ from "
                            r"the request's \(\w+\): start `ragrig serve` with the same config, or query with "
                            r"--local\n", other.stderr)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            code = server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            raise
    assert code in (0, -signal.SIGTERM), log.read_text()  # uvicorn stops gracefully, then re-raises the signal
    assert "Traceback" not in log.read_text()
