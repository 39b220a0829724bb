"""A distributed ingest's pieces without a cluster: a partition run in this process (its shard files, a retry
that embeds only what a killed attempt had not), the shared-home probe, the driver's checked merge in partition
order, and the SQLite embedding cache with two writing processes at once."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence

import numpy as np
import pytest
from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.documents import Chunk, Document, FailedDoc, SourceDoc
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest import partition
from ragrig.retrieval.ingest.partitions import PartitionMerge, partition_jobs
from ragrig.retrieval.ingest.plan import Plan
from ragrig.retrieval.ingest.shards import (
    SHARDS,
    ShardCache,
    check_files,
    file_sums,
    make_part_dir,
    part_dir,
    write_embedded,
    write_partition_tables,
)
from ragrig.retrieval.ingest.stats import IngestStats
from ragrig.retrieval.ingest.tables import TableSpill, write_tables


class WordEmbedder(Embedder):
    """No model: a text's vector is [words, characters, 1]; a window of 50 words; every encoded text is kept."""

    def __init__(self) -> None:
        super().__init__(EmbeddingConfig(batch_size=1, normalize=False))
        self.id = "words-v1"
        self.encoded: list[str] = []

    @property
    def dim(self) -> int:
        return 3

    @property
    def window(self) -> int:
        return 50

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def encode(self, texts: Sequence[str], *, prefix: str = "", progress: bool = False) -> np.ndarray:
        self.encoded += list(texts)
        return np.array([[len(t.split()), len(t), 1.0] for t in texts], dtype=np.float32)


DOCS = {"a.md": "# A\n\n## One\n\nFirst section.\n\n## Two\n\nSecond section here.\n",
        "b.md": "# B\n\n## Three\n\nThird one.\n"}


def sources(corpus, names=("a.md", "b.md")) -> list[SourceDoc]:
    from ragrig.retrieval.documents import sha256_bytes

    return [SourceDoc(n, sha256_bytes((corpus / n).read_bytes()), "md", (corpus / n).stat().st_size, corpus / n)
            for n in names]


@pytest.fixture
def words(monkeypatch):
    emb = WordEmbedder()
    monkeypatch.setattr(partition, "worker_embedder", lambda cfg: emb)
    return emb


class Boom(Exception):
    pass


def test_a_partition_writes_its_shards_and_a_retry_embeds_only_what_the_killed_attempt_had_not(
        tmp_path, make_config, write_files, words):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus, "corpus.markdown_extractor=plain", "embedding.batch_size=1")
    staged = tmp_path / "staged"
    (job,) = partition_jobs(sources(corpus), staged, size=10, model_id="words-v1", collection=None)

    def killed(point: str) -> None:  # the worker dies once the first batch of vectors is on disk
        if point.startswith("embedded:"):
            raise Boom

    with pytest.raises(Boom):
        partition.run_partition(cfg, job, killed)
    first = list(words.encoded)
    assert len(first) == 1
    points: list[str] = []
    summary = partition.run_partition(cfg, job, points.append)  # the retry
    assert summary.chunks == 3 and summary.docs == 2 and summary.embedded == 2 and summary.cached == 1
    assert sorted(words.encoded) == sorted(set(words.encoded))  # no text embedded twice over both attempts
    assert len(words.encoded) == 3 and points == ["partition:chunked", "embedded:1", "embedded:1"]
    out = part_dir(staged / SHARDS, 0)
    assert summary.files == file_sums(staged / SHARDS, out)
    assert sum(1 for p in out.glob("embedded-*.npz")) == 3  # one file per batch, the killed attempt's kept
    layout = Layout(cfg)  # a worker writes neither SQLite cache: the driver does, from the shards
    assert not layout.embedding_cache.exists() or EmbeddingCache(layout.embedding_cache).count() == 0
    assert sqlite3.connect(layout.extract_cache).execute("SELECT COUNT(*) FROM docs").fetchone() == (0,)


