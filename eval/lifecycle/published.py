"""An index version against the one before it, as one plain sequence (the evaluate flow runs each step as a task;
``ragrig diff`` runs it between any two versions without logging or gating):

1. ``check-testsets``: every case (drafts included) against the new version, the version before as reference;
2. ``evaluate_testsets`` on the new version: moved cases re-anchored, cases with gone evidence and drafts left
   out, each test set's check kept on its report (and its MLflow run);
3. ``evaluate-previous``: the same cases on the version before, anchored there (never logged);
4. ``diff-versions``: documents and chunks added, changed, moved, removed; the cases touching them; their
   paired metric deltas;
5. ``gate`` (the triggered evaluation only): the new version's reports against the previous version's, under
   the gate policy: PASS / WARN / BLOCK, so a bad re-ingest is caught the night it happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragrig.configs.errors import IndexNotFoundError, InputError
from ragrig.configs.models import RagrigConfig
from ragrig.eval.compare import compare
from ragrig.eval.evaluate import evaluate_testsets, load_testsets
from ragrig.eval.gate import BLOCK, ORDER, PASS, GateResult, Policy, judge_all
from ragrig.eval.gate import to_markdown as gate_markdown
from ragrig.eval.lifecycle.check import CheckReport, check_testset, targets
from ragrig.eval.lifecycle.diff import (
    DELTA_METRICS,
    TestsetTouches,
    VersionDiff,
    diff_versions,
    touched_cases,
)
from ragrig.eval.lifecycle.diff import to_markdown as diff_markdown
from ragrig.eval.relevance import Target
from ragrig.eval.report import EvalReport
from ragrig.eval.testset import TestSet
from ragrig.eval.tracking.runs import RunOptions, attach
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.search.retriever import Retriever


@dataclass
class VersionEvaluation:
    version: str
    previous: str | None
    checks: list[CheckReport]
    reports: list[EvalReport] = field(default_factory=list)  # the new version, one per test set evaluated
    previous_reports: list[EvalReport] = field(default_factory=list)
    diff: VersionDiff | None = None
    gate: list[GateResult] = field(default_factory=list)

    @property
    def gone(self) -> list[str]:
        """``testset: case`` for every case whose evidence is gone (an error)."""
        return [f"{c.testset}: {cid}" for c in self.checks for cid in c.gone]

    @property
    def verdict(self) -> str | None:
        """The gate's verdict (None: nothing was gated: no version before, or not asked to)."""
        if not self.gate:
            return None
        return max((g.verdict for g in self.gate), key=ORDER.__getitem__, default=PASS)

    @property
    def failed(self) -> str | None:
        """Why the evaluation of this version counts as failed (gone evidence, a BLOCK), else None."""
        why = []
        if self.gone:
            why.append(f"{len(self.gone)} case(s) lost their evidence: {', '.join(self.gone[:10])}")
        if self.verdict == BLOCK:
            blocked = [f"{g.testset}: {c.name}" for g in self.gate for c in g.checks if c.verdict == BLOCK]
            why.append(f"gate BLOCK against {self.previous} ({'; '.join(blocked[:10])})")
        return "; ".join(why) or None

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "previous": self.previous, "verdict": self.verdict,
                "checks": [c.to_dict() for c in self.checks],
                "reports": [{"testset": r.testset, "overall": r.overall, "mlflow_run_id": r.mlflow_run_id}
                            for r in self.reports],
                "diff": self.diff.to_dict() if self.diff else None,
                "gate": [g.to_dict() for g in self.gate]}


def previous_version(layout: Layout, version: str) -> str | None:
    """The newest published version older than ``version`` (older ones are kept ``index.keep_versions`` deep)."""
    older = [v for v in layout.published_versions() if v < version]
    return older[-1] if older else None


def open_version(cfg: RagrigConfig, version: str | None) -> IndexVersion:
    """A published version of ``cfg``'s index by name (None: the current one); a missing one names what there is."""
    if version is None:
        return IndexVersion.current(cfg)
    layout = Layout(cfg)
    if version not in layout.published_versions():
        have = ", ".join(layout.published_versions()) or "none"
        raise InputError(f"index version {version!r} is not published for {layout.key} (published: {have})")
    return IndexVersion(cfg, layout, version)


def open_retriever(cfg: RagrigConfig, version: IndexVersion) -> Retriever:
    return Retriever(cfg, version)


def check_all(sets: Sequence[TestSet], new: IndexVersion, old: IndexVersion | None) -> list[CheckReport]:
    ref = old.documents_by_id if old is not None else None
    return [check_testset(ts, new.documents_by_id, new.version, ref, old.version if old else None) for ts in sets]


def _evaluable(sets: Sequence[TestSet], checks: Sequence[CheckReport], reference: bool
               ) -> list[tuple[TestSet, dict[str, list[Target]]]]:
    """Per test set: the cases that can be evaluated in the checked version (``reference``: in the version
    before), drafts left out, with their targets; a test set left with no case is dropped."""
    out = []
    for ts, check in zip(sets, checks, strict=True):
        tg = targets(check, ts, reference=reference)
        kept = [c for c in ts.cases if not c.draft and c.id in tg]
        if kept:
            out.append((ts.model_copy(update={"cases": kept}), {c.id: tg[c.id] for c in kept}))
    return out


def _evaluate_previous(cfg: RagrigConfig, old: IndexVersion, new_retriever: Retriever,
                       todo: list[tuple[TestSet, dict[str, list[Target]]]]) -> list[EvalReport]:
    retriever = Retriever(cfg, old, embedder=new_retriever.embedder)
    return evaluate_testsets(cfg, [t for t, _ in todo], retriever=retriever, targets=[g for _, g in todo], log=None)


