"""wrap_tools.py: launchers that run a tool from its own directory, whatever else is installed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sandbox.host import run_process
from sandbox.images import WRAP_TOOLS


def fake_dist(root: Path, name: str, message: str) -> None:
    """A module ``name`` with ``main`` (printing ``message``) and its dist-info with a console script."""
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(
        f"import sys\n\n\ndef main():\n    print({message!r}, sys.argv[0], sys.argv[1:])\n    return 3\n"
    )
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[console_scripts]\n{name}-cli = {name}:main\n")


def test_a_launcher_runs_the_tool_from_its_directory_and_nothing_can_shadow_it(tmp_path: Path) -> None:
    target, bin_dir = tmp_path / "tools", tmp_path / "bin"
    fake_dist(target, "pgtool", "from the tools directory")
    made = run_process((sys.executable, str(WRAP_TOOLS), str(target), str(bin_dir), "pgtool"), check=True)
    assert b"pgtool-cli" in made.stdout
    # What a repository may plant: the same module on PYTHONPATH and in the working directory.
    planted = tmp_path / "planted"
    fake_dist(planted, "pgtool", "from the repository")
    env = {**os.environ, "PYTHONPATH": str(planted)}
    result = run_process((str(bin_dir / "pgtool-cli"), "--flag", "a b"), cwd=planted, env=env)
    assert result.returncode == 3
    assert result.stdout.decode().strip() == "from the tools directory pgtool-cli ['--flag', 'a b']"


def test_a_tool_missing_from_the_directory_fails_the_build(tmp_path: Path) -> None:
    result = run_process((sys.executable, str(WRAP_TOOLS), str(tmp_path), str(tmp_path / "bin"), "nothere"))
    assert result.returncode != 0
    assert b"nothere is not installed" in result.stderr
