# ruff: noqa: E501 - repositories read best one file a line
"""Day one (issue 21): no test store, the repository's own tests from base, the change's own, its dependencies.

The whole pipeline against real Docker, with no hidden or held-out suite
configured: the base tree's tests are the suite. Shape's sandbox tools are
off (their own tests cover them); hygiene is off where a test proves that
behaviour alone asks for a maintainer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from checks.pipeline import PipelineInputs, run_pipeline
from checks.policy import Policy
from checks.report import Report, SuiteResult
from checks.workspace import from_git
from sandbox.docker import DockerSandbox
from tests.conftest import GitRepo
from tests.fakes.package_index import PackageIndex, bridge_gateway, https_index

pytestmark = pytest.mark.docker

Files = dict[str, str | bytes | None]

CALC = "def double(x):\n    return x * 2\n\n\ndef half(x):\n    return x // 2\n"
NOT_CALLED = (
    "behaviour: no suite called the change's code (0 of {} changed lines in function bodies ran; only lines "
    "an import runs did)"
)
TESTS = (
    "from calc import double, half\n\n\n"
    "def test_double(four):\n    assert double(2) == four\n\n\n"
    "def test_half():\n    assert half(8) == 4\n\n\n"
    "def test_known_broken():\n    assert double(1) == 3, 'broken on base already'\n"
)
BASE: Files = {
    "calc/__init__.py": CALC,
    "tests/__init__.py": "",
    # The repository's own fixture: the suite from base uses base's conftest, whatever head's says.
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef four():\n    return 4\n",
    "tests/test_calc.py": TESTS,
    # Base's pytest settings reach the suite (a marker declared here is known to pytest there).
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\nmarkers = ["slow: a slow test"]\n',
}
# The shape layer's sandbox tools are covered by their own tests; these runs are about behaviour.
QUIET = {"loads": {"enabled": False}, "ruff": {"enabled": False}, "mypy": {"enabled": False},
         "bandit": {"enabled": False}, "semgrep": {"enabled": False}}  # fmt: skip


def gate(
    make_repo: Callable[[str], GitRepo],
    tmp_path: Path,
    sandbox: DockerSandbox,
    image: str,
    head: Files,
    *,
    hygiene: bool = False,
    base: Files | None = None,
    **policy: Any,
) -> Report:
    repo = make_repo("repo")
    repo.commit("base", dict(BASE if base is None else base))
    repo.branch("pr")
    repo.commit("pr", dict(head))
    ws = from_git(repo.path, "main", "pr", tmp_path / "ws")
    gates: dict[str, Any] = {**QUIET, "hygiene": {"enabled": hygiene}}
    settings = Policy.model_validate({"gates": gates, "strength": {"max_mutants": 0}, **policy})
    return run_pipeline(PipelineInputs(workspace=ws, policy=settings, runner=sandbox), image=image)


def suite(report: Report, kind: str) -> SuiteResult:
    return next(s for s in report.behaviour.suites if s.kind == kind)


@pytest.fixture
def run(
    make_repo: Callable[[str], GitRepo],
    tmp_path: Path,
    behaviour_sandbox: DockerSandbox,
    behaviour_image: str,
) -> Callable[..., Report]:
    def go(head: Files, **kw: Any) -> Report:
        return gate(make_repo, tmp_path, behaviour_sandbox, behaviour_image, head, **kw)

    return go


def test_an_unchanged_behaviour_passes_on_the_repository_tests_alone_and_says_so(
    run: Callable[..., Report],
) -> None:
    report = run({"calc/__init__.py": '"""Arithmetic."""\n' + CALC})
    repository = suite(report, "repository")
    assert (repository.name, repository.status, repository.passed, repository.total) == (
        "repository tests (from base)", "passed", 2, 2,
    )  # fmt: skip
    # Base's own failure is base's: shown, never counted against the change.
    assert repository.failing_on_base == 1
    assert "failing on base too" in repository.detail
    assert report.conclusion == "success", report.reasons
    assert report.reasons == [
        "all gates passed (behaviour: the repository's own tests alone; no hidden suite configured)"
    ]


def test_a_bug_a_base_test_the_change_did_not_touch_catches_is_a_failure(run: Callable[..., Report]) -> None:
    report = run({"calc/__init__.py": CALC.replace("x // 2", "x // 3")})
    repository = suite(report, "repository")
    assert repository.status == "failed"
    assert [f.id for f in repository.failures] == ["tests/test_calc.py::test_half"]
    assert repository.failures[0].message  # the repository's tests are the agent's to read: messages show
    assert report.behaviour.regressions == 1
    assert report.conclusion == "failure"
    assert any("1 test the change did not touch fails on head" in r for r in report.reasons), report.reasons


def test_rewriting_the_test_that_catches_the_bug_asks_a_maintainer_naming_it(
    run: Callable[..., Report],
) -> None:
    report = run({
        "calc/__init__.py": CALC.replace("x // 2", "x // 3"),
        # The change makes the test agree with its bug: the suite runs base's version, which fails.
        "tests/test_calc.py": TESTS.replace("half(8) == 4", "half(9) == 3"),
    })  # fmt: skip
    repository = suite(report, "repository")
    assert [(t.id, t.edit) for t in repository.rewritten] == [
        ("tests/test_calc.py::test_half", "tests/test_calc.py:8")
    ]
    assert repository.failures == []
    assert report.behaviour.regressions == 0
    assert report.conclusion == "action_required", report.reasons
    assert any(
        "rewrote 1 repository test whose base version fails on head: tests/test_calc.py::test_half" in r
        for r in report.reasons
    ), report.reasons


def test_the_changes_edits_to_conftest_and_pytest_settings_never_reach_the_suite(
    run: Callable[..., Report],
) -> None:
    report = run({
        "calc/__init__.py": CALC.replace("x * 2", "x * 2 + 1"),
        # Each would make the broken double pass, or the suite collect nothing, if it ran.
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef four():\n    return 5\n",
        "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npython_files = ["nothing_*.py"]\n',
        "conftest.py": "collect_ignore_glob = ['*']\n",
    })  # fmt: skip
    repository = suite(report, "repository")
    assert [f.id for f in repository.failures] == ["tests/test_calc.py::test_double"]
    assert report.conclusion == "failure"


def test_the_tests_a_change_adds_are_shown_and_count_for_nothing(run: Callable[..., Report]) -> None:
    report = run({
        "calc/__init__.py": CALC + "\n\ndef triple(x):\n    return x * 3\n",
        "tests/test_triple.py": (
            "from calc import triple\n\n\ndef test_triple():\n    assert triple(2) == 6\n\n\n"
            "def test_wrong():\n    assert triple(1) == 4\n"
        ),
    })  # fmt: skip
    own = suite(report, "own")
    assert (own.name, own.passed, own.total, own.fail_to_pass, own.isolation) == (
        "the change's own tests (written by its author)", 1, 2, 1, "in-process",
    )  # fmt: skip
    assert [f.id for f in own.failures] == ["tests/test_triple.py::test_wrong"]
    # A failing test of its own costs the change nothing, and is no regression - nor is a passing one
    # evidence: no trusted suite called triple (base's tests only import calc), so a maintainer looks.
    assert report.behaviour.status == "passed"
    assert report.conclusion == "action_required"
    assert report.reasons == [NOT_CALLED.format(1)]


def test_own_tests_that_cannot_even_be_read_provoke_nothing(run: Callable[..., Report]) -> None:
    report = run({
        "calc/__init__.py": CALC + "\n\ndef triple(x):\n    return x * 3\n",
        "tests/test_triple.py": "def test_triple(:\n",  # a syntax error
    })  # fmt: skip
    own = suite(report, "own")
    assert own.status == "error"
    # Not neutral: the change's own files cannot make the gate's layer an error (triple's body no
    # trusted suite called is the only reason a maintainer is asked).
    assert report.behaviour.status == "passed"
    assert report.conclusion == "action_required"
    assert report.reasons == [NOT_CALLED.format(1)]


def test_repository_tests_alone_can_be_made_to_ask_a_maintainer(run: Callable[..., Report]) -> None:
    report = run(
        {"calc/__init__.py": '"""Arithmetic."""\n' + CALC}, behaviour={"repository_tests_suffice": False}
    )
    assert report.conclusion == "action_required"
    assert any("only the repository's own tests ran" in r for r in report.reasons)


def test_with_repository_tests_off_and_no_store_behaviour_is_not_measured(run: Callable[..., Report]) -> None:
    report = run({"calc/__init__.py": '"""Arithmetic."""\n' + CALC}, behaviour={"repository_tests": "off"})
    assert report.behaviour.status == "skipped"
    assert report.conclusion == "neutral"


# The change's dependencies: a real small package from an https index, through the build's one way out.

USES_DEPENDENCY: Files = {
    "requirements.txt": "pgsmall==1.0\n",
    # double, which base's tests call, now takes its factor from the dependency (FACTOR - 5 is 2).
    "calc/__init__.py": CALC.replace("return x * 2", "import pgsmall\n\n    return x * (pgsmall.FACTOR - 5)"),
    "tests/test_scaled.py": "from calc import double\n\n\ndef test_double_seven():\n    assert double(7) == 14\n",
}


@pytest.fixture
def index(behaviour_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PackageIndex]:
    served = PackageIndex()
    served.add("pgsmall", "1.0", "FACTOR = 7\n")
    with https_index(served, bridge_gateway(), tmp_path / "certs") as (running, ca):
        # Where builds install from (sandbox.pipconf): this index, trusted through its own certificate.
        monkeypatch.setenv("PIP_INDEX_URL", running.url)
        monkeypatch.setenv("PATCHGATE_CA_BUNDLE", str(ca))
        yield running


def test_a_change_adding_a_dependency_is_measured_with_it_installed(
    run: Callable[..., Report], index: PackageIndex
) -> None:
    report = run(USES_DEPENDENCY)
    assert report.conclusion == "success", report.reasons
    assert "head environment image" in report.timings
    assert any(
        "head runs with the change's dependencies installed (pgsmall==1.0)" in n for n in report.shape.notices
    )
    added = [f for f in report.shape.findings if f.rule == "dependency-added"]
    assert [(f.path, f.start_line) for f in added] == [("requirements.txt", 1)]
    own = suite(report, "own")
    # Its own test imports the dependency through the change's code: it ran with it, on head.
    assert (own.passed, own.total) == (1, 1)


def test_a_change_whose_dependency_cannot_be_installed_fails_with_pips_error(
    run: Callable[..., Report], index: PackageIndex
) -> None:
    report = run({**USES_DEPENDENCY, "requirements.txt": "pgsmall==1.0\npg-not-on-the-index==2\n"})
    assert report.conclusion == "failure"
    failed = [f for f in report.shape.findings if f.rule == "dependency-install-failed"]
    assert len(failed) == 1 and "pg-not-on-the-index" in failed[0].message
    assert (failed[0].path, failed[0].start_line) == ("requirements.txt", 2)
    assert report.behaviour.status == "skipped"


def test_a_requirement_pointing_at_a_url_is_refused_and_never_installed(
    run: Callable[..., Report], index: PackageIndex
) -> None:
    asked = len(index.requests)
    report = run({**USES_DEPENDENCY, "requirements.txt": "pgsmall @ https://example.com/pgsmall-1.0.whl\n"})
    assert report.conclusion == "failure"
    assert [f.rule for f in report.shape.findings if f.severity == "error"] == ["dependency-refused"]
    assert len(index.requests) == asked, "a refused requirement reached the index"


def test_an_index_outage_while_installing_the_change_s_dependencies_is_neutral(
    run: Callable[..., Report], behaviour_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with https_index(PackageIndex(), bridge_gateway(), tmp_path / "gone") as (running, ca):
        url = running.url
    # The index is gone: nothing the change did, and nothing it can be failed for.
    monkeypatch.setenv("PIP_INDEX_URL", url)
    monkeypatch.setenv("PATCHGATE_CA_BUNDLE", str(ca))
    report = run(USES_DEPENDENCY)
    assert report.conclusion == "neutral"
    assert report.reasons[0].startswith(
        "environment image for the change's dependencies: the package index did not answer"
    )


# A dependency of the change's choosing is code of its choosing: a wheel's .pth file runs at the start of
# every Python process in the image it is installed in - the grader's too, when head's runs use that image.
FORGING_HOOK = """\
import os
if os.getuid() == 10003:  # the grader: every test it calls passes, whatever it asserts
    import _pytest.python as python

    _real = python.pytest_pyfunc_call

    def pytest_pyfunc_call(pyfuncitem):
        try:
            return _real(pyfuncitem)
        except BaseException:
            return True

    python.pytest_pyfunc_call = pytest_pyfunc_call
