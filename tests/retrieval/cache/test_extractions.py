"""The extraction cache: documents by (content sha256, extractor), deletion by sha."""

from __future__ import annotations

from ragrig.retrieval.cache.extractions import ExtractCache
from ragrig.retrieval.documents import Document


def doc(sha: str, text: str) -> Document:
    return Document(doc_id="ignored", sha256=sha, format="md", markdown=text, metadata={"format": "md", "n": [1]},
                    warnings=["w"])


def test_get_returns_the_document_under_the_asked_id_and_extractor(tmp_path):
    cache = ExtractCache(tmp_path / "x.sqlite")
    cache.put(doc("s1", "# One"), "ex-a")
    got = cache.get("s1", "ex-a", "rules/one.md")
    assert got == Document(doc_id="rules/one.md", sha256="s1", format="md", markdown="# One",
                           metadata={"format": "md", "n": [1]}, warnings=["w"], extractor="ex-a")
    assert cache.get("s1", "ex-b", "rules/one.md") is None  # other extraction settings: a miss
    assert cache.get("s2", "ex-a", "rules/one.md") is None
    cache.close()


def test_delete_removes_a_sha_under_every_extractor(tmp_path):
    cache = ExtractCache(tmp_path / "x.sqlite")
    cache.put(doc("s1", "a"), "ex-a")
    cache.put(doc("s1", "a"), "ex-b")
    cache.put(doc("s2", "b"), "ex-a")
    assert cache.delete({"s1", "s3"}) == 2
    assert cache.get("s1", "ex-a", "d") is None and cache.get("s1", "ex-b", "d") is None
    assert cache.get("s2", "ex-a", "d").markdown == "b"
    cache.close()
