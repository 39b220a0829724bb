"""Query-time retrieval: query processing, candidate sources, fusion, selection, shaping, and the facade."""
