"""What suite strength costs: prints numbers (not a test).

Gates the demo's passing PR (examples/duration, `agent/parse-duration`)
three ways in one run of this script - strength off, coverage only
(`max_mutants: 0`), and the default (coverage and up to 20 mutants) - and
prints each wall time, the strength figures and the ratios to "off".

Usage: .venv/bin/python bench/strength_cost.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.demo_repo import build_example, example_suites  # noqa: E402 - after the path set-up above
from bot.local import LocalRun, gate_local  # noqa: E402
from checks.render.numbers import strength_numbers  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402

EXAMPLE = ROOT / "examples" / "duration"
VARIANTS = {
    "strength off": "strength: {enabled: false}\n",
    "coverage only": "strength: {max_mutants: 0}\n",
    "default (coverage + mutants)": "",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    runner = DockerSandbox()
    with tempfile.TemporaryDirectory(prefix="patchgate-bench-") as tmp:
        repo = Path(tmp) / "repo"
        prs = build_example(EXAMPLE, repo)
        branch = next(pr.branch for pr in prs if pr.branch == "agent/parse-duration")
        suites = example_suites(EXAMPLE)
        times: dict[str, float] = {}
        for name, policy in VARIANTS.items():
            policy_file = Path(tmp) / f"policy-{len(times)}.yml"
            policy_file.write_text(policy)
            best = float("inf")
            for _ in range(args.repeat):
                start = time.monotonic()
                report = gate_local(LocalRun(repo, "main", branch, suites, policy_file=policy_file), runner)
                best = min(best, time.monotonic() - start)
            times[name] = best
            figures = strength_numbers(report.behaviour.strength)
            print(f"{name:30} {best:7.1f}s  {report.conclusion}  {figures}")
        off = times["strength off"]
        for name, seconds in times.items():
            print(f"ratio {name} / strength off: {seconds / off:.2f}")


if __name__ == "__main__":
    main()
