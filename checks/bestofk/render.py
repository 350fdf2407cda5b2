"""Renderings of a best-of-k ranking: a check-run section (markdown), a terminal table, a headline. Pure."""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape as rich_escape
from rich.table import Table

from checks.bestofk.ranking import Placed, Ranking
from checks.render.gfm import code, escape

CONCLUSION_MARK = {"success": "✅", "failure": "❌", "neutral": "⚪", "action_required": "🟠"}


def rank_line(ranking: Ranking, candidate_id: str) -> str:
    """Return ``rank 2 of 3 for #12`` for one candidate (empty if it is not in the ranking)."""
    placed = ranking.place_of(candidate_id)
    if placed is None:
        return ""
    return f"rank {placed.rank} of {ranking.k} for {ranking.target}"


def passing_line(ranking: Ranking) -> str:
    """Return e.g. ``1 of 3 candidates pass · pass@1 33%, pass@2 67%, pass@3 100% (...)``."""
    line = f"{ranking.passing} of {ranking.k} candidates pass"
    if ranking.pass_at:
        at = ", ".join(f"pass@{j} {v:.0%}" for j, v in sorted(ranking.pass_at.items()))
        line += f" · {at} (unbiased estimator; {ranking.samples})"
    elif ranking.samples:
        line += f" ({ranking.samples})"
    return line


def consistency_line(ranking: Ranking) -> str:
    """Return how often the two orders of the pairwise judge agreed, or '' when it was not asked."""
    if not ranking.pairwise:
        return ""
    if not ranking.orders_answered:
        return f"pairwise judge: {len(ranking.pairwise)} comparison(s), none answered in both orders"
    return (
        f"pairwise judge, asked in both orders: position consistency {ranking.orders_agreed}/"
        f"{ranking.orders_answered}; the first shown won both orders in {ranking.first_position_wins}"
    )


def _name(placed: Placed) -> str:
    c = placed.candidate
    label = escape(c.id, 60)
    return f"[{label}]({c.url})" if c.url.startswith("https://") else label


def _result(placed: Placed) -> str:
    e = placed.candidate.execution
    return "pending" if e is None else f"{CONCLUSION_MARK.get(e.conclusion, '')} {e.conclusion}"


def render_ranking_markdown(ranking: Ranking, you: str = "") -> str:
    """Render the ranking as a check-run section; ``you`` marks the candidate whose run this is."""
    head = f"### 🏁 Best of {ranking.k} for {escape(ranking.target, 100)}"
    if you and (line := rank_line(ranking, you)):
        head += f": this candidate is {line}"
    rows = ["| rank | candidate | gate | execution | why |", "|---|---|---|---|---|"]
    for p in ranking.placed:
        mark = " (this)" if p.candidate.id == you else ""
        numbers = p.candidate.execution.numbers() if p.candidate.execution else "-"
        rows.append(
            f"| {p.rank} | {_name(p)}{mark} {escape(p.candidate.title, 80)} | {_result(p)} "
            f"| {escape(numbers, 200)} | {escape(p.why, 300)} |"
        )
    lines = [head, "", *rows, "", escape(passing_line(ranking), 500)]
    if consistency := consistency_line(ranking):
        lines += ["", escape(consistency, 300)]
    lines += [
        "",
        "<sub>Ranked by execution: held-out pass rate, hidden pass rate, regressions, blocking shape "
        "findings. Only candidates tied on all four and all passing go to the pairwise judge, asked in "
        f"both orders; a preference counts only when both agree. {code('patchgate rank')} "
        "does the same locally.</sub>",
    ]
    return "\n".join(lines)


def render_ranking_text(ranking: Ranking, *, width: int = 110) -> str:
    """Render the ranking as a terminal table; every untrusted string is escaped for rich markup."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True, highlight=False)
    console.print(f"best of {ranking.k} for {rich_escape(ranking.target)}")
    table = Table(show_header=True, header_style="bold")
    for column in ("rank", "candidate", "gate", "execution", "why"):
        table.add_column(column)
    for p in ranking.placed:
        numbers = p.candidate.execution.numbers() if p.candidate.execution else "-"
        table.add_row(
            str(p.rank),
            rich_escape(p.candidate.id),
            rich_escape(_result(p)),
            rich_escape(numbers),
            rich_escape(p.why),
        )
    console.print(table)
    console.print(rich_escape(passing_line(ranking)))
    if consistency := consistency_line(ranking):
        console.print(rich_escape(consistency))
    return buffer.getvalue()
