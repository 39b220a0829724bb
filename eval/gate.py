"""The CI regression gate: compare a candidate evaluation with a committed baseline under a policy and
return PASS / WARN / BLOCK with the reasons and the flipped queries.

Cases first: a candidate without some of the baseline's cases -> BLOCK, unless the policy sets
``allow_subset`` (then WARN); cases the baseline lacks -> WARN. Per metric: no drop -> PASS; a drop within
``max_drop`` -> WARN; a larger drop that the paired permutation test does not find significant at ``alpha``
-> WARN (noise is not a reason to block); a larger, significant drop -> BLOCK. A ``must_pass`` case that had
a relevant chunk in the top k in the baseline and has none in the candidate -> BLOCK.

Outputs are Markdown and JUnit XML strings; the terminal rendering lives in ``flows/render/gate.py``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.configs.yamlio import load_yaml
from ragrig.eval.compare import Comparison, compare, load_run
from ragrig.eval.metrics import GATED
from ragrig.eval.tracking.store import tracking_uri

PASS, WARN, BLOCK = "PASS", "WARN", "BLOCK"
ORDER = {PASS: 0, WARN: 1, BLOCK: 2}


class MetricRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_drop: float = Field(0.02, ge=0, le=1)
    alpha: float = Field(0.05, gt=0, lt=1)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metrics: dict[str, MetricRule] = Field(
        default_factory=lambda: {m: MetricRule() for m in GATED}
    )
    must_pass: list[str] = Field(default_factory=list)
    # a candidate that answers only some of the baseline's cases is a BLOCK unless this allows it (then a WARN)
    allow_subset: bool = False
    k: int = Field(10, ge=1)
    permutations: int = Field(10000, ge=100)
    seed: int = 0


def load_policy(path: str | Path | None) -> Policy:
    if not path:
        return Policy()
    located = load_yaml(path)
    try:
        return Policy.model_validate(located.data or {})
    except ValidationError as exc:
        raise located.validation_error(exc, "invalid gate policy") from None


@dataclass
class Check:
    name: str  # "ndcg@10" or "must-pass: <case id>"
    verdict: str
    reason: str
    baseline: float | None = None
    candidate: float | None = None
    delta: float | None = None
    p: float | None = None


@dataclass
class GateResult:
    testset: str
    verdict: str
    checks: list[Check]
    comparison: dict[str, Any]
    flips: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(base: dict[str, Any], cand: dict[str, Any], policy: Policy) -> GateResult:
    cmp: Comparison = compare(base, cand, tuple(policy.metrics), k=policy.k, n_perm=policy.permutations,
                              seed=policy.seed, base_name="baseline", cand_name="candidate")
    checks: list[Check] = coverage_checks(base, cand, policy)
    for m in cmp.metrics:
        rule = policy.metrics[m.metric]
        drop = -m.delta
        if drop <= 1e-12:
            v, why = PASS, "no drop" if drop > -1e-12 else f"improved by {m.delta:+.4f}"
        elif drop <= rule.max_drop:
            v, why = WARN, f"dropped {drop:.4f}, within the allowed {rule.max_drop:.4f}"
        elif m.p_permutation >= rule.alpha:
            v, why = WARN, (f"dropped {drop:.4f} (> {rule.max_drop:.4f}) but not significant "
                            f"(p={m.p_permutation:.4f} >= {rule.alpha})")
        else:
            v, why = BLOCK, (f"dropped {drop:.4f} (> {rule.max_drop:.4f}), significant "
                             f"(p={m.p_permutation:.4f} < {rule.alpha})")
        checks.append(Check(m.metric, v, why, m.baseline, m.candidate, m.delta, m.p_permutation))
    base_rows = {r["id"]: r for r in base["per_query"]}
    cand_rows = {r["id"]: r for r in cand["per_query"]}
    hk = f"hit_rate@{policy.k}"
    for cid in policy.must_pass:
        if cid not in base_rows or cid not in cand_rows:
            raise InputError(f"gate policy: must_pass case '{cid}' is not in both runs")
        before = base_rows[cid]["metrics"].get(hk, 0) > 0
        after = cand_rows[cid]["metrics"].get(hk, 0) > 0
        if after:
            checks.append(Check(f"must-pass: {cid}", PASS, f"relevant chunk in the top {policy.k}"))
        elif before:
            checks.append(Check(f"must-pass: {cid}", BLOCK, f"lost its relevant chunk from the top {policy.k}"))
        else:
            checks.append(Check(f"must-pass: {cid}", WARN,
                                f"had no relevant chunk in the top {policy.k} in the baseline either"))
    verdict = max((c.verdict for c in checks), key=ORDER.__getitem__, default=PASS)
    return GateResult(str(cand.get("testset", base.get("testset", ""))), verdict, checks, cmp.to_dict(),
                      [asdict(f) for f in cmp.flips])


def coverage_checks(base: dict[str, Any], cand: dict[str, Any], policy: Policy) -> list[Check]:
    """A "coverage" check when the two runs do not hold the same cases (none when they do): baseline cases the
    candidate lacks are a BLOCK (metrics over a subset say nothing about the rest) unless the policy has
    ``allow_subset``, then a WARN; candidate cases the baseline lacks are a WARN (not judged)."""
    base_ids = [r["id"] for r in base["per_query"]]
    cand_ids = {r["id"] for r in cand["per_query"]}
    missing = [i for i in base_ids if i not in cand_ids]
    extra = sorted(cand_ids - set(base_ids))
    checks: list[Check] = []
    n_base, shared = len(base_ids), len(base_ids) - len(missing)
    if missing:
        eg = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
        why = (f"compared on {shared} of the baseline's {n_base} cases: {len(missing)} left out ({eg})")
        if policy.allow_subset:
            checks.append(Check("coverage", WARN, why + "; the policy allows a subset"))
        else:
            checks.append(Check("coverage", BLOCK, why + "; evaluate the whole test set, or set allow_subset: "
                                "true in the gate policy"))
    if extra:
        eg = ", ".join(extra[:3]) + (", …" if len(extra) > 3 else "")
        checks.append(Check("coverage: new cases", WARN, f"{len(extra)} cases are not in the baseline and were "
                            f"not judged ({eg}); update the baseline to gate them"))
    return checks


def overall(results: list[GateResult]) -> str:
    return max((r.verdict for r in results), key=ORDER.__getitem__, default=PASS)


def judge_all(baselines: dict[str, dict[str, Any]], reports: list[dict[str, Any]], policy: Policy) -> list[GateResult]:
    """Each candidate report against the baseline run of its test set (a single baseline run judges a single
    report whatever its test set is called)."""
    results = []
    for rep in reports:
        base = baselines.get(rep["testset"])
        if base is None and len(baselines) == 1 and len(reports) == 1:
            base = next(iter(baselines.values()))
        if base is None:
            raise InputError(f"the baseline has no run for test set '{rep['testset']}' (it has: {sorted(baselines)})")
        results.append(judge(base, rep, policy))
    return results


# ---- baselines ------------------------------------------------------------------------------------
BASELINE_KEYS = ("testset", "testset_sha256", "index", "k_values", "overall", "per_tag")


def baseline_payload(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """What a committed baseline holds: provenance, overall metrics and per-query metrics (no hit texts)."""
    runs = []
    for r in reports:
        runs.append({**{k: r.get(k) for k in BASELINE_KEYS},
                     "per_query": [{"id": q["id"], "query": q["query"], "tags": q["tags"], "metrics": q["metrics"]}
                                   for q in r["per_query"]]})
    return {"kind": "ragrig-baseline", "version": 1, "runs": runs}


def load_baselines(ref: str, cfg: RagrigConfig) -> dict[str, dict[str, Any]]:
    """Baseline reports by test-set name from ``--baseline``: a JSON file (``load_baseline``), or an MLflow run
    id or name in ``cfg``'s store (``eval.compare.load_run``)."""
    if Path(ref).exists() or ref.endswith(".json"):
        return load_baseline(ref)
    b = load_run(ref, tracking_uri(cfg))[1]
    return {b["testset"]: b}


