"""What suite strength costs: prints numbers (not a test).

Gates one change three ways in one run of this script - strength off,
coverage only (`max_mutants: 0`), and the default (coverage and up to 20
mutants) - and prints each wall time (the best of ``--repeat``), the
1-minute load average beside it, the strength figures, and the ratios to
"off". The change is one of:

- ``demo``: the demo's passing PR (examples/duration, `agent/parse-duration`);
- ``inflection``: a real project from its PyPI sdist (pinned, fetched and
  split as bench/isolation.py does): the base is the library with the
  bodies of six functions replaced by ``raise NotImplementedError``, the
  head is the library as released, and the hidden suite is its own
  ``test_inflection.py`` (455 tests). The change is "implement these six
  functions". One of the 455 fails isolated whatever the change (it adds
  to a module-level set of the library's, see docs/behaviour.md), so this
  change's policy asks for 99% of the hidden suite: behaviour passes, and
  the mutants run.

The variants take turns, ``--repeat`` rounds of them, after one untimed
run that builds the environment image; other work on the machine shows in
the load average printed beside each time.

Usage: .venv/bin/python bench/strength_cost.py [--change demo|inflection ...] [--repeat 1]
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from isolation import Project, fetch, unpack  # noqa: E402 - after the path set-up above

from bot.cli.demo_repo import build_example, example_suites  # noqa: E402
from bot.cli.local import LocalRun, run_local  # noqa: E402
from checks.behaviour.suites import Suites  # noqa: E402
from checks.pipeline import Given  # noqa: E402
from checks.render.numbers import strength_numbers  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402
from sandbox.host import run_process  # noqa: E402

EXAMPLE = ROOT / "examples" / "duration"
VARIANTS = {
    "strength off": "strength: {enabled: false}\n",
    "coverage only": "strength: {max_mutants: 0}\n",
    "default (coverage + mutants)": "",
}
INFLECTION = Project("inflection", "0.5.1", (("test_inflection.py", "test_inflection.py"),))
# The functions whose bodies the change writes (base: raise NotImplementedError).
STUBBED = ("camelize", "humanize", "ordinal", "parameterize", "titleize", "underscore")


def stub(source: str, names: tuple[str, ...]) -> str:
    """Return ``source`` with the named top-level functions' code (not their docstrings) replaced."""
    lines = source.splitlines(keepends=True)
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            spans.append((body[0].lineno, body[-1].end_lineno or body[-1].lineno, body[0].col_offset))
    for start, end, indent in sorted(spans, reverse=True):
        lines[start - 1 : end] = [" " * indent + "raise NotImplementedError\n"]
    return "".join(lines)


def _git(repo: Path, *args: str) -> None:
    identity = (
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.invalid",
        "-c",
        "commit.gpgsign=false",
    )
    run_process(("git", *identity, "-C", str(repo), *args), timeout=120, check=True, what=f"git {args[0]}")


def inflection_change(tmp: Path, sdists: Path) -> tuple[Path, str, Suites]:
    """Make a git repository whose branch ``agent/implement`` writes six functions of inflection."""
    repo, suite, _ = unpack(fetch(INFLECTION, sdists), INFLECTION, tmp / "inflection")
    module = repo / "inflection" / "__init__.py"
    released = module.read_text(encoding="utf-8")
    module.write_text(stub(released, STUBBED), encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: six functions not written yet")
    _git(repo, "checkout", "-q", "-b", "agent/implement")
    module.write_text(released, encoding="utf-8")
    _git(repo, "commit", "-q", "-a", "-m", "implement them")
    _git(repo, "checkout", "-q", "main")
    return repo, "agent/implement", Suites(hidden=suite)


def demo_change(tmp: Path, sdists: Path) -> tuple[Path, str, Suites]:
    """The demo repository and its passing PR."""
    repo = tmp / "demo"
    prs = build_example(EXAMPLE, repo)
    branch = next(pr.branch for pr in prs if pr.branch == "agent/parse-duration")
    return repo, branch, example_suites(EXAMPLE)


CHANGES: dict[str, Callable[[Path, Path], tuple[Path, str, Suites]]] = {
    "demo": demo_change,
    "inflection": inflection_change,
}
# Policy every variant of a change shares.
COMMON = {"demo": "", "inflection": "behaviour: {min_hidden_pass_rate: 0.99}\n"}


def measure(name: str, tmp: Path, args: argparse.Namespace, runner: DockerSandbox) -> None:
    """Gate one change in every variant; print the times, the load beside them and the ratios."""
    repo, branch, suites = CHANGES[name](tmp, args.sdists)
    print(f"{name} ({branch})")
    runs = {
        variant: LocalRun(
            repo, "main", branch, Given(suites), policy_file=_policy(tmp, name, i, COMMON[name] + text)
        )
        for i, (variant, text) in enumerate(VARIANTS.items())
    }
    # One untimed run first: the environment image is built once and cached, as on a warm service.
    run_local(runs["strength off"], runner)
    times = {variant: float("inf") for variant in runs}
    for _ in range(args.repeat):
        for variant, run in runs.items():
            start = time.monotonic()
            report = run_local(run, runner)
            seconds = time.monotonic() - start
            times[variant] = min(times[variant], seconds)
            load = os.getloadavg()[0]
            figures = strength_numbers(report.behaviour.strength)
            print(f"  {variant:30} {seconds:7.1f}s  load {load:4.1f}  {report.conclusion}  {figures}")
    off = times["strength off"]
    for variant, seconds in times.items():
        if variant != "strength off":
            print(f"  best {variant} / best strength off: {seconds / off:.2f} ({seconds - off:+.1f}s)")


def _policy(tmp: Path, name: str, number: int, text: str) -> Path:
    path = tmp / f"policy-{name}-{number}.yml"
    path.write_text(text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--change", action="append", choices=sorted(CHANGES), help="default: all")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sdists", type=Path, default=Path(tempfile.gettempdir()) / "patchgate-bench-sdists")
    args = parser.parse_args()
    runner = DockerSandbox()
    print(f"{os.cpu_count()} cores; 1-minute load average at the start {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="patchgate-bench-") as tmp:
        for name in args.change or sorted(CHANGES):
            measure(name, Path(tmp), args, runner)


if __name__ == "__main__":
    main()
