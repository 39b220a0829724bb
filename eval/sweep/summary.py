"""A sweep's summary for people: a Markdown table (the parent run's artifact and the flow's) and one plot per
swept parameter."""

from __future__ import annotations

from pathlib import Path

from ragrig.eval.metrics import PLOTTED, SWEEP_SUMMARY
from ragrig.eval.sweep.result import SweepResult, SweepRow, swept_params
from ragrig.eval.sweep.spec import fmt_value


def summary_markdown(result: SweepResult, metrics: tuple[str, ...] = SWEEP_SUMMARY) -> str:
    params = swept_params(result)
    lines = [f"### sweep {result.name}: {len(result.rows)} evaluations, best by {result.metric}", "",
             "| " + " | ".join([*params, "test set", *metrics]) + " |",
             "|" + "---|" * len(params) + "---|" + "---:|" * len(metrics)]
    best = result.best
    for r in result.rows:
        vals = [fmt_value(r.overrides.get(p, "")) if p in r.overrides else "" for p in params]
        ms = [f"{r.metrics.get(m, float('nan')):.4f}" for m in metrics]
        if r is best:
            ms = [f"**{m}**" for m in ms]
        lines.append("| " + " | ".join([*vals, r.testset, *ms]) + " |")
    if result.indexes:
        lines += ["", "| index | chunks | embedded | from cache | distinct texts | seconds |",
                  "|---|---:|---:|---:|---:|---:|"]
        for ix in result.indexes:
            lines.append(f"| {ix.index_key} | {ix.chunks} | {ix.embedded} | {ix.cached} | {ix.distinct_texts} | "
                         f"{ix.seconds:.1f} |")
    return "\n".join(lines)


def plot_metrics(result: SweepResult, out_dir: Path, metrics: tuple[str, ...] = PLOTTED) -> list[Path]:
    """One PNG per swept parameter: each metric against the parameter's values (mean over the other params)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for p in swept_params(result):
        groups: dict[str, list[SweepRow]] = {}
        for r in result.rows:
            if p in r.overrides:
                groups.setdefault(fmt_value(r.overrides[p]), []).append(r)
        if len(groups) < 2:
            continue
        xs = list(groups)
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in metrics:
            ys = [sum(r.metrics.get(m, 0.0) for r in groups[x]) / len(groups[x]) for x in xs]
            ax.plot(range(len(xs)), ys, marker="o", label=m)
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel(p)
        ax.set_ylabel("mean over the other swept values")
        ax.set_title(f"sweep {result.name}: {p}")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / f"sweep_{p.replace('.', '_')}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
