"""The mypy gate: type errors the change introduces, with the base branch's mypy configuration.

mypy runs on each whole tree with the changed files as targets (read from an
``@file``, so any number of them fits). Files that do not compile are left
out (one syntax error stops mypy from checking anything; the loads gate
reports it), and files that share a module name are checked in separate runs.

Without a cache kept across jobs, base and head run in one container and
share one incremental cache in its /tmp, the base first: the head reuses
what the base learnt about the standard library and the dependencies, and
rechecks every module whose file differs. With one (checks.shape.cache), the
incremental cache of each base (its sha, the image, the configuration) is
kept on the host: the base runs in a container holding the base tree alone,
from the kept cache, and its cache after the run becomes the kept one; the
head runs from a copy of it in a container of its own, its tree at the very
path the base's was (``/src/tree``), so every module the change left alone
is found fresh (mypy compares each file's hash) and only the changed ones
and those depending on them are checked. What the head's run writes dies
with its container. The base's findings for one set of targets are kept too.

The configuration file is always given explicitly, so a ``[tool.mypy]`` the
PR adds, and any plugin it names, is never read. mypy is started as its
console script (not ``python -m``), so a plugin named by the base
configuration is imported from the image, never from the PR's tree.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from checks.report import Finding
from checks.runner import LayerContext
from checks.shape.cache import ShapeCache, config_digest, digest, source_digest
from checks.shape.config import BASE_MOUNT, CONTAINER_TMP, HEAD_MOUNT, TREE_MOUNT, mypy_config
from checks.shape.container import Batch, ToolFailure
from checks.shape.modules import DirTree, module_name
from checks.shape.static import Examined, Parsed, Plan, Targets, ToolGate, argument, check_batches, plain_path
from checks.workspace import Workspace
from sandbox.spec import Limits, Mount

CACHE_DIR = f"{CONTAINER_TMP}/mypy-cache"
# The kept cache, copied in; and the base run's cache after it, for the host to keep.
SEED_IN = f"{CONTAINER_TMP}/patchgate-seed/mypy-cache.tar"
SEED_OUT = f"{CONTAINER_TMP}/patchgate-out/mypy-cache.tar"
# A larger cache is not kept (the collected files of a run are capped at 64 MiB).
MAX_SEED = 48 * 1024 * 1024


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    file: str
    line: int = 0
    end_line: int | None = None
    message: str = ""
    code: str | None = None
    severity: str = "error"


def groups(tree: Path, paths: tuple[str, ...]) -> list[list[str]]:
    """Split ``paths`` so no group holds two files of the same module name (mypy refuses that)."""
    out: list[tuple[set[str], list[str]]] = []
    reader = DirTree(tree)
    for path in paths:
        found = module_name(reader, path)
        name = found.name if found is not None else path
        for names, members in out:
            if name not in names:
                names.add(name)
                members.append(path)
                break
        else:
            out.append(({name}, [path]))
    return [members for _, members in out]


def parse_mypy(text: str) -> list[Finding]:
    """Parse ``mypy --output json`` (one object a line) into error findings; notes are dropped."""
    findings = []
    for raw in text.splitlines():
        if not raw.lstrip().startswith("{"):
            continue
        try:
            m = _Message.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            raise ToolFailure(f"mypy printed a line that is not its JSON report: {raw[:200]}") from exc
        if m.severity != "error":
            continue
        start = max(m.line, 0)
        findings.append(
            Finding(
                tool="mypy",
                rule=m.code or "error",
                path=plain_path(m.file),
                start_line=start,
                end_line=max(m.end_line or start, start),
                severity="error",
                message=m.message,
            )
        )
    return findings


def _blocking(batch: Batch, findings: list[Finding]) -> None:
    """Exit code 2 with only syntax errors is the PR's doing; anything else is mypy failing."""
    if batch.exit_code != 2:
        return
    if findings and all(f.rule == "syntax" for f in findings):
        return
    reasons = "; ".join(f.message for f in findings if f.rule != "syntax")[:600]
    raise ToolFailure(f"mypy could not check the files: {reasons or batch.stderr.strip()[-800:]}")


class MypyTool:
    """mypy over each tree, changed files as targets, configured from the base tree.

    ``mounts`` are where the base and the head tree are mounted (their run's cwd).
    """

    name = "mypy"
    limits = Limits(timeout_s=600, memory_mb=2048, output_bytes=64 * 1024 * 1024)

    def __init__(self, mounts: tuple[str, str] = (BASE_MOUNT, HEAD_MOUNT)) -> None:
        self.mounts = mounts

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        config = mypy_config(ws.base_dir)
        steps: list[dict[str, object]] = []
        for side, tree, mount, paths in (
            ("base", ws.base_dir, self.mounts[0], files.base),
            ("head", ws.head_dir, self.mounts[1], files.head),
        ):
            for i, group in enumerate(groups(tree, paths)):
                argv = [
                    "mypy", *config.args,
                    "--cache-dir", CACHE_DIR,
                    "--output", "json", "--no-error-summary", "--no-pretty",
                ]  # fmt: skip
                files_arg = [argument(p) for p in group]
                step = {"name": f"{side}-{i}", "argv": argv, "cwd": mount, "files": files_arg, "timeout": 540}
                steps.append({**step, "argfile": True, "compilable_only": True})
        return Plan(steps, f"config: {config.origin}")

    def parse(self, outputs: Mapping[str, list[Batch]]) -> Parsed:
        found: dict[str, list[Finding]] = {"base": [], "head": []}
        for name, batches in sorted(outputs.items()):
            check_batches("mypy", batches, ok_codes=(0, 1, 2))
            side = name.split("-", 1)[0]
            for b in batches:
                findings = parse_mypy(b.stdout)
                _blocking(b, findings)
                found[side] += findings
        return Parsed(found["base"], found["head"])


