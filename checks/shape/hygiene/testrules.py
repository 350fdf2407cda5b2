"""The hygiene rules on changed test files: tests deleted, checking less, or checking nothing.

A base test is matched to its head version (same file, moved or renamed:
`checks.shape.hygiene.testcode.match_tests`) before anything is compared, so
reorganising tests is not reported; what a kept test checks is compared
with what it checked.
"""

from __future__ import annotations

import difflib

from checks.shape.hygiene.assertions import Expectation, compare
from checks.shape.hygiene.examination import Examination, Side, Source
from checks.shape.hygiene.testcode import (
    ChangedTestModule,
    CollectedHelper,
    KeptTest,
    LostTest,
    ModuleFacts,
    match_tests,
)
from checks.testinfra.files import is_test_module


def check_tests(sides: list[Side], exam: Examination) -> None:
    """Report deleted tests, tests and helpers that check less, tautologies, and changed expectations."""
    files = []
    for side in sides:
        if not side.parsed:
            continue  # a file that does not compile is the loads gate's finding
        base, head = _facts(side.base_path, side.base), _facts(side.head_path, side.head)
        if base is None and head is None:
            continue
        files.append(
            ChangedTestModule(
                side.base_path, side.head_path, base.tests if base else {}, head.tests if head else {}
            )
        )
        if base is not None and head is not None and side.head_path is not None:
            _helpers(side.head_path, base.helpers, head.helpers, side.change.lines, exam)
        elif head is not None and side.head_path is not None:
            _helpers(side.head_path, {}, head.helpers, side.change.lines, exam)
    kept, lost = match_tests(files)
    _lost(lost, sides, exam)
    for k in kept:
        _kept(k, exam)
    # Tests no base test became: new, so any tautology on a changed line is new too.
    matched = {(k.head_path, k.head.qualname) for k in kept}
    changed = {side.head_path: side.change.lines for side in sides if side.head_path is not None}
    for f in files:
        for test in f.head.values():
            if f.head_path is not None and (f.head_path, test.qualname) not in matched:
                lines = changed.get(f.head_path, frozenset())
                for e in test.expectations:
                    if e.tautology and e.line in lines:
                        _tautology(exam, f.head_path, "test " + test.qualname, e)


def _facts(path: str | None, src: Source | None) -> ModuleFacts | None:
    if path is None or src is None or src.facts is None or not is_test_module(path):
        return None
    return src.facts


def _lost(lost: list[LostTest], sides: list[Side], exam: Examination) -> None:
    texts = {(side.base_path, side.head_path): side for side in sides}
    for gone in lost:
        where = f"{gone.base_path}:{gone.test.line}"
        pair = texts.get((gone.base_path, gone.head_path))
        if gone.head_path is None or pair is None or pair.base is None or pair.head is None:
            # Nothing at head to point at: the summary lists it, no annotation.
            message = f"deletes test {gone.test.qualname} ({where}) along with its file"
            exam.add("test-deleted", gone.head_path or gone.base_path, (0, 0), message)
            continue
        line = line_after_removal(pair.base.text, pair.head.text, gone.test.line)
        message = f"deletes test {gone.test.qualname} (was {where})"
        exam.add("test-deleted", gone.head_path, (line, line), message)


def _kept(k: KeptTest, exam: Examination) -> None:
    span = (k.head.line, k.head.end_line)
    if k.head.asserts < k.base.asserts:
        exam.add(
            "assert-weakened",
            k.head_path,
            span,
            (
                f"test {k.head.qualname} checks less: {k.base.asserts} assertion(s) at base, "
                f"{k.head.asserts} now (assert, pytest.raises/warns, assert* calls)"
            ),
        )
    if k.base.cases is not None and k.head.cases is not None and k.head.cases < k.base.cases:
        exam.add(
            "cases-removed",
            k.head_path,
            span,
            (
                f"test {k.head.qualname} runs fewer parametrized cases: "
                f"{k.base.cases} at base, {k.head.cases} now"
            ),
        )
    _contents(exam, k.head_path, f"test {k.head.qualname}", k.base.expectations, k.head.expectations)


def _helpers(
    path: str,
    base: dict[str, CollectedHelper],
    head: dict[str, CollectedHelper],
    changed: frozenset[int],
    exam: Examination,
) -> None:
    for name, now in head.items():
        was = base.get(name)
        if was is None:
            for e in now.expectations:
                if e.tautology and e.line in changed:
                    _tautology(exam, path, f"test helper {name}", e)
            continue
        if now.asserts < was.asserts:
            exam.add(
                "helper-weakened",
                path,
                (now.line, now.end_line),
                (
                    f"test helper {name} checks less: {was.asserts} check(s) at base, {now.asserts} now; "
                    "every test that calls it checks less too"
                ),
            )
        _contents(exam, path, f"test helper {name}", was.expectations, now.expectations)


def _contents(
    exam: Examination, path: str, what: str, base: tuple[Expectation, ...], head: tuple[Expectation, ...]
) -> None:
    changed, tautologies = compare(base, head)
    for c in changed:
        exam.add(
            "expected-changed",
            path,
            (c.line, c.line),
            (
                f"{what} expects something else now: `{c.before}` at base, `{c.after}` now; "
                "changing what a test expects can make any code pass"
            ),
        )
    for e in tautologies:
        _tautology(exam, path, what, e)


def _tautology(exam: Examination, path: str, what: str, e: Expectation) -> None:
    exam.add(
        "assert-tautology",
        path,
        (e.line, e.line),
        (
            f"{what} checks `{e.text}`, which cannot fail: both sides are the same expression, "
            "or the value is always true"
        ),
    )


def line_after_removal(base: str, head: str, base_line: int, *, max_middle: int = 400) -> int:
    """Return the head line that stands where ``base_line`` of ``base`` was.

    A removed line maps to the first head line after the removal (what replaced
    it, or what followed it), so an annotation lands on the spot of the deletion.
    The lines both sides share at the start and the end are matched in linear
    time; only a changed middle of at most ``max_middle`` lines a side is diffed
    (difflib is superlinear, and the PR's author writes both files), a longer one
    maps to its first line.
    """
    a, b = base.split("\n"), head.split("\n")
    if b and b[-1] == "":
        b.pop()
    if a and a[-1] == "":
        a.pop()
    last = max(len(b), 1)
    index = base_line - 1
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if index < prefix:
        return min(index + 1, last)
    if index >= len(a) - suffix:
        return min(index - (len(a) - len(b)) + 1, last)
    middle_a, middle_b = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    if len(middle_a) > max_middle or len(middle_b) > max_middle:
        return min(prefix + 1, last)
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, middle_a, middle_b).get_opcodes():
        if i1 <= index - prefix < i2:
            offset = index - prefix - i1 if tag == "equal" else 0
            return min(prefix + j1 + offset + 1, last)
    return min(prefix + 1, last)
