"""Base as the reference: a refactor's changed functions, compared with their base versions.

Where no differential suite gives a reference, a change labelled as a refactor
(policy ``behaviour.differential``: a label, or a title prefix) should not change
what its functions do. The functions it touched - top-level functions of
changed modules (test files aside) whose source differs between base and head,
present in both - are checked against **base's own function** on inputs drawn
from base's annotations, exactly as a differential suite's (``differential.py``):
base's function runs in the grader (base is trusted), head's in the subject.
Any disagreement names the input.

Only the trees are read here (no I/O of its own beyond reading the files it is
given). A function that cannot be drawn for - a parameter without an annotation
and without a default, ``*args`` - is left out, and said so.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from checks.behaviour.diffsuite import DiffSpec
from checks.testinfra.files import is_test_module
from checks.workspace import Workspace
from sandbox.pyparse import parse_python

_SALT = b"patchgate refactor seed 2\0"
# More changed functions than a refactor's comparison runs at once (the rest are named, not checked).
MAX_FUNCTIONS = 20


@dataclass(frozen=True)
class Touched:
    """The functions a refactor is compared on, and those it is not (each with why)."""

    specs: tuple[DiffSpec, ...]
    left_out: tuple[str, ...]


def module_name(path: str) -> str | None:
    """The dotted module a tree path is imported as (``src/`` layouts too), or None if it is not one."""
    parts = list(PurePosixPath(path).parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if not parts or not parts[-1].endswith(".py"):
        return None
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _functions(source: bytes) -> dict[str, ast.FunctionDef]:
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return {}
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _drawable(node: ast.FunctionDef) -> str | None:
    """Why inputs cannot be drawn for ``node`` from its annotations (None: they can)."""
    args = node.args
    if args.vararg or args.kwarg:
        return "it takes *args or **kwargs"
    ordered = [*args.posonlyargs, *args.args]
    required = ordered[: len(ordered) - len(args.defaults)]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    bare = [a.arg for a in required if a.annotation is None]
    return f"parameter {', '.join(bare)} has no annotation" if bare else None


def touched(workspace: Workspace, covered: frozenset[str] = frozenset()) -> Touched:
    """Return the changed functions to compare with base (``covered``: those a suite checks already)."""
    specs: list[DiffSpec] = []
    left_out: list[str] = []
    for changed in workspace.changed:
        module = module_name(changed.path)
        if changed.status != "modified" or module is None or is_test_module(changed.path):
            continue
        base_file, head_file = workspace.base_dir / changed.path, workspace.head_dir / changed.path
        if not (base_file.is_file() and head_file.is_file()):
            continue
        base, head = _functions(base_file.read_bytes()), _functions(head_file.read_bytes())
        for name in sorted(base.keys() & head.keys()):
            if ast.dump(base[name]) == ast.dump(head[name]) or f"{module}.{name}" in covered:
                continue
            why = _drawable(base[name])
            if why is not None:
                left_out.append(f"{module}.{name}: {why}")
            elif len(specs) >= MAX_FUNCTIONS:
                left_out.append(f"{module}.{name}: more than {MAX_FUNCTIONS} changed functions")
            else:
                function = f"{module}.{name}"
                specs.append(DiffSpec(f"base::{function}", function, function, source="base"))
    return Touched(tuple(specs), tuple(left_out))


def refactor_seed(base_sha: str, secrets: Sequence[str]) -> str:
    """Derive a refactor comparison's seed from the base sha and the server-side suites' seeds.

    Nothing the change's author chooses goes in (not the head sha, not which functions it touches:
    each function's draws are split from this by its id), so pushing again draws nothing new.
    ``secrets`` (the hidden and held-out suites' own seeds, from their bytes) keep it from being
    computed; with none (base's tests only) it is the base sha's alone: see docs/behaviour.md.
    """
    digest = hashlib.sha256(_SALT + f"{base_sha}\0".encode())
    for secret in secrets:
        digest.update(secret.encode() + b"\0")
    return digest.hexdigest()[:32]
