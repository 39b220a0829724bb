"""Issue 19, item 4: a reader finishes on the version it opened. It pins that version with a lease that prune
respects (the version is kept until the reader lets go, then a later ingest prunes it); a reader that loses
its index anyway (a reset under it) fails with one clear line, and an evaluation logs what it has."""

from __future__ import annotations

import gc

import pytest
from ragrig.configs.errors import RagrigError
from ragrig.retrieval.executor import Executor
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.retriever import Retriever

pytestmark = pytest.mark.slow


def ingest(cfg, embedder):
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    return pipe.run()


def generation(corpus, n: int) -> None:
    for p in corpus.glob("*.md"):
        p.unlink()
    (corpus / f"g{n}.md").write_text(f"# Gen {n}\n\n## Moving\n\nGeneration {n} says move {n} inches.\n")


def test_a_lease_blocks_prune_exclusivity_and_goes_with_its_holder(tmp_path):
    from ragrig.retrieval.index.leases import Lease, exclusive

    index_dir = tmp_path / "index"
    lease = Lease(index_dir, "v000001")
    with exclusive(index_dir, "v000001") as free:
        assert not free
    lease.release()
    with exclusive(index_dir, "v000001") as free:
        assert free
    lease = Lease(index_dir, "v000002")
    del lease
    gc.collect()
    with exclusive(index_dir, "v000002") as free:
        assert free
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert not Lease(not_a_dir, "v000001").held  # nowhere to write a lease (a read-only index): read unpinned


def test_an_open_reader_outlives_three_publishes_at_keep_versions_1(tmp_path, make_config, embedder):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    generation(corpus, 1)
    cfg = make_config(corpus, index__keep_versions=1)
    ingest(cfg, embedder)
    reader = Retriever(cfg, embedder=embedder)
    first = [(h.chunk_id, h.text) for h in reader.search("move inches", use_cache=False).hits]
    assert first and first[0][0].startswith("g1.md")
    for n in (2, 3, 4):
        generation(corpus, n)
        stats = ingest(cfg, embedder)
        assert getattr(stats, "kept_in_use", None) == ["v000001"]
        # the reader still answers from its own version, every source included
        res = reader.search("move inches", use_cache=False)
        assert res.version == "v000001" and [(h.chunk_id, h.text) for h in res.hits] == first
    layout = Layout(cfg)
    assert layout.published_versions() == ["v000001", "v000004"]  # v2, v3 pruned; v1 pinned
    reader.version.release()
    generation(corpus, 5)
    stats = ingest(cfg, embedder)
    assert stats.kept_in_use == [] and layout.published_versions() == ["v000005"]
    assert not (layout.index_dir / "leases" / "v000001.lock").exists()


def test_a_reader_whose_index_is_reset_under_it_fails_with_one_clear_line_and_eval_logs_what_it_has(
        tmp_path, make_config, embedder):
    import mlflow
    from ragrig.configs.errors import IndexDamagedError
    from ragrig.eval.evaluate import evaluate_testsets
    from ragrig.eval.testset import Case, Expectation, TestSet
    from ragrig.retrieval.index.reset import reset

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    generation(corpus, 1)
    cfg = make_config(corpus, eval__ragas=False)
    ingest(cfg, embedder)
    reader = Retriever(cfg, embedder=embedder)
    case = Case(id="c1", query="move inches", expect=[Expectation(doc="g1.md")])
    sets = [TestSet(name="first", cases=[case]), TestSet(name="second", cases=[case])]

    class ResetAfterTheFirstLog(Executor):
        def call(self, name, fn, *args):
            out = fn(*args)
            if name == "log-mlflow":
                reset(cfg)  # the whole index goes under the reader, its Chroma collection included
            return out

    with pytest.raises(RagrigError) as exc:
        evaluate_testsets(cfg, sets, retriever=reader, executor=ResetAfterTheFirstLog())
    msg = str(exc.value)
    assert "\n" not in msg and "removed or damaged under this reader" in msg, msg
    runs = mlflow.search_runs(search_all_experiments=True, output_format="list")
    got = sorted((r.data.tags["ragrig.testset"], r.info.status) for r in runs)
    assert got == [("first", "FINISHED"), ("second", "FAILED")]
    failed = next(r for r in runs if r.info.status == "FAILED")
    assert "removed or damaged under this reader" in failed.data.tags["ragrig.error"]
    with pytest.raises(IndexDamagedError, match="removed or damaged under this reader"):
        reader.search("move inches", use_cache=False)
