"""What gating a change costs beside the same work run bare: prints wall times and the ratio (not a test).

Two changes are gated with ``run_local`` (what ``patchgate run`` calls, with
the CLI's own ``DockerSandbox()``), wrapped in a runner that records every
sandbox run it is asked for:

- the demo repository (examples/duration, PR 1, hidden and held-out suites);
- boltons 26.2.0 from its sdist (bench/isolation.py's pinned fetch and split:
  the library is the repository, its 519 tests the hidden suite; 17k lines),
  with a small PR that rewrites ``iterutils.chunked`` to equivalent code;
- the same boltons change with the suite marked ``isolation: in-process``
  (tests and library in one process, no grader/subject split): the
  difference between the two boltons rows is the price of isolation.

The bare side is the same work, one step after another, in ONE plain
container from the same environment image the gate used (``docker run`` as
root, no seccomp/capability/uid/read-only/tmpfs/pids hardening, no grader and
subject split, no per-run container): the very probe plans the gate's ruff,
mypy, bandit and semgrep runs executed (each tool over the changed files at
base and at head, the same arguments and configuration), then ``python3 -m
pytest`` over the same suite once for every pytest run the gate made (base,
head twice, every mutant with its mutated module laid over the head tree),
including a suite the gate finds for itself (day one's "repository": base's
own tests, the folder the gate ran, kept when the gate first hands it over).
The bare figure is the sum of those steps timed inside the container (its
start is not counted). Patchgate's own extra work - the ``loads`` gate and
the runs of declarative cases, which have no bare counterpart - is counted on
its side only, so the ratio is an upper bound of the overhead.

Printed per project: both wall times, the ratio against the <= 1.0x target
(and issue 20's <= 1.3x for the demo),
patchgate's time per layer (the report's timings) and per kind of run (count,
time in the container, time including waiting for a sandbox slot), and the
bare time per tool. The environment image is built before the timed run
(a first-run cost, shown separately). The 1-minute load average is printed
beside each figure: other work on the machine shows in both sides.

``--baseline REV`` gates each project with REV's in-container harness too
(bench/harness.py: the same host code, the grader and subject as at REV),
alternating, baseline first, ``--rounds`` times.

Usage: .venv/bin/python bench/gate_overhead.py [--project demo,boltons,boltons-in-process]
       [--sdists DIR] [--keep DIR] [--baseline REV] [--rounds 1] [--warm 0,1]

``--warm 0,1`` gates each project twice per turn, without and with containers
made ahead of need (sandbox/pool.py; `patchgate run` keeps one per shape).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402 - bench/harness.py: another revision's harness
from isolation import PROJECTS, fetch, unpack  # noqa: E402 - bench/isolation.py: pinned sdists, split

from bot.cli.demo_repo import build_example  # noqa: E402 - after the path set-up above
from bot.cli.local import LocalRun, run_local  # noqa: E402
from checks.behaviour.plan import CONTAINER_SUITE  # noqa: E402
from checks.behaviour.suites import Suites  # noqa: E402
from checks.pipeline import Given  # noqa: E402
from checks.runner import Runner  # noqa: E402
from sandbox.docker import WARM_PER_SHAPE, DockerSandbox  # noqa: E402
from sandbox.envimage import ensure_env_image  # noqa: E402
from sandbox.host import run_process  # noqa: E402
from sandbox.spec import RunResult, RunSpec  # noqa: E402

TARGET = 1.0
DEMO_TARGET = 1.3  # issue 20: the demo's `patchgate run` beside the same tools and tests bare
EXAMPLE = ROOT / "examples" / "duration"
PROBE_MOUNT = "/patchgate"
# The boltons PR: iterutils.chunked rewritten to equivalent code (3 executable lines change).
CHUNKED_BEFORE = """    chunk_iter = chunked_iter(src, size, **kw)
    if count is None:
        return list(chunk_iter)
    else:
        return list(itertools.islice(chunk_iter, count))
"""
CHUNKED_AFTER = """    chunk_iter = chunked_iter(src, size, **kw)
    if count is not None:
        chunk_iter = itertools.islice(chunk_iter, count)
    return list(chunk_iter)
"""

# Runs inside the bare container with its python3: each step in turn, timed; JSON on stdout.
DRIVER = r"""
import json, os, shutil, subprocess, sys, time
steps = json.load(open(sys.argv[1]))
out = []
for step in steps:
    start = time.monotonic()
    cwd = step["cwd"]
    if step.get("overlay"):
        cwd = "/tmp/mutant"
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.copytree(step["cwd"], cwd)
        for rel, src in step["overlay"].items():
            shutil.copyfile(src, os.path.join(cwd, rel))
    env = dict(os.environ, **step.get("env", {}))
    if step.get("pythonpath"):
        env["PYTHONPATH"] = cwd
    done = subprocess.run(step["argv"], cwd=cwd, env=env, capture_output=True)
    out.append({"name": step["name"], "kind": step["kind"], "seconds": time.monotonic() - start,
                "exit": done.returncode, "tail": done.stdout.decode("utf-8", "replace")[-300:]})
