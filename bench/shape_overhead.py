"""The shape layer's fixed checks on a real project beside the same tools run bare once (not a test).

A real library from its sdist (bench/isolation.py's pinned fetch; tests
split off) is the repository; two changes are made on its main branch, each
editing the same ``--files`` modules (the largest of the library): the
project's corpus bug where it has one, and a small typed function appended
to each. ``a`` is the first PR on that base, ``b`` another PR (or a push)
touching the same files. The shape layer runs as ``patchgate run`` runs it
(``run_shape`` with the CLI's ``DockerSandbox()``, two slots): on ``a``
with an empty cache, then on ``b`` with what ``a`` left in it, then on
``a`` again.

The bare side is what a developer would run: ruff, mypy, bandit and semgrep
once over the changed files at head, one after another, in ONE plain
container from the same environment image (root, no hardening, the tools'
own caches cold), with the very arguments and configuration the gate gives
them (each tool's own plan with no base files). Its figure is the tools'
own time inside that container.

Printed: each side's wall time, the ratio against the target (the gate <=
1.2x the bare tools), the gate's time per tool and its sandbox runs, the
bare time per tool, and the 1-minute load average beside each.

Usage: .venv/bin/python bench/shape_overhead.py [--project tomlkit,markdown] [--files 3]
       [--sdists DIR] [--slots 2] [--warm 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isolation import CORPUS, PROJECTS, fetch, unpack  # noqa: E402 - bench/isolation.py: pinned sdists

from checks.policy import Policy  # noqa: E402 - after the path set-up above
from checks.runner import LayerContext, Runner  # noqa: E402
from checks.shape import GATES, config, run_shape  # noqa: E402
from checks.shape.container import stage  # noqa: E402
from checks.shape.static import Targets, ToolGate, targets  # noqa: E402
from checks.workspace import Workspace, from_git  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402
from sandbox.envimage import ensure_env_image  # noqa: E402
from sandbox.host import run_process  # noqa: E402
from sandbox.spec import RunResult, RunSpec  # noqa: E402

TARGET = 1.2
TOOLS = ("ruff", "mypy", "bandit", "semgrep")
APPENDED = '''

def _bench_{tag}_{n}(values: list[int], scale: int = 2) -> dict[str, int]:
    """Sum and scale ``values`` (a change the benchmark adds)."""
    total = sum(v * scale for v in values)
    return {{"total": total, "count": len(values)}}
'''


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


@dataclass
class Recorder:
    """A Runner that passes every run to the real sandbox and notes how long each took inside."""

    inner: Runner
    runs: list[tuple[str, float]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, spec: RunSpec) -> RunResult:
        result = self.inner.run(spec)
        stage = next(m.source for m in spec.mounts if m.target == config.STAGE_MOUNT)
        plan = json.loads((stage / "plan.json").read_text())
        tool = "loads" if plan["mode"] == "loads" else str(plan["steps"][0]["argv"][0])
        trees = "+".join(Path(m.target).name for m in spec.mounts if m.target != config.STAGE_MOUNT)
        what = f"{tool}({trees})"
        with self._lock:
            self.runs.append((what, result.wall_s))
        return result


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}  # fmt: skip
    run_process(("git", "-C", str(repo), *args), env=env, check=True, timeout=120, what=f"git {args[0]}")


def make_repo(name: str, sdists: Path, work: Path, files: int) -> tuple[Path, list[str]]:
    """Return a git repository of the project with branches ``a`` and ``b``, and the files they change."""
    (project,) = [p for p in (*PROJECTS, *CORPUS) if p.name == name]
    tree, _, _ = unpack(fetch(project, sdists), project, work)
    git(tree, "init", "--quiet", "--initial-branch", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "--quiet", "-m", f"{name} {project.version} without its tests")
    library = [
        p for p in tree.rglob("*.py")
        if not any(part in ("tests", "test", "docs", "testing") for part in p.relative_to(tree).parts)
        and p.name not in ("setup.py", "conftest.py", "noxfile.py")
    ]  # fmt: skip
    chosen = sorted(library, key=lambda p: (-p.stat().st_size, str(p)))[:files]
    if project.bug is not None and (tree / project.bug.path) not in chosen:
        chosen = [tree / project.bug.path, *chosen[: files - 1]]
    paths = [str(p.relative_to(tree)) for p in chosen]
    for tag in ("a", "b"):
        git(tree, "checkout", "--quiet", "-B", tag, "main")
        for n, path in enumerate(paths):
            text = (tree / path).read_text()
            if project.bug is not None and path == project.bug.path and tag == "a":
                text = text.replace(project.bug.original, project.bug.mutated, 1)
            (tree / path).write_text(text + APPENDED.format(tag=tag, n=n))
        git(tree, "commit", "--quiet", "-am", f"change {tag}")
    return tree, paths


def gate(
    ws: Workspace, image: str, box: DockerSandbox, cache: Any
) -> tuple[float, dict[str, float], Recorder, str]:
    """Run the shape layer as `patchgate run` does; return its wall time, each tool's and the runs."""
    recorder = Recorder(box)
    ctx = LayerContext(ws, Policy(), recorder, image)
    started = time.perf_counter()
    result = run_shape(ctx, cache=cache) if cache is not None else run_shape(ctx)
    wall = time.perf_counter() - started
    seconds = {t.tool: t.seconds for t in result.tools}
    errors = [f"{t.tool}: {t.detail[:200]}" for t in result.tools if t.status == "error"]
    return wall, seconds, recorder, f"{result.status}" + (f" ({'; '.join(errors)})" if errors else "")