class MypyGate(ToolGate):
    """The mypy gate: with a cache, mypy's incremental cache of each base is kept across jobs."""

    def __init__(self) -> None:
        super().__init__(MypyTool())
        # Base and head at one path, so that the head finds the base's modules fresh in the cache.
        self.shared = MypyTool((TREE_MOUNT, TREE_MOUNT))

    def examine_all(self, ctx: LayerContext, files: Targets, cache: ShapeCache | None) -> Examined:
        """Run the base from the kept cache and keep its cache; run the head from a copy of it."""
        ws = ctx.workspace
        if cache is None or not ws.base_sha:
            return self.examine(ctx, files)
        key = self._key(ctx, cache)
        seed = cache.seed(key)
        # The base's findings depend on the whole set of targets (follow_imports may skip the rest).
        findings_key = digest(key, "base findings", sorted(files.base))
        known = cache.findings([findings_key]) if files.base else {}
        with tempfile.TemporaryDirectory(prefix="patchgate-mypy-") as tmp:
            copy = Path(tmp) / "seed.tar"
            if seed is not None:
                shutil.copyfile(seed, copy)  # the kept one may be replaced or evicted meanwhile
            seeded = copy if seed is not None else None
            base_ran: Examined | None = None
            if not files.base or findings_key in known:
                head_ran = self._head(ctx, files, seeded)
            elif seeded is None:
                # Nothing kept yet: the head waits for the cache this base run writes.
                base_ran = self._keep(cache, key, findings_key, self._base(ctx, files, None), copy)
                head_ran = self._head(ctx, files, copy if copy.is_file() else None)
            else:
                with ThreadPoolExecutor(max_workers=1, thread_name_prefix="shape-mypy-base") as pool:
                    later = pool.submit(self._base, ctx, files, seeded)
                    head_ran = self._head(ctx, files, seeded)
                    base_ran = self._keep(cache, key, findings_key, later.result(), None)
        runs = [ran for ran in (base_ran, head_ran) if ran is not None]
        base = known.get(findings_key, [])
        for ran in runs:
            base += ran.parsed.base
        head = [f for ran in runs for f in ran.parsed.head]
        notes = [
            "base findings kept from an earlier run" if findings_key in known else "",
            "mypy's cache of this base kept from an earlier run" if seed is not None else "",
        ]
        detail = "; ".join(d for d in (head_ran.detail, *notes) if d)
        return Examined(Parsed(base, head), round(sum(r.seconds for r in runs), 3), detail)

    def _key(self, ctx: LayerContext, cache: ShapeCache) -> str:
        ws = ctx.workspace
        steps = self.shared.plan(ws, Targets(("x.py",), (), {})).steps
        argv = [str(a) for a in steps[0]["argv"]]  # type: ignore[attr-defined]
        return digest("mypy", cache.image(ctx.image), ws.base_sha, config_digest(argv, ws.base_dir),
                      source_digest(__file__))  # fmt: skip

    def _base(self, ctx: LayerContext, files: Targets, seed: Path | None) -> Examined:
        """Check the base files in a container that holds the base tree alone; collect mypy's cache."""
        base = ctx.workspace.base_dir
        trees = (Mount(base, BASE_MOUNT), Mount(base, TREE_MOUNT))
        probe = {"unpack": [[SEED_IN, CACHE_DIR]] if seed else [], "pack": [CACHE_DIR, SEED_OUT, MAX_SEED]}
        copy_in = (Mount(seed, SEED_IN),) if seed is not None else ()
        return self.examine(ctx, Targets((), files.base, {}), trees=trees, tool=self.shared, probe=probe,
                            copy_in=copy_in, collect=(SEED_OUT,))  # fmt: skip

    def _head(self, ctx: LayerContext, files: Targets, seed: Path | None) -> Examined:
        """Check the head files from a copy of the base's cache; nothing of this run is kept."""
        ws = ctx.workspace
        trees = (Mount(ws.base_dir, BASE_MOUNT), Mount(ws.head_dir, TREE_MOUNT))
        probe = {"unpack": [[SEED_IN, CACHE_DIR]] if seed else []}
        copy_in = (Mount(seed, SEED_IN),) if seed is not None else ()
        return self.examine(ctx, Targets(files.head, (), {}), trees=trees, tool=self.shared, probe=probe,
                            copy_in=copy_in)  # fmt: skip

    def _keep(
        self, cache: ShapeCache, key: str, findings_key: str, ran: Examined, copy: Path | None
    ) -> Examined:
        """Keep a base run's findings and its cache (and leave a copy of it at ``copy`` for the head)."""
        cache.put_findings({findings_key: ran.parsed.base})
        tarball = ran.files.get(SEED_OUT)
        if tarball:
            cache.put_seed(key, tarball)
            if copy is not None:
                copy.write_bytes(tarball)
        return ran


gate = MypyGate()
