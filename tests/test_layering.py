"""The layer contracts of .importlinter hold, and a violation really fails lint-imports.

scripts/test.sh runs lint-imports on the tree; these tests run it on a copy of
the tree with one forbidden import added, so a contract that stopped checking
(a renamed package, a mistyped module, a broad ignore) cannot pass unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("bot", "checks", "sandbox", "rubrics")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Return a copy of the four packages and the contracts, checked in place of the real ones."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH first: the copy, not the installed checkout, is what gets analysed.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        check=False,
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def add_import(tree: Path, module: str, statement: str) -> None:
    path = tree / module
    path.write_text(path.read_text() + f"\n{statement}  # added by the test\n")


def test_the_tree_keeps_every_contract(tree: Path) -> None:
    done = lint(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "11 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "statement", "broken"),
    [
        # checks imports upward into bot
        ("checks/decide.py", "import bot.settings", "layers: bot > checks > sandbox"),
        # sandbox imports checks: both the layers and the sandbox contract break
        ("sandbox/spec.py", "import checks.report", "sandbox imports neither bot nor checks"),
        # one layer imports another
        ("checks/behaviour/grade.py", "import checks.quality.evidence", "shape, behaviour and quality"),
        ("checks/shape/thresholds.py", "import checks.behaviour.errors", "shape, behaviour and quality"),
        # the store imports the worker side, the GitHub client the store: against the flow
        ("bot/store/leases.py", "import bot.service.queue", "bot: cli > web > service > store > github"),
        ("bot/github/checkrun.py", "import bot.store.tables", "bot: cli > web > service > store > github"),
        # a module outside the store talks to the database itself
        ("bot/service/judging.py", "import sqlalchemy", "only bot.store imports SQLAlchemy"),
        # a third-party library outside the module that owns it
        ("bot/service/worker.py", "import docker", "only sandbox imports the Docker SDK"),
        ("checks/quality/review.py", "import litellm", "only checks.quality.judge imports litellm"),
        ("bot/service/job.py", "import fastapi", "only bot.web imports FastAPI"),
        ("bot/cli/commands/demo.py", "import jinja2", "only bot.web imports FastAPI, Starlette and Jinja2"),
        ("bot/service/suitesgithub.py", "import githubkit", "only bot.github imports githubkit"),
        ("bot/web/routes.py", "import githubkit_schemas", "only bot.github imports githubkit"),
        # inside checks: the core reaching up into a layer, a layer into the pipeline or render
        ("checks/report.py", "import checks.shape.gate", "checks: pipeline > best of k"),
        ("checks/behaviour/plan.py", "import checks.pipeline", "checks: pipeline > best of k"),
        ("checks/quality/judge.py", "import checks.render.markdown", "checks: pipeline > best of k"),
        ("checks/policy.py", "import checks.testinfra.guarded", "checks: pipeline > best of k"),
        ("checks/render/markdown.py", "import checks.bestofk.ranking", "checks: pipeline > best of k"),
        ("checks/testinfra/files.py", "import checks.shape.gate", "checks: pipeline > best of k"),
        # a module called pure doing I/O itself
        ("checks/decide.py", "import subprocess", "the modules docs/architecture.md calls pure"),
        ("bot/github/checkrun.py", "import bot.github.client", "the modules docs/architecture.md calls pure"),
        # any sandbox module, not only the ones that talk to the engine today
        ("bot/github/linked.py", "import sandbox.reaper", "the modules docs/architecture.md calls pure"),
    ],
)
def test_an_import_against_a_contract_fails_lint_imports(
    tree: Path, module: str, statement: str, broken: str
) -> None:
    add_import(tree, module, statement)
    done = lint(tree)
    assert done.returncode != 0, done.stdout
    assert "BROKEN" in done.stdout
    # The report names the contract and the import that broke it.
    broken_section = done.stdout.partition("Broken contracts")[2]
    assert broken in broken_section, done.stdout
    assert statement.removeprefix("import ") in broken_section, done.stdout
