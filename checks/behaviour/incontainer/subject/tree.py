"""Whether a module in the subject's process is the tree's own: the subject's side of name ownership.

The grader only ever asks for the tree's names. A module this process had
already imported from elsewhere under such a name (the standard library,
the harness) would be tested in the change's place: that is refused with an
ImportError naming both, never served as a silent substitute.
"""

from __future__ import annotations

import os
from typing import Any


def provides(repo: str, name: str) -> bool:
    """Whether the tree has a top-level module or package ``name`` (at its root or under ``src/``)."""
    top = name.partition(".")[0]
    return any(
        os.path.isdir(os.path.join(base, top)) or os.path.isfile(os.path.join(base, f"{top}.py"))
        for base in (repo, os.path.join(repo, "src"))
    )


def check(module: Any, name: str, repo: str) -> None:
    """Raise ImportError unless ``module`` (imported as ``name``) comes from the tree at ``repo``."""
    where = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or [])]
    inside = os.path.realpath(repo) + os.sep
    if any(isinstance(w, str) and os.path.realpath(w).startswith(inside) for w in where):
        return
    found = next((w for w in where if isinstance(w, str)), "built in")
    raise ImportError(
        f"patchgate: {name} in the code under test's process is not the tree's ({found}): a module "
        "named like one of the standard library's or the harness's cannot be tested apart from it",
        name=name,
    )
