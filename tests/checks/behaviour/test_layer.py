# ruff: noqa: E501 - tables of cases read best one case a line
"""The behaviour layer against real Docker: honest changes, hostile changes, broken suites."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour import run_behaviour
from checks.behaviour.baseruns import BaseRuns
from checks.behaviour.suites import Suites
from checks.policy import Policy
from checks.report import BehaviourResult, Report, SuiteResult
from checks.runner import LayerContext
from checks.workspace import Workspace, from_git
from sandbox.docker import DockerSandbox
from tests.conftest import GitRepo
from tests.fakes.recording import Recording

pytestmark = pytest.mark.docker

Files = dict[str, str | bytes | None]

BASE: Files = {
    "calc/__init__.py": "def double(x):\n    return x * 2\n\n\ndef half(x):\n    raise NotImplementedError\n",
}
RIGHT = "def double(x):\n    return x * 2\n\n\ndef half(x):\n    return x // 2\n"
WRONG = "def double(x):\n    return x * 2\n\n\ndef half(x):\n    return 0\n"

HIDDEN: dict[str, str] = {
    "test_calc.py": (
        "import pytest\n\nfrom calc import double, half\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "@pytest.mark.parametrize(('x', 'y'), [(4, 2), (10, 5)])\n"
        "def test_half(x, y):\n    assert half(x) == y, f'half({x}) should be {y}'\n\n\n"
        "def test_half_zero():\n    assert half(0) == 0\n"
    ),
    "calc.cases.yml": (
        "module: calc\ncases:\n"
        "  - {id: half_of_eight, call: half(8), equals: 4}\n"
        "  - {id: half_of_text, call: 'half(\"x\")', raises: TypeError}\n"
    ),
}
# WRONG passes test_double and test_half_zero: 2 of 6, whatever else the change does.
WRONG_NUMBERS = (2, 6)


@dataclass
class Gate:
    make_repo: Callable[[str], GitRepo]
    tmp_path: Path
    sandbox: DockerSandbox
    image: str

    def change(self, head: Files, base: Files = BASE, name: str = "repo") -> Workspace:
        repo = self.make_repo(name)
        repo.commit("base", dict(base))
        repo.branch("pr")
        repo.commit("pr", dict(head))
        return from_git(repo.path, "main", "pr", self.tmp_path / f"ws-{name}")

    def suite(self, name: str, files: dict[str, str]) -> Path:
        root = self.tmp_path / "store" / name
        root.mkdir(parents=True)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return root

    def run(
        self,
        ws: Workspace,
        hidden: Path | None,
        held_out: Path | None = None,
        runner: Any = None,
        *,
        strength: dict[str, Any] | None = None,
        base_runs: BaseRuns | None = None,
        **behaviour: Any,
    ) -> BehaviourResult:
        policy = Policy.model_validate(
            # No mutants unless a test asks for strength: they are measured in their own tests.
            {"behaviour": {"show_hidden_failures": "ids+messages", **behaviour},
             "strength": {"max_mutants": 0} if strength is None else strength}
        )  # fmt: skip
        ctx = LayerContext(ws, policy, runner or self.sandbox, self.image)
        return run_behaviour(ctx, Suites(hidden=hidden, held_out=held_out), base_runs)


@pytest.fixture
def gate(
    make_repo: Callable[[str], GitRepo],
    tmp_path: Path,
    behaviour_sandbox: DockerSandbox,
    behaviour_image: str,
) -> Gate:
    return Gate(make_repo, tmp_path, behaviour_sandbox, behaviour_image)


def numbers(suite: SuiteResult) -> tuple[int, int]:
    return suite.passed, suite.total


def test_a_correct_change_passes_hidden_and_held_out(gate: Gate) -> None:
    ws = gate.change({"calc/__init__.py": RIGHT})
    held_out = gate.suite(
        "held-out", {"test_more.py": "from calc import half\n\n\ndef test_odd():\n    assert half(7) == 3\n"}
    )
    recording = Recording(gate.sandbox)
    result = gate.run(ws, gate.suite("hidden", HIDDEN), held_out, runner=recording, strength={})
    assert result.status == "passed", result
    hidden, held = result.suites
    assert (hidden.name, hidden.kind, numbers(hidden), hidden.pass_rate) == ("hidden", "hidden", (6, 6), 1.0)
    assert (held.name, held.kind, numbers(held)) == ("held-out", "held_out", (1, 1))
    # double passed on base too; half and the cases did not.
    assert (result.pass_to_pass, result.fail_to_pass, result.fail_to_pass_total, result.regressions) == (
        1,
        6,
        6,
        0,
    )
    assert hidden.wall_s and hidden.peak_memory_bytes
    # A held-out run's time and memory are a channel the code under test controls: never shown.
    assert (held.wall_s, held.peak_memory_bytes) == (None, None)
    # Base once and head twice per part: hidden has pytest and cases, held-out pytest only; then
    # the mutants of the changed lines (a file laid over the head tree), against the hidden suite.
    # And each suite's pytest part collected once on base in-process (no grader, the suite copied in).
    collections = [s for s in recording.specs if s.grader is None]
    assert [("--collect-only" in s.argv, s.copy_in[0].source) for s in collections] == [
        (True, ws.base_dir)
    ] * 2
    mutant_specs = [s for s in recording.specs if len(s.copy_in) == 2 and s.grader is not None]
    recording.specs[:] = [s for s in recording.specs if len(s.copy_in) == 1]
    assert len(recording.specs) == 9
    strength = result.strength
    assert (strength.status, strength.changed_lines, strength.hidden_covered) == ("measured", 1, 1), strength
    assert strength.held_out_covered is None and strength.uncovered == []
    # One run per part, the cases part only when the pytest part did not already kill the mutant.
    assert 0 < strength.mutants <= len(mutant_specs) <= 2 * strength.mutants
    # `x / 2` for `x // 2`: 4 / 2 == 2, so the suite cannot tell them apart; it survives, listed.
    assert any(m.mutated == "return x / 2" for m in strength.survivors)
    assert strength.killed + len(strength.survivors) == strength.mutants
    assert not any("held_out" in str(m.source) for s in mutant_specs for m in s.grader.private)  # type: ignore[union-attr]
    held_out_specs = [
        s for s in recording.specs if s.grader and any("held_out" in str(m.source) for m in s.grader.private)
    ]
    assert len(held_out_specs) == 3
    for spec in recording.specs:
        # No suite is ever mounted: it reaches the grader alone, as private files.
        assert [m.target for m in spec.mounts] == ["/patchgate"]
        assert spec.grader is not None and spec.grader.collect == ("/grader/report.jsonl",)
        assert all(m.target.startswith("/grader/") for m in spec.grader.private)
        assert not any("held_out" in str(m.source) or "suite" in str(m.source) for m in spec.copy_in)
        assert "subject" in spec.argv


def test_a_wrong_change_fails_with_ids_and_messages(gate: Gate) -> None:
    result = gate.run(gate.change({"calc/__init__.py": WRONG}), gate.suite("hidden", HIDDEN))
    assert result.status == "failed"
    hidden = result.suites[0]
    assert numbers(hidden) == WRONG_NUMBERS
    assert (hidden.failed, hidden.errors) == (4, 0)
    failures = {f.id: f.message for f in hidden.failures}
    assert failures == {
        "test_calc.py::test_half[4-2]": "AssertionError: half(4) should be 2",
        "test_calc.py::test_half[10-5]": "AssertionError: half(10) should be 5",
        "calc.cases.yml::half_of_eight": "expected 4, got 0",
        "calc.cases.yml::half_of_text": "expected TypeError to be raised, got 0",
    }


HOOKS = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
"""
STARTUP = "import builtins\nbuiltins.__dict__['AssertionError'] = type('Nope', (Exception,), {})\n"


