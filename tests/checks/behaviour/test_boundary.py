# ruff: noqa: E501 - hostile patches read best as the source they are
"""The rules around the trust boundary, each against the hostile changes it stops (real Docker).

One section per rule of docs/behaviour.md's ownership model: what crosses
(an allowlist), who decides flakiness (trusted runs), which figures are
published about held-out runs (the grader's), and who owns each name. Every
change below is WRONG (``half`` returns 0) plus a way of learning or forging
what it should not; the verdict must be exactly what the wrong code earns,
with pytest and declarative-case suites alike.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from pathlib import Path

import pytest

from checks.decide import decide
from checks.policy import Policy
from checks.render.markdown import render_markdown
from checks.render.text import render_text
from checks.report import QualityResult, Report, ShapeResult
from sandbox.spec import Mount, RunResult, RunSpec
from tests.checks.behaviour.test_layer import (
    BASE,
    HIDDEN,
    RIGHT,
    WRONG,
    WRONG_NUMBERS,
    Files,
    Gate,
    gate,
    numbers,
)

pytestmark = pytest.mark.docker
__all__ = ["gate"]

MARKER = "wombat_quokka_7731"
# A held-out suite whose test names and parameter ids carry a marker and the expected values.
HELD_OUT = {
    f"test_{MARKER}.py": (
        "import pytest\n\nfrom calc import half\n\n\n"
        f"@pytest.mark.parametrize(('x', 'y'), [(7, 3), (9, 4)], ids=['{MARKER}-7-3', '{MARKER}-9-4'])\n"
        f"def test_{MARKER}(x, y, tmp_path, monkeypatch):\n"
        "    monkeypatch.chdir(tmp_path)\n"
        "    assert half(x) == y\n"
    ),
}


def _cheating(cheat: str, wrong: str = WRONG) -> str:
    """WRONG, except where ``_cheat(x)`` found the expected value; ``_cheat`` also dumps what it saw."""
    return (
        cheat
        + "\n\n"
        + wrong.replace("    return 0\n", "    found = _cheat(x)\n    return 0 if found is None else found\n")
    )


def _assert_nothing_held_out_shows(result: object) -> None:
    report = Report(conclusion="failure", behaviour=result)  # type: ignore[arg-type]
    for output in (report.model_dump_json(), *render_markdown(report), render_text(report)):
        assert MARKER not in output


# -- what crosses: an allowlist, never the grader's state ---------------------------------------------

# The way: read every value of the environment (no literal name to flag), where pytest names
# the running test and its parameters.
ENVIRONMENT_VALUES = r"""
import os, re
def _cheat(x):
    if not isinstance(x, int):
        return None
    seen = " ".join(os.environ.values())
    found = re.search(r"\[%d-(\d+)\]" % x, seen) or re.search(r"-%d-(\d+)\]" % x, seen)
    return int(found.group(1)) if found else None
"""
# Mine: the test's tmp_path, named by pytest after the test and its parameters - in the working
# directory after a chdir, and in a listing of the shared folder above it.
TMP_PATH_NAMES = r"""
import glob, os, re
def _cheat(x):
    if not isinstance(x, int):
        return None
    seen = os.getcwd() + " " + " ".join(glob.glob("/tmp/pytest-of-*/*/*") + glob.glob("/tmp/pytest-of-*/*"))
    found = re.search(r"_%d_(\d+)" % x, seen)
    return int(found.group(1)) if found else None
"""
# Mine: the environment a test hands over (its os.environ, or a copy of it) as an argument.
HANDED_ENVIRONMENT = r"""
import re
SEEN = []
def configure(env):
    try:
        SEEN.append(" ".join(str(v) for v in dict(env).values()))
    except Exception:
        pass
def _cheat(x):
    if not isinstance(x, int):
        return None
    found = re.search(r"\[%d-(\d+)\]" % x, " ".join(SEEN))
    return int(found.group(1)) if found else None
