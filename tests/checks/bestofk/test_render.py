from __future__ import annotations

from checks.bestofk.ranking import Candidate, Execution, Pairwise, rank
from checks.bestofk.render import (
    consistency_line,
    passing_line,
    rank_line,
    render_ranking_markdown,
    render_ranking_text,
)


def ex(held: int, conclusion: str = "success") -> Execution:
    return Execution(
        conclusion=conclusion, held_out_passed=held, held_out_total=10, hidden_passed=5, hidden_total=5
    )


RANKING = rank(
    "#12",
    [
        Candidate(id="#13", title="Fix | the *bug*", url="https://github.com/o/r/pull/13", agent="a[bot]",
                  execution=ex(10)),
        Candidate(id="#14", title="<script>", url="javascript:alert(1)", agent="a[bot]",
                  execution=ex(3, "failure")),
        Candidate(id="#15", agent="a[bot]"),
    ],
)  # fmt: skip


def test_rank_line_and_passing_line() -> None:
    assert rank_line(RANKING, "#14") == "rank 2 of 3 for #12"
    assert rank_line(RANKING, "#99") == ""
    assert passing_line(RANKING) == "1 of 3 candidates pass (1 candidate(s) not gated yet: no pass@k)"


def test_markdown_links_only_https_and_escapes_titles() -> None:
    text = render_ranking_markdown(RANKING, you="#14")
    # "#" is escaped where markdown would read a heading; GitHub shows "#12".
    assert text.startswith("### 🏁 Best of 3 for \\#12: this candidate is rank 2 of 3 for #12")
    assert "[\\#13](https://github.com/o/r/pull/13)" in text
    assert "javascript:" not in text
    assert "Fix \\| the \\*bug\\*" in text
    assert "&lt;script&gt;" in text
    assert "| 2 | \\#14 (this)" in text
    assert "| 3 | \\#15 " in text and "pending" in text


def test_consistency_is_reported_only_when_the_judge_was_asked() -> None:
    assert consistency_line(RANKING) == ""
    tied = rank(
        "#12",
        [Candidate(id="a", execution=ex(10)), Candidate(id="b", execution=ex(10))],
        {frozenset(("a", "b")): Pairwise(a="a", b="b", preferred=None, a_first="a", b_first="b")},
    )
    assert consistency_line(tied) == (
        "pairwise judge, asked in both orders: position consistency 0/1; the first shown won both orders in 1"
    )
    assert "no preference" in render_ranking_text(tied, width=250)
