"""The test tiers of tests/conftest.py: marks from fixtures, and Docker refused under --fast."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

UNMARKED = """\
import pytest
from sandbox.engine import docker_client


@pytest.fixture
def base_image():
    return "never-built"


def test_reaches_for_docker_unmarked():
    docker_client()


def test_uses_the_image_fixture(base_image):
    pass


def test_needs_nothing():
    pass
"""


@pytest.mark.slow  # a second pytest: seconds, and the fast tier need not test itself
def test_fast_mode_fails_an_unmarked_docker_test_and_deselects_a_fixtures_one(tmp_path: Path) -> None:
    (tmp_path / "test_tiers.py").write_text(UNMARKED)
    # tests/conftest.py as a plugin, and no project configuration: only these three tests.
    plugin = ["-p", "tests.conftest", "-c", os.devnull, "--rootdir", str(tmp_path), "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, "-q", "-m", "not docker", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PATCHGATE_FAST": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "1 failed, 1 passed, 1 deselected" in done.stdout, done.stdout + done.stderr
    assert "FAILED" in done.stdout and "test_reaches_for_docker_unmarked" in done.stdout
    assert "mark it @pytest.mark.docker" in done.stdout
