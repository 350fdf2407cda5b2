"""checks.testinfra.config: which edits to shared config files change how tests run; which plugins load."""

from __future__ import annotations

import pytest

from checks.testinfra.config import config_changes, has_sections, plugin_changes

PYPROJECT = '[project]\nname = "a"\n'
ADDOPTS = '[tool.pytest.ini_options]\naddopts = "{}"\n'

# file name, base, head, the kinds that changed (in order)
CASES: list[tuple[str, str, str | None, str | None, list[str]]] = [
    # --- pytest plugins: -p in addopts of any pytest config
    (
        "pyproject -p added",
        "pyproject.toml",
        ADDOPTS.format("-q"),
        ADDOPTS.format("-q -p tests.hooks"),
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "pyproject -p glued to its value",
        "pyproject.toml",
        ADDOPTS.format("-q"),
        ADDOPTS.format("-qptests.hooks"),
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "pyproject -p after another short flag",
        "pyproject.toml",
        ADDOPTS.format("-q"),
        ADDOPTS.format("-vp tests.hooks"),
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "-k value holding a p is not a plugin",
        "pyproject.toml",
        ADDOPTS.format("-q"),
        ADDOPTS.format("-kpath"),
        ["pytest-config"],
    ),
    (
        "pytest 9 addopts list",
        "pyproject.toml",
        "[tool.pytest]\naddopts = []\n",
        '[tool.pytest]\naddopts = ["-p", "evil"]\n',
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "-p no: disables one",
        "pyproject.toml",
        ADDOPTS.format(""),
        ADDOPTS.format("-p no:randomly"),
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "reordered addopts, same plugins",
        "pyproject.toml",
        ADDOPTS.format("-p a -q"),
        ADDOPTS.format("-q -p a"),
        ["pytest-config"],
    ),
    (
        "setup.cfg -p",
        "setup.cfg",
        "[tool:pytest]\naddopts = -q\n",
        "[tool:pytest]\naddopts = -q -p myhooks\n",
        ["pytest-plugin", "pytest-config"],
    ),
    # --- pytest11 entry points
    (
        "pyproject entry point",
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT + '[project.entry-points.pytest11]\nhooks = "pkg.hooks"\n',
        ["pytest-plugin"],
    ),
    (
        "pyproject entry point, quoted group",
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT + '[project.entry-points."pytest11"]\nhooks = "pkg.hooks"\n',
        ["pytest-plugin"],
    ),
    (
        "poetry plugin",
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT + '[tool.poetry.plugins."pytest11"]\nhooks = "pkg.hooks"\n',
        ["pytest-plugin"],
    ),
    (
        "console script is no plugin",
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT + '[project.scripts]\ntool = "pkg.cli:main"\n',
        [],
    ),
    (
        "setup.cfg entry point",
        "setup.cfg",
        "[metadata]\nname = a\n",
        "[metadata]\nname = a\n[options.entry_points]\npytest11 =\n    hooks = pkg.hooks\n",
        ["pytest-plugin"],
    ),
    (
        "setup.cfg console script",
        "setup.cfg",
        "[metadata]\nname = a\n",
        "[metadata]\nname = a\n[options.entry_points]\nconsole_scripts =\n    t = pkg:main\n",
        [],
    ),
    (
        "setup.py entry point",
        "setup.py",
        "from setuptools import setup\nsetup(name='a')\n",
        "from setuptools import setup\nsetup(name='a', entry_points={'pytest11': ['h = pkg.hooks']})\n",
        ["pytest-plugin"],
    ),
    (
        "setup.py entry point under a computed key",
        "setup.py",
        "import setuptools\nsetup(name='a')\n",
        "import setuptools\nEP = {'pytest' + '11': ['h = pkg.hooks']}\nsetup(name='a', entry_points=EP)\n",
        ["pytest-plugin"],
    ),
    (
        "setup.py version bump",
        "setup.py",
        "from setuptools import setup\nsetup(name='a', version='1')\n",
        "from setuptools import setup\nsetup(name='a', version='2')\n",
        [],
    ),
    ("setup.py that stops compiling", "setup.py", "setup()\n", "setup(\n", ["pytest-plugin"]),
    # --- files counted whole by name (infra_changes takes only their plugin part from here)
    (
        "pytest.ini -p",
        "pytest.ini",
        "[pytest]\naddopts = -q\n",
        "[pytest]\naddopts = -q -p evil\n",
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "pytest.toml -p",
        "pytest.toml",
        '[pytest]\naddopts = ["-q"]\n',
        '[pytest]\naddopts = ["-q", "-pevil"]\n',
        ["pytest-plugin", "pytest-config"],
    ),
    (
        "tox.ini pytest section -p",
        "tox.ini",
        "[pytest]\naddopts = -q\n",
        "[pytest]\naddopts = -p evil\n",
        ["pytest-plugin", "pytest-config"],
    ),
    # --- tox
    (
        "tox in pyproject deselects a test",
        "pyproject.toml",
        PYPROJECT + '[tool.tox.env_run_base]\ncommands = [["pytest"]]\n',
        PYPROJECT + '[tool.tox.env_run_base]\ncommands = [["pytest", "--deselect", "t.py::test_x"]]\n',
        ["tox"],
    ),
    (
        "legacy tox ini in pyproject",
        "pyproject.toml",
        PYPROJECT,
        PYPROJECT + '[tool.tox]\nlegacy_tox_ini = """\n[testenv]\ncommands = pytest -k "not x"\n"""\n',
        ["tox"],
    ),
    (
        "tox in setup.cfg",
        "setup.cfg",
        "[tox:tox]\nenvlist = py3\n",
        "[tox:tox]\nenvlist = py3\n[testenv]\ncommands = pytest -x\n",
        ["tox"],
    ),
    # --- hatch
    (
        "hatch env scripts in pyproject",
        "pyproject.toml",
        PYPROJECT + '[tool.hatch.envs.default.scripts]\ntest = "pytest"\n',
        PYPROJECT + "[tool.hatch.envs.default.scripts]\ntest = \"pytest -k 'not slow'\"\n",
        ["hatch"],
    ),
    (
        "hatch build config is not tests",
        "pyproject.toml",
        PYPROJECT + "[tool.hatch.build]\nexclude = []\n",
        PYPROJECT + '[tool.hatch.build]\nexclude = ["x"]\n',
        [],
    ),
    (
        "hatch.toml test env",
        "hatch.toml",
        "[envs.hatch-test]\nextra-args = []\n",
        '[envs.hatch-test]\nextra-args = ["--deselect", "tests/test_a.py"]\n',
        ["hatch"],
    ),
    (
        "hatch.toml version source",
        "hatch.toml",
        '[version]\npath = "a.py"\n',
        '[version]\npath = "b.py"\n',
        [],
    ),
    # --- files that appear or vanish
    (
        "pyproject added with a plugin",
        "pyproject.toml",
        None,
        ADDOPTS.format("-p x"),
        ["pytest-plugin", "pytest-config"],
    ),
    ("pyproject deleted", "pyproject.toml", PYPROJECT + '[tool.tox]\nenv_list = ["a"]\n', None, ["tox"]),
]


