"""The check-run summary rendered as GitHub renders it (cmark-gfm, GitHub's extensions), read as HTML.

What a maintainer sees, not what the markdown source looks like: one headline
(the title, which GitHub shows above the summary), every table column with a
header, no markdown escape shown literally, test ids exactly as pytest prints
them, and a shape layer with findings for a maintainer that is no green tick.
"""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser

import pytest

from checks.render.markdown import render_markdown
from checks.report import (
    BehaviourResult,
    Finding,
    Report,
    ShapeResult,
    StrengthResult,
    SuiteResult,
    TestFailure,
    ToolRun,
)
from tests.conftest import page_tool

EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter", "tasklist")
ODD_ID = "tests/test_parse.py::test_units[1  h|a<b&c]"  # two spaces and <, &, |: as pytest prints it


@pytest.fixture(scope="module")
def cmark_gfm() -> str:
    return page_tool("cmark-gfm")


def github_html(cmark: str, markdown: str) -> str:
    argv = [cmark, "--unsafe"]  # GitHub keeps <details>/<summary>/<sub>; tagfilter drops the rest
    for extension in EXTENSIONS:
        argv += ["-e", extension]
    return subprocess.run(argv, input=markdown, capture_output=True, text=True, check=True).stdout


class Page(HTMLParser):
    """The text a reader sees, the table header cells, the code spans and the headings."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.headers: list[str] = []
        self.codes: list[str] = []
        self.headings = 0
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open.append(tag)
        if tag == "th":
            self.headers.append("")
        elif tag == "code":
            self.codes.append("")
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.headings += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            while self._open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if "th" in self._open:
            self.headers[-1] += data
        if "code" in self._open:
            self.codes[-1] += data


def maintainer_report() -> Report:
    """A PR that needs a maintainer: hygiene findings beside a passing behaviour layer."""
    hygiene = [
        Finding(
            tool="hygiene",
            rule=rule,
            path="tests/test_parse.py",
            start_line=line,
            end_line=line,
            severity="error",
            message=f"`{rule}` in test_units_*: see docs",
            needs_maintainer=True,
        )
        for line, rule in ((3, "skip-added"), (9, "assert-weakened"))
    ]
    ruff = Finding(
        tool="ruff", rule="F401", path="pkg/a_b.py", start_line=1, end_line=1, severity="warning",
        message="`os` imported but unused", introduced=False,
    )  # fmt: skip
    suite = SuiteResult(
        name="hidden", kind="hidden", passed=34, failed=1, total=35, pass_rate=34 / 35, status="failed",
        failures=[TestFailure(id=ODD_ID, message="assert 1 == 2")],
    )  # fmt: skip
    # A suite folder's own name, with markdown's special characters in it.
    named = suite.model_copy(update={"name": "unit_tests*", "failures": [TestFailure(id="t.py::test_a")]})
    return Report(
        conclusion="action_required",
        reasons=["hygiene: 2 findings need a maintainer (assert-weakened, skip-added)"],
        base_sha="a" * 40,
        head_sha="b" * 40,
        shape=ShapeResult(
            status="passed",
            findings=[*hygiene, ruff],
            preexisting=1,
            tools=[ToolRun(tool="ruff", status="ok"), ToolRun(tool="hygiene", status="ok")],
        ),
        behaviour=BehaviourResult(
            status="passed",
            suites=[suite, named],
            fail_to_pass=33,
            fail_to_pass_total=33,
            pass_to_pass=1,
            strength=StrengthResult(status="measured", changed_lines=7, hidden_covered=7),
        ),
    )


def test_the_rendered_check_run_reads_once_and_cleanly(cmark_gfm: str) -> None:
    title, summary = render_markdown(maintainer_report())
    page = Page()
    page.feed(github_html(cmark_gfm, summary))
    text = "".join(page.text)
    # One headline: the title. The summary has no heading of its own and does not repeat it.
    assert page.headings == 0
    assert title.split(" — ")[0] not in text
    assert text.count("hygiene: 2 findings need a maintainer") == 1  # the reasons, once
    # Every table column is named; no markdown escape is shown as it is.
    assert page.headers and all(h.strip() for h in page.headers), page.headers
    for escaped in ("\\`", "\\_", "\\*", "\\|", "\\[", "&amp;"):
        assert escaped not in text, (escaped, text)
    # The test id, exactly: it pastes back into pytest.
    assert ODD_ID in page.codes
    # A shape layer whose findings need a maintainer is no green tick, and says why.
    assert "🟠 needs a maintainer" in text and "✅ passed" not in text.split("behaviour")[0]
    assert "hygiene ok" not in text
    # The figures are explained where they appear.
    assert "fail→pass 33/33: of the 33 tests failing on base, those passing on head" in text
    assert "Failing tests of the hidden suite (1)" in text and "Hidden suite hidden" not in text
    assert "Failing tests of hidden suite unit_tests* (1)" in text


def test_untrusted_markdown_in_a_finding_stays_text(cmark_gfm: str) -> None:
    nasty = "[click](javascript:alert(1)) <img src=x onerror=alert(1)> | **bold** `tick`"
    report = maintainer_report()
    report.shape.findings[0].message = nasty
    # In code spans too: a path, a rule and a test id are shown raw, as text.
    report.shape.findings[0].path = "<img src=x onerror=alert(1)>|`x`.py"
    report.behaviour.suites[0].failures[0].id = "t.py::test[<script>alert(1)</script>|`]"
    _, summary = render_markdown(report)
    html = github_html(cmark_gfm, summary)
    assert "<img" not in html and "<script" not in html
    assert 'href="javascript' not in html and "<strong>bold" not in html
    page = Page()
    page.feed(html)
    assert "[click](javascript:alert(1))" in "".join(page.text)
