"""The introduced-finding comparison: line shifts, duplicates, renames, messages that cite lines."""

from __future__ import annotations

import pytest

from checks.report import Finding
from checks.shape.introduced import compare, normalize_line, normalize_message


def finding(path: str, line: int, rule: str = "F401", message: str = "unused", tool: str = "ruff") -> Finding:
    return Finding(
        tool=tool, rule=rule, path=path, start_line=line, end_line=line, severity="warning", message=message
    )


def lookup(files: dict[str, str]):
    def line(path: str, n: int) -> str:
        lines = files.get(path, "").splitlines()
        return lines[n - 1] if 0 < n <= len(lines) else ""

    return line


BASE = {"a.py": "import os\nimport sys\n\nx = 1\n"}


def test_a_finding_shifted_by_lines_added_above_is_preexisting() -> None:
    head = {"a.py": "# new comment\n\n\nimport os\nimport sys\n\nx = 1\n"}
    result = compare(
        [finding("a.py", 1)], [finding("a.py", 4)], base_line=lookup(BASE), head_line=lookup(head)
    )
    assert result.preexisting == 1
    assert [f.introduced for f in result.findings] == [False]


def test_a_finding_on_a_new_line_is_introduced() -> None:
    head = {"a.py": "import os\nimport sys\nimport json\n\nx = 1\n"}
    result = compare(
        [finding("a.py", 1)],
        [finding("a.py", 1), finding("a.py", 3)],
        base_line=lookup(BASE),
        head_line=lookup(head),
    )
    assert [f.introduced for f in result.findings] == [False, True]
    assert result.preexisting == 1
    assert [f.start_line for f in result.introduced] == [3]


def test_copies_are_counted_as_a_multiset_and_new_copies_blame_changed_lines() -> None:
    base = {"a.py": "try: x()\nexcept Exception: pass\n"}
    head = {"a.py": "try: x()\nexcept Exception: pass\ntry: x()\nexcept Exception: pass\n"}
    rule = "swallowed-exception"
    head_findings = [finding("a.py", 4, rule), finding("a.py", 2, rule)]
    result = compare(
        [finding("a.py", 2, rule)],
        head_findings,
        base_line=lookup(base),
        head_line=lookup(head),
        changed_lines=lambda path: frozenset({3, 4}),
    )
    # Order is kept; the copy on the untouched line 2 is the pre-existing one.
    assert [(f.start_line, f.introduced) for f in result.findings] == [(4, True), (2, False)]


def test_whitespace_changes_do_not_make_a_finding_new() -> None:
    head = {"a.py": "import   os  \t\nimport sys\n"}
    result = compare(
        [finding("a.py", 1)], [finding("a.py", 1)], base_line=lookup(BASE), head_line=lookup(head)
    )
    assert result.preexisting == 1


def test_an_edited_line_makes_its_finding_new() -> None:
    head = {"a.py": "import os, re\nimport sys\n"}
    result = compare(
        [finding("a.py", 1)], [finding("a.py", 1)], base_line=lookup(BASE), head_line=lookup(head)
    )
    assert result.preexisting == 0
    assert result.findings[0].introduced


def test_a_renamed_file_keeps_its_preexisting_findings() -> None:
    head = {"b.py": BASE["a.py"]}
    result = compare(
        [finding("a.py", 1)],
        [finding("b.py", 1)],
        base_line=lookup(BASE),
        head_line=lookup(head),
        renames={"a.py": "b.py"},
    )
    assert result.preexisting == 1


def test_same_line_in_another_file_is_new() -> None:
    head = {"a.py": BASE["a.py"], "c.py": BASE["a.py"]}
    result = compare(
        [finding("a.py", 1)], [finding("c.py", 1)], base_line=lookup(BASE), head_line=lookup(head)
    )
    assert result.findings[0].introduced


@pytest.mark.parametrize(
    ("base", "head", "same"),
    [
        (finding("a.py", 1, rule="F401"), finding("a.py", 1, rule="F811"), False),
        (finding("a.py", 1, tool="ruff"), finding("a.py", 1, tool="bandit"), False),
        (
            finding("a.py", 1, message="Argument 1 has type str"),
            finding("a.py", 1, message="Argument 1 has type int"),
            False,
        ),
        (
            finding("a.py", 1, rule="F811", message="Redefinition of unused `os` from line 3"),
            finding("a.py", 1, rule="F811", message="Redefinition of unused `os` from line 9"),
            True,
        ),
    ],
)
def test_identity_is_tool_rule_path_line_text_and_message(base: Finding, head: Finding, same: bool) -> None:
    result = compare([base], [head], base_line=lookup(BASE), head_line=lookup(BASE))
    assert result.preexisting == (1 if same else 0)


def test_a_base_finding_is_matched_at_most_once() -> None:
    result = compare(
        [finding("a.py", 1)],
        [finding("a.py", 1), finding("a.py", 1)],
        base_line=lookup(BASE),
        head_line=lookup(BASE),
    )
    assert result.preexisting == 1
    assert sum(f.introduced for f in result.findings) == 1


def test_findings_beyond_the_file_compare_as_empty_lines() -> None:
    result = compare(
        [finding("a.py", 0)],
        [finding("a.py", 0), finding("a.py", 99)],
        base_line=lookup(BASE),
        head_line=lookup(BASE),
    )
    assert [f.introduced for f in result.findings] == [False, True]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("  a  =\t1 ", "a = 1"), ("", ""), ("x\r", "x")],
)
def test_normalize_line(text: str, expected: str) -> None:
    assert normalize_line(text) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Redefinition of unused `x` from line 12", "Redefinition of unused `x` from line N"),
        ('Name "f" already defined on line 3', 'Name "f" already defined on line N'),
        ("see lines 3-7", "see lines N"),
        ("no numbers  here", "no numbers here"),
    ],
)
def test_normalize_message(message: str, expected: str) -> None:
    assert normalize_message(message) == expected