def test_a_worker_that_does_not_share_the_home_says_so_in_one_line(tmp_path, make_config, write_files, words):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus, "corpus.markdown_extractor=plain")
    (job,) = partition_jobs(sources(corpus), tmp_path / "staged", size=10, model_id="words-v1", collection=None)
    elsewhere = job.__class__(**{**job.__dict__, "shards": str(tmp_path / "other-host" / SHARDS)})
    with pytest.raises(InputError, match=r"cannot read .*probe \(No such file or directory\).*shares") as err:
        partition.run_partition(cfg, elsewhere)
    assert "\n" not in str(err.value)
    other_token = job.__class__(**{**job.__dict__, "token": "0" * 32})
    with pytest.raises(InputError, match="another ingest's token"):
        partition.run_partition(cfg, other_token)
    other_model = job.__class__(**{**job.__dict__, "model_id": "minilm[abc]"})
    with pytest.raises(RagrigError, match="has embedding model words-v1, the ingest minilm"):
        partition.run_partition(cfg, other_model)


def test_jobs_keep_the_plan_order_in_partitions_of_the_batch_size(tmp_path):
    srcs = [SourceDoc(f"d{i}", "s", "beir", 1, text="x") for i in range(5)]
    jobs = partition_jobs(srcs, tmp_path, size=2, model_id="m", collection="c")
    assert [[s.doc_id for s in j.sources] for j in jobs] == [["d0", "d1"], ["d2", "d3"], ["d4"]]
    assert [j.index for j in jobs] == [0, 1, 2]
    assert {j.token for j in jobs} == {(tmp_path / SHARDS / "probe").read_text()}


def _chunk(doc: str, n: int, sha: str) -> Chunk:
    return Chunk(f"{doc}#{n}", doc, [doc], 1, 0, 1, "t", "t", sha, 1)


def _part(shards, index: int, docs: list[str], shas: list[str], failed=()) -> partition.PartitionSummary:
    shards.mkdir(parents=True, exist_ok=True)  # the driver's (its probe)
    out = make_part_dir(shards, index)
    chunks = [_chunk(d, 0, s) for d, s in zip(docs, shas)]
    write_partition_tables(out, [Document(d, "h", "md", "# x") for d in docs], chunks)
    write_embedded(out / "embedded-x.npz", "m", [(s, np.full(3, index + 1.0, np.float32)) for s in shas])
    write_embedded(out / "embedded-y.npz", "other-model", [("zz", np.ones(3, np.float32))])
    return partition.PartitionSummary(index, "host-a", len(docs), len(chunks), len(shas), 0, 0, list(failed),
                                      [f"w{index}"], file_sums(shards, out))


def test_the_driver_merges_in_partition_order_and_is_the_one_cache_writer(tmp_path):
    staged = tmp_path / "staged"
    shards = staged / SHARDS
    later = _part(shards, 1, ["c"], ["s3"], failed=[FailedDoc("e", "extract", "bad"), FailedDoc("c", "chunk", "x")])
    first = _part(shards, 0, ["a", "b"], ["s1", "s2"], failed=[FailedDoc("d", "chunk", "y")])
    stats = IngestStats()
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    merge = PartitionMerge(staged, stats, cache, "m", TableSpill(staged), collected=set())
    merge.add(later)  # it waits for its turn
    assert merge.spill.doc_ids == [] and merge.collected == set()
    merge.add(first)
    embedded = merge.finish()
    assert merge.spill.doc_ids == ["a", "b", "c"] and merge.collected == {"a#0", "b#0", "c#0"}
    plan = Plan([], [], [], {}, [], None)
    tables = write_tables(staged, plan, merge.spill, stats.failed_ids(after_discover=True))
    assert [d.doc_id for d in tables.docs] == ["a", "b"]  # c failed chunking
    assert [c.chunk_id for c in tables.chunks] == ["a#0", "b#0"]
    assert [(f["doc_id"], f["stage"]) for f in stats.failures] == [("e", "extract"), ("d", "chunk"), ("c", "chunk")]
    assert stats.warnings == ["w0", "w1"]
    got = cache.get_many("m", ["s1", "s2", "s3", "zz"])
    assert sorted(got) == ["s1", "s2", "s3"] and got["s3"].tolist() == [2.0, 2.0, 2.0]
    assert cache.count() == 3  # the other model's file is not taken
    assert embedded == {"s1", "s2", "s3"}  # what the workers embedded with this model, each text once
    assert not shards.exists()  # no part of the version


