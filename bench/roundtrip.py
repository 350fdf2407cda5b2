"""What one grader-subject round trip costs in the real sandbox: prints figures (not a test).

Two suites run through the behaviour layer's own plan (``plan_one``, a
head run) in a real DockerSandbox, each isolated (tests in the grader, the
library in the subject) and with ``isolation: in-process``:

- a probe: a module with one small class, and tests that make N round
  trips on one of its objects (``len(box)``: one each; ``box.ping(1)``: a
  method call, one since the change's classes became local classes;
  iterating a handle to a generator in a ``for`` loop: one per item)
  beside an empty test, each run five times (the fastest counts: the
  machine is shared). Per round trip: (test - empty test) / round trips,
  from the report's own per-test seconds. ``list()`` of the same
  generator is shown per item too: since issue 20 its items come in
  batches, so that figure is no round trip;
- boltons 26.2.0's ``test_listutils.py`` alone (the BarrelList tests that
  hold most of boltons' isolated time; the sdist comes through
  bench/isolation.py's pinned fetch and split): the file's test seconds in
  each mode, and the ratio.

With ``--local`` the probe runs here instead, without Docker: a grader and
a subject process over a socketpair (as tests/checks/behaviour/incontainer
does), both pinned to one CPU like the sandbox's one-CPU quota - a quieter
figure for comparing two versions of the channel on a shared machine; it
prints each side's CPU time per round trip too.

``--baseline REV`` runs everything with REV's harness as well (bench/harness.py:
the same host code, the grader and subject as they were at REV), alternating,
baseline first, ``--rounds`` times; the 1-minute load average is printed with
each.

Usage: .venv/bin/python bench/roundtrip.py [--calls 5000] [--repeats 5] [--skip-boltons] [--keep DIR]
           [--baseline REV] [--rounds 1]
       .venv/bin/python bench/roundtrip.py --local [--calls 5000] [--repeats 5] [--baseline REV] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from isolation import PROJECTS, fetch, head_plan, unpack  # puts the repository root on the path too

from checks.behaviour.suites import SUITE_CONFIG
from sandbox.docker import DockerSandbox
from sandbox.images import ensure_base_image
from sandbox.spec import Limits, RunSpec

PROBE_MODULE = """
class Box:
    def __init__(self):
        self.items = [1, 2, 3]

    def ping(self, x):
        return x

    def __len__(self):
        return len(self.items)


def count(n):
    yield from range(n)
"""

PROBE_SUITE = """
import pytest

from rtprobe import Box, count

N = {calls}
# Each test runs this many times; the fastest counts (the machine is shared).
pytestmark = pytest.mark.parametrize("repeat", range({repeats}))


def test_empty(repeat):
    pass


def test_len(repeat):
    box = Box()
    for _ in range(N):
        len(box)


def test_method(repeat):
    box = Box()
    for _ in range(N):
        box.ping(1)


def test_iterate(repeat):
    total = 0
    for item in count(N):
        total += 1
    assert total == N


def test_list(repeat):
    assert len(list(count(N))) == N
"""

# Round trips each probe test makes, beyond what test_empty does (test_list: items, not round trips).
PROBE_TRIPS = {"test_len": 1, "test_method": 1, "test_iterate": 1, "test_list": 1}


def run_suite(
    box: DockerSandbox, image: str, tree: Path, suite_root: Path, work: Path
) -> tuple[dict[str, float], float]:
    """Run one suite once (a head run); return each test's seconds from the report, and the wall."""
    plan = head_plan(image, tree, suite_root, work)
    start = time.monotonic()
    result = box.run(plan.spec)
    wall = time.monotonic() - start
    seconds: dict[str, float] = {}
    for line in (result.files.get(plan.report) or b"").decode("utf-8", "replace").splitlines():
        record = json.loads(line) if line.startswith("{") else {}
        if record.get("kind") == "test":
            if record.get("outcome") != "passed":
                print(f"  {record['id']}: {record.get('outcome')} {record.get('message', '')[:200]}")
            # The fastest of a test's repeats (test_len[0], test_len[1], ...).
            name = str(record["id"]).rpartition("::")[2].partition("[")[0]
            seconds[name] = min(seconds.get(name, float("inf")), float(record["seconds"]))
    return seconds, wall


def both_modes(suite: Path) -> dict[str, Path]:
    in_process = suite.parent / f"{suite.name}-in-process"
    shutil.copytree(suite, in_process)
    (in_process / SUITE_CONFIG).write_text("isolation: in-process\n")
    return {"in-process": in_process, "isolated": suite}


