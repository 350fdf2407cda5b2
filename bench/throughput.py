"""Twenty PRs queued at once: prints completions per minute and the server's memory (not a test).

Starts the real server (`patchgate serve`, in-process workers, the real
pipeline in real Docker sandboxes) against the tests' fake GitHub on
loopback, once per worker count (``PATCHGATE_CONCURRENCY``, 1 and 2). Each
run makes its own PRs (tests/bot/harness.py's ``make_pull``: one repository
each, ``add`` fixed from ``a - b`` to ``a + b``, a two-test hidden suite in
the test store), sends their ``pull_request.opened`` deliveries all at once
and waits until every check run is completed. Printed per worker count: the
time from the first delivery to the last completion, completions per
minute, the conclusions, and the server's resident memory (its process
and any children, read from /proc; psutil is not a dependency) idle after
the warm-up and at its peak under load, sampled every 0.2 s. The machine's
1-minute load average is printed beside each row: the sandboxes, the server
and this process share its cores.

With ``--no-suite`` the PRs have no hidden suite: the shape layer only.

With ``--processes 1,2,4`` the topology is the scaled-out one instead: `patchgate
serve` without workers, PostgreSQL as the store and Redis as the broker (from
scripts/services.sh: a fresh database and a flushed Redis each run), and that
many `patchgate worker` processes, each running ``--workers`` jobs at once
(PATCHGATE_CONCURRENCY; one value). Memory is then the sum over the server and
every worker process tree.

Usage: .venv/bin/python bench/throughput.py [--prs 20] [--workers 1,2] [--no-suite]
       eval "$(bash scripts/services.sh)"; .venv/bin/python bench/throughput.py --prs 8 --processes 1,2,4
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingress import key_pair  # noqa: E402 - bench/ingress.py: the App's key pair

from tests.bot.harness import Pull, Server, make_pull, server_env  # noqa: E402
from tests.fakes.github_server import fake_github  # noqa: E402

HIDDEN = (
    "from app import add\n\n\n"
    "def test_adds():\n    assert add(2, 3) == 5\n\n\n"
    "def test_adds_negatives():\n    assert add(-2, -3) == -5\n"
)
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(pid: int) -> int:
    """Return the resident bytes of ``pid`` and its descendants (0 for a process that is gone)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += int((Path("/proc") / str(current) / "statm").read_text().split()[1]) * PAGE
        except OSError:
            continue
        todo += children.get(current, [])
    return total


class Sampler(threading.Thread):
    """Sample the resident memory of some process trees (summed) until stopped; keep the peak."""

    def __init__(self, *pids: int) -> None:
        super().__init__(daemon=True)
        self.pids, self.peak, self._done = pids, 0, threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, sum(tree_rss(pid) for pid in self.pids))
            self._done.wait(0.2)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


@contextlib.contextmanager
def scaled_out(processes: int) -> Iterator[dict[str, str]]:
    """The settings of a scaled-out run: a fresh PostgreSQL database and a flushed Redis."""
    import redis

    from tests.bot.conftest import _fresh_postgres

    pg, broker = os.environ.get("PATCHGATE_TEST_POSTGRES_URL"), os.environ.get("PATCHGATE_TEST_REDIS_URL")
    if not pg or not broker:
        raise SystemExit('--processes needs PostgreSQL and Redis: eval "$(bash scripts/services.sh)" first')
    client = redis.Redis.from_url(broker)
    client.flushdb()
    with contextlib.contextmanager(_fresh_postgres)(pg) as database:
        yield {"PATCHGATE_BROKER": broker, "PATCHGATE_DATABASE_URL": database}
    client.flushdb()
    client.close()


