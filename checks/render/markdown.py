"""The check-run summary: what a maintainer reads in five seconds, with evidence in thirty.

GitHub limits a check run's `output.summary` to 65,535 bytes
(https://docs.github.com/en/rest/checks/runs#update-a-check-run).
"""

from __future__ import annotations

from checks.render.gfm import MAX_ROWS, code, escape
from checks.render.gfm import details as _details
from checks.render.gfm import table as _table
from checks.render.numbers import (
    CONCLUSION_ICON,
    QUALITY_LABEL,
    STATUS_ICON,
    behaviour_numbers,
    differential_notes,
    differential_numbers,
    efficiency_line,
    function_line,
    headline,
    maintainer_findings,
    plural,
    quality_numbers,
    shape_numbers,
    shape_status,
    strength_numbers,
)
from checks.report import SHORT_LABELS, FunctionCheck, Report, Reuse, ShapeResult, percent

MAX_SUMMARY_BYTES = 65_535
MAX_TITLE_CHARS = 255
# Shown at the top of a report delivered before its mutants finished (policy strength.report_first).
PENDING = (
    "> ⏳ **Suite strength: still measuring.** This conclusion was posted before the mutants of the "
    "changed lines finished running (policy `strength.report_first`). When they finish this check "
    "run is updated, and its conclusion may change to `action_required` if the hidden suite is then "
    "below a floor of `strength`; it never changes to a better one."
)


def layer_table(report: Report) -> str:
    """Return the three layers as a markdown table: result and headline numbers of each."""
    rows = [
        ("shape", report.shape.status, shape_numbers(report.shape)),
        ("behaviour", report.behaviour.status, behaviour_numbers(report.behaviour)),
        (QUALITY_LABEL, report.quality.status, quality_numbers(report.quality)),
    ]
    lines = ["| layer | result | numbers |", "|---|---|---|"]
    for name, status, numbers in rows:
        icon, words = shape_status(report.shape) if name == "shape" else (STATUS_ICON[status], status)
        lines.append(f"| **{name}** | {icon} {words} | {escape(numbers, 500)} |")
    return "\n".join(lines)


def legend(report: Report) -> str | None:
    """Explain the figures of the layer table that do not explain themselves."""
    behaviour = report.behaviour
    parts = []
    if behaviour.suites:
        parts.append("*a/b*: tests passing on the head / tests counted (skips on base are not counted)")
        parts.append("regressions: tests that pass on base and fail on head")
    if behaviour.fail_to_pass_total:
        parts.append(
            f"fail→pass {behaviour.fail_to_pass}/{behaviour.fail_to_pass_total}: of the "
            f"{plural(behaviour.fail_to_pass_total, 'test')} failing on base, those passing on head"
        )
    if behaviour.strength.status == "measured" and behaviour.strength.changed_lines:
        parts.append("changed lines run: the change's lines that some hidden test executed")
    if maintainer_findings(report.shape):
        parts.append(
            "🟠 needs a maintainer: findings that block nothing by themselves, for a person to judge"
        )
    return "<sub>" + " · ".join(parts) + "</sub>" if parts else None


def findings_section(report: Report, max_rows: int = MAX_ROWS) -> str | None:
    """Render the shape findings table with at most ``max_rows`` rows."""
    findings = sorted(report.shape.findings, key=lambda f: (not f.introduced, f.path, f.start_line))
    if not findings:
        return None
    rows = [
        [
            code(f"{f.path}:{f.start_line}", cell=True),
            escape(f.tool),
            code(f.rule, 80, cell=True),
            escape(f.shown_severity) + (" (needs a maintainer)" if f.needs_maintainer else ""),
            escape(f.message),
            "this change" if f.introduced else "already on base",
        ]
        for f in findings
    ]
    header = ["where", "tool", "rule", "severity", "message", "origin"]
    body = _table(header, rows, len(rows), max_rows)
    return _details(f"Shape findings ({len(findings)})", body)


def _sections(report: Report) -> list[str]:
    """Return the report's detail sections in reading order, each already rendered."""
    return [
        *_shape_sections(report),
        *_behaviour_sections(report),
        *_differential_sections(report),
        *_strength_sections(report),
        *_quality_sections(report),
        *_timing_sections(report),
    ]


