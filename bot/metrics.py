"""Prometheus metrics of the service (prometheus-client), and the ``/metrics`` answer.

Every process keeps its own counters: the web process counts deliveries and
reads the queue from the store at each scrape; workers count jobs, layers,
sandbox failures, GitHub trouble and the judge's spending, and serve them on
``PATCHGATE_METRICS_PORT`` when they run apart from the web. Labels carry
only closed sets (event names, outcomes, states, layer and exception class
names, HTTP statuses): never a repository, a sha, a URL or a secret.
"""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, generate_latest, start_http_server

from checks.report import Report

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

DELIVERIES = Counter(
    "patchgate_deliveries", "Webhook deliveries answered, by event and outcome", ["event", "outcome"]
)
QUEUE_DEPTH = Gauge("patchgate_queue_depth", "Jobs queued and not yet claimed (read from the store)")
QUEUE_AGE = Gauge(
    "patchgate_queue_oldest_age_seconds", "Age of the oldest queued job (0 when none is queued)"
)
JOBS_RUNNING = Gauge("patchgate_jobs_running", "Jobs whose lease is held by some worker (from the store)")
JOBS_UNFINISHED = Gauge(
    "patchgate_jobs_unfinished",
    "Jobs queued or running (from the store): the work there is for the workers; the chart's "
    "autoscaler divides it by the jobs one worker runs at once",
)
JOBS_RECLAIMED = Counter(
    "patchgate_jobs_reclaimed",
    "Jobs this worker took over after another worker's lease ran out (that worker died or stalled)",
)
REAPER_ENQUEUED = Counter(
    "patchgate_reaper_enqueued", "Jobs the reaper handed to the broker, by why", ["why"]
)
JOBS = Counter(
    "patchgate_jobs",
    "Job attempts that ended, by the state they left and the conclusion",
    ["state", "conclusion"],
)
LAYER_SECONDS = Histogram(
    "patchgate_layer_duration_seconds",
    "Wall time of each pipeline layer",
    ["layer"],
    buckets=(0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200),
)
SANDBOX_FAILURES = Counter(
    "patchgate_sandbox_failures", "Job attempts the sandbox failed, by error class", ["kind"]
)
GITHUB_ERRORS = Counter(
    "patchgate_github_api_errors", "GitHub API calls that failed after retries, by status", ["status"]
)
SARIF_UPLOADS = Counter(
    "patchgate_sarif_uploads",
    "Reports uploaded to code scanning (PATCHGATE_UPLOAD_SARIF), by outcome",
    ["outcome"],
)
RATE_LIMIT_WAITS = Counter("patchgate_github_rate_limit_waits", "Rate limits waited out")
RATE_LIMIT_WAIT_SECONDS = Counter(
    "patchgate_github_rate_limit_wait_seconds", "Seconds spent waiting out rate limits"
)
JUDGE_TOKENS = Counter("patchgate_judge_tokens", "Tokens the judge used", ["kind"])
JUDGE_COST = Counter("patchgate_judge_cost_usd", "What the judge cost, in US dollars")
SANDBOXES = Gauge("patchgate_sandboxes_running", "Sandbox runs in progress in this process")
SUITE_BASE_RUNS = Counter(
    "patchgate_suite_base_runs",
    "Suites graded, by where their base runs came from (reused from an earlier job, or run)",
    ["source"],
)


def delivery(event: str, outcome: str) -> None:
    """Count one answered delivery (``event`` is GitHub's event name, a closed set)."""
    DELIVERIES.labels(event=event[:64] or "-", outcome=outcome).inc()


def job_ended(state: str, conclusion: str | None) -> None:
    """Count one attempt that left the running state."""
    JOBS.labels(state=state, conclusion=conclusion or "-").inc()


def report_done(report: Report) -> None:
    """Record a report's layer timings, where its suites' base runs came from, the judge's spending."""
    timings = {**report.timings, **report.private_timings}
    for layer in ("environment image", "shape", "behaviour", "quality", "strength"):
        if layer in timings:
            LAYER_SECONDS.labels(layer=layer).observe(timings[layer])
    for suite in report.behaviour.suites:
        if suite.status != "error":
            SUITE_BASE_RUNS.labels(source="reused" if suite.base_reused else "ran").inc()
    quality = report.quality
    if quality.prompt_tokens:
        JUDGE_TOKENS.labels(kind="prompt").inc(quality.prompt_tokens)
    if quality.completion_tokens:
        JUDGE_TOKENS.labels(kind="completion").inc(quality.completion_tokens)
    if quality.cost_usd:
        JUDGE_COST.inc(quality.cost_usd)


def queue(depth: int, oldest_age_s: float, running: int) -> None:
    """Set the queue gauges from a fresh look at the store."""
    QUEUE_DEPTH.set(depth)
    QUEUE_AGE.set(oldest_age_s)
    JOBS_RUNNING.set(running)
    JOBS_UNFINISHED.set(depth + running)


def exposition() -> bytes:
    """Return every metric of this process in Prometheus' text format."""
    return generate_latest(REGISTRY)


def serve(port: int, host: str) -> None:
    """Serve ``/metrics`` of a process that has no web server of its own (``patchgate worker``)."""
    start_http_server(port, addr=host)
    log.info("metrics on %s:%s/metrics", host, port)
