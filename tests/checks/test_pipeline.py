from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from checks.behaviour.suites import Suites
from checks.pipeline import Given, PipelineInputs, Stopped, mark_changed_lines, run_pipeline
from checks.policy import Policy
from checks.policyfile import load_policy
from checks.report import Finding
from checks.workspace import from_git
from sandbox.copyin import pack_copy_in
from sandbox.errors import EngineUnavailable
from sandbox.spec import RunResult, RunSpec
from sandbox.trees import Bounds
from tests.conftest import GitRepo


class TightPacker:
    """A sandbox that packs each copy-in tree within tight bounds, then reports that nothing ran."""

    def __init__(self, scratch: Path, bounds: Bounds) -> None:
        self.scratch, self.bounds = scratch, bounds

    def run(self, spec: RunSpec) -> RunResult:
        folder = Path(tempfile.mkdtemp(dir=self.scratch))
        pack_copy_in(spec.copy_in, folder, os.getuid(), self.bounds)
        return RunResult(exit_code=125, stdout=b"", stderr=b"nothing ran", wall_s=0.0)


class EngineDown:
    """A runner whose engine is gone: every run is an infrastructure failure."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()  # shape and behaviour run side by side

    def run(self, spec: RunSpec) -> RunResult:
        with self._lock:
            self.calls += 1
        raise EngineUnavailable("connection refused")


def change(repo: GitRepo, tmp_path: Path, files: dict[str, str | bytes | None]) -> PipelineInputs:
    repo.commit("base", {"pkg/__init__.py": "", "pkg/calc.py": "def add(a, b):\n    return a + b\n"})
    repo.branch("pr")
    repo.commit("pr", files)
    ws = from_git(repo.path, "main", "pr", tmp_path / "ws")
    suite = tmp_path / "hidden"
    suite.mkdir()
    (suite / "test_calc.py").write_text(
        "from pkg.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    return PipelineInputs(
        workspace=ws, policy=Policy(), runner=EngineDown(), given=Given(Suites(hidden=suite))
    )


def test_sandbox_outage_is_neutral_never_failure(git_repo: GitRepo, tmp_path: Path) -> None:
    inputs = change(git_repo, tmp_path, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    stages: list[str] = []
    report = run_pipeline(inputs, image="patchgate-base:latest", on_progress=lambda s, r: stages.append(s))
    assert report.conclusion == "neutral"
    assert report.shape.status == "error"
    assert report.behaviour.status == "error"
    assert "sandbox failure" in report.behaviour.detail
    assert any("behaviour: not measured" in r for r in report.reasons)
    assert stages == ["shape", "behaviour", "done"]
    assert set(report.timings) >= {"shape", "behaviour", "quality"}


def test_a_tree_beyond_the_sandbox_s_bounds_fails_the_change_naming_the_path(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    inputs = change(git_repo, tmp_path, {"a/b/c/deep.py": "x = 1\n"})
    (tmp_path / "packed").mkdir()
    # The base's deepest file is 2 levels down, the change's 4: only the head breaks depth 3.
    inputs = replace(inputs, runner=TightPacker(tmp_path / "packed", Bounds(depth=3)))
    report = run_pipeline(inputs, image="patchgate-base:latest")
    detail = "the change's tree breaks a bound: a/b/c/deep.py: nested more than 3 levels deep"
    assert (report.behaviour.status, report.behaviour.detail) == ("failed", detail)
    # Not neutral: the tree is the change's, whatever else could not run.
    assert report.conclusion == "failure"
    assert report.reasons[0] == f"behaviour: failed: {detail}"


def test_hygiene_still_reported_when_the_sandbox_is_down(git_repo: GitRepo, tmp_path: Path) -> None:
    inputs = change(git_repo, tmp_path, {".github/workflows/ci.yml": "on: push\n"})
    report = run_pipeline(inputs, image="patchgate-base:latest")
    # hygiene is static and runs no code: it still speaks, and a maintainer is asked to look
    assert any(f.tool == "hygiene" for f in report.shape.findings)
    assert report.conclusion == "action_required"


def test_empty_change_is_neutral(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", {"a.py": "x = 1\n"})
    git_repo.branch("pr")
    git_repo.commit("nothing")
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    runner = EngineDown()
    report = run_pipeline(PipelineInputs(workspace=ws, policy=Policy(), runner=runner), image="x")
    assert report.conclusion == "neutral"
    assert "empty" in report.reasons[0]
    assert runner.calls == 0


def test_disabled_layers_are_skipped(git_repo: GitRepo, tmp_path: Path) -> None:
    inputs = change(git_repo, tmp_path, {"notes.txt": "hello\n"})
    policy = load_policy(
        "gates: {loads: {enabled: false}, ruff: {enabled: false}, mypy: {enabled: false},"
        " bandit: {enabled: false}, semgrep: {enabled: false}}\nbehaviour: {enabled: false}\n"
    )
    report = run_pipeline(
        PipelineInputs(workspace=inputs.workspace, policy=policy, runner=EngineDown()), image="x"
    )
    assert report.behaviour.status == "skipped"
    assert report.quality.status == "skipped"
    assert report.conclusion == "success"


def test_mark_changed_lines(git_repo: GitRepo, tmp_path: Path) -> None:
    inputs = change(git_repo, tmp_path, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})

    def at(path: str, start: int, end: int) -> Finding:
        return Finding(
            tool="t", rule="r", path=path, start_line=start, end_line=end, severity="error", message="m"
        )

    marked = mark_changed_lines(
        [at("pkg/calc.py", 2, 2), at("pkg/calc.py", 1, 1), at("pkg/calc.py", 1, 3), at("gone.py", 1, 1)],
        inputs.workspace,
    )
    assert [f.on_changed_line for f in marked] == [True, False, True, False]


@pytest.mark.parametrize(("stop_at", "stages"), [(0, []), (2, ["shape", "behaviour"])])
def test_a_stop_request_ends_the_run_at_the_next_layer(
    git_repo: GitRepo, tmp_path: Path, stop_at: int, stages: list[str]
) -> None:
    inputs = change(git_repo, tmp_path, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    seen: list[str] = []

    def stop() -> str | None:  # the PR is superseded once ``stop_at`` layers have reported
        return "superseded by 1234" if len(seen) >= stop_at else None

    no_tools = load_policy(
        "gates: {loads: {enabled: false}, ruff: {enabled: false}, mypy: {enabled: false},"
        " bandit: {enabled: false}, semgrep: {enabled: false}}\n"
    )
    runner = EngineDown()
    with pytest.raises(Stopped, match="superseded by 1234"):
        run_pipeline(
            replace(inputs, policy=no_tools, runner=runner, stop=stop),
            image="x",
            on_progress=lambda s, r: seen.append(s),
        )
    assert seen == stages
    # Behaviour (the only layer that would use the sandbox here) ran only when asked after it.
    assert (runner.calls > 0) == (stop_at == 2)


def test_behaviour_runs_alongside_shape(git_repo: GitRepo, tmp_path: Path) -> None:
    # A shape tool's run waits (up to a minute) for a behaviour run to start: it starts only if
    # behaviour does not wait for shape to finish.
    inputs = change(git_repo, tmp_path, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    behaviour_started = threading.Event()
    overlapped: list[bool] = []

    class Layers:
        def run(self, spec: RunSpec) -> RunResult:
            # A behaviour run: the suite reaches the grader only, or base's in-process collection.
            if spec.grader is not None or "pytest-in-process" in spec.argv:
                behaviour_started.set()
            else:
                overlapped.append(behaviour_started.wait(timeout=60))
            raise EngineUnavailable("connection refused")

    only_ruff = load_policy(
        "gates: {loads: {enabled: false}, mypy: {enabled: false}, bandit: {enabled: false},"
        " semgrep: {enabled: false}}\n"
    )
    report = run_pipeline(replace(inputs, policy=only_ruff, runner=Layers()), image="x")
    assert overlapped == [True]
    assert (report.shape.status, report.behaviour.status, report.conclusion) == ("error", "error", "neutral")


def test_a_stop_request_also_ends_a_layer_at_its_next_sandbox_run(git_repo: GitRepo, tmp_path: Path) -> None:
    inputs = change(git_repo, tmp_path, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    runner = EngineDown()
    no_tools = load_policy(
        "gates: {loads: {enabled: false}, ruff: {enabled: false}, mypy: {enabled: false},"
        " bandit: {enabled: false}, semgrep: {enabled: false}}\n"
    )
    seen: list[str] = []

    def stop() -> str | None:  # asked before each run: the first goes ahead, then the PR moves on
        return "superseded" if runner.calls else None

    with pytest.raises(Stopped, match="superseded"):
        run_pipeline(
            replace(inputs, policy=no_tools, runner=runner, stop=stop),
            image="x",
            on_progress=lambda s, r: seen.append(s),
        )
    assert runner.calls == 1  # without the stop, behaviour tries three runs (see above)
    assert seen == ["shape", "behaviour"]  # behaviour ended early (an error nobody sees)


def test_the_behaviour_layer_s_time_is_never_published_when_a_held_out_suite_runs(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    # The layer's time contains the held-out runs', which the code under test can stretch at will to
    # encode what it learned there: it reaches the server's metrics only, never the report.
    from checks.render.markdown import render_markdown

    inputs = change(git_repo, tmp_path, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    hidden_only = run_pipeline(inputs, image="x")
    assert "behaviour" in hidden_only.timings
    both = run_pipeline(
        replace(
            inputs,
            given=Given(Suites(hidden=inputs.given.suites.hidden, held_out=inputs.given.suites.hidden)),
        ),
        image="x",
    )
    assert "behaviour" not in both.timings and "behaviour" in both.private_timings
    assert "private_timings" not in both.model_dump_json()
    assert not any("| behaviour |" in section for section in render_markdown(both))
