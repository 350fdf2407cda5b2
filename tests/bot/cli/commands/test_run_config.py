"""`patchgate run` reads the judge from the config file, as the service does (bot/settings.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.bot.cli.commands.test_run import patchgate
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve

NOT_APPLICABLE = Reply.json({"verdict": "N/A", "reason": "nothing to say", "evidence": []})


@pytest.mark.docker
def test_a_judge_in_the_config_file_reaches_a_local_run(
    passing_change: tuple[GitRepo, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, hidden, policy = passing_change
    # Only the config file names a judge: none of its settings come from the environment.
    for name in [k for k in os.environ if k.startswith("PATCHGATE_JUDGE_")]:
        monkeypatch.delenv(name)
    with serve(lambda request: NOT_APPLICABLE) as judge:
        config = tmp_path / "patchgate.env"
        config.write_text(
            f"PATCHGATE_JUDGE_API_BASE={judge.url}\n"
            "PATCHGATE_JUDGE_API_KEY=sk-from-the-config-file\n"
            "PATCHGATE_JUDGE_NUM_RETRIES=0\n"
        )
        done = patchgate(
            "run", "--repo", repo.path, "--base", "main", "--head", "agent/sub", "--hidden", hidden,
            "--policy", policy, "--format", "json", env={"PATCHGATE_CONFIG": str(config)},
        )  # fmt: skip
        calls = judge.calls
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert calls >= 1
    assert report["quality"]["status"] != "skipped", report["quality"]
    assert "sk-from-the-config-file" not in done.stdout + done.stderr
