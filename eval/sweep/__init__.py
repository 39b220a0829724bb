"""Config sweeps: a base config plus a grid and/or explicit list of overrides, evaluated with shared work.

``spec`` loads, expands and validates a sweep file; ``run`` runs it (one index per distinct ingestion
config, candidates shared across retrieval variants, every evaluation through ``eval.evaluate``);
``result`` is what it returns; ``summary`` the Markdown table and plots; ``parent`` the MLflow parent run.
"""
