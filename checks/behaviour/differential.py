"""Differential runs: the plan of one head run per differential suite, and its report read back.

One fresh container on head holds the grader (``grader/differential.py``:
the references, Hypothesis, the timing) and the subject (the change's code).
The grader's plan - the references' names, the strategies, the budgets and
the seeds - reaches it as a private file under ``/grader``, as a suite does:
the subject never sees it, nor the suite, nor, for a refactor, base's tree.

The seed is derived here, on the host, from the suite's own bytes (which the
subject never has) and the base sha - nothing of the head's: nothing the
change can read lets it compute the seed, and nothing its author can do
changes it. (It once took the head sha too: a buggy change caught on one
push could be pushed again unchanged, as a new commit, until a seed missed
its bug.) Every head gated on the same base draws the same inputs, so a
rerun reproduces a verdict and a bug found stays found until the code
changes. It is recorded in the report; ``Suites.differential_seed``
replays a recorded one.

The report is believed only as far as its protocol holds: this run's start
record first (with the host's nonce), each planned function at most once and
in the plan's order, its efficiency record right after it, nothing after the
finish.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checks.behaviour.diffresult import HELD_OUT_ERROR, NAMES, Source, differential_result, function_check
from checks.behaviour.diffsuite import DiffSpec
from checks.behaviour.outcomes import MAX_LOG_BYTES, clean
from checks.behaviour.plan import (
    CONTAINER_HARNESS,
    CONTAINER_REPO,
    GRADER_PLAN,
    GRADER_REPORT,
    GRADER_SUITE,
    LAUNCH,
    Staging,
)
from checks.policy import Behaviour
from checks.report import DifferentialResult
from sandbox.spec import GRADER_HOME, RENDEZVOUS, Grader, Limits, Mount, RunResult, RunSpec

log = logging.getLogger(__name__)

GRADER_BASE = f"{GRADER_HOME}/base"
_SEED_SALT = b"patchgate differential seed 2\0"
# Beyond the functions' own budgets: starting both sides, importing, the answer's grace.
_RUN_SLACK_S = 90.0


@dataclass(frozen=True, eq=False)
class DiffPlan:
    """One differential run and what the host needs to read its report (hashed by identity)."""

    specs: tuple[DiffSpec, ...]
    spec: RunSpec
    nonce: str
    seed: str
    # Said beside the result (a refactor's changed functions that are not compared, and why).
    notes: tuple[str, ...] = ()


def suite_seed(root: Path, base_sha: str) -> str:
    """Derive a run's seed from the suite's files (names and bytes) and the base sha: 32 hex digits."""
    digest = hashlib.sha256(_SEED_SALT)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(f"\0{base_sha}".encode())
    return digest.hexdigest()[:32]


def function_seed(seed: str, spec_id: str) -> int:
    """The seed of one function's draws (and its efficiency inputs), from the run's."""
    return int(hashlib.sha256(f"{seed}\0{spec_id}".encode()).hexdigest()[:32], 16)


def _function_plan(spec: DiffSpec, seed: str, policy: Behaviour) -> dict[str, Any]:
    differential, efficiency = policy.differential, policy.efficiency
    module, _, name = spec.reference.rpartition(".")
    reference = {"source": spec.source, "module": module, "function": name}
    planned: dict[str, Any] = {
        "id": spec.id,
        "module": spec.module,
        "function": spec.name,
        "reference": reference,
        "strategies": dict(spec.strategies),
        "examples": min(spec.examples or differential.max_examples, differential.max_examples),
        "seconds": differential.time_limit_s,
        "call_timeout_s": differential.call_timeout_s,
        "seed": function_seed(seed, spec.id),
        "efficiency": None,
    }
    if spec.efficiency is not None and efficiency.enabled:
        gen_module, _, gen_name = spec.efficiency.input.rpartition(".")
        planned["efficiency"] = {
            "sizes": list(spec.efficiency.sizes),
            "input": {"module": gen_module, "function": gen_name},
            "repetitions": spec.efficiency.repetitions or efficiency.repetitions,
            "seconds": efficiency.time_limit_s,
            "call_timeout_s": efficiency.call_timeout_s,
        }
    return planned


def budget_s(specs: tuple[DiffSpec, ...], policy: Behaviour) -> float:
    """The run's wall-clock budget: every function's own budgets, and some slack; at least the policy's."""
    total = _RUN_SLACK_S
    for spec in specs:
        total += policy.differential.time_limit_s + 2 * policy.differential.call_timeout_s
        if spec.efficiency is not None and policy.efficiency.enabled:
            total += policy.efficiency.time_limit_s + 2 * policy.efficiency.call_timeout_s
    return max(total, policy.timeout_s)


