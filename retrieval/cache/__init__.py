"""Persistent and in-memory caches; each owns its own storage, and its own deletion."""
