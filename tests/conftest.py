"""Shared fixtures: an isolated ragrig home per test, offline/quiet library settings, config and embedder helpers."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

# Process-wide settings that libraries read at import time (Prefect reads its settings when first
# imported, huggingface_hub its offline flag), so they are set before any test module imports them.
from ragrig.flows.environment import QUIET_ENV  # noqa: E402 - imports nothing heavy

_SESSION_ENV = {**QUIET_ENV, "HF_HUB_OFFLINE": "1"}
os.environ.update(_SESSION_ENV)
# Bytecode is cached for the test run even where the machine says PYTHONDONTWRITEBYTECODE (this one does): without
# it every xdist worker compiles and assertion-rewrites all 158 test files again (collection 9.8 s against 5.3-6 s
# cached), and every CLI subprocess and Dask worker a test starts compiles ragrig again. Before the test modules are
# imported, and in the environment the workers and subprocesses inherit. __pycache__/ is git-ignored.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# Keep Prefect's profile/DB out of the user's ~/.prefect (the CLI's setdefault then keeps this one). One per test
# process (each xdist worker imports this file), removed when the process's session ends (pytest_unconfigure;
# tests/test_hygiene.py checks that none is left behind).
_PREFECT_HOME = tempfile.mkdtemp(prefix="ragrig-test-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
# This machine's cache of ragrig (the lean forward's verdicts: encoders/forward_check.py) is the test process's own,
# never the user's ~/.cache: every test home, and every process a test starts, finds the verdict the first one
# recorded, as a user's homes do (sentence-transformers' import and the check, ~10 s of 2 cores, paid once).
_MACHINE_CACHE = tempfile.mkdtemp(prefix="ragrig-test-cache-")
# Models under the temp folder are the ones tests write or change: loaded, and encoded, each time.
_SCRATCH = os.path.realpath(tempfile.gettempdir())
os.environ["RAGRIG_CACHE_DIR"] = _MACHINE_CACHE
# Each of `make test`'s parallel workers gets its share of the cores for torch's OpenMP thread pool (and so do the
# processes a test starts, which inherit it; onnxruntime keeps its own pools, and the encoder's are one thread). With every worker's pool as wide as the machine,
# an OpenMP parallel region waits for a thread the other worker has descheduled: encoding one short text took
# 0.5 s instead of 0.025 s on 2 cores with another job running. A setting of the user's own is kept. xdist's
# controller imports this file before it starts the workers, which inherit its environment: the user's own value
# (or none) travels to them in _OMP_OF_USER, so the controller's whole-machine value is never taken for the
# user's (it was, until 2026-11-29: every worker ran machine-wide pools; the suite took ~1.3x its time, its
# encoder-heavy files 2x).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
_OMP_OF_USER = "RAGRIG_TEST_USER_OMP_NUM_THREADS"
os.environ.setdefault(_OMP_OF_USER, os.environ.get("OMP_NUM_THREADS", ""))
os.environ["OMP_NUM_THREADS"] = os.environ[_OMP_OF_USER] or str(max(1, (os.cpu_count() or 1) // _WORKERS))

_PER_TEST_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_VERBOSITY",
    "HF_HUB_DISABLE_PROGRESS_BARS",
    "ANONYMIZED_TELEMETRY",
    "MLFLOW_DISABLE_TELEMETRY",
    "RAGAS_DO_NOT_TRACK",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (measured seconds: ``file_order.py``), each file's tests together and in order:
    `make test`'s parallel workers (one file per worker at a time, no reordering by xdist) start on the long
    files and end on the quick ones, so no worker is left alone with a long file at the end."""
    from file_order import estimate, load

    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    seconds = load()
    cost = {p: estimate(p.relative_to(config.rootpath).as_posix() if p.is_relative_to(config.rootpath) else str(p),
                        slow[p], seconds) for p in {item.path for item in items}}
    items.sort(key=lambda item: -cost[item.path])


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)
    shutil.rmtree(_MACHINE_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def ragrig_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own RAGRIG_HOME (indexes, caches, MLflow) and the offline/quiet env."""
    home = tmp_path / "ragrig-home"
    monkeypatch.setenv("RAGRIG_HOME", str(home))
    for key in _PER_TEST_ENV:
        monkeypatch.setenv(key, _SESSION_ENV[key])
    return home


@pytest.fixture(scope="session", autouse=True)
def loaded_models_shared() -> Iterator[None]:
    """Each ``ragrig`` command run in-process builds its encoder, and loading the sentence-transformers model from
    disk is 0.5-4 s of 2 cores a time; here a test process loads each installed model once (and its lean forward,
    ``bert_forward.py``) and every later ``TorchEncoder`` gets that model (the code only reads it: it encodes and
    tokenizes). Models under the temp
    folder (tests that write or change one) load each time, as without this; so does the endpoint backend.
    Subprocesses load their own."""
    from ragrig.retrieval.encoders import bert_forward, onnx_backend, torch_backend

    real, real_open = torch_backend.TorchEncoder._load, bert_forward.BertForward.open.__func__
    loaded: dict[tuple[str, str], Any] = {}
    def load(self: Any) -> Any:  # the sentence-transformers model, once per (installed model, device)
        key = (str(self.target), self.device)
        if key not in loaded:
            model = real(self)
            if os.path.realpath(str(self.target)).startswith(_SCRATCH):
                return model
            loaded[key] = model
        return loaded[key]

    forwards: dict[str, Any] = {}

    def open_forward(cls: Any, folder: Any) -> Any:  # the lean forward's weights and tokenizers, the same way
        key = os.path.realpath(str(folder))
        if key.startswith(_SCRATCH):
            return real_open(cls, folder)
        if key not in forwards:
            forwards[key] = real_open(cls, folder)
        return forwards[key]

    torch_backend.TorchEncoder._load = load
    bert_forward.BertForward.open = classmethod(open_forward)

    # The ONNX backend the same way (the default second encoder, bge-small, opens a session for every ingest and
    # every retriever: ~0.35 s a time): one session and tokenizers per (folder, pooling, window) and process;
    # each encoder keeps its own config and thread pool.
    onnx_real = onnx_backend.OnnxEncoder.__init__
    opened: dict[tuple[str, str, int], dict[str, Any]] = {}

    def onnx_init(self: Any, folder: Any, cfg: Any, *, pooling: str = "", max_tokens: int = 0) -> None:
        key = (os.path.realpath(str(folder)), pooling, max_tokens)
        if key in opened:
            self.__dict__.update(opened[key])
            self.cfg, self._pool, self._pool_lock = cfg, None, threading.Lock()
            return
        onnx_real(self, folder, cfg, pooling=pooling, max_tokens=max_tokens)
        if not key[0].startswith(_SCRATCH):
            opened[key] = {k: v for k, v in vars(self).items() if k not in ("cfg", "_pool", "_pool_lock")}

    onnx_backend.OnnxEncoder.__init__ = onnx_init
    yield
    torch_backend.TorchEncoder._load = real
    bert_forward.BertForward.open = classmethod(real_open)
    onnx_backend.OnnxEncoder.__init__ = onnx_real


# Tests whose subject is the encoder's own output (a forward pass against its reference, or that two runs encode
# to the same bits) mark themselves ``real_encoding``: no memo (``encodings_shared``) for them.
_REAL_ENCODING = [False]


@pytest.fixture(autouse=True)
def real_encoding_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    _REAL_ENCODING[0] = request.node.get_closest_marker("real_encoding") is not None
    yield
    _REAL_ENCODING[0] = False


@pytest.fixture(scope="session", autouse=True)
def encodings_shared(loaded_models_shared: None) -> Iterator[None]:
    """The same batch of texts, encoded by the same installed model with the same settings, is encoded once per test
    process. Dozens of tests ingest the sample corpus in homes of their own (each with an empty embedding cache,
    as they must be): measured 2026-11-28, 1,090 of 1,488 ``Embedder.encode`` calls repeated a batch already
    encoded in the same process, ~115 s of the suite's ~820 s of test time. The key is the whole
    batch in order, so what a test gets is exactly what that call computed earlier in the process (the encoders
    are deterministic for a given batch: ``test_bert_forward.py``, ``test_retriever.py``'s determinism test, which
    is marked ``real_encoding``). Everything above ``Embedder.encode`` (the embedding cache, batching, progress,
    failures) runs as without it. Not memoised: models under the temp folder, the endpoint backend, calls with a
    progress bar, and any call made while a test has patched an encoder's forward (a spy or a fault it injects
    must see the call)."""
    from ragrig.retrieval import embedding
    from ragrig.retrieval.encoders.bert_forward import BertForward
    from ragrig.retrieval.encoders.onnx_backend import OnnxEncoder
    from ragrig.retrieval.encoders.torch_backend import TorchEncoder

    real = embedding.Embedder.encode
    patched = [(owner, name, getattr(owner, name)) for owner, names in (
        (TorchEncoder, ("encode", "_load")), (OnnxEncoder, ("encode", "__init__")),
        (BertForward, ("encode", "_hidden", "_pool", "_linear"))) for name in names if hasattr(owner, name)]
    memo: dict[bytes, Any] = {}
    room = 256 << 20  # bytes of vectors kept; past it, calls encode as without the memo

    def key_of(self: Any, texts: Any, prefix: str, progress: bool) -> bytes | None:
        """The memo's key for this call, or None where the call must run (see above)."""
        if not texts or progress or _REAL_ENCODING[0]:
            return None
        model = self.model
        if type(model) not in (TorchEncoder, OnnxEncoder) or any(getattr(o, n) is not f for o, n, f in patched):
            return None
        target = os.path.realpath(str(self.ref.target))
        if target.startswith(_SCRATCH):
            return None
        return hashlib.sha256(json.dumps([type(model).__name__, target, self.cfg.model_dump(mode="json"), prefix,
                                          list(texts)]).encode()).digest()

    def encode(self: Any, texts: Any, *, prefix: str = "", progress: bool = False) -> Any:
        nonlocal room
        key = key_of(self, texts, prefix, progress)
        if key is None:
            return real(self, texts, prefix=prefix, progress=progress)
        if key not in memo:
            out = real(self, texts, prefix=prefix, progress=progress)
            if out.nbytes > room:
                return out
            room -= out.nbytes
            memo[key] = out.copy()
        return memo[key].copy()

    embedding.Embedder.encode = encode
    yield
    embedding.Embedder.encode = real