def _diff(new: IndexVersion, old: IndexVersion, sets: Sequence[TestSet], checks: Sequence[CheckReport],
          reports: Sequence[EvalReport], previous: Sequence[EvalReport]) -> VersionDiff:
    diff = diff_versions(new.layout.key, old.version, old.documents_by_id, old.chunks, new.version,
                         new.documents_by_id, new.chunks)
    new_by = {r.testset: r for r in reports}
    old_by = {r.testset: r for r in previous}
    for ts, check in zip(sets, checks, strict=True):
        cases = [c for c in ts.cases if not c.draft]
        info = [(c.id, c.query, list(c.tags)) for c in cases]
        new_rows = {r["id"]: r for r in new_by[ts.name].per_query} if ts.name in new_by else None
        old_rows = {r["id"]: r for r in old_by[ts.name].per_query} if ts.name in old_by else None
        touched = touched_cases(diff, info, targets(check, ts, reference=True), targets(check, ts), old_rows,
                                new_rows, check)
        entry = TestsetTouches(ts.name, len(cases), touched)
        if new_rows and old_rows:
            a, b = old_by[ts.name].to_dict(), new_by[ts.name].to_dict()
            ids = {t.id for t in touched} & set(new_rows) & set(old_rows)
            if ids:
                entry.paired = compare(_only(a, ids), _only(b, ids), DELTA_METRICS, base_name=old.version,
                                       cand_name=new.version).to_dict()
            entry.overall = compare(a, b, DELTA_METRICS, base_name=old.version, cand_name=new.version).to_dict()
        diff.testsets.append(entry)
    return diff


def _only(run: dict[str, Any], ids: set[str]) -> dict[str, Any]:
    return {**run, "per_query": [r for r in run["per_query"] if r["id"] in ids]}


def compare_versions(cfg: RagrigConfig, testsets: Sequence[str | Path | TestSet] | None, new: IndexVersion,
                     old: IndexVersion | None, *, evaluate: bool = True, log: RunOptions | None = None,
                     executor: Executor = IN_PROCESS) -> VersionEvaluation:
    """Steps 1-4 above (``evaluate=False``: the check and the structural diff only, no retrieval)."""
    call = executor.call
    sets: list[TestSet] = call("load-testsets", load_testsets, cfg, testsets, True)
    checks = call("check-testsets", check_all, sets, new, old)
    result = VersionEvaluation(new.version, old.version if old else None, checks)
    if evaluate:
        todo = _evaluable(sets, checks, reference=False)
        by_name = {c.testset: c.to_dict() for c in checks}
        retriever = call("open-index", open_retriever, cfg, new)
        result.reports = evaluate_testsets(cfg, [t for t, _ in todo], retriever=retriever,
                                           targets=[g for _, g in todo], log=log, executor=executor,
                                           checks=[by_name[t.name] for t, _ in todo])
        if old is not None:
            result.previous_reports = call("evaluate-previous", _evaluate_previous, cfg, old, retriever,
                                           _evaluable(sets, checks, reference=True))
    if old is not None:
        result.diff = call("diff-versions", _diff, new, old, sets, checks, result.reports, result.previous_reports)
    return result


def evaluate_published(cfg: RagrigConfig, version: str | None, testsets: Sequence[str | Path | TestSet] | None,
                       policy: Policy, *, log: RunOptions | None = RunOptions(),
                       executor: Executor = IN_PROCESS) -> VersionEvaluation:
    """What the publish-triggered evaluation runs: steps 1-5 for ``version`` (None: the current one) against the
    published version before it (none: check and evaluate only)."""
    call = executor.call
    new = open_version(cfg, version)
    prev = previous_version(new.layout, new.version)
    try:
        old = IndexVersion(cfg, new.layout, prev) if prev else None
    except IndexNotFoundError:  # pruned between the listing and the open: evaluate without it
        old = None
    result = compare_versions(cfg, testsets, new, old, log=log, executor=executor)
    if result.previous_reports:
        baselines = {r.testset: r.to_dict() for r in result.previous_reports}
        reports = [r.to_dict() for r in result.reports if r.testset in baselines]
        result.gate = call("gate", judge_all, baselines, reports, policy)
    if log is not None and cfg.mlflow.enabled and result.diff is not None:
        call("log-comparison", log_comparison, cfg, result)
    return result


def log_comparison(cfg: RagrigConfig, result: VersionEvaluation) -> None:
    """Add the diff against the version before and the gate's verdict to each new report's MLflow run."""
    import json

    assert result.diff is not None
    texts = {"version_diff.md": diff_markdown(result.diff),
             "version_diff.json": json.dumps(result.diff.to_dict(), indent=1, ensure_ascii=False)}
    if result.gate:
        texts["gate.md"] = gate_markdown(result.gate)
    metrics: dict[str, float] = {}
    for what in ("documents", "chunks"):
        for kind, n in result.diff.counts(what).items():
            metrics[f"diff.{what}.{kind}"] = float(n)
    for r in result.reports:
        if r.mlflow_run_id is None:
            continue
        touches = next((t for t in result.diff.testsets if t.testset == r.testset), None)
        per = dict(metrics)
        if touches is not None:
            per["diff.touched_cases"] = float(len(touches.touched))
            for m in (touches.paired or {}).get("metrics", []):
                per[f"diff.touched.{m['metric']}.delta"] = m["delta"]
        tags = {"ragrig.previous_version": result.previous or ""}
        if result.verdict:
            tags["ragrig.gate"] = result.verdict
        attach(cfg, r.mlflow_run_id, texts, per, tags)