def test_test_infrastructure_changes_are_undone(gate: Gate) -> None:
    head: Files = {
        "calc/__init__.py": WRONG,
        "conftest.py": HOOKS,
        "calc/conftest.py": HOOKS.replace('"passed"', '"skipped"'),
        "pytest.ini": "[pytest]\naddopts = -p calc.conftest\n",
        "tox.ini": "[pytest]\naddopts = -p calc.conftest\n",
        "setup.cfg": "[tool:pytest]\naddopts = -p calc.conftest\n",
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-p calc.conftest'\n",
        "sitecustomize.py": STARTUP,
        "usercustomize.py": STARTUP,
        "calc.pth": "import sitecustomize\n",
    }
    result = gate.run(gate.change(head), gate.suite("hidden", HIDDEN))
    assert numbers(result.suites[0]) == WRONG_NUMBERS
    assert result.status == "failed"
    assert (
        "test infrastructure restored from base before the runs: calc.pth, calc/conftest.py" in result.detail
    )


FORGER = """
import atexit
import glob
import json
import os
import sys


def _forge():
    # Claim every test passed, in every report file we can find, with its own nonce copied.
    for path in glob.glob("/tmp/*.jsonl") + ["/tmp/report.jsonl", "/work/repo/report.xml"]:
        try:
            with open(path) as f:
                start = f.readline()
            with open(path, "w") as f:
                f.write(start)
                f.write(json.dumps({"kind": "collected", "ids": []}) + "\\n")
                f.write(json.dumps({"kind": "finish", "exit_status": 0}) + "\\n")
        except OSError:
            pass


print("test_calc.py::test_half[4-2] PASSED")
print("======== 6 passed in 0.01s ========")
sys.stderr.write("PASSED\\n" * 50)
with open("/tmp/report.jsonl", "w") as f:
    f.write('{"kind": "test", "id": "test_calc.py::test_half[4-2]", "outcome": "passed"}\\n')
_forge()
atexit.register(_forge)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        for _ in range(200):
            _forge()
            time.sleep(0.05)
    os._exit(0)
"""