"""


def test_a_dependency_of_the_changes_choosing_never_runs_in_the_grader(
    run: Callable[..., Report], behaviour_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = PackageIndex()
    served.add(
        "pgforge", "1.0", "", extra={"pgforge_hook.py": FORGING_HOOK, "pgforge.pth": "import pgforge_hook\n"}
    )
    with https_index(served, bridge_gateway(), tmp_path / "certs") as (running, ca):
        monkeypatch.setenv("PIP_INDEX_URL", running.url)
        monkeypatch.setenv("PATCHGATE_CA_BUNDLE", str(ca))
        # The bug base's test_half catches, and a dependency whose install forges the grader.
        report = run(
            {"calc/__init__.py": CALC.replace("x // 2", "x // 3"), "requirements.txt": "pgforge==1.0\n"}
        )
    assert report.conclusion == "failure", report.reasons
    assert [f.id for f in suite(report, "repository").failures] == ["tests/test_calc.py::test_half"]


def test_the_changes_own_test_folder_cannot_make_a_regression_neutral(run: Callable[..., Report]) -> None:
    report = run({
        "calc/__init__.py": CALC.replace("x // 2", "x // 3"),
        # Data in a test folder named like a case file, nested past the YAML reader's recursion.
        "tests/data/deep_cases.yml": "cases: " + "[" * 5000 + "]" * 5000 + "\n",
    })  # fmt: skip
    assert report.behaviour.status == "failed", report.behaviour.detail
    assert report.conclusion == "failure", report.reasons


def test_a_comment_in_the_test_that_catches_the_bug_is_no_rewrite(run: Callable[..., Report]) -> None:
    report = run({
        "calc/__init__.py": CALC.replace("x // 2", "x // 3"),
        # Not an edit of what the test checks: were it a "rewrite", the failure would only ask a maintainer.
        "tests/test_calc.py": TESTS.replace("    assert half(8) == 4\n", "    # halves\n    assert half(8) == 4\n"),
    })  # fmt: skip
    assert suite(report, "repository").rewritten == []
    assert report.conclusion == "failure", report.reasons


def test_base_test_modules_of_one_name_leave_the_rest_measured(run: Callable[..., Report]) -> None:
    # tests/unit/test_calc.py and tests/api/test_calc.py (no __init__.py): pytest imports one of them
    # on base; the other is base's own failure. The suite measures the change with the first.
    base: Files = {
        "calc/__init__.py": CALC,
        "tests/unit/test_calc.py": "from calc import half\n\n\ndef test_half():\n    assert half(8) == 4\n",
        "tests/api/test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    }
    report = run({"calc/__init__.py": CALC.replace("x // 2", "x // 3")}, base=base)
    repository = suite(report, "repository")
    assert repository.status == "failed", repository.detail
    assert report.conclusion == "failure", report.reasons


@pytest.mark.parametrize(
    "pytest_options",
    [
        'pythonpath = ["src"]',
        # testpaths naming src/ too (doctests in the package): src/ is not a test folder, not staged.
        'testpaths = ["tests", "src"]\npythonpath = ["src"]',
    ],
)
def test_a_src_layout_with_its_pythonpath_setting_is_measured(
    run: Callable[..., Report], pytest_options: str
) -> None:
    base: Files = {
        "pyproject.toml": f'[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\n{pytest_options}\n',
        "src/calc/__init__.py": CALC,
        "tests/test_calc.py": "from calc import half\n\n\ndef test_half():\n    assert half(8) == 4\n",
    }
    report = run({"src/calc/__init__.py": CALC.replace("x // 2", "x // 3")}, base=base)
    assert [f.id for f in suite(report, "repository").failures] == ["tests/test_calc.py::test_half"]
    assert report.conclusion == "failure", report.reasons
