"""Shape-layer fixtures: one sandbox per session, and two PRs against one base run once each.

The ``good`` PR should pass every tool gate, the ``bad`` PR should fail every
one of them; each gate's test module asserts on its own part of the two
results, so the whole layer costs two runs of the real sandbox. The hygiene
gate needs no sandbox: ``gate`` runs it on a real git change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from textwrap import dedent

import pytest

from checks.policy import Policy
from checks.report import Finding, ShapeResult
from checks.runner import LayerContext
from checks.shape import loads, run_shape
from checks.shape.gate import GateResult
from checks.shape.hygiene.gate import HygieneGate
from checks.workspace import Workspace, from_git
from sandbox.docker import DockerSandbox
from sandbox.engine import engine_available
from sandbox.host import run_process
from sandbox.images import ensure_base_image
from tests.conftest import GitRepo
from tests.fakes.runners import NoRunner

TOOL_GATES = ("loads", "ruff", "mypy", "bandit", "semgrep")

BASE_FILES: dict[str, str | bytes | None] = {
    "pyproject.toml": (
        '[project]\nname = "demo"\nversion = "0"\n\n'
        "[tool.ruff.lint]\n"
        'select = ["F", "E711"]\n'
        "# The maintainers do not mind unused imports: a PR adding one passes ruff.\n"
        'ignore = ["F401"]\n\n'
        "[tool.mypy]\nignore_missing_imports = true\ncheck_untyped_defs = true\n"
    ),
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "import subprocess\n\n\n"
        "def parse(text):\n"
        "    try:\n"
        "        return int(text)\n"
        "    except Exception:\n"
        "        pass\n\n\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
    ),
    "pkg/util.py": "def double(x: int) -> int:\n    return 2 * x\n",
    # Already fails to import at base (needs a setting the sandbox does not have).
    "pkg/needs_env.py": 'import os\n\nTOKEN = os.environ["DEMO_TOKEN"]\n',
}

GOOD_FILES: dict[str, str | bytes | None] = {
    # Lines added above the pre-existing `except Exception: pass` shift it down.
    "pkg/core.py": (
        '"""Core helpers."""\n\n'
        "# Shifts every line below; the pre-existing finding must stay pre-existing.\n"
        "import os\n"
        "import subprocess\n\n\n"
        "def parse(text):\n"
        "    try:\n"
        "        return int(text)\n"
        "    except Exception:\n"
        "        pass\n\n\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n\n\n"
        "def triple(x: int) -> int:\n"
        "    return 3 * x\n"
    ),
    "pkg/extra.py": (
        "from pkg.util import double\n\n\ndef quad(x: int) -> int:\n    return double(double(x))\n"
    ),
    "pkg/needs_env.py": (
        'import os\n\nTOKEN = os.environ["DEMO_TOKEN"]\n\n\n'
        "def token_length() -> int:\n    return len(TOKEN)\n"
    ),
    "tests/test_extra.py": "from pkg.extra import quad\n\n\ndef test_quad():\n    assert quad(1) == 4\n",
    # A script: compiled, never imported (it would exit).
    "scripts/run.py": "import sys\n\nsys.exit(0)\n",
}

BAD_FILES: dict[str, str | bytes | None] = {
    # The PR tries to configure the gate: every line of this must have no effect.
    "pyproject.toml": (
        '[project]\nname = "demo"\nversion = "0"\n\n'
        "[tool.ruff.lint]\n"
        'select = ["F", "E711"]\n'
        'ignore = ["F401"]\n'
        'per-file-ignores = {"*" = ["F821", "E711"]}\n\n'
        "[tool.mypy]\nignore_missing_imports = true\nignore_errors = true\n"
        'plugins = ["evil_plugin"]\n\n'
        '[tool.bandit]\nskips = ["B602", "B608", "B110"]\n'
    ),
    "evil_plugin.py": 'raise RuntimeError("the PR\'s mypy plugin was loaded")\n',
    ".semgrepignore": "*\n",
    ".bandit": "[bandit]\nskips = B602,B608,B110\n",
    "pkg/ruff.toml": '[lint]\nignore = ["F", "E"]\n',
    "pkg/core.py": (
        "import sqlite3\n"
        "import subprocess\n\n\n"
        "def parse(text):\n"
        "    try:\n"
        "        return int(text)\n"
        "    except Exception:\n"
        "        pass\n\n\n"
        "def add(a: int, b: int) -> int:\n"
        '    return "a"\n\n\n'
        "def is_missing(x):\n"
        "    return x == None\n\n\n"
        "def call():\n"
        "    return undefined_helper()\n\n\n"
        "def archive(name):\n"
        '    subprocess.run(f"tar czf {name}.tgz {name}", shell=True)\n\n\n'
        "def find(conn: sqlite3.Connection, name: str) -> object:\n"
        "    return conn.execute(f\"SELECT * FROM users WHERE name = '{name}'\").fetchall()\n\n\n"
        "def load(path):\n"
        "    try:\n"
        "        return open(path).read()\n"
        "    except Exception:\n"
        "        return None\n"
    ),
    "pkg/duration.py": (
        "import re\n\n\n"
        "def seconds(text: str) -> int:\n"
        '    m = re.match(r"(\\d+h)?(\\d+m)?(\\d+s)?", text)\n'
        "    if not m:\n"
        '        raise ValueError(f"bad duration {text!r}")\n'
        "    return 0\n"
    ),
    "pkg/broken_import.py": "from pkg.util import missing_name\n",
    "pkg/undefined_call.py": "def helper():\n    return 1\n\n\nVALUE = helpr()\n",
    "pkg/exits.py": "import sys\n\nsys.exit(3)\n",
    "pkg/hard_exit.py": "import os\n\nos._exit(0)\n",
    "pkg/hangs.py": "import time\n\ntime.sleep(600)\n",
    "pkg/syntax.py": "def f(:\n    pass\n",
    "pkg/latin.py": b"NAME = '\xff\xfe caf\xe9'\n",
    "data.bin": b"\x00\x01\x02 binary",
    # Names built to be read as options (bandit would take `-cx.py` as `-c x.py`, a
    # config file that is valid YAML and valid Python) or to split an argument file.
    "-cx.py": 'skips: ["B602", "B608", "B110"]\n',
    "pkg/two\nlines.py": "X = 1\n",
}


@pytest.fixture(scope="session")
def shape_image() -> str:
    """The sandbox base image (it carries the tools), built once per session."""
    if not engine_available():
        pytest.skip("no Docker engine is reachable; scripts/engine.sh starts one")
    return ensure_base_image()


@pytest.fixture(scope="session")
def shape_sandbox(shape_image: str) -> Iterator[DockerSandbox]:
    box = DockerSandbox(max_concurrency=2, labels={"patchgate.test-session": uuid.uuid4().hex})
    yield box
    box.client().close()


def make_ws(
    root: Path, base: Mapping[str, str | bytes | None], head: Mapping[str, str | bytes | None]
) -> Workspace:
    """Commit ``base`` on main and ``head`` on a branch ``pr``; return the exported workspace."""
    repo = GitRepo(root / "repo")
    repo.commit("base", base)
    repo.branch("pr")
    repo.commit("head", head)
    return from_git(repo.path, "main", "pr", root / "ws")


def fast_branch(repo: GitRepo, branch: str, files: dict[str, bytes]) -> None:
    """Commit ``files`` on top of main as ``branch`` without writing them to disk (git fast-import).

    Ten thousand small files through the work tree and `git add` take most of a
    minute on a slow disk; fast-import takes a second or two.
    """
    stream = [f"commit refs/heads/{branch}\ncommitter t <t@example.com> 0 +0000\ndata 4\nmany\n".encode()]
    stream.append(b"from refs/heads/main\n")
    for path, data in files.items():
        stream.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    run_process(("git", "-C", str(repo.path), "fast-import", "--quiet"), stdin=b"".join(stream), check=True)


@pytest.fixture(scope="session")
def scenario(
    tmp_path_factory: pytest.TempPathFactory, shape_sandbox: DockerSandbox, shape_image: str
) -> dict[str, ShapeResult]:
    """Run the tool gates on the good and the bad PR once for the whole session."""
    results = {}
    for name, head in (("good", GOOD_FILES), ("bad", BAD_FILES)):
        ws = make_ws(tmp_path_factory.mktemp(name), BASE_FILES, head)
        ctx = LayerContext(ws, Policy(), shape_sandbox, shape_image)
        # A module that hangs at import costs the import timeout; keep it short here.
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(loads.gate, "import_timeout_s", 4.0)
            results[name] = run_shape(ctx, gates=TOOL_GATES)
    return results


def of(result: ShapeResult, tool: str, *, introduced: bool = True) -> list[Finding]:
    """Return ``tool``'s findings in ``result`` (the introduced ones by default)."""
    return [f for f in result.findings if f.tool == tool and f.introduced == introduced]


def rules_at(result: ShapeResult, tool: str) -> set[tuple[str, str]]:
    """Return (path, rule) of ``tool``'s introduced findings."""
    return {(f.path, f.rule) for f in of(result, tool)}


# --- the hygiene gate on real git changes (it reads files and never runs a sandbox)

Files = dict[str, str | bytes | None]
Found = list[tuple[str, str, int]]
Gate = Callable[[Files, Files], GateResult]


def src(text: str) -> str:
    return dedent(text).lstrip("\n")


@pytest.fixture
def gate(git_repo: GitRepo, tmp_path: Path) -> Gate:
    """Commit ``base`` on main and ``head`` on a pr branch, then run the gate on the change."""

    def run(base: Files, head: Files) -> GateResult:
        git_repo.commit("base", {"README.md": "x\n", **base})
        git_repo.branch("pr")
        git_repo.commit("pr", head)
        ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
        return HygieneGate().run(LayerContext(ws, Policy(), NoRunner("the hygiene gate"), image="never-used"))

    return run


def found(result: GateResult) -> Found:
    return [(f.rule, f.path, f.start_line) for f in result.findings]