def test_fake_output_and_forged_reports_change_nothing(gate: Gate) -> None:
    result = gate.run(gate.change({"calc/__init__.py": WRONG + FORGER}), gate.suite("hidden", HIDDEN))
    hidden = result.suites[0]
    assert numbers(hidden) == WRONG_NUMBERS
    assert hidden.errors == 0, hidden.detail


@pytest.mark.parametrize("exit_call", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"])
def test_exiting_at_import_fails_every_test_it_hides(gate: Gate, exit_call: str) -> None:
    result = gate.run(gate.change({"calc/__init__.py": exit_call + RIGHT}), gate.suite("hidden", HIDDEN))
    assert result.status == "failed"
    hidden = result.suites[0]
    assert numbers(hidden) == (0, 6)
    assert hidden.errors == 6
    # test_double passed on base: it is a regression now.
    assert result.regressions == 1


def test_skips_and_xfails_raised_by_the_change_count_as_failures(gate: Gate) -> None:
    head = RIGHT.replace(
        "    return x // 2\n",
        "    import pytest\n    pytest.skip('later') if x % 4 else pytest.xfail('no')\n",
    )
    result = gate.run(gate.change({"calc/__init__.py": head}), gate.suite("hidden", HIDDEN))
    hidden = result.suites[0]
    # double passes; half(0) and half(4) xfail, half(10) skips; half(8) xfails in the case runner
    # (a plain exception there), and half("x") raises the TypeError its case expects.
    assert numbers(hidden) == (2, 6)
    # A skip or xfail the change raises never reaches the grader's pytest as one: it is a failure
    # that names what the change raised.
    assert {
        f.id: f.message.rsplit(" raised ", 1)[-1].split(":")[0].rsplit(".", 1)[-1]
        for f in hidden.failures
        if f.id.startswith("test_")
    } == {
        "test_calc.py::test_half[4-2]": "XFailed",
        "test_calc.py::test_half[10-5]": "Skipped",
        "test_calc.py::test_half_zero": "XFailed",
    }


def test_an_object_equal_to_everything_fails_every_case(gate: Gate) -> None:
    cheat = (
        "import inspect\n\n\nclass Anything:\n    def __eq__(self, other):\n        return True\n\n\n"
        "def double(x):\n    return Anything()\n\n\n"
        "def half(x):\n"
        "    # Look for the expected value in every frame above.\n"
        "    frame = inspect.currentframe()\n"
        "    while frame is not None:\n"
        "        for value in frame.f_locals.values():\n"
        "            if isinstance(value, dict) and 'equals' in value:\n"
        "                return value['equals']\n"
        "        frame = frame.f_back\n"
        "    return Anything()\n"
    )
    suite = gate.suite(
        "hidden",
        {"calc.cases.yml": HIDDEN["calc.cases.yml"] + "  - {id: double_two, call: double(2), equals: 4}\n"},
    )
    result = gate.run(gate.change({"calc/__init__.py": cheat}), suite)
    hidden = result.suites[0]
    assert numbers(hidden) == (0, 3)
    messages = {f.id.split("::")[1]: f.message for f in hidden.failures}
    assert messages["double_two"].startswith("the result cannot be compared: a result of type calc.Anything")
    assert messages["half_of_eight"].startswith("the result cannot be compared")


def test_flaky_tests_are_listed_and_count_as_failed(gate: Gate) -> None:
    coin = RIGHT + "\n\ndef coin():\n    import random\n    return random.random() < 0.5\n"
    suite = gate.suite("hidden", {
        "test_coin.py": "import pytest\n\nfrom calc import coin\n\n\n"
                        "@pytest.mark.parametrize('n', range(30))\ndef test_coin(n):\n    assert coin()\n",
    })  # fmt: skip
    recording = Recording(gate.sandbox)
    result = gate.run(gate.change({"calc/__init__.py": coin}), suite, runner=recording)
    hidden = result.suites[0]
    # Two head runs of 30 fair coins disagree somewhere (all agree with probability 2**-30).
    assert hidden.flaky > 0 and hidden.flaky_on_base == 0
    # Base (where coin() does not exist) ran a second time and agreed with itself: nothing is excused.
    assert hidden.total == 30 and hidden.passed <= 30 - hidden.flaky
    assert len(hidden.flaky_ids) == hidden.flaky
    assert all(i.startswith("test_coin.py::test_coin[") for i in hidden.flaky_ids)
    # Base, head twice, base again, base's collection in-process; and base in-process for the tests
    # failing isolated on base and on a head run (tier.py): they fail there too (coin() does not exist
    # on base), so no head tier run.
    assert len(recording.specs) == 6


def test_slow_tests_time_out_one_by_one(gate: Gate) -> None:
    slow = RIGHT.replace("    return x // 2\n", "    import time\n    time.sleep(30)\n    return x // 2\n")
    suite = gate.suite("hidden", {
        "test_slow.py": "import pytest\n\nfrom calc import double, half\n\n\n"
                        "def test_fast():\n    assert double(1) == 2\n\n\n"
                        "@pytest.mark.timeout(1)\ndef test_slow():\n    assert half(2) == 1\n",
        "slow.cases.yml": "module: calc\ncases:\n  - {id: slow, call: half(2), equals: 1, timeout_s: 1}\n",
    })  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": slow}), suite)
    hidden = result.suites[0]
    assert numbers(hidden) == (1, 3)
    assert hidden.timed_out == 2
    assert sorted(hidden.timed_out_ids) == ["slow.cases.yml::slow", "test_slow.py::test_slow"]


def test_a_suite_over_its_budget_times_out_what_did_not_finish(gate: Gate) -> None:
    # Ignoring SIGALRM defeats the per-test timeout; the run's own budget still ends it.
    stuck = RIGHT.replace(
        "    return x // 2\n",
        "    import signal, time\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    time.sleep(120)\n",
    )
    suite = gate.suite("hidden", {
        "test_stuck.py": "from calc import double, half\n\n\ndef test_fast():\n    assert double(1) == 2\n\n\n"
                         "def test_stuck():\n    assert half(2) == 1\n\n\ndef test_never_reached():\n    assert double(2) == 4\n",
    })  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": stuck}), suite, timeout_s=6)
    hidden = result.suites[0]
    assert result.status == "failed"
    assert numbers(hidden) == (1, 3)
    assert sorted(hidden.timed_out_ids) == ["test_stuck.py::test_never_reached", "test_stuck.py::test_stuck"]
    assert "used up its time budget of 6s" in hidden.detail


def test_held_out_never_leaks_a_name_or_a_message(gate: Gate) -> None:
    from checks.render.markdown import render_markdown
    from checks.render.text import render_text

    marker = "zebra_quokka_7731"
    held_out = gate.suite("held-out", {
        f"test_{marker}.py": f"from calc import half\n\n\ndef test_{marker}():\n    assert half(9) == 4, '{marker}'\n",
        f"{marker}.cases.yml": f"module: calc\ncases:\n  - {{id: {marker}, call: half(9), equals: 4}}\n",
    })  # fmt: skip
    broken = gate.suite("held-out-broken", {f"test_{marker}_broken.py": f"def test_{marker}(:\n"})
    ws = gate.change({"calc/__init__.py": WRONG})
    outputs = []
    ran = gate.run(ws, gate.suite("hidden", HIDDEN), held_out)
    assert numbers(ran.suites[1]) == (0, 2)
    assert ran.suites[1].failures == [] and ran.suites[1].status == "failed"
    # Time and memory are a channel the change controls: a held-out suite publishes neither.
    assert (ran.suites[1].wall_s, ran.suites[1].peak_memory_bytes) == (None, None)
    misconfigured = gate.run(ws, None, broken)
    assert misconfigured.status == "error"
    for result in (ran, misconfigured):
        report = Report(conclusion="failure", behaviour=result)
        outputs += [report.model_dump_json(), *render_markdown(report), render_text(report)]
    for output in outputs:
        assert marker not in output
    # The hidden suite's failures are shown, so the search above looked at real output.
    assert any("test_calc.py::test_half[4-2]" in output for output in outputs)


def test_a_suite_with_a_syntax_error_is_a_configuration_problem(gate: Gate) -> None:
    suite = gate.suite("hidden", {**HIDDEN, "test_broken.py": "def test_x(:\n    pass\n"})
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), suite)
    assert result.status == "error"
    assert result.suites[0].status == "error"
    assert "test_broken.py: line 1" in result.suites[0].detail
    assert "gate configuration problem" in result.suites[0].detail


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "hidden suite has no tests"),
        ({"test_a.py": "def test_a():\n    pass\n\n\ndef test_a():\n    pass\n"}, "'test_a' is defined twice"),
        ({"calc.cases.yml": "module: calc\ncases:\n  - {id: a, call: half(2), equals: 1}\n  - {id: a, call: half(4), equals: 2}\n"},
         "case id 'a' appears twice"),
    ],
)  # fmt: skip
def test_bad_suites_are_errors_that_name_the_problem(gate: Gate, files: dict[str, str], message: str) -> None:
    recording = Recording(gate.sandbox)
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), gate.suite("hidden", files), runner=recording)
    assert result.status == "error"
    assert message in result.suites[0].detail
    assert recording.specs == []


