"""What the shared mypy cache saves: prints numbers (not a test).

The mypy gate checks the base tree, then the head tree, in one container, with
one incremental cache: the head's run reuses the analysis of the standard
library and the dependencies. This runs the gate on one change both ways,
shared (what ships) and cold (every run with ``--no-incremental`` and its own
cache), checks both find the same errors, and prints the two wall times of
the mypy container and their ratio.

Usage: .venv/bin/python bench/mypy_cache.py [--repeat 3] [--modules 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.policy import Policy  # noqa: E402
from checks.runner import LayerContext  # noqa: E402 - after the path set-up above
from checks.shape import mypy as mypy_gate  # noqa: E402
from checks.shape import run_shape  # noqa: E402
from checks.workspace import from_git  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402
from sandbox.host import run_process  # noqa: E402
from sandbox.images import ensure_base_image  # noqa: E402

# Heavy corners of the standard library: what a real project's imports cost mypy.
IMPORTS = (
    "import asyncio, email.message, http.server, json, logging.handlers, multiprocessing, sqlite3\n"
    "import unittest.mock, concurrent.futures, urllib.request, xml.etree.ElementTree, pydoc, tkinter\n"
)


def module(i: int, broken: bool) -> str:
    body = "return str(x)" if not broken else "return x"
    return f"{IMPORTS}\n\ndef f{i}(x: int) -> str:\n    {body}\n"


def make_change(root: Path, modules: int) -> Path:
    repo = root / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        run_process(("git", "-C", str(repo), *args), check=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "bench@example.com")
    git("config", "user.name", "bench")
    for i in range(modules):
        (repo / f"m{i}.py").write_text(module(i, broken=False))
    git("add", "-A")
    git("commit", "-qm", "base")
    git("checkout", "-qb", "pr")
    for i in range(0, modules, 2):
        (repo / f"m{i}.py").write_text(module(i, broken=True))
    git("commit", "-qam", "head")
    return repo


def cold(plan: Any) -> Any:
    """The same plan, every step with --no-incremental and a cache of its own."""
    for step in plan.steps:
        argv = list(step["argv"])
        at = argv.index("--cache-dir")
        argv[at + 1] = f"{argv[at + 1]}-{step['name']}"
        step["argv"] = [argv[0], "--no-incremental", *argv[1:]]
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modules", type=int, default=20)
    args = parser.parse_args()
    image = ensure_base_image()
    sandbox = DockerSandbox()
    tool = mypy_gate.gate.tool  # type: ignore[attr-defined]
    shipped_plan = tool.plan
    with tempfile.TemporaryDirectory(prefix="patchgate-bench-") as tmp:
        repo = make_change(Path(tmp), args.modules)
        ws = from_git(repo, "main", "pr", Path(tmp) / "ws")
        ctx = LayerContext(ws, Policy(), sandbox, image)
        times: dict[str, list[float]] = {"shared": [], "cold": []}
        found: dict[str, set[tuple[str, int, str]]] = {}
        for _ in range(args.repeat):
            for name in ("shared", "cold"):
                tool.plan = (lambda w, f: cold(shipped_plan(w, f))) if name == "cold" else shipped_plan
                started = time.perf_counter()
                result = run_shape(ctx, gates=("mypy",))
                times[name].append(time.perf_counter() - started)
                [run] = result.tools
                assert run.status == "ok", run.detail
                found[name] = {(f.path, f.start_line, f.rule) for f in result.findings if f.introduced}
        tool.plan = shipped_plan
    assert found["shared"] == found["cold"], found
    shared, cold_s = statistics.median(times["shared"]), statistics.median(times["cold"])
    print(f"changed modules: {args.modules} ({len(found['shared'])} new errors, the same both ways)")
    print(f"mypy gate, shared cache (ships): median {shared:.2f} s")
    print(f"mypy gate, cold runs:            median {cold_s:.2f} s")
    print(f"ratio cold / shared: {cold_s / shared:.2f}x")


if __name__ == "__main__":
    main()