json.dump(out, sys.stdout)
"""


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


@dataclass
class Recorded:
    """One sandbox run the gate asked for: what it was, and how long it took."""

    kind: str  # "shape <tool>", "<suite> <part> <tree>" or "<suite> <part> mutant"
    seconds: float  # in the container (the sandbox's own wall time)
    waited: float  # the call, waiting for a sandbox slot included
    bare: dict[str, object] | None = None  # the bare step doing the same work, if there is one


@dataclass
class Recorder:
    """A Runner that passes every run to the real sandbox and keeps what the bare side must repeat."""

    inner: Runner
    keep: Path
    runs: list[Recorded] = field(default_factory=list)
    # Time spent here copying plans and mutants: not the gate's, subtracted from its wall time.
    own: float = 0.0
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, spec: RunSpec) -> RunResult:
        started = time.perf_counter()
        with self._lock:
            self._count += 1
            kind, bare = self._describe(spec, self._count)
            self.own += time.perf_counter() - started
        called = time.perf_counter()
        result = self.inner.run(spec)
        with self._lock:
            self.runs.append(Recorded(kind, result.wall_s, time.perf_counter() - called, bare))
        return result

    def _describe(self, spec: RunSpec, number: int) -> tuple[str, dict[str, object] | None]:
        if len(spec.argv) > 2 and spec.argv[2] == f"{PROBE_MOUNT}/probe.py":
            return self._shape(spec, number)
        grader = spec.grader
        if grader is not None:
            # python3 [flags] /patchgate/launch.py PART ...: the grader runs pytest or the declarative cases
            launch = next(i for i, arg in enumerate(grader.argv) if arg.endswith("/launch.py"))
            part, source = grader.argv[launch + 1], grader.private[0].source
        else:  # in-process (isolation: in-process, the in-process tier, base's collection): pytest only
            copied = next(m for m in spec.copy_in if m.target == CONTAINER_SUITE)  # copied in, writable
            part, source = "pytest", copied.source
        suite = source.name.removeprefix("suite-")
        # A suite the gate finds for itself (day one's "repository": base's own tests) is not among the
        # case's: the bare side gets the very folder the gate ran, kept the first time it is seen.
        kept = self.keep / "suites" / suite
        if part == "pytest" and source.is_dir() and not kept.exists():
            shutil.copytree(source, kept)
        tree = spec.copy_in[0].source.name  # "base", or "head" (the behaviour layer's head copy)
        overlays = [m for m in spec.copy_in[1:] if m.target != CONTAINER_SUITE]
        kind = f"{suite} {part} {'mutant' if overlays else tree}"
        if part != "pytest":
            return kind, None  # declarative cases: no bare counterpart
        if "--collect-only" in spec.argv:
            return f"{suite} collection {tree}", None  # isolation's collection parity: patchgate's own
        if any("::" in arg for arg in spec.argv):
            return f"in-process tier {tree}", None  # the tests isolation cannot carry: patchgate's own
        overlay: dict[str, str] = {}
        for i, mount in enumerate(overlays):
            copy = self.keep / "mutants" / f"{number}-{i}.py"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mount.source, copy)
            overlay[mount.target.removeprefix("/work/repo/")] = f"/bench/mutants/{copy.name}"
        argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                f"/suites/{suite}", f"/suites/{suite}"]  # fmt: skip
        bare = {"name": kind, "kind": f"pytest {'mutant' if overlays else tree}", "argv": argv,
                "cwd": f"/trees/{'head' if overlays else tree}", "pythonpath": True,
                "env": {"PYTHONDONTWRITEBYTECODE": "1"}, "overlay": overlay}  # fmt: skip
        return kind, bare

    def _shape(self, spec: RunSpec, number: int) -> tuple[str, dict[str, object] | None]:
        staged = next(m.source for m in spec.mounts if m.target == PROBE_MOUNT)
        plan = json.loads((staged / "plan.json").read_text())
        if plan["mode"] != "batch":
            return f"shape {plan['mode']}", None  # the loads gate: patchgate's own, no bare counterpart
        tool = str(plan["steps"][0]["argv"][0])
        if not (self.keep / "stage").exists():
            shutil.copytree(staged, self.keep / "stage")  # the probe, defaults and rules: the same in all
        (self.keep / "plans").mkdir(exist_ok=True)
        shutil.copyfile(staged / "plan.json", self.keep / "plans" / f"{number}.json")
        argv = ["python3", "-I", f"{PROBE_MOUNT}/probe.py", f"/bench/plans/{number}.json"]
        cwd = "/tmp"  # noqa: S108 - inside the bare container
        return f"shape {tool}", {"name": tool, "kind": tool, "argv": argv, "cwd": cwd, "env": {}}


@dataclass(frozen=True)
class Case:
    """One change to gate: a git repository, its base and head, and the suites."""

    name: str
    repo: Path
    base: str
    head: str
    suites: dict[str, Path]


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}  # fmt: skip
    run_process(("git", "-C", str(repo), *args), env=env, check=True, timeout=120, what=f"git {args[0]}")


def demo_case(work: Path) -> Case:
    repo = work / "demo"
    build_example(EXAMPLE, repo)
    suites = {"hidden": EXAMPLE / "suites" / "hidden", "held_out": EXAMPLE / "suites" / "held-out"}
    return Case("demo (examples/duration, PR 1)", repo, "main", "agent/parse-duration", suites)


def boltons_case(work: Path, sdists: Path, *, in_process: bool = False) -> Case:
    (project,) = [p for p in PROJECTS if p.name == "boltons"]
    tree, suite, in_process_suite = unpack(fetch(project, sdists), project, work)
    git(tree, "init", "--quiet", "--initial-branch", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "--quiet", "-m", "boltons 26.2.0 without its tests")
    git(tree, "checkout", "--quiet", "-b", "pr")
    module = tree / "boltons" / "iterutils.py"
    text = module.read_text()
    if CHUNKED_BEFORE not in text:
        raise SystemExit("boltons/iterutils.py: chunked() is not as expected; the PR cannot be applied")
    module.write_text(text.replace(CHUNKED_BEFORE, CHUNKED_AFTER))
    git(tree, "commit", "--quiet", "-am", "iterutils.chunked: one return")
    if in_process:  # the suite's own config: `isolation: in-process` (tests and library in one process)
        return Case(
            f"boltons {project.version}, in-process", tree, "main", "pr", {"hidden": in_process_suite}
        )
    return Case(f"boltons {project.version} (519 tests)", tree, "main", "pr", {"hidden": suite})


def export(repo: Path, ref: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = run_process(
        ("git", "-C", str(repo), "archive", ref), check=True, timeout=120, what="git archive"
    )
    run_process(("tar", "-x", "-C", str(dest)), stdin=archive.stdout, check=True, timeout=120, what="untar")


def gate(case: Case, keep: Path, slots: int, warm: int) -> tuple[float, Recorder, dict[str, float], str]:
    """Gate the change as `patchgate run` does; return its wall time, the runs and the report's timings."""
    sandbox = DockerSandbox(max_concurrency=slots, warm=warm)
    recorder = Recorder(sandbox, keep)
    suites = Suites(hidden=case.suites.get("hidden"), held_out=case.suites.get("held_out"))
    started = time.perf_counter()
    report = run_local(LocalRun(case.repo, case.base, case.head, Given(suites)), recorder)
    wall = time.perf_counter() - started - recorder.own
    sandbox.close()  # what `patchgate run` leaves to its exit: not part of the verdict's wall time
    return wall, recorder, dict(report.timings), f"{report.conclusion} ({'; '.join(report.reasons)[:120]})"


