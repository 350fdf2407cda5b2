"""What runs where: one fresh container per suite part (pytest or cases) and tree (base, head twice).

Inside each container::

    /work/repo    the tree (base, or head with its test infrastructure restored), writable copy
    /suite        this suite only, read-only (the held-out suite is never in a hidden run)
    /patchgate    our plugin, our case runner, our pytest.ini and this suite's case plan, read-only

pytest runs with patchgate's configuration only: ``-c /patchgate/pytest.ini``
(the repository's pytest.ini, tox.ini, setup.cfg and pyproject.toml are never
read), ``--rootdir``/``--confcutdir /suite`` (no conftest.py of the
repository is loaded), ``-p no:cacheprovider``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``
(no installed plugin loads unless named), and ``python3 -I`` (no
PYTHONPATH, no user site, no current directory on sys.path, so no
sitecustomize.py of the repository runs at start-up).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from checks.behaviour.cases import runner_plan
from checks.behaviour.outcomes import Part
from checks.behaviour.store import Suite
from checks.policy import Behaviour
from sandbox.spec import Limits, Mount, RunSpec

CONTAINER_REPO = "/work/repo"
CONTAINER_SUITE = "/suite"
CONTAINER_HARNESS = "/patchgate"
DEFAULT_TEST_TIMEOUT_S = 60.0
INCONTAINER = Path(__file__).parent / "incontainer"
PYTHON = ("python3", "-I", "-B")
HEAD_RUNS = 2

Tree = Literal["base", "head"]

_PYTEST_INI = """\
# patchgate's own pytest configuration: the repository's is never read.
[pytest]
python_files = test_*.py *_test.py
python_classes = Test*
python_functions = test*
timeout = {timeout:g}
timeout_method = signal
"""


@dataclass(frozen=True)
class RunPlan:
    """One container run and what the host needs to read its report back."""

    label: str
    tree: Tree
    part: Part
    spec: RunSpec
    nonce: str
    report: str


def _readable(root: Path) -> None:
    """Let the sandbox user (uid 10001) read a host directory mounted into the container."""
    root.chmod(0o755)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            (Path(dirpath) / d).chmod(0o755)
        for f in filenames:
            (Path(dirpath) / f).chmod(0o644)


def stage_suite(suite: Suite, dest: Path) -> Path:
    """Copy a suite to ``dest`` (a snapshot the store cannot change mid-run) readable by the sandbox."""
    shutil.copytree(suite.root, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"))
    _readable(dest)
    return dest


def write_harness(dest: Path, suite: Suite, policy: Behaviour) -> Path:
    """Write our in-container scripts, pytest.ini and this suite's case plan (no expectations) to ``dest``."""
    dest.mkdir(parents=True)
    for script in ("pytest_plugin.py", "case_runner.py"):
        shutil.copyfile(INCONTAINER / script, dest / script)
    timeout = min(DEFAULT_TEST_TIMEOUT_S, policy.timeout_s)
    (dest / "pytest.ini").write_text(_PYTEST_INI.format(timeout=timeout))
    if suite.cases:
        (dest / "cases.json").write_text(json.dumps(runner_plan(suite.cases)))
    _readable(dest)
    return dest


def parts(suite: Suite) -> tuple[Part, ...]:
    """Return the parts a suite has: its pytest files, its declarative cases, or both."""
    found: list[Part] = []
    if suite.pytest_files:
        found.append("pytest")
    if suite.cases:
        found.append("cases")
    return tuple(found)


def plan_runs(
    suite: Suite,
    part: Part,
    *,
    image: str,
    trees: dict[Tree, Path],
    harness: Path,
    staged: Path,
    policy: Behaviour,
    messages: bool,
) -> list[RunPlan]:
    """Plan base once and head twice for one part of one suite, each with a fresh nonce and report path."""
    runs: list[tuple[str, Tree]] = [("base", "base")]
    runs += [(f"head {i}", "head") for i in range(1, HEAD_RUNS + 1)]
    plans = []
    for label, tree in runs:
        nonce = secrets.token_hex(16)
        # A random name: nothing in the tree can have planted a file there in advance.
        report = f"/tmp/pg-{secrets.token_hex(12)}.jsonl"  # noqa: S108 - a path inside the container
        env: dict[str, str] = {}
        if part == "pytest":
            argv = _pytest_argv(trees[tree])
            env = {
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "PATCHGATE_REPORT": report,
                "PATCHGATE_NONCE": nonce,
                "PATCHGATE_MESSAGES": "1" if messages and tree == "head" else "0",
            }
        else:
            argv = (
                *PYTHON, f"{CONTAINER_HARNESS}/case_runner.py", f"{CONTAINER_HARNESS}/cases.json",
                report, nonce, CONTAINER_REPO,
            )  # fmt: skip
        spec = RunSpec(
            image=image,
            argv=argv,
            copy_in=(Mount(trees[tree], CONTAINER_REPO),),
            mounts=(Mount(harness, CONTAINER_HARNESS), Mount(staged, CONTAINER_SUITE)),
            workdir=CONTAINER_REPO,
            env=env,
            limits=Limits(timeout_s=policy.timeout_s, memory_mb=policy.memory_mb),
            collect=(report,),
        )
        plans.append(RunPlan(label, tree, part, spec, nonce, report))
    return plans


def _pytest_argv(tree: Path) -> tuple[str, ...]:
    paths = [CONTAINER_REPO] + ([f"{CONTAINER_REPO}/src"] if (tree / "src").is_dir() else [])
    return (
        *PYTHON, f"{CONTAINER_HARNESS}/pytest_plugin.py",
        "-c", f"{CONTAINER_HARNESS}/pytest.ini",
        "--rootdir", CONTAINER_SUITE,
        "--confcutdir", CONTAINER_SUITE,
        "-p", "no:cacheprovider",
        "-p", "pytest_timeout",
        "-o", f"pythonpath={' '.join(paths)}",
        "--continue-on-collection-errors",
        "-q", "--no-header", "--tb=no", "-rN",
        CONTAINER_SUITE,
    )  # fmt: skip
