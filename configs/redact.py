"""Credentials never reach a user-visible text: an error, a log line, a JSON field, an MLflow param or a served
answer. ``redact`` masks the given secrets (an API key read from the environment, a password found in a URL) and
the user-info part of every URL (``http://user:KEY@host`` -> ``http://***@host``) as ``***``.

Applied where a text that may hold a credential is made (the LLM client's errors, MLflow's scrubbing), so
everything built from that text later (warnings, ``hops[].error``, ``serve`` answers) is already clean."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

MASK = "***"
# scheme://userinfo@ : the userinfo has no '/', '@' or whitespace
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/@\s\"'<>]+@")


def url_credentials(text: str) -> str:
    """``text`` with the user-info of every URL in it replaced by ``***``."""
    if "://" not in text:  # no URL (most texts): the pattern's scan of every word is ~95 % of a sweep child's scrub
        return text
    return _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)


def url_secrets(url: str) -> list[str]:
    """The credentials written into ``url`` (its password, or a user name given without one: a token), raw and
    percent-decoded, so an echo of either elsewhere in a text is masked too."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    out = []
    for s in (password,) if password else (user,) if user else ():
        if s:
            out += [s, unquote(s)]
    return [s for s in dict.fromkeys(out) if len(s) >= 3]


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(``url`` without its user-info, the (user, password) it held or None): the credentials go to HTTP basic
    auth, the bare URL everywhere else (a model id, a message), so no key rides along with the endpoint's name.
    A URL without user-info comes back unchanged, character for character."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return url, None
    if "@" not in parts.netloc:
        return url, None
    bare = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    return bare, (unquote(user or ""), unquote(password or ""))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret (longest first) and every URL's user-info masked."""
    for s in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(s, MASK)
    return url_credentials(text)