def _shape_sections(report: Report) -> list[str]:
    sections: list[str] = []
    shape = report.shape
    tool_rows = [
        [escape(t.tool), _tool_status(shape, t.tool, t.status), f"{t.seconds:.1f}s", escape(t.detail)]
        for t in shape.tools
    ]
    if tool_rows:
        sections.append(
            _details("Shape tools", _table(["tool", "status", "time", "detail"], tool_rows, len(tool_rows)))
        )
    if shape.notices:
        sections.append(_details("Notices", [f"- {escape(n, 500)}" for n in shape.notices]))
    return sections


def _tool_status(shape: ShapeResult, tool: str, status: str) -> str:
    """A tool that ran and found things for a maintainer did not come back "ok" in any useful sense."""
    asked = maintainer_findings(shape, tool)
    if status == "ok" and asked:
        return f"🟠 {plural(asked, 'finding')} for a maintainer"
    return escape(status)


def _behaviour_sections(report: Report) -> list[str]:
    behaviour = report.behaviour
    if not behaviour.suites:
        return []
    rows = [
        [
            escape(s.name),
            SHORT_LABELS[s.kind],
            f"{s.passed}/{s.total}",
            percent(s.pass_rate),
            str(s.errors),
            str(s.flaky),
            str(s.timed_out),
            f"{s.wall_s:.1f}s" if s.wall_s is not None else "-",
            f"{s.peak_memory_bytes / 2**20:.0f} MiB" if s.peak_memory_bytes else "-",
        ]
        for s in behaviour.suites
    ]
    body = _table(
        ["suite", "kind", "passed", "rate", "errors", "flaky", "timed out", "time", "peak memory"],
        rows,
        len(rows),
    )
    body += [
        "",
        f"regressions {behaviour.regressions} · fail→pass {behaviour.fail_to_pass}/"
        f"{behaviour.fail_to_pass_total} · pass→pass {behaviour.pass_to_pass}",
        "",
        "<sub>regressions: pass on base, fail on head · fail→pass: of the tests failing on base, "
        "those passing on head · pass→pass: passing on both · flaky: failed once and passed once "
        "on head, counted as failed</sub>",
    ]
    kinds = {s.kind for s in behaviour.suites}
    if "repository" in kinds:
        body += ["", REPOSITORY_EVIDENCE]
    if "own" in kinds:
        body += ["", OWN_EVIDENCE]
    if behaviour.detail:
        body += ["", escape(behaviour.detail, 1000)]
    sections = [_details("Behaviour suites", body)]
    for s in behaviour.suites:
        # Held-out suites never carry ids; guard here too so nothing can leak through rendering.
        if s.kind == "held_out" or not (s.failures or s.flaky_ids or s.timed_out_ids or s.rewritten):
            continue
        flaky = set(s.flaky_ids)
        lines = [
            f"- {code(f.id)} — the change rewrote this test ({code(f.edit)}); its base version fails on head"
            + (f": {escape(f.message)}" if f.message else "")
            for f in s.rewritten
        ]
        lines += [
            f"- {code(f.id)}"
            + (f" — {escape(f.message)}" if f.message else "")
            + (" (flaky: one head run passed, counted as failed)" if f.id in flaky else "")
            for f in s.failures
        ]
        lines += [f"- {code(i)} (flaky on base too: left out)" for i in s.flaky_on_base_ids]
        lines += [f"- {code(i)} (timed out)" for i in s.timed_out_ids]
        if len(lines) > MAX_ROWS:
            lines = [*lines[:MAX_ROWS], f"\n… and {len(lines) - MAX_ROWS} more (see the JSON report)"]
        which = {"repository": "the repository tests (from base)", "own": "the change's own tests"}.get(
            s.kind, "the hidden suite" if s.name == "hidden" else f"hidden suite {s.name}"
        )
        sections.append(_details(f"Failing tests of {which} ({len(s.failures) + len(s.rewritten)})", lines))
    return sections


