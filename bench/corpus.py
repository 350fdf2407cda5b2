"""Issue 19's real-project corpus: each project gated by `patchgate run` on two heads, beside pytest bare.

Run as ``bench/isolation.py --corpus``. Per project (bench/isolation.py's CORPUS, or ``--project``):

- a git repository from the sdist: ``base`` = the source tree without its tests; ``unchanged`` =
  base plus one comment line at the end of the bug's module; ``bug`` = base with the project's
  one-line bug (``Bug``: file, original line, mutated line);
- the hidden suite: the sdist's test folder, unmodified;
- the environment image built from the base tree's dependency files (``ensure_env_image``, as
  the gate builds it; timed apart, before anything else);
- **bare**: ``python3 -m pytest`` over the suite in ONE plain container from that image (root,
  no hardening, ``--network none``, the tree on ``PYTHONPATH`` and the working directory, the
  suite as ``--rootdir``, ``--continue-on-collection-errors`` as the gate's pytest), per-test
  outcomes from a small plugin (never from its output), its wall time measured inside the
  container; once on the unchanged head, once on the bug head (does the suite catch the bug?);
- **isolated**: one head run of the suite on the unchanged head through the behaviour layer's
  own plan (``plan_one``, as bench/isolation.py does), for per-test outcomes and the first line
  of every failure;
- **patchgate run** on both heads, as a subprocess (``python -m bot.cli run --format json``)
  with the policy given by ``--policy`` (default: ``behaviour.timeout_s: 1800``, everything else
  the defaults); its conclusion, the hidden suite's passed/failed/errors/total and its wall time.

Printed per project: tests (collected bare), passing bare, passing isolated (of those passing
bare), the in-process tier (the unchanged head's report; 0 in code without it), the conclusions
on both heads, the gate's wall time on the unchanged head against the bare run's; then the tests
lost isolated grouped by their first failure line. ``--json`` appends one JSON object per
project to a file as it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

# bench/ is on sys.path: this module is imported by bench/isolation.py --corpus
from gate_overhead import export, git
from isolation import CORPUS, HOLDOUT, HOLDOUT2, PROJECTS, Bug, Project, fetch, outcomes, run_once, unpack

from checks.behaviour.errors import SuiteError
from checks.behaviour.outcomes import RunLog
from sandbox.docker import DockerSandbox
from sandbox.envimage import ensure_env_image
from sandbox.host import run_process

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_POLICY = "behaviour:\n  timeout_s: 1800\n"
UNCHANGED = "# patchgate bench: the unchanged head (this comment is its only change)\n"
HEADS = ("unchanged", "bug")

# Loaded into the bare pytest with -p: one outcome per test id, from pytest's own reports.
PLUGIN = r"""
import json, os

_OUT = os.environ["BARE_OUT"]
_tests = {}
_collected = []


