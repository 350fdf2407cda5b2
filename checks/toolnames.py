"""The top-level names the grader's side of a behaviour run brings, as the host can tell them.

The standard library's, and those of the sandbox image's tools
(``sandbox/images/tools-requirements.txt``: pytest, coverage.py, ...) with
every distribution they depend on, read from the metadata of the copies
installed beside patchgate (the image pins the same tools). A module of the
change named like one of them is something a maintainer should see
(``checks/shape/hygiene/gate.py``): the behaviour layer never lets such a name
replace the tool (``checks/behaviour/incontainer/grader/names.py``), so the
module is tested only where the suite imports it, or not at all.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import sys
from pathlib import PurePosixPath

from sandbox.images import TOOLS_REQUIREMENTS

STDLIB = frozenset(sys.stdlib_module_names)
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def top_level(path: str) -> str | None:
    """Return the top-level module name a tree path belongs to (``src/`` layouts too), if importable."""
    parts = PurePosixPath(path).parts
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    first = parts[0] if parts else ""
    name = first[:-3] if len(parts) == 1 and first.endswith(".py") else first
    return name if _IDENTIFIER.match(name) and (len(parts) > 1 or first.endswith(".py")) else None


def _requirement_names(lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines if (m := _NAME.match(line.split("#", 1)[0]))]


def _top_level(dist: importlib.metadata.Distribution) -> set[str]:
    names: set[str] = set()
    for path in dist.files or []:
        top = path.parts[0] if path.parts else ""
        stem = top[:-3] if top.endswith(".py") else top.partition(".")[0] if top.endswith(".so") else top
        if stem.isidentifier() and stem != "__pycache__":
            names.add(stem)
    return names


@functools.cache
def tool_names() -> frozenset[str]:
    """Return the top-level names of the grader's tools and their dependencies (stdlib aside)."""
    pending = _requirement_names(TOOLS_REQUIREMENTS.read_text(encoding="utf-8").splitlines())
    seen: set[str] = set()
    found: set[str] = set()
    while pending:
        name = pending.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            found.add(name.replace("-", "_"))  # not installed here: its name is the usual guess
            continue
        found |= _top_level(dist)
        # Only what the tool needs at run time (no extras): `foo; extra == "dev"` is left out.
        pending += _requirement_names([r for r in dist.requires or [] if "extra ==" not in r])
    return frozenset(found - STDLIB)