# What a suite that is not hidden can and cannot prove, said wherever its numbers are.
REPOSITORY_EVIDENCE = (
    "<sub>repository tests (from base): the base tree's own tests, conftest and pytest settings, run "
    "against the change, which cannot edit them here; but its author could read them, so a pass is "
    "weaker evidence than a hidden suite's. The mutation score under suite strength shows how much "
    "they prove for this change.</sub>"
)
OWN_EVIDENCE = (
    "<sub>the change's own tests: the tests it adds, run in one process with its code (it could forge "
    "them): shown, counted for nothing; fail→pass counts those failing on base, which tell the change "
    "apart.</sub>"
)


def _function_lines(check: FunctionCheck) -> list[str]:
    # Our own words and numbers; the names are shown as code.
    lines = [f"- {code(check.function)}: {function_line(check, quote=code)}"]
    if check.counterexample or check.detail:
        lines.append(f"  - {escape(check.counterexample or check.detail, 500)}")
    if check.efficiency is not None:
        lines.append(f"  - {escape(efficiency_line(check.efficiency), 500)}")
    return lines


def _differential_sections(report: Report) -> list[str]:
    sections = []
    for result in report.behaviour.differential:
        # A held-out suite carries counts only; nothing of its functions is ever rendered.
        body = ["counts only: a held-out suite's functions, inputs and times are never shown"]
        if result.source != "held_out":
            body = [line for check in result.functions for line in _function_lines(check)]
            notes = differential_notes(result)
            body += ["", f"<sub>{escape(notes, 800)}</sub>"] if notes else []
        sections.append(_details(differential_numbers(result), body))
    return sections


# The mutants run the change's own code, which can recognise a mutated copy of itself.
MUTANT_LIMIT = (
    "The mutants run the change's own code, which can tell a mutated copy of itself apart and fail "
    "on purpose: against code written to game it the score is an upper bound. It only ever lowers a "
    "conclusion."
)


def _strength_sections(report: Report) -> list[str]:
    strength = report.behaviour.strength
    if strength.status != "measured":
        return []
    body = [escape(strength_numbers(strength), 1000)]
    if strength.uncovered:
        missed = ", ".join(code(u) for u in strength.uncovered[:MAX_ROWS])
        body += ["", f"Changed lines the {strength.measured_by} never runs: {missed}"]
    if strength.read_whole:
        whole = ", ".join(code(w, 160) for w in strength.read_whole[:MAX_ROWS])
        body += ["", f"Changed files whose statements could not be worked out: {whole}"]
    if strength.not_mutated:
        skipped = ", ".join(code(n, 160) for n in strength.not_mutated[:MAX_ROWS])
        body += ["", f"Changed files not mutated: {skipped}"]
    if strength.survivors:
        rows = [
            [
                code(f"{m.path}:{m.line}", cell=True),
                code(m.operator, 60, cell=True),
                code(m.mutated, 120, cell=True),
            ]
            for m in strength.survivors
        ]
        body += ["", "Surviving mutants (an equivalent mutant survives any suite: judge each):", ""]
        body += _table(["line", "operator", "mutated line"], rows, len(rows))
    if strength.mutants:
        body += ["", MUTANT_LIMIT]
    return [_details("Suite strength", body)]


def _quality_sections(report: Report) -> list[str]:
    quality = report.quality
    if not quality.criteria:
        return []
    rows = []
    for c in quality.criteria:
        evidence = "<br>".join(
            f"{code(f'{e.path}:{e.start_line}-{e.end_line}', cell=True)} {code(e.quote, 120, cell=True)}"
            + ("" if e.verified else " (not found)")
            for e in c.evidence
        )
        rows.append(
            [code(c.id, 60, cell=True), escape(c.verdict), escape(c.severity), escape(c.reason), evidence]
        )
    body = _table(["criterion", "verdict", "severity", "reason", "evidence"], rows, len(rows))
    meta = [quality.model and f"model {escape(quality.model)}"]
    meta += [
        f"tokens {quality.prompt_tokens}+{quality.completion_tokens}",
        f"cost ${quality.cost_usd:.4f}",
    ]
    meta += [f"latency {quality.latency_s:.1f}s", escape(quality.calibration)]
    body += ["", " · ".join(m for m in meta if m)]
    if quality.omitted_files:
        body += [
            "",
            "Left out of the judge's view (token budget): "
            + ", ".join(code(p) for p in quality.omitted_files),
        ]
    return [_details(f"{QUALITY_LABEL}: criteria ({len(quality.criteria)})", body)]


