from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from checks.behaviour.errors import SuiteError
from checks.behaviour.suites import load_suite, suites_for

SUITE = """\
import pytest
from pytest import fixture


def test_plain():
    assert True


@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x


async def test_async():
    pass


def helper_test():
    pass


class TestBase:
    def test_inherited(self):
        pass

    def test_overridden(self):
        pass


class TestChild(TestBase):
    def test_overridden(self):
        pass

    class TestNested:
        def test_deep(self):
            pass


class TestWithInit:
    def __init__(self):
        pass

    def test_never_collected(self):
        pass


class TestWithNew:
    def __new__(cls):
        return object.__new__(cls)

    def test_never_collected_either(self):
        pass


class TestNotATest:
    __test__ = False

    def test_helper(self):
        pass


@pytest.fixture(scope="module", params=["http://a", "http://b"])
def test_url(request):  # a fixture named like a test (boltons' tests/test_urlutils.py): never collected
    return request.param


@pytest.fixture
def test_client():
    return None


class TestFixtures:
    @fixture
    def test_data(self):
        return 1

    def test_uses(self, test_data, test_url):
        assert test_data
"""


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_suites_for_reads_the_store_layout(tmp_path: Path) -> None:
    make(tmp_path, {"octo/app/hidden/test_a.py": "", "other/app/held-out/test_b.py": ""})
    suites = suites_for(tmp_path, "octo/app")
    assert suites.hidden == (tmp_path / "octo/app/hidden").resolve()
    assert suites.held_out is None
    assert suites_for(tmp_path, "other/app").held_out == (tmp_path / "other/app/held-out").resolve()
    assert suites_for(tmp_path, "nobody/app").hidden is None


def test_suites_for_gives_absolute_paths_for_a_relative_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PATCHGATE_TEST_STORE's default is relative; the paths go to Docker, which needs them absolute.
    make(tmp_path, {"store/octo/app/hidden/test_a.py": ""})
    monkeypatch.chdir(tmp_path)
    assert suites_for(Path("store"), "octo/app").hidden == tmp_path / "store/octo/app/hidden"


@pytest.mark.parametrize(
    "repository", ["../x", "octo/../../etc", "octo/..", "./c", "/c", "octo", "a/b/c", "octo/a b", "octo/"]
)
def test_suites_for_refuses_names_that_leave_the_store(tmp_path: Path, repository: str) -> None:
    with pytest.raises(ValueError, match="not a repository name"):
        suites_for(tmp_path, repository)


def test_load_suite_lists_tests_the_way_pytest_names_them(tmp_path: Path) -> None:
    make(tmp_path, {
        "test_one.py": SUITE,
        "sub/two_test.py": "def test_two():\n    pass\n",
        "conftest.py": "import pytest\n",
        "helpers.py": "def test_not_a_test_module():\n    pass\n",
        "data.yml": "not: cases\n",
        "x.cases.yml": "module: m\ncases:\n  - {id: one, call: f(), equals: 1}\n",
    })  # fmt: skip
    suite = load_suite(tmp_path, "hidden")
    assert suite.name == "hidden"
    assert suite.pytest_files == ("test_one.py", "sub/two_test.py")
    assert set(suite.functions) == {
        "sub/two_test.py::test_two",
        "test_one.py::test_plain",
        "test_one.py::test_param",
        "test_one.py::test_async",
        "test_one.py::TestBase::test_inherited",
        "test_one.py::TestBase::test_overridden",
        "test_one.py::TestChild::test_overridden",
        "test_one.py::TestChild::test_inherited",
        "test_one.py::TestChild::TestNested::test_deep",
        "test_one.py::TestFixtures::test_uses",
    }
    assert suite.case_ids == ("x.cases.yml::one",)


def test_the_static_list_is_what_pytest_collects(tmp_path: Path) -> None:
    # The ids a suite must report come from this list: one pytest never collects would count as
    # missing on every head, failing every change.
    make(tmp_path, {"test_one.py": SUITE})
    found = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "test_one.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    collected = {line.split("[")[0] for line in found.stdout.splitlines() if "::" in line}
    assert collected == set(load_suite(tmp_path, "hidden").functions), found.stdout


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "hidden suite has no tests"),
        ({"README.md": "hi", "helpers.py": "X = 1\n"}, "hidden suite has no tests"),
        ({"test_a.py": "def test_a(:\n    pass\n"}, r"test_a.py: line 1: .* \(fix the suite file\)"),
        ({"test_a.py": "def test_a():\n    pass\n", "helpers.py": "x = (\n"}, r"helpers.py: line 1"),
        ({"test_a.py": "def test_a():\n    pass\n\n\ndef test_a():\n    pass\n"},
         r"test_a.py: 'test_a' is defined twice \(lines 1 and 5\)"),
        ({"test_a.py": "class TestA:\n    def test_x(self): pass\n    def test_x(self): pass\n"},
         "'test_x' is defined twice"),
        ({"a/test_same.py": "def test_a():\n    pass\n", "b/test_same.py": "def test_b():\n    pass\n"},
         "a/test_same.py and b/test_same.py would both be imported as module 'test_same'"),
        ({"bad.cases.yml": "cases: [\n"}, "bad.cases.yml: invalid YAML"),
    ],
)  # fmt: skip
def test_load_suite_refuses_suites_that_cannot_run_as_written(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    make(tmp_path, files)
    with pytest.raises(SuiteError, match=message):
        load_suite(tmp_path, "hidden")


def test_same_module_names_in_packages_are_fine(tmp_path: Path) -> None:
    make(tmp_path, {
        "a/__init__.py": "", "a/test_same.py": "def test_a():\n    pass\n",
        "b/__init__.py": "", "b/test_same.py": "def test_b():\n    pass\n",
    })  # fmt: skip
    assert len(load_suite(tmp_path, "held_out").functions) == 2


def test_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"held-out suite .* is not a directory"):
        load_suite(tmp_path / "nope", "held_out")