@pytest.mark.parametrize("kind", ["hidden", "held-out"])
def test_a_suite_pytest_cannot_collect_at_all_says_where_and_why_for_hidden_only(
    gate: Gate, kind: str
) -> None:
    # The suite folder's own conftest fails at import: nothing is collected, on base or on head.
    suite = gate.suite(
        kind, {**HIDDEN, "conftest.py": "import os\n\nraise RuntimeError('bad fixture setup')\n"}
    )
    hidden, held_out = (suite, None) if kind == "hidden" else (gate.suite("hidden", HIDDEN), suite)
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), hidden, held_out)
    assert result.status == "error"
    detail = result.suites[-1].detail
    if kind == "hidden":
        assert "pytest never collected the suite, on base or on head (exit status 4)" in detail
        assert "conftest.py:3: RuntimeError: bad fixture setup" in detail
    else:  # fixed words: the specifics go to the server log only
        assert "bad fixture setup" not in detail and "conftest" not in detail
        assert "the held-out suite could not run" in detail


def test_a_suite_needing_a_missing_dependency_says_which(gate: Gate) -> None:
    suite = gate.suite("hidden", {
        **HIDDEN,
        "test_props.py": "import hypothesis_not_installed\n\n\ndef test_prop():\n    pass\n",
    })  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), suite)
    assert result.status == "error"
    assert "needs module 'hypothesis_not_installed'" in result.suites[0].detail