@dataclass(frozen=True)
class Where:
    """What a differential run is made of besides its functions: the image, our harness, a work folder,
    the staged suite (None: base is the reference) and, for a refactor, the base tree."""

    image: str
    harness: Path
    work: Path
    policy: Behaviour
    suite: Path | None = None
    base: Path | None = None

    @classmethod
    def of(cls, staging: Staging, specs: tuple[DiffSpec, ...], base: Path) -> Where:
        """A suite's differential run: where its other runs are staged; base's tree where a function's
        reference is base's own (``reference: base``)."""
        # The change's functions run there: in head's image, with the dependencies it brought.
        from_base = any(spec.source == "base" for spec in specs)
        return cls(staging.image_of("head"), staging.harness, staging.work, staging.policy,
                   suite=staging.staged, base=base if from_base else None)  # fmt: skip


def plan_differential(where: Where, head: Path, specs: tuple[DiffSpec, ...], seed: str) -> DiffPlan:
    """Plan the head run of ``specs``: a suite's references, or base's own functions for a refactor."""
    policy = where.policy
    nonce = secrets.token_hex(16)
    roots = {
        **({"suite": GRADER_SUITE} if where.suite is not None else {}),
        **({"base": GRADER_BASE} if where.base is not None else {}),
    }
    plan = {
        "report": GRADER_REPORT,
        "nonce": nonce,
        "rendezvous": RENDEZVOUS,
        "roots": roots,
        "functions": [_function_plan(s, seed, policy) for s in specs],
    }
    private = where.work / f"private-{secrets.token_hex(8)}"
    private.mkdir(parents=True)
    (private / "plan.json").write_text(json.dumps(plan))
    mounts = [Mount(private / "plan.json", GRADER_PLAN)]
    if where.suite is not None:
        mounts.append(Mount(where.suite, GRADER_SUITE))
    if where.base is not None:
        mounts.append(Mount(where.base, GRADER_BASE))
    hash_seed = {"PYTHONHASHSEED": str(secrets.randbelow(2**32))}
    grader = Grader(
        argv=(*LAUNCH, "differential", GRADER_PLAN),
        private=tuple(mounts),
        env=hash_seed,
        collect=(GRADER_REPORT,),
        workdir=GRADER_HOME,
    )
    spec = RunSpec(
        image=where.image,
        argv=(*LAUNCH, "subject", f"{RENDEZVOUS}/grader.sock", CONTAINER_REPO),
        copy_in=(Mount(head, CONTAINER_REPO),),
        mounts=(Mount(where.harness, CONTAINER_HARNESS),),
        workdir=CONTAINER_REPO,
        env=hash_seed,
        limits=Limits(timeout_s=budget_s(specs, policy), memory_mb=policy.memory_mb),
        grader=grader,
    )
    return DiffPlan(specs, spec, nonce, seed)


