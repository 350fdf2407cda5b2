"""Which findings a change introduces: base and head compared so that moved code keeps its findings.

A finding's identity is (tool, rule, path at head, normalized source line,
normalized message), never its line number: a line shifted by an edit above
it keeps its identity. Identities are counted as a multiset, so a third copy
of a pre-existing problem is still one new finding. When head has more copies
than base, the copies on lines the change did not touch are matched first, so
the new ones are blamed on the lines the change wrote.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from checks.report import Finding

# (path, 1-based line) -> the text of that line, "" when there is none.
LineLookup = Callable[[str, int], str]
Key = tuple[str, str, str, str, str]

# Messages sometimes cite other line numbers ("redefinition of x from line 3"),
# which shift with the code; paths inside the sandbox differ between base and head.
_LINE_REF = re.compile(r"\b(line|lines|row)\s+\d+(?:\s*[-,:]\s*\d+)?", re.IGNORECASE)


def normalize_line(text: str) -> str:
    """Return ``text`` with every run of whitespace collapsed and the ends stripped."""
    return " ".join(text.split())


def normalize_message(message: str) -> str:
    """Return ``message`` without the line numbers it cites, whitespace collapsed."""
    return normalize_line(_LINE_REF.sub(r"\1 N", message))


def identity(finding: Finding, path: str, line_text: str) -> Key:
    """Return the line-shift-proof identity of ``finding`` as if it were at ``path``."""
    return (
        finding.tool,
        finding.rule,
        path,
        normalize_line(line_text),
        normalize_message(finding.message),
    )


@dataclass(frozen=True)
class Comparison:
    """Head findings with ``introduced`` set, and how many of them the base already had."""

    findings: tuple[Finding, ...]
    preexisting: int

    @property
    def introduced(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.introduced)


def compare(
    base: Iterable[Finding],
    head: Sequence[Finding],
    *,
    base_line: LineLookup,
    head_line: LineLookup,
    renames: Mapping[str, str] | None = None,
    changed_lines: Callable[[str], frozenset[int]] | None = None,
) -> Comparison:
    """Mark each head finding introduced unless the base has an unmatched finding of the same identity.

    ``base`` findings carry base paths; ``renames`` maps a base path to its
    head path so a renamed file keeps its pre-existing findings.
    ``changed_lines`` (head path -> changed lines) decides which duplicate
    copies count as new. The result keeps the order of ``head``.
    """
    renames = renames or {}
    pool = Counter(identity(f, renames.get(f.path, f.path), base_line(f.path, f.start_line)) for f in base)

    def touched(f: Finding) -> bool:
        if changed_lines is None:
            return False
        lines = changed_lines(f.path)
        return any(n in lines for n in range(f.start_line, max(f.end_line, f.start_line) + 1))

    # Untouched lines claim the base's copies first (stable sort keeps head order otherwise).
    order = sorted(range(len(head)), key=lambda i: touched(head[i]))
    introduced = [True] * len(head)
    for i in order:
        key = identity(head[i], head[i].path, head_line(head[i].path, head[i].start_line))
        if pool[key] > 0:
            pool[key] -= 1
            introduced[i] = False
    marked = tuple(f.model_copy(update={"introduced": new}) for f, new in zip(head, introduced, strict=True))
    return Comparison(marked, introduced.count(False))