def load_baseline(path: str | Path) -> dict[str, dict[str, Any]]:
    """Baseline reports by test-set name (a baseline file, or a single `ragrig eval --output-json` report)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"--baseline {p}: file not found (create one with `ragrig gate --update-baseline`)") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"--baseline {p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    runs = data.get("runs") if isinstance(data, dict) and "runs" in data else [data]
    out = {}
    for r in runs:
        if not isinstance(r, dict) or "per_query" not in r or "testset" not in r:
            raise InputError(f"--baseline {p}: not a ragrig baseline or eval report (no testset/per_query)")
        out[r["testset"]] = r
    return out


# ---- outputs ----------------------------------------------------------------------------------------
def to_markdown(results: list[GateResult]) -> str:
    icon = {PASS: "✅ PASS", WARN: "⚠️ WARN", BLOCK: "⛔ BLOCK"}
    lines = [f"## Retrieval gate: {icon[overall(results)]}", ""]
    for r in results:
        lines += [f"### {r.testset}: {icon[r.verdict]}", ""]
        coverage = "; ".join(c.reason for c in r.checks if c.name.startswith("coverage"))
        if coverage:
            lines += [f"**Partial comparison:** {coverage} (metrics over the {r.comparison.get('n')} shared cases)", ""]
        lines += ["| check | baseline | candidate | Δ | p | verdict | reason |", "|---|---:|---:|---:|---:|---|---|"]
        for c in r.checks:
            def f(v: float | None, signed: bool = False) -> str:
                return "" if v is None else (f"{v:+.4f}" if signed else f"{v:.4f}")

            lines.append(f"| {c.name} | {f(c.baseline)} | {f(c.candidate)} | {f(c.delta, True)} | {f(c.p)} | "
                         f"{c.verdict} | {c.reason} |")
        if r.flips:
            lines += ["", "| flipped query | direction | first relevant rank before → after |", "|---|---|---|"]
            for fl in r.flips:
                lines.append(f"| {fl['id']} | {fl['direction']} | "
                             f"{fl['rank_before'] or '–'} → {fl['rank_after'] or '–'} |")
        lines.append("")
    return "\n".join(lines)


def to_junit(results: list[GateResult]) -> str:
    """JUnit XML: a testsuite per test set, a testcase per metric check and per flipped must-pass case."""
    suites = ET.Element("testsuites", name="ragrig-gate")
    total = fails = 0
    for r in results:
        cases = list(r.checks)
        suite = ET.SubElement(suites, "testsuite", name=f"retrieval.{r.testset}", tests=str(len(cases)),
                              failures=str(sum(c.verdict == BLOCK for c in cases)), errors="0", skipped="0")
        for c in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"retrieval.{r.testset}", name=c.name)
            if c.verdict == BLOCK:
                fail = ET.SubElement(tc, "failure", message=c.reason, type="RetrievalRegression")
                fail.text = c.reason
            elif c.verdict == WARN:
                out = ET.SubElement(tc, "system-out")
                out.text = f"WARN: {c.reason}"
        total += len(cases)
        fails += sum(c.verdict == BLOCK for c in cases)
    suites.set("tests", str(total))
    suites.set("failures", str(fails))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)
