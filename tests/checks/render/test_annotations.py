from __future__ import annotations

from checks.render.annotations import BATCH_SIZE, Annotation, batches, render_annotations
from checks.report import Citation, CriterionResult, Finding, QualityResult, Report, ShapeResult


def f(line: int, *, on_changed: bool = True, introduced: bool = True, severity: str = "error") -> Finding:
    return Finding(
        tool="mypy",
        rule="arg-type",
        path="a.py",
        start_line=line,
        end_line=line,
        severity=severity,  # type: ignore[arg-type]
        message="bad",
        introduced=introduced,
        on_changed_line=on_changed,
    )


def test_only_introduced_findings_on_changed_lines() -> None:
    r = Report(
        conclusion="failure",
        shape=ShapeResult(
            findings=[f(1), f(2, on_changed=False), f(3, introduced=False), f(4, severity="info")]
        ),
    )
    got = render_annotations(r)
    assert [(a.start_line, a.level) for a in got] == [(1, "failure"), (4, "notice")]
    assert got[0] == Annotation("a.py", 1, 1, "failure", "mypy: arg-type", "bad")


def test_verified_judge_fail_citations_become_annotations() -> None:
    crit = CriterionResult(
        id="errors",
        rubric="default",
        question="Are errors handled?",
        severity="advisory",
        verdict="fail",
        reason="swallows",
        evidence=[
            Citation(path="a.py", start_line=5, end_line=6, quote="except: pass", verified=True),
            Citation(path="a.py", start_line=9, end_line=9, quote="made up", verified=False),
        ],
    )
    got = render_annotations(Report(conclusion="success", quality=QualityResult(criteria=[crit])))
    assert len(got) == 1
    assert got[0].level == "warning" and "judged" in got[0].message


def test_batches_of_fifty() -> None:
    r = Report(conclusion="failure", shape=ShapeResult(findings=[f(i) for i in range(1, 121)]))
    sizes = [len(b) for b in batches(render_annotations(r))]
    assert sizes == [BATCH_SIZE, BATCH_SIZE, 20]
