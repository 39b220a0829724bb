"""The retrieval sources' names, in one tuple that the config validator, the candidates and every renderer read
(configs never import retrieval/): each is one entry of ``retrieval/search/sources.py``'s registry, which refuses
to load unless its entries are these, in this order (fused scores add the sources' terms in it)."""

SOURCE_NAMES = ("bm25", "vector", "header", "section", "vector2")
RANK_NAMES = (*SOURCE_NAMES, "rerank")  # what a hit can carry a rank from: each source, then the rerank stage
