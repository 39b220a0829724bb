"""Candidates as arrays: what each source returned for a query, the union per query, and a batch of queries
laid end to end, which is what fusion and selection read. A single query is a batch of one.

- ``SourceRun``: one source's candidates for one query, rows and scores in the order the source returned them
  (that order matters: normalisation sums the scores in it).
- ``CandidateSet``: one query's candidates, the union of its sources' runs in chunk-id order (the tie-break),
  with each source's rank by (-score, id) (0 where absent) and raw score, normalised scores per method (made
  on first use, then kept), and the de-duplication groups among these candidates.
- ``CandidateBatch``: many queries' sets end to end; ``seg[i]`` is the query of element i.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from ragrig.configs.sources import SOURCE_NAMES  # the sources (sources.py's registry), in fusion's order


Normalizer = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class SourceRun:
    rows: np.ndarray  # int64 chunk rows, in the order the source returned them
    scores: np.ndarray  # float64, higher is better

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def of(cls, pairs: Sequence[tuple[int, float]]) -> SourceRun:
        return cls(np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs)),
                   np.fromiter((s for _, s in pairs), dtype=np.float64, count=len(pairs)))


@dataclass(frozen=True)
class ChunkOrder:
    """The chunk-id order of an index's rows (the tie-break everywhere): ``rank[row]`` and ``row[rank]``."""

    rank: np.ndarray
    row: np.ndarray

    @classmethod
    def of(cls, ids: Sequence[str]) -> ChunkOrder:
        return cls.of_rows(np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64))

    @classmethod
    def of_rows(cls, row: np.ndarray) -> ChunkOrder:
        """From the rows in chunk-id order (a version's stored ``reader/order.npy``)."""
        rank = np.empty_like(row)
        rank[row] = np.arange(len(row))
        return cls(rank, row)


@dataclass
class DedupKeys:
    """Per index version: each chunk row's de-duplication keys, and whether any other chunk shares one (only
    those rows can ever be dropped, or drop another)."""

    keys: list[tuple[Hashable, ...]]
    prone: np.ndarray

    @classmethod
    def build(cls, keys: list[tuple[Hashable, ...]]) -> DedupKeys:
        count: dict[Hashable, int] = defaultdict(int)
        for ks in keys:
            for k in ks:
                count[k] += 1
        return cls(keys, np.fromiter((any(count[k] > 1 for k in ks) for ks in keys), dtype=bool, count=len(keys)))

    @classmethod
    def of_codes(cls, codes: np.ndarray) -> DedupKeys:
        """From each row's numbered keys (n x 2: text key, section key or -1; ``chunk_table.Derived.codes``): the
        same duplicates ``build`` finds from the keys themselves."""
        text, section = codes[:, 0], codes[:, 1]
        prone = np.bincount(text)[text] > 1 if len(text) else np.zeros(0, dtype=bool)
        has = section >= 0
        if has.any():
            prone[has] |= np.bincount(section[has])[section[has]] > 1
        return cls(CodedKeys(codes), prone)


class CodedKeys(Sequence[tuple[int, ...]]):
    """Row -> its de-duplication keys as numbers: the text key's (>= 0), then, for a piece of a section, the
    section key's as -(code + 1) (so the two kinds never meet), in the order ``dedup_key`` gives them."""

    def __init__(self, codes: np.ndarray) -> None:
        self.codes = codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, row):  # type: ignore[override]
        t, s = self.codes[row].tolist()
        return (t,) if s < 0 else (t, -(s + 1))