def bare(case: Case, recorder: Recorder, image: str, keep: Path) -> list[dict[str, object]]:
    """Run the recorded work one step after another in one plain container; return each step's time."""
    trees = keep / "trees"
    steps = [r.bare for r in recorder.runs if r.bare is not None and r.bare["kind"] in TOOLS]
    steps.sort(key=lambda s: TOOLS.index(str(s["kind"])))
    steps += [r.bare for r in recorder.runs if r.bare is not None and r.bare["kind"] not in TOOLS]
    (keep / "steps.json").write_text(json.dumps(steps))
    (keep / "driver.py").write_text(DRIVER)
    argv = ["docker", "run", "--rm", "--network", "none", "--user", "0", "--workdir", "/tmp",  # noqa: S108
            "-e", "SEMGREP_ENABLE_VERSION_CHECK=0", "-e", "SEMGREP_SEND_METRICS=off",
            "-v", f"{trees / 'base'}:/src/base:ro", "-v", f"{trees / 'head'}:/src/head:ro",
            "-v", f"{trees}:/trees:ro", "-v", f"{keep}:/bench:ro",
            "-v", f"{keep / 'stage'}:{PROBE_MOUNT}:ro"]  # fmt: skip
    for suite, path in case.suites.items():
        argv += ["-v", f"{path.resolve()}:/suites/{suite}:ro"]
    found = keep / "suites"  # the suites the gate found for itself (Recorder._describe)
    for path in sorted(found.iterdir()) if found.is_dir() else []:
        if path.name not in case.suites:
            argv += ["-v", f"{path.resolve()}:/suites/{path.name}:ro"]
    argv += [image, "python3", "/bench/driver.py", "/bench/steps.json"]
    done = run_process(argv, check=True, timeout=7200, output_cap=64 * 1024 * 1024, what="the bare run")
    return list(json.loads(done.stdout))