def test_a_partition_that_never_came_back_is_one_line(tmp_path):
    staged = tmp_path / "staged"
    later = _part(staged / SHARDS, 1, ["c"], ["s3"])
    merge = PartitionMerge(staged, IngestStats(), EmbeddingCache(tmp_path / "e.sqlite"), "m", TableSpill(staged))
    merge.add(later)
    with pytest.raises(RagrigError, match=r"partition 0 never came back \(later ones did: \[1\]\)"):
        merge.finish()


def test_a_shard_missing_or_changed_on_the_drivers_side_is_one_line(tmp_path):
    shards = tmp_path / SHARDS
    s = _part(shards, 0, ["a"], ["s1"])
    check_files(shards, s.files, "host-a")
    (shards / "part-00000" / "chunks.jsonl").write_text("{}\n")
    with pytest.raises(RagrigError, match="sha256 is not the one the Dask worker on host-a wrote"):
        check_files(shards, s.files, "host-a")
    (shards / "part-00000" / "chunks.jsonl").unlink()
    with pytest.raises(RagrigError, match="not found here: the ragrig home must be on a filesystem every worker"):
        check_files(shards, s.files, "host-a")


def test_a_retry_finds_the_killed_attempts_batches_before_the_shared_cache(tmp_path):
    main = EmbeddingCache(tmp_path / "e.sqlite")
    main.put_many("m", [("a", np.array([1, 0, 0], np.float32))])
    (tmp_path / "p").mkdir()
    ShardCache(tmp_path / "p", main).put_many("m", [("b", np.array([0, 1, 0], np.float32))])
    good, bad, unsummed = ShardCache(tmp_path / "p", main).get_checked("m", ["a", "b", "c"], dim=3)
    assert sorted(good) == ["a", "b"] and bad == {} and unsummed == []
    assert main.count() == 1  # a worker never writes the shared cache


WRITER = """
import sys, time, numpy as np
from pathlib import Path
from ragrig.retrieval.cache.embeddings import EmbeddingCache
path, tag, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
cache = EmbeddingCache(path)
while not go.exists():
    time.sleep(0.01)
for b in range(40):
    cache.put_many("m", [(f"{tag}{b}-{i}", np.full(4, b * 10 + i + 1, np.float32)) for i in range(10)])
"""


def test_two_processes_writing_the_sqlite_cache_at_once_lose_nothing(tmp_path):
    path, go = tmp_path / "e.sqlite", tmp_path / "go"
    EmbeddingCache(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, str(go)]) for tag in ("x", "y")]
    time.sleep(0.5)
    go.touch()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    cache = EmbeddingCache(path)
    shas = [f"{t}{b}-{i}" for t in "xy" for b in range(40) for i in range(10)]
    good, bad, _ = cache.get_checked("m", shas, dim=4)
    assert bad == {} and len(good) == 800 == cache.count()
    assert good["y39-9"].tolist() == [400.0] * 4


def test_a_worker_never_writes_a_staging_folder_the_driver_removed(tmp_path):
    """A worker left running after the driver gave up (and removed the staging folder) cannot make it again:
    neither its partition folder nor a shard file creates missing folders."""
    shards = tmp_path / ".tmp-v000002" / SHARDS
    shards.mkdir(parents=True)
    out = make_part_dir(shards, 3)
    assert out == part_dir(shards, 3) and make_part_dir(shards, 3) == out  # a retry finds its own folder
    shutil.rmtree(tmp_path / ".tmp-v000002")
    with pytest.raises(FileNotFoundError):
        make_part_dir(shards, 4)
    with pytest.raises(FileNotFoundError):
        write_partition_tables(out, [], [])
    with pytest.raises(FileNotFoundError):
        ShardCache(out, EmbeddingCache(tmp_path / "cache" / "e.sqlite")).put_many("m", [("a", np.ones(3, np.float32))])
    assert [p.name for p in tmp_path.iterdir()] == ["cache"]
