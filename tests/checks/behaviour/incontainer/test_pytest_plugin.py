"""Our pytest plugin, run as a real pytest process on the host, the way the sandbox runs it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.grade import TestOutcome
from checks.behaviour.outcomes import parse_log
from checks.behaviour.plan import write_harness
from checks.policy import Behaviour
from sandbox.host import ProcessResult, run_process

INI = "[pytest]\npython_files = test_*.py\ntimeout = 30\ntimeout_method = signal\n"


def run_plugin(
    tmp_path: Path, files: dict[str, str], report: Path | None = None, budget: float | None = None
) -> tuple[ProcessResult, Path]:
    suite = tmp_path / "suite"
    for rel, text in files.items():
        (suite / rel).parent.mkdir(parents=True, exist_ok=True)
        (suite / rel).write_text(text)
    (tmp_path / "repo").mkdir(exist_ok=True)
    (tmp_path / "pytest.ini").write_text(INI)
    report = report or tmp_path / "report.jsonl"
    harness = tmp_path / "harness"
    if not harness.exists():
        write_harness(harness, Behaviour())
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "PATCHGATE_REPORT": str(report), "PATCHGATE_NONCE": "n0", "PATCHGATE_MESSAGES": "1"}  # fmt: skip
    # Like the sandbox: `timeout` sends SIGTERM when the budget runs out, SIGKILL a little later.
    limit = ("timeout", "-k", "5", str(budget)) if budget else ()
    argv = (
        *limit, sys.executable, "-I", "-B", str(harness / "launch.py"), "pytest-in-process",
        "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(suite), "--confcutdir", str(suite),
        "-p", "no:cacheprovider", "-p", "pytest_timeout", "-o", f"pythonpath={tmp_path / 'repo'}",
        "--continue-on-collection-errors", "-q", "--no-header", "--tb=no", "-rN", str(suite),
    )  # fmt: skip
    return run_process(argv, env=env, cwd=tmp_path / "repo", timeout=120), report


def outcomes(report: Path) -> dict[str, Any]:
    log = parse_log(report.read_bytes(), "n0", "pytest")
    assert log.started and not log.problems, log.problems
    return {i: (o.kind, o.timed_out) for i, o in log.tests.items()}


SUITE = """\
import os
import time

import pytest


def test_pass():
    assert True


def test_fail():
    print("test_fail PASSED")
    assert 1 == 2, "one is not two"


@pytest.mark.parametrize("x", [1, 0])
def test_param(x):
    assert x


def test_skip():
    pytest.skip("not today")


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


def test_imperative_xfail():
    pytest.xfail("no")


@pytest.mark.timeout(1)
def test_slow():
    time.sleep(10)


@pytest.fixture
def broken():
    raise RuntimeError("fixture")


def test_setup_error(broken):
    pass


def test_environment_is_clean():
    assert not [k for k in os.environ if k.startswith("PATCHGATE_")]


class TestGroup:
    def test_method(self):
        pass
"""


@pytest.mark.slow
def test_every_outcome_is_recorded(tmp_path: Path) -> None:
    result, report = run_plugin(tmp_path, {"test_suite.py": SUITE})
    assert result.returncode == 1, result.stderr.decode()
    assert outcomes(report) == {
        "test_suite.py::test_pass": ("passed", False),
        "test_suite.py::test_fail": ("failed", False),
        "test_suite.py::test_param[1]": ("passed", False),
        "test_suite.py::test_param[0]": ("failed", False),
        "test_suite.py::test_skip": ("skipped", False),
        "test_suite.py::test_xfail": ("xfailed", False),  # the suite's own marker: as pytest says
        "test_suite.py::test_imperative_xfail": ("xfailed", False),
        "test_suite.py::test_slow": ("failed", True),
        "test_suite.py::test_setup_error": ("error", False),
        "test_suite.py::test_environment_is_clean": ("passed", False),
        "test_suite.py::TestGroup::test_method": ("passed", False),
    }
    log = parse_log(report.read_bytes(), "n0", "pytest")
    assert log.tests["test_suite.py::test_fail"].message == "AssertionError: one is not two"
    assert log.finished and log.exit_status == 1


HOSTILE_CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and report.failed:
        if "to_pass" in item.name:
            report.outcome = "passed"
        elif "to_skip" in item.name:
            report.outcome = "skipped"
            report.longrepr = ("x", 1, "Skipped: hidden")
        else:
            report.outcome = "skipped"
            report.wasxfail = "rewritten"
"""


def test_a_hook_rewriting_failures_does_not_make_them_pass(tmp_path: Path) -> None:
    files = {
        "conftest.py": HOSTILE_CONFTEST,
        "test_rewritten.py": "def test_to_pass():\n    assert 0\n\n\ndef test_to_skip():\n    assert 0\n\n\n"
        "def test_to_xfail():\n    assert 0\n\n\ndef test_honest():\n    assert 1\n",
    }
    _, report = run_plugin(tmp_path, files)
    assert outcomes(report) == {
        "test_rewritten.py::test_to_pass": ("failed", False),
        "test_rewritten.py::test_to_skip": ("failed", False),
        "test_rewritten.py::test_to_xfail": ("failed", False),
        "test_rewritten.py::test_honest": ("passed", False),
    }


