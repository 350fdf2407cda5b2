"""Write the Action's constraints file: every distribution `pip install patchgate` brings, pinned.

The versions are those installed in this environment (.venv, which `bash scripts/setup.sh`
built from pyproject.toml), for the dependency closure of patchgate without extras, with
markers evaluated for Python 3.11 on Linux (the Action's runner). Re-run after changing
pyproject.toml's dependencies; tests/deploy/test_action.py resolves the Action's install
against the file and fails on anything it leaves unpinned.

Usage: .venv/bin/python scripts/action-pins.py
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

OUT = Path(__file__).resolve().parents[1] / ".github" / "actions" / "patchgate" / "constraints.txt"
ENVIRONMENT: dict[str, str] = {
    **{str(k): str(v) for k, v in default_environment().items()},
    "python_version": "3.11",
    "sys_platform": "linux",
}


def closure(root: str) -> dict[str, str]:
    """Return {name: installed version} of ``root``'s runtime dependencies, recursively."""
    pinned: dict[str, str] = {}
    todo = [(root, frozenset[str]())]
    while todo:
        name, extras = todo.pop()
        dist = distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        if key != canonicalize_name(root):
            pinned[key] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            wanted: list[dict[str, str]] = [{**ENVIRONMENT, "extra": e} for e in extras or {""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in wanted):
                continue
            dep = canonicalize_name(req.name)
            try:
                distribution(dep)
            except PackageNotFoundError as exc:
                raise SystemExit(
                    f"{dep} (needed by {key}) is not installed: run bash scripts/setup.sh"
                ) from exc
            if dep not in pinned or req.extras:
                todo.append((dep, frozenset(req.extras)))
    return pinned


def main() -> None:
    pins = closure("patchgate")
    lines = [
        "# Every distribution `pip install patchgate` brings, pinned (scripts/action-pins.py wrote this).",
        *(f"{name}=={version}" for name, version in sorted(pins.items())),
    ]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(pins)} pins")


if __name__ == "__main__":
    main()
