"""`patchgate serve` and `patchgate worker` refuse to start without what they need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.bot.harness import ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["serve"], {}, "PATCHGATE_WEBHOOK_SECRET is not set"),
        (["serve"], {"PATCHGATE_WEBHOOK_SECRET": "s"}, "PATCHGATE_APP_ID is not set"),
        (
            ["serve", "--pipeline", "tests.bot.pipelines:no_such_gate"],
            {"PATCHGATE_WEBHOOK_SECRET": "s"},
            "expected MODULE:FUNCTION",
        ),
        # --gate is the option's former name, still accepted
        (
            ["serve", "--gate", "tests.bot.pipelines:no_such_gate"],
            {"PATCHGATE_WEBHOOK_SECRET": "s"},
            "--pipeline 'tests.bot.pipelines:no_such_gate': expected MODULE:FUNCTION",
        ),
        (["worker"], {"PATCHGATE_WEBHOOK_SECRET": "s"}, "PATCHGATE_APP_ID is not set"),
        # SQLite is one process's store: refused wherever another process would share it.
        (["serve", "--no-workers"], {"PATCHGATE_WEBHOOK_SECRET": "s"}, "only one process"),
        (
            ["serve"],
            {"PATCHGATE_WEBHOOK_SECRET": "s", "PATCHGATE_BROKER": "redis://redis:6379/0"},
            "PATCHGATE_BROKER is Redis",
        ),
        (
            ["worker"],
            {"PATCHGATE_WEBHOOK_SECRET": "s", "PATCHGATE_APP_ID": "1", "PATCHGATE_PRIVATE_KEY": "k"},
            "only one process",
        ),
        # A state directory this uid cannot write: said at start, not as an OSError mid-job.
        (
            ["serve"],
            {
                "PATCHGATE_WEBHOOK_SECRET": "s",
                "PATCHGATE_APP_ID": "1",
                "PATCHGATE_PRIVATE_KEY": "k",
                "PATCHGATE_WORK_DIR": "/proc/patchgate-work",
            },
            "PATCHGATE_WORK_DIR /proc/patchgate-work is not writable by this process",
        ),
    ],
)
def test_missing_settings_are_usage_errors(
    tmp_path: Path, argv: list[str], env: dict[str, str], message: str
) -> None:
    full_env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "PATCHGATE_CONFIG": str(tmp_path / "none.env"),
        **env,
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", *argv],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
