# ruff: noqa: E501 - hostile patches read best as the source they are
"""Hostile changes that try to reach the grader, each against real Docker (issue: verdict integrity).

Every change below is WRONG (``half`` returns 0) plus a cheat that, in a
single-process design, made every hidden test pass. The verdict must be
exactly what the wrong code earns.
"""

from __future__ import annotations

import pytest

from tests.checks.behaviour.test_layer import HIDDEN, RIGHT, WRONG, WRONG_NUMBERS, Gate, gate, numbers

pytestmark = pytest.mark.docker
__all__ = ["gate"]

# Each cheat defines _cheat(x) -> the expected value, or None when it found nothing.
READ_EXPECTED_FROM_DISK = """
import os, re
def _cheat(x):
    if not isinstance(x, int):
        return None
    for top in ("/suite", "/grader", "/patchgate", "/tmp", "/work"):
        for dirpath, _, files in os.walk(top):
            for name in files:
                try:
                    text = open(os.path.join(dirpath, name)).read()
                except OSError:
                    continue
                found = re.search(r"call: half\\(%d\\), equals: (\\d+)" % x, text) or re.search(r"\\(%d, (\\d+)\\)" % x, text)
                if found:
                    return int(found.group(1))
    return None
"""

WALK_THE_CALLERS = """
import sys, gc
def _cheat(x):
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("y", "expected", "equals"):
            if isinstance(frame.f_locals.get(name), int):
                return frame.f_locals[name]
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == x and isinstance(obj[1], int) and obj[1] != x:
            return obj[1]
    return None
"""

PATCH_THE_RECORDER = """
import sys
def _cheat(x):
    for module in list(sys.modules.values()):
        recorder = getattr(module, "Recorder", None)
        if recorder is not None:
            recorder.pytest_runtest_makereport = lambda *a, **k: None
            recorder.write = lambda self, record: None
    main = sys.modules.get("__main__")
    if main is not None:
        for value in vars(main).values():
            if hasattr(value, "write") and hasattr(value, "pytest_runtest_logfinish"):
                value.write = lambda record: None
    return None
"""

FORGE_THE_REPORT = """
import glob, json, os
def _forge():
    lines = []
    for path in glob.glob("/grader/*") + glob.glob("/tmp/pg-*.jsonl") + ["/grader/report.jsonl"]:
        try:
            with open(path, "a") as f:
                f.write(json.dumps({"kind": "test", "id": "x", "outcome": "passed"}) + "\\n")
        except OSError:
            pass
    for target in ("/run/patchgate-rpc/grader.sock", "/grader/report.jsonl"):
        try:
            os.rename("/tmp", target)
        except OSError:
            pass
    try:
        os.unlink("/run/patchgate-rpc/grader.sock")
    except OSError:
        pass
_forge()
def _cheat(x):
    return None
"""


def _cheating(cheat: str) -> str:
    return (
        cheat
        + "\n\n"
        + WRONG.replace("    return 0\n", "    found = _cheat(x)\n    return 0 if found is None else found\n")
    )


@pytest.mark.parametrize(
    "cheat",
    [READ_EXPECTED_FROM_DISK, WALK_THE_CALLERS, PATCH_THE_RECORDER, FORGE_THE_REPORT],
    ids=["expected-values-on-disk", "caller-frames-and-heap", "patch-the-recorder", "forge-the-report"],
)
def test_a_cheat_earns_exactly_what_the_wrong_code_earns(gate: Gate, cheat: str) -> None:
    held_out = gate.suite(
        "held-out", {"test_more.py": "from calc import half\n\n\ndef test_odd():\n    assert half(7) == 3\n"}
    )
    result = gate.run(
        gate.change({"calc/__init__.py": _cheating(cheat)}), gate.suite("hidden", HIDDEN), held_out
    )
    assert result.status == "failed", result
    hidden, held = result.suites
    assert numbers(hidden) == WRONG_NUMBERS
    assert numbers(held) == (0, 1)


def test_the_subject_cannot_read_the_suite_or_write_where_the_grader_lives(gate: Gate) -> None:
    probe = (
        RIGHT
        + """

import os
def probe(path):
    try:
        open(path).read()
        return "read"
    except OSError as exc:
        return type(exc).__name__
def try_write(path):
    try:
        open(path, "w").close()
        return "wrote"
    except OSError as exc:
        return type(exc).__name__
"""
    )
    suite = gate.suite("hidden", {
        "test_probe.py": "from calc import probe, try_write\n\n\n"
                         "def test_suite_unreadable():\n    assert probe('/grader/suite/test_probe.py') == 'PermissionError'\n\n\n"
                         "def test_plan_unreadable():\n    assert probe('/grader/plan.json') == 'PermissionError'\n\n\n"
                         "def test_no_suite_mount():\n    assert probe('/suite/test_probe.py') == 'FileNotFoundError'\n\n\n"
                         "def test_report_dir_unwritable():\n    assert try_write('/grader/report.jsonl') == 'PermissionError'\n\n\n"
                         "def test_rendezvous_unwritable():\n    assert try_write('/run/patchgate-rpc/x') == 'PermissionError'\n\n\n"
                         "def test_grader_environment_unreadable():\n"
                         "    import os\n"
                         "    found = [p for p in os.listdir('/proc') if p.isdigit() and probe(f'/proc/{p}/cmdline') == 'read' and b'pytest' in open(f'/proc/{p}/cmdline', 'rb').read()]\n"
                         "    assert found and all(probe(f'/proc/{p}/environ') == 'PermissionError' for p in found)\n"
                         "    # Nor its memory, nor its open files.\n"
                         "    assert all(probe(f'/proc/{p}/mem') == 'PermissionError' for p in found)\n"
                         "    assert all(probe(f'/proc/{p}/fd/3') == 'PermissionError' for p in found)\n",
    })  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": probe}), suite)
    assert result.status == "passed", result
    assert numbers(result.suites[0]) == (6, 6)


