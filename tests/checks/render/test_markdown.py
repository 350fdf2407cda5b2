from __future__ import annotations

import re

import pytest

from checks.render.annotations import render_annotations
from checks.render.gfm import code, escape
from checks.render.markdown import MAX_SUMMARY_BYTES, render_document, render_markdown
from checks.render.sarif import render_sarif
from checks.report import BehaviourResult, Finding, Report, ShapeResult, SuiteResult, TestFailure, ToolRun


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


def test_the_title_says_it_once_and_the_summary_opens_with_the_layers() -> None:
    title, summary = render_markdown(report())
    lines = summary.splitlines()
    assert title.startswith("failure — ")
    assert "hidden 43/50 (86%)" in title and "held-out 9/10 (90%)" in title
    # The title is the numbers; the reasons are said once, as the bullets under the table.
    assert "needs 100%" not in title
    assert summary.count("behaviour: hidden 43/50 (86%), needs 100%") == 1
    # GitHub shows the title above the summary: no heading says it again.
    assert lines[0] == "| layer | result | numbers |"
    assert not [line for line in lines if line.startswith("#")]
    table = [line for line in lines if line.startswith("| **")]
    assert [row.split("|")[1].strip() for row in table] == [
        "**shape**",
        "**behaviour**",
        "**quality (judged, not executed)**",
    ]
    assert "regressions 0" in table[1] and "fail→pass 5/7" in table[1]
    assert "fail→pass 5/7: of the 7 tests failing on base, those passing on head" in summary
    assert "<details><summary>Failing tests of the hidden suite (1)</summary>" in summary


def test_a_shape_pass_with_findings_for_a_maintainer_is_no_green_tick() -> None:
    hygiene = Finding(
        tool="hygiene",
        rule="skip-added",
        path="tests/test_x.py",
        start_line=3,
        end_line=3,
        severity="error",
        message="a new skip marker",
        needs_maintainer=True,
    )
    shape = ShapeResult(status="passed", findings=[hygiene])
    r = report(conclusion="action_required", reasons=["hygiene: 1 finding need a maintainer"], shape=shape)
    r.shape.tools = [ToolRun(tool="hygiene", status="ok")]
    title, summary = render_markdown(r)
    [shape_row] = [line for line in summary.splitlines() if line.startswith("| **shape**")]
    assert "🟠 needs a maintainer" in shape_row and "✅" not in shape_row
    assert "shape needs a maintainer" in title
    assert "| hygiene | 🟠 1 finding for a maintainer |" in summary
    # One severity everywhere: the summary, the annotations and SARIF agree.
    [row] = [line for line in summary.splitlines() if "skip-added" in line]
    assert "| warning (needs a maintainer) |" in row
    [annotation] = render_annotations(r)
    assert annotation.level == "warning"
    [result] = render_sarif(r)["runs"][0]["results"]
    assert result["level"] == "warning"


def test_a_test_id_is_printed_exactly() -> None:
    odd = "test_x.py::test_y[a  b]"  # two spaces: pytest's id, to paste back as it is
    r = report()
    r.behaviour.suites[0].failures = [TestFailure(id=odd)]
    _, summary = render_markdown(r)
    assert f"`{odd}`" in summary


def test_the_findings_table_names_every_column() -> None:
    r = report(shape=ShapeResult(status="failed", findings=[finding(1)]))
    _, summary = render_markdown(r)
    [header] = [line for line in summary.splitlines() if line.startswith("| where |")]
    assert "|  |" not in header and header.endswith("| origin |")
    assert "| this change |" in summary


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
    # Raw only inside code spans, where markdown renders it as text (test_gfm.py renders it).
    assert "<script>" not in re.sub(r"(`+) ?.*? ?\1", "", summary)


def test_escape_and_code() -> None:
    assert escape("a|b") == "a\\|b"
    assert escape("a_b*c [x](y)") == "a\\_b\\*c \\[x\\](y)"
    # block syntax only at the start: no list, heading or quote can begin
    assert escape("1. item") == "1\\. item"
    assert escape("# title") == "\\# title"
    assert escape("- x (y) 1.5") == "\\- x (y) 1.5"
    assert escape("<b>") == "&lt;b&gt;"
    assert code("a`b") == "``a`b``"
    assert code("|") == "`|`" and code("|", cell=True) == "`\\|`"
    assert code("a<b&c") == "`a<b&c`"  # inside a code span nothing is read: entities would show
    assert code(" a ") == "`  a  `"
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


