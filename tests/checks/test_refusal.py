"""A tree beyond bounds in the report: the PR's failure on the head, a maintainer's problem on the base."""

from __future__ import annotations

from checks.refusal import TREE_TOOL, refused_report, tree_finding
from checks.workspace import TreeRefused
from sandbox.trees import TreeBoundExceeded

TOO_DEEP = TreeBoundExceeded("d/" * 100 + "d", "depth", 100)


def test_a_head_beyond_bounds_fails_naming_the_path() -> None:
    report = refused_report(TreeRefused("head", TOO_DEEP, base_sha="b" * 40, head_sha="h" * 40))
    assert report.conclusion == "failure"
    assert report.reasons == [
        "shape: the change's tree breaks a bound: " + "d/" * 29 + "d…" + "/d" * 20 + ": nested more than "
        "100 levels deep"
    ]
    assert (report.base_sha, report.head_sha) == ("b" * 40, "h" * 40)
    assert report.shape.status == "failed"
    [finding] = report.shape.findings
    assert (finding.tool, finding.rule, finding.severity) == (TREE_TOOL, "tree-depth", "error")
    assert (report.behaviour.status, report.quality.status) == ("skipped", "skipped")
    assert "beyond patchgate's bounds" in report.behaviour.detail


def test_a_base_beyond_bounds_asks_a_maintainer() -> None:
    report = refused_report(TreeRefused("base", TreeBoundExceeded("x" * 300, "name", 255)))
    assert report.conclusion == "action_required"
    assert report.reasons[0].startswith("the base tree breaks a bound: xxx")
    assert "a name longer than 255 bytes" in report.reasons[0]
    assert report.shape.status == "skipped"


def test_a_finding_never_becomes_an_annotation() -> None:
    # Line 0 of a path that may not exist at head: a summary matter, not an annotation.
    finding = tree_finding(TreeBoundExceeded("many/f9", "entries", 9))
    assert (finding.path, finding.start_line, finding.on_changed_line) == ("many/f9", 0, False)
    assert finding.message == "the tree holds more than 9 entries"
