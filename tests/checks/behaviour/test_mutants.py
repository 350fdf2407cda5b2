# ruff: noqa: E501 - source under test reads best on one line
"""Mutants of changed lines (Cosmic Ray's operators), pure: no sandbox."""

from __future__ import annotations

import ast

import pytest

from checks.behaviour.mutants import Mutant, apply, describe, find, select

CODE = "def half(x):\n    # halve it\n    if x < 0:\n        return -1\n    return x // 2\n\n\ndef untouched(y):\n    return y + 1\n"


def test_mutants_sit_on_changed_lines_only() -> None:
    found = find(CODE, "calc.py", {3, 5})
    assert found
    assert {m.line for m in found} == {3, 5}
    assert not find(CODE, "calc.py", set())
    # A comment line has nothing to mutate.
    assert not find(CODE, "calc.py", {2})


def test_every_mutant_changes_its_line_and_nothing_else() -> None:
    for mutant in find(CODE, "calc.py", {3, 5}):
        mutated = apply(CODE, mutant)
        assert mutated is not None, mutant
        ast.parse(mutated)  # still Python
        before, after = CODE.splitlines(), mutated.splitlines()
        changed = [i + 1 for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
        assert changed == [mutant.line], (mutant, mutated)


def test_describe_shows_the_mutated_line() -> None:
    mutant = next(m for m in find(CODE, "calc.py", {5}) if m.operator == "ReplaceBinaryOperator_FloorDiv_Add")
    assert describe(CODE, mutant).mutated == "return x + 2"


@pytest.mark.parametrize("limit", [0, 1, 5, 20, 1000])
def test_selection_is_bounded_deterministic_and_spread_over_lines(limit: int) -> None:
    found = find(CODE, "calc.py", {3, 4, 5})
    picked = select(found, limit)
    assert len(picked) == min(limit, len(found))
    assert picked == select(list(reversed(found)), limit)
    if limit >= 3:
        assert {m.line for m in picked} == {3, 4, 5}
    if 5 <= limit < len(found):
        # Within a line, operator families take turns: a line's first picks are all different.
        families = {m.family for m in found if m.line == 5}
        first = [m.family for m in picked if m.line == 5][: len(families)]
        assert len(set(first)) == len(first)


def test_a_mutant_that_no_longer_fits_the_code_is_none() -> None:
    assert apply("x = 1\n", Mutant("a.py", 1, "NumberReplacer", 10_000, 0)) is None


def test_a_deep_expression_does_not_exhaust_the_recursion_limit() -> None:
    code = "x = " + "(" * 80 + "1" + ")" * 80 + " + 2\n"
    assert find(code, "deep.py", {1})
