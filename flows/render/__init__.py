"""Rendering for people, and the only place that imports ``rich``: terminal tables per command (``ingest``,
``evaluation``, ``compare``, ``gate``, ``sweep``, ``query``) and the Markdown the flows attach as Prefect
artifacts. The library (``eval/``, ``retrieval/``) returns data and plain Markdown/JUnit/JSON strings."""
