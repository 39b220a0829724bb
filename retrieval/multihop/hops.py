"""Multi-hop retrieval: retrieve, ask a judge what is missing, fetch it, repeat (up to ``max_hops``).

Each missing item is looked up as a header first (the section whose title names it), with hybrid
retrieval of the item text as the fallback. New chunks are tagged with their hop number and take the
last places of the context window (``retrieval.top_k``), in the order the judge asked for them: the
query's own best hits keep their ranks, and a hop that fetched something useless costs only the tail.
(Placing them right after the chunk that named them cost single-hop nDCG@10 0.881 -> 0.865 on SRD;
see docs/results.md.)
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.keywords import KeywordNormalizer, mine_terms
from ragrig.retrieval.multihop.judges import HopJudge, LLMJudge, Missing, ReferenceJudge
from ragrig.retrieval.results import Hit, RetrievalResult

if TYPE_CHECKING:
    from ragrig.retrieval.search.retriever import Retriever


class TermIndex:
    """Terms from the keyword library that can be followed as references, mapped to the sections whose
    own header yields them.

    A term is followable when it names at most ``max_sections`` sections and is specific: a rule keyword
    with a value slot ("Lethal 5+"), or a name that at most ``rare_share`` of the chunks mention (so
    "Engagement Range", named everywhere in a rulebook, is not a reference worth a hop).
    """

    def __init__(self, retriever: Retriever, max_sections: int = 3, rare_share: float = 0.05) -> None:
        library = retriever.version.keywords
        self.normalizer = KeywordNormalizer(library)
        n_chunks = max(1, len(retriever.chunks))
        limit = max(2.0, rare_share * n_chunks)
        self.idf = {t["term"]: math.log(n_chunks / (1 + t.get("text_count", 0))) for t in library.get("terms", [])}
        followable = {
            t["term"] for t in library.get("terms", [])
            if t["kind"] == "parameterized" or t.get("text_count", 0) <= limit
        }
        rows: dict[str, set[str]] = defaultdict(set)
        canonical = self.normalizer.canonical
        for c in retriever.chunks:
            # a document's own title (level 1) names the whole document, not a rule worth a hop
            if c.level <= 1 or c.part > 1 or not c.header_path:
                continue
            for key in mine_terms([c.header_path[-1]]):
                if key in canonical and canonical[key] in followable:
                    rows[canonical[key]].add(c.chunk_id)
        self.rows = {t: ids for t, ids in rows.items() if len(ids) <= max_sections}

    def terms_in(self, text: str) -> list[str]:
        found = [t for t in self.normalizer.mentioned(text) if t in self.rows]
        return sorted(found, key=lambda t: -self.idf.get(t, 0.0))

    def sections_of(self, term: str) -> set[str]:
        return self.rows.get(term, set())


def make_judge(retriever: Retriever, r: RetrievalConfig) -> HopJudge:
    if r.judge.kind == "llm":
        def titles(query: str) -> list[str]:
            return [m.title for m in retriever.headers.mentions(query, r.header_threshold, limit=20)] + [
                t for t in retriever.term_index.terms_in(query)]

        return LLMJudge(r.judge, header_titles=titles)
    return ReferenceJudge(retriever.term_index, max_items=r.judge.max_items, anchored=r.judge.anchored)


def fetch(retriever: Retriever, item: Missing, have: set[str], r: RetrievalConfig, limit: int) -> list[tuple[int, str]]:
    """Rows for one missing item: header matches first, hybrid retrieval as the fallback."""
    rows: list[tuple[int, str]] = []
    own = sorted(retriever.term_index.sections_of(item.item), key=lambda cid: retriever.row[cid])
    for cid in own:
        if cid not in have:
            rows.append((retriever.row[cid], "header"))
    if not own:
        for m in retriever.headers.lookup(item.item, r.header_threshold):
            for row in m.rows:
                if retriever.chunks[row].chunk_id not in have:
                    rows.append((row, "header"))
    if not rows:
        sub = r.model_copy(update={"max_hops": 0, "adaptive": r.adaptive.model_copy(update={"enabled": False})})
        res = retriever.search(item.item, top_k=limit + len(have), retrieval=sub, use_cache=True)
        rows = [(retriever.row[h.chunk_id], "search") for h in res.hits if h.chunk_id not in have]
    return rows[:limit]


def multi_hop(retriever: Retriever, first: RetrievalResult, r: RetrievalConfig, top_k: int, max_hops: int,
              judge: HopJudge | None = None) -> RetrievalResult:
    """Extend a hop-0 result with up to ``max_hops`` hops; judgements are recorded in ``result.hops``."""
    judge = judge or make_judge(retriever, r)
    hits: list[Hit] = list(first.hits)
    hops: list[dict[str, Any]] = []
    window = min(top_k, r.top_k)  # what an answering LLM would see; deeper hits can still be promoted
    for hop in range(1, max_hops + 1):
        t0 = time.perf_counter()
        context = hits[:window]
        j = judge.judge(first.query, context)
        record: dict[str, Any] = {"hop": hop, **j.to_dict(), "added": []}
        hops.append(record)
        if j.can_answer or not j.missing:
            record["ms"] = (time.perf_counter() - t0) * 1000
            break
        have = {h.chunk_id for h in context}
        added: list[tuple[Hit, str | None]] = []
        for item in j.missing:
            room = r.hop_chunks - len(added)
            if room <= 0:
                break
            for row, how in fetch(retriever, item, have, r, 1):  # a named rule needs its own section, once
                c = retriever.chunks[row]
                h = Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, header_path=list(c.header_path), text=c.text,
                        score=0.0, hop=hop, reason=f"hop {hop}: {item.item} ({how})", start=c.start, end=c.end,
                        tokens=c.tokens)
                have.add(c.chunk_id)
                added.append((h, item.origin))
                record["added"].append({"chunk_id": c.chunk_id, "item": item.item, "via": how})
        if not added:
            record["ms"] = (time.perf_counter() - t0) * 1000
            break
        added.sort(key=lambda pair: 0 if pair[0].reason.endswith("(header)") else 1)  # header matches first
        hits = place(hits, added, window)
        record["ms"] = (time.perf_counter() - t0) * 1000
    final = hits[:top_k]
    for h in final:
        if h.hop and not h.score:
            h.score = min((x.score for x in final if not x.hop), default=0.0)
    out = RetrievalResult(**{**first.__dict__, "hits": final, "hops": hops})
    out.timings_ms = {**first.timings_ms, "hops": sum(x.get("ms", 0.0) for x in hops)}
    out.timings_ms["total"] = first.timings_ms.get("total", 0.0) + out.timings_ms["hops"]
    return out


def place(hits: list[Hit], added: list[tuple[Hit, str | None]], window: int) -> list[Hit]:
    """Put the new hits in the last places of the context window, after the hits of earlier hops (a chunk
    already ranked lower moves up instead of appearing twice); the hop-0 hits they displace keep their
    order after them. At least half the window stays with hop-0 hits."""
    moving = {h.chunk_id for h, _ in added}
    rest = [h for h in hits if h.chunk_id not in moving]
    hopped = [h for h in rest[:window] if h.hop > 0]
    first = [h for h in rest if h.hop == 0]
    # hops never take more than half the window: the query's own best hits stay in front
    keep = max(window - len(hopped) - len(added), min(len(first), (window + 1) // 2))
    return first[:keep] + hopped + [h for h, _ in added] + first[keep:] + [h for h in rest[window:] if h.hop > 0]