def _line(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    text = str(report.longrepr or "")
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        text = str(report.longrepr[2])
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def pytest_collectreport(report):
    if report.failed:
        _tests[f"{report.nodeid} (module)"] = ("error", _line(report))


def pytest_collection_finish(session):
    _collected.extend(item.nodeid for item in session.items)


def pytest_runtest_logreport(report):
    seen = _tests.get(report.nodeid)
    if report.when == "setup":
        if report.failed:
            _tests[report.nodeid] = ("error", _line(report))
        elif report.skipped:
            kind = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            _tests[report.nodeid] = (kind, _line(report))
    elif report.when == "call":
        if report.passed:
            _tests[report.nodeid] = ("xpassed" if hasattr(report, "wasxfail") else "passed", "")
        elif report.skipped:
            kind = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            _tests[report.nodeid] = (kind, _line(report))
        else:
            _tests[report.nodeid] = ("failed", _line(report))
    elif report.failed and (seen is None or seen[0] == "passed"):
        _tests[report.nodeid] = ("error", "teardown: " + _line(report))


def pytest_sessionfinish(session, exitstatus):
    with open(_OUT, "w") as out:
        json.dump({"collected": _collected, "tests": _tests, "exit": int(exitstatus)}, out)
"""

# Runs inside the bare container: pytest over the suite, timed from inside (no container start).
DRIVER = r"""
import json, os, subprocess, sys, time
argv = json.loads(sys.argv[1])
start = time.monotonic()
done = subprocess.run(argv, cwd="/work/repo", capture_output=True)
seconds = time.monotonic() - start
with open("/bench/driver.json", "w") as out:
    json.dump({"seconds": seconds, "exit": done.returncode,
               "tail": done.stdout.decode("utf-8", "replace")[-2000:]}, out)
"""


@dataclass
class Gate:
    """One `patchgate run` on one head: its conclusion, the hidden suite's figures, its wall time."""

    conclusion: str
    exit_code: int
    seconds: float
    passed: int = 0
    failed: int = 0
    errors: int = 0
    total: int = 0
    regressions: int = 0
    # Tests measured in-process (the report's in_process_tier; 0 in code before the tier existed).
    in_process_tier: int = 0
    reasons: list[str] = field(default_factory=list)
    detail: str = ""


@dataclass
class Row:
    """One project's figures."""

    project: str
    bug: str
    load: list[float]
    env_build_s: float
    bare_s: float
    bare_exit: int
    bare: dict[str, str]
    bare_collected: int
    # The bug head run bare: tests passing bare on the unchanged head that do not pass on it.
    bare_bug_lost: int
    isolated: dict[str, str]
    isolated_s: float
    gates: dict[str, Gate]
    lost: dict[str, str]

    @property
    def passing_bare(self) -> list[str]:
        return [t for t, o in self.bare.items() if o == "passed"]

    @property
    def passing_isolated(self) -> list[str]:
        return [t for t in self.passing_bare if self.isolated.get(t) == "passed"]


def mutate(tree: Path, bug: Bug) -> None:
    """Replace the bug's original line with its mutated line; it must be there exactly once."""
    module = tree / bug.path
    lines = module.read_text().split("\n")
    if lines.count(bug.original) != 1:
        raise SystemExit(f"{bug.path}: the line {bug.original!r} is not there exactly once")
    lines[lines.index(bug.original)] = bug.mutated
    module.write_text("\n".join(lines))


def build_repo(project: Project, tree: Path) -> None:
    """Commit the tree as ``base`` and branch the two heads from it."""
    assert project.bug is not None
    git(tree, "init", "--quiet", "--initial-branch", "base")
    git(tree, "add", "-A")
    git(tree, "commit", "--quiet", "-m", f"{project.name} {project.version} without its tests")
    git(tree, "checkout", "--quiet", "-b", "unchanged")
    module = tree / project.bug.path
    text = module.read_text()
    module.write_text(text + ("" if text.endswith("\n") else "\n") + UNCHANGED)
    git(tree, "commit", "--quiet", "-am", "a comment")
    git(tree, "checkout", "--quiet", "base")
    git(tree, "checkout", "--quiet", "-b", "bug")
    mutate(tree, project.bug)
    git(tree, "commit", "--quiet", "-am", "a one-line bug")
    git(tree, "checkout", "--quiet", "base")


def bare(
    image: str, tree: Path, suite: Path, work: Path, name: str = "bare"
) -> tuple[float, int, dict[str, str], int, str]:
    """Run pytest over the suite in one plain container; return its time, exit, outcomes, collected."""
    bench = work / name
    shutil.copytree(tree, bench / "repo")
    shutil.copytree(suite, bench / "suite")
    (bench / "bare_plugin.py").write_text(PLUGIN)
    (bench / "driver.py").write_text(DRIVER)
    paths = ["/bench", "/work/repo"] + (["/work/repo/src"] if (tree / "src").is_dir() else [])
    pytest = ["python3", "-m", "pytest", "-q", "-p", "bare_plugin", "-p", "no:cacheprovider",
              "--continue-on-collection-errors", "--rootdir", "/suite", "/suite"]  # fmt: skip
    argv = ["docker", "run", "--rm", "--network", "none", "--user", "0", "--workdir", "/work/repo",
            "-e", f"PYTHONPATH={':'.join(paths)}", "-e", "PYTHONDONTWRITEBYTECODE=1",
            "-e", "BARE_OUT=/bench/outcomes.json", "-v", f"{bench}:/bench",
            "-v", f"{bench / 'repo'}:/work/repo", "-v", f"{bench / 'suite'}:/suite",
            image, "python3", "/bench/driver.py", json.dumps(pytest)]  # fmt: skip
    run_process(argv, check=True, timeout=3600, output_cap=16 * 1024 * 1024, what="the bare run")
    driver = json.loads((bench / "driver.json").read_text())
    found = json.loads((bench / "outcomes.json").read_text())
    tests = {t: kind for t, (kind, _) in found["tests"].items()}
    for test_id in found["collected"]:
        tests.setdefault(test_id, "not run")
    return driver["seconds"], driver["exit"], tests, len(found["collected"]), driver["tail"]


def gate(repo: Path, head: str, suite: Path, policy: Path, work: Path) -> Gate:
    """Gate base...head with `patchgate run` (this checkout's code), as a maintainer would."""
    out = work / f"report-{head}.json"
    argv = (sys.executable, "-m", "bot.cli", "run", "--repo", str(repo), "--base", "base", "--head", head,
            "--hidden", str(suite), "--policy", str(policy), "--format", "json", "--out", str(out),
            "--no-progress")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = run_process(argv, env=env, cwd=work, timeout=7200, output_cap=16 * 1024 * 1024,
                       what=f"patchgate run --head {head}")  # fmt: skip
    seconds = time.perf_counter() - started
    if not out.is_file():
        tail = done.stderr.decode("utf-8", "replace")[-2000:]
        return Gate(f"no report (exit {done.returncode})", done.returncode, seconds, detail=tail)
    report = json.loads(out.read_text())
    result = Gate(report["conclusion"], done.returncode, seconds, reasons=list(report.get("reasons", [])))
    behaviour = report.get("behaviour") or {}
    result.detail = str(behaviour.get("detail") or "")
    result.regressions = int(behaviour.get("regressions") or 0)
    for suite_result in behaviour.get("suites", []):
        if suite_result.get("kind") == "hidden":
            result.passed, result.failed = suite_result["passed"], suite_result["failed"]
            result.errors, result.total = suite_result["errors"], suite_result["total"]
            result.in_process_tier = int(suite_result.get("in_process_tier") or 0)
            result.detail = str(suite_result.get("detail") or result.detail)
    return result


def cause(message: str) -> str:
    """Return a failure line with its instance details blurred, to group failures by cause."""
    text = re.sub(r"0x[0-9a-f]+", "0x…", message)
    text = re.sub(r"'[^']{12,}'", "'…'", text)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


def measure(project: Project, work: Path, args: argparse.Namespace, box: DockerSandbox) -> Row:
    """Gate one project on both heads and run its suite bare and isolated; print what was lost."""
    assert project.bug is not None
    load = [os.getloadavg()[0]]
    tree, suite, _ = unpack(fetch(project, args.sdists), project, work)
    build_repo(project, tree)
    trees = work / "trees"
    export(tree, "base", trees / "base")
    export(tree, "unchanged", trees / "unchanged")
    export(tree, "bug", trees / "bug")
    started = time.perf_counter()
    image = ensure_env_image(trees / "base")
    env_build_s = time.perf_counter() - started
    print(f"  environment image {image} ({env_build_s:.1f} s)", flush=True)
    bare_s, bare_exit, bare_tests, collected, tail = bare(image, trees / "unchanged", suite, work)
    counts: dict[str, int] = defaultdict(int)
    for kind in bare_tests.values():
        counts[kind] += 1
    print(f"  bare: {bare_s:.1f} s, exit {bare_exit}, {collected} collected, {dict(counts)}", flush=True)
    if bare_exit not in (0, 1):
        print("  bare tail: " + tail[-800:].replace("\n", "\n    "))
    _, _, bug_tests, _, _ = bare(image, trees / "bug", suite, work, "bare-bug")
    bare_bug_lost = sum(o == "passed" and bug_tests.get(t) != "passed" for t, o in bare_tests.items())
    print(f"  bare on the bug head: {bare_bug_lost} of the tests passing bare fail", flush=True)
    started = time.perf_counter()
    iso_log: RunLog | None = None
    try:
        iso_log, result = run_once(box, image, trees / "unchanged", suite, work / "isolated")
    except SuiteError as exc:  # the layer refuses the suite before any run: so does the gate
        print(f"  isolated (plan_one): the suite is refused: {exc}", flush=True)
    isolated_s = time.perf_counter() - started
    isolated = outcomes(iso_log) if iso_log is not None else {}
    if iso_log is not None:
        print(f"  isolated (plan_one, head 1): {isolated_s:.1f} s, exit {result.exit_code}, finished "
              f"{iso_log.finished}, {sum(o == 'passed' for o in isolated.values())} passed of "
              f"{len(iso_log.collected)} collected", flush=True)  # fmt: skip
        if iso_log.problems or iso_log.subject_errors or args.stderr:
            print(f"  [isolated] problems {iso_log.problems}, subject {iso_log.subject_errors}")
            print("  " + result.stderr[-2000:].decode("utf-8", "replace").replace("\n", "\n  "))
        for problem in iso_log.collect_problems:
            print(f"  [isolated] {problem.path} did not import: {problem.message}")
    gates = {}
    for head in HEADS:
        gates[head] = found = gate(tree, head, suite, args.policy_file, work)
        print(f"  patchgate run --head {head}: {found.conclusion} (exit {found.exit_code}) in "
              f"{found.seconds:.1f} s; hidden {found.passed}/{found.total} passed, {found.failed} failed, "
              f"{found.errors} errors, {found.regressions} regressions; {'; '.join(found.reasons)[:300]}",
              flush=True)  # fmt: skip
        if found.total == 0 or found.conclusion.startswith("no report"):
            print(f"    detail: {found.detail[:600]}")
    load.append(os.getloadavg()[0])
    lost: dict[str, str] = {}
    for test_id in (t for t, o in bare_tests.items() if o == "passed" and isolated.get(t) != "passed"):
        outcome = iso_log.tests.get(test_id) if iso_log is not None else None
        if iso_log is None:
            lost[test_id] = "the suite was refused (no isolated run)"
        else:
            lost[test_id] = f"{outcome.kind}: {outcome.message}" if outcome else "not reported isolated"
    row = Row(f"{project.name} {project.version}", f"{project.bug.path}: {project.bug.mutated.strip()}",
              load, env_build_s, bare_s, bare_exit, bare_tests, collected, bare_bug_lost, isolated,
              isolated_s, gates, lost)  # fmt: skip
    print_lost(row, args.failures)
    return row


def print_lost(row: Row, limit: int) -> None:
    """Print the tests passing bare but not isolated, grouped by their first failure line."""
    groups: dict[str, list[str]] = defaultdict(list)
    for test_id, why in row.lost.items():
        groups[cause(why)].append(test_id)
    ranked = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    if ranked:
        print(f"  lost isolated: {len(row.lost)} tests, {len(ranked)} causes")
    for key, ids in ranked[:limit]:
        example = row.lost[ids[0]]
        print(f"    {len(ids):4d}  {key}\n          e.g. {ids[0]}: {example[:200]}")
    if len(ranked) > limit:
        print(f"    ... and {len(ranked) - limit} more causes")


def print_table(rows: list[Row]) -> None:
    """Print one row per project."""
    print()
    print(f"{'project':<24} {'tests':>6} {'bare':>6} {'isolated':>15} {'in-proc':>7} "
          f"{'unchanged head':>26} {'bug head (regressions; bare)':>34} {'gate/bare wall':>22}")  # fmt: skip
    for row in rows:
        bare_n, iso_n = len(row.passing_bare), len(row.passing_isolated)
        share = f"{iso_n} ({iso_n / bare_n:.1%})" if bare_n else f"{iso_n} (-)"
        heads = []
        for head in HEADS:
            g = row.gates[head]
            heads.append(f"{g.conclusion} {g.passed}/{g.total}")
        bug = row.gates["bug"]
        heads[1] += f" ({bug.regressions}; {row.bare_bug_lost})"
        unchanged = row.gates["unchanged"].seconds
        ratio = f"{unchanged:.0f}/{row.bare_s:.1f} s {unchanged / row.bare_s:.0f}x" if row.bare_s else "-"
        tier = row.gates["unchanged"].in_process_tier
        print(f"{row.project:<24} {row.bare_collected:>6} {bare_n:>6} {share:>15} {tier:>7} "
              f"{heads[0]:>26} {heads[1]:>34} {ratio:>22}")  # fmt: skip
    print("in-process tier: the unchanged head's report (in_process_tier; 0 when the code has no tier)")


def main(args: argparse.Namespace) -> None:
    """Run the corpus mode of bench/isolation.py."""
    every = {p.name: p for p in (*PROJECTS, *CORPUS, *HOLDOUT, *HOLDOUT2)}
    default = HOLDOUT2 if args.holdout2 else HOLDOUT if args.holdout else CORPUS
    chosen = [every[name] for name in args.project] if args.project else list(default)
    missing = [p.name for p in chosen if p.bug is None]
    if missing:
        raise SystemExit(f"no bug head defined for {', '.join(missing)} (bench/isolation.py CORPUS)")
    scratch = args.keep or Path(os.environ.get("TMPDIR", "/tmp")) / "patchgate-corpus"  # noqa: S108
    scratch.mkdir(parents=True, exist_ok=True)
    scratch.chmod(0o755)
    if args.policy_file is None:
        args.policy_file = scratch / "policy.yml"
        args.policy_file.write_text(DEFAULT_POLICY)
    print(f"policy: {args.policy_file}: {args.policy_file.read_text().strip()!r}; {os.cpu_count()} cores")
    box = DockerSandbox(max_concurrency=1, labels={"patchgate.bench": "corpus"})
    rows = []
    for project in chosen:
        print(f"{project.name} {project.version} (load {os.getloadavg()[0]:.1f})", flush=True)
        work = scratch / project.name
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        work.chmod(0o755)
        rows.append(measure(project, work, args, box))
        if args.json:
            with args.json.open("a") as out:
                out.write(json.dumps(asdict(rows[-1])) + "\n")
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows)
