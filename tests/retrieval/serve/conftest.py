"""The serve tests' one way to publish a new version of a corpus: its ``gen.md`` names the generation."""

import pytest

GEN = "# Generation\n\n## Marker\n\nThe marker of this corpus is generation {n}, written for version {n}.\n"


@pytest.fixture
def publish():
    """``publish(cfg, corpus, embedder, n)``: write generation ``n`` into the corpus and ingest it; the version."""
    def run(cfg, corpus, embedder, n: int) -> str:
        from ragrig.retrieval.ingest.pipeline import IngestPipeline

        (corpus / "gen.md").write_text(GEN.format(n=n), encoding="utf-8")
        pipe = IngestPipeline(cfg, progress=False)
        pipe.embedder = embedder
        return pipe.run().to_dict()["version"]
    return run
