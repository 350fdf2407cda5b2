# ruff: noqa: E501 - suites and hostile patches read best as the source they are
"""The in-process tier: tests the isolation cannot carry, decided by base, measured apart, labelled forgeable."""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from checks.behaviour.grade import TestOutcome
from checks.behaviour.graderuns import slow_to_cross
from checks.behaviour.plan import RunPlan, Staging, Tree
from checks.behaviour.suites import Suite, load_suite
from checks.behaviour.tier import candidates, measure, stage_tier
from checks.decide import decide
from checks.policy import Behaviour, Policy
from checks.report import QualityResult, ShapeResult
from sandbox.spec import RunResult
from tests.checks.behaviour.test_layer import HIDDEN, RIGHT, WRONG, WRONG_NUMBERS, Files, Gate, gate, numbers

__all__ = ["gate"]

# A value of the change's compared with a test's: isolated, the change's __eq__ is never handed the
# test's value (the comparison defence, by design: semver's `Version == "1.0.0"`); in one process it is.
COMPARES = (
    "\n\nclass Version:\n    def __init__(self, text):\n        self.text = text\n\n"
    "    def __eq__(self, other):\n        return self.text == getattr(other, 'text', other)\n\n"
    "    def __hash__(self):\n        return hash(self.text)\n"
)
COMPARES_TEST = {
    "test_compares.py": "from calc import Version\n\n\ndef test_equal_to_text():\n    assert Version('1.0') == '1.0'\n",
}
BASE_WITH_COMPARES: Files = {
    "calc/__init__.py": "def double(x):\n    return x * 2\n\n\ndef half(x):\n    raise NotImplementedError\n"
    + COMPARES
}


def suite_of(tmp_path: Path, files: dict[str, str]) -> Suite:
    """A hidden suite of these files (paths under the suite's root), as the store holds one."""
    root = tmp_path / "suite"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return load_suite(root, "hidden")


def test_candidates_are_what_failed_isolated_on_base_and_in_a_head_run() -> None:
    assert candidates(["a", "b", "c", "d"], base_passed=["a"], head_passed=["a", "b"]) == ["c", "d"]
    # And the slow ones (base's word), never an id outside the pytest part.
    assert candidates(["a", "b", "c"], base_passed=["a", "b"], head_passed=["a"], slow=["b", "x"]) == [
        "b",
        "c",
    ]


def test_only_a_test_base_ran_slowly_is_slow_to_cross_when_head_runs_out_of_time() -> None:
    timed_out = TestOutcome("failed", "Timeout", timed_out=True)
    base = {
        "slow": TestOutcome("passed", seconds=41.0),  # 500,000 round trips: past half of 60 s on base
        "quick": TestOutcome("passed", seconds=0.2),
        "unknown": TestOutcome("passed"),
        "failing": TestOutcome("failed", seconds=59.0),
        "passing": TestOutcome("passed", seconds=45.0),
    }
    heads = [
        {"slow": timed_out, "quick": timed_out, "unknown": timed_out, "failing": timed_out},
        {"slow": TestOutcome("passed"), "quick": timed_out, "passing": TestOutcome("passed")},
    ]
    # Hostile: the change hanging a test base ran quickly cannot move it into the forgeable tier.
    assert slow_to_cross(base, heads, 60.0) == {"slow"}
    assert slow_to_cross(base, heads, 90.0) == frozenset()


def test_a_tier_run_holds_the_tier_s_tests_alone(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, {
        "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef x():\n    return 1\n",
        "helpers.py": "EXPECTED = 4\n",
        "test_a.py": "import pytest\n\n\n@pytest.fixture\ndef y():\n    return 2\n\n\ndef test_keep(y):\n    pass\n\n\n"
        "def test_secret():\n    assert 1 == 99\n\n\nclass TestK:\n    def test_in(self):\n        pass\n\n    def test_out(self):\n        assert 2 == 98\n",
        "test_other.py": "def test_elsewhere():\n    assert 3 == 97\n",
    })  # fmt: skip
    staged = stage_tier(suite, tmp_path / "staged", ["test_a.py::test_keep", "test_a.py::TestK::test_in[1]"])
    assert not (staged / "test_other.py").exists()
    assert (staged / "conftest.py").is_file() and (staged / "helpers.py").is_file()
    text = (staged / "test_a.py").read_text()
    names = {n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)}
    assert names == {"y", "test_keep", "test_in"}
    assert "99" not in text and "98" not in text


