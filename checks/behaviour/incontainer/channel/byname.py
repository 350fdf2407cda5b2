"""What crosses by name, not by value: built-ins and the standard library's modules, classes, functions.

The receiving side takes a name as its own object (``len``, ``collections.OrderedDict``): nothing of
the sender's crosses. ``UNSAFE_BUILTINS``, ``SAFE_CLASS_MODULES`` and ``SAFE_CLASSES`` bound what
the grader takes from the subject this way.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from typing import Any


def builtin_name(value: object) -> str | None:
    """Return the name of a built-in type or function (``ValueError``, ``len``), else None."""
    if type(value) is type:
        own = type.__dict__["__name__"].__get__(value)
    elif type(value) is types.BuiltinFunctionType:
        own = value.__name__
    else:
        return None
    if isinstance(own, str) and getattr(builtins, own, None) is value:
        return own
    return None


# Built-ins that run code, read files or reach any object's attributes: the grader never takes one
# by name from the subject (a test calling what the change returned would run them here).
UNSAFE_BUILTINS = frozenset({
    "eval", "exec", "compile", "__import__", "open", "breakpoint", "input", "globals", "locals", "vars",
    "getattr", "setattr", "delattr", "help", "exit", "quit",
})  # fmt: skip
_NAMEABLE = (
    type, types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
    types.WrapperDescriptorType, types.ClassMethodDescriptorType,
)  # fmt: skip


# Standard-library modules whose classes the grader takes by name from the subject: value types
# and containers, whose construction runs no code of anyone's choosing (never os, subprocess, io...).
SAFE_CLASS_MODULES = frozenset({
    "builtins", "collections", "collections.abc", "datetime", "decimal", "fractions", "numbers", "typing",
    "enum", "uuid", "abc",
})  # fmt: skip


# And single classes of other modules, as safe: in-memory streams and queues, an attribute bag
# (six.StringIO, six.moves.queue.Queue). Never io.FileIO, io.open, or anything that reaches a path.
SAFE_CLASSES = frozenset({
    ("_io", "StringIO"), ("_io", "BytesIO"),
    ("queue", "Queue"), ("queue", "LifoQueue"), ("queue", "PriorityQueue"), ("_queue", "SimpleQueue"),
    ("types", "SimpleNamespace"), ("argparse", "Namespace"),
})  # fmt: skip


def safe_class(named: tuple[str, str]) -> bool:
    """Whether the grader takes the standard-library class ``(module, qualname)`` by name."""
    return named[0] in SAFE_CLASS_MODULES or named in SAFE_CLASSES


# The types a standard-library module may have here: the grader watches a few (grader/ambient.py).
MODULE_TYPES: set[type] = {types.ModuleType}


def stdlib_name(value: object) -> tuple[str, str] | None:
    """Return (module, qualname) naming a standard-library module, class or function, if it is one."""
    if type(value) in MODULE_TYPES:
        name = vars(value).get("__name__")
        stdlib = (
            isinstance(name, str)
            and name.partition(".")[0] in sys.stdlib_module_names
            and sys.modules.get(name) is value
        )
        return (str(name), "") if stdlib else None
    if not issubclass(type(value), _NAMEABLE):  # its type, never the ``__class__`` it claims
        return None
    module = getattr(value, "__module__", None)
    if module is None:  # a method of a built-in type: str.lower
        module = getattr(getattr(value, "__objclass__", None), "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        return None
    found: object = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module, qualname) if found is value else None


def from_stdlib(data: dict[str, Any], *, safe_classes: bool = False) -> object:
    """Return the standard-library object a ``stdlib`` tag names: the receiving side's own.

    With ``safe_classes`` (the grader reading the subject) only a class of SAFE_CLASS_MODULES, or
    one of SAFE_CLASSES.
    """
    module, qualname = str(data.get("module")), str(data.get("qualname"))
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        raise ValueError(f"{module!r} is not a standard-library module")
    if safe_classes and not safe_class((module, qualname)):
        raise ValueError(f"{module}.{qualname} is not taken by name")
    # The grader imports no module for the subject but one of the few classes it may name.
    importing = not safe_classes or (module, qualname) in SAFE_CLASSES
    found: object = importlib.import_module(module) if importing else sys.modules.get(module)
    for part in qualname.split(".") if qualname else []:
        found = getattr(found, part)
    if safe_classes and not isinstance(found, type):
        raise ValueError(f"{module}.{qualname} is not a class")
    return found
