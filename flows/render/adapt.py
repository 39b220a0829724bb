"""``ragrig adapt``'s terminal output and its Prefect artifact: the folder and how to use it, what training
took, and the comparison with the base (both rows, the paired test, the verdict)."""

from __future__ import annotations

from typing import Any

from ragrig.eval.sweep.spec import fmt_value
from ragrig.flows.render.console import console, line, short

ROW_METRICS = ("ndcg@10", "recall@10", "mrr@10", "recall@100")


def _use(result: dict[str, Any]) -> str:
    return f"--set embedding.model={fmt_value(result['model'])}"


def _training(result: dict[str, Any]) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in result["pair_counts"].items() if n)
    if result["reused"]:
        return f"reused (this corpus version and recipe were trained before): {result['pairs']} pairs ({kinds})"
    return (f"{result['pairs']} pairs ({kinds}), {result['steps']} steps on {result['device']} in "
            f"{result['train_seconds']:.1f} s ({result['pairs_per_s']:.1f} pairs/s; "
            f"loss {result['losses'][0]:.4f} -> {result['losses'][-1]:.4f})")


def _comparison_lines(cmp: dict[str, Any]) -> list[str]:
    if "skipped" in cmp:
        return [f"comparison skipped: {cmp['skipped']}"]
    out = []
    for r in cmp["rows"]:
        vals = "  ".join(f"{short(m)} {r['metrics'].get(m, float('nan')):.4f}" for m in ROW_METRICS)
        out.append(f"{r['label']:<8} {r['testset']}: {vals}")
    for m, t in cmp["tests"].items():
        out.append(f"{short(m)} over {cmp['cases']} cases: base {t['base']:.4f}, adapted {t['adapted']:.4f}, "
                   f"gain {t['gain']:+.4f}, permutation p={t['p']:.3g} "
                   f"({'significant' if t['significant'] or t['worse'] else 'not significant'} at {cmp['alpha']})")
    out.append(f"verdict ({short(cmp['metric'])}): the adapted model is {cmp['verdict']}")
    return out


def print_adapt(result: dict[str, Any]) -> None:
    console.print(line(("adapted model: ", "bold"), result["model"]))
    console.print(line("  ", _training(result)))
    console.print(line("  use it: ", (f"ragrig ingest {_use(result)}", "bold"), " (and the same --set for eval, "
                       "serve, tune)"))
    if result.get("compare") is not None:
        console.print(line(("adapted vs base", "bold")))
        for text in _comparison_lines(result["compare"]):
            console.print(line("  ", text))


def adapt_markdown(result: dict[str, Any]) -> str:
    lines = [f"# ragrig adapt\n\n- model: `{result['model']}`", f"- {_training(result)}", f"- use it: `{_use(result)}`"]
    if result.get("compare") is not None:
        lines += ["", "## Adapted vs base", ""] + [f"- {t}" for t in _comparison_lines(result["compare"])]
    return "\n".join(lines) + "\n"
