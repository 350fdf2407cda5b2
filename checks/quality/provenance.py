"""Who wrote a change, and whether the judge comes from the same model family. Pure: no I/O.

Judges rate text from their own family's models higher (self-preference). The
judge is never told who wrote a patch (checks.quality.prompt removes model
names from the PR's prose), but its family still is what it is: when the PR's
author, a commit's author or a ``Co-authored-by:`` trailer names a coding
agent of the judge model's family, the quality row says so.

*Signals* are plain strings - a login (``claude[bot]``), ``Name <email>`` of a
commit author or co-author - and are never shown to the judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Agents and models named by family. Agents whose model varies by user or over time
# (Copilot, Devin, Cursor, OpenHands) name no family: a guess would be a false alarm.
FAMILIES: dict[str, re.Pattern[str]] = {
    "Anthropic": re.compile(r"claude|anthropic"),
    "OpenAI": re.compile(r"\bgpt|chatgpt|codex|openai|\bo[1-9](?:-mini|-pro|-preview)?\b"),
    "Google": re.compile(r"gemini|google-labs-jules|\bjules\b|@google\.com"),
    "Meta": re.compile(r"\bllama"),
    "Mistral": re.compile(r"mistral|mixtral|codestral|devstral"),
    "DeepSeek": re.compile(r"deepseek"),
    "Qwen": re.compile(r"\bqwen"),
    "xAI": re.compile(r"\bgrok|\bx-?ai\b"),
}
# litellm provider prefixes that say the family themselves. `openai/` does not: it is also how
# any OpenAI-compatible endpoint (a local Llama, say) is addressed.
_PROVIDERS = {
    "anthropic": "Anthropic",
    "gemini": "Google",
    "vertex_ai": "Google",
    "mistral": "Mistral",
    "codestral": "Mistral",
    "deepseek": "DeepSeek",
    "xai": "xAI",
}
# A trailer's value: from the first non-space after the colon (past line breaks, as ever) to its
# line's last non-space. Linear on any message: ``^\s*`` tried from every line of a run of blank
# lines, and a lazy value before ``\s*$``, each rescanned a whitespace run from every position in
# it (quadratic: a message of 64k newlines held the GIL for 15 s).
_TRAILER = re.compile(r"^[^\S\n]*+co-authored-by:\s*+(\S(?:[^\n]*\S)?)", re.IGNORECASE | re.MULTILINE)
# A commit message's trailers are plain text the PR controls: keep each one short.
MAX_SIGNAL_CHARS = 200


def families_in(text: str) -> set[str]:
    """Return the model families a signal names (case-insensitive)."""
    lowered = text.lower()
    return {family for family, pattern in FAMILIES.items() if pattern.search(lowered)}


def model_family(model: str) -> str | None:
    """Return the family of a litellm model name, or None when it cannot be told.

    ``openai/gpt-4o-mini`` is OpenAI, ``anthropic/claude-sonnet-4`` Anthropic,
    ``vertex_ai/claude-...`` Anthropic (the name wins over the provider), and
    ``openai/my-local-model`` nobody: ``openai/`` only says how it is reached.
    """
    provider, _, name = model.rpartition("/")
    named = families_in(name)
    if len(named) == 1:
        return named.pop()
    if named:
        return None
    return _PROVIDERS.get(provider.split("/")[0].lower())


def co_authors(message: str) -> list[str]:
    """Return the ``Co-authored-by:`` values of a commit message."""
    return [value[:MAX_SIGNAL_CHARS] for value in _TRAILER.findall(message)]


def commit_signals(author: str, message: str) -> list[str]:
    """Return the signals of one commit: its author and every co-author."""
    return [s for s in (author[:MAX_SIGNAL_CHARS], *co_authors(message)) if s.strip()]


def self_preference(signals: Iterable[str], model: str) -> str:
    """Return the quality row's note when the change's authors share the judge's family, else ''."""
    family = model_family(model)
    if family is None:
        return ""
    naming = _unique(s for s in signals if family in families_in(s))
    if not naming:
        return ""
    return f"self-preference possible: the judge and the change's author are both {family} ({_list(naming)})"


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item.strip(), None)
    return list(seen)


def _list(items: Sequence[str], limit: int = 2) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