def test_a_planted_report_is_refused_not_appended_to(tmp_path: Path) -> None:
    planted = tmp_path / "report.jsonl"
    fake = json.dumps({"kind": "start", "runner": "pytest", "nonce": "n0", "version": 1}) + "\n"
    planted.write_text(fake)
    result, _ = run_plugin(tmp_path, {"test_a.py": "def test_a():\n    pass\n"}, planted)
    assert result.returncode != 0
    assert b"FileExistsError" in result.stderr
    assert planted.read_text() == fake


@pytest.mark.parametrize(
    ("exit_call", "finished"), [("sys.exit(0)", True), ("os._exit(0)", False), ("raise SystemExit(0)", True)]
)
def test_exiting_at_import_leaves_the_tests_unreported(
    tmp_path: Path, exit_call: str, finished: bool
) -> None:
    files = {
        "test_a.py": "def test_a():\n    pass\n",
        "test_b.py": f"import os, sys\n{exit_call}\n\n\ndef test_b():\n    pass\n",
    }
    _, report = run_plugin(tmp_path, files)
    log = parse_log(report.read_bytes(), "n0", "pytest")
    assert log.started and not log.problems
    assert log.finished is finished
    assert "test_b.py::test_b" not in log.tests
    assert all(o.kind != "passed" for i, o in log.tests.items() if i.startswith("test_b.py"))


def test_a_missing_module_is_named(tmp_path: Path) -> None:
    files = {"test_a.py": "import not_installed_anywhere\n\n\ndef test_a():\n    pass\n"}
    _, report = run_plugin(tmp_path, files)
    log = parse_log(report.read_bytes(), "n0", "pytest")
    assert [(p.path, p.missing_module) for p in log.collect_problems] == [
        ("test_a.py", "not_installed_anywhere")
    ]
    assert log.collection_done and not log.tests


@pytest.mark.slow
def test_the_report_survives_the_code_under_test_and_the_budget(tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    vandal = (
        "import os, time\n\n\ndef test_first():\n    pass\n\n\n"
        "def test_vandal():\n"
        f"    with open({str(report)!r}, 'w') as f:\n"
        "        f.write('garbage\\n')\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        while True:\n"
        f"            open({str(report)!r}, 'a').write('more garbage\\n')\n"
        "            time.sleep(0.01)\n"
        "    time.sleep(60)\n"
    )
    result, _ = run_plugin(tmp_path, {"test_vandal.py": vandal}, report, budget=4)
    assert result.returncode == 124
    log = parse_log(report.read_bytes(), "n0", "pytest")
    assert log.started and not log.problems, log.problems
    assert log.tests == {"test_vandal.py::test_first": TestOutcome("passed")}
    assert log.unfinished == {"test_vandal.py::test_vandal"}
    assert b"garbage" not in report.read_bytes()


SUBTESTS = """\
import unittest

import pytest


class TestBackends(unittest.TestCase):
    def test_all_there(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertGreaterEqual(n, 0)

    def test_one_backend_missing(self):
        for name in ("simple", "missing", "other"):
            with self.subTest(name):
                if name == "missing":
                    raise unittest.SkipTest("no module named missing")
                self.assertTrue(name)

    def test_one_subtest_fails(self):
        for n in range(3):
            with self.subTest(n=n):
                if n == 1:
                    raise unittest.SkipTest("skipped")
                self.assertLess(n, 2)


def test_subtests_fixture(subtests):
    for n in range(2):
        with subtests.test(n=n):
            if n == 0:
                pytest.skip("not here")
            assert n == 1
"""


@pytest.mark.slow
def test_a_skipped_subtest_is_counted_not_the_test_s_outcome(tmp_path: Path) -> None:
    # pytest passes a test whose subTest skipped (pathspec's hyperscan backend): it is recorded passed,
    # with its skipped subtests counted for the host to hold against base's; a failed subtest fails it.
    result, report = run_plugin(tmp_path, {"test_sub.py": SUBTESTS})
    log = parse_log(report.read_bytes(), "n0", "pytest")
    assert log.started and not log.problems, (log.problems, result.stderr.decode())
    found = {i.partition("::")[2]: (o.kind, o.skipped_subtests) for i, o in log.tests.items()}
    assert found == {
        "TestBackends::test_all_there": ("passed", 0),
        "TestBackends::test_one_backend_missing": ("passed", 1),
        "TestBackends::test_one_subtest_fails": ("failed", 1),
        "test_subtests_fixture": ("passed", 1),
    }
