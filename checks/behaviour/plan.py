"""What runs where: one fresh container per suite part (pytest or cases) and tree (base, head twice).

Every run has two trust domains (see ``sandbox.grader``)::

    /work/repo     the tree (base, or head with its test infrastructure restored): the subject's,
                   uid 10001, where the change's code is imported and run (``subject/main.py``)
    /grader        the grader's, uid 10003, mode 0700: this suite, the plan, the report
    /patchgate     our harness package and pytest.ini, read-only and public

The grader runs the hidden tests (``grader/pytest_runner.py``, the repository's
modules imported as proxies) or hands cases to the subject one call at a
time (``grader/cases_runner.py``). The subject never sees a test file, an
expected value, a case id or the report. pytest runs with patchgate's
configuration only: ``-c /patchgate/pytest.ini`` (the repository's
pytest.ini, tox.ini, setup.cfg and pyproject.toml are never read),
``--rootdir``/``--confcutdir`` the suite, ``-p no:cacheprovider``,
``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` and ``python3 -P -s``.

A suite that opted in to ``isolation: in-process`` runs the old way: pytest
and the change's code in one process as the sandbox user, the suite at
/suite. Its numbers are labelled as forgeable everywhere they are shown.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from checks.behaviour.cases import runner_plan
from checks.behaviour.outcomes import Part
from checks.behaviour.suites import Suite
from checks.policy import Behaviour
from checks.testinfra.files import PYTEST_PYTHON_FILES
from sandbox.spec import GRADER_HOME, RENDEZVOUS, Grader, Limits, Mount, RunSpec

CONTAINER_REPO = "/work/repo"
CONTAINER_SUITE = "/suite"
CONTAINER_HARNESS = "/patchgate"
HARNESS_PACKAGE = "patchgate_harness"
GRADER_SUITE = f"{GRADER_HOME}/suite"
# Base's test support (``support.py``): its modules imported in the grader, with the tests.
GRADER_SUPPORT = f"{GRADER_HOME}/support"
GRADER_PLAN = f"{GRADER_HOME}/plan.json"
GRADER_REPORT = f"{GRADER_HOME}/report.jsonl"
DEFAULT_TEST_TIMEOUT_S = 60.0
INCONTAINER = Path(__file__).parent / "incontainer"
# -P: no script directory on sys.path; -s: no user site; not -I/-E: the environment is the host's
# own (the sandbox passes nothing else), and it carries PYTHONHASHSEED, one per run for both sides.
PYTHON = ("python3", "-P", "-s", "-B")
LAUNCH = (*PYTHON, f"{CONTAINER_HARNESS}/launch.py")
HEAD_RUNS = 2

Tree = Literal["base", "head"]

_PYTEST_INI = """\
# patchgate's own pytest configuration: the repository's is never read.
[pytest]
python_files = {python_files}
python_classes = Test*
python_functions = test*
timeout = {timeout:g}
timeout_method = signal
"""


@dataclass(frozen=True, eq=False)
class RunPlan:
    """One container run and what the host needs to read its report back.

    Compared and hashed by identity: two runs planned alike are still two runs, so a plan is
    the key of its own result (``Mapping[RunPlan, RunResult]``).
    """

    label: str
    tree: Tree
    part: Part
    spec: RunSpec
    nonce: str
    report: str


def _readable(root: Path) -> None:
    """Let every uid in the container read a host directory mounted into it (our public harness)."""
    root.chmod(0o755)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            (Path(dirpath) / d).chmod(0o755)
        for f in filenames:
            (Path(dirpath) / f).chmod(0o644)


def stage_suite(suite: Suite, dest: Path) -> Path:
    """Copy a suite to ``dest``: a snapshot the store cannot change mid-run.

    The snapshot reaches a container only as the grader's private files (or,
    for an in-process suite, as a read-only mount the sandbox user can read).
    """
    shutil.copytree(suite.root, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"))
    if suite.in_process:
        _readable(dest)
    return dest


def write_harness(dest: Path, policy: Behaviour) -> Path:
    """Write our in-container package, its launcher and pytest.ini to ``dest`` (public: no suite data)."""
    dest.mkdir(parents=True)
    shutil.copytree(INCONTAINER, dest / HARNESS_PACKAGE, ignore=_not_source)
    (dest / HARNESS_PACKAGE / "launch.py").rename(dest / "launch.py")
    ini = _PYTEST_INI.format(timeout=test_timeout(policy), python_files=" ".join(PYTEST_PYTHON_FILES))
    (dest / "pytest.ini").write_text(ini)
    _readable(dest)
    return dest


def _not_source(directory: str, names: list[str]) -> set[str]:
    """What ``write_harness`` leaves out: byte code and anything that is not a module or a package."""
    kept = {n for n in names if n.endswith(".py") or (Path(directory) / n).is_dir()}
    return set(names) - kept | {"__pycache__"}


def test_timeout(policy: Behaviour) -> float:
    """Return one test's time budget: 60 s, or the run's budget if that is smaller."""
    return min(DEFAULT_TEST_TIMEOUT_S, policy.timeout_s)


test_timeout.__test__ = False  # type: ignore[attr-defined]


def write_private(dest: Path, suite: Suite, part: Part, *, nonce: str, messages: bool,
                  modules: list[str], policy: Behaviour,
                  lines: dict[str, list[int]] | None = None,
                  support: Mapping[str, str] | None = None) -> Path:  # fmt: skip
    """Write one run's private plan for the grader: never mounted, never readable by the subject."""
    dest.mkdir(parents=True)
    plan: dict[str, object] = {"report": GRADER_REPORT, "nonce": nonce, "rendezvous": RENDEZVOUS}
    if lines:
        # Which changed lines to trace, and whether this suite may show them (hidden) or counts only.
        plan.update(lines=lines)
    if part == "cases":
        plan["cases"] = runner_plan(suite.cases)["cases"]
    else:
        plan.update(messages=messages, modules=modules, suite_names=list(suite.names),
                    suite_root=GRADER_SUITE, import_budget_s=policy.import_timeout_s,
                    test_timeout_s=test_timeout(policy),
                    # The suite's own configuration reaches pytest here, never on a command line the
                    # subject could read in /proc.
                    pytest_options=suite.options.overrides(GRADER_SUITE),
                    pytest_paths=suite.options.paths(GRADER_SUITE))  # fmt: skip
        if support:
            plan.update(support={name: f"{GRADER_SUPPORT}/{path}" for name, path in support.items()})
    path = dest / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def parts(suite: Suite) -> tuple[Part, ...]:
    """Return the parts a suite has: its pytest files, its declarative cases, or both."""
    found: list[Part] = []
    if suite.pytest_files:
        found.append("pytest")
    if suite.cases:
        found.append("cases")
    return tuple(found)