def test_staging_the_tier_keeps_what_its_tests_derive_from_and_import(tmp_path: Path) -> None:
    # Python-Markdown's shape: test_md_in_html.py derives a class from test_html_blocks.py's. Deleting a
    # module with no tier test, or a class with none, broke the import of the tier's own module.
    suite = suite_of(tmp_path, {
        "test_base.py": "import unittest\n\n\nclass Blocks(unittest.TestCase):\n    def test_inherited(self):\n        pass\n\n"
        "    def test_other(self):\n        assert 1 == 91\n\n\nclass TestUnrelated:\n    def test_x(self):\n        assert 1 == 92\n\n\n"
        "class TestNamed:\n    limit = 90\n\n    def test_y(self):\n        assert 1 == 96\n",
        "test_sub.py": "import unittest\n\nfrom test_base import Blocks, TestNamed\n\n\nclass Local(unittest.TestCase):\n"
        "    def test_inherited(self):\n        assert 1 == 93\n\n    def test_local(self):\n        pass\n\n\n"
        "class Sub(Blocks):\n    def test_own(self):\n        import test_unused\n        assert 1 == 94\n\n\n"
        "class Deeper(Local):\n    def test_more(self):\n        assert 1 == 95\n",
        "test_unused.py": "def test_elsewhere():\n    assert 3 == 97\n",
    })  # fmt: skip
    staged = stage_tier(
        suite, tmp_path / "staged", ["test_sub.py::Sub::test_inherited", "test_sub.py::Deeper::test_local"]
    )
    # Imported by a test the tier drops only: gone.
    assert not (staged / "test_unused.py").exists()
    base_text, sub_text = (staged / "test_base.py").read_text(), (staged / "test_sub.py").read_text()
    # Kept only to be imported: the classes the tier imports stay, with the tests it inherits from them
    # alone; another test class is gone, name and body (a held-out suite's test ids, its data).
    assert "def test_inherited" in base_text and "class TestNamed" in base_text and "90" in base_text
    assert "TestUnrelated" not in base_text and not any(n in base_text for n in ("91", "92", "96"))
    # In the tier's own module: Local keeps what Deeper inherits, Sub and Deeper lose their own tests.
    assert "def test_local" in sub_text and not any(n in sub_text for n in ("93", "94", "95"))
    # And the staged suite imports: pytest collects the tier's tests from it.
    namespace: dict[str, object] = {}
    sys.path.insert(0, str(staged))
    try:
        exec(compile(sub_text, str(staged / "test_sub.py"), "exec"), namespace)  # noqa: S102 - our own staged test
    finally:
        sys.path.remove(str(staged))
        sys.modules.pop("test_base", None)
    assert hasattr(namespace["Sub"], "test_inherited") and hasattr(namespace["Deeper"], "test_local")


def test_staging_the_tier_keeps_a_test_method_its_tests_call_as_a_helper(tmp_path: Path) -> None:
    # idna's shape: test_idna_codec.py's setUp imports test_idna inside a method and calls one of its
    # TestCase's test methods with a decoder of its own. Dropping that method failed the tier's base run,
    # so the test, unable to cross, was counted as failed and the unchanged head concluded failure.
    suite = suite_of(tmp_path, {
        "tests/__init__.py": "",
        "tests/test_idna.py": "import unittest\n\n\nclass IDNATests(unittest.TestCase):\n"
        "    def test_decode(self, decode=None):\n        assert (decode or str)(b'x') is not None\n\n"
        "    def test_other(self):\n        assert 1 == 81\n\n\n"
        "def test_helper_function():\n    return 80\n\n\ndef test_unnamed():\n    assert 1 == 82\n",
        "tests/test_codec.py": "import unittest\n\n\nclass CodecTests(unittest.TestCase):\n    def setUp(self):\n"
        "        from . import test_idna\n\n        self.idna = test_idna.IDNATests()\n"
        "        self.value = test_idna.test_helper_function()\n\n"
        "    def testDecode(self):\n        self.idna.test_decode(decode=bytes.decode)\n",
    })  # fmt: skip
    staged = stage_tier(suite, tmp_path / "staged", ["tests/test_codec.py::CodecTests::testDecode"])
    text = (staged / "tests" / "test_idna.py").read_text()
    assert "def test_decode" in text
    # What the tier's code does not call as a method is gone, as before: another suite's test ids and data
    # (a test function is never kept by a name the tier's code says, nor by one a kept body says).
    assert "test_other" not in text and "test_unnamed" not in text and "81" not in text and "82" not in text
    assert "def test_helper_function" not in text


