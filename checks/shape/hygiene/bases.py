"""Which classes are bases: the names a module or a whole repository subclasses, seen through aliases.

A method of a class something subclasses may be empty on purpose (a hook to
override); stubs.py exempts those.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from checks.shape.hygiene.pysource import dotted, statements


def subclassed_in(tree: ast.Module) -> set[str]:
    """Names of classes used as a base by some class in the same module."""
    out: set[str] = set()
    for node in statements(tree):  # a class definition is a statement
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = dotted(base.value if isinstance(base, ast.Subscript) else base)
                if name is not None:
                    out.add(name.rsplit(".", 1)[-1])
    return out


_CLASS_HEADER = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.M)
_IMPORT_AS = re.compile(r"\b([A-Za-z_]\w*)[ \t]+as[ \t]+([A-Za-z_]\w*)")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def base_class_names(sources: Iterable[str]) -> frozenset[str]:
    """Return the names used as base classes anywhere in ``sources``, seen through `import ... as`.

    A textual scan, so that a whole repository can be read quickly; it may
    over-collect (which only exempts more), never parse errors.
    """
    bases: set[str] = set()
    aliases: dict[str, set[str]] = {}
    for text in sources:
        # Only up to the last ")": a header with none after it has no match, and each such header
        # scanned to the end of the text (``[^)]*`` spans lines), so a file of ``class A(`` lines
        # was quadratic. Cut there, every header's scan ends at a ")" its match then consumes.
        for header in _CLASS_HEADER.findall(text[: text.rfind(")") + 1]):
            bases.update(_IDENT.findall(header))
        for original, alias in _IMPORT_AS.findall(text):
            aliases.setdefault(alias, set()).add(original)
    for name in list(bases):
        bases |= aliases.get(name, set())
    return frozenset(bases)


# Bases that do not give a class any methods to override.
_NEUTRAL_BASES = frozenset({"object", "Generic"})


def base_names(node: ast.ClassDef, *, metaclass: bool = False) -> list[str]:
    """The last parts of a class's base names (and its metaclass, when asked), minus neutral ones."""
    exprs = [*node.bases, *(kw.value for kw in node.keywords if metaclass and kw.arg == "metaclass")]
    names = []
    for base in exprs:
        name = dotted(base.value if isinstance(base, ast.Subscript) else base)
        if name is not None and name.rsplit(".", 1)[-1] not in _NEUTRAL_BASES:
            names.append(name.rsplit(".", 1)[-1])
    return names
