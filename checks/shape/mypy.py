"""The mypy gate: type errors the change introduces, with the base branch's mypy configuration.

mypy runs on each whole tree with the changed files as targets (read from an
``@file``, so any number of them fits). The base runs first and every run
shares one incremental cache in the container's /tmp: the head's run reuses
what the base's learnt about the standard library and the installed
dependencies (most of the work on a project with heavy dependencies) and
rechecks every module whose file differs, so its errors are the same as a
cold run's. The cache lives and dies with the container. Files that do not
compile are left out (one syntax error stops mypy from checking anything; the
loads gate reports it), and files that share a module name are checked in
separate runs.

The configuration file is always given explicitly, so a ``[tool.mypy]`` the
PR adds, and any plugin it names, is never read. mypy is started as its
console script (not ``python -m``), so a plugin named by the base
configuration is imported from the image, never from the PR's tree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from checks.report import Finding
from checks.shape.config import BASE_MOUNT, CONTAINER_TMP, HEAD_MOUNT, mypy_config
from checks.shape.container import Batch, ToolFailure
from checks.shape.modules import DirTree, module_name
from checks.shape.static import Parsed, Plan, Targets, ToolGate, argument, check_batches, plain_path
from checks.workspace import Workspace
from sandbox.spec import Limits


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
    """mypy over each tree, changed files as targets, configured from the base tree."""

    name = "mypy"
    limits = Limits(timeout_s=600, memory_mb=2048, output_bytes=64 * 1024 * 1024)

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        config = mypy_config(ws.base_dir)
        steps: list[dict[str, object]] = []
        for side, tree, mount, paths in (
            ("base", ws.base_dir, BASE_MOUNT, files.base),
            ("head", ws.head_dir, HEAD_MOUNT, files.head),
        ):
            for i, group in enumerate(groups(tree, paths)):
                argv = [
                    "mypy", *config.args,
                    "--cache-dir", f"{CONTAINER_TMP}/mypy-cache",
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


gate = ToolGate(MypyTool())