@dataclass(frozen=True)
class DiffLog:
    """One differential run's report, parsed. ``problems`` non-empty means: do not believe it."""

    started: bool = False
    finished: bool = False
    functions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    efficiency: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    clock: str = "cpu"
    cpu_quota: float | None = None
    # The grader's Hypothesis: the same seed may draw differently under another version.
    hypothesis: str = ""
    subject_errors: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def parse_diff_log(data: bytes | None, nonce: str, ids: tuple[str, ...]) -> DiffLog:
    """Parse a differential run's report (None: the run produced none) against its planned ``ids``."""
    if data is None:
        return DiffLog()
    if len(data) > MAX_LOG_BYTES:
        return DiffLog(started=True, problems=(f"the report is larger than {MAX_LOG_BYTES} bytes",))
    records: list[dict[str, Any]] = []
    # A run killed mid-write leaves at most one partial last line; it is not a violation.
    for number, line in enumerate((ln for ln in data.split(b"\n")[:-1] if ln.strip()), 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            return DiffLog(started=number > 1, problems=(f"line {number} is not a JSON object",))
        records.append(record)
    first = records[0] if records else {}
    if (first.get("kind"), first.get("runner"), first.get("nonce"), first.get("version")) != (
        "start",
        "differential",
        nonce,
        1,
    ):
        return DiffLog(problems=("the report does not start with this run's start record",))
    functions: dict[str, Mapping[str, Any]] = {}
    efficiency: dict[str, Mapping[str, Any]] = {}
    subject_errors: list[str] = []
    position, finished, problem = -1, False, None
    for record in records[1:]:
        kind, spec_id = record.get("kind"), record.get("id")
        if finished:
            problem = "records after the end of the run"
        elif kind == "function" and spec_id in ids and ids.index(spec_id) > position:
            position = ids.index(spec_id)
            functions[spec_id] = record
        elif (
            kind == "efficiency"
            and spec_id in functions
            and spec_id not in efficiency
            and (ids.index(spec_id) == position and functions[spec_id].get("status") == "agreed")
        ):
            efficiency[spec_id] = record
        elif kind == "subject_error":
            subject_errors.append(clean(record.get("detail")))
        elif kind == "finish":
            finished = True
        else:
            problem = f"an unexpected {kind!r} record for {clean(spec_id)!r}"
        if problem is not None:
            return DiffLog(started=True, problems=(problem,))
    quota = first.get("cpu_quota")
    return DiffLog(
        started=True,
        finished=finished,
        functions=functions,
        efficiency=efficiency,
        clock="wall" if first.get("clock") == "wall" else "cpu",
        hypothesis=clean(first.get("hypothesis"))[:40],
        cpu_quota=float(quota) if isinstance(quota, (int, float)) and not isinstance(quota, bool) else None,
        subject_errors=tuple(subject_errors[:5]),
    )


def read_differential(
    plan: DiffPlan, result: RunResult, source: Source, policy: Behaviour
) -> DifferentialResult:
    """Turn a differential run into its report entry (a report not believed fails every function)."""
    run_log = parse_diff_log(result.files.get(GRADER_REPORT), plan.nonce, tuple(s.id for s in plan.specs))
    if not run_log.started:
        # The grader writes its start record before the subject can even connect: its absence is ours.
        detail = f"the differential run produced no report (exit code {result.exit_code}); see the server log"
        log.error(
            "differential run: no report; exit %s; stderr: %s",
            result.exit_code,
            result.stderr[-2000:].decode("utf-8", "replace"),
        )
        return DifferentialResult(
            name=NAMES[source],
            source=source,
            status="error",
            seed=plan.seed,
            detail=HELD_OUT_ERROR if source == "held_out" else detail,
        )
    gone = run_log.subject_errors[0] if run_log.subject_errors else ""
    if result.limit_hit == "memory":
        gone = f"the run hit its memory limit ({policy.memory_mb} MiB) and was ended"
    elif result.limit_hit == "pids":
        gone = "the run hit its process limit and was ended"
    elif result.timed_out:
        gone = f"the run used up its time budget ({plan.spec.limits.timeout_s:g}s)"
    problem = f"its report was not believed ({run_log.problems[0]})" if run_log.problems else ""
    reported = {} if problem else run_log.functions
    checks = [
        function_check(
            spec,
            reported.get(spec.id),
            run_log.efficiency.get(spec.id),
            gone=problem or gone,
            clock=run_log.clock,
            quota=run_log.cpu_quota,
            policy=policy,
        )
        for spec in plan.specs
    ]
    entry = differential_result(source, plan.specs, checks, seed=plan.seed, policy=policy, problem=problem)
    entry.hypothesis = run_log.hypothesis
    if plan.notes:
        entry.detail = "; ".join([*([entry.detail] if entry.detail else []), *plan.notes])
    return entry
