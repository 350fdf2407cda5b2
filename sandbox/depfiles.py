"""A repository's Python dependencies, read from its dependency files without running them.

Sources, all at the tree's root: ``requirements*.txt`` (and ``requirements/*.txt``),
``pyproject.toml`` ([project] dependencies, test/dev optional extras and dependency
groups), ``setup.cfg`` (install_requires, test/dev extras) and ``setup.py`` (literal
install_requires / extras_require / tests_require only: it is parsed, never executed).
Local paths, editable installs and pip options are dropped: the project itself is
copied in at run time, and the build chooses the index; what points at a URL, a VCS or
a local path is kept apart as ``direct`` (a change adding one is refused:
checks/shape/dependencies.py). A head tree is the PR's: a dependency file that is a
symlink, lies outside the tree or is larger than ``MAX_FILE_BYTES`` is not read.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sandbox.pyparse import parse_python

TEST_EXTRAS = frozenset({"test", "tests", "testing", "dev", "develop", "development"})
MAX_FILE_BYTES = 1024 * 1024
# How deep requirement files may include each other (``-r``); deeper ones are not read.
MAX_INCLUDE_DEPTH = 20
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# A requirement that names where to get it instead of a version on the index (PEP 440 direct
# references, pip's editable and VCS forms, local paths and archives).
# (A PEP 508 ``name @ url`` with no space before the ``@`` is ``_at_url``'s: as one pattern,
# ``^[^;]*@\s*\S+:`` backtracked quadratically over a run of ``@``.)
_DIRECT = re.compile(
    r"^(-e\b|--editable\b|\.|/|~|file:|[A-Za-z][A-Za-z0-9+.-]*://|(git|hg|svn|bzr)\+)|\s@\s*\S"
    r"|^(-i|--index-url|--extra-index-url|-f|--find-links|--trusted-host)\b",
    re.IGNORECASE,
)
# A requirement (or a requirements file's line) longer than this is never parsed: it is kept apart as
# direct, never the build's, and a pip that reads it fails. No real one comes near it.
MAX_REQUIREMENT = 64 * 1024
# Where a requirement's pip options start: a run of spaces after a non-space (anchored so: a run of
# spaces tried from each of its own positions backtracked quadratically - hours on a 1 MB line).
_OPTION = re.compile(r"(?<=\S)\s+--?\w")
# pip options of a requirements file that say where packages come from: kept apart with the direct ones.
_SOURCES = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host")


@dataclass(frozen=True)
class Requirement:
    """One requirement line and the file it came from."""

    text: str
    origin: str


@dataclass(frozen=True)
class Dependencies:
    """The dependency files found (relative paths) and the requirements they ask for."""

    files: tuple[str, ...]
    requirements: tuple[Requirement, ...]
    # Requirements that point at a URL, a VCS or a local path instead of the index.
    direct: tuple[Requirement, ...] = ()


def is_direct(requirement: str) -> bool:
    """Whether ``requirement`` names a URL, a VCS or a local path rather than a release on the index.

    A string of more than one line is no requirement either (a TOML or setup.py string may hold a
    newline): written a line a requirement, its next line would be a pip option of the build's own.
    """
    text = requirement.strip()
    if len(text) > MAX_REQUIREMENT or len(text.splitlines()) > 1:
        return True
    return _DIRECT.search(text) is not None or _at_url(text)


def _at_url(text: str) -> bool:
    """Whether an ``@`` before the first ``;`` is followed, past spaces, by a word with a ``:`` after
    its first character (``name@https://...``), as ``^[^;]*@\\s*\\S+:`` says - in one pass over the
    words, never back over them."""
    semicolon = text.find(";")
    limit = len(text) if semicolon < 0 else semicolon
    words = [(m.start(), m.group()) for m in re.finditer(r"\S+", text)]
    for i, (start, word) in enumerate(words):
        at = word.find("@")
        if at < 0 or start + at >= limit:
            continue
        if word.rfind(":") > at + 1:  # the rest of this word, after its first @, holds a colon
            return True
        last = word.rfind("@", 0, max(limit - start, 0))
        if last == len(word) - 1 and i + 1 < len(words) and ":" in words[i + 1][1][1:]:
            return True
    return False


_SEPARATORS = string.whitespace + "="


def _option(line: str, names: tuple[str, ...]) -> tuple[str, str] | None:
    """``(option, value)`` when ``line`` is one of the options ``names`` with its value (``-r x``,
    ``--requirement=x``): the option, spaces or ``=``, then one word to the line's end."""
    for name in names:
        rest = line[len(name) :] if line.startswith(name) else None
        if not rest or not (rest[0].isspace() or rest[0] == "="):
            continue
        value = rest.lstrip(_SEPARATORS)
        if not value and len(rest) > 1:
            value = rest[-1]  # ``-r =`` names the file ``=`` (one separator, then the word)
        if value and not any(c.isspace() for c in value):
            return name, value
    return None


def name_of(requirement: str) -> str:
    """The requirement's project name, normalized as PEP 503 does (``Foo_Bar`` is ``foo-bar``)."""
    return _normal(_name_of(requirement))


def line_of(tree: Path, requirement: Requirement) -> int:
    """The first line of the requirement's file that holds its text (1-based); 0 when it cannot be told."""
    path = tree / requirement.origin
    if not _readable(path, tree):
        return 0
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return next((n for n, line in enumerate(lines, 1) if requirement.text in line), 0)


def _readable(path: Path, tree: Path) -> bool:
    """A regular file inside ``tree`` (no symlink anywhere on the way) and of a bounded size."""
    try:
        rel = path.relative_to(tree)
    except ValueError:
        return False
    if ".." in rel.parts:
        return False
    here = tree
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            return False
    return path.is_file() and path.stat().st_size <= MAX_FILE_BYTES


def dependency_files(tree: Path) -> list[Path]:
    """Return the dependency files of ``tree`` in a stable order."""
    found = sorted(tree.glob("requirements*.txt")) + sorted(tree.glob("requirements/*.txt"))
    found += [tree / n for n in ("pyproject.toml", "setup.cfg", "setup.py")]
    return [p for p in found if _readable(p, tree)]


def read_dependencies(tree: Path) -> Dependencies:
    """Collect the requirements of ``tree``; the project's own name is never one of them."""
    files = dependency_files(tree)
    own: set[str] = set()
    found: list[Requirement] = []
    for path in files:
        rel = path.relative_to(tree).as_posix()
        if path.suffix == ".txt":
            lines = _requirements_txt(path, tree, seen=set())
        elif path.name == "pyproject.toml":
            lines, name = _pyproject(path)
            own |= {name} if name else set()
        elif path.name == "setup.cfg":
            lines, name = _setup_cfg(path)
            own |= {name} if name else set()
        else:
            lines, name = _setup_py(path)
            own |= {name} if name else set()
        found += [Requirement(line, rel) for line in lines]
    own_names = {_normal(n) for n in own}
    unique: dict[str, Requirement] = {}
    for req in found:
        if _normal(_name_of(req.text)) not in own_names:
            unique.setdefault(req.text, req)
    return Dependencies(
        files=tuple(p.relative_to(tree).as_posix() for p in files),
        requirements=tuple(r for r in unique.values() if not r.text.startswith(_LOCAL)),
        direct=tuple(r for r in unique.values() if is_direct(r.text)),
    )


_LOCAL = ("-", ".", "/", "~", "file:")


def _requirements_txt(path: Path, tree: Path, *, seen: set[Path], depth: int = 0) -> list[str]:
    # Files including each other past MAX_INCLUDE_DEPTH (pip itself has no limit) are not followed.
    if path in seen or depth > MAX_INCLUDE_DEPTH or not _readable(path, tree):
        return []
    seen.add(path)
    out: list[str] = []
    text = path.read_text(errors="replace").replace("\\\n", " ")
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if len(line) > MAX_REQUIREMENT:
            out.append(line)  # never parsed: kept apart as direct (is_direct), a pip reading it fails
            continue
        include = _option(line, ("-r", "--requirement"))
        if include:
            included = Path(os.path.normpath(path.parent / include[1]))
            out += _requirements_txt(included, tree, seen=seen, depth=depth + 1)
            continue
        editable = _option(line, ("-e", "--editable"))
        if editable:
            out.append(f"-e {editable[1]}")  # kept apart as direct: never the build's business
            continue
        if line in _SOURCES or _option(line, _SOURCES):
            out.append(line)  # kept apart as direct: the build chooses the index, never a file
            continue
        if not line or line.startswith("-"):
            continue  # pip options
        out.append(re.split(_OPTION, line, maxsplit=1)[0].strip())
    return out


def _pyproject(path: Path) -> tuple[list[str], str | None]:
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError):
        # A head file is the change's: arrays nested past the reader's depth are no requirements.
        return [], None
    project = _table(data.get("project"))  # a head file is the change's: any TOML value may be here
    lines = _strings(project.get("dependencies", []))
    for extra, reqs in _table(project.get("optional-dependencies")).items():
        if extra.lower() in TEST_EXTRAS:
            lines += _strings(reqs)
    # PEP 735 groups; {include-group = ...} entries are tables, skipped by _strings.
    for group, reqs in _table(data.get("dependency-groups")).items():
        if group.lower() in TEST_EXTRAS:
            lines += _strings(reqs)
    name = project.get("name")
    return lines, name if isinstance(name, str) else None


