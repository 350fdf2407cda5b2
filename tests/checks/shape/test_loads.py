"""The loads gate: what it plans to compile and import, and real runs on a passing and a failing PR."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.report import ShapeResult
from checks.shape.container import LoadRecord
from checks.shape.loads import plan_items, to_finding
from tests.checks.shape.conftest import make_ws, of


def test_plan_items_pairs_head_files_with_their_base(tmp_path: Path) -> None:
    ws = make_ws(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": "A = 1\n", "pkg/old.py": "O = 1\n", "gone.py": "G = 1\n"},
        {
            "pkg/a.py": "A = 2\n",
            "pkg/old.py": None,
            "pkg/new.py": "O = 1\n",
            "gone.py": None,
            "tests/test_x.py": "def test_x():\n    pass\n",
            "src/lib/__init__.py": "",
            "README.md": "x",
            "blob.py": b"X = 1\n\x00\x01",
        },
    )
    items = {i["path"]: i for i in plan_items(ws)}
    assert set(items) == {"pkg/a.py", "pkg/new.py", "tests/test_x.py", "src/lib/__init__.py", "blob.py"}
    assert items["pkg/a.py"]["module"] == "pkg.a"
    assert items["pkg/a.py"]["base"] == {
        "path": "pkg/a.py", "tree": "/src/base", "module": "pkg.a", "root": "/src/base",
    }  # fmt: skip
    # A rename is compared with the file it came from.
    assert items["pkg/new.py"]["base"]["path"] == "pkg/old.py"
    assert items["tests/test_x.py"]["module"] is None
    assert "base" not in items["tests/test_x.py"]
    src = items["src/lib/__init__.py"]
    assert (src["module"], src["root"]) == ("lib", "/src/head/src")
    # Git calls it binary (a NUL byte); Python still reads it, so it is compiled.
    assert items["blob.py"]["module"] == "blob"


@pytest.mark.parametrize(
    ("kind", "rule"),
    [("syntax", "syntax-error"), ("import", "import-error"), ("exit", "import-exit"),
     ("crash", "import-crash"), ("timeout", "import-timeout"), ("weird", "load-error")],
)  # fmt: skip
def test_to_finding(kind: str, rule: str) -> None:
    f = to_finding(LoadRecord(side="head", path="a.py", kind=kind, line=3, message="m"))
    assert (f.tool, f.rule, f.start_line, f.severity) == ("loads", rule, 3, "error")


@pytest.mark.docker
def test_loads_passes_a_pr_whose_modules_import(scenario: dict[str, ShapeResult]) -> None:
    good = scenario["good"]
    run = next(t for t in good.tools if t.tool == "loads")
    assert run.status == "ok", run.detail
    assert of(good, "loads") == []
    # pkg/needs_env.py failed to import at base too (KeyError: 'DEMO_TOKEN'): pre-existing.
    # scripts/run.py would exit if imported: it is compiled only.
    assert "5 file(s) compiled, 3 of them importable" in run.detail


@pytest.mark.docker
def test_loads_fails_modules_that_do_not_compile_or_import(scenario: dict[str, ShapeResult]) -> None:
    bad = scenario["bad"]
    run = next(t for t in bad.tools if t.tool == "loads")
    assert run.status == "ok", run.detail
    found = {f.path: (f.rule, f.start_line) for f in of(bad, "loads")}
    assert found["pkg/broken_import.py"] == ("import-error", 1)
    assert found["pkg/undefined_call.py"] == ("import-error", 5)
    assert found["pkg/exits.py"] == ("import-exit", 3)
    assert found["pkg/hard_exit.py"][0] == "import-crash"
    assert found["pkg/hangs.py"][0] == "import-timeout"
    assert found["pkg/syntax.py"] == ("syntax-error", 1)
    # Invalid UTF-8 is a finding, not a crash of the gate.
    assert found["pkg/latin.py"][0] == "syntax-error"
    assert "pkg/core.py" not in found
    assert "new load failure" in run.detail
