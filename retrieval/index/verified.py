"""What a machine has already checked of a version's files (issue 38: a reader of a 1M-chunk version hashed ~6 GB
at every open). After every file a check hashed matched the manifest, ``record`` keeps each file's identity
(``file_stamps.stamp``: size, modification and change times, inode, device) beside the sha256 it matched, in
``<index>/verified/<version>.json``; a later reader's check (``verify.check_files`` with ``stamps``) hashes only
the files whose identity differs. Any write to a file moves its change time, which no user can set back (unlike
the modification time), so a file edited, truncated, replaced or restored since is hashed again; a home copied
or moved elsewhere is hashed once where it lands. A file changed within ``file_stamps.RACY_NS`` of the record
is not trusted (a change inside one tick of a coarse clock would keep its times). The records sit beside the
manifest, writable by whoever can write the index and no weaker than it; ``ragrig health`` and ingest hash
everything.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.file_stamps import settled


def record_file(stamps: Path, version_dir: Path) -> Path:
    return stamps / f"{version_dir.name}.json"


def known(stamps: Path, version_dir: Path) -> dict[str, list]:
    """rel path -> [sha256, *identity] for the files a check found unchanged and can trust ({} when none)."""
    try:
        rec = json.loads(record_file(stamps, version_dir).read_text(encoding="utf-8"))
        at, files = int(rec["at"]), rec["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(files, dict):
        return {}
    return {rel: got for rel, got in files.items()
            if isinstance(got, list) and len(got) == 6 and isinstance(got[3], int) and settled(got[1:], at)}


def record(stamps: Path, version_dir: Path, entries: dict[str, list]) -> None:
    """Remember ``entries`` (rel path -> [the sha256 it matched, *its stamp, the same before and after]). Best
    effort: a home that cannot be written (read-only storage) is checked in full each time, as before."""
    try:
        stamps.mkdir(exist_ok=True)  # not its parents: an index removed meanwhile stays removed
        data = json.dumps({"at": time.time_ns(), "files": entries}, sort_keys=True).encode("utf-8")
        write_atomic(record_file(stamps, version_dir), data, durable=False, parents=False)
    except OSError:
        pass
