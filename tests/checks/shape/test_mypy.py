"""The mypy gate: its JSON parser, module-name grouping, and real runs on a passing and a failing PR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.policy import Policy
from checks.report import ShapeResult
from checks.runner import LayerContext
from checks.shape import run_shape
from checks.shape.container import Batch, ToolFailure
from checks.shape.mypy import MypyTool, groups, parse_mypy
from sandbox.docker import DockerSandbox
from tests.checks.shape.conftest import make_ws, of, rules_at


def line(**fields: object) -> str:
    base: dict[str, object] = {"file": "a.py", "line": 3, "end_line": 3, "column": 2, "end_column": 5}
    base |= {"message": "m", "hint": None, "code": "arg-type", "severity": "error"}
    return json.dumps({**base, **fields})


def test_parse_mypy_keeps_errors_and_drops_notes() -> None:
    text = "\n".join(
        [
            line(file="pkg/a.py", line=3, end_line=4, code="arg-type", message='Argument 1 has type "str"'),
            line(severity="note", message="Revealed type is int"),
            line(file="b.py", line=-1, end_line=-1, code=None, message="file-level"),
            "",
        ]
    )
    findings = parse_mypy(text)
    assert [(f.path, f.rule, f.start_line, f.end_line) for f in findings] == [
        ("pkg/a.py", "arg-type", 3, 4),
        ("b.py", "error", 0, 0),
    ]
    assert all(f.severity == "error" and f.tool == "mypy" for f in findings)


def test_parse_mypy_rejects_broken_json() -> None:
    with pytest.raises(ToolFailure):
        parse_mypy('{"file": "a.py", ')


def batch(stdout: str, exit_code: int, stderr: str = "") -> Batch:
    return Batch(exit_code=exit_code, stdout=stdout, stderr=stderr)


def test_exit_2_with_only_syntax_errors_is_the_prs_doing() -> None:
    parsed = MypyTool().parse({"head-0": [batch(line(code="syntax", message="invalid syntax"), 2)]})
    assert [f.rule for f in parsed.head] == ["syntax"]


@pytest.mark.parametrize(
    ("stdout", "stderr"),
    [
        (line(code=None, line=-1, message='Duplicate module named "conftest"'), ""),
        ("", "mypy: error: Cannot find config file '/src/base/mypy.ini'"),
    ],
)
def test_exit_2_for_anything_else_is_a_tool_failure(stdout: str, stderr: str) -> None:
    with pytest.raises(ToolFailure, match="mypy could not check"):
        MypyTool().parse({"head-0": [batch(stdout, 2, stderr)]})


def test_a_crash_is_a_tool_failure() -> None:
    with pytest.raises(ToolFailure, match="exit code 3"):
        MypyTool().parse({"base-0": [batch("", 3, "Traceback ...")]})


def test_groups_never_hold_two_files_of_one_module_name(tmp_path: Path) -> None:
    for rel in (
        "a/conftest.py",
        "b/conftest.py",
        "c/conftest.py",
        "pkg/__init__.py",
        "pkg/conftest.py",
        "x.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    paths = ("a/conftest.py", "b/conftest.py", "pkg/conftest.py", "x.py", "c/conftest.py")
    assert groups(tmp_path, paths) == [
        ["a/conftest.py", "pkg/conftest.py", "x.py"],
        ["b/conftest.py"],
        ["c/conftest.py"],
    ]


@pytest.mark.docker
def test_mypy_passes_a_clean_pr(scenario: dict[str, ShapeResult]) -> None:
    run = next(t for t in scenario["good"].tools if t.tool == "mypy")
    assert run.status == "ok", run.detail
    assert "base pyproject.toml" in run.detail
    assert of(scenario["good"], "mypy") == []


@pytest.mark.docker
def test_mypy_fails_a_pr_and_never_loads_the_prs_plugin(scenario: dict[str, ShapeResult]) -> None:
    bad = scenario["bad"]
    run = next(t for t in bad.tools if t.tool == "mypy")
    # The PR's pyproject names `plugins = ["evil_plugin"]` (which raises when imported) and
    # sets ignore_errors = true: had mypy read it, it would have crashed or found nothing.
    assert run.status == "ok", run.detail
    assert "new mypy error" in run.detail
    found = rules_at(bad, "mypy")
    assert ("pkg/core.py", "return-value") in found
    assert ("pkg/core.py", "name-defined") in found
    # A file that does not compile is left to the loads gate; mypy still checks the rest.
    assert not any(f.path == "pkg/syntax.py" for f in of(bad, "mypy"))


@pytest.mark.docker
def test_the_heads_run_reuses_the_bases_cache_without_going_stale(
    tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str
) -> None:
    # The base's run caches every module it saw; in the head, `c` changes its interface
    # under an `a` that changed in a way that does not touch it, and `b` is byte-identical.
    # A stale cache would miss a's new error; a's old error must stay old.
    base = {
        "pkg/__init__.py": "",
        "pkg/b.py": "def g() -> int:\n    return 0\n",
        "pkg/c.py": "def h() -> int:\n    return 1\n",
        "pkg/a.py": (
            "from pkg.b import g\nfrom pkg.c import h\n\n\n"
            "def f() -> int:\n    return g() + h()\n\n\nY: int = 'y'\n"
        ),
    }
    head: dict[str, str | bytes | None] = {
        "pkg/c.py": 'def h() -> str:\n    return "1"\n',
        "pkg/a.py": base["pkg/a.py"] + "\n\nX = 1\n",
    }
    ws = make_ws(tmp_path, dict(base), head)
    result = run_shape(LayerContext(ws, Policy(), shape_sandbox, shape_image), gates=("mypy",))
    [run] = result.tools
    assert run.status == "ok", run.detail
    # a's old error (line 9, in both trees) is not new.
    assert {(f.path, f.start_line, f.rule) for f in of(result, "mypy")} == {("pkg/a.py", 6, "operator")}
