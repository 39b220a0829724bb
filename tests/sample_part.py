"""Part of the sample corpus and the cases of its test set that this part answers: for the end-to-end tests whose
subject is the machinery around an ingest or an evaluation (a cluster, a sweep's executors, adapt's recipe), not
the sample's quality (the deployment test ingests three Markdown files of its own). Its teams/ folder (Markdown,
HTML and a Word file, nested) and faq.md are 7 of the sample's 29 documents with every format in it; the cases kept
are the test set's own, unedited, whose every expected document is in the part (11 of 100). The whole sample cost
~40 s of 2 cores per ingest here, for no path more."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SAMPLE, TESTSET = ROOT / "datasets" / "sample", ROOT / "datasets" / "testsets" / "sample.yaml"
PARTS = ("teams", "faq.md")
NAME = "sample-part"


def make_sample_part(dest: Path) -> tuple[Path, Path]:
    """Write the part's corpus under ``dest/corpus`` and its test set to ``dest/sample-part.yaml``."""
    corpus = dest / "corpus"
    corpus.mkdir(parents=True)
    for name in PARTS:
        src = SAMPLE / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, corpus / name)
    data = yaml.safe_load(TESTSET.read_text(encoding="utf-8"))
    inside = tuple(p if p.endswith(".md") else f"{p}/" for p in PARTS)
    cases = [c for c in data["cases"] if c.get("expect") and all(e["doc"].startswith(inside) for e in c["expect"])]
    testset = dest / f"{NAME}.yaml"
    testset.write_text(yaml.safe_dump({"name": NAME, "cases": cases}, sort_keys=False), encoding="utf-8")
    return corpus, testset
