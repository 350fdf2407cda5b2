"""What a finished report adds to the worker's counters (bot/metrics.py), read from the registry."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import REGISTRY

from bot import metrics
from bot.github.events import GateRequest
from bot.store import Store
from checks.report import BehaviourResult, Report, SuiteResult


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_report_counts_its_layers_and_where_its_base_runs_came_from() -> None:
    before = {source: value("patchgate_suite_base_runs_total", source=source) for source in ("reused", "ran")}
    strength_before = value("patchgate_layer_duration_seconds_count", layer="strength")
    suites = [
        SuiteResult(name="hidden", kind="hidden", base_reused=True),
        SuiteResult(name="held-out", kind="held_out"),
        SuiteResult(name="hidden", kind="hidden", status="error"),  # not graded: not counted
    ]
    report = Report(conclusion="success", behaviour=BehaviourResult(suites=suites))
    report.timings.update({"behaviour": 3.0, "strength": 2.0})
    metrics.report_done(report)
    assert value("patchgate_suite_base_runs_total", source="reused") == before["reused"] + 1
    assert value("patchgate_suite_base_runs_total", source="ran") == before["ran"] + 1
    assert value("patchgate_layer_duration_seconds_count", layer="strength") == strength_before + 1


def test_the_queue_gauges_read_the_store_and_add_up_the_unfinished_work(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    requests = [GateRequest(11, "octo/repo", str(n) * 40, "pull_request.opened", n) for n in (1, 2, 3)]
    jobs = store.deliveries.record("d1", "pull_request", "opened", requests).job_ids
    assert store.leases.claim(jobs[0], "w1", 30) is not None
    metrics.queue(*store.leases.queue_stats())
    store.close()
    assert value("patchgate_queue_depth") == 2
    assert value("patchgate_jobs_running") == 1
    assert value("patchgate_jobs_unfinished") == 3  # what the chart's autoscaler divides
    assert value("patchgate_queue_oldest_age_seconds") >= 0
