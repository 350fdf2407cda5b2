"""Shape results kept across jobs: by content only, written only from runs that held no PR content.

A fake runner plays semgrep, bandit and mypy from the files the run mounts
(a line holding ``BAD`` is a finding), so what each sandbox run could see is
checked, not assumed: a run whose results are kept must mount the base tree
alone. The last tests run the real tools in the real sandbox, with and
without the cache, and compare.
"""

from __future__ import annotations

import functools
import io
import json
import tarfile
import threading
from pathlib import Path
from typing import Any

import pytest

from checks.policy import Policy
from checks.report import Finding, ShapeResult
from checks.runner import LayerContext
from checks.shape import run_shape, semgrep
from checks.shape.cache import ShapeCache, config_digest, file_digest
from checks.shape.config import BASE_MOUNT, HEAD_MOUNT, STAGE_MOUNT, TREE_MOUNT
from checks.shape.mypy import SEED_IN, SEED_OUT
from checks.shape.static import Plan, Targets, ToolGate, targets
from checks.workspace import Workspace, from_git
from sandbox.docker import DockerSandbox
from sandbox.spec import RunResult, RunSpec
from tests.checks.shape.conftest import BAD_FILES, BASE_FILES, GOOD_FILES, make_ws
from tests.checks.test_hostfiles import at_once
from tests.conftest import GitRepo

GATES = ("mypy", "bandit", "semgrep")
BASE = {"pkg/__init__.py": "", "pkg/a.py": "A = 1  # BAD\n", "pkg/b.py": "B = 2\n", "pkg/c.py": "C = 3\n"}