@dataclass(frozen=True)
class Staging:
    """What every run of one suite shares: the image, our harness, the staged suite, the policy."""

    suite: Suite
    image: str
    harness: Path
    staged: Path
    work: Path
    policy: Behaviour
    messages: bool
    modules: tuple[str, ...] = ()
    # The change's executable lines, traced in head runs (changed-line coverage).
    lines: Mapping[str, list[int]] = field(default_factory=dict)
    # The image head runs use when the change's dependencies differ from base's; empty: ``image``.
    head_image: str = ""
    # A private copy of base's test-support modules this suite imports (``suite.support``, written by
    # ``support.stage_support``) for the grader; None when it imports none.
    support_dir: Path | None = None

    def image_of(self, tree: Tree) -> str:
        """The image runs of ``tree`` use: base's environment, or head's own when it has one."""
        return self.head_image or self.image if tree == "head" else self.image


def plan_runs(staging: Staging, part: Part, trees: Mapping[Tree, Path]) -> list[RunPlan]:
    """Plan base once and head twice for one part of one suite, each with a fresh nonce."""
    runs: list[tuple[str, Tree]] = [("base", "base")]
    runs += [(f"head {i}", "head") for i in range(1, HEAD_RUNS + 1)]
    return [plan_one(staging, part, label, tree, trees[tree]) for label, tree in runs]


