"""The parts of shared configuration files that decide how tests run, compared between base and head.

setup.cfg, pyproject.toml, hatch.toml, setup.py and Makefiles hold much
besides tests; only their test parts count, so a PR that bumps a dependency
is not reported. Files that configure nothing but tests (pytest.ini,
tox.ini, noxfile.py...) count whole (`checks.testinfra.guarded.classify`); here only
the pytest plugins they load are read, to name them. Pure: bytes in, no I/O.
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Callable
from typing import Literal

from checks.testinfra.makefile import is_makefile, recipe_of_tests
from checks.testinfra.plugins import addopts_plugins, entry_point_plugins, setup_py_plugins

ConfigKind = Literal["pytest-config", "coverage-config", "pytest-plugin", "tox", "hatch", "make"]
# Names whose test parts are compared (besides Makefiles, see `checks.testinfra.makefile.is_makefile`).
SECTION_FILES = frozenset({"setup.cfg", "pyproject.toml", "hatch.toml", "setup.py"})
# Files pytest reads an [pytest] ini section from; pytest.toml has a [pytest] table instead.
_INI_FILES = frozenset({"pytest.ini", ".pytest.ini", "tox.ini"})
_TOML_FILES = frozenset({"pytest.toml", ".pytest.toml"})
# Config files bigger than this, or with a line longer than that, are not parsed: any byte change
# counts as a change.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_CONFIG_LINE = 64 * 1024
_WHAT: dict[ConfigKind, str] = {
    "pytest-config": "its pytest configuration section changed",
    "coverage-config": "its coverage configuration section changed",
    "tox": "its tox configuration changed (test environments and commands)",
    "hatch": "its hatch environments changed (test scripts and dependencies)",
    "make": "its test targets changed (their recipes, prerequisites or variables)",
}

Sections = dict[ConfigKind, object]


class Unparsable(Exception):
    """A config file cannot be read, so its test sections cannot be compared."""


def has_sections(name: str) -> bool:
    """Return True when a file called ``name`` counts only through its test parts."""
    return name in SECTION_FILES or is_makefile(name)


def config_changes(name: str, base: bytes | None, head: bytes | None) -> list[tuple[ConfigKind, str]]:
    """Return (kind, reason) for each test part of file ``name`` that differs; plugins first.

    A file that cannot be read on either side counts as changed (its tools
    would read it, or choke on it, too).
    """
    parse = _parser(name)
    if parse is None:
        return []
    try:
        before, after = parse(base), parse(head)
    except Exception as exc:  # whatever a PR's file makes a parser raise, it fails closed
        if not isinstance(exc, Unparsable):
            # (A 1,200-deep TOML array raised RecursionError, which ended the gate as neutral.)
            exc = Unparsable(f"it could not be read ({type(exc).__name__})")
        kind: ConfigKind = "pytest-plugin" if name == "setup.py" else _unparsable_kind(name)
        return [(kind, f"it changed and {exc}, so its test sections cannot be compared")]
    out: list[tuple[ConfigKind, str]] = []
    plugins_before, plugins_after = before.get("pytest-plugin", ()), after.get("pytest-plugin", ())
    if plugins_before != plugins_after:
        out.append(("pytest-plugin", _plugin_reason(plugins_before, plugins_after)))
    for kind, reason in _WHAT.items():
        if before.get(kind) != after.get(kind):
            out.append((kind, reason))
    return out


def plugin_changes(name: str, base: bytes | None, head: bytes | None) -> str | None:
    """Return why the pytest plugins a pytest-only config file loads differ, or None when they do not."""
    if name not in _INI_FILES and name not in _TOML_FILES:
        return None
    found = config_changes(name, base, head)
    return next((reason for kind, reason in found if kind == "pytest-plugin"), None)


def _unparsable_kind(name: str) -> ConfigKind:
    return "make" if is_makefile(name) else "pytest-config"


def _parser(name: str) -> Callable[[bytes | None], Sections] | None:
    if name == "setup.cfg" or name in _INI_FILES:
        return _cfg_sections
    if name == "pyproject.toml":
        return _pyproject_sections
    if name in _TOML_FILES:
        return _pytest_toml_sections
    if name == "hatch.toml":
        return _hatch_sections
    if name == "setup.py":
        return _setup_py_sections
    if is_makefile(name):
        return _make_sections
    return None


def _plugin_reason(before: object, after: object) -> str:
    old = set(before) if isinstance(before, tuple) else set()
    new = set(after) if isinstance(after, tuple) else set()
    parts = []
    if new - old:
        parts.append("loads pytest plugins " + ", ".join(sorted(new - old)))
    if old - new:
        parts.append("stops loading " + ", ".join(sorted(old - new)))
    return "; ".join(parts) or "the pytest plugins it loads changed"


def text(data: bytes) -> str:
    """Decode a config file, refusing one too large, with a line too long, or not UTF-8.

    Every parser of these files runs regular expressions line by line: a line of megabytes is never a
    real configuration's, and one could take a backtracking pattern hours.
    """
    if len(data) > MAX_CONFIG_BYTES:
        raise Unparsable(f"it is larger than {MAX_CONFIG_BYTES} bytes")
    if any(len(line) > MAX_CONFIG_LINE for line in data.splitlines()):
        raise Unparsable(f"it has a line longer than {MAX_CONFIG_LINE} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unparsable("it is not valid UTF-8") from exc


def _cfg_sections(data: bytes | None) -> Sections:
    """The pytest, coverage and tox sections and pytest11 entry points of setup.cfg, tox.ini, pytest.ini."""
    if data is None:
        return {}
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text(data))
    except configparser.Error as exc:
        raise Unparsable(f"it is not a valid INI file ({type(exc).__name__})") from exc
    # pytest rejects a plain [pytest] section in setup.cfg, which still changes the run.
    pytest = {s: dict(parser.items(s, raw=True)) for s in ("tool:pytest", "pytest") if parser.has_section(s)}
    coverage = {s: dict(parser.items(s, raw=True)) for s in parser.sections() if s.startswith("coverage:")}
    tox = {
        s: dict(parser.items(s, raw=True))
        for s in parser.sections()
        if s in ("tox", "tox:tox") or s == "testenv" or s.startswith("testenv:")
    }
    plugins: list[str] = []
    for section in pytest.values():
        plugins += addopts_plugins(section.get("addopts", ""), "addopts")
    if parser.has_option("options.entry_points", "pytest11"):
        plugins += entry_point_plugins(parser.get("options.entry_points", "pytest11", raw=True))
    # No section at all is None, like an absent file; an empty section still makes pytest use the file.
    return {
        "pytest-config": pytest or None,
        "coverage-config": coverage or None,
        "tox": tox or None,
        "pytest-plugin": tuple(sorted(set(plugins))),
    }


def _toml(data: bytes) -> dict[str, object]:
    try:
        return tomllib.loads(text(data))
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError) as exc:
        raise Unparsable("it is not valid TOML") from exc


def _table(doc: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _pyproject_sections(data: bytes | None) -> Sections:
    """The tool.pytest, tool.coverage, tool.tox, tool.hatch.envs tables and pytest11 entry points."""
    if data is None:
        return {}
    doc = _toml(data)
    pytest = _table(doc, "tool", "pytest")
    plugins = _toml_addopts(_table(pytest, "ini_options", "addopts"))
    plugins += _toml_addopts(_table(pytest, "addopts"))
    entry_points = (
        _table(doc, "project", "entry-points", "pytest11"),
        _table(doc, "tool", "poetry", "plugins", "pytest11"),
    )
    for table in entry_points:
        if isinstance(table, dict):
            plugins += [f"pytest11 entry point {k} = {v}" for k, v in table.items()]
    return {
        "pytest-config": pytest,
        "coverage-config": _table(doc, "tool", "coverage"),
        "tox": _table(doc, "tool", "tox"),
        "hatch": _table(doc, "tool", "hatch", "envs"),
        "pytest-plugin": tuple(sorted(set(plugins))),
    }


def _pytest_toml_sections(data: bytes | None) -> Sections:
    """pytest.toml's [pytest] table and the plugins its addopts load."""
    if data is None:
        return {}
    pytest = _table(_toml(data), "pytest")
    plugins = _toml_addopts(_table(pytest, "addopts"))
    return {"pytest-config": pytest, "pytest-plugin": tuple(sorted(set(plugins)))}


def _toml_addopts(value: object) -> list[str]:
    if isinstance(value, str):
        return addopts_plugins(value, "addopts")
    if isinstance(value, list):
        return addopts_plugins(" ".join(str(v) for v in value), "addopts")
    return []


def _hatch_sections(data: bytes | None) -> Sections:
    """hatch.toml's environments (the same as pyproject's [tool.hatch.envs])."""
    return {} if data is None else {"hatch": _table(_toml(data), "envs")}


def _setup_py_sections(data: bytes | None) -> Sections:
    """The pytest11 entry points a setup.py declares."""
    if data is None:
        return {}
    found = setup_py_plugins(data)
    if found is None:
        raise Unparsable("it does not compile")
    return {"pytest-plugin": tuple(sorted(set(found)))}


def _make_sections(data: bytes | None) -> Sections:
    """A Makefile's test targets, with the targets and variables they use."""
    return {} if data is None else {"make": recipe_of_tests(text(data))}
