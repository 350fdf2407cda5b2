"""The ruff gate: its JSON parser, and real runs on a passing and a failing PR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.policyfile import load_policy
from checks.report import ShapeResult
from checks.runner import LayerContext
from checks.shape import run_shape
from checks.shape.container import ToolFailure
from checks.shape.ruff import parse_ruff
from sandbox.docker import DockerSandbox
from tests.checks.shape.conftest import make_ws, of, rules_at
from tests.fakes.recording import Recording

# Trimmed from ruff 0.17 `check --output-format json`.
RUFF_OUTPUT = [
    {
        "code": "F821",
        "end_location": {"column": 12, "row": 4},
        "filename": "/src/head/pkg/a.py",
        "location": {"column": 1, "row": 4},
        "message": "Undefined name `reveal_type`",
        "severity": "error",
    },
    {
        "code": "invalid-syntax",
        "end_location": {"column": 1, "row": 3},
        "filename": "/src/head/s.py",
        "location": {"column": 1, "row": 3},
        "message": "unexpected EOF while parsing",
    },
    {
        "code": None,
        "filename": "/src/head/old.py",
        "location": {"column": 1, "row": 2},
        "message": "SyntaxError: invalid syntax",
    },
    {
        "code": "E902",
        "filename": "/src/head/u.py",
        "location": {"column": 1, "row": 1},
        "end_location": {"column": 1, "row": 1},
        "message": "stream did not contain valid UTF-8",
    },
]


def test_parse_ruff() -> None:
    findings = parse_ruff(json.dumps(RUFF_OUTPUT), "/src/head")
    assert [(f.path, f.rule, f.start_line, f.end_line, f.severity) for f in findings] == [
        ("pkg/a.py", "F821", 4, 4, "warning"),
        ("s.py", "invalid-syntax", 3, 3, "error"),
        ("old.py", "invalid-syntax", 2, 2, "error"),
        ("u.py", "E902", 1, 1, "error"),
    ]
    assert all(f.tool == "ruff" for f in findings)


def test_parse_ruff_empty_output_is_no_findings() -> None:
    assert parse_ruff("", "/src/head") == []
    assert parse_ruff("[]", "/src/head") == []


@pytest.mark.parametrize("text", ["error: Failed to parse", "{}", '[{"code": "F401"}]'])
def test_parse_ruff_rejects_what_is_not_its_report(text: str) -> None:
    with pytest.raises(ToolFailure):
        parse_ruff(text, "/src/head")


@pytest.mark.docker
def test_ruff_passes_a_clean_pr_with_the_base_config(scenario: dict[str, ShapeResult]) -> None:
    good = scenario["good"]
    run = next(t for t in good.tools if t.tool == "ruff")
    assert run.status == "ok", run.detail
    assert "base pyproject.toml" in run.detail
    # The PR adds an unused import; the base configuration ignores F401.
    assert of(good, "ruff") == []


@pytest.mark.docker
def test_ruff_fails_a_pr_and_its_own_config_has_no_effect(scenario: dict[str, ShapeResult]) -> None:
    bad = scenario["bad"]
    run = next(t for t in bad.tools if t.tool == "ruff")
    assert run.status == "ok", run.detail
    assert "new ruff finding" in run.detail
    found = rules_at(bad, "ruff")
    # per-file-ignores = {"*" = ["F821", "E711"]} in the PR's pyproject.toml, and the
    # pkg/ruff.toml it adds (ignore = ["F", "E"]), are ignored.
    assert ("pkg/core.py", "E711") in found
    assert ("pkg/core.py", "F821") in found
    assert ("pkg/syntax.py", "invalid-syntax") in found
    # A file whose name would split mypy's argument file is left out, and said so.
    assert "ruff: skipped file(s) with control characters in the name: 'pkg/two\\nlines.py'" in bad.notices
    assert bad.status == "failed"


@pytest.mark.docker
def test_the_policys_budget_reaches_the_sandbox(
    tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str
) -> None:
    ws = make_ws(tmp_path, {"a.py": "x = 1\n"}, {"a.py": "import os\nx = 2\n"})
    policy = load_policy("gates:\n  ruff: {timeout_s: 45, memory_mb: 512}\n")
    recording = Recording(shape_sandbox)
    result = run_shape(LayerContext(ws, policy, recording, shape_image), gates=("ruff",))
    [run] = result.tools
    assert run.status == "ok", run.detail
    assert rules_at(result, "ruff") == {("a.py", "F401")}
    [spec] = recording.specs
    assert (spec.limits.timeout_s, spec.limits.memory_mb) == (45, 512)
