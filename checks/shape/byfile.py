"""A tool gate whose findings are kept per file across jobs (semgrep, bandit): a base file is examined once.

A file's findings from these tools depend on its path, its bytes, the tool
(the image it runs from) and the configuration alone, so they are kept under
exactly that key (:mod:`checks.shape.cache`). What is not found there runs
in two sandbox runs side by side:

- the **base** files in a container that holds the base tree and patchgate's
  stage and nothing else: no byte of the PR is in it, so what it reports can
  stand for every later job (only files the tool examined whole are kept);
- the **head** files in a container with both trees, as before; nothing it
  reports is ever kept (a PR's file could otherwise vouch for another's).

A head file whose key is already known (the same bytes at the same path,
examined in a base run) is not examined again.
"""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from checks.report import Finding
from checks.runner import LayerContext
from checks.shape import thresholds
from checks.shape.cache import ShapeCache, config_digest, digest, file_digest, source_digest
from checks.shape.config import BASE_MOUNT
from checks.shape.static import Examined, Parsed, Side, Targets, ToolGate
from sandbox.spec import Mount


class FileCachedGate(ToolGate):
    """A ToolGate whose tool's findings are a function of one file: kept by content across jobs."""

    def examine_all(self, ctx: LayerContext, files: Targets, cache: ShapeCache | None) -> Examined:
        """Take what the cache knows; run the rest, base alone and head apart; keep the base's."""
        if cache is None:
            return self.examine(ctx, files)
        ws = ctx.workspace
        salt = self._salt(ctx, files, cache)
        base_keys = _keys(salt, ws.base_dir, files.base)
        head_keys = _keys(salt, ws.head_dir, files.head)
        known = cache.findings(k for k in (*base_keys.values(), *head_keys.values()) if k is not None)
        base_todo = tuple(p for p in files.base if base_keys[p] not in known)
        head_todo = tuple(p for p in files.head if head_keys[p] not in known)
        runs: dict[Side, Examined] = {}
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"shape-{self.name}") as pool:
            base_run = head_run = None
            if base_todo:
                alone = (Mount(ws.base_dir, BASE_MOUNT),)
                base_run = pool.submit(self.examine, ctx, Targets((), base_todo, {}), trees=alone)
            if head_todo:
                head_run = pool.submit(self.examine, ctx, Targets(head_todo, (), {}))
            if base_run is not None:
                runs["base"] = base_run.result()
            if head_run is not None:
                runs["head"] = head_run.result()
        if "base" in runs:
            _keep(cache, runs["base"].parsed, base_keys)
        base = [f for p in files.base if (k := base_keys[p]) in known for f in known[k]]
        head = [f for p in files.head if (k := head_keys[p]) in known for f in known[k]]
        details: list[str] = []
        # A file whose key was known was examined whole when it was kept (_keep).
        settled: set[tuple[Side, str]] = {("base", p) for p in files.base if base_keys[p] in known}
        settled |= {("head", p) for p in files.head if head_keys[p] in known}
        trouble: dict[str, str] = {}
        for side, ran in runs.items():
            base += ran.parsed.base if side == "base" else []
            head += ran.parsed.head if side == "head" else []
            details += [ran.parsed.detail] if ran.parsed.detail else []
            settled |= ran.parsed.settled
            trouble.update(ran.parsed.trouble)
        reused = len(files.base) - len(base_todo) + len(files.head) - len(head_todo)
        total = len(files.base) + len(files.head)
        detail = self.tool.plan(ws, Targets(files.head, (), {})).detail
        if reused:
            detail += f"; {reused} of {total} files' results kept from earlier runs"
        seconds = round(sum(r.seconds for r in runs.values()), 3)
        return Examined(Parsed(base, head, "; ".join(details), frozenset(settled), trouble), seconds, detail)

    def _salt(self, ctx: LayerContext, files: Targets, cache: ShapeCache) -> str:
        """Return what every key of this change shares: the tool, its image, its configuration."""
        steps = self.tool.plan(ctx.workspace, Targets(files.head, (), {})).steps
        argv = [str(a) for step in steps for a in step["argv"]]  # type: ignore[attr-defined]
        source = source_digest(inspect.getfile(type(self.tool)), __file__, thresholds.__file__)
        return digest(self.name, cache.image(ctx.image), config_digest(argv, ctx.workspace.base_dir), source)


def _keys(salt: str, tree: Path, paths: tuple[str, ...]) -> dict[str, str | None]:
    """Return each file's key, None for one that is never kept (a link, too large, unreadable)."""
    keys: dict[str, str | None] = {}
    for path in paths:
        content = file_digest(tree, path)
        keys[path] = digest(salt, path, content) if content is not None else None
    return keys


def _keep(cache: ShapeCache, parsed: Parsed, keys: dict[str, str | None]) -> None:
    """Store the findings of every base file the tool examined whole, by its key."""
    found: dict[str, list[Finding]] = {}
    for finding in parsed.base:
        found.setdefault(finding.path, []).append(finding)
    whole = {path: key for path, key in keys.items() if key is not None and ("base", path) in parsed.settled}
    cache.put_findings({key: found.get(path, []) for path, key in whole.items()})