@pytest.mark.parametrize(("name", "base", "head", "kinds"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_config_changes(name: str, base: str | None, head: str | None, kinds: list[str]) -> None:
    found = config_changes(name, _bytes(base), _bytes(head))
    assert [kind for kind, _ in found] == kinds


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def test_plugin_reasons_name_the_plugins() -> None:
    found = dict(
        config_changes(
            "pyproject.toml", ADDOPTS.format("-p old").encode(), ADDOPTS.format("-p tests.hooks").encode()
        )
    )
    assert found["pytest-plugin"] == (
        "loads pytest plugins `-p tests.hooks` (addopts); stops loading `-p old` (addopts)"
    )
    entry = dict(config_changes("setup.cfg", b"", b"[options.entry_points]\npytest11 =\n  h  =  pkg.hooks\n"))
    assert entry["pytest-plugin"] == "loads pytest plugins pytest11 entry point h = pkg.hooks"


def test_plugin_changes_only_for_files_counted_whole() -> None:
    before, after = b"[pytest]\naddopts = -q\n", b"[pytest]\naddopts = -q -p evil\n"
    assert plugin_changes("pytest.ini", before, after) == "loads pytest plugins `-p evil` (addopts)"
    assert plugin_changes("pytest.ini", before, b"[pytest]\naddopts = -x\n") is None
    assert plugin_changes("pytest.ini", before, b"[pytest\n") is None  # unreadable: the name alone counts
    assert plugin_changes("setup.cfg", before, after) is None


@pytest.mark.parametrize(
    ("name", "sections"),
    [
        ("setup.cfg", True),
        ("pyproject.toml", True),
        ("hatch.toml", True),
        ("setup.py", True),
        ("Makefile", True),
        ("GNUmakefile", True),
        ("makefile", True),
        ("tests.mk", True),
        ("pytest.ini", False),
        ("README.md", False),
        ("Makefile.md", False),
    ],
)
def test_has_sections(name: str, sections: bool) -> None:
    assert has_sections(name) is sections


@pytest.mark.parametrize(
    ("name", "head"),
    [
        # tomllib raises RecursionError past 500 levels: it ended the gate as neutral (internal error).
        ("pyproject.toml", b"[tool.pytest.ini_options]\nx = " + b"[" * 1200 + b"]" * 1200 + b"\n"),
        ("pytest.toml", b"[pytest]\nx = " + b"[" * 1200 + b"]" * 1200 + b"\n"),
        # A line of megabytes: a Makefile rule pattern backtracked over it for hours.
        ("release.mk", b"release" + b" " * 2_000_000 + b"x\n"),
        ("tox.ini", b"[testenv]\ncommands = " + b" " * 100_000 + b"pytest\n"),
    ],
)
def test_a_config_file_no_parser_can_read_counts_as_changed(name: str, head: bytes) -> None:
    # Hostile: whatever a PR's file makes a parser raise, or however long its lines, the file fails
    # closed - it counts as changed - never an error of the gate's.
    changes = config_changes(name, b"", head)
    assert changes and all("cannot be compared" in reason for _, reason in changes), changes
