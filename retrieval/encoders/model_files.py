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
