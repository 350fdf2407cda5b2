"""Check the judge's citations against the head tree: a quote is evidence only if it is really there.

Pure but for reading the cited file. A citation is verified only when

- its quote is *substantial*: whole lines (at least MIN_LINE_CHARS
  non-whitespace characters), or a span bounded by word boundaries with at
  least MIN_SPAN_CHARS non-whitespace characters - so ``low`` never matches
  inside ``below``, and a quote of ``if`` or of blanks proves nothing;
- it occurs at the claimed lines, or - only when the claimed lines exist in
  the file - within WINDOW_LINES lines of them; the real location then
  replaces the judge's line numbers.

Anything else is unverified and says why (``Citation.detail``): lines past
the end of the file, a quote found only far from its claim, a removed line
(the prompt's ``-       | `` form), prompt line numbers that disagree with
where the code is, a file the judge was not shown. Quotes are compared with
whitespace collapsed and compatibility characters folded.

A quote is checked against the file as the judge was shown it: the head text
passed through ``prompt.neutralize``, which keeps every line where it is. A
faithful quote of what the judge read (a comment without the zero-width space
the change put in it, a phrase shown as ``[neutralized: ...]``) verifies; text
the judge was never shown (the phrase that was neutralized) does not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from checks.quality.context import MAX_FILE_BYTES, split_lines
from checks.quality.prompt import neutralize
from checks.report import Citation

# A whole-line quote needs this many non-whitespace characters: `)` or `}` proves nothing.
MIN_LINE_CHARS = 3
# A quote that is not whole lines needs this many (and word boundaries at both ends).
MIN_SPAN_CHARS = 10
# How far (in lines) a quote may sit from the claimed lines and still count, moved to where it is.
WINDOW_LINES = 3
# The prompt's numbered lines, which the judge may copy along with the code:
# "+    12 | code" (added), "      12 | code" (context).
# Possessive, so linear: ``\s*[+ ]?\s*`` split a line of spaces every way before failing (quadratic:
# a minute for a 64k-space line of the judge's quote).
_NUMBERED = re.compile(r"^\s*+\+?\s*+(\d++)\s*+\|(?: |$)")
# "-       | code": a removed line, which has no number because it is not at head.
_REMOVED = re.compile(r"^\s*-\s*\|")


@dataclass(frozen=True)
class Claim:
    """A citation as the judge gave it, before verification."""

    path: str
    start_line: int
    end_line: int
    quote: str


@dataclass(frozen=True)
class Occurrence:
    """Where a normalized quote occurs in a file, and whether it covers whole lines."""

    start_line: int
    end_line: int
    whole_lines: bool


def normalize(text: str) -> str:
    """Collapse every run of whitespace to one space (and fold compatibility characters)."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def nonspace(text: str) -> int:
    """Count the characters of ``text`` that are not whitespace."""
    return sum(not c.isspace() for c in text)


@dataclass(frozen=True)
class _Haystack:
    """A file's non-blank lines normalized and joined by single spaces, with line bookkeeping."""

    text: str
    line_of: tuple[int, ...]  # the 1-based line of each character
    starts: frozenset[int]  # offsets where a line begins
    ends: frozenset[int]  # offsets just past a line's end

    @classmethod
    def of(cls, lines: Sequence[str]) -> _Haystack:
        parts: list[str] = []
        line_of: list[int] = []
        starts: set[int] = set()
        ends: set[int] = set()
        at = 0
        for number, line in enumerate(lines, 1):
            norm = normalize(line)
            if not norm:
                continue
            if parts:
                parts.append(" ")
                line_of.append(number)
                at += 1
            starts.add(at)
            parts.append(norm)
            line_of.extend([number] * len(norm))
            at += len(norm)
            ends.add(at)
        return cls("".join(parts), tuple(line_of), frozenset(starts), frozenset(ends))

    def occurrences(self, wanted: str) -> list[Occurrence]:
        """Return every substantial, word-bounded occurrence of the normalized quote ``wanted``."""
        found: list[Occurrence] = []
        at = self.text.find(wanted) if wanted else -1
        while at != -1:
            end = at + len(wanted)
            whole = at in self.starts and end in self.ends
            left = at == 0 or not (_is_word(self.text[at - 1]) and _is_word(wanted[0]))
            right = end == len(self.text) or not (_is_word(self.text[end]) and _is_word(wanted[-1]))
            chars = nonspace(wanted)
            if (whole and chars >= MIN_LINE_CHARS) or (left and right and chars >= MIN_SPAN_CHARS):
                found.append(Occurrence(self.line_of[at], self.line_of[end - 1], whole))
            at = self.text.find(wanted, at + 1)
        return found


