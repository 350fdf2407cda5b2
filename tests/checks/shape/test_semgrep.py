"""The semgrep gate: its JSON parser, and real runs on a passing and a failing PR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checks.decide import decide
from checks.policy import Policy
from checks.report import BehaviourResult, QualityResult, ShapeResult
from checks.runner import LayerContext
from checks.shape import run_shape, semgrep
from checks.shape.cache import ShapeCache
from checks.shape.container import ToolFailure
from checks.shape.semgrep import parse_semgrep, rule_id
from sandbox.docker import DockerSandbox
from tests.checks.shape.conftest import make_ws, of, rules_at
from tests.checks.shape.test_cache import BASE, FakeTools, change
from tests.conftest import GitRepo


def result(path: str, line: int, check_id: str = "patchgate.rules.swallowed-exception") -> dict[str, object]:
    return {
        "check_id": check_id,
        "path": path,
        "start": {"line": line, "col": 1, "offset": 0},
        "end": {"line": line + 3, "col": 9, "offset": 40},
        "extra": {"message": "A broad\n  `except`", "severity": "WARNING", "lines": "requires login"},
    }


def test_parse_semgrep_splits_base_and_head() -> None:
    report = {
        "results": [result("base/pkg/a.py", 5), result("head/pkg/a.py", 9), result("elsewhere/x.py", 1)],
        "errors": [
            {"level": "warn", "type": "Syntax error", "message": "bad", "path": "head/pkg/s.py"},
            {"level": "warn", "type": "Syntax error", "message": "bad", "path": "base/pkg/s.py"},
        ],
        "paths": {"scanned": ["base/pkg/a.py", "./head/pkg/a.py", "head/pkg/s.py", "head/pkg/b.py"]},
    }
    base, head, unparsed, settled = parse_semgrep(json.dumps(report))
    assert [(f.path, f.start_line, f.end_line) for f in base] == [("pkg/a.py", 5, 8)]
    assert [(f.path, f.rule, f.severity, f.message) for f in head] == [
        ("pkg/a.py", "swallowed-exception", "warning", "A broad `except`")
    ]
    assert unparsed == ["pkg/s.py"]
    # Scanned with no error of their own: the files whose findings may be kept across jobs.
    assert settled == {("base", "pkg/a.py"), ("head", "pkg/a.py"), ("head", "pkg/b.py")}


def test_a_rule_error_is_a_tool_failure() -> None:
    report = {
        "results": [],
        "errors": [{"level": "error", "type": "Rule parse error", "message": "bad rule"}],
    }
    with pytest.raises(ToolFailure, match="bad rule"):
        parse_semgrep(json.dumps(report))


@pytest.mark.parametrize("text", ["", "Login required", "[]"])
def test_parse_semgrep_rejects_what_is_not_its_report(text: str) -> None:
    with pytest.raises(ToolFailure):
        parse_semgrep(text)


@pytest.mark.parametrize(
    ("check_id", "expected"),
    [("patchgate.rules.sql-format", "sql-format"), ("sql-format", "sql-format")],
)
def test_rule_id_drops_the_folder_prefix(check_id: str, expected: str) -> None:
    assert rule_id(check_id) == expected


@pytest.mark.docker
def test_semgrep_passes_a_clean_pr_and_keeps_moved_findings_preexisting(
    scenario: dict[str, ShapeResult],
) -> None:
    good = scenario["good"]
    run = next(t for t in good.tools if t.tool == "semgrep")
    assert run.status == "ok", run.detail
    # The base's `except Exception: pass` moved down by three lines: not new.
    assert of(good, "semgrep") == []


@pytest.mark.docker
def test_semgrep_fails_a_pr_despite_its_semgrepignore(scenario: dict[str, ShapeResult]) -> None:
    bad = scenario["bad"]
    run = next(t for t in bad.tools if t.tool == "semgrep")
    assert run.status == "ok", run.detail
    # The PR adds a .semgrepignore of "*"; semgrep still sees every changed file.
    assert rules_at(bad, "semgrep") == {
        ("pkg/core.py", "shell-format"),
        ("pkg/core.py", "sql-format"),
        ("pkg/core.py", "swallowed-exception"),
        ("pkg/duration.py", "optional-regex-guard"),
    }
    # The pre-existing `except Exception: pass` in pkg/core.py is not among the new ones.
    swallowed = [f for f in of(bad, "semgrep") if f.rule == "swallowed-exception"]
    assert [f.start_line for f in swallowed] == [33]


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("base", BASE)
    return repo


class Dropping(FakeTools):
    """semgrep as it is: a target it will not scan is missing from ``paths.scanned``, without an error."""

    def __init__(self, dropped: str, *, error: str = "") -> None:
        super().__init__()
        self.dropped = dropped
        self.error = error

    def _batch(self, tool: str, step: dict[str, Any], mounts: dict[str, Path]) -> dict[str, Any]:
        batch = super()._batch(tool, step, mounts)
        if tool == "semgrep":
            report = json.loads(batch["stdout"])
            mine = [t for t in report["paths"]["scanned"] if t == f"head/{self.dropped}"]
            if self.error:
                report["errors"] = [{"level": "warn", "type": self.error, "path": t} for t in mine]
            else:
                report["paths"]["scanned"] = [t for t in report["paths"]["scanned"] if t not in mine]
                report["results"] = [r for r in report["results"] if r["path"] not in mine]
            batch["stdout"] = json.dumps(report)
        return batch


# Hostile: the PR's BAD line sits in a file semgrep leaves out (padded past --max-target-bytes) or
# breaks off (a parse error, a timeout). Before, the gate passed it: no finding, a line in `detail`.
@pytest.mark.parametrize("error", ["", "Timeout", "PartialParsing"])
@pytest.mark.parametrize("cached", [False, True])
def test_a_changed_file_semgrep_did_not_scan_whole_asks_a_maintainer(
    repo: GitRepo, tmp_path: Path, error: str, cached: bool
) -> None:
    padded = "A = 1  # BAD\n" + "# padding\n" * 10
    ws = change(repo, "pr", {"pkg/a.py": padded, "pkg/b.py": "B = 3\n"}, tmp_path)
    cache = ShapeCache(tmp_path / "cache") if cached else None
    shape = run_shape(LayerContext(ws, Policy(), Dropping("pkg/a.py", error=error), "image"),
                      gates=("semgrep",), cache=cache)  # fmt: skip
    assert [(t.tool, t.status) for t in shape.tools] == [("semgrep", "ok")]
    unseen = [f for f in shape.findings if f.rule == "not-examined"]
    assert [(f.tool, f.path, f.start_line, f.end_line, f.needs_maintainer) for f in unseen] == [
        ("semgrep", "pkg/a.py", 2, 11, True)
    ]
    assert ("error" if error else "left it out") in unseen[0].message
    # Not a PR failure by itself (semgrep's threshold counts real findings), never a pass either.
    assert shape.status == "passed"
    decision = decide(shape, BehaviourResult(status="passed"), QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert "shape: 1 changed file not examined whole (semgrep): pkg/a.py" in decision.reasons


def test_a_change_semgrep_scanned_whole_has_no_such_finding_cache_cold_or_warm(
    repo: GitRepo, tmp_path: Path
) -> None:
    cache = ShapeCache(tmp_path / "cache")
    files: dict[str, str | bytes | None] = {"pkg/b.py": "B = 3\n", "pkg/d.py": "D = 4\n"}
    for n in (1, 2):
        ws = change(repo, f"pr{n}", files, tmp_path / str(n))
        runner = FakeTools()
        shape = run_shape(LayerContext(ws, Policy(), runner, "image"), gates=("semgrep",), cache=cache)
        assert [f for f in shape.findings if f.rule == "not-examined"] == []
    assert len(runner.runs("semgrep")) == 1  # the second time the base came from the cache


@pytest.mark.docker
def test_real_semgrep_drops_a_padded_file_and_the_gate_says_so(
    tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str
) -> None:
    swallowed = "def f():\n    try:\n        return 1\n    except Exception:\n        pass\n"
    # 2.2 MB: over semgrep's --max-target-bytes, which drops it from paths.scanned without an error.
    padded = swallowed + ("#" * 79 + "\n") * 28_000
    head = {"pkg/big.py": padded, "pkg/small.py": swallowed.replace("def f", "def g")}
    ws = make_ws(tmp_path, {"pkg/__init__.py": ""}, head)
    result = semgrep.gate.run(LayerContext(ws, Policy(), shape_sandbox, shape_image))
    assert result.tool.status == "ok", result.tool.detail
    assert {(f.path, f.rule) for f in result.findings} == {
        ("pkg/small.py", "swallowed-exception"),
        ("pkg/big.py", "not-examined"),
    }