def plan_one(
    staging: Staging,
    part: Part,
    label: str,
    tree: Tree,
    root: Path,
    *,
    overlay: tuple[Mount, ...] = (),
    timeout_s: float | None = None,
) -> RunPlan:
    """Plan one run of one part on the tree at ``root`` (``overlay`` files copied over it)."""
    policy = staging.policy
    nonce = secrets.token_hex(16)
    limits = Limits(timeout_s=timeout_s or policy.timeout_s, memory_mb=policy.memory_mb)
    messages = staging.messages and tree == "head"
    if part == "pytest" and staging.suite.in_process:
        return _in_process(label, tree, root, staging, nonce=nonce, limits=limits, messages=messages,
                           overlay=overlay)  # fmt: skip
    # Base's test support, for a pytest part that imports some: the grader's copy and where each module is.
    support_dir = staging.support_dir if part == "pytest" else None
    private = write_private(
        staging.work / f"private-{secrets.token_hex(8)}", staging.suite, part, nonce=nonce,
        messages=messages, modules=list(staging.modules), policy=policy,
        # Changed-line coverage is the subject's own report: measured for the suite of the strength
        # figures only (the layer gives the others no lines: never a held-out one).
        lines=dict(staging.lines) if tree == "head" and staging.suite.kind != "held_out" else {},
        support={m.name: m.staged for m in staging.suite.support} if support_dir is not None else None,
    )  # fmt: skip
    # One hash seed for both sides: a test comparing str hashes or set orders sees the subject's agree.
    seed = {"PYTHONHASHSEED": str(secrets.randbelow(2**32))}
    if part == "pytest":
        grader_argv = (*LAUNCH, "pytest", GRADER_PLAN, "--", *_pytest_args(GRADER_SUITE))
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **seed}
    else:
        grader_argv, env = (*LAUNCH, "cases", GRADER_PLAN), dict(seed)
    private_mounts = [Mount(staging.staged, GRADER_SUITE), Mount(private, GRADER_PLAN)]
    if support_dir is not None:
        private_mounts.append(Mount(support_dir, GRADER_SUPPORT))
    grader = Grader(
        argv=grader_argv,
        private=tuple(private_mounts),
        env=env,
        collect=(GRADER_REPORT,),
        workdir=CONTAINER_REPO,
    )
    spec = RunSpec(
        image=staging.image_of(tree),
        argv=(*LAUNCH, "subject", f"{RENDEZVOUS}/grader.sock", CONTAINER_REPO),
        copy_in=(Mount(root, CONTAINER_REPO), *overlay),
        mounts=(Mount(staging.harness, CONTAINER_HARNESS),),
        workdir=CONTAINER_REPO,
        env=seed,
        limits=limits,
        grader=grader,
    )
    return RunPlan(label, tree, part, spec, nonce, GRADER_REPORT)


def plan_in_process(staging: Staging, label: str, tree: Tree, root: Path, *, staged: Path,
                    select: Sequence[str]) -> RunPlan:  # fmt: skip
    """Plan an in-process run of the tests ``select`` (node ids) of a suite staged (readable) at ``staged``.

    The in-process tier of an isolated suite: tests the isolation cannot carry, measured in a run of
    their own, whose report is read for those tests only.
    """
    limits = Limits(timeout_s=staging.policy.timeout_s, memory_mb=staging.policy.memory_mb)
    messages = staging.messages and tree == "head"
    return _in_process(label, tree, root, staging, nonce=secrets.token_hex(16), limits=limits,
                       messages=messages, staged=staged, select=select)  # fmt: skip