@pytest.mark.parametrize(
    ("config", "in_process"),
    [(None, False), ("isolation: subject\n", False), ("isolation: in-process\n", True), ("", False)],
)
def test_a_suite_runs_isolated_unless_it_opts_in(
    tmp_path: Path, config: str | None, in_process: bool
) -> None:
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    if config is not None:
        (tmp_path / "patchgate-suite.yml").write_text(config)
    assert load_suite(tmp_path, "hidden").in_process is in_process


@pytest.mark.parametrize(
    "config", ["isolation: none\n", "isolation: [in-process]\n", "isolate: in-process\n", "a: [\n"]
)
def test_a_suite_config_that_does_not_validate_is_refused_by_name(tmp_path: Path, config: str) -> None:
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "patchgate-suite.yml").write_text(config)
    with pytest.raises(SuiteError, match=r"patchgate-suite\.yml is not valid"):
        load_suite(tmp_path, "hidden")


@pytest.mark.parametrize("kind", ["repository", "own"])
def test_a_repositorys_test_folders_hold_no_case_files(tmp_path: Path, kind: str) -> None:
    # Data named like a case file in a repository's tests (base's or the change's) is the tests' data:
    # read as cases it made base's suite an error, or (nested deep, or aliased) crashed or hung the host.
    root = make(tmp_path, {
        "tests/test_a.py": "def test_a():\n    pass\n",
        "tests/data/parse_cases.yml": "- input: 1\n  output: 2\n",
        "tests/data/deep_cases.yml": "cases: " + "[" * 5000 + "]" * 5000 + "\n",
    })  # fmt: skip
    suite = load_suite(root, kind)  # type: ignore[arg-type]
    assert suite.cases == ()
    assert suite.functions == ("tests/test_a.py::test_a",)


def test_a_file_nested_past_the_parser_is_a_suite_error_never_a_crash(tmp_path: Path) -> None:
    root = make(
        tmp_path, {"test_a.py": "def test_a():\n    pass\n", "helper.py": "x = " + "1 + " * 100_000 + "1\n"}
    )
    with pytest.raises(SuiteError, match=r"helper\.py"):
        load_suite(root, "hidden")


def test_a_repository_file_that_does_not_parse_is_left_to_pytest(tmp_path: Path) -> None:
    # Base's test folders hold fixtures in old or broken syntax (linters' and formatters' test data):
    # pytest never imports them, and the suite is not an error for every change because of them.
    root = make(
        tmp_path, {"tests/test_a.py": "def test_a():\n    pass\n", "tests/data/py2.py": "print 'hi'\n"}
    )
    assert load_suite(root, "repository").functions == ("tests/test_a.py::test_a",)


@pytest.mark.parametrize("kind", ["repository", "own"])
def test_a_repositorys_test_file_past_the_size_bound_is_not_parsed_on_the_host(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The change's test folder is read on the host: 5 MB of `x = 1` is a 3 GB syntax tree there.
    monkeypatch.setattr("checks.behaviour.suites.MAX_REPOSITORY_SOURCE_BYTES", 1024)
    root = make(tmp_path, {
        "tests/test_a.py": "def test_a():\n    pass\n",
        "tests/test_big.py": "x = 1\n" * 400 + "def test_big():\n    pass\n",
    })  # fmt: skip
    assert load_suite(root, kind).functions == ("tests/test_a.py::test_a",)  # type: ignore[arg-type]


def test_a_repositorys_test_modules_of_one_name_are_left_to_pytest(tmp_path: Path) -> None:
    # A repository whose pytest settings import by path (importmode=importlib, ignored here) may hold
    # tests/unit/test_x.py and tests/api/test_x.py: base fails to import the second, and it is left
    # out as base's failure - not a configuration error of the suite for every change.
    root = make(tmp_path, {
        "tests/unit/test_x.py": "def test_unit():\n    pass\n",
        "tests/api/test_x.py": "def test_api():\n    pass\n",
    })  # fmt: skip
    suite = load_suite(root, "repository")
    assert suite.functions == ("tests/api/test_x.py::test_api", "tests/unit/test_x.py::test_unit")
    with pytest.raises(SuiteError, match="would both be imported"):
        load_suite(root, "hidden")


def test_a_pythonpath_entry_the_staged_tests_do_not_hold_is_no_crash(tmp_path: Path) -> None:
    # `pythonpath = ["src"]` (a src layout's usual setting) names the project's folder, which the
    # repository suite does not stage: reading its names raised FileNotFoundError out of the layer.
    root = make(tmp_path, {
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
        "tests/test_a.py": "def test_a():\n    pass\n",
    })  # fmt: skip
    assert load_suite(root, "repository").functions == ("tests/test_a.py::test_a",)