def start_workers(env: dict[str, str], state: Path, processes: int) -> list[subprocess.Popen[bytes]]:
    """Start ``processes`` `patchgate worker` processes on the real pipeline; wait until each runs."""
    procs = []
    for i in range(processes):
        log = state / f"worker{i}.log"
        with log.open("ab") as out:
            argv = [sys.executable, "-m", "bot.cli", "worker", "--pipeline", "checks.pipeline:run_pipeline"]
            procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 90
        while " running" not in log.read_text() and time.monotonic() < deadline:
            if procs[-1].poll() is not None:
                raise SystemExit(f"worker {i} exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
    return procs


def one_run(
    workers: int, prs: int, timeout: float, suite: bool, processes: int = 0
) -> tuple[float, Counter[str], int, int]:
    """Queue ``prs`` PRs at once on a fresh server with ``workers``; return the time, conclusions, RSS.

    ``processes``: that many worker processes of ``workers`` each, beside a server without workers.
    """
    private, public = key_pair()
    with contextlib.ExitStack() as stack:
        github = stack.enter_context(fake_github(4242, public))
        state = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        topology = stack.enter_context(scaled_out(processes)) if processes else {}
        env = server_env(
            github=github, private_key=private, state=state, PATCHGATE_CONCURRENCY=str(workers), **topology
        )
        env["PATCHGATE_LEASE_S"] = "120"
        env["PATCHGATE_REAPER_INTERVAL_S"] = "15"
        pulls: list[Pull] = []
        for i in range(prs):
            name = f"through{workers}x{processes}-{i}"
            pulls.append(make_pull(github, state / "repos", name, number=i + 1))
            if suite:
                hidden = state / "suites" / f"octo/{name}" / "hidden"
                hidden.mkdir(parents=True)
                (hidden / "test_add.py").write_text(HIDDEN)
        server = Server(env, log=state / "server.log")
        server.pipeline = "checks.pipeline:run_pipeline"
        server.start()
        procs = start_workers(env, state, processes) if processes else []
        try:
            assert server.proc is not None
            time.sleep(2)
            pids = [server.proc.pid, *(p.pid for p in procs)]
            idle = sum(tree_rss(pid) for pid in pids)
            sampler = Sampler(*pids)
            sampler.start()
            started = time.monotonic()
            for pull in pulls:
                response = server.post("pull_request", pull.payload("opened"))
                if response.status_code != 202:
                    raise SystemExit(f"the server answered {response.status_code}: {response.text}")
            done: dict[str, str] = {}
            deadline = started + timeout
            while len(done) < len(pulls) and time.monotonic() < deadline:
                for pull in pulls:
                    run = pull.completed()
                    if run is not None and pull.repository not in done:
                        done[pull.repository] = str(run.get("conclusion"))
                        if done[pull.repository] != "success":  # say why, from the check run's title
                            title = (run.get("output") or {}).get("title", "")
                            print(f"  {pull.repository}: {done[pull.repository]}: {title}", flush=True)
                time.sleep(0.5)
            elapsed = time.monotonic() - started
            peak = sampler.stop()
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=60)
            server.stop()
        if len(done) < len(pulls):
            tail = (state / "server.log").read_text()[-3000:]
            raise SystemExit(f"{len(pulls) - len(done)} PRs not completed within {timeout:.0f} s:\n{tail}")
        return elapsed, Counter(done.values()), idle, peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prs", type=int, default=20)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument(
        "--suite",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="give each PR its hidden suite (--no-suite: the shape layer only)",
    )
    parser.add_argument(
        "--processes",
        default="",
        help="scale out: worker process counts to compare (e.g. 1,2,4), each of --workers jobs at once",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for the last run")
    args = parser.parse_args()
    if args.processes:
        scale_out(args)
        return
    layers = "shape, behaviour and strength" if args.suite else "shape only (--no-suite)"
    print(f"machine: {os.cpu_count()} cores; {args.prs} PRs queued at once; the real pipeline ({layers})")
    rates = {}
    for workers in (int(w) for w in args.workers.split(",")):
        elapsed, conclusions, idle, peak = one_run(workers, args.prs, args.timeout, args.suite)
        rates[workers] = args.prs / elapsed * 60
        shown = ", ".join(f"{k} {v}" for k, v in sorted(conclusions.items()))
        print(
            f"{workers} worker{'s' if workers != 1 else ' '}: {args.prs} completed in {elapsed:6.1f} s, "
            f"{rates[workers]:5.1f}/min ({shown}); server RSS idle {mib(idle)}, peak {mib(peak)}  ({load()})",
            flush=True,
        )
    if 1 in rates and 2 in rates:
        print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")


def scale_out(args: argparse.Namespace) -> None:
    """Print one row per worker process count (the scaled-out topology)."""
    concurrency = int(args.workers)
    counts = [int(n) for n in args.processes.split(",")]
    print(
        f"machine: {os.cpu_count()} cores; {args.prs} PRs queued at once; serve --no-workers, PostgreSQL, "
        f"Redis; worker processes of PATCHGATE_CONCURRENCY={concurrency} each; the real pipeline"
    )
    rates = {}
    for n in counts:
        elapsed, conclusions, idle, peak = one_run(concurrency, args.prs, args.timeout, args.suite, n)
        rates[n] = args.prs / elapsed * 60
        shown = ", ".join(f"{k} {v}" for k, v in sorted(conclusions.items()))
        print(
            f"{n} worker process{'es' if n != 1 else '  '} x {concurrency}: {args.prs} completed in "
            f"{elapsed:6.1f} s, {rates[n]:5.1f}/min ({shown}); "
            f"RSS idle {mib(idle)}, peak {mib(peak)}  ({load()})",
            flush=True,
        )
    first = counts[0]
    for n in counts[1:]:
        print(f"{n} processes / {first}: {rates[n] / rates[first]:.2f}x")


if __name__ == "__main__":
    main()