def test_a_held_out_test_is_never_kept_by_a_bare_name_or_through_a_kept_body(tmp_path: Path) -> None:
    # Red-team: `opts.test_roundtrip` in a tier test kept held-out test_roundtrip, and the names in its
    # body kept test_mode - held-out bodies in a container the change's code can read.
    suite = suite_of(tmp_path, {
        "test_held.py": "import unittest\n\n\ndef test_roundtrip():\n    assert 'SECRET-ROUNDTRIP'\n    test_mode()\n\n\n"
        "def test_mode():\n    assert 'SECRET-MODE'\n\n\nclass Helpers(unittest.TestCase):\n"
        "    def test_used(self):\n        return self.test_chained()\n\n"
        "    def test_chained(self):\n        assert 'SECRET-CHAINED'\n",
        "test_tier_own.py": "import test_held\n\n\ndef test_it():\n    opts = object()\n    getattr(opts, 'x', None)\n"
        "    test_roundtrip = 1\n    assert test_held.Helpers().test_used() is None\n",
    })  # fmt: skip
    staged = stage_tier(suite, tmp_path / "staged", ["test_tier_own.py::test_it"])
    text = (staged / "test_held.py").read_text()
    assert "def test_used" in text  # the tier's own test calls it
    assert not any(s in text for s in ("SECRET-ROUNDTRIP", "SECRET-MODE", "SECRET-CHAINED"))


def _tier_log(nonce: str, outcome: str) -> bytes:
    records = [{"kind": "start", "runner": "pytest", "nonce": nonce, "version": 1},
               {"kind": "collected", "ids": ["test_a.py::test_t"]},
               {"kind": "begin", "id": "test_a.py::test_t"},
               {"kind": "test", "id": "test_a.py::test_t", "outcome": outcome, "message": ""},
               {"kind": "finish", "exit_status": 0}, {"kind": "exit", "code": 0}]  # fmt: skip
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


@pytest.mark.parametrize(
    ("heads", "again", "runs"),
    [
        (("passed", "failed"), ("failed", "passed"), 5),
        (("passed", "passed"), (), 3),
        # Base shows its instability in its second pair of runs: no third pair.
        (("failed", "passed"), ("passed", "passed", "passed", "failed"), 7),
        # Base never shows it: four more runs at most, and the test counts.
        (("passed", "failed"), ("passed", "passed", "passed", "passed", "failed"), 7),
    ],
)
def test_base_runs_the_tier_again_only_when_a_tier_test_s_head_runs_disagree(
    tmp_path: Path, heads: tuple[str, str], again: tuple[str, ...], runs: int
) -> None:
    suite = suite_of(tmp_path, {
        "test_a.py": "def test_t():\n    pass\n",
    })  # fmt: skip
    trees: dict[Tree, Path] = {"base": tmp_path / "base", "head": tmp_path / "head"}
    for tree in trees.values():
        tree.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    staging = Staging(suite=suite, image="i", harness=work, staged=suite.root, work=work, policy=Behaviour(),
                      messages=True)  # fmt: skip
    planned: list[RunPlan] = []
    outcomes = iter(["passed", *heads, *again])

    def run_all(plans: Sequence[RunPlan]) -> dict[RunPlan, RunResult]:
        planned.extend(plans)
        return {p: RunResult(0, b"", b"", 1.0, files={p.report: _tier_log(p.nonce, next(outcomes))})
                for p in plans}  # fmt: skip

    tier = measure(staging, trees, ["test_a.py::test_t"], run_all)
    assert tier is not None and len(planned) == runs
    assert [p.tree for p in planned] == ["base", "head", "head", "base", "base", "base", "base"][:runs]
    # A base run failed where the first passed: base's own flakiness, which grade.py excuses.
    shown = "failed" in again[: runs - 3]
    assert tier.unstable_on_base() == (frozenset({"test_a.py::test_t"}) if shown else frozenset())