def bare(ws: Workspace, image: str, keep: Path) -> dict[str, float]:
    """Run each tool once over the changed files at head in one plain container; return each one's time."""
    files = targets(ws)
    head_only = Targets(files.head, (), {}, files.unsafe)
    steps: list[dict[str, object]] = []
    for name in TOOLS:
        tool_gate = GATES[name]
        assert isinstance(tool_gate, ToolGate)
        for step in tool_gate.tool.plan(ws, head_only).steps:
            steps.append({**step, "name": f"{name}:{step['name']}"})
    mounts = {config.BASE_MOUNT: ws.base_dir, config.HEAD_MOUNT: ws.head_dir}
    for extra in ("TREE_MOUNT",):  # where a tool mounts the tree it checks, when not by side
        if hasattr(config, extra):
            mounts[getattr(config, extra)] = ws.head_dir
    with stage() as staged:
        (staged / "plan.json").write_text(json.dumps({"mode": "batch", "steps": steps}))
        shutil.copytree(staged, keep / "stage", dirs_exist_ok=True)
    argv = ["docker", "run", "--rm", "--network", "none", "--user", "0", "--workdir", "/tmp",  # noqa: S108
            "-e", "SEMGREP_ENABLE_VERSION_CHECK=0", "-e", "SEMGREP_SEND_METRICS=off",
            "-v", f"{keep / 'stage'}:{config.STAGE_MOUNT}:ro"]  # fmt: skip
    for target, source in mounts.items():
        argv += ["-v", f"{source}:{target}:ro"]
    argv += [image, "python3", "-I", f"{config.STAGE_MOUNT}/probe.py", f"{config.STAGE_MOUNT}/plan.json"]
    done = run_process(argv, check=True, timeout=3600, output_cap=256 * 1024 * 1024, what="the bare run")
    out: dict[str, float] = {}
    for name, batches in json.loads(done.stdout)["steps"].items():
        tool = name.split(":", 1)[0]
        out[tool] = out.get(tool, 0.0) + sum(float(b["seconds"]) for b in batches)
    return out


def measure(name: str, sdists: Path, work: Path, files: int, *, slots: int, warm: int) -> list[float]:
    repo, paths = make_repo(name, sdists, work, files)
    print(f"{name}: {len(paths)} changed files ({', '.join(paths)})", flush=True)
    cached = "cache" in inspect.signature(run_shape).parameters
    cache = None
    if cached:
        from checks.shape.cache import ShapeCache
        from sandbox.images import image_id

        cache = ShapeCache(work / "shape-cache", identify=image_id)
    # With --warm, one sandbox for the three jobs, as a worker keeps one (its pool then has the shapes a
    # job ran before made ahead); without it, a sandbox per job, as each `patchgate run` process has.
    shared = DockerSandbox(max_concurrency=slots, warm=warm) if warm else None
    ratios = []
    for label, head in (("a, first PR on the base", "a"), ("b, the same files again", "b"),
                        ("a again", "a")):  # fmt: skip
        dest = work / f"ws-{label[0]}-{len(ratios)}"
        ws = from_git(repo, "main", head, dest)
        image = ensure_env_image(ws.base_dir)
        box = shared or DockerSandbox(max_concurrency=slots)
        wall, seconds, recorder, status = gate(ws, image, box, cache)
        print(f"  {label}: shape {wall:6.1f} s -> {status}  ({load()})", flush=True)
        print("    per tool: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
        inside = sum(s for _, s in recorder.runs)
        print(f"    {len(recorder.runs)} sandbox runs, {inside:.1f} s inside: "
              + ", ".join(f"{what} {seconds:.1f}" for what, seconds in recorder.runs))  # fmt: skip
        keep = work / f"bare-{len(ratios)}"
        keep.mkdir()
        tools = bare(ws, image, keep)
        bare_s = sum(tools.values())
        ratio = wall / bare_s
        ratios.append(ratio)
        print(f"    bare once over the head files: {bare_s:6.1f} s  ({load()}): "
              + ", ".join(f"{k} {v:.1f}" for k, v in tools.items()))  # fmt: skip
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"    ratio {ratio:.2f}x against the <= {TARGET:.1f}x target: {verdict}", flush=True)
        shutil.rmtree(dest, ignore_errors=True)
    if shared is not None:
        shared.close()
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--project", default="tomlkit,markdown")
    parser.add_argument("--files", type=int, default=3, help="modules each change edits")
    parser.add_argument("--sdists", type=Path, default=Path(tempfile.gettempdir()) / "patchgate-bench-sdists")
    parser.add_argument("--slots", type=int, default=2, help="sandbox runs at once (`patchgate run`: 2)")
    parser.add_argument("--keep", type=Path, help="keep the repositories and plans here")
    parser.add_argument(
        "--warm",
        type=int,
        default=0,
        help="containers made ahead per shape; one sandbox for the jobs (a worker's: 1)",
    )
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; target: the shape layer <= {TARGET:.1f}x the tools bare once")
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="patchgate-shape-overhead-"))
    scratch.mkdir(parents=True, exist_ok=True)
    scratch.chmod(0o755)
    summary = {}
    try:
        for name in args.project.split(","):
            work = scratch / name
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            summary[name] = measure(name, args.sdists, work, args.files, slots=args.slots, warm=args.warm)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    for name, ratios in summary.items():
        print(f"{name}: " + ", ".join(f"{r:.2f}x" for r in ratios) + f"  (target <= {TARGET:.1f}x)")


if __name__ == "__main__":
    main()
