"""Reuse: a job whose inputs equal a completed run's gets that run's report, and no PR code runs.

End to end with the real server and the fake GitHub (tests.bot.pipelines:findings_gate,
which appends a line to the scenario's ``count`` file each time it runs the
PR); the key and the completeness rule are also tested as tables.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bot.service.reuse import ReuseInputs, base_salt, judge_text, reusable, reuse_key, suites_digest
from checks.behaviour.suites import Suites
from checks.quality.inputs import JudgeSettings, Task
from checks.report import (
    BehaviourResult,
    CriterionResult,
    QualityResult,
    Report,
    Reuse,
    ShapeResult,
    StrengthResult,
    SuiteResult,
    ToolRun,
)
from tests.bot.harness import Pull, Server, fixture, jobs, make_pull, wait_for
from tests.conftest import git
from tests.fakes.github_server import FakeGitHub

BASE = ReuseInputs(
    repository="octo/r",
    base_sha="b" * 40,
    head_sha="h" * 40,
    suites="s",
    policy="{}",
    patchgate="0.1.0+abc",
    pipeline="checks.pipeline:run_pipeline",
    sandbox='["patchgate-base:1", "runc", ""]',
    judge="no judge",
)


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(ReuseInputs)])
def test_every_input_changes_the_key(field: str) -> None:
    changed = dataclasses.replace(BASE, **{field: getattr(BASE, field) + "x"})
    assert reuse_key(changed) != reuse_key(BASE)
    assert reuse_key(dataclasses.replace(BASE)) == reuse_key(BASE)


def test_a_refactor_label_changes_the_verdict_s_key_and_never_a_base_run_s() -> None:
    # A refactor's head is compared with base (behaviour.differential); base's own runs are the same.
    relabelled = dataclasses.replace(BASE, change='[["refactor"], "refactor: x", null]')
    assert reuse_key(relabelled) != reuse_key(BASE)
    assert base_salt(relabelled) == base_salt(BASE)


def test_the_judges_task_and_settings_are_in_the_key_but_never_its_api_key() -> None:
    task = Task("title", "body", "issue text")
    judge = JudgeSettings(api_base="http://judge", api_key="sk-secret-value")
    text = judge_text(judge, task, ("codex",))
    assert "sk-secret-value" not in text
    assert judge_text(JudgeSettings(api_base="http://judge", api_key="other"), task, ("codex",)) == text
    assert judge_text(judge, Task("title", "another body", "issue text"), ("codex",)) != text
    assert judge_text(judge, task, ("claude",)) != text
    assert judge_text(dataclasses.replace(judge, timeout_s=5.0), task, ("codex",)) != text
    # With no judge, quality is skipped whatever the PR says: the task does not matter.
    assert judge_text(None, task, ()) == judge_text(None, Task("other"), ("x",))


def test_the_suites_digest_follows_their_bytes_and_names(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_a.py").write_text("def test_a():\n    assert True\n")
    first = suites_digest(Suites(hidden=hidden))
    assert suites_digest(Suites(hidden=hidden)) == first
    assert suites_digest(Suites(held_out=hidden)) != first  # the same files as the other suite
    assert suites_digest(Suites(hidden=hidden, commit="c" * 40)) != first
    (hidden / "test_a.py").write_text("def test_a():\n    assert False\n")
    second = suites_digest(Suites(hidden=hidden))
    assert second != first
    (hidden / "test_a.py").rename(hidden / "test_b.py")
    assert suites_digest(Suites(hidden=hidden)) != second


def _passed() -> Report:
    return Report(
        conclusion="success",
        shape=ShapeResult(status="passed", tools=[ToolRun(tool="ruff", status="ok")]),
        behaviour=BehaviourResult(
            status="passed",
            suites=[SuiteResult(name="hidden", kind="hidden", status="passed", passed=1, total=1)],
            strength=StrengthResult(status="measured"),
        ),
        quality=QualityResult(status="skipped"),
    )


def _criterion(verdict: Any) -> CriterionResult:
    return CriterionResult(id="c", rubric="default", question="q", severity="advisory", verdict=verdict)


def _with(**changes: Any) -> Report:
    report = _passed()
    for path, value in changes.items():
        owner: Any = report
        *parents, last = path.split("__")
        for name in parents:
            owner = getattr(owner, name)
        setattr(owner, last, value)
    return report


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (_passed(), True),
        (_with(conclusion="failure"), True),
        (_with(conclusion="action_required"), True),
        (_with(conclusion="neutral"), False),
        (_with(shape__status="error"), False),
        (_with(shape__tools=[ToolRun(tool="mypy", status="error")]), False),
        (_with(shape__tools=[ToolRun(tool="mypy", status="skipped")]), True),
        (_with(behaviour__status="error"), False),
        (_with(behaviour__suites=[SuiteResult(name="h", kind="hidden", status="error")]), False),
        (_with(behaviour__strength=StrengthResult(status="error")), False),
        (
            _with(behaviour__strength=StrengthResult(status="measured", pending=True)),
            False,
        ),  # mutants running
        (_with(quality__status="unavailable"), False),  # the judge was down: a repeat may reach it
        (_with(quality__status="passed", quality__criteria=[_criterion("pass")]), True),
        (_with(quality__status="passed", quality__criteria=[_criterion("error")]), False),
        (_with(reused_from=Reuse(job_id=1)), False),  # reuse points at a run that was gated
    ],
)
def test_only_a_complete_verdict_is_reusable(report: Report, expected: bool) -> None:
    assert reusable(report) is expected


# End to end.


def _scenario(pull: Pull, counter: Path, **extra: object) -> None:
    """Make the head's scenario count its runs in ``counter``."""
    pull.push({"patchgate-test.json": json.dumps({"count": str(counter), **extra})}, "scenario")


