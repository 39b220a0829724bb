"""YAML test sets: load and validate (errors name file, line, case id and field), and import BEIR qrels.

A case marked ``draft: true`` (``ragrig testset draft`` writes them, with the ``reason`` it was made) is left out
of evaluation and the gate until a person removes the mark; ``load_testset(path, drafts=True)`` keeps it (what
``ragrig testset check`` reads). An expectation's ``fingerprint`` is the hash of its section's text when it was
last checked (``eval.lifecycle``): what tells a moved section from an edited one.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ragrig.configs.errors import InputError
from ragrig.configs.yamlio import load_yaml

KNOWN_TAGS = {"single-hop", "multi-hop", "comparison", "paraphrase", "exact-term"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


FINGERPRINT = r"^[0-9a-f]{16}$"


class Expectation(_Strict):
    doc: str = Field(min_length=1)
    section: str | None = None
    grade: int = Field(1, ge=1, le=10)
    fingerprint: str | None = Field(None, pattern=FINGERPRINT)


class Case(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
    query: str = Field(min_length=1)
    expect: list[Expectation] = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    max_hops: int | None = Field(None, ge=0, le=5)
    draft: bool = False
    reason: str | None = None  # why a draft was made (``ragrig testset draft``)


class TestSet(_Strict):
    __test__ = False  # not a pytest class
    name: str = Field(min_length=1)
    corpus: str | None = None
    description: str | None = None
    cases: list[Case] = Field(min_length=1)
    path: str | None = Field(None, exclude=True)
    sha256: str | None = Field(None, exclude=True)
    drafts_left_out: int = Field(0, exclude=True)  # draft cases dropped by load_testset(drafts=False)

    @property
    def tags(self) -> list[str]:
        return sorted({t for c in self.cases for t in c.tags})


def load_testset(path: str | Path, drafts: bool = False) -> TestSet:
    """A YAML test set, or a BEIR folder (queries.jsonl + qrels/test.tsv) imported on the fly. Cases marked
    ``draft: true`` are left out (counted in ``drafts_left_out``) unless ``drafts``; a file of drafts only is an
    error then, naming the file."""
    p = Path(path)
    if p.is_dir():
        ts = import_beir(p, "test")
        ts.path = str(p)
        ts.sha256 = hashlib.sha256((p / "qrels" / "test.tsv").read_bytes()).hexdigest()
        return ts
    located = load_yaml(p)
    data = located.data
    if not isinstance(data, dict):
        raise InputError(f"{p}: a test set must be a mapping with 'name' and 'cases'")
    try:
        ts = TestSet.model_validate(data)
    except ValidationError as exc:

        def case_of(loc: tuple[Any, ...]) -> str:
            if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
                cases = data.get("cases") or []
                cid = cases[loc[1]].get("id") if loc[1] < len(cases) and isinstance(cases[loc[1]], dict) else None
                return f" case '{cid}'" if cid else f" case #{loc[1] + 1}"
            return ""

        raise located.validation_error(exc, "invalid test set", unknown="unknown field", context=case_of) from None
    seen: dict[str, int] = {}
    for i, case in enumerate(ts.cases):
        if case.id in seen:
            raise InputError(
                f"{located.where(('cases', i, 'id'))}: duplicate case id '{case.id}' (first as case #{seen[case.id] + 1})"
            )
        seen[case.id] = i
    ts.path = str(p)
    ts.sha256 = hashlib.sha256(p.read_bytes()).hexdigest()
    if not drafts:
        kept = [c for c in ts.cases if not c.draft]
        ts.drafts_left_out = len(ts.cases) - len(kept)
        if not kept:
            raise InputError(f"{p}: all {len(ts.cases)} cases are drafts (draft: true); remove the mark from the "
                             "ones you keep (or evaluate them with --include-drafts)")
        ts.cases = kept
    return ts


def check_distinct(testsets: Sequence[TestSet]) -> None:
    """Test sets evaluated together are distinct files with distinct names (results are keyed by name): the same
    one given twice, or two sharing a name, is one line naming them, before any work."""
    by_path: dict[str, TestSet] = {}
    by_name: dict[str, TestSet] = {}
    for ts in testsets:
        where = str(Path(ts.path).resolve()) if ts.path else None
        if where is not None and where in by_path:
            raise InputError(f"test set {ts.path} is given twice; give each test set once")
        other = by_name.get(ts.name)
        if other is not None:
            raise InputError(f"test sets {other.path} and {ts.path} are both named '{ts.name}'; give each its own "
                             "name (results are kept by test-set name)")
        if where is not None:
            by_path[where] = ts
        by_name[ts.name] = ts


def only_cases(testsets: list[TestSet], ids: list[str]) -> list[TestSet]:
    """The test sets cut down to the cases ``ids`` names (``ragrig eval --case``); a test set left with none is
    dropped, and an id no test set has is an error naming it."""
    want = set(ids)
    found = {c.id for ts in testsets for c in ts.cases}
    unknown = [i for i in dict.fromkeys(ids) if i not in found]
    if unknown:
        names = ", ".join(ts.name for ts in testsets)
        raise InputError(f"--case {', '.join(repr(u) for u in unknown)}: no such case in {names}")
    out = []
    for ts in testsets:
        cases = [c for c in ts.cases if c.id in want]
        if cases:
            out.append(ts.model_copy(update={"cases": cases}))
    return out


def import_beir(folder: str | Path, split: str = "test") -> TestSet:
    """BEIR queries.jsonl + qrels/<split>.tsv -> a test set with ``doc:`` expectations (no section)."""
    root = Path(folder)
    qrels_path = root / "qrels" / f"{split}.tsv"
    queries_path = root / "queries.jsonl"
    for p in (qrels_path, queries_path):
        if not p.is_file():
            raise InputError(f"{p}: not found (expected a BEIR folder with queries.jsonl and qrels/{split}.tsv)")
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            row = [c.strip().strip("\r") for c in row]
            if not row or not any(row):
                continue
            if lineno == 1 and row[0] == "query-id":
                continue
            if len(row) < 3:
                raise InputError(f"{qrels_path}:{lineno}: expected query-id, corpus-id, score")
            score = _score(row[2], f"{qrels_path}:{lineno}")
            if score > 0:
                if not row[0] or not row[1]:
                    raise InputError(f"{qrels_path}:{lineno}: empty query-id or corpus-id")
                _case_id(row[0], f"{qrels_path}:{lineno}")
                qrels.setdefault(row[0], {})[row[1]] = score
    texts: dict[str, str] = {}
    with open(queries_path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                texts[str(rec["_id"])] = str(rec["text"])
            except (json.JSONDecodeError, KeyError) as exc:
                raise InputError(f"{queries_path}:{lineno}: bad query record ({exc})") from None
    missing = sorted(set(qrels) - set(texts))
    if missing:
        raise InputError(f"{qrels_path}: {len(missing)} query ids have no text in queries.jsonl (e.g. {missing[:3]})")
    cases = [
        Case(id=_case_id(qid, str(qrels_path)), query=texts[qid],
             expect=[Expectation(doc=d, grade=g) for d, g in sorted(docs.items())], tags=[split])
        for qid, docs in sorted(qrels.items(), key=lambda kv: (len(kv[0]), kv[0]))
    ]
    return TestSet(name=f"{root.name}-{split}", corpus=str(root), cases=cases)


_CASE_ID = re.compile(Case.model_fields["id"].metadata[0].pattern)


def _case_id(qid: str, where: str) -> str:
    """A BEIR query id as a case id ('q' before one that starts with a symbol), or an InputError naming it:
    case ids are letters, digits and . _ : - (no spaces or slashes), so reports and MLflow can name them."""
    cid = f"q{qid}" if not qid[:1].isalnum() else qid
    if not _CASE_ID.match(cid):
        raise InputError(f"{where}: query-id {qid!r} cannot be a test case id (letters, digits and . _ : - only, "
                         "at most 128; no spaces or slashes): rename it in queries.jsonl and the qrels")
    return cid


def _score(raw: str, where: str) -> int:
    """A qrels relevance score: a finite whole number; 0 or below means not relevant, above 10 is refused."""
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{where}: score {raw!r} is not a number") from None
    if not math.isfinite(value) or value != int(value):
        raise InputError(f"{where}: score {raw!r} is not a finite whole number (BEIR grades are 0, 1, 2, …)")
    if value > 10:
        raise InputError(f"{where}: score {raw!r} is above 10, the highest grade a test case takes")
    return int(value)


def dump_testset(ts: TestSet) -> str:
    data = ts.model_dump(exclude_none=True)
    for c in data["cases"]:
        if not c.get("draft"):
            c.pop("draft", None)
        for e in c["expect"]:
            if e.get("grade") == 1:
                e.pop("grade")
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
