"""Hop diagnostics that last: for each case, what each multi-hop hop's judge decided and which expected sections
that hop added to the top k, kept in the per-query rows (report.json, per_query tables), summed up as per-hop
recall gains (MLflow metrics) and compared run against run (``ragrig compare``).

An expected section counts for the earliest hop whose hit touches it within the top k (hop 0 = the query's own
ranking), so hop 0's recall plus every hop's gain is the case's recall@k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragrig.eval.relevance import Target
from ragrig.retrieval.results import RetrievalResult

GAIN = "recall_gain@10"


def hop_rows(res: RetrievalResult, targets: Sequence[Target], k: int = 10) -> list[dict[str, Any]]:
    """One row per hop the result records: the judge's decision (``can_answer``, ``reasoning``, the items it
    ``asked`` for), the chunks it ``added``, the expected sections it brought into the top k (``found``) and
    that share of the case's expected sections (``recall_gain@10``)."""
    first_hop: dict[str, int] = {}
    for h in res.hits[:k]:
        for t in targets:
            if t.touches(h.doc_id, h.start, h.end):
                first_hop[t.key] = min(first_hop.get(t.key, h.hop), h.hop)
    out = []
    for rec in res.hops:
        n = int(rec["hop"])
        found = [t.key for t in targets if first_hop.get(t.key) == n]
        out.append({
            "hop": n,
            "can_answer": bool(rec.get("can_answer")),
            "reasoning": str(rec.get("reasoning", "")),
            "asked": [str(m.get("item", "")) for m in rec.get("missing", [])],
            "added": [str(a.get("chunk_id", "")) for a in rec.get("added", [])],
            "found": found,
            GAIN: len(found) / len(targets) if targets else 0.0,
            **({"error": str(rec["error"])} if rec.get("error") else {}),  # the judge failed: no decision
        })
    return out


def hop_gains(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean recall gain per hop (a case without that hop gains 0), over every case (``overall``) and per tag.
    Empty when no case ran a hop."""
    deepest = max((h["hop"] for r in rows for h in r.get("hops", [])), default=0)
    if not deepest:
        return {}
    scopes: dict[str, list[dict[str, Any]]] = {"overall": list(rows)}
    for r in rows:
        for tag in r.get("tags") or ["untagged"]:
            scopes.setdefault(tag, []).append(r)
    out: dict[str, dict[str, float]] = {}
    for scope, members in scopes.items():
        out[scope] = {str(n): sum(_gain(r, n) for r in members) / len(members) for n in range(1, deepest + 1)}
    return out


def _gain(row: dict[str, Any], hop: int) -> float:
    return sum(h[GAIN] for h in row.get("hops", []) if h["hop"] == hop)


def hop_summary(hops: Sequence[dict[str, Any]]) -> str:
    """One line for a per-query table: ``1: asked Lethal x+ -> found weapons.md#lethal x+ (+0.50)`` per hop."""
    parts = []
    for h in hops:
        if h.get("error"):
            parts.append(f"{h['hop']}: judge failed")
            continue
        if h["can_answer"] and not h["added"]:
            parts.append(f"{h['hop']}: can answer")
            continue
        asked = ", ".join(h["asked"]) or "-"
        found = ", ".join(h["found"]) or "nothing expected"
        parts.append(f"{h['hop']}: asked {asked} -> found {found} ({h[GAIN]:+.2f})")
    return "; ".join(parts)


def hop_changes(base_rows: dict[str, dict[str, Any]], cand_rows: dict[str, dict[str, Any]],
                ids: Sequence[str]) -> list[dict[str, Any]]:
    """The cases whose hops asked for or found something else in the candidate run, with both summaries (runs
    logged before hop diagnostics existed have none: nothing to compare)."""
    out = []
    for i in ids:
        a, b = base_rows[i].get("hops"), cand_rows[i].get("hops")
        if a is None or b is None:
            continue
        key_a = [(h["hop"], h["asked"], h["found"]) for h in a]
        key_b = [(h["hop"], h["asked"], h["found"]) for h in b]
        if key_a != key_b:
            out.append({"id": i, "before": hop_summary(a) or "no hop", "after": hop_summary(b) or "no hop",
                        "gain_before": sum(h[GAIN] for h in a), "gain_after": sum(h[GAIN] for h in b)})
    return out
