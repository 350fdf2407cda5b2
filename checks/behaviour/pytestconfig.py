"""The suite's own pytest configuration, read statically, as far as patchgate honours it.

The suite's folder is the maintainers' (trusted): its ``pytest.ini``,
``pyproject.toml`` (``[tool.pytest.ini_options]``), ``tox.ini``
(``[pytest]``) or ``setup.cfg`` (``[tool:pytest]``), first found in that
order as pytest looks, says how its tests are named (``python_files``,
``python_classes``, ``python_functions``), where they are
(``testpaths``), and a few options that change what a test does
(``markers``, ``filterwarnings``, ``xfail_strict``, ``usefixtures``,
``norecursedirs``, ``empty_parameter_set_mark``, ``pythonpath`` inside the
suite). Anything else of it is left out: patchgate's own configuration
decides how pytest runs (no ``addopts``, no plugins). A ``conftest.py`` in
the suite's root may drop files with literal ``collect_ignore`` /
``collect_ignore_glob`` lists. Which tests those names find is
``collection.py``'s.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from checks.behaviour.errors import SuiteError
from sandbox.pyparse import parse_python

# patchgate's defaults (also pytest's, but for python_files' *_test.py twin of test_*.py).
PYTHON_FILES = ("test_*.py", "*_test.py")
# Options of the suite's own pytest configuration that reach the run, as written.
PASSED_THROUGH = (
    "markers", "filterwarnings", "xfail_strict", "usefixtures", "norecursedirs", "empty_parameter_set_mark",
)  # fmt: skip
_CONFIG_FILES = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
# pytest's own default for norecursedirs.
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


@dataclass(frozen=True)
class PytestOptions:
    """The suite's own pytest configuration, as far as patchgate honours it."""

    python_files: tuple[str, ...] = PYTHON_FILES
    python_classes: tuple[str, ...] = ("Test",)
    python_functions: tuple[str, ...] = ("test",)
    testpaths: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = ()
    passed: Mapping[str, str] = field(default_factory=dict)
    collect_ignore: tuple[str, ...] = ()
    source: str = ""

    def collects_file(self, path: str) -> bool:
        """Whether pytest collects the suite file ``path`` as a test module."""
        pure = PurePosixPath(path)
        if pure.suffix != ".py" or any(fnmatch.fnmatchcase(path, pattern) for pattern in self.collect_ignore):
            return False
        norecurse = tuple(self.passed.get("norecursedirs", "").split()) or _NORECURSE
        if any(fnmatch.fnmatchcase(part, p) for part in pure.parts[:-1] for p in norecurse):
            return False
        if self.testpaths and not any(
            path == t or path.startswith(t.rstrip("/") + "/") for t in self.testpaths
        ):
            return False
        return any(fnmatch.fnmatchcase(pure.name if "/" not in p else path, p) for p in self.python_files)

    def overrides(self, suite: str) -> list[str]:
        """The suite's options as pytest ``-o`` overrides, for its folder at ``suite`` in the container."""
        out = {
            "python_files": " ".join(self.python_files),
            "python_classes": " ".join(self.python_classes),
            "python_functions": " ".join(self.python_functions),
            **self.passed,
        }
        if self.pythonpath:
            out["pythonpath"] = " ".join(f"{suite}/{p}".rstrip("/") for p in self.pythonpath)
        return [f"{k}={v}" for k, v in out.items()]

    def paths(self, suite: str) -> list[str]:
        """What pytest is told to collect: the suite's ``testpaths`` in it, else the whole folder."""
        return [f"{suite}/{p}".rstrip("/") for p in self.testpaths] or [suite]

    def class_name(self, name: str) -> bool:
        return _prefix_or_glob(name, self.python_classes)

    def function_name(self, name: str) -> bool:
        return _prefix_or_glob(name, self.python_functions)


def _prefix_or_glob(name: str, options: tuple[str, ...]) -> bool:
    # pytest's own rule (_matches_prefix_or_glob_option): a prefix, or a glob when it has glob characters.
    return any(
        name.startswith(o) or (any(c in o for c in "*?[") and fnmatch.fnmatchcase(name, o)) for o in options
    )


def read_options(root: Path) -> PytestOptions:
    """Read the suite's own pytest configuration; raise SuiteError for one that does not parse."""
    ini, source = _ini(root)
    listed = ("python_files", "python_classes", "python_functions", "testpaths", "pythonpath")
    words = {k: tuple(v.split()) for k, v in ini.items() if k in listed}
    for key in ("testpaths", "pythonpath"):
        for entry in words.get(key, ()):
            target = (root / entry).resolve()
            if not target.is_relative_to(root.resolve()):
                raise SuiteError(f"{source}: {key} entry {entry!r} is outside the suite folder")
    return PytestOptions(
        python_files=words.get("python_files") or PYTHON_FILES,
        python_classes=words.get("python_classes") or ("Test",),
        python_functions=words.get("python_functions") or ("test",),
        # pytest globs them: one the folder does not hold matches nothing (an argument would be an error).
        testpaths=tuple(t for t in words.get("testpaths", ()) if _glob(t) or (root / t).exists()),
        pythonpath=words.get("pythonpath", ()),
        passed={k: ini[k] for k in PASSED_THROUGH if k in ini},
        collect_ignore=_collect_ignore(root),
        source=source,
    )


def _glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _ini(root: Path) -> tuple[dict[str, str], str]:
    for name in _CONFIG_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            if name == "pyproject.toml":
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
                options = table.get("ini_options") if isinstance(table, dict) else None
                if not isinstance(options, dict):
                    continue
                return {str(k): _toml_value(v) for k, v in options.items()}, name
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(path.read_text(encoding="utf-8"), source=name)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error) as exc:
            raise SuiteError(f"{name} in the suite folder does not parse: {exc}") from None
        section = {"setup.cfg": "tool:pytest", "tox.ini": "pytest"}.get(name, "pytest")
        if parser.has_section(section):
            return dict(parser.items(section)), name
        if name == "pytest.ini":
            return {}, name  # pytest stops at a pytest.ini, even an empty one
    return {}, ""


def _toml_value(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _collect_ignore(root: Path) -> tuple[str, ...]:
    """The literal ``collect_ignore`` / ``collect_ignore_glob`` of the suite's root conftest.py, as globs."""
    path = root / "conftest.py"
    if not path.is_file():
        return ()
    try:
        tree = parse_python(path.read_bytes())
    except (SyntaxError, ValueError):
        return ()  # the suite's reader reports it
    found: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        if names & {"collect_ignore", "collect_ignore_glob"} and isinstance(node.value, ast.List | ast.Tuple):
            for item in node.value.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    entry = item.value.strip("/")
                    found += [entry, f"{entry}/*"] if "collect_ignore" in names else [entry]
    return tuple(found)
