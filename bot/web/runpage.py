"""The run's details page and its JSON form: what a reader may see, and the headers it travels with. No I/O.

The page is reached through the check run's details link, whose token is the
only thing keeping a private repository's report private: it is never cached
(``no-store``), never sent on as a referrer, never framed, and it loads
nothing (the CSP allows no script, no image, no connection). The JSON form
lists the job's public facts only: no worker host name, no installation id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from bot.store import RepositoryRun
from bot.store.leases import JobView
from checks.quality.calibration import JudgeRecord as CalibrationRecord
from checks.quality.calibration import rate
from checks.render.numbers import (
    QUALITY_LABEL,
    behaviour_numbers,
    differential_notes,
    differential_numbers,
    efficiency_line,
    function_line,
    quality_numbers,
    shape_numbers,
    shape_status,
)
from checks.report import SHORT_LABELS, Report, percent

# Every answer of the service carries these; /runs answers add PRIVATE.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
PRIVATE = {"Cache-Control": "no-store", "Pragma": "no-cache"}

_PUBLIC_FIELDS = (
    "id",
    "repository",
    "pr_number",
    "head_sha",
    "trigger",
    "state",
    "conclusion",
    "attempts",
    "detail",
    "created_at",
    "updated_at",
)


# The trigger of a run made without GitHub (patchgate run, patchgate demo; store.runs.add_local_job).
LOCAL = "local"
# Jinja2 with autoescape on for every template: no value reaches the page unescaped.
_ENV = Environment(
    loader=PackageLoader("bot.web", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
)
# Loaded once at import: a missing or broken template fails the service's start, not a request.
_RUN = _ENV.get_template("run.html")
_REPOSITORY = _ENV.get_template("repository.html")


LINK_LABELS = (("pull_request", "pull request"), ("check_run", "check run"))


def links(job: JobView, github_url: str) -> dict[str, str]:
    """Return the pull request's page and, once it exists, the check run's (a local run has neither)."""
    if job.trigger == LOCAL:
        return {}
    found = {"pull_request": f"{github_url}/{job.repository}/pull/{job.pr_number}"}
    if job.check_run_id is not None:
        found["check_run"] = f"{github_url}/{job.repository}/runs/{job.check_run_id}"
    return found


def public_job(job: JobView, github_url: str) -> dict[str, Any]:
    """Return the job as the JSON form shows it."""
    shown: dict[str, Any] = {name: getattr(job, name) for name in _PUBLIC_FIELDS}
    shown["links"] = links(job, github_url)
    return shown


def _layers(report: Report) -> list[dict[str, str]]:
    icon_words = shape_status(report.shape)[1]
    rows = [
        ("shape", icon_words, "maintainer" if icon_words != report.shape.status else report.shape.status,
         shape_numbers(report.shape)),
        ("behaviour", report.behaviour.status, report.behaviour.status, behaviour_numbers(report.behaviour)),
        (QUALITY_LABEL, report.quality.status, report.quality.status, quality_numbers(report.quality)),
    ]  # fmt: skip
    return [{"name": n, "words": w, "css": c, "numbers": nums} for n, w, c, nums in rows]


def _findings(report: Report, job: JobView, github_url: str) -> list[dict[str, Any]]:
    shown = sorted(report.shape.findings, key=lambda f: (not f.introduced, f.path, f.start_line))
    out = []
    for f in shown:
        url = None
        if job.trigger != LOCAL and f.path and not {".", ".."} & set(f.path.split("/")):
            lines = f"#L{f.start_line}-L{max(f.end_line, f.start_line)}" if f.start_line >= 1 else ""
            # The path is the PR's: percent-encoded, it names a file and nothing else.
            path = quote(f.path.lstrip("/"), safe="/")
            url = f"{github_url}/{job.repository}/blob/{report.head_sha or job.head_sha}/{path}{lines}"
        out.append({
            "where": f"{f.path}:{f.start_line}", "url": url, "tool": f.tool, "rule": f.rule,
            "severity": f.shown_severity + (" (needs a maintainer)" if f.needs_maintainer else ""),
            "message": f.message, "origin": "this change" if f.introduced else "already on base",
        })  # fmt: skip
    return out


def _suites(report: Report) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name, "kind": SHORT_LABELS[s.kind], "passed": s.passed,
            "total": s.total, "rate": percent(s.pass_rate), "errors": s.errors, "flaky": s.flaky,
            "timed_out": s.timed_out, "time": f"{s.wall_s:.1f}s" if s.wall_s is not None else "-",
        }
        for s in report.behaviour.suites
    ]  # fmt: skip


def _differential(report: Report) -> list[dict[str, Any]]:
    """Each differential result: its numbers, and (never for a held-out suite) each function's lines."""
    out = []
    for result in report.behaviour.differential:
        functions = []
        if result.source != "held_out":  # counts only: its functions, inputs and times are never shown
            functions = [
                {
                    "function": check.function,
                    "line": function_line(check, quote=str),
                    "detail": check.counterexample or check.detail,
                    "efficiency": efficiency_line(check.efficiency) if check.efficiency else "",
                }
                for check in result.functions
            ]
        notes = differential_notes(result) if result.source != "held_out" else "counts only"
        out.append({"numbers": differential_numbers(result), "functions": functions, "notes": notes})
    return out