# The floor, in the same sandbox: two processes of the image's Python over a socketpair, one sends a JSON
# request the size of the probe's ``len(box)`` and waits for a JSON answer - no framing, no dispatch.
FLOOR = """
import json, os, socket, sys, time
calls, repeats = int(sys.argv[1]), int(sys.argv[2])
a, b = socket.socketpair()
if os.fork() == 0:
    a.close()
    while True:
        data = b.recv(65536)
        if not data:
            os._exit(0)
        asked = json.loads(data)
        b.sendall(json.dumps({"ok": 3, "r": asked["q"]}, separators=(",", ":")).encode())
b.close()
request = {"op": "op", "name": "len", "args": [{"$t": "obj", "side": "s", "id": 7}], "deadline": 29.0,
           "main": True}
best = None
for _ in range(repeats):
    start = time.perf_counter()
    for q in range(calls):
        a.sendall(json.dumps({**request, "q": q}, separators=(",", ":")).encode())
        json.loads(a.recv(65536))
    took = (time.perf_counter() - start) / calls * 1e6
    best = took if best is None else min(best, took)
print(json.dumps(best))
"""


def floor(box: DockerSandbox, image: str, calls: int, repeats: int) -> float | None:
    """A bare socketpair round trip with a JSON body in a sandbox of the probe's limits (us, the best run)."""
    argv = ("python3", "-I", "-c", FLOOR, str(calls), str(repeats))
    spec = RunSpec(image=image, argv=argv, limits=Limits())
    result = box.run(spec)
    if result.exit_code != 0:
        print(f"  floor: exit {result.exit_code}: {result.stderr.decode(errors='replace')[-300:]}")
        return None
    found = float(json.loads(result.stdout))
    print(f"  floor: a bare socketpair round trip with a JSON body, same sandbox limits: {found:.1f} us")
    return found


def probe(box: DockerSandbox, image: str, work: Path, calls: int, repeats: int) -> None:
    tree, suite = work / "repo", work / "suite"
    tree.mkdir(parents=True)
    suite.mkdir()
    (tree / "rtprobe.py").write_text(PROBE_MODULE)
    (suite / "test_roundtrip.py").write_text(PROBE_SUITE.format(calls=calls, repeats=repeats))
    print(f"probe: {calls} round trips per test, the fastest of {repeats} runs of each ({load()})")
    print(f"  {'mode':<11} {'test':<13} {'seconds':>8} {'us/trip':>8}")
    per_mode: dict[str, dict[str, float]] = {}
    for mode, root in both_modes(suite).items():
        seconds, _ = run_suite(box, image, tree, root, work / mode)
        empty = seconds.get("test_empty", 0.0)
        per_mode[mode] = {}
        for test, trips in PROBE_TRIPS.items():
            if test not in seconds:
                continue
            micro = (seconds[test] - empty) / (trips * calls) * 1e6
            per_mode[mode][test] = micro
            print(f"  {mode:<11} {test:<13} {seconds[test]:>8.3f} {micro:>8.1f}")
    # In-process, the same tests take under the report's resolution (1 ms for all N calls).
    trips = [t for t in PROBE_TRIPS if t != "test_list"]
    isolated = [per_mode["isolated"][t] for t in trips if t in per_mode.get("isolated", {})]
    if isolated:
        mean = sum(isolated) / len(isolated)
        print(f"  isolated: {mean:.1f} us per round trip (mean of the three)")
        bare = floor(box, image, calls, repeats)
        if bare:
            print(f"  isolated / floor: {mean / bare:.2f}x (issue 20: within 2x)")


LOCAL_SUBJECT = """
import os, signal, socket, sys
sys.path.insert(0, sys.argv[1])
from checks.behaviour.incontainer.subject import agent, main as subject
repo, fd = sys.argv[2], int(sys.argv[3])
sys.path[:0] = [repo]
os.chdir(repo)
signal.signal(signal.SIGALRM, subject._on_alarm)
agent.Agent(socket.socket(fileno=fd), repo).peer.serve_forever()
"""