def test_a_module_the_change_must_add_is_not_a_missing_dependency(gate: Gate) -> None:
    # The hidden suite tests a new package: it cannot import on base; the change adds it.
    suite = gate.suite(
        "hidden",
        {"test_new.py": "from newpkg import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"},
    )
    result = gate.run(gate.change({"newpkg/__init__.py": "def answer():\n    return 42\n"}), suite)
    assert result.status == "passed"
    assert (result.fail_to_pass, result.fail_to_pass_total) == (1, 1)
    missing = gate.run(gate.change({"other.py": "X = 1\n"}, name="repo2"), suite)
    assert missing.status == "error"
    assert "needs module 'newpkg'" in missing.suites[0].detail


FILES = (
    "import os\n\n\ndef listing(folder):\n    return sorted(os.listdir(folder))\n\n\n"
    "def read(path):\n    with open(path) as f:\n        return f.read()\n\n\n"
    "def write_out(folder):\n    os.makedirs(os.path.join(folder, 'out', 'deep'))\n"
    "    with open(os.path.join(folder, 'out', 'deep', 'result.txt'), 'w') as f:\n        f.write('done')\n"
    "    return 'done'\n"
)
FILES_TEST = {
    "test_files.py": (
        "import os\nimport tempfile\n\nimport files\n\n\n"
        "def test_a_folder_made_by_mkdtemp():\n    folder = tempfile.mkdtemp()\n"
        "    open(os.path.join(folder, 'a.txt'), 'w').close()\n    assert files.listing(folder) == ['a.txt']\n\n\n"
        "def test_a_named_temporary_file():\n"
        "    with tempfile.NamedTemporaryFile('w', suffix='.txt') as f:\n        f.write('hello')\n        f.flush()\n"
        "        assert files.read(f.name) == 'hello'\n\n\n"
        "def test_a_temporary_directory_the_code_writes_into_is_cleaned_up():\n"
        "    with tempfile.TemporaryDirectory() as folder:\n        assert files.write_out(folder) == 'done'\n"
        "        with open(os.path.join(folder, 'out', 'deep', 'result.txt')) as f:\n            assert f.read() == 'done'\n"
        "    assert not os.path.exists(folder)\n"
    ),
}