@pytest.mark.docker
def test_a_test_the_isolation_cannot_carry_is_measured_in_process_and_labelled(gate: Gate) -> None:
    suite = gate.suite("hidden", {**HIDDEN, **COMPARES_TEST})
    result = gate.run(gate.change({"calc/__init__.py": RIGHT + COMPARES}, base=BASE_WITH_COMPARES), suite)
    assert result.status == "passed", result
    hidden = result.suites[0]
    assert numbers(hidden) == (7, 7) and hidden.in_process_tier == 1
    assert hidden.detail.startswith("1 test measured in-process: the code under test could forge this")
    # 1 of 7 is over the default share of 5%: a maintainer looks; a policy allowing it lets it pass.
    decision = decide(ShapeResult(status="passed"), result, QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert decision.reasons[0].startswith("behaviour: 1 of 7 hidden tests measured in-process (14.2%")
    lenient = Policy.model_validate({"behaviour": {"max_in_process_share": 0.2}})
    assert decide(ShapeResult(status="passed"), result, QualityResult(), lenient).conclusion == "success"


# In-process, the change's code owns the test runner: it turns every record into a pass and invents
# passing records for tests it knows from the hidden failures it was shown.
FORGE_IN_PROCESS = """
import json, sys
for module in list(sys.modules.values()):
    recorder = getattr(module, "Recorder", None)
    if recorder is not None and hasattr(recorder, "pytest_runtest_logfinish"):
        original = recorder.write
        def write(self, record, original=original):
            if record.get("kind") == "test":
                record = {**record, "outcome": "passed", "message": ""}
            original(self, record)
            if record.get("kind") == "collected":
                for test_id in ("test_calc.py::test_half[4-2]", "test_calc.py::test_half[10-5]"):
                    original(self, {"kind": "begin", "id": test_id})
                    original(self, {"kind": "test", "id": test_id, "outcome": "passed", "message": ""})
        recorder.write = write
"""


@pytest.mark.docker
def test_forging_in_the_tier_changes_no_other_test_s_outcome(gate: Gate) -> None:
    suite = gate.suite("hidden", {**HIDDEN, **COMPARES_TEST})
    wrong = WRONG + COMPARES + FORGE_IN_PROCESS
    result = gate.run(gate.change({"calc/__init__.py": wrong}, base=BASE_WITH_COMPARES), suite)
    assert result.status == "failed", result
    hidden = result.suites[0]
    # The wrong code's own numbers for every test the isolation carries; the tier's one test is all the
    # forging could reach (and a report that breaks the protocol is not believed: it errs).
    assert hidden.passed <= WRONG_NUMBERS[0] + 1 and hidden.total == 7
    assert hidden.in_process_tier == 1
    assert {f.id for f in hidden.failures} >= {
        "test_calc.py::test_half[4-2]",
        "test_calc.py::test_half[10-5]",
    }


# A module whose tier test leans on state an earlier test leaves (a class attribute, a module global),
# as pathspec's symlink tests lean on the first one's probe, and a test that writes beside its own files.
STATEFUL_COMPARES_TEST = {
    "test_compares.py": (
        "from pathlib import Path\n\nimport pytest\n\nfrom calc import Version\n\nSEEN = []\n\n\n"
        "@pytest.mark.xfail(strict=True, reason='known broken, after it has probed')\n"
        "def test_probe():\n    SEEN.append(Version('1.0'))\n    assert False\n\n\n"
        "def test_uses_the_probe():\n    assert SEEN and SEEN[0] == '1.0'\n\n\n"
        "def test_writes_beside_itself():\n"
        "    out = Path(__file__).with_name('written.txt')\n"
        "    out.write_text('same' if Version('1.0') == '1.0' else 'other')\n"
        "    assert out.read_text() == 'same'\n"
    ),
}


@pytest.mark.docker
def test_head_s_tier_runs_meet_what_base_s_met(gate: Gate) -> None:
    # Without the same tests in head's tier runs as in base's, test_uses_the_probe passes on base and
    # fails on unchanged code; without a writable copy of the suite, test_writes_beside_itself fails
    # on base in-process too and counts against every change.
    suite = gate.suite("hidden", {**HIDDEN, **STATEFUL_COMPARES_TEST})
    result = gate.run(gate.change({"calc/__init__.py": RIGHT + COMPARES}, base=BASE_WITH_COMPARES), suite)
    assert result.status == "passed", result
    hidden = result.suites[0]
    assert hidden.in_process_tier == 2 and hidden.skipped_on_base == 1
    assert numbers(hidden) == (8, 8)


# markdown's tests derive from the library's own TestCase: isolated, the class is the change's (held by
# handle), so pytest sees a plain class with an __init__ and collects none of its tests.
LIBRARY_TESTCASE = (
    "\n\nimport unittest\n\n\nclass TestCase(unittest.TestCase):\n"
    "    def assertHalves(self, x, y):\n        self.assertEqual(half(x), y)\n"
)
LIBRARY_TESTCASE_TEST = {
    "test_cls.py": (
        "from calc import TestCase\n\n\nclass TestHalves(TestCase):\n"
        "    def test_eight(self):\n        self.assertHalves(8, 4)\n\n"
        "    def test_six(self):\n        self.assertHalves(6, 3)\n"
    ),
}


@pytest.mark.docker
@pytest.mark.parametrize(
    ("code", "status", "passed"), [(RIGHT, "passed", 8), (WRONG, "failed", WRONG_NUMBERS[0])]
)
def test_tests_of_a_class_deriving_from_the_library_s_testcase_count(
    gate: Gate, code: str, status: str, passed: int
) -> None:
    # Without base's in-process collection the two tests leave the denominator unseen: the wrong
    # change's halves are never checked there, and the suite's count is 6.
    suite = gate.suite("hidden", {**HIDDEN, **LIBRARY_TESTCASE_TEST})
    base: Files = {
        "calc/__init__.py": WRONG.replace("return 0", "raise NotImplementedError") + LIBRARY_TESTCASE
    }
    result = gate.run(gate.change({"calc/__init__.py": code + LIBRARY_TESTCASE}, base=base), suite)
    assert result.status == status, result.model_dump_json(indent=1)
    hidden = result.suites[0]
    assert numbers(hidden) == (passed, WRONG_NUMBERS[1] + 2) and hidden.in_process_tier == 2
    if status == "failed":
        assert {f.id for f in hidden.failures} >= {"test_cls.py::TestHalves::test_eight"}


# Base runs crunch() in 12 s of a 20 s budget. Head's crunch() takes as long in one process and
# outlasts the budget only in the subject (what a busy host does to a test of 10^5 round trips,
# modelled by a change that knows where it runs); head hangs quick() everywhere.
SLOW_BASE: Files = {
    "calc/__init__.py": "import time\n\n\ndef crunch():\n    time.sleep(12)\n    return 1\n\n\ndef quick():\n    return 2\n",
}
SLOW_HEAD: Files = {
    "calc/__init__.py": (
        "import sys\nimport time\n\n\ndef crunch():\n    time.sleep(12 if 'pytest' in sys.modules else 60)\n    return 1\n\n\n"
        "def quick():\n    time.sleep(60)\n    return 2\n"
    ),
}
SLOW_TESTS = {
    "test_slow.py": "from calc import crunch, quick\n\n\ndef test_crunch():\n    assert crunch() == 1\n\n\ndef test_quick():\n    assert quick() == 2\n",
}


@pytest.mark.docker
def test_a_test_base_ran_slowly_that_runs_out_of_time_isolated_is_measured_in_process(gate: Gate) -> None:
    result = gate.run(gate.change(SLOW_HEAD, base=SLOW_BASE), gate.suite("hidden", SLOW_TESTS), timeout_s=20)
    hidden = result.suites[0]
    # crunch: slow on base, so measured in the tier, where it passes (labelled forgeable); quick: base
    # ran it at once, so hanging it is the change's and a regression, never a way into the tier.
    assert hidden.in_process_tier == 1 and (hidden.passed, hidden.total) == (1, 2), hidden
    assert [f.id for f in hidden.failures] == ["test_slow.py::test_quick"], hidden.failures
    # The change chose to run out of time (the hostile case: 'pytest' in sys.modules): such a pass is
    # never silent, whatever the tier's share (checks/decide.py).
    assert hidden.slow_in_process == 1, hidden