# The grader's side of --local, run with a harness root first on its path (this tree's, or a baseline's).
LOCAL_GRADER = """
import json, os, socket, subprocess, sys, time
root, work, subject = sys.argv[1], sys.argv[2], sys.argv[5]
calls, repeats = int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
from checks.behaviour.incontainer.channel.peer import Peer
from checks.behaviour.incontainer.grader.bridge import Bridge
from checks.behaviour.incontainer.grader.names import Importer
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # the subject inherits it
mine, theirs = socket.socketpair()
argv = [sys.executable, "-I", "-B", "-c", subject, root, work, str(theirs.fileno())]
process = subprocess.Popen(argv, pass_fds=(theirs.fileno(),))
theirs.close()
sys.meta_path.insert(0, Importer(Bridge(Peer(mine, lambda request: {})), ["rtprobe"]))

def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

import rtprobe
box = rtprobe.Box()

def iterate():
    for _ in rtprobe.count(calls):
        pass

shapes = {"len": lambda: [len(box) for _ in range(calls)],
          "method": lambda: [box.ping(1) for _ in range(calls)],
          "iterate": iterate, "list": lambda: list(rtprobe.count(calls))}
out = {}
for name, run in shapes.items():
    best = None
    for _ in range(repeats):
        s0, g0, w0 = cpu(process.pid), time.process_time(), time.perf_counter()
        run()
        s1, g1, w1 = cpu(process.pid), time.process_time(), time.perf_counter()
        found = [(w1 - w0) / calls * 1e6, (g1 - g0) / calls * 1e6, (s1 - s0) / calls * 1e6]
        best = found if best is None or found[0] < best[0] else best
    out[name] = best
print(json.dumps(out))
mine.close()
process.wait(timeout=30)
"""


def local(work: Path, calls: int, repeats: int, package: Path, label: str) -> None:
    """The probe through the bridge here, against a subject process, both on one CPU."""
    root = work / "root"
    shutil.copytree(package, root / harness.PACKAGE)
    for init in ("checks", "checks/behaviour"):  # the harness alone: nothing of the host's package
        (root / init / "__init__.py").write_text("")
    repo = work / "repo"
    repo.mkdir(parents=True)
    (repo / "rtprobe.py").write_text(PROBE_MODULE)
    argv = [sys.executable, "-I", "-B", "-c", LOCAL_GRADER, str(root), str(repo), str(calls), str(repeats),
            LOCAL_SUBJECT]  # fmt: skip
    found = json.loads(subprocess.run(argv, check=True, capture_output=True, timeout=3600).stdout)
    print(f"local probe (one CPU), {label}: {calls} per shape, the fastest of {repeats} ({load()})")
    print(f"  {'shape':<8} {'wall':>8} {'grader CPU':>11} {'subject CPU':>12}  (us a trip; list: an item)")
    for name, (wall, grader, subject) in found.items():
        print(f"  {name:<8} {wall:>8.1f} {grader:>11.1f} {subject:>12.1f}")


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def boltons(box: DockerSandbox, image: str, work: Path, sdists: Path) -> None:
    (project,) = [p for p in PROJECTS if p.name == "boltons"]
    tree, suite, _ = unpack(fetch(project, sdists), project, work)
    only = work / "listutils"
    only.mkdir()
    for name in ("conftest.py", "test_listutils.py"):
        shutil.copyfile(suite / name, only / name)
    print(f"boltons {project.version} test_listutils.py")
    totals: dict[str, float] = {}
    for mode, root in both_modes(only).items():
        seconds, wall = run_suite(box, image, tree, root, work / mode)
        totals[mode] = sum(seconds.values())
        slowest = sorted(seconds.items(), key=lambda kv: -kv[1])[:3]
        top = ", ".join(f"{t} {s:.2f}s" for t, s in slowest)
        summary = f"{len(seconds)} tests, {totals[mode]:.2f} s of tests, {wall:.1f} s run"
        print(f"  {mode:<11} {summary}; slowest {top}")
    if totals.get("in-process"):
        print(f"  isolated / in-process (test seconds): {totals['isolated'] / totals['in-process']:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000, help="round trips per probe test")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each probe test (the fastest counts)")
    parser.add_argument("--skip-boltons", action="store_true", help="the probe only")
    parser.add_argument("--sdists", type=Path, default=Path(tempfile.gettempdir()) / "patchgate-bench-sdists")
    parser.add_argument("--keep", type=Path, help="keep the trees, suites and plans here")
    parser.add_argument("--local", action="store_true", help="the probe here, without Docker (see above)")
    parser.add_argument("--baseline", help="alternate with this revision's harness (see above)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations with --baseline")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="patchgate-roundtrip-"))
    try:
        turns = harness.turns(args.baseline, scratch, args.rounds)
        if args.local:
            for number, (label, package) in enumerate(turns):
                local(scratch / f"local-{number}", args.calls, args.repeats, package, label)
            return
        image = ensure_base_image()
        box = DockerSandbox(max_concurrency=1, labels={"patchgate.bench": "roundtrip"})
        for number, (label, package) in enumerate(turns):
            print(f"== {label} ({load()})", flush=True)
            with harness.using(package):
                probe(box, image, scratch / f"probe-{number}", args.calls, args.repeats)
                if not args.skip_boltons:
                    boltons(box, image, scratch / f"boltons-{number}", args.sdists)
            print(f"   ({load()} after)", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
