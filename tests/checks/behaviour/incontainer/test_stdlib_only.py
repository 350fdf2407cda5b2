"""The in-container package runs under the sandbox image's python3: standard library, pytest, coverage.py.

Hypothesis too, in the grader's differential modules only: the subject never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from checks.behaviour.plan import INCONTAINER

# pytest and coverage.py are in the sandbox image's tools layer (sandbox/images/tools-requirements.txt).
TOOLS = {"pytest", "_pytest", "pluggy", "coverage"}
ALLOWED = frozenset(sys.stdlib_module_names) | TOOLS | {"patchgate_harness"}
# Hypothesis (sandbox/images/tools-requirements.txt) draws a differential check's inputs, in the grader.
GRADER_ONLY = {"hypothesis"}


def imports(path: Path) -> list[tuple[int, str]]:
    """Return (line, top-level module) for every absolute import in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.partition(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.partition(".")[0]))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value.partition(".")[0]))
    return found


@pytest.mark.parametrize(
    "path", sorted(INCONTAINER.rglob("*.py")), ids=lambda p: str(p.relative_to(INCONTAINER))
)
def test_imports_nothing_outside_the_standard_library_and_pytest(path: Path) -> None:
    allowed = ALLOWED | GRADER_ONLY if path.relative_to(INCONTAINER).parts[0] == "grader" else ALLOWED
    outside = [(line, name) for line, name in imports(path) if name not in allowed]
    assert outside == [], f"{path.name} imports {outside}: the sandbox image has no patchgate"


def test_the_check_itself_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom checks.policy import Policy\nimport yaml\n")
    assert [n for _, n in imports(bad) if n not in ALLOWED] == ["checks", "yaml"]