@pytest.fixture(scope="session", autouse=True)
def conversions_shared() -> Iterator[None]:
    """The same file's bytes, converted by docling under the same name and settings, are converted once per test
    process (``Extractor._convert``: deterministic for given bytes). Tests ingest the sample, or part of it, in homes
    of their own, each with an empty extraction cache as they must be: measured 2026-11-30, 11 of the 33 docling
    conversions made in the test processes repeated one made before, 12.6 s of 2 cores (a Word file ~1 s).
    Everything around the conversion (reading, limits, the extraction cache, failures) runs as without it; a failed
    conversion is not kept, and a test that patches ``_convert`` replaces the memo with its own."""
    from ragrig.retrieval.ingest.extract import Extractor

    real = Extractor._convert
    memo: dict[tuple[str, bool, str, str], str] = {}

    def convert(self: Any, name: str, data: bytes) -> str:
        key = (self.markdown_extractor, self.native_pdf, name, hashlib.sha256(data).hexdigest())
        if key not in memo:
            memo[key] = real(self, name, data)
        return memo[key]

    Extractor._convert = convert
    yield
    Extractor._convert = real


@pytest.fixture(scope="session", autouse=True)
def mlflow_store_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A new MLflow SQLite store starts as a copy of one made once per test process. MLflow creates a store's
    tables by running its ~60 migrations, 3-13 s of 2 cores each time, and every test that evaluates gets a home,
    so a store, of its own; the copy is the same database (tables and schema revision, no rows: MLflow adds its
    default experiment when it opens it, ragrig its own). Only what this process opens through
    ``eval.tracking.store`` (which sees every new store first: ``wal_journal``); subprocesses make their own."""
    from ragrig.eval.tracking import store

    real = store.wal_journal
    template: list[Path] = []

    def wal_journal(uri: str) -> None:
        db = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
        if db is not None and db.name and not db.exists():
            if not template:
                import sqlalchemy
                from mlflow.store.db.utils import _initialize_tables

                path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
                engine = sqlalchemy.create_engine(f"sqlite:///{path}")
                try:
                    _initialize_tables(engine)
                finally:
                    engine.dispose()
                template.append(path)
            db.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template[0], db)
        real(uri)

    store.wal_journal = wal_journal
    yield
    store.wal_journal = real


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[None]:
    """One temporary Prefect server and database per test process (starting one takes ~9 s of 2 cores; the tests
    that run flows used to start one each). Tests that need an empty server look only at what they created
    (artifacts by key read the latest; ids, tags and names are their own)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def sample_part(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(corpus, test set): part of the sample and the sample's cases it answers (tests/sample_part.py). Read only."""
    from sample_part import make_sample_part

    return make_sample_part(tmp_path_factory.mktemp("sample-part"))


def _yaml_value(value: Any) -> str:
    """A --set value: strings verbatim, everything else as JSON (which is valid YAML)."""
    return value if isinstance(value, str) else json.dumps(value)


@pytest.fixture
def make_config(tmp_path: Path):
    """Factory: ``make_config(corpus_dir=None, *sets, **overrides)`` -> a validated RagrigConfig.

    ``corpus.path`` points at ``corpus_dir`` (default ``tmp_path/"corpus"``), synonyms and test sets
    are switched off. ``overrides`` use ``__`` for dots (``chunking__max_header_level=2``); ``sets``
    are raw ``key.path=value`` strings.
    """
    from ragrig.configs.load import load_config

    def _make(corpus_dir: str | Path | None = None, *sets: str, **overrides: Any):
        corpus = Path(corpus_dir) if corpus_dir is not None else tmp_path / "corpus"
        items = [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"]
        items += [f"{k.replace('__', '.')}={_yaml_value(v)}" for k, v in overrides.items()]
        items += list(sets)
        return load_config(overrides=items)

    return _make


@pytest.fixture(scope="session")
def embedder():
    """The real packaged MiniLM model, loaded once per session (for tests that need real tokens)."""
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.embedding import Embedder

    e = Embedder(EmbeddingConfig())
    _ = e.window  # load now, so the first test using it is not billed for it
    return e


def _write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def write_files():
    """``write_files(root, {relative path: text or bytes})`` writes the files below root and returns root."""
    return _write_files


# Options every published template is built with (and that the tests' own --set lists repeat).
PUBLISHED_SETS = ("retrieval.synonyms=null", "eval.testsets=[]")


@pytest.fixture(scope="session")
def published_templates(tmp_path_factory: pytest.TempPathFactory):
    """``build(docs, build_sets) -> (corpus, home)``: ``docs`` written to a corpus folder and published by a real
    ``ragrig ingest`` into a home of their own, once per test process for each distinct (docs, build_sets). Tests
    never use these directly: ``published`` copies the home into the test's own."""
    from ragrig.configs.load import load_config
    from ragrig.flows.cli import main
    from ragrig.retrieval.index import chroma
    from ragrig.retrieval.index.layout import Layout

    built: dict[tuple, tuple[Path, Path]] = {}

    def build(docs: dict[str, str], build_sets: tuple[str, ...]) -> tuple[Path, Path]:
        key = (tuple(sorted(docs.items())), build_sets)
        if key not in built:
            root = tmp_path_factory.mktemp("published")
            corpus, home = _write_files(root / "corpus", docs), root / "home"
            items = [f"corpus.path={corpus}", *PUBLISHED_SETS, *build_sets]
            previous = os.environ.get("RAGRIG_HOME")
            os.environ["RAGRIG_HOME"] = str(home)  # as a test's ingest runs: the home from the environment
            try:
                assert main(["ingest", "--no-prefect", "-q", *(x for i in items for x in ("--set", i))]) == 0
                cfg = load_config(overrides=items)
                chroma.forget_client(cfg.index.chroma, Layout(cfg).chroma_dir)  # its store closed before copies
            finally:
                os.environ["RAGRIG_HOME"] = previous or ""
                if previous is None:
                    del os.environ["RAGRIG_HOME"]
            built[key] = (corpus, home)
        return built[key]

    return build


@pytest.fixture
def published(published_templates, ragrig_home: Path):
    """``published(docs, *build_sets) -> corpus``: ``docs`` ingested and published (with ``PUBLISHED_SETS`` and
    ``build_sets``) in this test's home, as ``ragrig ingest`` left it: the embedding and extract caches, the
    version, its Chroma store. The ingest runs once per test process; each test gets a copy of its home
    (~10 ms against ~2 s for an ingest), so a test may damage or re-ingest its index freely. The corpus folder is
    the one the index was built from (its path is part of the index key) and is shared: a test that changes
    the corpus builds its own index instead."""
    def copy(docs: dict[str, str], *build_sets: str) -> Path:
        corpus, home = published_templates(docs, tuple(build_sets))
        shutil.copytree(home, ragrig_home, symlinks=True, dirs_exist_ok=True)
        return corpus

    return copy


def _write_docx(path: Path, sections: list[tuple[int, str, str]]) -> Path:
    import docx

    d = docx.Document()
    for level, title, text in sections:
        d.add_heading(title, level=level)
        d.add_paragraph(text)
    d.save(str(path))
    return path


@pytest.fixture(scope="session")
def write_docx():
    """``write_docx(path, [(heading level, heading, paragraph), ...])`` writes a Word file of those sections."""
    return _write_docx


@pytest.fixture
def make_report():
    """Factory: ``make_report(testset="tiny", ndcg=1.0, **fields)`` -> an EvalReport with one query row, built by
    hand (no index needed), for code that renders, logs, compares or gates reports."""
    from ragrig.eval.report import EvalReport

    def _make(testset: str = "tiny", ndcg: float = 1.0, **fields: Any) -> EvalReport:
        metrics = {"ndcg@10": ndcg, "recall@10": 1.0, "mrr@10": 1.0, "precision@5": 0.2, "hit_rate@5": 1.0,
                   "recall@100": 1.0, "hit_rate@10": 1.0 if ndcg > 0 else 0.0, "mrr@100": 1.0}
        row = {"id": "q1", "query": "what does lethal do", "tags": ["rules"], "expected": ["a.md#lethal"],
               "missed@10": [], "metrics": metrics, "latency_ms": 1.5, "normalized": "what does lethal do",
               "expansions": [], "top": [{"rank": 1, "chunk_id": "a.md#0", "header": "Lethal", "score": 1.0,
                                          "relevant": True, "hop": 0}]}
        values: dict[str, Any] = {
            "testset": testset, "testset_path": None, "testset_sha256": "abc", "index_key": "k",
            "index_version": "v000001", "model_id": "m", "k_values": [5, 10, 100], "overall": dict(metrics),
            "per_tag": {"rules": {**metrics, "n": 1.0}}, "per_query": [row], "latency_ms": {"p50": 1.5, "p95": 1.5},
            **fields,
        }
        return EvalReport(**values)

    return _make


# Settings added to the config model after tests/fixtures/index-v1 was written, with their defaults: a config
# resolved today shows them; everything else must read back exactly as the fixture wrote it.
ADDED_SINCE_INDEX_V1 = {
    ("embedding", "backend"): "auto", ("chunking", "title_path"): False,
    ("index", "vector_search"): {"mode": "auto", "exact_max_chunks": 20_000,
                                 "hnsw": {"connectivity": 16, "expansion_add": 128, "expansion_search": 128,
                                          "shards": "auto", "shard_max_chunks": 250_000}},
    ("retrieval", "rerank"): {"enabled": False, "model": "ms-marco-MiniLM-L-12-v2", "top_n": 20, "weight": 0.3,
                              "normalization": "zscore", "batch_size": 16, "max_tokens": 512},
    ("retrieval", "views"): {"second_model": "bge-small-en-v1.5", "second_backend": "auto"},
    ("embedding", "endpoint"): {"base_url": "http://127.0.0.1:8080/v1", "api_key_env": "OPENAI_API_KEY",
                                "timeout_s": 30.0, "retries": 3, "backoff_s": 1.0, "window": 510},
    ("index", "bm25", "shards"): "auto", ("index", "bm25", "shard_max_chunks"): 1_000_000,
    ("embedding", "adapt"): {"pairs": ["header_body", "cloze", "keyword_section", "parent_child"], "max_pairs": None, "hard_negatives": 0, "epochs": 1.0,
                             "lr": 3e-5, "warmup_ratio": 0.1, "batch_size": 32, "max_tokens": 128, "seed": 0,
                             "loss": "mnrl", "symmetric": True, "mini_batch_size": 32, "scale": 20.0},
}


@pytest.fixture
def legacy_writes_collection(monkeypatch):
    """Builds write a Chroma collection whatever the config, as every build did when the index-v1 fixture was
    written (now only where one is read: ``chroma.writes_collection``), so the fixture's collection and manifest
    can be compared with what the writer makes."""
    from ragrig.retrieval.index import chroma, format

    monkeypatch.setattr(chroma, "writes_collection", lambda cfg: True)
    monkeypatch.setattr(format, "writes_collection", lambda cfg: True)


@pytest.fixture
def drop_added_settings():
    """Remove (and check the defaults of) the settings added since the index-v1 fixture, and the whole ``serve``
    section (added later, never part of an index); the flow section renamed since goes back to its old names."""
    def drop(resolved: dict) -> dict:
        for path, default in ADDED_SINCE_INDEX_V1.items():
            *parents, leaf = path
            node = resolved
            for p in parents:
                node = node[p]
            assert node.pop(leaf) == default, path
        resolved.pop("serve")
        flow = resolved["flow"]  # renamed since (configs/models.py RENAMED): back under the fixture's names
        assert flow.pop("connect_timeout_s") == 10.0
        resolved["flow"] = {"task_runner": {"local": "threads", "dask": "dask"}[flow.pop("runner")],
                            "max_workers": flow.pop("workers"), "dask_address": flow.pop("address"), **flow}
        return resolved
    return drop


@pytest.fixture(scope="session")
def load_benchmark():
    """Import a script under benchmarks/ by file name (``load_benchmark("report")``): the tests of a benchmark's
    logic. Registered in sys.modules while loaded (dataclasses resolve string annotations through it)."""
    import importlib.util
    import sys

    loaded: list[str] = []

    def load(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        loaded.append(spec.name)
        return mod

    yield load
    for name in loaded:
        sys.modules.pop(name, None)


class LLMStub:
    """A loopback OpenAI-compatible endpoint's script: each entry is (status, body, or None to hang past the
    client timeout); it records each request's JSON and headers."""

    def reply(self, content: str) -> None:
        """Script one successful chat completion whose message is ``content``."""
        self.script.append((200, {"choices": [{"message": {"role": "assistant", "content": content}}]}))

    def __init__(self) -> None:
        self.script: list[tuple[int, object]] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []


@pytest.fixture
def llm_stub() -> Iterator[tuple[LLMStub, str]]:
    """(script and records, base URL) of a stub chat-completions server on 127.0.0.1, stopped after the test."""
    state = LLMStub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def do_POST(self):  # noqa: N802
            n = int(self.headers.get("Content-Length", 0))
            state.requests.append(json.loads(self.rfile.read(n)))
            state.headers.append(dict(self.headers))
            status, body = state.script.pop(0) if state.script else (500, {"error": "no script"})
            if body is None:
                time.sleep(1.0)
                return
            payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the loop's next poll (serve_forever's default: 0.5 s)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
