"""An evaluation report (``EvalReport.to_dict()``): per-tag and overall headline metrics as a terminal table
with latency, variance, ragas and missed cases; and the same table as Markdown for the flow's artifact."""

from __future__ import annotations

from typing import Any

from ragrig.eval.metrics import HEADLINE
from ragrig.flows.render.console import console, say, short, styled
from rich.table import Table


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def print_eval(result: dict[str, Any]) -> None:
    keys = [k for k in HEADLINE if k in result["overall"]]
    title = f"ragrig eval: {result['testset']} on {result['index']['key']}@{result['index']['version']}"
    table = Table(title=title, title_justify="left")
    table.add_column("tag", no_wrap=True)
    table.add_column("n", justify="right")
    for k in keys:
        table.add_column(short(k), justify="right", no_wrap=True)
    for tag, vals in result["per_tag"].items():
        table.add_row(tag, str(int(vals.get("n", 0))), *[_fmt(vals[k]) for k in keys])
    table.add_row(styled("overall", "bold"), str(len(result["per_query"])),
                  *[styled(_fmt(result["overall"][k]), "bold") for k in keys])
    console.print(table)
    lat = result.get("latency_ms", {})
    if lat:
        say(f"latency per query: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms "
            f"(repeats: {result.get('repeats', 1)})")
    if result.get("variance"):
        say("variance across repeats: " + ", ".join(f"{k}={v:.4f}" for k, v in result["variance"].items()))
    if result.get("ragas"):
        say("ragas: " + ", ".join(f"{k}={v:.3f}" for k, v in result["ragas"].items()))
    failed = [r for r in result["per_query"] if r["missed@10"]]
    if failed:
        say(f"{len(failed)} of {len(result['per_query'])} cases missed an expected section in the top 10, e.g.:")
        for r in failed[:5]:
            say(f"  - {r['id']}: missed {', '.join(r['missed@10'])}")
    if result.get("mlflow_run_id"):
        say(f"mlflow run: {result['mlflow_run_id']}")


def eval_markdown(result: dict[str, Any]) -> str:
    keys = [k for k in HEADLINE if k in result["overall"]]
    lines = [f"### {result['testset']} on `{result['index']['key']}@{result['index']['version']}`", "",
             "| tag | n | " + " | ".join(keys) + " |", "|---|---:|" + "---:|" * len(keys)]
    for tag, vals in result["per_tag"].items():
        lines.append(f"| {tag} | {int(vals.get('n', 0))} | " + " | ".join(_fmt(vals[k]) for k in keys) + " |")
    lines.append(f"| **overall** | {len(result['per_query'])} | "
                 + " | ".join(f"**{_fmt(result['overall'][k])}**" for k in keys) + " |")
    return "\n".join(lines)