TOOLS = ("ruff", "mypy", "bandit", "semgrep")


def measure(case: Case, keep: Path, slots: int = 2, warm: int = WARM_PER_SHAPE) -> float:
    """Gate one change, repeat its work bare, print both and the profile; return the ratio."""
    trees = keep / "trees"
    export(case.repo, case.base, trees / "base")
    export(case.repo, case.head, trees / "head")
    image = ensure_env_image(trees / "base")  # a first run builds it; both sides use it
    wall, recorder, timings, conclusion = gate(case, keep, slots, warm)
    print(f"  patchgate run (warm={warm}): {wall:7.1f} s  -> {conclusion}  ({load()})", flush=True)
    steps = bare(case, recorder, image, keep)
    bare_s = sum((float(s["seconds"]) for s in steps), 0.0)  # type: ignore[arg-type]
    print(f"  bare:          {bare_s:7.1f} s  ({len(steps)} steps, one container)  ({load()})")
    ratio = wall / bare_s
    met = "met" if ratio <= TARGET else "MISSED"
    verdict = f"  ratio {ratio:.2f}x against the <= {TARGET:.1f}x target: {met}"
    if case.name.startswith("demo"):
        verdict += f"; issue 20's <= {DEMO_TARGET}x: {'met' if ratio <= DEMO_TARGET else 'MISSED'}"
    print(verdict)
    print("  patchgate per layer: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    groups: dict[str, list[Recorded]] = defaultdict(list)
    for run in recorder.runs:
        groups[run.kind].append(run)
    print(f"  patchgate runs ({len(recorder.runs)}): kind, count, in the container, with the wait for a slot")
    for kind, runs in sorted(groups.items()):
        inside, waited = sum(r.seconds for r in runs), sum(r.waited for r in runs)
        print(f"    {kind:<28} {len(runs):3d}  {inside:7.1f} s  {waited:7.1f} s")
    by_kind: dict[str, list[float]] = defaultdict(list)
    for step in steps:
        by_kind[str(step["kind"])].append(float(step["seconds"]))  # type: ignore[arg-type]
    print("  bare steps: " + ", ".join(f"{k} {len(v)}x {sum(v):.1f} s" for k, v in by_kind.items()))
    failed = [s for s in steps if s["kind"] not in TOOLS and s["exit"] not in (0, 1)]
    for step in failed:
        print(f"  note: bare pytest did not complete normally in {step['name']}: {step['tail']}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--project", default="demo,boltons,boltons-in-process")
    parser.add_argument("--sdists", type=Path, default=Path(tempfile.gettempdir()) / "patchgate-bench-sdists")
    parser.add_argument("--keep", type=Path, help="keep the repositories, plans and steps here")
    parser.add_argument(
        "--slots", type=int, default=2, help="sandbox runs at once (`patchgate run`'s DockerSandbox: 2)"
    )
    parser.add_argument("--baseline", help="alternate with this revision's in-container harness")
    parser.add_argument("--rounds", type=int, default=1, help="alternations with --baseline")
    parser.add_argument(
        "--warm",
        default=str(WARM_PER_SHAPE),
        help="containers made ahead per shape, comma-separated to alternate (e.g. 0,1; `patchgate run`: 1)",
    )
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; target: patchgate run <= {TARGET:.1f}x the same work bare")
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="patchgate-overhead-"))
    scratch.mkdir(parents=True, exist_ok=True)
    scratch.chmod(0o755)
    ratios = {}
    try:
        turns = harness.turns(args.baseline, scratch, args.rounds)
        for name in args.project.split(","):
            for number, (label, package) in enumerate(turns):
                work = scratch / f"{name}-{number}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir(parents=True)
                if name == "demo":
                    case = demo_case(work)
                else:
                    case = boltons_case(work, args.sdists, in_process=name == "boltons-in-process")
                print(f"{case.name}, harness: {label} ({load()})", flush=True)
                for warm in (int(w) for w in args.warm.split(",")):
                    keep = work / f"bench-warm{warm}"
                    keep.mkdir()
                    with harness.using(package):
                        ratios[f"{name} ({label}, warm={warm}, turn {number + 1})"] = measure(
                            case, keep, args.slots, warm
                        )
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print("ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()) + f"  (target <= {TARGET:.1f}x)")


if __name__ == "__main__":
    main()
