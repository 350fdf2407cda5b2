"""`patchgate calibrate` prints the calibration table from the store's judge records."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.events import GateRequest
from bot.store import JudgeRow, Store


def test_calibrate_prints_the_table_from_stored_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("PATCHGATE_DATABASE_URL", url)
    monkeypatch.setenv("PATCHGATE_CONFIG", str(tmp_path / "absent.env"))
    assert main(["calibrate"]) == 0
    assert "no shadow judgements recorded yet" in capsys.readouterr().out

    store = Store(url)
    store.migrate()
    [job] = store.record_delivery(
        "d", "pull_request", "opened", [GateRequest(1, "o/r", "a" * 40, "t", 1)]
    ).job_ids
    # 40 failing PRs the judge passed 10 times; 10 passing PRs it passed 9 times.
    rows = [JudgeRow("fake/judge", "default", False, i < 10, True) for i in range(40)]
    rows += [JudgeRow("fake/judge", "default", True, i < 9, True) for i in range(10)]
    for row in rows:
        store.add_judge_record(job, "o/r", "a" * 40, row)
    store.close()

    assert main(["calibrate", "--min-n", "30"]) == 0
    out = capsys.readouterr().out
    assert "fake/judge  [calibrated]" in out
    assert "n                 50" in out
    assert "false acceptance  25%" in out
    assert main(["calibrate", "--min-n", "100"]) == 0
    assert "UNCALIBRATED (n=40 failing PRs)" in capsys.readouterr().out
