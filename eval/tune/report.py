"""What ``ragrig tune`` returns (``TuneResult``: JSON via ``to_dict``) and its Markdown summary (the MLflow
parent run's artifact, the README's example)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CandidateRow:
    label: str
    overrides: dict[str, Any]
    index_key: str
    mean: float  # over every case
    fold_means: list[float]  # per fold
    chosen: int = 0  # folds whose selection picked it
    seconds: float = 0.0
    run_ids: list[str] = field(default_factory=list)


@dataclass
class TuneResult:
    name: str
    metric: str
    folds: int
    seed: int
    alpha: float
    cases: int
    testsets: list[str]
    candidates: list[CandidateRow]
    fold_sizes: list[int]
    picks: list[str]  # per fold: the label picked on the other folds
    estimate: float  # the held-out estimate (mean over folds of the pick's held-out score)
    estimate_ci: tuple[float, float]
    default_estimate: float
    default_ci: tuple[float, float]
    gain: float
    gain_ci: tuple[float, float]
    p: float
    significant: bool
    reason: str
    winner: str  # chosen on all cases
    winner_overrides: dict[str, Any]
    per_tag: dict[str, dict[str, float]]
    written: str | None = None
    winner_trained: dict[str, str] = field(default_factory=dict)  # an adapted winner's folders (eval/sweep/adapted.py)
    holdout: dict[str, Any] | None = None
    holdout_runs: list[dict[str, Any]] = field(default_factory=list)  # the honesty check, one per seed
    indexes: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    parent_run_id: str | None = None

    @property
    def verdict(self) -> str:
        if self.significant:
            return f"winner: {self.winner} ({self.reason})"
        return f"the default stands: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        return d


def _ci(ci: tuple[float, float] | list[float]) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def summary_markdown(r: TuneResult) -> str:
    m = r.metric
    lines = [f"### tune {r.name}: {len(r.candidates)} candidates, {r.cases} cases, {r.folds} folds (seed {r.seed}), "
             f"by {m}", "",
             f"- held-out estimate (nested CV): **{r.estimate:.4f}** {_ci(r.estimate_ci)}; the default on the same "
             f"folds: {r.default_estimate:.4f} {_ci(r.default_ci)}",
             f"- gain {r.gain:+.4f} {_ci(r.gain_ci)}, paired permutation p={r.p:.3g} (alpha {r.alpha})",
             f"- picks per fold: {', '.join(r.picks)}",
             f"- **{r.verdict}**" + (f"; written to `{r.written}`" if r.written else ""), "",
             "| candidate | " + " | ".join(f"fold {i + 1}" for i in range(r.folds)) + " | all cases | chosen |",
             "|---|" + "---:|" * (r.folds + 2)]
    for c in r.candidates:
        name = f"**{c.label}**" if c.label == r.winner else c.label
        lines.append(f"| {name} | " + " | ".join(f"{v:.4f}" for v in c.fold_means) + f" | {c.mean:.4f} | {c.chosen} |")
    lines += ["", "| tag | n | tuned (held out) | default | gain | p |", "|---|---:|---:|---:|---:|---:|"]
    for tag, v in r.per_tag.items():
        lines.append(f"| {tag} | {int(v['n'])} | {v['tuned']:.4f} | {v['default']:.4f} | {v['gain']:+.4f} | "
                     f"{v['p']:.3g} |")
    if r.holdout:
        h = r.holdout
        lines += ["", f"Honesty check: tuned on {h['tune_cases']} cases, {h['held_cases']} held out (fraction "
                  f"{h['fraction']}, seed {h['seed']}): the pick `{h['pick']}` scores {h['held_score']:.4f} on the "
                  f"held-out cases (default {h['held_default']:.4f}); its estimate {h['estimate']:.4f} "
                  f"{_ci(h['estimate_ci'])} {'contains' if h['within'] else 'does NOT contain'} it; its gain over the "
                  f"default there {h['held_gain']:+.4f}, the estimated gain {h['gain']:+.4f} {_ci(h['gain_ci'])} "
                  f"{'contains' if h['gain_within'] else 'does NOT contain'} it."]
    if len(r.holdout_runs) > 1:
        lines += ["", "| seed | pick | held-out score (default) | estimate [95 %] | held-out gain | estimated gain [95 %] |",
                  "|---:|---|---:|---:|---:|---:|"]
        for x in r.holdout_runs:
            lines.append(f"| {x['seed']} | {x['pick']} | {x['held_score']:.4f} ({x['held_default']:.4f}) | "
                         f"{x['estimate']:.4f} {_ci(x['estimate_ci'])} {'inside' if x['within'] else '**outside**'} | "
                         f"{x['held_gain']:+.4f} | {x['gain']:+.4f} {_ci(x['gain_ci'])} "
                         f"{'inside' if x['gain_within'] else '**outside**'} |")
    return "\n".join(lines)
