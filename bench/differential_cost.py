"""What differential and efficiency checks cost, and how steady their figures are (numbers, not a test).

Two parts, each measured within one run of this script:

- ``cost``: the demo's passing PR (examples/duration, `agent/parse-duration`)
  gated three ways, in turns, ``--repeat`` rounds - differential checks off,
  differential only (efficiency off), and the default (differential and
  efficiency) - with each wall time (the best of the rounds), the 1-minute
  load average beside it, and the ratios to "off";
- ``steadiness``: the efficiency check of the demo's linear PR and of its
  quadratic one (`agent/parse-duration-scanner`), ``--rounds`` times each,
  first on a quiet machine and then with ``--load`` busy processes on the
  host (outside the sandbox, competing for the same cores): the ratio to the
  reference at the largest size and both growth exponents of every round.
  Only ratios measured in one run are ever judged; this shows how far they
  move from run to run, and under load.

Usage: .venv/bin/python bench/differential_cost.py [--part cost|steadiness ...] [--repeat 1]
       [--rounds 3] [--load 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.cli.demo_repo import build_example, example_suites  # noqa: E402 - after the path set-up above
from bot.cli.local import LocalRun, run_local  # noqa: E402
from checks.pipeline import Given  # noqa: E402
from checks.render.numbers import differential_numbers, efficiency_line  # noqa: E402
from checks.report import Report  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402

EXAMPLE = ROOT / "examples" / "duration"
# Every variant gates behaviour alone: shape and the mutants are measured by their own benches.
COMMON = (
    "gates: {ruff: {enabled: false}, mypy: {enabled: false}, bandit: {enabled: false}, "
    "semgrep: {enabled: false}}\nstrength: {max_mutants: 0}\n"
)
VARIANTS = {
    "differential off": "behaviour: {differential: {enabled: false}}\n",
    "differential only": "behaviour: {efficiency: {enabled: false}}\n",
    "default (differential + efficiency)": "",
}
LINEAR, QUADRATIC = "agent/parse-duration", "agent/parse-duration-scanner"


def _policy(tmp: Path, name: str, text: str) -> Path:
    path = tmp / f"policy-{''.join(c if c.isalnum() else '-' for c in name)}.yml"
    path.write_text(COMMON + text)
    return path


def cost(repo: Path, tmp: Path, runner: DockerSandbox, repeat: int) -> None:
    """Gate the passing PR in every variant, in turns; print times, load and ratios to "off"."""
    print(f"cost: {LINEAR}, behaviour only (shape tools and mutants off)")
    runs = {
        variant: LocalRun(repo, "main", LINEAR, Given(example_suites(EXAMPLE)), _policy(tmp, variant, text))
        for variant, text in VARIANTS.items()
    }
    run_local(runs["differential off"], runner)  # untimed: the environment image is built once
    best = {variant: float("inf") for variant in runs}
    for _ in range(repeat):
        for variant, run in runs.items():
            start = time.monotonic()
            report = run_local(run, runner)
            seconds = time.monotonic() - start
            best[variant] = min(best[variant], seconds)
            figures = " · ".join(differential_numbers(d) for d in report.behaviour.differential) or "-"
            load = os.getloadavg()[0]
            print(f"  {variant:38} {seconds:6.1f}s  load {load:4.1f}  {report.conclusion}  {figures}")
    off = best["differential off"]
    for variant, seconds in best.items():
        if variant != "differential off":
            print(f"  best {variant} / best differential off: {seconds / off:.2f} ({seconds - off:+.1f}s)")


def _spin() -> None:
    while True:
        pass


def _efficiency(report: Report) -> str:
    checks = [f for d in report.behaviour.differential for f in d.functions if f.efficiency is not None]
    return efficiency_line(checks[0].efficiency) if checks and checks[0].efficiency else "not measured"


def steadiness(repo: Path, tmp: Path, runner: DockerSandbox, rounds: int, load: int) -> None:
    """Measure both PRs' efficiency ``rounds`` times, quiet and then beside ``load`` busy processes."""
    policy = _policy(tmp, "steadiness", "behaviour: {differential: {max_examples: 50}}\n")
    for label, busy in (("quiet", 0), (f"{load} busy processes on the host", load)):
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
        for spinner in spinners:
            spinner.start()
        try:
            print(f"steadiness, {label}")
            for branch in (LINEAR, QUADRATIC):
                for _ in range(rounds):
                    start = time.monotonic()
                    report = run_local(
                        LocalRun(repo, "main", branch, Given(example_suites(EXAMPLE)), policy), runner
                    )
                    seconds = time.monotonic() - start
                    load = os.getloadavg()[0]
                    print(f"  {branch:30} {seconds:5.1f}s  load {load:4.1f}  {_efficiency(report)}")
        finally:
            for spinner in spinners:
                spinner.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", action="append", choices=("cost", "steadiness"), help="default: both")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=2)
    args = parser.parse_args()
    runner = DockerSandbox()
    print(f"{os.cpu_count()} cores; 1-minute load average at the start {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="patchgate-bench-") as name:
        tmp = Path(name)
        repo = tmp / "demo"
        build_example(EXAMPLE, repo)
        parts = args.part or ["cost", "steadiness"]
        if "cost" in parts:
            cost(repo, tmp, runner, args.repeat)
        if "steadiness" in parts:
            steadiness(repo, tmp, runner, args.rounds, args.load)


if __name__ == "__main__":
    main()
