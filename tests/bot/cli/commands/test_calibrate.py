"""`patchgate calibrate` prints the calibration table from the store's judge records."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.github.events import GateRequest
from bot.store import JudgeRow, Store


@pytest.mark.slow
def judged(execution_passed: bool, judge_passed: bool) -> JudgeRow:
    return JudgeRow(
        model="fake/judge",
        rubric="default",
        execution_passed=execution_passed,
        judge_passed=judge_passed,
        shadow=True,
        prompt_tokens=900,
        completion_tokens=30,
        cost_usd=0.001,
    )


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
    [job] = store.deliveries.record(
        "d", "pull_request", "opened", [GateRequest(1, "o/r", "a" * 40, "t", 1)]
    ).job_ids
    # 40 failing PRs the judge passed 10 times; 10 passing PRs it passed 9 times.
    rows = [judged(False, i < 10) for i in range(40)]
    rows += [judged(True, i < 9) for i in range(10)]
    for row in rows:
        store.judge.add(job, "o/r", "a" * 40, row)
    store.close()

    assert main(["calibrate", "--min-n", "30"]) == 0
    out = capsys.readouterr().out
    assert "fake/judge  [calibrated]" in out
    assert "n                 50" in out
    assert "false acceptance  25%" in out
    assert "shadow usage      45,000+1,500 tokens, $0.0500 ($0.0010 per verdict)" in out
    assert "calibrated once a model has 30 failing PRs (--min-n)" in out
    assert main(["calibrate", "--min-n", "100"]) == 0
    assert "UNCALIBRATED (n=40 failing PRs)" in capsys.readouterr().out

    # Without --min-n, the policy's quality.calibration_min_n applies: here, the working directory's.
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate"]) == 0
    assert "30 failing PRs (the default policy)" in capsys.readouterr().out
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "patchgate.yml").write_text("quality:\n  calibration_min_n: 45\n")
    assert main(["calibrate"]) == 0
    out = capsys.readouterr().out
    assert "45 failing PRs (quality.calibration_min_n in .github/patchgate.yml)" in out
    assert "UNCALIBRATED (n=40 failing PRs)" in out
    other = tmp_path / "other.yml"
    other.write_text("quality:\n  calibration_min_n: 40\n")
    assert main(["calibrate", "--policy", str(other)]) == 0
    assert "fake/judge  [calibrated]" in capsys.readouterr().out
    other.write_text("quality:\n  calibration_min_n: many\n")
    assert main(["calibrate", "--policy", str(other)]) == 2
    assert "quality.calibration_min_n" in capsys.readouterr().err


def test_calibrate_without_the_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATCHGATE_DATABASE_URL", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("PATCHGATE_CONFIG", str(tmp_path / "absent.env"))
    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy fails, as when not installed
    assert main(["calibrate"]) == 2
    err = capsys.readouterr().err
    assert "the `calibrate` extra" in err
    assert "pip install 'patchgate[calibrate]'" in err
    assert not (tmp_path / "store.db").exists()  # nothing was opened
