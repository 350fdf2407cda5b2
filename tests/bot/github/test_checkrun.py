"""Check-run bodies: valid for GitHub's API (githubkit's request models), annotations in batches of 50."""

from __future__ import annotations

import pytest

from bot.github import checkrun
from checks.report import Finding, Report, ShapeResult
from tests.fakes.github_server import MAX_SUMMARY_BYTES, validate_check_run_body


def report_with(findings: int, message: str = "m", conclusion: str = "failure") -> Report:
    return Report(
        conclusion=conclusion,  # type: ignore[arg-type]
        base_sha="a" * 40,
        head_sha="b" * 40,
        shape=ShapeResult(
            status="failed",
            findings=[
                Finding(
                    tool="ruff",
                    rule="E1",
                    path="m.py",
                    start_line=i + 1,
                    end_line=i + 1,
                    severity="error",
                    message=f"{i} {message}",
                )
                for i in range(findings)
            ],
        ),
    )


def test_started_body_is_a_valid_create() -> None:
    body = checkrun.started(
        "patchgate", "b" * 40, "o/r#1@" + "b" * 40, "https://x/runs/1?token=t", "pull_request.opened"
    )
    assert validate_check_run_body("POST", body) == []
    assert body["status"] == "in_progress"
    assert body["external_id"] == "o/r#1@" + "b" * 40


@pytest.mark.parametrize(
    ("findings", "sizes"), [(0, []), (1, [1]), (50, [50]), (51, [50, 1]), (120, [50, 50, 20])]
)
def test_annotations_go_out_in_batches_of_50(findings: int, sizes: list[int]) -> None:
    updates, final = checkrun.prepare(report_with(findings)).bodies()
    bodies = [*updates, final]
    sent = [len(b.get("output", {}).get("annotations", [])) for b in bodies]
    assert [n for n in sent if n] == sizes
    assert sum(sent) == findings
    # Only the last request completes the run, so a completed run has every annotation.
    assert [b.get("status") for b in bodies][-1] == "completed"
    assert all("conclusion" not in b for b in updates)
    for body in bodies:
        assert validate_check_run_body("PATCH", body) == []
        assert body["output"]["summary"] == bodies[0]["output"]["summary"]


@pytest.mark.parametrize(
    ("sent", "sizes"), [(0, [50, 50, 20]), (50, [50, 20]), (75, [45]), (120, []), (500, [])]
)
def test_annotations_github_already_has_are_not_sent_again(sent: int, sizes: list[int]) -> None:
    report = report_with(120)
    updates, final = checkrun.prepare(report).bodies(sent=sent)
    bodies = [*updates, final]
    lines = [a["start_line"] for b in bodies for a in b.get("output", {}).get("annotations", [])]
    assert [n for n in (len(b.get("output", {}).get("annotations", [])) for b in bodies) if n] == sizes
    everything = [a["start_line"] for a in checkrun.prepare(report).annotations]
    assert lines == everything[sent:]
    assert final["status"] == "completed"
    assert all(validate_check_run_body("PATCH", b) == [] for b in bodies)


def test_a_huge_report_fits_githubs_byte_limit() -> None:
    report = report_with(3000, message="é" * 400)
    updates, final = checkrun.prepare(report).bodies()
    summary = final["output"]["summary"]
    assert len(summary.encode()) <= MAX_SUMMARY_BYTES
    assert validate_check_run_body("PATCH", final) == []
    assert len(updates) == 59


@pytest.mark.parametrize("text", ["a" * 70_000, "é" * 40_000, "😀" * 20_000, "short"])
def test_fit_cuts_at_a_character_boundary(text: str) -> None:
    cut = checkrun.fit(text)
    assert len(cut.encode()) <= MAX_SUMMARY_BYTES
    if len(text.encode()) <= MAX_SUMMARY_BYTES:
        assert cut == text
    else:
        assert cut.endswith("(cut to fit GitHub's limit)")


def test_buttons() -> None:
    ids = [a["identifier"] for a in checkrun.actions(report_with(0))]
    assert ids == ["rerun", "judge"]
    judged = report_with(0)
    judged.quality.status = "passed"
    assert [a["identifier"] for a in checkrun.actions(judged)] == ["rerun"]


def test_progress_and_cancel_and_not_agent_bodies_are_valid() -> None:
    report = report_with(2)
    body = checkrun.progress("shape", report)
    assert body is not None
    assert validate_check_run_body("PATCH", body) == []
    assert "2 new findings" in body["output"]["summary"]
    assert checkrun.progress("done", report) is None
    cancelled = checkrun.cancelled("superseded by " + "c" * 40)
    assert validate_check_run_body("PATCH", cancelled) == []
    assert cancelled["conclusion"] == "cancelled"
    assert cancelled["output"]["title"] == "Superseded by " + "c" * 40
    neutral = checkrun.not_agent("patchgate", "b" * 40, "k", "https://x")
    assert validate_check_run_body("POST", neutral) == []


def test_the_validator_catches_what_github_would_refuse() -> None:
    assert validate_check_run_body("POST", {"head_sha": "x"})  # no name
    assert validate_check_run_body("PATCH", {"status": "completed", "conclusion": "passed"})
    assert validate_check_run_body("PATCH", {"output": {"title": "t", "summary": "s", "colour": "red"}})
    assert validate_check_run_body("PATCH", {"output": {"title": "t", "summary": "x" * 70_000}})
    many = [{"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": "m"}] * 51
    assert validate_check_run_body("PATCH", {"output": {"title": "t", "summary": "s", "annotations": many}})


def test_an_annotation_message_is_cut_to_githubs_limit_in_bytes() -> None:
    # Hostile: a tool's message quoting a name the change chose, of 4-byte characters, was cut to
    # 60,000 characters - 240,000 bytes, over GitHub's 64 KB: the update would be refused (a 422, an
    # error of GitHub's, retried then neutral).
    from checks.render.annotations import MAX_MESSAGE, Annotation

    item = checkrun._annotation(Annotation("a.py", 1, 1, "failure", "mypy", "\U0001d400" * 40_000))
    message = str(item["message"])
    assert len(message.encode()) <= MAX_MESSAGE < 64 * 1024
    assert message.startswith("\U0001d400" * 1000)