def _tar(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


class FakeTools:
    """A Runner answering semgrep, bandit and mypy probe plans from the files each run mounts."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, RunSpec, dict[str, Any]]] = []
        # The mypy cache each run was given, read while the run lasts.
        self.seeds: list[bytes | None] = []
        self.lock = threading.Lock()

    def run(self, spec: RunSpec) -> RunResult:
        mounts = {m.target: m.source for m in spec.mounts}
        plan = json.loads((mounts[STAGE_MOUNT] / "plan.json").read_text())
        tool = str(plan["steps"][0]["argv"][0])
        seed = next((m.source.read_bytes() for m in spec.copy_in if m.target == SEED_IN), None)
        with self.lock:
            self.specs.append((tool, spec, plan))
            if tool == "mypy":
                self.seeds.append(seed)
        steps = {step["name"]: [self._batch(tool, step, mounts)] for step in plan["steps"]}
        files = {}
        if "pack" in plan:
            seeded = any(m.target == SEED_IN for m in spec.copy_in)
            files[SEED_OUT] = _tar({"cache.db": b"seeded" if seeded else b"cold"})
        return RunResult(0, json.dumps({"steps": steps}).encode(), b"", 0.25, files=files)

    def _batch(self, tool: str, step: dict[str, Any], mounts: dict[str, Path]) -> dict[str, Any]:
        hits: list[tuple[str, int]] = []
        for target in step["files"]:
            path = f"{step['cwd']}/{target}".replace("/./", "/")
            root = max((t for t in mounts if path.startswith(f"{t}/")), key=len)
            rel = path[len(root) + 1 :]
            lines = (mounts[root] / rel).read_text().splitlines()
            hits += [(target, n) for n, line in enumerate(lines, 1) if "BAD" in line]
        if tool == "semgrep":
            results = [{"check_id": "rules.bad", "path": t, "start": {"line": n}, "end": {"line": n},
                        "extra": {"message": "bad", "severity": "ERROR"}} for t, n in hits]  # fmt: skip
            out: object = {"results": results, "errors": [], "paths": {"scanned": step["files"]}}
        elif tool == "bandit":
            issues = [{"filename": t, "line_number": n, "test_id": "B999", "issue_severity": "HIGH",
                       "issue_text": "bad"} for t, n in hits]  # fmt: skip
            out = {"results": issues, "errors": [], "metrics": {t: {} for t in step["files"]}}
        else:
            out = "\n".join(json.dumps({"file": t, "line": n, "message": "m", "code": "c"}) for t, n in hits)
        stdout = out if isinstance(out, str) else json.dumps(out)
        return {"exit_code": 1 if hits and tool != "semgrep" else 0, "stdout": stdout, "stderr": ""}

    def runs(self, tool: str) -> list[tuple[RunSpec, dict[str, Any]]]:
        return [(spec, plan) for t, spec, plan in self.specs if t == tool]


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("base", BASE)
    return repo


def change(repo: GitRepo, branch: str, files: dict[str, str | bytes | None], dest: Path) -> Workspace:
    repo.branch(branch, "main")
    repo.commit(branch, files)
    return from_git(repo.path, "main", branch, dest)


def shape(ws: Workspace, runner: FakeTools, cache: ShapeCache | None) -> ShapeResult:
    return run_shape(LayerContext(ws, Policy(), runner, "image"), gates=GATES, cache=cache)


def seen(result: ShapeResult) -> set[tuple[str, str, int, bool]]:
    return {(f.tool, f.path, f.start_line, f.introduced) for f in result.findings}


def head_of(spec: RunSpec) -> bool:
    return any(m.target in (HEAD_MOUNT, TREE_MOUNT) and m.source.name == "head" for m in spec.mounts)


def test_a_base_file_is_examined_once_across_jobs(repo: GitRepo, tmp_path: Path) -> None:
    cache = ShapeCache(tmp_path / "cache")
    edits: dict[str, str | bytes | None] = {"pkg/a.py": "A = 1  # BAD\nD = 4  # BAD\n", "pkg/b.py": "B = 3\n"}
    first = change(repo, "pr1", edits, tmp_path / "1")
    second = change(repo, "pr2", {"pkg/a.py": "A = 5  # BAD\n"}, tmp_path / "2")
    uncached = [shape(ws, FakeTools(), None) for ws in (first, second)]
    runner = FakeTools()
    cached = [shape(ws, runner, cache) for ws in (first, second)]
    assert [seen(r) for r in cached] == [seen(r) for r in uncached]
    assert ("semgrep", "pkg/a.py", 2, True) in seen(cached[0])
    for tool in ("semgrep", "bandit"):
        # Job 1: its base files in one run, its head files in another; job 2: its head file alone.
        assert sorted(head_of(spec) for spec, _ in runner.runs(tool)) == [False, True, True]
    detail = {t.tool: t.detail for t in cached[1].tools}
    assert "1 of 2 files' results kept from earlier runs" in detail["semgrep"]


def test_only_a_run_of_the_base_tree_alone_is_ever_kept(repo: GitRepo, tmp_path: Path) -> None:
    cache = ShapeCache(tmp_path / "cache")
    runner = FakeTools()
    # The PR's head holds, at pkg/c.py, exactly the bytes the next base will hold there.
    ws = change(repo, "pr", {"pkg/c.py": "C = 3\nE = 5  # BAD\n"}, tmp_path / "1")
    shape(ws, runner, cache)
    # mypy's run whose cache is kept: the base tree alone.
    assert [head_of(spec) for spec, plan in runner.runs("mypy") if "pack" in plan] == [False]
    repo.branch("main", "main")
    repo.commit("merge", {"pkg/c.py": "C = 3\nE = 5  # BAD\n"})
    repo.branch("next", "main")
    repo.commit("next", {"pkg/c.py": "C = 3\nE = 5  # BAD\nF = 6\n"})
    later = FakeTools()
    shape(from_git(repo.path, "main", "next", tmp_path / "2"), later, cache)
    # The head's result for those bytes was never kept: the new base file is examined afresh.
    for tool in ("semgrep", "bandit"):
        assert any(not head_of(spec) for spec, _ in later.runs(tool))


def test_a_run_that_kept_results_mounts_no_head(repo: GitRepo, tmp_path: Path) -> None:
    runner = FakeTools()
    ws = change(repo, "pr", {"pkg/a.py": "A = 2\n", "pkg/b.py": "B = 3  # BAD\n"}, tmp_path / "1")
    shape(ws, runner, ShapeCache(tmp_path / "cache"))
    base_runs = [spec for _, spec, plan in runner.specs if not any(
        "head" in str(f) or s["cwd"] == HEAD_MOUNT for s in plan["steps"] for f in s["files"]
    ) and not head_of(spec)]  # fmt: skip
    assert len(base_runs) == 3  # semgrep, bandit, mypy
    for spec in base_runs:
        assert {m.target for m in spec.mounts} <= {BASE_MOUNT, TREE_MOUNT, STAGE_MOUNT}
        assert all(m.source == ws.base_dir for m in spec.mounts if m.target != STAGE_MOUNT)


def test_a_changed_configuration_is_a_new_key(repo: GitRepo, tmp_path: Path) -> None:
    cache = ShapeCache(tmp_path / "cache")
    first = change(repo, "pr1", {"pkg/a.py": "A = 2\n"}, tmp_path / "1")
    shape(first, FakeTools(), cache)
    repo.branch("main", "main")
    repo.commit("config", {"pyproject.toml": "[tool.bandit]\nskips = []\n"})
    runner = FakeTools()
    shape(change(repo, "pr2", {"pkg/a.py": "A = 3\n"}, tmp_path / "2"), runner, cache)
    # bandit reads the base's new configuration: its base file runs again; semgrep's rules did not change.
    assert len(runner.runs("bandit")) == 2
    assert len(runner.runs("semgrep")) == 1
    before = config_digest(["-c", f"{BASE_MOUNT}/pyproject.toml"], first.base_dir)
    assert before != config_digest(["-c", f"{BASE_MOUNT}/pyproject.toml"], tmp_path / "2" / "base")


def test_a_file_the_tool_did_not_read_whole_is_never_kept(repo: GitRepo, tmp_path: Path) -> None:
    class Troubled(FakeTools):
        def _batch(self, tool: str, step: dict[str, Any], mounts: dict[str, Path]) -> dict[str, Any]:
            batch = super()._batch(tool, step, mounts)
            if tool == "semgrep":
                report = json.loads(batch["stdout"])
                report["errors"] = [{"level": "warn", "type": "Timeout", "path": f} for f in step["files"]]
                batch["stdout"] = json.dumps(report)
            return batch

    cache = ShapeCache(tmp_path / "cache")
    shape(change(repo, "pr1", {"pkg/a.py": "A = 2\n"}, tmp_path / "1"), Troubled(), cache)
    runner = FakeTools()
    shape(change(repo, "pr2", {"pkg/a.py": "A = 3\n"}, tmp_path / "2"), runner, cache)
    assert len(runner.runs("semgrep")) == 2  # examined again
    assert len(runner.runs("bandit")) == 1


def test_mypy_keeps_the_base_cache_and_never_the_heads(repo: GitRepo, tmp_path: Path) -> None:
    cache = ShapeCache(tmp_path / "cache")
    runner = FakeTools()
    first = change(repo, "pr1", {"pkg/a.py": "A = 2  # BAD\n"}, tmp_path / "1")
    shape(first, runner, cache)
    base_run, head_run = runner.runs("mypy")
    # Nothing kept yet: the base ran first, alone, and the head got the cache it wrote.
    assert "pack" in base_run[1] and not base_run[0].copy_in
    assert "pack" not in head_run[1] and [m.target for m in head_run[0].copy_in] == [SEED_IN]
    assert not head_run[0].collect
    second = change(repo, "pr2", {"pkg/b.py": "B = 3\n"}, tmp_path / "2")
    shape(second, runner, cache)
    base_run, head_run = runner.runs("mypy")[2:]
    assert [m.target for m in base_run[0].copy_in] == [SEED_IN]
    # Both of job 2's runs start from the cache job 1's base run wrote; its own base run's replaces it.
    assert runner.seeds == [None, _tar({"cache.db": b"cold"}), *[_tar({"cache.db": b"cold"})] * 2]
    seeds = list((tmp_path / "cache" / "mypy").glob("*.tar"))
    with tarfile.open(seeds[0]) as tar:
        assert tar.extractfile("cache.db").read() == b"seeded"  # type: ignore[union-attr]
    # The same targets on the same base: the base's findings are kept, only the head runs.
    third = change(repo, "pr3", {"pkg/b.py": "B = 4\n"}, tmp_path / "3")
    result = shape(third, runner, cache)
    assert len(runner.runs("mypy")) == 5
    assert "base findings kept from an earlier run" in {t.tool: t.detail for t in result.tools}["mypy"]


def test_mypy_without_a_base_sha_keeps_nothing(tmp_path: Path, repo: GitRepo) -> None:
    ws = change(repo, "pr", {"pkg/a.py": "A = 2\n"}, tmp_path / "1")
    runner = FakeTools()
    unknown_base = Workspace(ws.base_dir, ws.head_dir, "", ws.head_sha, ws.changed)
    shape(unknown_base, runner, ShapeCache(tmp_path / "c"))
    assert len(runner.runs("mypy")) == 1
    assert not (tmp_path / "c" / "mypy").exists()


def test_file_digest_never_follows_a_link(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text("X = 1\n")
    (tmp_path / "link.py").symlink_to("real.py")
    (tmp_path / "dir").symlink_to(tmp_path)
    (tmp_path / "big.py").write_bytes(b"#" * (8 * 1024 * 1024 + 1))
    assert file_digest(tmp_path, "real.py") is not None
    for path in ("link.py", "dir/real.py", "big.py", "missing.py", "../real.py"):
        assert file_digest(tmp_path, path) is None


def test_the_store_is_bounded_and_read_can_be_turned_off(tmp_path: Path) -> None:
    finding = Finding(tool="t", rule="r", path="p", start_line=1, end_line=1, severity="error", message="m")
    cache = ShapeCache(tmp_path, max_findings=3, max_seeds=2)
    cache.put_findings({f"{n:064x}": [finding] for n in range(5)})
    assert len(cache.findings(f"{n:064x}" for n in range(5))) == 3
    for n in range(3):
        cache.put_seed(f"{n:064x}", b"tar")
    assert sorted(p.stem for p in (tmp_path / "mypy").glob("*.tar")) == [f"{n:064x}" for n in (1, 2)]
    blind = ShapeCache(tmp_path, read=False)
    assert blind.findings([f"{4:064x}"]) == {} and blind.seed(f"{2:064x}") is None
    with pytest.raises(ValueError, match="not a cache key"):
        cache.put_seed("../../etc/x", b"")


def identities(result: ShapeResult) -> set[tuple[str, str, str, int, bool, str]]:
    return {(f.tool, f.rule, f.path, f.start_line, f.introduced, f.message) for f in result.findings}


@pytest.mark.docker
def test_the_real_tools_find_the_same_with_the_cache_cold_and_warm(
    tmp_path_factory: pytest.TempPathFactory,
    shape_sandbox: DockerSandbox,
    shape_image: str,
    scenario: dict[str, ShapeResult],
) -> None:
    tools = ("ruff", "mypy", "bandit", "semgrep")
    cache = ShapeCache(tmp_path_factory.mktemp("cache"))
    for name, head in (("good", GOOD_FILES), ("bad", BAD_FILES)):
        ws = make_ws(tmp_path_factory.mktemp(f"cached-{name}"), BASE_FILES, head)
        ctx = LayerContext(ws, Policy(), shape_sandbox, shape_image)
        expected = {i for i in identities(scenario[name]) if i[0] in tools}
        for round_ in ("cold", "warm"):
            result = run_shape(ctx, gates=tools, cache=cache)
            assert [t.status for t in result.tools] == ["ok"] * 4, (round_, result.tools)
            assert identities(result) == expected, (name, round_)
        details = {t.tool: t.detail for t in result.tools}
        assert "results kept from earlier runs" in details["semgrep"]
        assert "base findings kept from an earlier run" in details["mypy"]


class _LegacySemgrep(semgrep.SemgrepTool):
    """semgrep's default command line: the Python wrapper around semgrep-core."""

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        plan = super().plan(ws, files)
        steps = [{**s, "argv": [a for a in s["argv"] if a != "--experimental"]} for s in plan.steps]  # type: ignore[attr-defined]
        return Plan(steps, plan.detail)


@pytest.mark.docker
def test_semgreps_ocaml_command_line_finds_what_the_python_one_does(
    tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str
) -> None:
    ws = make_ws(tmp_path, BASE_FILES, {**BAD_FILES, **GOOD_FILES, "pkg/core.py": BAD_FILES["pkg/core.py"]})
    ctx = LayerContext(ws, Policy(), shape_sandbox, shape_image)
    fast = semgrep.gate.examine(ctx, targets(ws))
    legacy = ToolGate(_LegacySemgrep()).examine(ctx, targets(ws))

    def found(findings: list[Finding]) -> set[tuple[str, str, int, int, str, str]]:
        return {(f.rule, f.path, f.start_line, f.end_line, f.severity, f.message) for f in findings}

    assert found(fast.parsed.head) == found(legacy.parsed.head)
    assert found(fast.parsed.base) == found(legacy.parsed.base)
    assert len(found(fast.parsed.head)) >= 4
    assert fast.parsed.detail == legacy.parsed.detail


def test_tool_threads_opening_a_new_cache_at_once_all_read_it(tmp_path: Path) -> None:
    # The shape gate's tools ask the findings cache from their own threads; on a new cache
    # directory one of them used to get "database is locked" from the journal-mode change.
    for trial in range(40):
        cache = ShapeCache(tmp_path / str(trial))
        assert at_once(functools.partial(cache.findings, ["a" * 64])) == []
