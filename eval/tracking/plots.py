"""Plots people would rather look at than read: metric@k curves and per-tag bars (PNG, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from ragrig.eval.report import EvalReport  # noqa: E402


def recall_ndcg_png(report: EvalReport, path: Path) -> None:
    ks = report.k_values
    fig, ax = plt.subplots(figsize=(6, 4))
    for metric in ("recall", "ndcg", "precision"):
        ax.plot(ks, [report.overall[f"{metric}@{k}"] for k in ks], marker="o", label=f"{metric}@k")
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("k")
    ax.set_title(f"{report.testset} @ {report.index_version}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def per_tag_png(report: EvalReport, path: Path) -> None:
    tags = list(report.per_tag)
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(tags)), 4))
    width = 0.4
    xs = range(len(tags))
    ax.bar([x - width / 2 for x in xs], [report.per_tag[t].get("ndcg@10", 0) for t in tags], width, label="nDCG@10")
    ax.bar([x + width / 2 for x in xs], [report.per_tag[t].get("recall@10", 0) for t in tags], width, label="recall@10")
    ax.set_xticks(list(xs), [f"{t}\n(n={int(report.per_tag[t].get('n', 0))})" for t in tags])
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{report.testset}: per tag")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