def test_a_test_s_temporary_files_reach_the_code_under_test(gate: Gate) -> None:
    # The subject is another uid: mkdtemp's 0700 folders and mkstemp's 0600 files were out of its reach,
    # and a folder it wrote into was one the test's cleanup could not remove.
    suite = gate.suite("hidden", FILES_TEST)
    result = gate.run(gate.change({"files.py": FILES}, base={"files.py": "X = 1\n"}), suite)
    assert result.status == "passed", result
    hidden = result.suites[0]
    assert numbers(hidden) == (3, 3) and hidden.in_process_tier == 0


def test_a_test_whose_subtest_base_skips_too_counts_and_passes(gate: Gate) -> None:
    # pathspec's shape: a subTest per backend, skipped where the backend's library is missing.
    suite = gate.suite("hidden", {**HIDDEN, "test_backends.py": (
        "import unittest\n\nimport calc\n\n\nclass TestBackends(unittest.TestCase):\n"
        "    def test_each(self):\n        for name in ('double', 'triple'):\n            with self.subTest(name):\n"
        "                if not hasattr(calc, name):\n                    raise unittest.SkipTest(f'no {name}')\n"
        "                self.assertEqual(getattr(calc, name)(2), 4)\n"
    )})  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), suite)
    assert result.status == "passed", result
    hidden = result.suites[0]
    # Without the subtest's skip counted apart, the test is "skipped on base" and leaves the total.
    assert numbers(hidden) == (7, 7) and hidden.skipped_on_base == 0


