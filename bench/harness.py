"""Another revision's in-container harness, for a bench that alternates it with this tree's (not a test).

``--baseline REV`` in roundtrip.py and gate_overhead.py: the grader and the
subject (checks/behaviour/incontainer) as they were at REV, copied into each
run by the same host code as this tree's, so the two differ in the harness
alone, measured in one session on one machine, turn and turn about.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.behaviour import plan  # noqa: E402 - after the path set-up above

PACKAGE = "checks/behaviour/incontainer"


def at_revision(rev: str, dest: Path) -> Path:
    """Extract the harness package as it is at ``rev`` under ``dest``; return its folder."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, PACKAGE], check=True, capture_output=True, timeout=120
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, timeout=120)
    return dest / PACKAGE


@contextlib.contextmanager
def using(package: Path) -> Iterator[None]:
    """Write ``package`` as the harness of every run planned meanwhile."""
    own = plan.INCONTAINER
    plan.INCONTAINER = package
    try:
        yield
    finally:
        plan.INCONTAINER = own


def turns(baseline: str | None, scratch: Path, rounds: int) -> list[tuple[str, Path]]:
    """The harnesses to run, alternating: (label, package) - the baseline first in each round.

    This tree's is copied first, so that edits made while a long bench runs do not reach it.
    """
    copy = scratch / "this-harness" / PACKAGE
    shutil.copytree(plan.INCONTAINER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "-s", PACKAGE], check=True, capture_output=True, text=True)
    own = [(f"this tree ({head.stdout.strip()}{'+' if dirty.stdout.strip() else ''})", copy)]
    if baseline is None:
        return own * rounds
    base = [(f"baseline {baseline}", at_revision(baseline, scratch / "baseline-harness"))]
    return (base + own) * rounds
