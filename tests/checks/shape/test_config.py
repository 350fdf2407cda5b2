"""Configuration precedence: the base tree's file in each tool's own order, else patchgate's default."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.shape.config import DEFAULTS_DIR, RULES_DIR, bandit_config, mypy_config, ruff_config


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "args"),
    [
        ({}, ("--config", "/patchgate/defaults/ruff.toml")),
        ({"pyproject.toml": "[project]\nname = 'x'\n"}, ("--config", "/patchgate/defaults/ruff.toml")),
        ({"pyproject.toml": "[tool.ruff]\nline-length = 90\n"}, ("--config", "/src/base/pyproject.toml")),
        (
            {"pyproject.toml": "[tool.ruff]\n", "ruff.toml": "line-length = 90\n"},
            ("--config", "/src/base/ruff.toml"),
        ),
        ({"ruff.toml": "", ".ruff.toml": ""}, ("--config", "/src/base/.ruff.toml")),
        ({"pyproject.toml": "not [valid toml"}, ("--config", "/patchgate/defaults/ruff.toml")),
    ],
)
def test_ruff_config(tmp_path: Path, files: dict[str, str], args: tuple[str, ...]) -> None:
    assert ruff_config(tree(tmp_path, files)).args == args


@pytest.mark.parametrize(
    ("files", "args"),
    [
        ({}, ("--config-file", "/patchgate/defaults/mypy.ini")),
        ({"mypy.ini": "[mypy]\nstrict = True\n"}, ("--config-file", "/src/base/mypy.ini")),
        ({".mypy.ini": "[mypy]\n"}, ("--config-file", "/src/base/.mypy.ini")),
        (
            {"pyproject.toml": "[tool.mypy]\nstrict = true\n", "setup.cfg": "[mypy]\n"},
            ("--config-file", "/src/base/pyproject.toml"),
        ),
        ({"setup.cfg": "[metadata]\nname = x\n[mypy]\n"}, ("--config-file", "/src/base/setup.cfg")),
        ({"setup.cfg": "[metadata]\nname = x\n"}, ("--config-file", "/patchgate/defaults/mypy.ini")),
        (
            {"mypy.ini": "[mypy]\n", "pyproject.toml": "[tool.mypy]\n"},
            ("--config-file", "/src/base/mypy.ini"),
        ),
    ],
)
def test_mypy_config(tmp_path: Path, files: dict[str, str], args: tuple[str, ...]) -> None:
    assert mypy_config(tree(tmp_path, files)).args == args


@pytest.mark.parametrize(
    ("files", "args"),
    [
        ({}, ("-c", "/patchgate/defaults/bandit.yaml")),
        ({"pyproject.toml": "[tool.bandit]\nskips = ['B101']\n"}, ("-c", "/src/base/pyproject.toml")),
        ({".bandit": "[bandit]\nskips = B101\n"}, ("--ini", "/src/base/.bandit")),
        (
            {".bandit": "[bandit]\n", "pyproject.toml": "[tool.bandit]\n"},
            ("--ini", "/src/base/.bandit", "-c", "/src/base/pyproject.toml"),
        ),
        ({"bandit.yaml": "skips: []\n"}, ("-c", "/src/base/bandit.yaml")),
        ({".bandit.yml": "skips: []\n"}, ("-c", "/src/base/.bandit.yml")),
    ],
)
def test_bandit_config(tmp_path: Path, files: dict[str, str], args: tuple[str, ...]) -> None:
    assert bandit_config(tree(tmp_path, files)).args == args


def test_a_symlinked_config_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.toml"
    outside.write_text("line-length = 90\n")
    base = tmp_path / "base"
    base.mkdir()
    (base / "ruff.toml").symlink_to(outside)
    assert ruff_config(base).origin == "patchgate default"


def test_defaults_and_rules_ship_with_the_package() -> None:
    assert {p.name for p in DEFAULTS_DIR.iterdir()} >= {"ruff.toml", "mypy.ini", "bandit.yaml"}
    assert len(list(RULES_DIR.glob("*.yml"))) >= 4
