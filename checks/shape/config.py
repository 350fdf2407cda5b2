"""Which configuration each shape tool runs with: the base branch's, else patchgate's defaults.

The PR never configures the gate. Tools are always given an explicit
configuration file, which turns off their own discovery: a ``ruff.toml`` the
PR adds in a subfolder, a ``[tool.mypy] plugins`` entry, a ``.semgrepignore``
or a ``.bandit`` file in the head tree has no effect. For each tool the first
file found at the root of the **base** tree wins, in the tool's own order:

- ruff: ``.ruff.toml``, ``ruff.toml``, ``pyproject.toml`` with ``[tool.ruff]``
- mypy: ``mypy.ini``, ``.mypy.ini``, ``pyproject.toml`` with ``[tool.mypy]``,
  ``setup.cfg`` with ``[mypy]``
- bandit: ``.bandit`` (ini, with ``[bandit]``) and/or ``pyproject.toml`` with
  ``[tool.bandit]``, else ``bandit.yaml``, ``.bandit.yaml``, ``.bandit.yml``
- semgrep: patchgate's own rules (``checks/rules``), never the repository's.
"""

from __future__ import annotations

import configparser
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Where the trees and patchgate's files appear inside the sandbox.
SOURCES_MOUNT = "/src"
BASE_MOUNT = f"{SOURCES_MOUNT}/base"
HEAD_MOUNT = f"{SOURCES_MOUNT}/head"
# One side's tree where a tool's cache kept across jobs expects it: base and head at the same path.
TREE_MOUNT = f"{SOURCES_MOUNT}/tree"
STAGE_MOUNT = "/patchgate"
CONTAINER_TMP = "/tmp"  # noqa: S108 - the container's private tmpfs, the only writable place
DEFAULTS_DIR = Path(__file__).resolve().parent.parent / "defaults"
RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


@dataclass(frozen=True)
class ToolConfig:
    """The command-line options that point a tool at its configuration, and where they came from."""

    args: tuple[str, ...]
    origin: str


def _regular(base_dir: Path, name: str) -> Path | None:
    path = base_dir / name
    # A link is not followed: the base tree's own file, or nothing.
    return path if path.is_file() and not path.is_symlink() else None


def _toml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return {}


def _toml_has(path: Path | None, *keys: str) -> bool:
    node: Any = _toml(path)
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _ini_has(path: Path | None, section: str) -> bool:
    if path is None:
        return False
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (configparser.Error, UnicodeDecodeError, OSError):
        return False
    return parser.has_section(section)


def _base(name: str) -> str:
    return f"{BASE_MOUNT}/{name}"


def _default(name: str) -> str:
    return f"{STAGE_MOUNT}/defaults/{name}"


def ruff_config(base_dir: Path) -> ToolConfig:
    """Return ruff's ``--config`` from the base tree, or patchgate's default."""
    for name in (".ruff.toml", "ruff.toml"):
        if _regular(base_dir, name) is not None:
            return ToolConfig(("--config", _base(name)), f"base {name}")
    if _toml_has(_regular(base_dir, "pyproject.toml"), "tool", "ruff"):
        return ToolConfig(("--config", _base("pyproject.toml")), "base pyproject.toml [tool.ruff]")
    return ToolConfig(("--config", _default("ruff.toml")), "patchgate default")


def mypy_config(base_dir: Path) -> ToolConfig:
    """Return mypy's ``--config-file`` from the base tree, or patchgate's default."""
    for name in ("mypy.ini", ".mypy.ini"):
        if _ini_has(_regular(base_dir, name), "mypy"):
            return ToolConfig(("--config-file", _base(name)), f"base {name}")
    if _toml_has(_regular(base_dir, "pyproject.toml"), "tool", "mypy"):
        return ToolConfig(("--config-file", _base("pyproject.toml")), "base pyproject.toml [tool.mypy]")
    if _ini_has(_regular(base_dir, "setup.cfg"), "mypy"):
        return ToolConfig(("--config-file", _base("setup.cfg")), "base setup.cfg [mypy]")
    return ToolConfig(("--config-file", _default("mypy.ini")), "patchgate default")


def bandit_config(base_dir: Path) -> ToolConfig:
    """Return bandit's ``--ini`` / ``-c`` options from the base tree, or patchgate's default."""
    args: list[str] = []
    origins: list[str] = []
    if _ini_has(_regular(base_dir, ".bandit"), "bandit"):
        args += ["--ini", _base(".bandit")]
        origins.append("base .bandit")
    if _toml_has(_regular(base_dir, "pyproject.toml"), "tool", "bandit"):
        args += ["-c", _base("pyproject.toml")]
        origins.append("base pyproject.toml [tool.bandit]")
    elif not args:
        for name in ("bandit.yaml", ".bandit.yaml", ".bandit.yml"):
            if _regular(base_dir, name) is not None:
                return ToolConfig(("-c", _base(name)), f"base {name}")
    if args:
        return ToolConfig(tuple(args), ", ".join(origins))
    return ToolConfig(("-c", _default("bandit.yaml")), "patchgate default")