def _twin(pull: Pull, number: int, **changes: Any) -> Pull:
    """Another PR of the same repository (by default from the same branch: the same head)."""
    other = dataclasses.replace(pull, number=number, **changes)
    other.publish()
    return other


def _run_of(pull: Pull) -> dict[str, Any] | None:
    key = f"{pull.repository}#{pull.number}@{pull.head_sha}"
    found = [r for r in pull.runs() if r["external_id"] == key and r["status"] == "completed"]
    return found[-1] if found else None


def _gate(server: Server, pull: Pull) -> dict[str, Any]:
    assert server.post("pull_request", pull.payload("opened")).json()["status"] == "queued"
    run: dict[str, Any] = wait_for(lambda: _run_of(pull), 60, f"the run of #{pull.number}")
    return run


def _runs(counter: Path) -> list[str]:
    return counter.read_text().split() if counter.exists() else []


def _suites(server: Server, repository: str, text: str) -> None:
    hidden = Path(server.env["PATCHGATE_TEST_STORE"]) / repository / "hidden"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "test_app.py").write_text(text)


def test_a_repeat_is_answered_from_the_store_and_says_so(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    counter = tmp_path / "count"
    pull = make_pull(github, tmp_path, "repeat")
    _scenario(pull, counter, findings=2)
    first = _gate(server, pull)
    assert _runs(counter) == [pull.head_sha]
    second = _gate(server, _twin(pull, 2))
    assert _runs(counter) == [pull.head_sha]  # the PR's code did not run again
    assert (first["conclusion"], second["conclusion"]) == ("failure", "failure")
    assert len(second["annotations"]) == len(first["annotations"]) == 2
    assert second["output"]["title"].startswith("(reused) ")
    [origin] = [j for j in jobs(server, "octo/repeat") if j["pr_number"] == 1]
    summary = second["output"]["summary"].replace("\\", "")
    assert f"Reused** from [job {origin['id']}, check run {first['id']}]" in summary
    assert f"/octo/repeat/runs/{first['id']})" in summary
    assert "Reused" not in first["output"]["summary"]
    assert github.problems == []


def test_changed_suites_or_a_new_head_gate_again(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    pull = make_pull(github, tmp_path, "changed")
    _suites(server, "octo/changed", "def test_one():\n    pass\n")
    _scenario(pull, counter)
    assert _gate(server, pull)["conclusion"] == "success"
    _suites(server, "octo/changed", "def test_one():\n    assert 1\n")
    twin = _twin(pull, 2)
    assert _gate(server, twin)["conclusion"] == "success"
    assert len(_runs(counter)) == 2
    # synchronize: a new head is a new change.
    twin.push({"notes.txt": "more"})
    assert server.post("pull_request", twin.payload("synchronize")).json()["status"] == "queued"
    run = wait_for(lambda: _run_of(twin), 60, "the run of the new head")
    assert not run["output"]["title"].startswith("(reused)")
    assert _runs(counter)[-1] == twin.head_sha
    assert len(_runs(counter)) == 3


def test_a_changed_policy_gates_again(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    pull = make_pull(github, tmp_path, "policy")
    _scenario(pull, counter)
    assert _gate(server, pull)["conclusion"] == "success"
    # The policy is read at the base: a new base commit changes it (here only it).
    repo, head = pull.repo, pull.head_sha  # base and head share one repository here
    git(repo.path, "checkout", "-q", "main")
    policy = "agents:\n  authors: ['*[bot]']\nquality:\n  enabled: false\n"
    new_base = repo.commit("policy", {".github/patchgate.yml": policy})
    git(repo.path, "checkout", "-q", pull.head_ref)
    twin = _twin(pull, 2, base_sha=new_base, head_sha=head)
    assert _gate(server, twin)["conclusion"] == "success"
    assert len(_runs(counter)) == 2


def test_a_neutral_run_is_never_reused(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    pull = make_pull(github, tmp_path, "neutral")
    _scenario(pull, counter, tool_error=True)
    assert _gate(server, pull)["conclusion"] == "neutral"
    assert _gate(server, _twin(pull, 2))["conclusion"] == "neutral"
    assert len(_runs(counter)) == 2


def test_a_rerequested_run_gates_afresh(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    pull = make_pull(github, tmp_path, "rerequest")
    _scenario(pull, counter, findings=1)
    first = _gate(server, pull)
    rerequest = fixture("check_run.rerequested")
    rerequest.update(repository=pull.payload("opened")["repository"], installation={"id": pull.installation})
    rerequest["check_run"] = {
        **rerequest["check_run"],
        "head_sha": pull.head_sha,
        "external_id": first["external_id"],
        "pull_requests": [],
    }
    assert server.post("check_run", rerequest).json()["status"] == "queued"
    wait_for(lambda: len(_runs(counter)) == 2, 60, "the rerequested run")

    def both() -> list[dict[str, Any]] | None:
        done = [r for r in pull.runs() if r["status"] == "completed"]
        return done if len(done) == 2 else None

    runs = wait_for(both, 60, "both runs completed")
    assert [r["conclusion"] for r in runs] == ["failure", "failure"]
    assert not any(r["output"]["title"].startswith("(reused)") for r in runs)


def test_base_runs_are_kept_per_base_and_suites_and_a_rerun_reads_none(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    seen = tmp_path / "base-runs.jsonl"
    pull = make_pull(github, tmp_path, "baseruns")
    _suites(server, "octo/baseruns", "def test_one():\n    pass\n")
    _scenario(pull, tmp_path / "count", base_runs=str(seen))
    _gate(server, pull)

    def stores() -> list[dict[str, Any]]:
        return [json.loads(line) for line in seen.read_text().splitlines()]

    # A new head on the same base, with the same suites and policy: the same base runs.
    pull.push({"notes.txt": "more"})
    assert server.post("pull_request", pull.payload("synchronize")).json()["status"] == "queued"
    wait_for(lambda: len(stores()) == 2, 60, "the synchronize's run")
    # Changed suites: base runs of their own.
    _suites(server, "octo/baseruns", "def test_one():\n    assert 1\n")
    last = _gate(server, _twin(pull, 2))
    opened, synchronized, changed = stores()
    assert opened["root"] == str(Path(server.env["PATCHGATE_WORK_DIR"]) / "base-runs")
    assert opened["read"] and synchronized["read"] and changed["read"]
    # The shape layer's findings per base file are kept beside them, read as the base runs are.
    assert opened["shape_root"] == str(Path(server.env["PATCHGATE_WORK_DIR"]) / "shape-cache")
    assert opened["shape_read"] and changed["shape_read"]
    assert opened["salt"] == synchronized["salt"] != changed["salt"]
    # An explicit rerun runs its base afresh (and refreshes the store): it reads nothing.
    rerequest = fixture("check_run.rerequested")
    rerequest.update(repository=pull.payload("opened")["repository"], installation={"id": pull.installation})
    rerequest["check_run"] = {**rerequest["check_run"], "head_sha": last["head_sha"],
                              "external_id": last["external_id"], "pull_requests": []}  # fmt: skip
    assert server.post("check_run", rerequest).json()["status"] == "queued"
    wait_for(lambda: len(stores()) == 4, 60, "the rerequested run")
    assert stores()[3]["read"] is False and stores()[3]["shape_read"] is False


def test_a_report_forged_by_the_prs_code_is_not_reused_for_the_head_it_names(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    counter = tmp_path / "count"
    pull = make_pull(github, tmp_path, "forged")
    # Head Y fails (three findings); nobody has gated it yet.
    _scenario(pull, counter, findings=3)
    victim = pull.head_sha
    # Head X, on top of it, passes and its report claims to be Y's.
    _scenario(pull, counter, findings=0, claim_head=victim)
    assert _gate(server, pull)["conclusion"] == "success"
    # A second PR at Y: the forged report must not stand in for Y's own verdict.
    other = _twin(pull, 2, head_sha=victim)
    run = _gate(server, other)
    assert run["conclusion"] == "failure"
    assert not run["output"]["title"].startswith("(reused)")
    assert _runs(counter) == [pull.head_sha, victim]
