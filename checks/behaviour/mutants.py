"""Mutants of the change's own lines, made on the host with Cosmic Ray's operators.

Why Cosmic Ray (cosmic-ray on PyPI, maintained, Apache-2.0): its operators
are plain classes over a parso tree, each reporting the exact positions it
can mutate, so one operator can be applied at one position of one changed
line and the file printed back unchanged everywhere else (parso round-trips
source exactly). mutmut 3 generates every mutant of a file at once behind a
runtime switch inside the code under test, which does not fit a sandbox
that must run one mutant per fresh tree.

Only operators that need no configuration are used, and only positions on
lines the change added or modified. A mutant may be *equivalent* (behave
exactly like the original, e.g. ``x * 1`` for ``x // 1``): no suite can
kill it, so a score below 100% does not prove a weak suite; the surviving
mutants are listed for a maintainer to judge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

MUTATED_LINE_CHARS = 120


@dataclass(frozen=True)
class Mutant:
    """One operator applied at one position of one changed line."""

    path: str
    line: int
    operator: str
    node: int  # the node's index in the parse tree's pre-order walk
    index: int  # the position's index among the operator's positions in that node
    mutated: str = ""  # the mutated line, for the report

    @property
    def family(self) -> str:
        return self.operator.split("_", 1)[0]


def _operators() -> dict[str, Any]:
    from cosmic_ray.operators.provider import OperatorProvider  # type: ignore[import-untyped]

    provider = OperatorProvider()
    found: dict[str, Any] = {}
    for name in provider:
        cls = provider[name]
        try:
            found[name] = cls()
        except TypeError:  # operators that need arguments (VariableReplacer, VariableInserter)
            continue
    return found


def _parse(code: str) -> Any:
    import parso

    parse: Any = parso.parse  # untyped: parso ships no annotations for it
    return parse(code)


def _nodes(code: str) -> list[Any]:
    tree = _parse(code)
    out: list[Any] = []
    stack = [tree]
    while stack:  # pre-order without recursion: a deep expression cannot exhaust the stack
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(getattr(node, "children", [])))
    return out


def find(code: str, path: str, lines: Collection[int]) -> list[Mutant]:
    """Return every mutant of ``code`` whose mutated position starts on one of ``lines``."""
    wanted = frozenset(lines)
    if not wanted:
        return []
    operators = _operators()
    out: list[Mutant] = []
    for number, node in enumerate(_nodes(code)):
        first, last = node.start_pos[0], node.end_pos[0]
        if not any(first <= line <= last for line in wanted):
            continue
        for name, operator in operators.items():
            try:
                positions = list(operator.mutation_positions(node))
            except Exception:  # noqa: S112 - an operator that cannot read this node has no mutant here
                continue
            for index, (start, _) in enumerate(positions):
                if start[0] in wanted:
                    out.append(Mutant(path, start[0], name, number, index))
    return out


def select(found: Sequence[Mutant], limit: int) -> list[Mutant]:
    """Pick at most ``limit`` mutants, spread over lines first and operator families second.

    Deterministic: the same change gives the same mutants, so a rerun
    measures the same thing.
    """
    by_line: dict[tuple[str, int], list[Mutant]] = {}
    for mutant in sorted(found, key=lambda m: (m.path, m.line, m.family, m.operator, m.node, m.index)):
        by_line.setdefault((mutant.path, mutant.line), []).append(mutant)
    queues = [_families_round_robin(group) for group in by_line.values()]
    picked: list[Mutant] = []
    while queues and len(picked) < limit:
        still = []
        for queue in queues:
            nxt = next(queue, None)
            if nxt is None:
                continue
            picked.append(nxt)
            still.append(queue)
            if len(picked) == limit:
                break
        queues = still
    return picked


def _families_round_robin(group: list[Mutant]) -> Iterator[Mutant]:
    families: dict[str, list[Mutant]] = {}
    for mutant in group:
        families.setdefault(mutant.family, []).append(mutant)
    lists = list(families.values())
    depth = 0
    while any(depth < len(items) for items in lists):
        for items in lists:
            if depth < len(items):
                yield items[depth]
        depth += 1


def apply(code: str, mutant: Mutant) -> str | None:
    """Return ``code`` with ``mutant`` applied, or None when the operator finds nothing to change."""
    operator = _operators()[mutant.operator]
    tree = _parse(code)
    nodes = _nodes_with_parents(tree)
    if mutant.node >= len(nodes):
        return None
    node, parent, slot = nodes[mutant.node]
    with contextlib.suppress(Exception):
        replacement = operator.mutate(node, mutant.index)
        if replacement is None:
            if parent is None:
                return None
            del parent.children[slot]
        elif replacement is not node and parent is not None:
            parent.children[slot] = replacement
            replacement.parent = parent
        mutated: str = tree.get_code()
        return mutated if mutated != code else None
    return None


def _nodes_with_parents(tree: Any) -> list[tuple[Any, Any, int]]:
    out: list[tuple[Any, Any, int]] = []
    stack: list[tuple[Any, Any, int]] = [(tree, None, 0)]
    while stack:
        node, parent, slot = stack.pop()
        out.append((node, parent, slot))
        children = getattr(node, "children", [])
        stack.extend((child, node, i) for i, child in reversed(list(enumerate(children))))
    return out


def describe(code: str, mutant: Mutant) -> Mutant:
    """Return ``mutant`` with the text of its mutated line, for the report."""
    mutated = apply(code, mutant)
    if mutated is None:
        return mutant
    lines = mutated.splitlines()
    text = lines[mutant.line - 1].strip() if mutant.line <= len(lines) else ""
    return replace(mutant, mutated=text[:MUTATED_LINE_CHARS])