# Test support in the tree (Python-Markdown's markdown.test_tools): a TestCase of the library's own that
# every test class derives from. Base's copy runs in the grader, so pytest collects the tests isolated.
SUPPORTED: Files = {
    "pkg/__init__.py": "from .core import render\n",
    "pkg/core.py": "def render(text):\n    return text.upper()\n",
    "pkg/testing.py": (
        "import unittest\n\nfrom . import render\n\n\nclass PkgCase(unittest.TestCase):\n"
        "    def assertRenders(self, source, expected):\n        self.assertEqual(render(source), expected)\n"
    ),
}
SUPPORTED_SUITE = {
    # Named *Tests, deriving from the tree's class at import time: only a real TestCase is collected.
    "test_render.py": (
        "import pkg.testing\nfrom pkg.testing import PkgCase\n\n\nclass RenderTests(PkgCase):\n"
        "    def test_word(self):\n        self.assertRenders('ab', 'AB')\n\n"
        "    def test_empty(self):\n        self.assertRenders('', '')\n\n"
        "    def test_the_package_reads_the_same_module(self):\n        self.assertIs(pkg.testing.PkgCase, PkgCase)\n"
    ),
}


def test_tests_deriving_from_the_tree_s_own_test_case_run_isolated(gate: Gate) -> None:
    suite = gate.suite("hidden", SUPPORTED_SUITE)
    honest = gate.run(gate.change({"pkg/core.py": '"""Rendering."""\n\n\ndef render(text):\n    return text.upper()\n'},
                                  base=SUPPORTED, name="honest"), suite)  # fmt: skip
    assert honest.status == "passed", honest
    hidden = honest.suites[0]
    # Without base's copy in the grader, PkgCase is a proxy there: pytest collects no test of the module
    # isolated, and all three are measured in the in-process tier.
    assert numbers(hidden) == (3, 3) and hidden.in_process_tier == 0, hidden
    assert not honest.untested
    buggy = gate.run(gate.change({"pkg/core.py": "def render(text):\n    return text\n"},
                                 base=SUPPORTED, name="buggy"), suite)  # fmt: skip
    assert buggy.status == "failed" and numbers(buggy.suites[0]) == (2, 3), buggy


def test_a_change_that_forges_the_tree_s_test_case_is_still_tested_with_base_s(gate: Gate) -> None:
    # Hostile: the change breaks render and makes the library's assertion helper agree with anything.
    # The tests run base's PkgCase, so the bug fails them; in-process, head's forged helper would pass.
    forged = "import unittest\n\n\nclass PkgCase(unittest.TestCase):\n    def assertRenders(self, source, expected):\n        pass\n"
    head: Files = {"pkg/core.py": "def render(text):\n    return text\n", "pkg/testing.py": forged}
    result = gate.run(gate.change(head, base=SUPPORTED), gate.suite("hidden", SUPPORTED_SUITE))
    assert result.status == "failed", result
    assert numbers(result.suites[0]) == (2, 3) and result.suites[0].in_process_tier == 0
    # And a maintainer is told the change's edits to it were not what the tests ran.
    assert any("pkg/testing.py" in why and "not tested" in why for why in result.untested), result.untested


def test_the_change_s_functions_are_functions_to_a_test_s_introspection(gate: Gate) -> None:
    # semver's shape: tests parametrized over inspect.getmembers(lib, inspect.isfunction), named by __name__.
    suite = gate.suite("hidden", {"test_api.py": (
        "import inspect\nimport types\n\nimport pytest\n\nimport calc\n\n"
        "FUNCS = [f for _, f in inspect.getmembers(calc, inspect.isfunction)]\n\n\n"
        "@pytest.mark.parametrize('func', FUNCS, ids=[f.__name__ for f in FUNCS])\n"
        "def test_documented(func):\n    assert isinstance(func, types.FunctionType) and func(4) in (2, 8)\n\n\n"
        "def test_found_both():\n    assert [f.__name__ for f in FUNCS] == ['double', 'half']\n"
    )})  # fmt: skip
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}), suite)
    assert result.status == "passed", result
    # Without it FUNCS is empty isolated: the parametrized ids are not there to count, test_found_both fails.
    assert numbers(result.suites[0]) == (3, 3) and result.suites[0].in_process_tier == 0, result.suites[0]


