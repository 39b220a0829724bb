"""``ragrig testset check --write``: update a YAML test set in place from a check, keeping its comments, key order,
quoting and layout (ruamel.yaml's round trip; only the values that change are re-emitted).

Per expectation: a **moved** one gets its new ``doc`` / ``section``; every expectation whose evidence was found
gets its ``fingerprint`` (ok and moved: the text's now; **changed**: the fingerprint it should have, so the flag
stays until a person accepts the edit with ``--accept CASE``, which writes the new one); a **gone** one is left as
it is. The new text is validated as a test set before it atomically replaces the file, so a failed write never
leaves a half-written or invalid file.
"""

from __future__ import annotations

import copy
import io
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.eval.lifecycle.check import CheckReport, ExpectationCheck
from ragrig.eval.relevance import CHANGED, MOVED, OK
from ragrig.eval.testset import load_testset
from ragrig.retrieval.index.files import write_atomic

# (mapping, sequence, offset) indents to try, first the common "  - key" layout of our test sets
_INDENTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0))


@dataclass
class WriteSummary:
    path: str
    moved: int = 0  # expectations re-anchored
    fingerprinted: int = 0  # fingerprints added or updated
    accepted: int = 0  # changed expectations whose edit was accepted
    exact_layout: bool = True  # False: the file's layout could not be reproduced exactly (comments still kept)

    @property
    def changed_anything(self) -> bool:
        return bool(self.moved or self.fingerprinted or self.accepted)


def _yaml(mapping: int, sequence: int, offset: int) -> Any:
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long query
    y.indent(mapping=mapping, sequence=sequence, offset=offset)
    return y


def _dump(y: Any, data: Any) -> str:
    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()


def load_roundtrip(text: str) -> tuple[Any, Any, bool]:
    """(a ruamel loader/dumper, the document, whether dumping it unchanged gives back ``text`` exactly)."""
    first = None
    for indents in _INDENTS:
        y = _yaml(*indents)
        data = y.load(text)
        if first is None:
            first = (y, data)
        if _dump(y, data) == text:
            return y, data, True
    assert first is not None
    return first[0], first[1], False


def _like(old: Any, value: str) -> Any:
    """``value`` quoted the way ``old`` was (plain when it was plain: the dumper quotes what must be quoted)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if isinstance(old, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(value)
    if isinstance(old, SingleQuotedScalarString):
        return SingleQuotedScalarString(value)
    return value


def _set(cm: Any, key: str, value: Any) -> None:
    """Set ``cm[key]``; a new key goes last, and the comment lines that followed the old last key (they belong
    to what comes next in the file) move behind it, so they stay where they were."""
    if key in cm:
        cm[key] = value
        return
    last = list(cm)[-1] if len(cm) else None
    cm[key] = value
    tok = cm.ca.items.get(last) if last is not None else None
    if not tok or len(tok) < 3 or tok[2] is None:
        return
    comment = tok[2]
    nl = comment.value.find("\n")
    if nl == -1 or nl == len(comment.value) - 1:
        return  # only an end-of-line comment: it stays on its line
    head, rest = comment.value[: nl + 1], comment.value[nl + 1 :]
    following = copy.copy(comment)
    following.value = "\n" + rest
    if head.strip():
        comment.value = head
    else:
        tok[2] = None
        if not any(tok):
            del cm.ca.items[last]
    cm.ca.items[key] = [None, None, following, None]


def _fingerprint(value: str) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    return DoubleQuotedScalarString(value)  # always quoted: "1234…" or "1e10…" would read back as numbers


def _apply(node: Any, ec: ExpectationCheck, accept: bool, summary: WriteSummary) -> None:
    if node.get("doc") != ec.doc or node.get("section") != ec.section:
        raise InputError(f"{summary.path}: expectation {ec.doc!r} {ec.section!r} is not where the check found it "
                         "(the file changed since it was checked); run the check again")
    want: str | None = None
    if ec.status == MOVED:
        node["doc"] = _like(node["doc"], ec.now_doc or ec.doc)
        if ec.now_section is not None:
            node["section"] = _like(node.get("section"), ec.now_section)
        summary.moved += 1
        want = ec.fingerprint
    elif ec.status == OK:
        want = ec.fingerprint
    elif ec.status == CHANGED:
        want = ec.fingerprint if accept else ec.reference
        summary.accepted += int(accept)
    if want and node.get("fingerprint") != want:
        _set(node, "fingerprint", _fingerprint(want))
        summary.fingerprinted += 1


def write_check(path: str | Path, report: CheckReport, accept: Collection[str] = ()) -> WriteSummary:
    """Apply ``report`` (a check of the test set at ``path``) to the file; ``accept``: ids of changed cases whose
    edits a person reviewed (their new fingerprints are written)."""
    p = Path(path)
    unknown = sorted(set(accept) - {c.id for c in report.cases})
    if unknown:
        raise InputError(f"--accept: no case {', '.join(repr(u) for u in unknown)} in {p}")
    text = p.read_text(encoding="utf-8")
    y, data, exact = load_roundtrip(text)
    summary = WriteSummary(str(p), exact_layout=exact)
    nodes = {str(c.get("id")): c for c in data.get("cases") or []}
    for case in report.cases:
        node = nodes.get(case.id)
        if node is None or len(node.get("expect") or []) != len(case.expectations):
            raise InputError(f"{p}: case '{case.id}' is not as the check saw it (the file changed since it was "
                             "checked); run the check again")
        for ec in case.expectations:
            _apply(node["expect"][ec.index], ec, case.id in accept, summary)
    if not summary.changed_anything:
        return summary
    new = _dump(y, data)
    with tempfile.TemporaryDirectory() as tmp:  # the result must load as a test set before it replaces the file
        probe = Path(tmp) / p.name
        probe.write_text(new, encoding="utf-8")
        load_testset(probe, drafts=True)
    write_atomic(p, new.encode("utf-8"))
    return summary
