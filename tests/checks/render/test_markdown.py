from __future__ import annotations

import re

import pytest

from checks.render.markdown import MAX_SUMMARY_BYTES, code, escape, render_markdown
from checks.report import BehaviourResult, Finding, Report, ShapeResult, SuiteResult, TestFailure


def finding(i: int, path: str = "pkg/mod.py", message: str = "unused import") -> Finding:
    return Finding(
        tool="ruff", rule="F401", path=path, start_line=i, end_line=i, severity="error", message=message
    )


def report(**kw: object) -> Report:
    base = {
        "conclusion": "failure",
        "reasons": ["behaviour: hidden 43/50 (86%), needs 100%"],
        "base_sha": "a" * 40,
        "head_sha": "b" * 40,
        "shape": ShapeResult(status="passed", preexisting=3),
        "behaviour": BehaviourResult(
            status="failed",
            suites=[
                SuiteResult(
                    name="hidden",
                    kind="hidden",
                    passed=43,
                    failed=7,
                    total=50,
                    pass_rate=0.86,
                    status="failed",
                    failures=[TestFailure(id="test_x.py::test_garbage")],
                ),
                SuiteResult(name="held-out", kind="held_out", passed=9, failed=1, total=10, pass_rate=0.9),
            ],
            regressions=0,
            fail_to_pass=5,
            fail_to_pass_total=7,
            pass_to_pass=30,
        ),
    }
    base.update(kw)
    return Report.model_validate(base)


def test_headline_then_layer_table() -> None:
    title, summary = render_markdown(report())
    lines = summary.splitlines()
    assert lines[0].startswith("### ❌ failure")
    assert "hidden 43/50 (86%)" in lines[0]
    assert "held-out 9/10 (90%)" in lines[0]
    table = [line for line in lines if line.startswith("| **")]
    assert [row.split("|")[1].strip() for row in table] == [
        "**shape**",
        "**behaviour**",
        "**quality (judged, not executed)**",
    ]
    assert "regressions 0" in table[1] and "fail→pass 5/7" in table[1]
    assert title.startswith("failure — ")
    assert "<details><summary>Hidden suite hidden: failing tests (1)</summary>" in summary


@pytest.mark.parametrize(
    "nasty",
    ["|x|", "a`b``c", "<script>alert(1)</script>", "line\nbreak | pipe", "[link](http://evil)", "**bold**"],
)
def test_untrusted_text_cannot_break_the_table(nasty: str) -> None:
    r = report(shape=ShapeResult(status="failed", findings=[finding(1, path=nasty, message=nasty)]))
    _, summary = render_markdown(r)
    rows = [line for line in summary.splitlines() if line.startswith("| `") or line.startswith("| ``")]
    assert rows, summary
    for row in rows:
        # every row of the findings table keeps its 6 columns: unescaped pipes would add more
        cells = re.split(r"(?<!\\)\|", row)
        assert len(cells) == 8, row
    assert "<script>" not in summary


def test_escape_and_code() -> None:
    assert escape("a|b") == "a\\|b"
    assert escape("a_b*c [x](y)") == "a\\_b\\*c \\[x\\](y)"
    # block syntax only at the start: no list, heading or quote can begin
    assert escape("1. item") == "1\\. item"
    assert escape("# title") == "\\# title"
    assert escape("- x (y) 1.5") == "\\- x (y) 1.5"
    assert escape("<b>") == "&lt;b&gt;"
    assert code("a`b") == "``a`b``"
    assert code("|") == "`&#124;`"
    assert len(escape("x" * 1000, limit=10)) == 10


def test_summary_never_exceeds_the_byte_limit_and_says_so() -> None:
    # multi-byte messages make bytes and characters differ
    many = [finding(i, message="é" * 250) for i in range(1, 3000)]
    r = report(shape=ShapeResult(status="failed", findings=many))
    r.behaviour.suites[0].failures = [TestFailure(id=f"t.py::test_{i}_" + "x" * 250) for i in range(3000)]
    _, summary = render_markdown(r)
    assert len(summary.encode()) <= MAX_SUMMARY_BYTES
    assert "Shape findings (2999)" in summary  # shrunk, not dropped
    assert "more (see the JSON report)" in summary
    assert "left out: the summary is limited to 65,535 bytes" in summary


def test_small_limit_cuts_at_a_section_boundary() -> None:
    _, full = render_markdown(report())
    _, cut = render_markdown(report(), limit=len(full.encode()) - 50)
    assert cut.count("<details>") == cut.count("</details>")
    assert "left out" in cut


def test_held_out_ids_are_never_rendered_even_if_present() -> None:
    leaky = report()
    leaky.behaviour.suites[1].failures = [TestFailure(id="HELDOUT_MARKER_test", message="HELDOUT_MARKER")]
    _, summary = render_markdown(leaky)
    assert "HELDOUT_MARKER" not in summary


def test_a_verdict_posted_before_its_mutants_says_at_the_top_that_it_may_change() -> None:
    from checks.report import StrengthResult

    pending = StrengthResult(status="measured", changed_lines=8, hidden_covered=8, pending=True)
    behaviour = BehaviourResult(status="passed", strength=pending)
    _, summary = render_markdown(report(conclusion="success", reasons=[], behaviour=behaviour))
    top = summary.split("<details>")[0]
    assert "Suite strength: still measuring" in top
    assert "may change to `action_required`" in top
    assert "never changes to a better one" in top
    assert "mutation score: still measuring" in summary

    done = pending.model_copy(update={"pending": False, "mutants": 4, "killed": 4})
    _, summary = render_markdown(
        report(conclusion="success", reasons=[], behaviour=behaviour.model_copy(update={"strength": done}))
    )
    assert "still measuring" not in summary
    assert "kills 4/4 mutants" in summary
    # Where a mutation score is shown, so is its limit.
    assert "can tell a mutated copy of itself apart" in summary