@dataclass
class CandidateSet:
    rows: np.ndarray  # the union, in chunk-id order
    runs: dict[str, SourceRun]  # the sources that returned something, in SOURCE_NAMES order
    pos: dict[str, np.ndarray]  # where each run entry sits in ``rows``
    rank: dict[str, np.ndarray]  # 1-based rank by (-score, id) within the source, 0 where absent
    score: dict[str, np.ndarray]  # the source's raw score, 0 where absent
    group: np.ndarray | None  # per row: the one de-duplication key it shares with another candidate (a group
    # id; -1: none), or None when some row shares two (selection then walks instead)
    normed: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    @classmethod
    def build(cls, runs: dict[str, SourceRun], order: ChunkOrder, dedup: DedupKeys | None) -> CandidateSet:
        present = {s: runs[s] for s in SOURCE_NAMES if s in runs and len(runs[s])}
        uniq = np.unique(np.concatenate([order.rank[r.rows] for r in present.values()])) if present else _NONE
        rows = order.row[uniq]
        pos, rank, score = {}, {}, {}
        for s, run in present.items():
            ids = order.rank[run.rows]
            p = np.searchsorted(uniq, ids)
            rk = np.zeros(len(rows))
            rk[p[np.lexsort((ids, -run.scores))]] = np.arange(1, len(run) + 1)
            sc = np.zeros(len(rows))
            sc[p] = run.scores
            pos[s], rank[s], score[s] = p, rk, sc
        return cls(rows, present, pos, rank, score, _groups(rows, dedup))

    def __len__(self) -> int:
        return len(self.rows)

    def normalised(self, source: str, method: str, normalizer: Normalizer) -> np.ndarray:
        """The source's scores normalised over its own run, aligned to ``rows``; a candidate the source did not
        return gets the source's lowest normalised score. Made once per (source, method)."""
        got = self.normed.get((source, method))
        if got is None:
            normed = normalizer(self.runs[source].scores)
            got = np.full(len(self.rows), normed.min())
            got[self.pos[source]] = normed
            self.normed[(source, method)] = got
        return got

    def place_of(self, row: int, order: ChunkOrder) -> int | None:
        """Where chunk ``row`` sits among these candidates (None: not one of them)."""
        ids = order.rank[self.rows]
        i = int(np.searchsorted(ids, order.rank[row]))
        return i if i < len(ids) and ids[i] == order.rank[row] else None

    def sources_of(self, i: int) -> dict[str, tuple[int, float]]:
        """(rank, raw score) per source that returned candidate ``i``."""
        return {s: (int(self.rank[s][i]), float(self.score[s][i])) for s in self.runs if self.rank[s][i] > 0}


_NONE = np.zeros(0, dtype=np.int64)


def _groups(rows: np.ndarray, dedup: DedupKeys | None) -> np.ndarray | None:
    """Each row's group: the one de-duplication key it shares with another candidate of the set (-1: none);
    None when some row shares two keys."""
    group = np.full(len(rows), -1, dtype=np.int64)
    if dedup is None or not len(rows) or not dedup.prone[rows].any():
        return group
    count: dict[Hashable, int] = defaultdict(int)
    for row in rows[dedup.prone[rows]].tolist():
        for k in dedup.keys[row]:
            count[k] += 1
    gid: dict[Hashable, int] = {}
    for i, row in enumerate(rows.tolist()):
        if dedup.prone[row]:
            shared = [k for k in dedup.keys[row] if count[k] > 1]
            if len(shared) > 1:
                return None
            if shared:
                group[i] = gid.setdefault(shared[0], len(gid))
    return group


@dataclass
class CandidateBatch:
    """Queries' candidate sets end to end. Per source: ``rank`` (0 where absent) and, per normalisation method,
    the normalised scores (made on first use); ``present[q]``: the sources query q's set has, in SOURCE_NAMES
    order."""

    sets: list[CandidateSet]
    seg: np.ndarray
    rows: np.ndarray
    rank: dict[str, np.ndarray]
    present: list[tuple[str, ...]]
    normed: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, sets: list[CandidateSet]) -> CandidateBatch:
        lens = np.array([len(c) for c in sets], dtype=np.int64)
        seg = np.repeat(np.arange(len(sets), dtype=np.int64), lens)
        rows = np.concatenate([c.rows for c in sets]) if sets else _NONE
        sources = [s for s in SOURCE_NAMES if any(s in c.runs for c in sets)]
        rank = {s: _cat([c.rank[s] if s in c.runs else np.zeros(len(c)) for c in sets]) for s in sources}
        return cls(sets, seg, rows, rank, [tuple(c.runs) for c in sets])

    @property
    def sources(self) -> list[str]:
        return list(self.rank)

    def __len__(self) -> int:
        return len(self.sets)

    def bounds(self) -> np.ndarray:
        """Start offset of each query's segment (n + 1 values)."""
        return np.concatenate([[0], np.cumsum([len(c) for c in self.sets], dtype=np.int64)]).astype(np.int64)

    def normalised(self, source: str, method: str, normalizer: Normalizer) -> np.ndarray:
        got = self.normed.get((source, method))
        if got is None:
            got = self.normed[(source, method)] = _cat([
                c.normalised(source, method, normalizer) if source in c.runs else np.zeros(len(c)) for c in self.sets])
        return got

    def groups(self) -> np.ndarray | None:
        """De-duplication groups unique across the batch (-1: none); None when some query's set needs the walk."""
        if any(c.group is None for c in self.sets):
            return None
        parts, offset = [], 0
        for c in self.sets:
            g = c.group
            assert g is not None
            parts.append(np.where(g >= 0, g + offset, -1))
            offset += int(g.max()) + 1 if len(g) else 0
        return _cat(parts).astype(np.int64)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)
