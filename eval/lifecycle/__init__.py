"""Test sets that live with the corpus: evidence fingerprints and the stale-case check (``check.py``, with
``--write`` in ``yaml_write.py``), the diff between two index versions (``diff.py``), draft cases from the
corpus's structure (``drafts.py``, ``--llm`` phrasing in ``rephrase.py``), and the sequence the publish-triggered
evaluation runs (``published.py``: check, evaluate, compare with the version before, gate)."""
