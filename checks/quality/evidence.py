"""Check the judge's citations against the head tree: a quote is evidence only if it is really there.

A quote is compared with whitespace collapsed. If it occurs in the cited
file but not at the cited lines, the real location replaces the judge's line
numbers; if it occurs nowhere (or the file does not exist, or was not shown
to the judge), the citation is unverified.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from checks.quality.context import MAX_FILE_BYTES, split_lines
from checks.report import Citation

# Shorter quotes ("x", "if") would be found almost anywhere and prove nothing.
MIN_QUOTE_CHARS = 3
# Prefixes the judge may copy from the prompt's numbered lines: "+    12 | ".
_LINE_PREFIX = re.compile(r"^\s*[+\- ]?\s*\d+\s*\|\s?", re.MULTILINE)


@dataclass(frozen=True)
class Claim:
    """A citation as the judge gave it, before verification."""

    path: str
    start_line: int
    end_line: int
    quote: str


def normalize(text: str) -> str:
    """Collapse every run of whitespace to one space (and fold compatibility characters)."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _normalized_with_lines(lines: Sequence[str]) -> tuple[str, list[int]]:
    """Normalize ``lines`` into one string and the 1-based line number of each of its characters."""
    chars: list[str] = []
    line_of: list[int] = []
    for number, line in enumerate(lines, 1):
        for token in unicodedata.normalize("NFKC", line).split():
            if chars:
                chars.append(" ")
                line_of.append(number)
            chars.extend(token)
            line_of.extend([number] * len(token))
    return "".join(chars), line_of


def locate(text: str, quote: str) -> list[tuple[int, int]]:
    """Return (start_line, end_line) of each occurrence of ``quote`` in ``text``, whitespace-normalized."""
    wanted = normalize(quote)
    if len(wanted) < MIN_QUOTE_CHARS:
        return []
    haystack, line_of = _normalized_with_lines(split_lines(text))
    found: list[tuple[int, int]] = []
    at = haystack.find(wanted)
    while at != -1:
        found.append((line_of[at], line_of[at + len(wanted) - 1]))
        at = haystack.find(wanted, at + 1)
    return found


def _best(found: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Prefer an occurrence overlapping the claimed lines, else the one nearest to them."""
    for a, b in found:
        if a <= end and start <= b:
            return a, b
    return min(found, key=lambda span: (abs(span[0] - start), span[0]))


def safe_relpath(path: str) -> str | None:
    """Return ``path`` as a clean relative POSIX path, or None if it is absolute or climbs out."""
    if not path or "\0" in path or path.startswith(("/", "\\")):
        return None
    parts = [p for p in PurePosixPath(path).parts if p != "."]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def verify(claim: Claim, head_dir: Path, shown: Collection[str]) -> Citation:
    """Check one citation against the head tree; only files in ``shown`` can be cited."""
    unverified = Citation(
        path=claim.path, start_line=claim.start_line, end_line=claim.end_line, quote=claim.quote
    )
    rel = safe_relpath(claim.path)
    if rel is None or rel not in shown:
        return unverified
    file = head_dir / rel
    root = head_dir.resolve()
    if file.is_symlink() or not file.is_file() or not file.resolve().is_relative_to(root):
        return unverified
    if file.stat().st_size > MAX_FILE_BYTES:
        return unverified
    text = file.read_bytes().decode("utf-8", "replace")
    found = locate(text, claim.quote)
    if not found:
        # The judge may have copied the prompt's "+   12 | " prefixes along with the code.
        found = locate(text, _LINE_PREFIX.sub("", claim.quote))
    if not found:
        return unverified
    start, end = _best(found, claim.start_line, claim.end_line)
    return Citation(path=rel, start_line=start, end_line=end, quote=claim.quote, verified=True)


def verify_all(claims: Sequence[Claim], head_dir: Path, shown: Collection[str]) -> list[Citation]:
    """Verify each citation in order."""
    return [verify(c, head_dir, shown) for c in claims]
