# ruff: noqa: E501 - tables of report lines read best one a line
"""Differential runs on the host: the seed, the plan the grader gets, its report read back (no Docker)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.differential import (
    GRADER_BASE,
    Where,
    budget_s,
    function_seed,
    parse_diff_log,
    plan_differential,
    read_differential,
    suite_seed,
)
from checks.behaviour.diffsuite import DiffSpec, Efficiency
from checks.behaviour.plan import GRADER_PLAN, GRADER_SUITE, Staging, stage_suite, write_harness
from checks.behaviour.suites import load_suite
from checks.policy import Behaviour
from sandbox.grader import pack_private
from sandbox.spec import RunResult

REF = "def half(x: int) -> int:\n    return x // 2\n\n\ndef sized(n, rng):\n    return (n,)\n"
DIFF = "functions:\n  - function: calc.half\n    reference: ref.half\n    efficiency: {sizes: [10, 100], input: ref.sized}\n"
SPEC = DiffSpec(
    "half.diff.yml::calc.half", "calc.half", "ref.half", efficiency=Efficiency((10, 100), "ref.sized")
)
NONCE = "n" * 32


def suite_dir(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "ref.py").write_text(REF)
    (root / "half.diff.yml").write_text(DIFF)
    return root


def test_the_seed_comes_from_the_suite_s_bytes_and_the_base_sha(tmp_path: Path) -> None:
    # Nothing of the head's goes in (the test of that: test_differential_runs.py, pushed again).
    root = suite_dir(tmp_path / "suite")
    seed = suite_seed(root, "b" * 40)
    assert len(seed) == 32 and seed == suite_seed(root, "b" * 40)
    assert seed != suite_seed(root, "c" * 40)  # base moved: new inputs
    shutil.copytree(root, tmp_path / "copy")
    assert suite_seed(tmp_path / "copy", "b" * 40) == seed  # wherever the suite lives
    (root / "ref.py").write_text(REF + "\n")
    assert suite_seed(root, "b" * 40) != seed  # the suite's content, which the change never has
    assert function_seed(seed, "a") != function_seed(seed, "b")


def staging(tmp_path: Path, policy: Behaviour) -> Staging:
    suite = load_suite(suite_dir(tmp_path / "suite"), "hidden")
    work = tmp_path / "work"
    work.mkdir()
    return Staging(suite=suite, image="img", harness=write_harness(work / "harness", policy),
                   staged=stage_suite(suite, work / "staged"), work=work, policy=policy, messages=True)  # fmt: skip


def test_the_plan_reaches_the_grader_only_and_the_subject_gets_the_tree_alone(tmp_path: Path) -> None:
    policy = Behaviour.model_validate({"differential": {"max_examples": 300}})
    head = tmp_path / "head"
    head.mkdir()
    plan = plan_differential(
        Where.of(staging(tmp_path, policy), (SPEC,), tmp_path / "base"), head, (SPEC,), "s" * 32
    )
    spec = plan.spec
    assert spec.grader is not None
    private = {m.target: m.source for m in spec.grader.private}
    written = json.loads(private[GRADER_PLAN].read_text())
    [fn] = written["functions"]
    assert fn["seed"] == function_seed("s" * 32, SPEC.id) and fn["examples"] == 300
    assert fn["reference"] == {"source": "suite", "module": "ref", "function": "half"}
    assert fn["efficiency"]["sizes"] == [10, 100] and fn["efficiency"]["repetitions"] == 5
    # Nothing of the plan is on a command line, in an environment or in what the subject is given.
    visible = json.dumps([spec.argv, dict(spec.env), [str(m.source) for m in (*spec.copy_in, *spec.mounts)],
                          spec.grader.argv, dict(spec.grader.env)])  # fmt: skip
    assert (
        "s" * 32 not in visible
        and str(fn["seed"]) not in visible
        and "ref" not in visible.replace("repo", "")
    )
    assert spec.grader.workdir == "/grader"
    pack_private(spec.grader.private)  # the private files are packable as the sandbox packs them
    assert spec.limits.timeout_s == budget_s((SPEC,), policy) >= policy.timeout_s


def test_base_as_the_reference_is_copied_to_the_grader_s_home(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    where = dataclasses.replace(
        Where.of(staging(tmp_path, Behaviour()), (SPEC,), tmp_path / "base"), suite=None, base=base
    )
    plan = plan_differential(where, tmp_path, (SPEC,), "s" * 32)
    assert plan.spec.grader is not None
    assert {m.target for m in plan.spec.grader.private} == {GRADER_BASE, GRADER_PLAN}  # no suite at all


def test_a_suite_function_whose_reference_is_base_gets_base_s_tree_beside_the_suite(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    from_base = dataclasses.replace(SPEC, reference=SPEC.function, source="base")
    where = Where.of(staging(tmp_path, Behaviour()), (SPEC, from_base), base)
    plan = plan_differential(where, tmp_path, (SPEC, from_base), "s" * 32)
    assert plan.spec.grader is not None
    private = {m.target: m.source for m in plan.spec.grader.private}
    assert (private[GRADER_BASE], set(private)) == (base, {GRADER_BASE, GRADER_SUITE, GRADER_PLAN})
    written = json.loads(private[GRADER_PLAN].read_text())
    module, _, name = SPEC.function.rpartition(".")
    assert written["functions"][1]["reference"] == {"source": "base", "module": module, "function": name}
    # A suite whose references are all its own: base's tree is not copied.
    assert Where.of(staging(tmp_path / "again", Behaviour()), (SPEC,), base).base is None


def log(*records: dict[str, Any], nonce: str = NONCE) -> bytes:
    start = {
        "kind": "start",
        "runner": "differential",
        "nonce": nonce,
        "version": 1,
        "clock": "cpu",
        "cpu_quota": 1.0,
        "hypothesis": "6.170.27",
    }
    return b"".join(json.dumps(r).encode() + b"\n" for r in (start, *records))


AGREED = {"kind": "function", "id": "a", "status": "agreed", "inputs": 10}
TIMED = {"kind": "efficiency", "id": "a", "status": "measured"}


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (log(AGREED, TIMED, {"kind": "finish"}), None),
        (log(AGREED, nonce="other"), "does not start with this run's start record"),
        (b"not json\n", "line 1 is not a JSON object"),
        (
            log({**AGREED, "id": "b"}, AGREED),
            "an unexpected 'function' record for 'a'",
        ),  # out of the plan's order
        (log(AGREED, AGREED), "an unexpected 'function' record"),  # twice
        (log({**AGREED, "id": "z"}), "an unexpected 'function' record for 'z'"),  # never planned
        (log(TIMED), "an unexpected 'efficiency' record"),  # timed before it was checked
        (
            log({**AGREED, "status": "disagreed"}, TIMED),
            "an unexpected 'efficiency' record",
        ),  # timed though it disagreed
        (log(AGREED, {"kind": "finish"}, TIMED), "records after the end of the run"),
    ],
)
def test_a_report_is_believed_only_as_far_as_its_protocol_holds(data: bytes, problem: str | None) -> None:
    parsed = parse_diff_log(data, NONCE, ("a", "b"))
    # Without this run's start record first, nothing says the grader ever started.
    assert parsed.started is (problem is None or not ("start record" in problem or "line 1" in problem))
    if problem is None:
        assert (parsed.problems, parsed.finished, parsed.cpu_quota, parsed.hypothesis) == (
            (),
            True,
            1.0,
            "6.170.27",
        )
        assert parsed.functions["a"]["inputs"] == 10 and "a" in parsed.efficiency
    else:
        assert problem in parsed.problems[0]


def result_of(data: bytes | None, **more: Any) -> RunResult:
    files = {"/grader/report.jsonl": data} if data is not None else {}
    return RunResult(exit_code=0, stdout=b"", stderr=b"", wall_s=1.0, files=files, **more)


def planned(tmp_path: Path) -> Any:
    return plan_differential(
        Where.of(staging(tmp_path, Behaviour()), (SPEC,), tmp_path / "base"), tmp_path, (SPEC,), "s" * 32
    )


def test_a_report_not_believed_fails_every_function_and_no_report_is_ours(tmp_path: Path) -> None:
    plan = planned(tmp_path)
    forged = read_differential(
        plan,
        result_of(log({**AGREED, "id": SPEC.id}, {**AGREED, "id": SPEC.id}, nonce=plan.nonce)),
        "hidden",
        Behaviour(),
    )
    assert (forged.status, forged.agreed, forged.functions[0].status) == ("failed", 0, "not_run")
    assert forged.detail.startswith("its report was not believed")
    missing = read_differential(plan, result_of(None), "held_out", Behaviour())
    assert (missing.status, missing.functions) == ("error", [])
    assert "server log" in missing.detail


def test_a_run_that_ended_early_counts_what_it_did_not_reach_against_the_change(tmp_path: Path) -> None:
    plan = planned(tmp_path)
    result = read_differential(
        plan, result_of(log(nonce=plan.nonce), limit_hit="memory"), "hidden", Behaviour()
    )
    assert (result.status, result.functions[0].status) == ("failed", "not_run")
    assert "memory limit" in result.functions[0].detail
