"""What a finished report adds to the worker's counters (bot/metrics.py), read from the registry."""

from __future__ import annotations

from prometheus_client import REGISTRY

from bot import metrics
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
