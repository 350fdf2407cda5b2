"""Reuse: a job whose inputs equal a completed run's is answered with that run's report.

The key is computed here, on the host, from trusted inputs only: the shas
GitHub gave for the PR, the suites' bytes on the host, the policy read at the
base sha, the settings and code of this patchgate. Nothing the PR's code can
write (its tree, its test output, its report) enters it, and the lookup
goes by the key column alone, never by fields of a stored report.

Only a complete verdict is reused: never a neutral one, never one where a
tool, a suite, the strength measurement or the judge broke or was out of
reach (a repeat may fare better), never a judge-anyway run. Explicit reruns
(buttons, re-requests, ``/patchgate rerun``) always gate afresh.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from bot.github.events import PR_GATE_ACTIONS
from bot.service.commenting import check_run_url
from bot.settings import Settings
from bot.store import StoredRun
from checks.behaviour.suites import Suites
from checks.policy import Policy
from checks.quality.inputs import JudgeSettings, Task
from checks.report import Report, Reuse

# Only these triggers may be answered from the store; every other one asked for a fresh run.
REUSING_TRIGGERS = frozenset(f"pull_request.{action}" for action in PR_GATE_ACTIONS)
# What changes a verdict besides the repository's and the suites' bytes: this code (bot/ too: it
# fetches the trees and the suites, and decides what the judge reads).
_CODE_ROOTS = ("bot", "checks", "sandbox", "rubrics")
# The suites are small trees of test files; a store past this is hashed by name and size only.
_MAX_SUITE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class ReuseInputs:
    """Everything a verdict depends on, as the host knows it before any PR code runs."""

    repository: str
    base_sha: str
    head_sha: str
    suites: str  # suites_digest()
    policy: str  # the effective policy, as JSON
    patchgate: str  # code_digest()
    pipeline: str  # the pipeline function's name
    sandbox: str  # the sandbox image tag and runtime
    judge: str  # judge settings (never the key) and, when a judge is set, what it reads
    # What of the PR decides how its head runs: its labels and title (a refactor is compared with
    # base), a replayed differential seed. Never part of a base run's key.
    change: str = ""


def reuse_key(inputs: ReuseInputs) -> str:
    """Return the hex SHA-256 of ``inputs`` in a canonical form."""
    text = json.dumps(asdict(inputs), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def job_inputs(
    repository: str,
    base_sha: str,
    head_sha: str,
    *,
    suites: Suites,
    policy: Policy,
    pipeline: object,
    settings: Settings,
    judge: str,
) -> ReuseInputs:
    """Return one job's inputs (``judge``: judge_text()); reads the suites and the code."""
    return ReuseInputs(
        repository=repository,
        base_sha=base_sha,
        head_sha=head_sha,
        suites=suites_digest(suites),
        policy=policy_text(policy),
        patchgate=code_digest(),
        pipeline=f"{getattr(pipeline, '__module__', '')}:{getattr(pipeline, '__qualname__', '')}",
        sandbox=sandbox_text(settings.sandbox_runtime),
        judge=judge,
        change=json.dumps([list(suites.labels), suites.title, suites.differential_seed]),
    )


def base_salt(inputs: ReuseInputs) -> str:
    """Return what every base run of a job depends on: its inputs without the head and the judge.

    ``checks.behaviour.baseruns`` adds each run's own part (the environment image, the suite,
    the head's module names) to it.
    """
    return reuse_key(replace(inputs, head_sha="", judge="", change=""))


def answer(
    found: StoredRun | None, base_sha: str, head_sha: str, github_url: str, repository: str
) -> Report | None:
    """Return a stored run's report marked as reused; None when there is none or it does not fit."""
    if found is None:
        return None
    try:
        report = Report.model_validate(found.report)
    except ValidationError:  # stored under another report schema: gate afresh
        return None
    if (report.base_sha, report.head_sha) != (base_sha, head_sha):  # a belt to the key's braces
        return None
    run = found.check_run_id
    url = check_run_url(github_url, repository, run) if run is not None else ""
    return mark_reused(report, Reuse(job_id=found.job_id, check_run_id=run, url=url))


def policy_text(policy: Policy) -> str:
    """Return the effective policy (defaults filled in) as canonical JSON."""
    return json.dumps(policy.model_dump(mode="json"), sort_keys=True)


def judge_text(judge: JudgeSettings | None, task: Task, provenance: tuple[str, ...]) -> str:
    """Return what of the judge decides its verdicts: settings (no key), and the task it reads."""
    if judge is None:
        return "no judge"
    settings = {
        "api_base": judge.api_base,
        "timeout_s": judge.timeout_s,
        "num_retries": judge.num_retries,
        "cost_per_token": judge.cost_per_token,
        "budget_s": judge.budget_s,
        "task": [task.title, task.body, task.issue],
        "provenance": list(provenance),
    }
    return json.dumps(settings, sort_keys=True)


def sandbox_text(runtime: str | None) -> str:
    """Return the sandbox's identity: the base image's recipe tag, the runtime, the package index."""
    from sandbox.images import base_image_tag

    # The environment image is a function of the base tree (in the key), the base image and
    # the index it installs from; a credential in the index URL only ever enters the hash.
    index = os.environ.get("PIP_INDEX_URL", "")
    return json.dumps([base_image_tag(), runtime or "runc", index])


def suites_digest(suites: Suites) -> str:
    """Return a digest of the suites' files (names and bytes), their commit and their error."""
    digest = hashlib.sha256(json.dumps([suites.commit, suites.error]).encode())
    budget = _MAX_SUITE_BYTES
    for kind, root in (("hidden", suites.hidden), ("held_out", suites.held_out)):
        digest.update(f"\0{kind}\0".encode())
        if root is None or not root.is_dir():
            continue
        for path in sorted(p for p in root.rglob("*") if not p.is_dir()):
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"{rel}\0->{os.readlink(path)}\0".encode())
                continue
            size = path.stat().st_size
            digest.update(f"{rel}\0{size}\0".encode())
            if size <= budget:
                budget -= size
                digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def code_digest() -> str:
    """Return this patchgate's version and a digest of its code and rubrics (once per process)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("patchgate")
    except PackageNotFoundError:
        release = "unknown"
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(release.encode())
    for top in _CODE_ROOTS:
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".py", ".yml", ".yaml", ".txt", ".Dockerfile") and path.is_file():
                digest.update(f"\0{path.relative_to(root).as_posix()}\0".encode() + path.read_bytes())
    return f"{release}+{digest.hexdigest()[:16]}"


def reusable(report: Report) -> bool:
    """Return True when ``report`` is a complete verdict that a repeat may be answered with."""
    if report.reused_from is not None or report.conclusion == "neutral":
        return False
    layers = (report.shape.status, report.behaviour.status, report.quality.status)
    if any(status in ("error", "unavailable") for status in layers):
        return False
    if any(tool.status == "error" for tool in report.shape.tools):
        return False
    if any(suite.status in ("error", "unavailable") for suite in report.behaviour.suites):
        return False
    if report.behaviour.strength.status == "error" or report.behaviour.strength.pending:
        return False
    return all(c.verdict != "error" for c in report.quality.criteria)


def mark_reused(report: Report, reuse: Reuse) -> Report:
    """Return a copy of ``report`` saying where it comes from."""
    return report.model_copy(update={"reused_from": reuse})
