"""The mutants run after the verdict's own runs, while the judge reads (real Docker, fake judge server)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.suites import Suites
from checks.pipeline import Given, PipelineInputs, run_pipeline
from checks.policy import Policy
from checks.quality.inputs import JudgeSettings
from checks.report import Report
from checks.workspace import from_git
from sandbox.docker import DockerSandbox
from sandbox.spec import RunResult, RunSpec
from tests.checks.behaviour.conftest import behaviour_image, behaviour_sandbox
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve

__all__ = ["behaviour_image", "behaviour_sandbox"]

SIGN = "def sign(x):\n    return x > 0\n"
STRONG = (
    "import pytest\n\nfrom calc.sign import sign\n\n\n"
    "@pytest.mark.parametrize(('x', 'y'), [(-1, False), (0, False), (1, True), (2, True)])\n"
    "def test_sign(x, y):\n    assert sign(x) is y\n"
)


class Recording:
    """The sandbox, writing each run into a shared log: a mutant's run or one of the verdict's own."""

    def __init__(self, inner: DockerSandbox, events: list[str], lock: threading.Lock) -> None:
        self.inner, self.events, self.lock = inner, events, lock
        self.mutant_started = threading.Event()

    def run(self, spec: RunSpec) -> RunResult:
        mutant = any("mutants" in mount.source.parts for mount in spec.copy_in)
        with self.lock:
            self.events.append("mutant" if mutant else "run")
        if mutant:
            self.mutant_started.set()
        return self.inner.run(spec)


@pytest.mark.docker
@pytest.mark.parametrize("report_first", [True, False], ids=["report first", "once"])
def test_the_mutants_run_while_the_judge_reads_and_the_verdict_goes_first_only_if_policy_says_so(
    git_repo: GitRepo,
    tmp_path: Path,
    behaviour_image: str,
    behaviour_sandbox: DockerSandbox,
    report_first: bool,
) -> None:
    git_repo.commit("base", {"calc/__init__.py": "", "calc/sign.py": "def sign(x):\n    return None\n"})
    git_repo.branch("pr")
    git_repo.commit("pr", {"calc/sign.py": SIGN})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    suite = tmp_path / "hidden"
    suite.mkdir()
    (suite / "test_sign.py").write_text(STRONG)
    events: list[str] = []
    lock = threading.Lock()
    verdicts: list[Report] = []
    runner = Recording(behaviour_sandbox, events, lock)
    overlapped: list[bool] = []

    def judge(request: dict[str, Any]) -> Reply:
        # The judge answers once a mutant has started (or after a minute): only if they overlap.
        overlapped.append(runner.mutant_started.wait(timeout=60))
        with lock:
            events.append("judge")
        return Reply(content=json.dumps({"verdict": "N/A", "reason": "scripted", "evidence": []}))

    def on_verdict(report: Report) -> None:
        with lock:
            events.append("verdict")
        verdicts.append(report)

    policy = Policy.model_validate({"strength": {"max_mutants": 4, "report_first": report_first}})
    with serve(judge) as server:
        settings = JudgeSettings(api_base=server.url, api_key="sk-test", timeout_s=30.0, num_retries=0)
        inputs = PipelineInputs(
            workspace=ws,
            policy=policy,
            runner=runner,
            given=Given(suites=Suites(hidden=suite), judge=settings),
        )
        report = run_pipeline(inputs, image=behaviour_image, on_verdict=on_verdict)

    assert report.behaviour.status == "passed" and report.quality.status == "passed", report.reasons
    strength = report.behaviour.strength
    assert (strength.mutants, strength.killed, strength.pending) == (4, 4, False), strength
    assert "strength" in report.timings
    # The verdict's own runs, then the mutants while the judge reads; with report_first, the verdict
    # once the judge has answered.
    first_mutant = events.index("mutant")
    assert "run" not in events[first_mutant:], events
    assert overlapped and all(overlapped), events
    assert events.count("mutant") == 4 and events.index("judge") > first_mutant, events
    if not report_first:
        assert verdicts == [] and "verdict" not in events
        return
    assert events.index("verdict") > events.index("judge"), events
    (first,) = verdicts
    assert first.conclusion == report.conclusion == "success"
    assert first.behaviour.strength.pending and first.behaviour.strength.mutants == 0
    # Coverage is known with the verdict: the one changed line.
    assert (first.behaviour.strength.changed_lines, first.behaviour.strength.hidden_covered) == (1, 1)