def test_changed_files_read_whole_or_not_mutated_are_named_with_why() -> None:
    from checks.report import StrengthResult

    strength = StrengthResult(
        status="measured", changed_lines=3, hidden_covered=0, mutants=2, killed=2,
        read_whole=["pkg/big.py: over 2 MiB, not parsed; every changed line counted"],
        not_mutated=["pkg/big.py: over 2 MiB, not parsed"],
    )  # fmt: skip
    behaviour = BehaviourResult(status="passed", strength=strength)
    _, summary = render_markdown(report(conclusion="action_required", reasons=[], behaviour=behaviour))
    assert "1 changed file counted whole (could not be parsed)" in summary
    assert "1 changed file not mutated" in summary
    whole = "`pkg/big.py: over 2 MiB, not parsed; every changed line counted`"
    assert f"Changed files whose statements could not be worked out: {whole}" in summary
    assert "Changed files not mutated: `pkg/big.py: over 2 MiB, not parsed`" in summary


def test_a_page_of_its_own_opens_with_the_headline_once() -> None:
    # `patchgate run --format markdown` and the Action's job summary: no check run title above it.
    page = render_document(report())
    first, rest = page.split("\n", 1)
    assert first.startswith("### ❌ failure — ") and "held-out 9/10 (90%)" in first
    assert page.count("hidden 43/50 (86%), needs 100%") == 1
    assert rest.lstrip().startswith("| layer | result | numbers |")


def test_the_repository_s_and_the_change_s_own_tests_say_what_they_prove() -> None:
    edited = TestFailure(id="tests/t.py::test_mm", message="assert 0.0 == 0.001", edit="tests/t.py:10")
    repository = SuiteResult(
        name="repository tests (from base)", kind="repository", status="passed", passed=6, failed=1, total=7,
        rewritten=[edited],
    )  # fmt: skip
    own = SuiteResult(
        name="the change's own tests (written by its author)", kind="own", passed=2, failed=1, total=3,
        isolation="in-process", failures=[TestFailure(id="tests/new.py::test_x", message="x | y")],
    )  # fmt: skip
    behaviour = BehaviourResult(status="passed", suites=[repository, own])
    _, text = render_markdown(Report(conclusion="action_required", behaviour=behaviour))
    assert "| repository tests (from base) | repository | 6/7 |" in text
    assert "| the change's own tests (written by its author) | own tests | 2/3 |" in text
    # What each can and cannot prove, said where their numbers are.
    assert "weaker evidence than a hidden suite's" in text
    assert "counted for nothing" in text
    rewrote = (
        "the change rewrote this test (`tests/t.py:10`); its base version fails on head: assert 0.0 == 0.001"
    )
    assert f"- `tests/t.py::test_mm` — {rewrote}" in text
    assert "Failing tests of the repository tests (from base) (1)" in text
    assert "Failing tests of the change's own tests (1)" in text
    assert "- `tests/new.py::test_x` — x \\| y" in text


def differential_report() -> Report:
    from checks.report import DifferentialResult, EfficiencyResult, FunctionCheck

    hidden = DifferentialResult(
        name="hidden", source="hidden", status="failed", checked=1, agreed=0, inputs=1, seed="5eed" * 8,
        functions=[FunctionCheck(
            id="p.diff.yml::durations.parse_duration", function="durations.parse_duration",
            reference="ref.parse_duration", status="disagreed", inputs=1,
            counterexample="head returned datetime.timedelta(0) for parse_duration(''); reference raised "
                           "ValueError",
            efficiency=EfficiencyResult(status="not_run", detail="not measured: it disagrees"),
        )],
    )  # fmt: skip
    # A held-out entry is made without functions; even one that had them must not show them.
    secret = FunctionCheck(id="secret.diff.yml::m.f", function="m.secret_function", reference="ref.secret",
                           status="disagreed", counterexample="SECRET INPUT")  # fmt: skip
    held_out = DifferentialResult(name="held-out", source="held_out", status="failed", checked=1, agreed=0,
                                  seed="f00d" * 8, functions=[secret])  # fmt: skip
    return report(behaviour=BehaviourResult(status="failed", differential=[hidden, held_out]))


def test_differential_rows_show_the_counterexample_for_hidden_and_counts_for_held_out() -> None:
    _, summary = render_markdown(differential_report())
    assert "differential (hidden) 0/1 functions agree in 1 input" in summary
    row = "- `durations.parse_duration`: differential: disagrees with reference `ref.parse_duration` after 1"
    assert row in summary
    found = "  - head returned datetime.timedelta(0) for parse\\_duration(''); reference raised ValueError"
    assert found in summary
    assert "5eed" * 8 in summary
    assert "differential (held-out) 0/1 functions agree" in summary
    for secret in ("SECRET", "secret_function", "f00d"):
        assert secret not in summary
