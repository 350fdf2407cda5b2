"""Collect what the judge may see of a change, and clip it to a token budget.

The judge sees the diff of every changed file that is not one of the
change's tests, and the full text at head of the functions and classes the
change touches. The change's tests (``checks.testinfra.changetests``: where
base's runner looks for tests, and imported by none of the change's code)
are dropped before their text is read; the hidden suites are never part of a
workspace at all.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.quality.prompt import FileView, neutralize, render_change, render_file
from checks.testinfra.changetests import change_tests
from checks.workspace import ChangedFile, Workspace
from sandbox.pyparse import parse_python

# Files larger than this are listed as omitted without being read.
MAX_FILE_BYTES = 1_000_000
# Lines of unchanged context around each change in the diff.
CONTEXT_LINES = 3
# The task (title, body, issue) may use at most this share of the prompt budget.
TASK_SHARE = 4

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Context:
    """The clipped material for one change: rendered task, file views that fit, and what did not."""

    task: str
    files: tuple[FileView, ...]
    omitted: tuple[str, ...]
    # Hash of the head bytes of the shown files: citations are verified against them.
    sources: str = ""

    def render(self, files: Sequence[FileView] | None = None) -> str:
        """Render the fenced material for ``files`` (default: every shown file)."""
        chosen = self.files if files is None else files
        return render_change(self.task, [render_file(v) for v in chosen], self.omitted)

    @property
    def digest(self) -> str:
        """Hash of everything the judge is shown (a cache-key part)."""
        material = self.render().encode("utf-8", "surrogatepass")
        return hashlib.sha256(material + b"\0" + self.sources.encode()).hexdigest()


def _read(root: Path, rel: str) -> str | None:
    """Return a file's text at ``root``, None when absent, binary, too large or outside the tree."""
    path = root / rel
    if path.is_symlink():
        # Show a link as its target text: following it could leave the tree.
        return os.readlink(path)
    if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
        return None
    if path.stat().st_size > MAX_FILE_BYTES:
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_lines(text: str) -> list[str]:
    """Split text into lines the way Python's parser counts them (\\n, \\r\\n, \\r)."""
    if not text:
        return []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def numbered_diff(old: Sequence[str], new: Sequence[str], context: int = CONTEXT_LINES) -> str:
    """Render a diff whose lines carry their head line numbers, so the judge can cite them."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(f"@@ base {first[1] + 1}-{last[2]} head {first[3] + 1}-{last[4]} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [f"  {k + 1:>5} | {new[k]}" for k in range(j1, j2)]
                continue
            out += [f"- {'':>5} | {old[k]}" for k in range(i1, i2)]
            out += [f"+ {k + 1:>5} | {new[k]}" for k in range(j1, j2)]
    return "\n".join(out)


def changed_definitions(source: str, lines: frozenset[int]) -> list[tuple[int, int]]:
    """Return (start, end) line spans of the innermost functions/classes that contain a changed line."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    spans: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.end_lineno:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((start, node.end_lineno))
    chosen: set[tuple[int, int]] = set()
    for line in lines:
        holding = [s for s in spans if s[0] <= line <= s[1]]
        if holding:
            chosen.add(min(holding, key=lambda s: s[1] - s[0]))
    # A span inside another chosen span is already shown in full.
    outer = [s for s in chosen if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in chosen)]
    return sorted(outer)


def _definitions_text(head: list[str], spans: list[tuple[int, int]]) -> str:
    blocks = ["\n".join(f"  {n:>5} | {head[n - 1]}" for n in range(a, b + 1)) for a, b in spans]
    return "\n...\n".join(blocks)


def file_view(ws: Workspace, change: ChangedFile) -> FileView | None:
    """Build the judge's view of one changed file, or None when it cannot be shown as text."""
    if change.binary:
        return None
    head_text = "" if change.status == "deleted" else _read(ws.head_dir, change.path)
    base_rel = change.old_path or change.path
    base_text = "" if change.status == "added" else _read(ws.base_dir, base_rel)
    if head_text is None or base_text is None:
        return None
    head = split_lines(neutralize(head_text))
    base = split_lines(neutralize(base_text))
    diff = numbered_diff(base, head)
    definitions = ""
    if change.path.endswith(".py") and change.status not in ("added", "deleted"):
        # Parse the original text: neutralization may change code, not line numbers.
        spans = changed_definitions(head_text, change.lines)
        definitions = _definitions_text(head, spans) if spans else ""
    old = change.old_path if change.status in ("renamed", "copied") else None
    return FileView(change.path, change.status, diff, definitions, old)


def collect(ws: Workspace, task_text: str, *, budget: int, reserve: int, count: Counter) -> Context:
    """Gather the views of every changed file but the change's tests and clip them to ``budget`` tokens.

    Clipping is deterministic: the task is cut to a quarter of the budget;
    then files are taken in path order, each with its changed definitions if
    that fits, else its diff alone if that fits, else it is listed as omitted.
    """
    task = clip_text(task_text, max(budget // TASK_SHARE, 1), count)
    available = budget - reserve - count(task)
    shown: list[FileView] = []
    omitted: list[str] = []
    tests = change_tests(ws)
    for change in sorted(ws.changed, key=lambda c: c.path):
        if change.path in tests:
            continue
        view = file_view(ws, change)
        if view is None:
            omitted.append(change.path)
            continue
        cost = count(render_file(view))
        if cost > available and view.definitions:
            view = FileView(view.path, view.status, view.diff, "", view.old_path)
            cost = count(render_file(view))
        if cost > available:
            omitted.append(change.path)
            continue
        shown.append(view)
        available -= cost
    return Context(task, tuple(shown), tuple(omitted), _sources_digest(ws.head_dir, shown))


def _sources_digest(head_dir: Path, views: Sequence[FileView]) -> str:
    digest = hashlib.sha256()
    for view in views:
        path = head_dir / view.path
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        digest.update(view.path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def clip_text(text: str, limit: int, count: Counter) -> str:
    """Cut ``text`` to at most ``limit`` tokens (by characters, deterministically), marking the cut."""
    if count(text) <= limit:
        return text
    marker = "\n[... clipped to fit the size budget]"
    keep = len(text)
    while keep > 0:
        keep = keep * limit // max(count(text[:keep] + marker), 1) - 1
        if keep > 0 and count(text[:keep] + marker) <= limit:
            return text[:keep] + marker
    return marker.strip()