def _timing_sections(report: Report) -> list[str]:
    if not report.timings:
        return []
    rows = [[escape(k), f"{v:.1f}s"] for k, v in sorted(report.timings.items())]
    return [_details("Timings", _table(["step", "time"], rows, len(rows)))]


def reused_line(reuse: Reuse) -> str:
    """Return the note that says a report was answered from an identical earlier run."""
    run = f"job {reuse.job_id}" + (f", check run {reuse.check_run_id}" if reuse.check_run_id else "")
    source = f"[{run}]({reuse.url})" if reuse.url else run
    return (
        f"> ♻️ **Reused** from {source}: the same base, head, suites, policy, patchgate, sandbox image "
        "and judge settings were gated there, so nothing ran again. `/patchgate rerun` gates afresh."
    )


def render_title(report: Report) -> str:
    """Return the check run's title (short, plain text)."""
    # The numbers only: the reasons are the summary's bullets, right below it on GitHub.
    title = headline(report, with_reason=False).removeprefix(CONCLUSION_ICON[report.conclusion] + " ")
    if report.reused_from is not None:
        title = f"(reused) {title}"
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def render_markdown(report: Report, *, limit: int = MAX_SUMMARY_BYTES) -> tuple[str, str]:
    """Return (title, summary); the summary is cut at a section boundary to fit ``limit`` bytes."""
    # GitHub shows the title (conclusion and numbers) as the run's heading, right above the
    # summary: the summary does not say it again, and lists the reasons once.
    title = render_title(report)
    head = [layer_table(report)]
    if (key := legend(report)) is not None:
        head += ["", key]
    if report.reused_from is not None:
        head += ["", reused_line(report.reused_from)]
    if report.reasons and report.conclusion != "success":
        head += ["", *[f"- {escape(r, 1000)}" for r in report.reasons]]
    if report.behaviour.strength.pending:
        head += ["", PENDING]
    summary = "\n".join(head)
    # Findings are the first evidence a maintainer looks for: shrink their table to fit
    # rather than drop it.
    findings = findings_section(report)
    rows = MAX_ROWS
    while findings is not None and rows > 5 and len((summary + findings).encode()) > limit // 2:
        rows //= 2
        findings = findings_section(report, rows)
    sections = ([findings] if findings else []) + _sections(report)
    for i, section in enumerate(sections):
        candidate = summary + "\n\n" + section
        left = len(sections) - i
        notice = (
            f"\n\n> ✂️ {left} more section{'s' if left != 1 else ''} left out: the summary is limited "
            f"to {limit:,} bytes. Every section is on the run's page (the check run's **Details** "
            "link), and in `patchgate run --format json`."
        )
        if len((candidate + notice).encode()) > limit:
            summary += notice
            break
        summary = candidate
    footer = (
        f"\n\n<sub>patchgate report v{report.version} · base {report.base_sha[:12]}"
        f" · head {report.head_sha[:12]}"
        + (f" · suites {report.suites_commit[:12]}" if report.suites_commit else "")
        + (f" · reused from job {report.reused_from.job_id}" if report.reused_from else "")
        + "</sub>"
    )
    if len((summary + footer).encode()) <= limit:
        summary += footer
    # The head alone can exceed the limit only with absurd reasons; cut bytes as a last resort.
    encoded = summary.encode()
    if len(encoded) > limit:
        summary = encoded[: limit - 4].decode("utf-8", "ignore") + "\n…"
    return title, summary


def render_document(report: Report) -> str:
    """Return the summary as a page of its own (``patchgate run --format markdown``, a job summary).

    Where no check run shows the title above it, the headline opens the page.
    """
    title, summary = render_markdown(report)
    return f"### {escape(CONCLUSION_ICON[report.conclusion] + ' ' + title, 1000)}\n\n{summary}"