def test_a_fork_bomb_ends_the_run_at_once_and_names_the_limit(gate: Gate) -> None:
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n\n" + RIGHT
    )
    result = gate.run(gate.change({"calc/__init__.py": bomb}), gate.suite("hidden", HIDDEN), timeout_s=300)
    assert result.status == "failed", result
    hidden = result.suites[0]
    assert hidden.passed == 0
    assert "process limit" in hidden.detail


def test_a_hanging_import_fails_within_the_import_budget(gate: Gate) -> None:
    hang = "while True:\n    pass\n\n" + RIGHT
    result = gate.run(
        gate.change({"calc/__init__.py": hang}),
        gate.suite("hidden", HIDDEN),
        import_timeout_s=3,
        timeout_s=300,
    )
    assert result.status == "failed", result
    hidden = result.suites[0]
    assert hidden.passed == 0
    assert hidden.timed_out == 0 or hidden.errors > 0


def test_an_in_process_suite_runs_the_old_way_labelled_forgeable(gate: Gate) -> None:
    suite = gate.suite("hidden", {**HIDDEN, "patchgate-suite.yml": "isolation: in-process\n"})
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), suite)
    assert result.status == "passed", result
    assert result.forgeable
    hidden = result.suites[0]
    assert (numbers(hidden), hidden.isolation) == ((6, 6), "in-process")
    assert hidden.detail.startswith("in-process: the code under test can forge this")
    # And it is forgeable indeed: the old single-process cheat works there, which is why it is labelled.
    cheated = gate.run(gate.change({"calc/__init__.py": _cheating(WALK_THE_CALLERS)}, name="cheat"), suite)
    assert numbers(cheated.suites[0])[0] > WRONG_NUMBERS[0]


SUBPROCESS_TEST = (
    "import subprocess, sys\n\n\n"
    "def test_the_change_runs_in_a_subprocess_of_the_test():\n"
    "    done = subprocess.run([sys.executable, '-c', 'import calc; print(calc.half(10))'], capture_output=True, text=True)\n"
    "    assert done.stdout.strip() == '5', done.stderr\n"
)


def test_an_in_process_run_s_subprocesses_import_the_change_and_the_harness_never_does(gate: Gate) -> None:
    # A src layout: the working directory alone does not hold the package (click's; `pip install -e .` in CI).
    suite = gate.suite(
        "hidden", {**HIDDEN, "test_cli.py": SUBPROCESS_TEST, "patchgate-suite.yml": "isolation: in-process\n"}
    )
    # Modules of the change's named like the harness's own imports: were the repository on the path of
    # the process that keeps the report (PYTHONPATH for the whole container), they would run there.
    planted = "raise SystemExit(7)\n"
    base: dict[str, str | bytes | None] = {"src/calc/__init__.py": WRONG}
    change = gate.change({"src/calc/__init__.py": RIGHT, "select.py": planted, "json.py": planted}, base=base)
    result = gate.run(change, suite)
    assert result.status == "passed", result
    assert numbers(result.suites[0]) == (7, 7)


def test_a_symlink_planted_in_a_shared_tmp_path_cannot_carry_a_test_write_into_the_report(gate: Gate) -> None:
    plant = (
        RIGHT
        + """

import json, os
FORGED = "\\n".join(json.dumps(r) for r in (
    {"kind": "begin", "id": "test_tmp.py::test_writes"},
    {"kind": "test", "id": "test_tmp.py::test_writes", "outcome": "passed"},
)) + "\\n"
def plant(directory):
    for target in ("/grader/report.jsonl", "/grader/plan.json", "/grader/suite/test_tmp.py"):
        os.symlink(target, os.path.join(directory, os.path.basename(target)))
    return FORGED
"""
    )
    suite = gate.suite("hidden", {
        "test_tmp.py": "from calc import half, plant\n\n\n"
                       "def test_writes(tmp_path):\n"
                       "    text = plant(str(tmp_path))\n"
                       "    for name in ('report.jsonl', 'plan.json', 'test_tmp.py'):\n"
                       "        (tmp_path / name).write_text(text)\n"
                       "    assert half(4) == 99\n\n\n"
                       "def test_after():\n    assert half(4) == 2\n",
    })  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": plant}), suite)
    hidden = result.suites[0]
    # The writes through the links were refused (the test failed on them); the report stayed ours.
    assert numbers(hidden) == (1, 2), result
    assert [f.id for f in hidden.failures] == ["test_tmp.py::test_writes"]
    assert "PermissionError" in hidden.failures[0].message
