"""Reading a model folder's (or a small record's) JSON files, where a missing, unreadable or malformed file is no
error but an absent setting: the backends then decide (refuse the folder, or fall back to a default)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: Path) -> Any:
    """The file's JSON value, or None when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def json_object(path: Path) -> dict[str, Any]:
    """The file's JSON object, or {} when it cannot be read or parsed or holds something else."""
    data = read_json(path)
    return data if isinstance(data, dict) else {}


PROMPTS_FILE = "config_sentence_transformers.json"


def folder_query_prompt(folder: Path) -> str:
    """A sentence-transformers folder's own query prompt (``prompts.query`` in its ``config_sentence_transformers
    .json``, where bge, e5 and nomic folders keep their retrieval instruction), or ''. A value that is not a
    string is no prompt (the folder is a user's file, not ours to trust)."""
    prompts = json_object(folder / PROMPTS_FILE).get("prompts")
    query = prompts.get("query") if isinstance(prompts, dict) else None
    return query if isinstance(query, str) else ""