def plan_collection(staging: Staging, root: Path) -> RunPlan:
    """Plan pytest's own collection of an isolated suite on base, in-process (``--collect-only``).

    Base is trusted: what pytest collects there with the base's code in its own process is the
    truth the isolated collection is checked against (tier.py: tests it could not collect at all -
    a test class deriving from a library's TestCase, tests a library's metaclass generates).
    """
    limits = Limits(timeout_s=staging.policy.timeout_s, memory_mb=staging.policy.memory_mb)
    return _in_process("base (collection)", "base", root, staging, nonce=secrets.token_hex(16), limits=limits,
                       messages=False, collect_only=True)  # fmt: skip


def _in_process(label: str, tree: Tree, root: Path, staging: Staging, *, nonce: str, limits: Limits,
                messages: bool, overlay: tuple[Mount, ...] = (), staged: Path | None = None,
                select: Sequence[str] = (), collect_only: bool = False) -> RunPlan:  # fmt: skip
    """Plan a run of an in-process suite: pytest and the change's code share a process (forgeable)."""
    # A random name: nothing in the tree can have planted a file there in advance.
    report = f"/tmp/pg-{secrets.token_hex(12)}.jsonl"  # noqa: S108 - a path inside the container
    paths = [CONTAINER_REPO] + ([f"{CONTAINER_REPO}/src"] if (root / "src").is_dir() else [])
    options = staging.suite.options
    suite_options = options.overrides(CONTAINER_SUITE)
    # The repository first on the path (in-process, pytest imports the change itself), then the suite's.
    own = next((o.partition("=")[2].split() for o in suite_options if o.startswith("pythonpath=")), [])
    overrides = [f"pythonpath={' '.join([*paths, *own])}"]
    overrides += [o for o in suite_options if not o.startswith("pythonpath=")]
    selected = [f"{CONTAINER_SUITE}/{test_id}" for test_id in select] or options.paths(CONTAINER_SUITE)
    argv = (
        *LAUNCH, "pytest-in-process",
        *(("--collect-only",) if collect_only else ()),
        *_pytest_args(CONTAINER_SUITE, overrides, selected),
    )  # fmt: skip
    env = {
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PATCHGATE_REPORT": report,
        "PATCHGATE_NONCE": nonce,
        "PATCHGATE_MESSAGES": "1" if messages else "0",
        # What the tests' own subprocesses find on PYTHONPATH (`sys.executable -c "import pkg"`, a CLI
        # run as `python -m pkg`), as in a checkout where the project is installed; set in pytest's
        # process only, never in the harness that keeps the report (inprocess.py).
        "PATCHGATE_PYTHONPATH": ":".join([*paths, *own]),
    }
    spec = RunSpec(
        image=staging.image_of(tree),
        argv=argv,
        # The suite is copied in, writable, as bare pytest has it (a test writing beside its own files):
        # nothing in this container is trusted, and the host's copy never changes.
        copy_in=(Mount(root, CONTAINER_REPO), Mount(staged or staging.staged, CONTAINER_SUITE), *overlay),
        mounts=(Mount(staging.harness, CONTAINER_HARNESS),),
        workdir=CONTAINER_REPO,
        env=env,
        limits=limits,
        collect=(report,),
    )
    return RunPlan(label, tree, "pytest", spec, nonce, report)


def _pytest_args(suite: str, overrides: Sequence[str] = (), paths: Sequence[str] = ()) -> tuple[str, ...]:
    extra = tuple(a for o in overrides for a in ("-o", o))
    return (
        "-c", f"{CONTAINER_HARNESS}/pytest.ini",
        "--rootdir", suite,
        "--confcutdir", suite,
        "-p", "no:cacheprovider",
        "-p", "pytest_timeout",
        *extra,
        "--continue-on-collection-errors",
        "--color=no", "--code-highlight=no",
        "-q", "--no-header", "--tb=no", "-rN",
        *(paths or [suite]),
    )  # fmt: skip
