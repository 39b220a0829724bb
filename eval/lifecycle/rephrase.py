"""``ragrig testset draft --llm``: rewrite each draft's query the way a user would ask it, through the
OpenAI-compatible chat endpoint the LLM hop judge already uses (``retrieval.judge``: base URL, model, timeouts,
retries; the key only from the environment variable it names). Off by default: drafting itself is offline.

The draft keeps its expectations, tags and mark; its ``reason`` records the model and the original query, so a
reviewer sees both. A reply that is not JSON of the schema, or an empty query, is an error naming the case.
"""

from __future__ import annotations

from ragrig.configs.errors import RagrigError
from ragrig.configs.models import JudgeConfig
from ragrig.eval.testset import Case, TestSet
from ragrig.retrieval.multihop.llm_judge import chat_json

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}
SYSTEM_PROMPT = (
    "You rewrite questions for a retrieval test set. Given a draft question and the titles of the sections that "
    "answer it, write the question the way a real user of this documentation would ask it: natural wording, no "
    "section titles copied verbatim unless a user would type them, the same meaning, no answer. Reply only with "
    'JSON: {"query": "..."}.'
)


def _messages(case: Case) -> list[dict[str, str]]:
    sections = "; ".join(e.section or e.doc for e in case.expect)
    kind = ", ".join(case.tags)
    user = f"Draft question: {case.query}\nAnswered by the sections: {sections}\nKind of question: {kind}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def rephrase_case(case: Case, cfg: JudgeConfig) -> Case:
    data = chat_json(cfg, _messages(case), SCHEMA, "draft_query", who=f"draft rephrasing of case '{case.id}'")
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise RagrigError(f"draft rephrasing of case '{case.id}': the reply has no query: {str(data)[:200]}")
    reason = f"{case.reason or ''}; phrased by {cfg.model} from {case.query!r}".lstrip("; ")
    return case.model_copy(update={"query": " ".join(query.split()), "reason": reason})


def rephrase_drafts(ts: TestSet, cfg: JudgeConfig) -> TestSet:
    """Every draft case of ``ts`` with its query rewritten (one request per case, in order)."""
    return ts.model_copy(update={"cases": [rephrase_case(c, cfg) if c.draft else c for c in ts.cases]})