def _setup_cfg(path: Path) -> tuple[list[str], str | None]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(errors="replace"))
    except configparser.Error:
        return [], None
    lines = _cfg_list(parser.get("options", "install_requires", fallback=""))
    if parser.has_section("options.extras_require"):
        for extra, value in parser.items("options.extras_require"):
            if extra.lower() in TEST_EXTRAS:
                lines += _cfg_list(value)
    return lines, parser.get("metadata", "name", fallback=None)


def _setup_py(path: Path) -> tuple[list[str], str | None]:
    try:
        tree = parse_python(path.read_text(errors="replace"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Null bytes, or nesting past the parser's stack (a long `- - - ... 1` is a MemoryError).
        return [], None
    lines: list[str] = []
    name: str | None = None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called(node) == "setup"):
            continue
        for kw in node.keywords:
            value = _literal(kw.value)
            if kw.arg in ("install_requires", "tests_require"):
                lines += _strings(value)
            elif kw.arg == "extras_require":
                for extra, reqs in _table(value).items():
                    if extra.lower() in TEST_EXTRAS:
                        lines += _strings(reqs)
            elif kw.arg == "name" and isinstance(value, str):
                name = value
    return lines, name


def _called(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None  # computed at run time: best effort stops here


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return _cfg_list(value)
    if isinstance(value, list | tuple):
        return [_no_options(v) for v in value if isinstance(v, str) and _no_options(v)]
    return []


def _no_options(requirement: str) -> str:
    """A PEP 508 string as the build's requirements file gets it: no pip option after it.

    ``x==1 --global-option=...`` is a requirements-file line of pip's, never a PEP 508 string; a
    requirements file's own lines lose theirs the same way (``_requirements_txt``).
    """
    return re.split(_OPTION, requirement.strip(), maxsplit=1)[0].strip()


def _table(value: object) -> dict[str, object]:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def _cfg_list(value: str) -> list[str]:
    lines = (_no_options(line) for line in value.splitlines() if not line.strip().startswith("#"))
    return [line for line in lines if line]


def _name_of(requirement: str) -> str:
    match = _NAME.match(requirement)
    return match[1] if match else requirement


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