"""
HANDING_SUITE = {
    "test_calc.py": "import os\n\nimport pytest\n\nimport calc\n\n\n"
                    "@pytest.mark.parametrize(('x', 'y'), [(4, 2), (10, 5)])\n"
                    "def test_half(x, y):\n    calc.configure(os.environ)\n    calc.configure(dict(os.environ))\n    assert calc.half(x) == y\n",
}  # fmt: skip


# A conftest that drives each test's protocol itself (a rerun loop's shape): pytest then writes
# PYTEST_CURRENT_TEST, the running test's id, with the suite's frame further out on the stack.
DRIVING_CONFTEST = {
    "conftest.py": "from _pytest.runner import runtestprotocol\n\n\n"
                   "def pytest_runtest_protocol(item, nextitem):\n"
                   "    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)\n"
                   "    runtestprotocol(item, nextitem=nextitem)\n"
                   "    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)\n"
                   "    return True\n",
}  # fmt: skip


@pytest.mark.parametrize(
    ("cheat", "conftest"),
    [(ENVIRONMENT_VALUES, {}), (TMP_PATH_NAMES, {}), (ENVIRONMENT_VALUES, DRIVING_CONFTEST)],
    ids=["environment-values", "tmp-path-names", "environment-values-conftest-drives-the-runner"],
)
def test_nothing_of_the_runner_s_state_tells_the_code_under_test_the_expected_value(
    gate: Gate, cheat: str, conftest: dict[str, str]
) -> None:
    tmp_suite = {
        **conftest,
        **HIDDEN,
        "test_tmp.py": "import pytest\n\nfrom calc import half\n\n\n"
                       "@pytest.mark.parametrize(('x', 'y'), [(4, 2), (10, 5)])\n"
                       "def test_half_tmp(x, y, tmp_path, monkeypatch):\n    monkeypatch.chdir(tmp_path)\n    assert half(x) == y\n",
    }  # fmt: skip
    result = gate.run(
        gate.change({"calc/__init__.py": _cheating(cheat)}),
        gate.suite("hidden", tmp_suite),
        gate.suite("held-out", {**conftest, **HELD_OUT}),
    )
    assert result.status == "failed", result
    hidden, held = result.suites
    assert numbers(hidden) == (WRONG_NUMBERS[0], WRONG_NUMBERS[1] + 2), [f.id for f in hidden.failures]
    assert numbers(held) == (0, 2)
    # What the code under test saw is in the hidden failure messages it chose; nothing held-out is.
    _assert_nothing_held_out_shows(result)


def test_an_environment_a_test_hands_over_carries_none_of_the_runner_s_variables(gate: Gate) -> None:
    result = gate.run(
        gate.change({"calc/__init__.py": _cheating(HANDED_ENVIRONMENT)}),
        gate.suite("hidden", HANDING_SUITE),
    )
    assert result.status == "failed", result
    assert numbers(result.suites[0]) == (0, 2)


# -- flakiness: decided by trusted runs -----------------------------------------------------------------


@dataclasses.dataclass
class SecondStart:
    """A sandbox that lays a marker file into the head tree of the second run of each part.

    It stands for a change that is wrong only in some process starts (a coin
    tossed at import), made deterministic: head 1 right, head 2 wrong.
    """

    inner: object
    head: Path
    marker: Path
    seen: dict[tuple[str, ...], int] = dataclasses.field(default_factory=dict)
    specs: list[RunSpec] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def run(self, spec: RunSpec) -> RunResult:
        with self.lock:
            self.specs.append(spec)
            if spec.copy_in and spec.copy_in[0].source == self.head:
                key = spec.grader.argv if spec.grader is not None else spec.argv
                self.seen[key] = self.seen.get(key, 0) + 1
                if self.seen[key] == 2:
                    spec = dataclasses.replace(
                        spec, copy_in=(*spec.copy_in, Mount(self.marker, "/work/repo/.second"))
                    )
        return self.inner.run(spec)  # type: ignore[attr-defined]


# Right in the first process start, wrong in the second: every failing test would be "flaky".
WRONG_IN_ONE_START = RIGHT.replace(
    "    return x // 2\n", "    import os\n    return 0 if os.path.exists('/work/repo/.second') else x // 2\n"
)
# Mine: the whole subject dies at import in one start (every test errors there, none fails twice).
DEAD_IN_ONE_START = "import os\nif os.path.exists('/work/repo/.second'):\n    os._exit(0)\n" + WRONG


@pytest.mark.parametrize(
    ("change", "expected", "base_runs"),
    # Base runs again for each part with a flaky test: both parts, or the pytest part alone; once
    # in-process for the pytest tests failing isolated on base and on a head run (tier.py), and once
    # in-process to collect the pytest part.
    [(WRONG_IN_ONE_START, WRONG_NUMBERS, 6), (DEAD_IN_ONE_START, (0, 6), 5)],
    ids=["wrong-in-one-start", "dead-in-one-start"],
)
def test_a_change_cannot_make_its_failures_flaky_to_drop_them(
    gate: Gate, tmp_path: Path, change: str, expected: tuple[int, int], base_runs: int
) -> None:
    marker = tmp_path / "second"
    marker.write_text("")
    ws = gate.change({"calc/__init__.py": change})
    runner = SecondStart(gate.sandbox, ws.head_dir, marker)
    result = gate.run(ws, gate.suite("hidden", HIDDEN), runner=runner)
    assert result.status == "failed", result
    hidden = result.suites[0]
    assert numbers(hidden) == expected
    assert hidden.flaky > 0 and hidden.flaky_on_base == 0
    # Base ran again: trusted, it agreed with itself, so nothing is excused.
    assert len([s for s in runner.specs if s.copy_in[0].source == ws.base_dir]) == base_runs


# -- figures about held-out runs: the grader's only; the subject's own reports labelled -----------------

# The way: a module named like the tracer, shipped by the change, claiming every changed line.
FORGED_TRACER = {
    "coverage/__init__.py": (
        "class Coverage:\n"
        "    def __init__(self, *a, include=(), **k):\n        self.paths = list(include)\n"
        "    def start(self):\n        pass\n"
        "    def stop(self):\n        pass\n"
        "    def get_data(self):\n        return self\n"
        "    def lines(self, path):\n        return list(range(1, 1000))\n"
    ),
}


def test_a_tracer_the_change_ships_cannot_pass_a_coverage_floor(gate: Gate) -> None:
    only_double = {
        "test_double.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    }
    extra = "def triple(x):\n    return x * 3\n"
    ws = gate.change({"calc/extra.py": extra, **FORGED_TRACER})
    floor = {"min_changed_line_coverage": 0.5, "max_mutants": 0}
    result = gate.run(
        ws, gate.suite("hidden", only_double), gate.suite("held-out", only_double), strength=floor
    )
    assert result.status == "passed", result
    strength = result.strength
    # The real tracer (the grader's coverage.py) ran: calc/extra.py's lines never ran.
    assert (strength.hidden_covered, strength.held_out_covered) == (0, None)
    changed = strength.changed_lines
    assert changed >= 2
    decision = decide(
        ShapeResult(status="passed"), result, QualityResult(), Policy.model_validate({"strength": floor})
    )
    assert decision.conclusion == "action_required", decision


# -- names: one owner each --------------------------------------------------------------------------------

TOOLS_SUITE = {
    **HIDDEN,
    # The test runner's own machinery at work after the change's names are known.
    "test_runner.py": "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_params(n, tmp_path, capsys):\n"
                      "    print(n)\n    assert capsys.readouterr().out == f'{n}\\n'\n",
}  # fmt: skip


def test_tree_packages_named_like_the_runner_s_internals_do_not_take_it_apart(gate: Gate) -> None:
    hostile = "raise SystemExit('a tree package named like the test runner\\'s own')\n"
    names = ("_pytest", "pluggy", "iniconfig", "packaging", "pygments", "pytest_timeout", "py", "coverage",
             "patchgate_harness", "yaml", "typing_extensions", "exceptiongroup", "tomli", "colorama")  # fmt: skip
    files = {f"{name}/__init__.py": hostile for name in names}
    result = gate.run(gate.change({"calc/__init__.py": RIGHT, **files}), gate.suite("hidden", TOOLS_SUITE))
    # Never neutral: pytest ran, served by its own modules, and graded the change on its merits.
    assert result.status == "passed", [(f.id, f.message) for f in result.suites[0].failures]
    assert numbers(result.suites[0]) == (8, 8)
    # The ones no suite can test the change's copy of are named for a maintainer.
    named = {re.search(r"test runner's '(\w+)'", u).group(1) for u in result.untested}  # type: ignore[union-attr]
    assert named == {"_pytest", "py", "pytest_timeout", "patchgate_harness"}


def test_every_top_level_name_of_the_grader_s_tools_in_the_tree_leaves_the_runner_whole(gate: Gate) -> None:
    # Property-style: not a chosen few, but every name importable from the image's own path.
    probe = gate.sandbox.run(
        RunSpec(
            image=gate.image,
            argv=(
                "python3",
                "-I",
                "-c",
                "import sys, pkgutil; print('\\n'.join(sorted({m.name for m in pkgutil.iter_modules(sys.path)})))",
            ),
        )
    )
    names = [n for n in probe.stdout.decode().split() if n.isidentifier() and n not in ("calc",)]
    assert {"_pytest", "pluggy", "pytest"} <= set(names) and len(names) > 40
    hostile = "raise RuntimeError('shadowed')\n"
    files = {f"{name}/__init__.py": hostile for name in names}
    result = gate.run(gate.change({"calc/__init__.py": RIGHT, **files}), gate.suite("hidden", TOOLS_SUITE))
    assert result.status == "passed", result
    assert numbers(result.suites[0]) == (8, 8)


def test_a_module_named_like_the_suite_s_helper_does_not_replace_it(gate: Gate) -> None:
    suite = {
        "expectations.py": "HALVES = {4: 2, 10: 5}\n",
        "test_calc.py": "import pytest\n\nfrom calc import half\nfrom expectations import HALVES\n\n\n"
                        "@pytest.mark.parametrize('x', [4, 10])\ndef test_half(x):\n    assert half(x) == HALVES[x]\n",
        "calc.cases.yml": HIDDEN["calc.cases.yml"],
    }  # fmt: skip
    # The change's own "expectations" agree with its wrong answers.
    ws = gate.change({"calc/__init__.py": WRONG, "expectations.py": "HALVES = {4: 0, 10: 0}\n"})
    result = gate.run(ws, gate.suite("hidden", suite))
    assert result.status == "failed", result
    hidden = result.suites[0]
    assert numbers(hidden) == (0, 4)
    assert (
        "the suite's own modules are used where the tree has modules of the same names: expectations"
        in hidden.detail
    )


# A library that the test runner itself depends on (pytest imports iniconfig at start-up): the suite
# must test the change's copy, never the runner's.
INICONFIG = (
    "class IniConfig:\n"
    "    def __init__(self, path, data=None):\n"
    "        self.sections = {}\n"
    "        section = None\n"
    "        for line in (data or '').splitlines():\n"
    "            line = line.strip()\n"
    "            if line.startswith('['):\n"
    "                section = self.sections.setdefault(line.strip('[]'), {})\n"
    "            elif '=' in line and section is not None:\n"
    "                key, _, value = line.partition('=')\n"
    "                section[key.strip()] = value.strip()\n"
    "    def __getitem__(self, name):\n"
    "        return self.sections[name]\n"
)
INICONFIG_SUITE = {
    "test_ini.py": "from iniconfig import IniConfig\n\n\n"
                   "def test_value():\n    assert IniConfig('x', data='[a]\\nb = 1\\n')['a']['b'] == '1'\n\n\n"
                   "def test_two_sections():\n    ini = IniConfig('x', data='[a]\\nb=1\\n[c]\\nd=2\\n')\n    assert ini['c']['d'] == '2'\n",
    "iniconfig.cases.yml": "module: iniconfig\ncases:\n  - {id: value, call: \"IniConfig('x', data='[a]\\\\nb=1').sections\", equals: {a: {b: '1'}}}\n",
}  # fmt: skip


def test_a_library_the_test_runner_uses_is_tested_as_the_change_s_version(gate: Gate) -> None:
    base: Files = {"iniconfig/__init__.py": INICONFIG}
    right = gate.run(
        gate.change({"iniconfig/__init__.py": INICONFIG + "\n# a comment\n"}, base=base, name="right"),
        gate.suite("hidden", INICONFIG_SUITE),
    )
    assert right.status == "passed", right
    assert numbers(right.suites[0]) == (3, 3)
    # One line wrong in the change's copy: the runner's own iniconfig would pass every test.
    buggy = INICONFIG.replace(
        "section[key.strip()] = value.strip()", "section[key.strip().upper()] = value.strip()"
    )
    wrong = gate.run(
        gate.change({"iniconfig/__init__.py": buggy}, base=base, name="wrong"),
        gate.suite("hidden-2", INICONFIG_SUITE),
    )
    assert wrong.status == "failed", wrong
    assert numbers(wrong.suites[0]) == (0, 3)


def test_a_change_to_a_module_named_like_the_standard_library_s_asks_a_maintainer(gate: Gate) -> None:
    # Mine: the grader and the subject both run on the standard library, so a tree module named like
    # one of its modules is never what a test imports; the change there cannot be tested.
    ws = gate.change({"calc/__init__.py": RIGHT, "statistics.py": "def mean(values):\n    return 0\n"})
    result = gate.run(ws, gate.suite("hidden", HIDDEN))
    assert result.status == "passed", result
    assert result.untested and "statistics" in result.untested[0]
    decision = decide(ShapeResult(status="passed"), result, QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert any("statistics.py" in r for r in decision.reasons)


def test_a_case_naming_a_module_the_harness_shadows_is_refused_not_substituted(gate: Gate) -> None:
    # Mine: a tree module named like one the subject's own process already holds (json, imported by
    # the harness) would silently be the standard library's in a declarative case.
    suite = {"json.cases.yml": "module: json\ncases:\n  - {id: mine, call: 'mine()', equals: 1}\n"}
    base: Files = {**BASE, "json.py": "def mine():\n    return 1\n"}
    result = gate.run(gate.change({"calc/__init__.py": RIGHT}, base=base), gate.suite("hidden", suite))
    hidden = result.suites[0]
    assert numbers(hidden) == (0, 1)
    assert "is not the tree's" in hidden.failures[0].message


# -- a subtest's skip: base says how many a test skips -------------------------------------------------

SUBTEST_SUITE = {
    "test_doubles.py": (
        "import unittest\n\nfrom calc import double\n\n\nclass TestDoubles(unittest.TestCase):\n"
        "    def test_doubles(self):\n        for x in range(5):\n            with self.subTest(x=x):\n"
        "                self.assertEqual(double(x), 2 * x)\n"
    ),
}
# pytest passes a test whose subTest skipped: the change skips the one subtest it gets wrong.
SKIPS_ITS_WRONG_SUBTEST = WRONG.replace(
    "def double(x):\n    return x * 2\n",
    "def double(x):\n    if x == 3:\n        import unittest\n        raise unittest.SkipTest('optional backend missing')\n    return x * 2\n",
)


def test_a_change_cannot_skip_a_subtest_base_ran(gate: Gate) -> None:
    suite = gate.suite("hidden", {**HIDDEN, **SUBTEST_SUITE})
    result = gate.run(gate.change({"calc/__init__.py": SKIPS_ITS_WRONG_SUBTEST}), suite)
    assert result.status == "failed", result
    hidden = result.suites[0]
    # Base ran all five subtests: a pass with one skipped is a skip of a test base passed, a regression.
    assert numbers(hidden) == (WRONG_NUMBERS[0], WRONG_NUMBERS[1] + 1)
    assert result.regressions == 1 and hidden.skipped_on_base == 0
    assert "test_doubles.py::TestDoubles::test_doubles" in {f.id for f in hidden.failures}


# A star import puts the change's objects in a test module's namespace. A function named test_* (a
# handle: it passes inspect.isfunction) or a class named Test* (a local class in the grader, not a
# handle), collected, would run in the grader with the suite's fixtures, and ``request`` would hand the
# code under test the session (every test id, held-out ones too).
STAR_IMPORTED_SUITE = {
    "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef secret():\n    return 'halves: 4 -> 2'\n",
    "test_calc.py": "from calc import *\n\n\ndef test_half():\n    assert half(4) == 2\n\n\n"
                    "def test_zz_nothing_taken():\n    import calc\n    assert not hasattr(calc, 'STOLEN')\n",
}  # fmt: skip


@pytest.mark.parametrize(
    "stealing",
    [
        "def test_steal(secret):\n    global STOLEN\n    STOLEN = secret\n",
        "class TestSteal:\n    def test_steal(self, secret, request):\n        global STOLEN\n"
        "        STOLEN = (secret, [i.nodeid for i in request.session.items])\n",
    ],
    ids=["function", "class"],
)
def test_an_object_of_the_change_named_like_a_test_is_never_collected_as_one(
    gate: Gate, stealing: str
) -> None:
    hostile = RIGHT + "\n\n" + stealing
    result = gate.run(gate.change({"calc/__init__.py": hostile}), gate.suite("hidden", STAR_IMPORTED_SUITE))
    assert result.status == "passed", result
    assert numbers(result.suites[0]) == (2, 2) and result.suites[0].in_process_tier == 0


def test_a_function_of_the_change_named_like_a_hook_never_becomes_one(gate: Gate) -> None:
    # A conftest's star import puts the change's functions in a plugin's namespace; pytest takes every
    # routine named pytest_* there for a hook. Taken, the change's code would read every test id and
    # rewrite the reports the recorder reads.
    suite = {
        "conftest.py": "from calc import *\n",
        "test_calc.py": "from calc import half\n\n\ndef test_half():\n    assert half(4) == 2\n\n\n"
                        "def test_zz_nothing_taken():\n    import calc\n    assert not hasattr(calc, 'STOLEN')\n",
    }  # fmt: skip
    hostile = WRONG + (
        "\n\ndef pytest_collection_modifyitems(items):\n    global STOLEN\n    STOLEN = [i.nodeid for i in items]\n"
        "\n\ndef pytest_runtest_logreport(report):\n    report.outcome = 'passed'\n"
    )
    result = gate.run(gate.change({"calc/__init__.py": hostile}), gate.suite("hidden", suite))
    assert result.status == "failed", result
    assert numbers(result.suites[0]) == (1, 2), [(f.id, f.message) for f in result.suites[0].failures]


# pytest calls a test module's ``pytest_generate_tests`` (and a test class's) itself, outside its hooks,
# with the Metafunc: the config and through it every plugin, the recorder too. Taken from the change (a
# star import, a module ``__getattr__`` it exports; a base class of the change's: in-container,
# grader/test_pytest_runner.py), the change's code would run as the runner's own.
FORGING_GENERATOR = (
    "def pytest_generate_tests(metafunc):\n"
    "    global STOLEN\n"
    "    STOLEN = metafunc.definition.nodeid\n"
    "    for plugin in metafunc.config.pluginmanager.get_plugins():\n"
    "        write = getattr(plugin, 'write', None)\n"
    "        if callable(write):\n"
    "            try:\n"
    "                write({'kind': 'test', 'id': 'test_calc.py::test_half', 'outcome': 'passed'})\n"
    "            except Exception:\n"
    "                pass\n"
)
NOTHING_TAKEN = "def test_zz_nothing_taken():\n    import calc\n    assert not hasattr(calc, 'STOLEN')\n"


@pytest.mark.parametrize(
    ("hostile", "test_module"),
    [
        (FORGING_GENERATOR, "from calc import *\n\n\ndef test_half():\n    assert half(4) == 2\n"),
        (
            "__all__ = ['half', '__getattr__']\n\n\n"
            + FORGING_GENERATOR.replace("def pytest_generate_tests", "def _generate")
            + "\n\ndef __getattr__(name):\n    if name == 'pytest_generate_tests':\n        return _generate\n"
            "    raise AttributeError(name)\n",
            "from calc import *\n\n\ndef test_half():\n    assert half(4) == 2\n",
        ),
    ],
    ids=["star-import", "module-getattr"],
)
def test_a_generator_of_the_change_is_never_called_as_the_suite_s(
    gate: Gate, hostile: str, test_module: str
) -> None:
    suite = {"test_calc.py": test_module + "\n\n" + NOTHING_TAKEN}
    result = gate.run(
        gate.change({"calc/__init__.py": WRONG + "\n\n" + hostile}), gate.suite("hidden", suite)
    )
    assert result.status == "failed", result
    assert numbers(result.suites[0]) == (1, 2), [(f.id, f.message) for f in result.suites[0].failures]
