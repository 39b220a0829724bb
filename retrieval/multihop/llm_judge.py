"""The LLM hop judge: asks any OpenAI-compatible ``/chat/completions`` endpoint whether the passages can answer
the question and what is missing, as JSON of a fixed schema."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from ragrig.configs.errors import RagrigError
from ragrig.configs.models import JudgeConfig
from ragrig.configs.redact import redact, url_secrets
from ragrig.retrieval.http_json import post_json
from ragrig.retrieval.multihop.judges import Judgement, Missing, parse_missing
from ragrig.retrieval.results import Hit

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "can_answer": {"type": "boolean"},
        "reasoning": {"type": "string"},
        "missing": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["can_answer", "reasoning", "missing"],
    "additionalProperties": False,
}

SYSTEM_PROMPT = (
    "You decide whether retrieved rulebook passages are enough to answer a question. "
    "If not, list the rule titles (or short sub-queries) that are still missing. "
    "Prefer titles from the list of known headers. Answer only with JSON matching the schema."
)


class LLMJudge:
    """Asks an OpenAI-compatible ``/chat/completions`` endpoint for a judgement as JSON.

    Timeouts, connection errors and HTTP 5xx/429 are retried with exponential backoff; anything else,
    or a reply that is not valid JSON of the schema after the retries, is a RagrigError that says so.
    The API key is read from the environment variable named in the config, never from a file.
    """

    def __init__(self, cfg: JudgeConfig, header_titles: Callable[[str], Sequence[str]] | None = None) -> None:
        self.cfg = cfg
        self.header_titles = header_titles  # callable(query) -> list[str] of titles relevant to the query

    def _prompt(self, query: str, hits: Sequence[Hit]) -> list[dict[str, str]]:
        budget = self.cfg.max_context_chars
        blocks = []
        for i, h in enumerate(hits, 1):
            block = f"[{i}] {h.header}\n{h.text.strip()}"
            if len(block) > budget:
                block = block[: max(0, budget)]
            budget -= len(block)
            blocks.append(block)
            if budget <= 0:
                break
        titles = list(self.header_titles(query))[:40] if self.header_titles else []
        user = (
            f"Question: {query}\n\nPassages:\n" + "\n\n".join(blocks)
            + ("\n\nKnown headers relevant to the question: " + "; ".join(titles) if titles else "")
            + '\n\nReply as JSON: {"can_answer": bool, "reasoning": str, "missing": [str]}'
        )
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def judge(self, query: str, hits: Sequence[Hit]) -> Judgement:
        data = chat_json(self.cfg, self._prompt(query, hits), JUDGE_SCHEMA, "hop_judgement", who="LLM judge")
        if not isinstance(data.get("can_answer"), bool):
            raise RagrigError(redact(
                f"LLM judge: the JSON does not match the schema (need can_answer: bool): {str(data)[:200]}",
                judge_secrets(self.cfg)))
        missing = parse_missing(data.get("missing") or [])
        return Judgement(bool(data["can_answer"]), str(data.get("reasoning", "")), [Missing(m) for m in missing])


def judge_secrets(cfg: JudgeConfig) -> list[str]:
    """What must never be shown of this endpoint's settings: the API key and the credentials in ``base_url``."""
    key = os.environ.get(cfg.api_key_env, "")
    return [k for k in (key, *url_secrets(cfg.base_url)) if k]


def post_chat(cfg: JudgeConfig, body: dict[str, Any], who: str = "LLM judge") -> dict[str, Any]:
    """POST ``body`` to ``<base_url>/chat/completions`` (``retrieval/http_json.py``: retried with backoff, every
    error one RagrigError naming ``who`` and the URL, with the API key and the URL's credentials masked)."""
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    return post_json(url, body, key=os.environ.get(cfg.api_key_env, ""), timeout_s=cfg.timeout_s,
                     retries=cfg.retries, backoff_s=cfg.backoff_s, where=f"{who} at {url}")


def chat_json(cfg: JudgeConfig, messages: list[dict[str, str]], schema: dict[str, Any], name: str,
              who: str = "LLM judge") -> dict[str, Any]:
    """One chat completion at temperature 0 that must answer with a JSON object of ``schema`` (what the judge
    and ``ragrig testset draft --llm`` share); a reply of another shape is a RagrigError naming ``who``."""
    body = {
        "model": cfg.model,
        "messages": messages,
        "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}},
    }
    reply = post_chat(cfg, body, who)
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise RagrigError(redact(f"{who}: unexpected reply shape: {str(reply)[:200]}",
                                 judge_secrets(cfg))) from None
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        raise RagrigError(redact(f"{who}: the model's answer is not valid JSON: {str(content)[:200]!r}",
                                 judge_secrets(cfg))) from None
    if not isinstance(data, dict):
        raise RagrigError(redact(f"{who}: the JSON does not match the schema (not an object): {str(data)[:200]}",
                                 judge_secrets(cfg)))
    return data