def _timeline(report: Report) -> list[dict[str, Any]]:
    longest = max(report.timings.values(), default=0.0)
    return [
        {
            "name": step,
            "seconds": f"{seconds:.1f}s",
            "width": round(100 * seconds / longest, 1) if longest else 0,
        }
        for step, seconds in report.timings.items()
    ]


def page(
    job: JobView,
    text: str,
    github_url: str,
    *,
    report: Report | None = None,
    repository_url: str | None = None,
) -> str:
    """Return the HTML page: where the run belongs, its layers, suites, findings, timeline and text."""
    found = links(job, github_url)
    head = job.head_sha[:12]
    if job.trigger == LOCAL:  # no pull request, no queue: no #0, no link to nowhere, no attempts
        where = f"{job.repository} · local run @ {head}"
        facts = ["run by patchgate run or patchgate demo"]
    else:
        where = f"{job.repository} #{job.pr_number} @ {head}"
        facts = [f"state: {job.state}", f"attempts: {job.attempts}"]
    return _RUN.render(
        job=job,
        where=where,
        links=[(label, found[key]) for key, label in LINK_LABELS if key in found],
        conclusion=job.conclusion or (report.conclusion if report else None),
        facts=facts,
        report=report,
        layers=_layers(report) if report else [],
        suites=_suites(report) if report else [],
        differential=_differential(report) if report else [],
        findings=_findings(report, job, github_url) if report else [],
        timeline=_timeline(report) if report else [],
        repository_url=repository_url,
        text=text,
    )  # fmt: skip


CHART_W, CHART_H = 900, 220


def _chart(runs: list[RepositoryRun]) -> dict[str, Any] | None:
    """Return the SVG chart's grid and lines: hidden pass rate and suite strength, oldest first."""
    oldest_first = list(reversed(runs))
    series = []
    for name, color, values in (
        ("hidden pass rate", "#1a7f37", [r.hidden_pass_rate for r in oldest_first]),
        ("suite strength (mutants killed)", "#8250df", [r.mutation_score for r in oldest_first]),
    ):
        step = (CHART_W - 60) / max(len(values) - 1, 1)
        dots = [(round(40 + i * step, 1), round(10 + (1 - v) * (CHART_H - 30), 1))
                for i, v in enumerate(values) if v is not None]  # fmt: skip
        if dots:
            points = " ".join(f"{x},{y}" for x, y in dots)
            series.append({"name": name, "color": color, "points": points, "dots": dots})
    if not series:
        return None
    grid = [(10 + (1 - f) * (CHART_H - 30), f"{f:.0%}") for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return {"width": CHART_W, "height": CHART_H, "grid": grid, "series": series}


def calibration(records: Sequence[CalibrationRecord]) -> list[dict[str, Any]]:
    """Return, per judge model, how often it agreed with execution, as bars with 95% intervals.

    From the records' 2x2 counts with Wilson intervals (closed form: no scipy in the service);
    false acceptance - the judge passing code whose tests failed - is the bar that matters.
    """
    out = []
    for model in sorted({r.model for r in records}):
        mine = [r for r in records if r.model == model]
        failing = [r for r in mine if not r.execution_passed]
        passing = [r for r in mine if r.execution_passed]
        measures = (
            ("agreement with execution", sum(r.judge_passed == r.execution_passed for r in mine), len(mine)),
            (
                "false acceptance (tests failed, judge passed)",
                sum(r.judge_passed for r in failing),
                len(failing),
            ),
            (
                "false rejection (tests passed, judge failed)",
                sum(not r.judge_passed for r in passing),
                len(passing),
            ),
        )
        bars = []
        for i, (label, count, n) in enumerate(measures):
            measured = rate(count, n)
            bars.append(
                {
                    "label": label,
                    "text": measured.text(),
                    "y": 8 + i * 26,
                    "width": round((measured.value or 0.0) * BAR_W, 1),
                    "low": round((measured.low or 0.0) * BAR_W, 1),
                    "high": round((measured.high or 0.0) * BAR_W, 1),
                    "shown": measured.value is not None,
                }
            )
        out.append({"model": model, "n": len(mine), "bars": bars, "width": BAR_W})
    return out


BAR_W = 400


def repository_page(
    repository: str,
    runs: list[RepositoryRun],
    run_url: Callable[[int], str],
    records: Sequence[CalibrationRecord] = (),
) -> str:
    """Return the repository's page: its runs, how its numbers moved, and the judge's calibration."""
    rows = [
        {
            "job_id": r.job_id, "url": run_url(r.job_id), "pr": f"#{r.pr_number}" if r.pr_number else "local",
            "head": r.head_sha[:12], "conclusion": r.conclusion,
            "hidden": percent(r.hidden_pass_rate) if r.hidden_pass_rate is not None else "-",
            "held_out": percent(r.held_out_pass_rate) if r.held_out_pass_rate is not None else "-",
            "strength": percent(r.mutation_score) if r.mutation_score is not None else "-",
            "when": datetime.fromtimestamp(r.created_at, UTC).strftime("%Y-%m-%d %H:%M"),
        }
        for r in runs
    ]  # fmt: skip
    return _REPOSITORY.render(
        repository=repository, runs=rows, chart=_chart(runs), calibration=calibration(records)
    )