def locate(text: str, quote: str) -> list[Occurrence]:
    """Return each substantial occurrence of ``quote`` in ``text`` (whitespace-normalized)."""
    return _Haystack.of(split_lines(text)).occurrences(normalize(quote))


@dataclass(frozen=True)
class Quote:
    """A quote with the prompt's line prefixes taken off, and the line numbers they carried."""

    code: str
    numbers: tuple[int, ...]
    removed: bool


def strip_prefixes(quote: str) -> Quote:
    """Take the prompt's ``+    12 | `` prefixes off a quote, noting numbers and removed lines."""
    lines = quote.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    prefixed = [_NUMBERED.match(line) for line in lines]
    # Only a quote whose every non-blank line carries the prefix was copied from the prompt;
    # "x | y" in real code must not lose its left half.
    if not all(m is not None for m, line in zip(prefixed, lines, strict=True) if line.strip()):
        return Quote(quote, (), removed=any(_REMOVED.match(line) for line in lines))
    code = "\n".join(line[m.end() :] if m else line for m, line in zip(prefixed, lines, strict=True))
    return Quote(code, tuple(int(m.group(1)) for m in prefixed if m), removed=False)


def _at_claim(found: Sequence[Occurrence], claim: Claim) -> Occurrence | None:
    """Prefer an occurrence overlapping the claimed lines, else the nearest within the window."""
    start, end = claim.start_line, claim.end_line
    for o in found:
        if o.start_line <= end and start <= o.end_line:
            return o
    near = [o for o in found if o.start_line <= end + WINDOW_LINES and o.end_line >= start - WINDOW_LINES]
    return min(near, key=lambda o: (abs(o.start_line - start), o.start_line), default=None)


def judge_quote(text: str, claim: Claim) -> tuple[Occurrence | None, str]:
    """Locate ``claim`` in a file's ``text``: the occurrence that verifies it, or why none does."""
    lines = split_lines(text)
    if claim.end_line > len(lines):
        where = f"lines {claim.start_line}-{claim.end_line}"
        return None, f"{where} are past the end of the file ({len(lines)} lines)"
    haystack = _Haystack.of(lines)
    # The quote as given first: code such as "1 | FLAG" looks like a prompt prefix.
    as_given = _at_claim(haystack.occurrences(normalize(claim.quote)), claim)
    if as_given is not None:
        return as_given, ""
    quote = strip_prefixes(claim.quote)
    if quote.removed:
        return None, "the quote is a removed line, which is not at head"
    wanted = normalize(quote.code)
    if not wanted:
        return None, "the quote is empty or whitespace"
    found = haystack.occurrences(wanted)
    if not found:
        if wanted in haystack.text:
            return None, (
                f"the quote is too slight to prove anything (it needs whole lines of {MIN_LINE_CHARS}+ "
                f"non-blank characters, or {MIN_SPAN_CHARS}+ between word boundaries)"
            )
        return None, "the quote is not in the file"
    if quote.numbers:
        # The copied prefixes are a second claim of where the code is; both must hold.
        span = (min(quote.numbers), max(quote.numbers))
        found = [o for o in found if (o.start_line, o.end_line) == span]
        if not found:
            return None, "the quote's line numbers disagree with where that code is"
    chosen = _at_claim(found, claim)
    if chosen is None:
        where = ", ".join(f"{o.start_line}-{o.end_line}" for o in found[:3])
        return None, f"the quote is at lines {where}, not within {WINDOW_LINES} lines of the claim"
    return chosen, ""


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

    def unverified(why: str) -> Citation:
        return Citation(
            path=claim.path,
            start_line=claim.start_line,
            end_line=claim.end_line,
            quote=claim.quote,
            detail=why,
        )

    rel = safe_relpath(claim.path)
    if rel is None:
        return unverified("the path is outside the repository")
    if rel not in shown:
        return unverified("the judge was not shown this file")
    file = head_dir / rel
    root = head_dir.resolve()
    if file.is_symlink() or not file.is_file() or not file.resolve().is_relative_to(root):
        return unverified("no such file at head")
    if file.stat().st_size > MAX_FILE_BYTES:
        return unverified("the file is too large to check")
    # What the judge read (context.file_view), not the raw bytes: a change must not be able to
    # make an honest quote of its code fail by putting in what neutralization takes out.
    found, why = judge_quote(neutralize(file.read_bytes().decode("utf-8", "replace")), claim)
    if found is None:
        return unverified(why)
    return Citation(
        path=rel, start_line=found.start_line, end_line=found.end_line, quote=claim.quote, verified=True
    )


def verify_all(claims: Sequence[Claim], head_dir: Path, shown: Collection[str]) -> list[Citation]:
    """Verify each citation in order."""
    return [verify(c, head_dir, shown) for c in claims]
