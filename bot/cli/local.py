"""Gate a change of a local git repository with no GitHub at all (`patchgate run`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from checks.pipeline import Given, PipelineInputs, Progress, error_report, run_pipeline
from checks.policy import POLICY_PATH, Policy
from checks.policyfile import PolicyError, load_policy
from checks.refusal import refused_report
from checks.report import Report
from checks.runner import Runner
from checks.workspace import TreeRefused, from_git
from sandbox.trees import scratch

# As many commits as GitHub lists for a pull request (GET /pulls/{n}/commits stops at 250).
MAX_COMMITS = 250


@dataclass(frozen=True)
class LocalRun:
    repo: Path
    base: str
    head: str
    # The suites, the task and the judge: the pipeline's own record, passed on as it is.
    given: Given = field(default_factory=Given)
    policy_file: Path | None = None
    # The PR author's login, as the service sees it (self-preference note).
    author: str = ""
    # A store URL (the service's PATCHGATE_DATABASE_URL): its verdict cache and calibration records.
    database: str | None = None


def commit_provenance(repo: Path, base_sha: str, head_sha: str) -> list[str]:
    """Return the authors and Co-authored-by trailers of the commits in base..head."""
    from checks.quality.provenance import commit_signals
    from sandbox.host import run_process

    done = run_process(
        ("git", "-C", str(repo), "log", f"--max-count={MAX_COMMITS}", "--format=%an <%ae>%x1f%B%x1e",
         f"{base_sha}..{head_sha}"),
        timeout=60, check=True, what="list the change's commits",
    )  # fmt: skip
    signals: list[str] = []
    for entry in done.stdout.decode("utf-8", "replace").split("\x1e"):
        author, _, message = entry.strip("\n").partition("\x1f")
        signals += commit_signals(author, message)
    return signals


def read_policy(base_dir: Path, override: Path | None) -> Policy:
    """Read the policy from ``override`` or from the BASE tree; the PR never configures its gate."""
    path = override if override is not None else base_dir / POLICY_PATH
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    # Errors name the file read: the override's path, or the base tree's policy file.
    return load_policy(text, str(override) if override is not None else POLICY_PATH)


def run_local(
    run: LocalRun, runner: Runner, *, image: str | None = None, on_progress: Progress | None = None
) -> Report:
    """Export base...head, read the base policy, and run the whole pipeline.

    A tree beyond bounds is a report too (see checks.refusal); the exported
    trees are removed afterwards whatever happened, and a failure to remove
    them is logged, never raised over the report.
    """
    with scratch("patchgate-") as tmp:
        try:
            ws = from_git(run.repo, run.base, run.head, tmp)
        except TreeRefused as exc:
            return refused_report(exc)
        try:
            policy = read_policy(ws.base_dir, run.policy_file)
        except PolicyError as exc:
            return error_report(str(exc), "action_required", base_sha=ws.base_sha, head_sha=ws.head_sha)
        authors = [run.author] if run.author else []
        provenance = authors + commit_provenance(run.repo, ws.base_sha, ws.head_sha)
        inputs = PipelineInputs(
            workspace=ws,
            policy=policy,
            runner=runner,
            given=run.given,
            run_key=f"local:{ws.base_sha}:{ws.head_sha}",
            provenance=tuple(provenance),
        )
        if run.database is None or run.given.judge is None:
            return run_pipeline(inputs, image=image, on_progress=on_progress)
        return _with_store(inputs, run.database, image, on_progress)


def _with_store(inputs: PipelineInputs, url: str, image: str | None, on_progress: Progress | None) -> Report:
    """Run the pipeline with a store's verdict cache and calibration records, as the service does."""
    from bot.service.judging import stored_records
    from bot.store import Store, StoreVerdictCache
    from bot.store.localruns import ensure_sqlite_dir

    ensure_sqlite_dir(url)
    store = Store(url)
    try:
        store.migrate()
        inputs = replace(inputs, verdict_cache=StoreVerdictCache(store), judge_records=stored_records(store))
        return run_pipeline(inputs, image=image, on_progress=on_progress)
    finally:
        store.close()
