"""Chroma clients: one per store and process, until forgotten."""

from __future__ import annotations

from ragrig.configs.models import ChromaConfig
from ragrig.retrieval.index import chroma


def test_one_client_per_store_until_forgotten(tmp_path):
    cfg = ChromaConfig()
    a = chroma.chroma_client(cfg, tmp_path / "a")
    assert chroma.chroma_client(cfg, tmp_path / "a") is a
    b = chroma.chroma_client(cfg, tmp_path / "b")
    assert b is not a
    chroma.forget_client(cfg, tmp_path / "a")
    assert chroma.chroma_client(cfg, tmp_path / "b") is b  # only that store's client is forgotten
    fresh = chroma.chroma_client(cfg, tmp_path / "a")
    assert fresh is not a
    chroma.forget_client(cfg, tmp_path / "never-opened")  # no error
    for path in ("a", "b"):
        chroma.forget_client(cfg, tmp_path / path)
