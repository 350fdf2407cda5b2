"""Reuse across jobs: a repeat answered from the store, and a synchronize against cold (not a test).

The real server (`patchgate serve` with the real pipeline, its in-process
worker and Docker sandbox) and the tests' fake GitHub, on loopback; the
synchronize path is the service's (`patchgate run` has no store of earlier
jobs). The repository is the demo's example (examples/duration: the base,
the correct agent PR, its hidden and held-out suites in the test store) with
a requirements.txt on the base asking for one small package
(``--dependency``, default six), so that a cold job builds the environment
image as a real repository's would. Each figure is the wall time from the
signed delivery to the completed check run as the fake GitHub sees it:

- cold: PR #1 opened, the first job of this repository (the sandbox base
  image exists; its environment image and tarballs do not);
- repeat: PR #2 opened from the same branch (same base, head, suites and
  policy): answered from the store, target < 1 s;
- synchronize: a push to PR #1 that changes one file (a comment in the
  module the PR changes), target <= 0.7x cold (the base tarball, the
  environment image and the suites' clean base runs are reused; the base
  side of the shape tools shares its container with the head and is not,
  and the head's work cannot be: bench/README.md has the profile).

Each round uses a repository of its own (a cold start for each); prints
each time with the per-layer timings the reports carry, each round's ratios
with the load average (the machine may be shared), then the medians.

Usage: .venv/bin/python bench/reuse.py [--rounds 3] [--dependency REQ] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingress import key_pair  # noqa: E402 - after the path set-up above
from bot.cli.demo_repo import bundled_example, load_prs  # noqa: E402
from tests.bot.harness import Pull, Server, server_env, wait_for  # noqa: E402
from tests.conftest import GitRepo  # noqa: E402
from tests.fakes.github_server import FakeGitHub, fake_github  # noqa: E402

REPOSITORY = "octo/duration"
TARGET_REPEAT_S = 1.0
TARGET_SYNC_RATIO = 0.7


def completed(pull: Pull) -> dict[str, Any] | None:
    key = f"{pull.repository}#{pull.number}@{pull.head_sha}"
    runs = [r for r in pull.runs() if r["external_id"] == key and r["status"] == "completed"]
    return runs[-1] if runs else None


def gate(server: Server, pull: Pull, action: str) -> tuple[float, dict[str, Any]]:
    """Deliver ``action`` for ``pull``; return the seconds until its check run completed, and the run."""
    start = time.monotonic()
    answer = server.post("pull_request", pull.payload(action)).json()
    if answer.get("status") != "queued":
        raise SystemExit(f"the delivery was not queued: {answer}")
    run: dict[str, Any] = wait_for(lambda: completed(pull), 1200, f"#{pull.number}'s check run")
    return time.monotonic() - start, run


def pause() -> float:
    """Return the time now and wait past the next whole second: the engine counts events by second."""
    now = time.time()
    time.sleep(1.1)
    return now + 1


def timings(server: Server) -> dict[int, dict[str, float]]:
    """Return each stored run's per-layer timings, by job id."""
    import sqlite3

    path = server.env["PATCHGATE_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        return {job: json.loads(t) for job, t in db.execute("SELECT job_id, timings FROM runs ORDER BY id")}


def tree_files(root: Path) -> dict[str, str | bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def setup(github: FakeGitHub, state: Path, repository: str, dependency: str) -> Pull:
    """Build the example repository, register it with the fake, put its suites in the test store.

    With ``dependency``, the base has a requirements.txt asking for it (and a line unique to
    this run, so its environment image is built cold).
    """
    src = bundled_example()
    (folder, pr), *_ = load_prs(src)
    repo = GitRepo(state / repository.replace("/", "-"))
    base = tree_files(src / "repo")
    if dependency:
        base["requirements.txt"] = f"# bench/reuse.py run {uuid.uuid4().hex}\n{dependency}\n"
    base_sha = repo.commit("base", base)
    repo.branch(pr.branch)
    head_sha = repo.commit(pr.title, tree_files(folder / "files"))
    shutil.copytree(src / "suites", state / "suites" / repository)
    github.add_repo(repository, repo.path)
    pull = Pull(github, repository, repo, 1, base_sha, head_sha, pr.branch, repository, author=pr.author)
    pull.body = pr.body
    pull.publish()
    return pull


def one_round(server: Server, github: FakeGitHub, state: Path, n: int, dependency: str) -> list[float]:
    """Gate cold, repeat and synchronize in a repository of their own; print and return the seconds."""
    from sandbox.envimage import env_image_tag

    pull = setup(github, state, f"{REPOSITORY}-{n}", dependency)
    env_tag = env_image_tag(pull.repo.path)
    try:
        cold, first = gate(server, pull, "opened")
        twin = dataclasses.replace(pull, number=2)
        twin.publish()
        repeat, second = gate(server, twin, "opened")
        module = "durations/parse.py"
        text = (pull.repo.path / module).read_text()
        pull.push({module: text + "\n# A comment: the one file this push changes.\n"}, "a comment")
        sync, third = gate(server, pull, "synchronize")
    finally:
        if env_tag is not None:  # this round's environment image is unique to it
            from sandbox.engine import docker_client

            client = docker_client()
            with contextlib.suppress(Exception):
                client.images.remove(env_tag, force=True)
            client.close()
    layers = list(timings(server).items())[-3:]
    rows = [("cold (PR #1 opened)", cold, first), ("repeat (PR #2, same head)", repeat, second),
            ("synchronize (one file)", sync, third)]  # fmt: skip
    for (name, seconds, run), (job, parts) in zip(rows, layers, strict=True):
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(parts.items()) if ":" not in k)
        if run["output"]["title"].startswith("(reused)"):
            steps = "reused: no layer ran"
        print(f"round {n} {name:26s} {seconds:7.2f} s  {run['conclusion']:8s} (job {job}: {steps})")
    print(
        f"round {n} repeat / 1 s = {repeat / TARGET_REPEAT_S:.2f}; synchronize / cold = {sync / cold:.2f}"
        f"  (load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return [cold, repeat, sync]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="keep the state (database, server log) in this directory")
    parser.add_argument(
        "--dependency",
        default="six==1.16.0",
        help="a requirement of the base branch (its environment image is built cold); '' for none",
    )
    parser.add_argument("--rounds", type=int, default=3, help="cold/repeat/synchronize rounds (medians)")
    args = parser.parse_args()
    from sandbox.images import ensure_base_image

    ensure_base_image(log=lambda line: print(line, file=sys.stderr))
    private, public = key_pair()
    scratch = Path(tempfile.mkdtemp(prefix="patchgate-bench-reuse-"))
    state = args.keep or scratch
    state.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores; the demo's example with {args.dependency or 'no dependency'}")
    with fake_github(4242, public) as github:
        env = server_env(github=github, private_key=private, state=state)
        env.update(PATCHGATE_LEASE_S="60", PATCHGATE_REAPER_INTERVAL_S="15", PATCHGATE_CONCURRENCY="1")
        server = Server(env, log=state / "server.log", pipeline="checks.pipeline:run_pipeline").start()
        try:
            rounds = [one_round(server, github, state, n, args.dependency) for n in range(1, args.rounds + 1)]
        finally:
            server.stop()
    cold, repeat, sync = (statistics.median(r[i] for r in rounds) for i in range(3))
    ratios = sorted(r[2] / r[0] for r in rounds)
    print(f"median cold {cold:.1f} s, repeat {repeat:.2f} s, synchronize {sync:.1f} s")
    print(f"repeat / 1 s target          = {repeat / TARGET_REPEAT_S:.2f} (median)")
    print(
        f"synchronize / cold           = {statistics.median(ratios):.2f} (median; rounds "
        f"{', '.join(f'{x:.2f}' for x in ratios)}; target <= {TARGET_SYNC_RATIO})"
    )
    if args.keep is None:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
