"""The run page's own rendering (bot/web/runpage.py): pure, no server."""

from __future__ import annotations

from pathlib import Path

from bot.store import Store
from bot.web.runpage import links, page, public_job
from checks.report import Report


def test_a_local_run_has_no_pull_request_link_no_number_and_no_attempts(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    report = Report(conclusion="failure", base_sha="a" * 40, head_sha="b" * 40)
    job_id = store.add_local_job("example/duration", "agent/x", report, installation_id=0)
    job = store.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "the report", "https://github.com")
    assert "example/duration · local run @ bbbbbbbbbbbb" in html
    assert "#0" not in html and "/pull/" not in html and "attempts" not in html
    assert links(job, "https://github.com") == {}
    assert public_job(job, "https://github.com")["links"] == {}


def test_a_pull_requests_run_links_to_it(tmp_path: Path) -> None:
    from bot.github.events import GateRequest

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    [job_id] = store.record_delivery(
        "d1", "pull_request", "opened", [GateRequest(1, "octo/repo", "c" * 40, "pull_request.opened", 7)]
    ).job_ids
    job = store.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "<b>report</b>", "https://github.com")
    assert "octo/repo #7 @ cccccccccccc" in html and "attempts: 0" in html
    assert 'href="https://github.com/octo/repo/pull/7"' in html
    assert "<b>report" not in html and "&lt;b&gt;report" in html
