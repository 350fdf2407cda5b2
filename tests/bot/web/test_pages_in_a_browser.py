"""The run page, the repository page and a check run's summary, rendered by a real browser.

Debian's chromium, headless (the full test command installs it): the DOM it
builds is read back (``--dump-dom``) and checked, and a screenshot of each page
is kept in ``.state/artifacts/`` for CI to keep.
"""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bot.web.runpage import page, repository_page
from checks.render.markdown import render_markdown
from tests.bot.web.test_runpage import gated_report, pull_job
from tests.checks.render.test_gfm import github_html, maintainer_report
from tests.conftest import page_tool

ARTIFACTS = Path(__file__).resolve().parents[3] / ".state" / "artifacts"


@pytest.fixture(scope="module")
def chromium() -> str:
    return page_tool("chromium")


def browse(chromium: str, html_file: Path, *, screenshot: Path | None = None) -> str:
    """Return the DOM chromium built from ``html_file`` (and take a screenshot, when asked)."""
    argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={html_file.parent / 'profile'}", "--window-size=1200,1500"]  # fmt: skip
    if screenshot is not None:
        shot = subprocess.run([*argv, f"--screenshot={screenshot}", html_file.as_uri()],
                              capture_output=True, timeout=120, check=False)  # fmt: skip
        assert screenshot.is_file() and screenshot.stat().st_size > 10_000, shot.stderr[-2000:]
    done = subprocess.run([*argv, "--dump-dom", html_file.as_uri()], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return done.stdout


class Dom(HTMLParser):
    """The ids, table headers and links of a page, as the browser built it."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.headers: list[str] = []
        self.hrefs: list[str] = []
        self.scripts = 0
        self._th = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))
        if tag == "script":
            self.scripts += 1
        if tag == "th":
            self._th = True
            self.headers.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "th":
            self._th = False

    def handle_data(self, data: str) -> None:
        if self._th:
            self.headers[-1] += data


def test_the_run_page_in_a_browser(chromium: str, tmp_path: Path) -> None:
    report = gated_report()
    report.behaviour.strength.mutants, report.behaviour.strength.killed = 10, 9
    store, job_id = pull_job(tmp_path, report, history=5)
    job = store.leases.job(job_id)
    runs = store.runs.for_repository("octo/repo")
    store.close()
    assert job is not None
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    run_file = tmp_path / "run.html"
    run_file.write_text(page(job, "text", "https://github.com", report=report, repository_url="repo.html"))
    dom = Dom()
    dom.feed(browse(chromium, run_file, screenshot=ARTIFACTS / "run-page.png"))
    assert {"layers", "suites", "findings", "timeline", "conclusion", "repository"} <= dom.ids
    assert all(h.strip() for h in dom.headers[:-1])  # the timeline's bar column is the only unnamed one
    assert any(h.endswith("/pkg/a.py#L3-L4") for h in dom.hrefs)
    assert dom.scripts == 0  # the finding's <script> stayed text
    repo_file = tmp_path / "repo.html"
    from checks.quality.calibration import JudgeRecord

    records = [JudgeRecord(True, True, "gpt-judge", "r")] * 14 + [
        JudgeRecord(False, False, "gpt-judge", "r")
    ] * 7
    records += [JudgeRecord(False, True, "gpt-judge", "r")] * 2 + [JudgeRecord(True, False, "gpt-judge", "r")]
    repo_file.write_text(repository_page("octo/repo", runs, lambda j: f"/runs/{j}?token=x", records))
    dom = Dom()
    dom.feed(browse(chromium, repo_file, screenshot=ARTIFACTS / "repository-page.png"))
    assert {"runs", "chart", "calibration-1"} <= dom.ids and f"/runs/{job_id}?token=x" in dom.hrefs
    assert len([h for h in dom.hrefs if h.startswith("/runs/")]) == 6


def test_a_check_run_summary_in_a_browser(chromium: str, tmp_path: Path) -> None:
    cmark = page_tool("cmark-gfm")
    title, summary = render_markdown(maintainer_report())
    body = github_html(cmark, summary)
    style = ("body{font:14px -apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1000px;margin:24px}"
             "table{border-collapse:collapse}td,th{border:1px solid #d1d9e0;padding:6px 13px}"
             "code{background:#f6f8fa;padding:2px 4px;white-space:break-spaces}")  # fmt: skip
    file = tmp_path / "check-run.html"
    file.write_text(f"<!doctype html><meta charset=utf-8><style>{style}</style><h2>{title}</h2>{body}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dom = Dom()
    dom.feed(browse(chromium, file, screenshot=ARTIFACTS / "check-run.png"))
    assert dom.headers[:3] == ["layer", "result", "numbers"]
    assert all(h.strip() for h in dom.headers)
