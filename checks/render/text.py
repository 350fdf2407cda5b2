"""A terminal rendering of a report for humans (rich)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from checks.render.numbers import (
    QUALITY_LABEL,
    STATUS_ICON,
    behaviour_numbers,
    differential_notes,
    differential_numbers,
    efficiency_line,
    function_line,
    headline,
    quality_numbers,
    shape_numbers,
    strength_numbers,
)
from checks.report import SHORT_LABELS, Report

MAX_FINDINGS = 50


def render_text(report: Report, *, width: int = 110, color: bool = False) -> str:
    """Render ``report`` for a terminal; every untrusted string is escaped for rich markup."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color, highlight=False)
    console.print(f"[bold]{escape(headline(report))}[/bold]")
    layers = Table(show_header=True, header_style="bold")
    layers.add_column("layer")
    layers.add_column("result")
    layers.add_column("numbers")
    layers.add_row(
        "shape",
        f"{STATUS_ICON[report.shape.status]} {report.shape.status}",
        escape(shape_numbers(report.shape)),
    )
    layers.add_row(
        "behaviour",
        f"{STATUS_ICON[report.behaviour.status]} {report.behaviour.status}",
        escape(behaviour_numbers(report.behaviour)),
    )
    layers.add_row(
        QUALITY_LABEL,
        f"{STATUS_ICON[report.quality.status]} {report.quality.status}",
        escape(quality_numbers(report.quality)),
    )
    console.print(layers)
    if report.reasons and report.conclusion != "success":
        for reason in report.reasons:
            console.print(f"  • {escape(reason)}")
    new = [f for f in report.shape.findings if f.introduced]
    for f in new[:MAX_FINDINGS]:
        console.print(
            f"  {escape(f.path)}:{f.start_line}  {escape(f.tool)} {escape(f.rule)}  {escape(f.message)}"
        )
    if len(new) > MAX_FINDINGS:
        console.print(f"  … {len(new) - MAX_FINDINGS} more findings (see --format json)")
    for s in report.behaviour.suites:
        if s.kind == "held_out":
            continue
        label = SHORT_LABELS[s.kind]
        for failure in s.failures:
            message = f" — {escape(failure.message)}" if failure.message else ""
            console.print(f"  {label} ✗ {escape(failure.id)}{message}")
        for failure in s.rewritten:
            console.print(
                f"  {label} ✗ {escape(failure.id)} — the change rewrote it ({escape(failure.edit)})"
            )
    for d in report.behaviour.differential:
        console.print(f"  {escape(differential_numbers(d))}")
        for check in d.functions if d.source != "held_out" else []:
            console.print(f"    {escape(check.function)}: {escape(function_line(check))}")
            if check.counterexample or check.detail:
                console.print(f"      {escape(check.counterexample or check.detail)}")
            if check.efficiency is not None:
                console.print(f"      {escape(efficiency_line(check.efficiency))}")
        notes = differential_notes(d) if d.source != "held_out" else ""
        if notes:
            console.print(f"    {escape(notes)}")
    if report.behaviour.strength.status == "measured":
        console.print(f"  strength: {escape(strength_numbers(report.behaviour.strength))}")
    for c in report.quality.criteria:
        if c.verdict != "pass":
            console.print(f"  judged {escape(c.verdict)}: {escape(c.id)} {escape(c.reason)}")
    return buffer.getvalue()