def passes_isolated(gate: Gate, source: str, tests: dict[str, str], count: int) -> None:
    """A change adding a comment to ``calc/__init__.py`` (``source`` on base) passes all ``count`` tests,
    every one of them isolated (none in the in-process tier)."""
    result = gate.run(
        gate.change({"calc/__init__.py": source + "\n"}, base={"calc/__init__.py": source}),
        gate.suite("hidden", tests),
    )
    assert result.status == "passed", result
    assert numbers(result.suites[0]) == (count, count) and result.suites[0].in_process_tier == 0, (
        result.suites[0]
    )


def test_a_test_object_s_class_is_named_as_the_test_named_it(gate: Gate) -> None:
    # click's _is_jupyter_kernel_output reads stream.__class__.__module__; libraries name type(x) in errors.
    source = (
        "def describe(x):\n    return f'{type(x).__name__} {type(x).__qualname__} from {x.__class__.__module__}'\n\n\n"
        "def check(x):\n    if not isinstance(x, int):\n        raise TypeError(f'expected int, got {type(x).__name__}')\n    return x\n"
    )
    passes_isolated(gate, source, {"test_names.py": (
        "import pytest\n\nfrom calc import check, describe\n\n\nclass Widget:\n    pass\n\n\n"
        "def test_foreign_module():\n    class Stream:\n        pass\n\n    Stream.__module__ = 'ipykernel.faked'\n"
        "    assert describe(Stream()) == 'Stream test_foreign_module.<locals>.Stream from ipykernel.faked'\n\n\n"
        "def test_suite_class_named_in_an_error():\n    with pytest.raises(TypeError, match='got Widget$'):\n        check(Widget())\n\n\n"
        "def test_own_module_and_function():\n    assert describe(Widget()) == 'Widget Widget from test_names'\n"
        "    assert describe(len) == 'builtin_function_or_method builtin_function_or_method from builtins'\n"
    )}, 3)  # fmt: skip


def test_a_module_s_own_dir_lists_its_lazy_attributes(gate: Gate) -> None:
    # PEP 562: a package that loads its parts on first use lists them with a module-level __dir__ (six.moves).
    lazy = (
        RIGHT
        + "\n\ndef __getattr__(name):\n    if name == 'triple':\n        return lambda x: x * 3\n    raise AttributeError(name)\n\n\ndef __dir__():\n    return ['double', 'half', 'triple']\n"
    )
    passes_isolated(gate, lazy, {"test_lazy.py": (
        "import calc\n\n\ndef test_listed():\n    assert dir(calc) == ['double', 'half', 'triple']\n\n\n"
        "def test_used():\n    assert calc.triple(2) == 6\n"
    )}, 2)  # fmt: skip


def test_a_submodule_the_change_s_package_maps_elsewhere_is_what_it_maps(gate: Gate) -> None:
    # six.moves' shape: the package names standard-library modules as its own submodules in sys.modules.
    aliased = (
        RIGHT
        + "\nimport sys as _sys\nimport json as _json\n\n_sys.modules[__name__ + '.compat_json'] = compat_json = _json\n"
    )
    passes_isolated(gate, aliased, {"test_alias.py": (
        "import importlib\n\n\ndef test_imported():\n    import calc.compat_json\n\n    assert calc.compat_json.dumps([1]) == '[1]'\n\n\n"
        "def test_dunder_import():\n    __import__('calc.compat_json')\n    assert importlib.import_module('calc.compat_json').loads('2') == 2\n"
    )}, 2)  # fmt: skip


def test_a_module_s_namespace_is_written_as_the_module(gate: Gate) -> None:
    # six's tests clean up with `del six.moves.__dict__["spam"]`, expecting KeyError when it is gone.
    passes_isolated(gate, RIGHT, {"test_namespace.py": (
        "import pytest\n\nimport calc\n\n\ndef test_written():\n    calc.__dict__['extra'] = 5\n    assert calc.extra == 5\n"
        "    del calc.__dict__['extra']\n    assert not hasattr(calc, 'extra')\n    with pytest.raises(KeyError):\n"
        "        del calc.__dict__['extra']\n"
    )}, 1)  # fmt: skip
