"""GitHub-flavoured markdown pieces for untrusted text: escaped lines, code spans, tables, folded sections.

Pure: what the change controls (paths, test ids, messages) is made inert here,
for every output that writes markdown (the check run, the PR comment, the job summary).
"""

from __future__ import annotations

import html
import re

# Rows shown per table; the JSON report always has them all.
MAX_ROWS = 200

# Characters that change meaning anywhere in a line (emphasis, code, links, tables,
# strikethrough); `<`, `>` and `&` become entities. Block syntax (#, -, +, 1.) only
# matters at the start of a line, where `_LEADING` guards it.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_LEADING = re.compile(r"^(\d*)([#+=.)-])")


def escape(text: str, limit: int = 300) -> str:
    """Make untrusted text inert inside a markdown table cell or line."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # A leading "1." or "#" would start a list or a heading: escape its punctuation.
    return _LEADING.sub(r"\1\\\2", _SPECIAL.sub(r"\\\1", text))


def code(text: str, limit: int = 200, *, cell: bool = False) -> str:
    """Show untrusted text as inline code whatever backticks it holds, exactly as it is.

    Inside a code span markdown and HTML are not read (``<`` shows as ``<``: entities would
    show literally), so nothing is escaped but a line break, which would end a table row or
    a list item: it is shown as ``\\n``. Spaces are kept (a test id with two spaces must
    paste back into pytest; GitHub shows code spans with ``white-space: break-spaces``). In a
    table ``cell``, ``|`` is ``\\|``: GitHub splits cells before it reads code spans.
    """
    text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n").replace("\t", " ")
    text = text[:limit]
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    # A space each side keeps a leading or trailing backtick or space of the text itself
    # (CommonMark strips exactly one space from each end when both ends have one).
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


def details(summary: str, body: list[str]) -> str:
    """A folded section: ``summary`` always shown, ``body`` (markdown lines) on a click."""
    # <summary> is HTML, where markdown's backslash escapes would show: escape it as HTML.
    label = html.escape(" ".join(summary.split()), quote=False)
    return "\n".join([f"<details><summary>{label}</summary>", "", *body, "", "</details>"])


def table(header: list[str], rows: list[list[str]], total: int, max_rows: int = MAX_ROWS) -> list[str]:
    """A table of ``rows`` (cells made inert already), at most ``max_rows`` of ``total``."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows[:max_rows]]
    if total > max_rows:
        lines.append(f"\n… and {total - max_rows} more (see the JSON report)")
    return lines
