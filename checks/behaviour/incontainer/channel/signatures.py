"""Signatures across the channel: described on the side that owns the callable, rebuilt on the other.

``inspect.signature`` of a handle would otherwise see the handle's own
``__call__(*args, **kwargs)``: a library that decides by a test's
callback's arity (``toolz.curry``, ``boltons.funcutils.wraps``), or a test
that inspects a library's function, would be told the wrong thing.

A description is plain data: each parameter's name and kind, and its
default and annotation as the side's own encoding makes them (the grader
seals a test's defaults: see ``handed.py``). Nothing in it is evaluated.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

_KINDS = {int(kind): kind for kind in inspect._ParameterKind}


def describe(target: object, default: Callable[[object], object] = lambda v: v) -> dict[str, Any]:
    """Describe ``inspect.signature(target)``; ``default`` wraps each default value before encoding."""
    sig = inspect.signature(target)  # type: ignore[arg-type]  # not callable: inspect raises TypeError
    parameters = []
    for p in sig.parameters.values():
        entry: dict[str, Any] = {"name": p.name, "kind": int(p.kind)}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = default(p.default)
        if p.annotation is not inspect.Parameter.empty:
            entry["annotation"] = p.annotation
        parameters.append(entry)
    out: dict[str, Any] = {"parameters": parameters}
    if sig.return_annotation is not inspect.Signature.empty:
        out["return"] = sig.return_annotation
    return out


def rebuild(data: object) -> inspect.Signature:
    """Build the signature a description stands for; raise ValueError for anything malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("parameters"), list):
        raise ValueError("patchgate: a signature description in a form we do not read")
    parameters = []
    for entry in data["parameters"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ValueError("patchgate: a parameter description in a form we do not read")
        number = entry.get("kind")
        kind = _KINDS.get(number) if isinstance(number, int) else None
        if kind is None:
            raise ValueError("patchgate: a parameter kind we do not know")
        parameters.append(
            inspect.Parameter(
                entry["name"],
                kind,
                default=entry.get("default", inspect.Parameter.empty),
                annotation=entry.get("annotation", inspect.Parameter.empty),
            )
        )
    return inspect.Signature(parameters, return_annotation=data.get("return", inspect.Signature.empty))
