"""The CI regression gate: compare a candidate evaluation with a committed baseline under a policy and
return PASS / WARN / BLOCK with the reasons and the flipped queries.

Cases first: a candidate without some of the baseline's cases -> BLOCK, unless the policy sets
``allow_subset`` (then WARN); cases the baseline lacks -> WARN. Per metric: no drop -> PASS; a drop within
``max_drop`` -> WARN; a larger drop that the paired permutation test does not find significant at ``alpha``
-> WARN (noise is not a reason to block); a larger, significant drop -> BLOCK. The same per tag: ``tags`` names
tags (``multi-hop``) with their own metric rules, judged on the cases carrying that tag. With several such
tests, their p-values are Holm-corrected (``correction: holm``, the default) before they are compared with
``alpha``, and every output says so. A ``must_pass`` case that had a relevant chunk in the top k in the
baseline and has none in the candidate (or is missing from it) -> BLOCK.

Outputs are Markdown and JUnit XML strings; the terminal rendering lives in ``flows/render/gate.py``. Why ~310
lines: the policy, the verdicts and their two text renderings change together (a new kind of check appears in
each); the statistics live in ``stats.py``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.configs.yamlio import load_yaml
from ragrig.eval.compare import Comparison, MetricDelta, compare, load_run
from ragrig.eval.metrics import GATED
from ragrig.eval.stats import holm
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
    tags: dict[str, dict[str, MetricRule]] = Field(default_factory=dict)  # tag -> metric -> its own rule
    correction: Literal["holm", "none"] = "holm"  # over every (metric, tag) test of a test set
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
    name: str  # "ndcg@10", "ndcg@10 [multi-hop]" or "must-pass: <case id>"
    verdict: str
    reason: str
    baseline: float | None = None
    candidate: float | None = None
    delta: float | None = None
    p: float | None = None  # what the verdict compared with alpha: Holm-corrected unless correction is none
    p_raw: float | None = None  # the permutation test's own p
    tag: str | None = None  # None: every case
    n: int | None = None  # cases in the test


@dataclass
class GateResult:
    testset: str
    verdict: str
    checks: list[Check]
    comparison: dict[str, Any]
    flips: list[dict[str, Any]] = field(default_factory=list)
    correction: str = "none"  # "holm" when the p-values were corrected
    tests: int = 0  # how many (metric, tag) tests the correction was over

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def search_note(self) -> str:
        """Which vector search answered each run, and whether a difference can be approximate-search noise."""
        return str(self.comparison.get("search_note") or "vector search: not recorded")

    @property
    def p_note(self) -> str:
        """What the p-values are, for every output."""
        if self.correction == "holm" and self.tests > 1:
            return (f"p: paired permutation test, Holm-corrected over the {self.tests} (metric, tag) tests of this "
                    "test set (p raw: uncorrected)")
        return "p: paired permutation test" + (" (one test: nothing to correct)" if self.tests == 1 else "")


def _tagged(run: dict[str, Any], tag: str) -> dict[str, Any]:
    return {**run, "per_query": [r for r in run["per_query"] if tag in (r.get("tags") or [])]}


def _verdict(m: MetricDelta, rule: MetricRule, p: float, corrected: bool) -> tuple[str, str]:
    drop = -m.delta
    which = "Holm-corrected p" if corrected else "p"
    if drop <= 1e-12:
        return PASS, "no drop" if drop > -1e-12 else f"improved by {m.delta:+.4f}"
    if drop <= rule.max_drop:
        return WARN, f"dropped {drop:.4f}, within the allowed {rule.max_drop:.4f}"
    if p >= rule.alpha:
        return WARN, f"dropped {drop:.4f} (> {rule.max_drop:.4f}) but not significant ({which}={p:.4f} >= {rule.alpha})"
    return BLOCK, f"dropped {drop:.4f} (> {rule.max_drop:.4f}), significant ({which}={p:.4f} < {rule.alpha})"


def judge(base: dict[str, Any], cand: dict[str, Any], policy: Policy) -> GateResult:
    cmp: Comparison = compare(base, cand, tuple(policy.metrics), k=policy.k, n_perm=policy.permutations,
                              seed=policy.seed, base_name="baseline", cand_name="candidate")
    tests: list[tuple[MetricDelta, MetricRule, str | None]] = [(m, policy.metrics[m.metric], None) for m in cmp.metrics]
    empty: list[Check] = []
    for tag, rules in policy.tags.items():
        b, c = _tagged(base, tag), _tagged(cand, tag)
        if not {r["id"] for r in b["per_query"]} & {r["id"] for r in c["per_query"]}:
            empty += [Check(f"{m} [{tag}]", WARN, f"no case tagged '{tag}' in both runs: nothing to judge", tag=tag,
                            n=0) for m in rules]
            continue
        sub = compare(b, c, tuple(rules), k=policy.k, n_perm=policy.permutations, seed=policy.seed)
        tests += [(m, rules[m.metric], tag) for m in sub.metrics]
    raw = [m.p_permutation for m, _, _ in tests]
    corrected = policy.correction == "holm" and len(tests) > 1
    ps = holm(raw) if corrected else raw
    checks: list[Check] = coverage_checks(base, cand, policy)
    for (m, rule, tag), p in zip(tests, ps, strict=True):
        v, why = _verdict(m, rule, p, corrected)
        n = m.wins + m.ties + m.losses
        checks.append(Check(m.metric if tag is None else f"{m.metric} [{tag}]", v, why, m.baseline, m.candidate,
                            m.delta, p, m.p_permutation, tag, n))
    checks += empty
    base_rows = {r["id"]: r for r in base["per_query"]}
    cand_rows = {r["id"]: r for r in cand["per_query"]}
    hk = f"hit_rate@{policy.k}"
    for cid in policy.must_pass:
        if cid not in base_rows and cid not in cand_rows:
            raise InputError(f"gate policy: must_pass case '{cid}' is in neither run")
        if cid not in cand_rows:
            checks.append(Check(f"must-pass: {cid}", BLOCK, "missing from the candidate run (its evidence is gone?)"))
            continue
        if cid not in base_rows:
            checks.append(Check(f"must-pass: {cid}", WARN, "not in the baseline run: nothing to compare with"))
            continue
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
                      [asdict(f) for f in cmp.flips], "holm" if corrected else "none", len(tests))


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
    except UnicodeDecodeError as exc:
        raise InputError(f"--baseline {p}: not JSON (not UTF-8 text: byte {exc.start})") from None
    except IsADirectoryError:
        raise InputError(f"--baseline {p}: is a directory, expected a JSON file") from None
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
        holm_col = r.correction == "holm"
        p_head = "| p (Holm) | p raw " if holm_col else "| p "
        lines += [f"### {r.testset}: {icon[r.verdict]}", "", r.p_note + ".", "", r.search_note + ".", "",
                  f"| check | n | baseline | candidate | Δ {p_head}| verdict | reason |",
                  "|---|---:|---:|---:|---:|---:|" + ("---:|" if holm_col else "") + "---|---|"]
        coverage = "; ".join(c.reason for c in r.checks if c.name.startswith("coverage"))
        if coverage:
            lines += [f"**Partial comparison:** {coverage} (metrics over the {r.comparison.get('n')} shared cases)", ""]
        for c in r.checks:
            def f(v: float | None, signed: bool = False) -> str:
                return "" if v is None else (f"{v:+.4f}" if signed else f"{v:.4f}")

            ps = f"{f(c.p)} | {f(c.p_raw)}" if holm_col else f(c.p)
            lines.append(f"| {c.name} | {'' if c.n is None else c.n} | {f(c.baseline)} | {f(c.candidate)} | "
                         f"{f(c.delta, True)} | {ps} | {c.verdict} | {c.reason} |")
        if r.flips:
            lines += ["", "| flipped query | direction | first relevant rank before → after |", "|---|---|---|"]
            for fl in r.flips:
                lines.append(f"| {fl['id']} | {fl['direction']} | "
                             f"{fl['rank_before'] or '–'} → {fl['rank_after'] or '–'} |")
        lines.append("")
    return "\n".join(lines)


def to_junit(results: list[GateResult]) -> str:
    """JUnit XML: a testsuite per test set, a testcase per gated (metric, tag) and per must-pass case; each
    metric testcase says its p-values (Holm-corrected and raw) in its output, the suite says what they are."""
    suites = ET.Element("testsuites", name="ragrig-gate")
    total = fails = 0
    for r in results:
        cases = list(r.checks)
        suite = ET.SubElement(suites, "testsuite", name=f"retrieval.{r.testset}", tests=str(len(cases)),
                              failures=str(sum(c.verdict == BLOCK for c in cases)), errors="0", skipped="0")
        props = ET.SubElement(suite, "properties")  # the schema wants them before the test cases
        for who, kind in r.comparison.get("search", {}).items():
            ET.SubElement(props, "property", name=f"vector_search.{who}", value=kind)
        for c in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"retrieval.{r.testset}", name=c.name)
            if c.verdict == BLOCK:
                fail = ET.SubElement(tc, "failure", message=c.reason, type="RetrievalRegression")
                fail.text = c.reason
            elif c.verdict == WARN:
                out = ET.SubElement(tc, "system-out")
                out.text = f"WARN: {c.reason}"
            if c.p is not None:
                out = ET.SubElement(tc, "system-out")
                out.text = (f"p (Holm, {r.tests} tests)={c.p:.6f} p raw={c.p_raw:.6f} n={c.n}"
                            if r.correction == "holm" else f"p={c.p:.6f} n={c.n}")
        note = ET.SubElement(suite, "system-out")
        note.text = f"{r.p_note}\n{r.search_note}"
        total += len(cases)
        fails += sum(c.verdict == BLOCK for c in cases)
    suites.set("tests", str(total))
    suites.set("failures", str(fails))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)
