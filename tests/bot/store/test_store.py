"""The store on SQLite and on a real PostgreSQL: dedupe, job lifecycle, leases, runs, records, cache."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, text

from bot.github.events import CancelRequest, GateRequest, Ignore, InstallationChange
from bot.store import Incoming, JudgeRow, RunRecord, Store, StoreVerdictCache
from bot.store.database import make_engine
from bot.store.leases import Beat, Lease
from bot.store.tables import Base
from checks.report import CriterionResult
from tests.checks.test_hostfiles import at_once

SHA1, SHA2 = "1" * 40, "2" * 40


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    s = Store(database_url)
    s.migrate()
    yield s
    s.close()


def opened(sha: str = SHA1, number: int = 7, **kw: object) -> GateRequest:
    return GateRequest(11, "octo/repo", sha, "pull_request.opened", number, **kw)  # type: ignore[arg-type]


def test_migrations_create_exactly_the_models(store: Store) -> None:
    store.migrate()  # idempotent
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def test_a_delivery_is_recorded_once(store: Store) -> None:
    first = store.deliveries.record("d1", "pull_request", "opened", [opened()])
    assert not first.duplicate
    assert len(first.job_ids) == 1
    again = store.deliveries.record("d1", "pull_request", "opened", [opened()])
    assert again.duplicate
    assert again.job_ids == ()
    assert len(store.leases.jobs()) == 1
    assert store.deliveries.outcome("d1") == ("queued", first.notes[0])
    # The web side answers with the outcome the store computed: one place decides it.
    assert (first.outcome, again.outcome) == ("queued", "duplicate")


def test_a_batch_of_deliveries_is_recorded_in_order_in_one_transaction(store: Store) -> None:
    batch = [
        Incoming(delivery_id="b1", event="pull_request", action="opened", actions=[opened(SHA1)]),
        Incoming(delivery_id="b2", event="ping", action="", actions=[Ignore("ping.- is not handled")]),
        Incoming(
            delivery_id="b1", event="pull_request", action="opened", actions=[opened(SHA1)]
        ),  # GitHub's redelivery, in the same batch
        Incoming(
            delivery_id="b3", event="pull_request", action="reopened", actions=[opened(SHA1)]
        ),  # the sha has a job by now
        Incoming(delivery_id="b4", event="pull_request", action="opened", actions=[opened(SHA2, number=8)]),
    ]
    first, ping, again, reopened, other = store.deliveries.record_batch(batch, enqueued=True)
    assert (first.outcome, ping.outcome, again.outcome, reopened.outcome, other.outcome) == (
        "queued",
        "ignored",
        "duplicate",
        "recorded",
        "queued",
    )
    assert again.duplicate and again.job_ids == ()
    assert ping.notes == ("ignored: ping.- is not handled",)
    assert store.deliveries.outcome("b2") == ("ignored", "ignored: ping.- is not handled")
    assert "already queued" in reopened.notes[0]
    jobs = {j.id: j for j in store.leases.jobs()}
    assert sorted(jobs) == sorted([*first.job_ids, *other.job_ids])
    # The job ids are the rows' own (RETURNING), and the jobs are marked enqueued with the delivery.
    assert {jobs[i].head_sha for i in first.job_ids} == {SHA1}
    assert store.leases.due_jobs(lease_s=60) == []


def test_a_failing_delivery_rolls_its_whole_batch_back(store: Store) -> None:
    broken = Incoming(delivery_id="x2", event=None, action="", actions=[Ignore("no event")])  # type: ignore[arg-type]
    batch = [Incoming(delivery_id="x1", event="ping", action="", actions=[Ignore("ping")]), broken]
    with pytest.raises(Exception, match=r"(?i)null|integrity"):
        store.deliveries.record_batch(batch)
    # Nothing of the batch stayed: the intake records each alone after that (bot/web/intake.py).
    assert store.deliveries.outcome("x1") is None
    assert store.deliveries.record_batch(batch[:1])[0].outcome == "ignored"


def test_the_same_sha_is_not_queued_twice_but_a_rerun_is(store: Store) -> None:
    store.deliveries.record("d1", "pull_request", "opened", [opened()])
    replay = store.deliveries.record("d2", "pull_request", "reopened", [opened()])
    assert replay.job_ids == ()
    assert "already queued" in replay.notes[0]
    rerun = store.deliveries.record("d3", "check_run", "rerequested", [opened(rerun=True)])
    assert len(rerun.job_ids) == 1
    keys = [j.key for j in store.leases.jobs()]
    assert keys == ["octo/repo#7@" + SHA1, "octo/repo#7@" + SHA1 + "~d3"]


def test_ignored_deliveries_are_recorded_as_such(store: Store) -> None:
    result = store.deliveries.record("d1", "ping", "", [Ignore("ping.- is not handled")])
    assert result.job_ids == ()
    assert store.deliveries.outcome("d1") == ("ignored", "ignored: ping.- is not handled")
    assert result.outcome == "ignored"
    recorded = store.deliveries.record(
        "d2", "pull_request", "closed", [CancelRequest("octo/repo", 7, "closed")]
    )
    assert recorded.outcome == "recorded"
    assert store.deliveries.outcome("d2") == ("recorded", "closed: 0 live job(s) flagged")


def test_synchronize_flags_the_older_live_jobs_of_the_pr(store: Store) -> None:
    [old] = store.deliveries.record("d1", "pull_request", "opened", [opened(SHA1)]).job_ids
    [other_pr] = store.deliveries.record("d2", "pull_request", "opened", [opened(SHA1, number=8)]).job_ids
    [new] = store.deliveries.record(
        "d3", "pull_request", "synchronize", [opened(SHA2, supersedes=True)]
    ).job_ids
    assert store.leases.claim(old, "w", 30) is not None
    views = {j.id: j for j in store.leases.jobs()}
    assert views[old].cancel_reason == f"superseded by {SHA2}"
    assert views[other_pr].cancel_reason is None
    assert views[new].cancel_reason is None


def test_closing_and_uninstalling_flag_live_jobs(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    store.deliveries.record(
        "d2", "pull_request", "closed", [CancelRequest("octo/repo", 7, "the pull request was closed")]
    )
    view = store.leases.job(job)
    assert view is not None
    assert view.cancel_reason == "the pull request was closed"
    [job2] = store.deliveries.record("d3", "pull_request", "opened", [opened(SHA2, number=9)]).job_ids
    store.deliveries.record(
        "d4", "installation", "deleted", [InstallationChange(11, "octo", "deleted", False)]
    )
    view2 = store.leases.job(job2)
    assert view2 is not None
    assert view2.cancel_reason == "the installation was removed"
    assert store.deliveries.installation_active(11) is False
    store.deliveries.record(
        "d5", "installation", "created", [InstallationChange(11, "octo", "created", True, ("octo/repo",))]
    )
    assert store.deliveries.installation_active(11) is True


def test_a_reopened_pr_after_a_cancelled_job_gets_a_new_job(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    store.deliveries.record("d2", "pull_request", "closed", [CancelRequest("octo/repo", 7, "closed")])
    assert store.leases.claim(job, "w", 30) is not None
    assert store.leases.finish(job, "w", "cancelled")
    again = store.deliveries.record("d3", "pull_request", "reopened", [opened()])
    assert len(again.job_ids) == 1


def test_a_fork_pr_is_found_by_sha_for_check_suite_reruns(store: Store) -> None:
    store.deliveries.record("d1", "pull_request", "opened", [opened()])
    suite = GateRequest(11, "octo/repo", SHA1, "check_suite.rerequested", None, rerun=True)
    [job] = store.deliveries.record("d2", "check_suite", "rerequested", [suite]).job_ids
    view = store.leases.job(job)
    assert view is not None
    assert view.pr_number == 7
    unknown = GateRequest(11, "octo/repo", SHA2, "check_suite.rerequested", None, rerun=True)
    result = store.deliveries.record("d3", "check_suite", "rerequested", [unknown])
    assert result.job_ids == ()
    assert "no pull request known" in result.notes[0]


def test_claims_leases_and_heartbeats(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    claimed = store.leases.claim(job, "w1", lease_s=30, now=1000.0)
    assert claimed is not None
    assert (claimed.state, claimed.attempts, claimed.worker) == ("running", 1, "w1")
    assert store.leases.claim(job, "w2", 30, now=1010.0) is None  # the lease holds
    taken = store.leases.claim(job, "w2", 30, now=2000.0)  # w1 died: the lease ran out
    assert taken is not None
    assert (taken.worker, taken.attempts) == ("w2", 2)
    assert taken.reclaimed_from == "w1" and claimed.reclaimed_from is None
    assert store.leases.heartbeat(job, "w1", 30) == Beat(lease=Lease.TAKEN)
    assert store.leases.heartbeat(job, "w2", 30) == Beat(lease=Lease.RENEWED)
    assert not store.leases.finish(job, "w1", "done")
    assert store.leases.finish(job, "w2", "done", conclusion="success")
    # w2's own heartbeat, a moment after w2 finished the job: nothing was lost.
    assert store.leases.heartbeat(job, "w2", 30, attempt=2) == Beat(lease=Lease.ENDED)
    assert store.leases.heartbeat(job, "w1", 30, attempt=1) == Beat(lease=Lease.TAKEN)
    assert store.leases.claim(job, "w3", 30, now=9e9) is None


def test_a_heartbeat_after_a_retry_tells_its_own_retry_from_a_takeover(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    assert store.leases.claim(job, "w1", 30, now=1000.0) is not None
    assert store.leases.retry_later(job, "w1", delay_s=0, detail="GitHub answered 502")
    assert store.leases.heartbeat(job, "w1", 30, attempt=1) == Beat(
        lease=Lease.ENDED
    )  # w1 put it back itself
    again = store.leases.claim(job, "w2", 30)
    assert again is not None and again.reclaimed_from is None  # a queued job, not a takeover
    assert store.leases.retry_later(job, "w2", delay_s=0, detail="again")
    # w1's stale beat: nobody's name is on the job now, but a later attempt ran.
    assert store.leases.heartbeat(job, "w1", 30, attempt=1) == Beat(lease=Lease.TAKEN)


def test_a_worker_that_takes_back_its_own_expired_job_tells_its_two_attempts_apart(store: Store) -> None:
    # A stalled heartbeat let the lease run out, and the broker handed the job back to the same
    # process: both attempts carry the worker's name; only the newer one holds the job.
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    stale = store.leases.claim(job, "w", 30, now=1000.0)
    fresh = store.leases.claim(job, "w", 30, now=1031.0)
    assert stale is not None and fresh is not None and (stale.attempts, fresh.attempts) == (1, 2)
    assert store.leases.heartbeat(job, "w", 30, attempt=1) == Beat(lease=Lease.TAKEN)
    assert not store.leases.finish(job, "w", "done", conclusion="success", attempt=1)  # never its verdict
    assert not store.leases.retry_later(job, "w", 1, "stale", attempt=1)
    assert store.leases.heartbeat(job, "w", 30, attempt=2) == Beat(lease=Lease.RENEWED)
    assert store.leases.finish(job, "w", "done", conclusion="failure", attempt=2)
    view = store.leases.job(job)
    assert view is not None and (view.state, view.conclusion) == ("done", "failure")


def test_an_expired_lease_is_enqueued_once_per_lease_period_however_many_reapers_ask(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    assert store.leases.due_jobs(lease_s=30, now=1000.0) == [job]
    assert store.leases.claim(job, "dead", 30, now=1000.0) is not None  # and its worker is killed
    expired = 1031.0
    handed: list[list[int]] = []
    barrier = threading.Barrier(8)

    def reap(now: float) -> None:
        barrier.wait()
        handed.append(store.leases.due(lease_s=30, now=now).expired)

    for now in (expired, expired + 5, expired + 29):  # eight reapers, three passes each, one period
        threads = [threading.Thread(target=reap, args=(now,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(handed, key=len)[-1] == [job]
    assert sum(len(ids) for ids in handed) == 1
    # Still unclaimed a lease period later (every slot busy): handed out once more.
    assert store.leases.due(lease_s=30, now=expired + 31).expired == [job]
    assert store.leases.due(lease_s=30, now=expired + 32).ids == []


def test_only_one_of_many_concurrent_claims_wins(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    winners: list[str] = []
    barrier = threading.Barrier(6)

    def claim(name: str) -> None:
        barrier.wait()
        if store.leases.claim(job, name, 30) is not None:
            winners.append(name)

    threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1


def test_retry_later_and_due_jobs(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    assert store.leases.due_jobs(lease_s=30) == [job]  # never enqueued
    assert store.leases.due_jobs(lease_s=30) == []  # just enqueued
    assert store.leases.claim(job, "w", 30) is not None
    assert store.leases.retry_later(job, "w", delay_s=3600, detail="GitHub answered 502")
    view = store.leases.job(job)
    assert view is not None
    assert (view.state, view.detail) == ("queued", "GitHub answered 502")
    assert store.leases.claim(job, "w", 30) is None  # not yet due
    assert store.leases.due_jobs(lease_s=30) == []
    assert store.leases.due_jobs(lease_s=30, now=9e9) == [job]
    assert store.leases.claim(job, "w", 30, now=9e9) is not None
    assert store.leases.due_jobs(lease_s=30, now=9e9 + 31) == [job]  # its worker stopped heartbeating


def test_runs_are_stored_and_replaced_on_a_second_attempt(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    record = RunRecord(
        job_id=job,
        repository="octo/repo",
        pr_number=7,
        head_sha=SHA1,
        base_sha=SHA2,
        conclusion="failure",
        report={"conclusion": "failure"},
        findings=3,
        hidden_pass_rate=0.5,
        timings={"shape": 1.5},
    )
    store.runs.save(record)
    store.runs.save(
        RunRecord(
            job_id=job,
            repository="octo/repo",
            pr_number=7,
            head_sha=SHA1,
            base_sha=SHA2,
            conclusion="success",
            report={"conclusion": "success"},
        )
    )
    assert store.runs.report(job) == {"conclusion": "success"}
    assert store.runs.count() == 1


def test_a_comment_command_takes_the_prs_latest_head_and_explain_its_latest_run(store: Store) -> None:
    command = GateRequest(11, "octo/repo", "", "issue_comment.rerun", 7, rerun=True)
    assert store.deliveries.record("c0", "issue_comment", "created", [command]).job_ids == ()
    assert store.runs.latest("octo/repo", 7) is None
    [first] = store.deliveries.record("d1", "pull_request", "opened", [opened(SHA1)]).job_ids
    [second] = store.deliveries.record("d2", "pull_request", "synchronize", [opened(SHA2)]).job_ids
    [rerun] = store.deliveries.record("c1", "issue_comment", "created", [command]).job_ids
    assert [j.head_sha for j in store.leases.jobs() if j.id == rerun] == [SHA2]
    store.runs.save(
        RunRecord(
            job_id=first,
            repository="octo/repo",
            pr_number=7,
            head_sha=SHA1,
            base_sha="0" * 40,
            conclusion="failure",
            report={"conclusion": "failure"},
        )
    )
    store.runs.save(
        RunRecord(
            job_id=second,
            repository="octo/repo",
            pr_number=7,
            head_sha=SHA2,
            base_sha="0" * 40,
            conclusion="success",
            report={"conclusion": "success"},
        )
    )
    store.leases.set_check_run(second, 99)
    assert store.runs.latest("octo/repo", 7) == ({"conclusion": "success"}, 99)
    assert store.runs.latest("octo/repo", 8) is None


def test_judge_records_and_verdict_cache(store: Store) -> None:
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    store.judge.add(
        job,
        "octo/repo",
        SHA1,
        JudgeRow(model="m", rubric="default", execution_passed=False, judge_passed=True, shadow=True),
    )
    assert store.judge.records() == [
        JudgeRow(model="m", rubric="default", execution_passed=False, judge_passed=True, shadow=True)
    ]
    cache = StoreVerdictCache(store)
    assert cache.get("k") is None
    verdicts = [
        CriterionResult(id="c1", rubric="default", question="q?", severity="advisory", verdict="pass")
    ]
    cache.put("k", verdicts)
    cache.put("k", [])  # the first answer stays
    assert cache.get("k") == verdicts


def test_a_repository_removed_from_the_installation_flags_its_jobs(store: Store) -> None:
    store.deliveries.record(
        "d0", "installation", "created", [InstallationChange(11, "octo", "created", True, ("octo/repo",))]
    )
    [job] = store.deliveries.record("d1", "pull_request", "opened", [opened()]).job_ids
    removed = InstallationChange(11, "octo", "removed", True, repos_removed=("octo/repo",))
    result = store.deliveries.record("d2", "installation_repositories", "removed", [removed])
    assert "1 live job(s) flagged" in result.notes[0]
    view = store.leases.job(job)
    assert view is not None
    assert view.cancel_reason == "the repository was removed from the installation"
    assert store.deliveries.installation_active(11) is True


def test_a_full_repository_turns_its_next_job_away_until_one_ends(store: Store) -> None:
    [a1] = store.deliveries.record("d1", "pull_request", "opened", [opened(SHA1, number=1)]).job_ids
    [a2] = store.deliveries.record("d2", "pull_request", "opened", [opened(SHA2, number=2)]).job_ids
    other = GateRequest(11, "octo/other", SHA1, "pull_request.opened", 1)
    [b1] = store.deliveries.record("d3", "pull_request", "opened", [other]).job_ids
    store.leases.mark_enqueued([a1, a2, b1])
    assert store.leases.claim(a1, "w1", 30, now=1000.0, per_repository=1) is not None
    assert store.leases.claim(a2, "w2", 30, now=1001.0, per_repository=1) is None
    assert store.leases.claim(b1, "w2", 30, now=1001.0, per_repository=1) is not None  # another repository
    # The job turned away is waiting for its repository, and the reaper sees it as never enqueued.
    assert store.leases.waiting("octo/repo", now=1002.0) == [a2]
    assert store.leases.waiting("octo/repo", now=1002.0) == []  # handed out once
    assert store.leases.finish(a1, "w1", "done", conclusion="success")
    assert store.leases.claim(a2, "w2", 30, now=1003.0, per_repository=1) is not None


def test_a_dead_workers_expired_lease_does_not_hold_its_repository(store: Store) -> None:
    [a1] = store.deliveries.record("d1", "pull_request", "opened", [opened(SHA1, number=1)]).job_ids
    [a2] = store.deliveries.record("d2", "pull_request", "opened", [opened(SHA2, number=2)]).job_ids
    assert store.leases.claim(a1, "dead", 30, now=1000.0, per_repository=1) is not None
    assert store.leases.claim(a2, "w", 30, now=1010.0, per_repository=1) is None
    assert store.leases.claim(a2, "w", 30, now=1031.0, per_repository=1) is not None
    # ... and the dead worker's own job is claimable again beside it only when the limit allows.
    assert store.leases.claim(a1, "w", 30, now=1032.0, per_repository=1) is None
    assert store.leases.claim(a1, "w", 30, now=1032.0, per_repository=2) is not None


def test_concurrent_claims_never_exceed_the_repository_limit(store: Store) -> None:
    shas = [f"{i:040d}" for i in range(6)]
    ids = [
        store.deliveries.record(f"d{i}", "pull_request", "opened", [opened(sha, number=i)]).job_ids[0]
        for i, sha in enumerate(shas)
    ]
    won: list[int] = []
    barrier = threading.Barrier(len(ids))

    def take(job_id: int) -> None:
        barrier.wait()
        if store.leases.claim(job_id, f"w{job_id}", 30, per_repository=2) is not None:
            won.append(job_id)

    threads = [threading.Thread(target=take, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 2


def _kill_backends(store: Store) -> None:
    """Terminate every server connection the store's pool holds, as a PostgreSQL restart would."""
    import psycopg

    url = store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.mark.postgres
def test_an_idle_connection_that_died_is_replaced_before_use(postgres_url: str) -> None:
    store = Store(postgres_url, ping_after_idle_s=0.0)  # every checkout counts as idle: pinged
    try:
        store.migrate()
        store.ping()
        _kill_backends(store)
        # The ping finds the pooled connection dead; the pool hands out a fresh one instead.
        assert store.deliveries.record("p1", "ping", "", [Ignore("ping")]).outcome == "ignored"
    finally:
        store.close()


@pytest.mark.postgres
def test_a_connection_that_died_right_after_use_fails_once_then_the_pool_is_fresh(postgres_url: str) -> None:
    store = Store(postgres_url, ping_after_idle_s=3600.0)  # never pinged: a round trip saved
    try:
        store.migrate()
        store.ping()
        _kill_backends(store)
        with pytest.raises(Exception, match=r"(?i)terminat|closed|connection"):
            store.deliveries.record("p1", "ping", "", [Ignore("ping")])
        # SQLAlchemy replaced the pool's connections on that disconnect: the retry goes through
        # (the intake retries a failed delivery alone, bot/web/intake.py).
        assert store.deliveries.record("p1", "ping", "", [Ignore("ping")]).outcome == "ignored"
    finally:
        store.close()


def test_recording_a_delivery_never_scans_every_job(tmp_path: object) -> None:
    # The intake's statements must stay cheap as the jobs table grows: each goes through an index.
    from sqlalchemy import event

    store = Store(f"sqlite:///{tmp_path}/plans.db")
    try:
        store.migrate()
        statements: list[tuple[str, Any]] = []

        @event.listens_for(store.engine, "before_cursor_execute")
        def _seen(_conn: object, _cursor: object, statement: str, parameters: Any, *_: object) -> None:
            statements.append((statement, parameters))

        store.deliveries.record("d1", "pull_request", "opened", [opened(SHA1)])
        store.deliveries.record("d2", "pull_request", "synchronize", [opened(SHA2, supersedes=True)])
        store.deliveries.record("d3", "check_run", "rerequested", [opened(SHA2, rerun=True)])
        store.deliveries.record("d4", "pull_request", "closed", [CancelRequest("octo/repo", 7, "closed")])
        event.remove(store.engine, "before_cursor_execute", _seen)
        plans = []
        raw = store.engine.raw_connection()
        try:
            for statement, parameters in statements:
                if " jobs" in statement and not statement.startswith(("BEGIN", "INSERT")):
                    plan = raw.cursor().execute(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
                    plans.append((statement.split()[0], [row[-1] for row in plan]))
        finally:
            raw.close()
        assert plans  # the lookups were seen
        assert not [p for p in plans if any(step.startswith("SCAN jobs") for step in p[1])], plans
    finally:
        store.close()


@pytest.mark.postgres
def test_an_upgrade_waits_for_one_in_progress_on_postgresql(postgres_url: str) -> None:
    from sqlalchemy import text

    from bot.store.migrations import upgrade_in

    first, second = Store(postgres_url), Store(postgres_url)
    try:
        with first.engine.connect() as conn:
            conn.begin()
            upgrade_in(conn)  # the tables exist in this open transaction only
            errors: list[BaseException] = []

            def migrate() -> None:
                try:
                    second.migrate()
                except BaseException as exc:  # the assertion below shows it
                    errors.append(exc)

            thread = threading.Thread(target=migrate)
            thread.start()
            thread.join(1.0)
            assert thread.is_alive(), f"the second upgrade did not wait: {errors}"
            conn.commit()
        thread.join(30)
        assert errors == []
        with second.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
    finally:
        first.close()
        second.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_processes_that_start_together_on_an_empty_database_all_upgrade_it(
    postgres_url: str, tmp_path: Path
) -> None:
    import subprocess
    import sys
    import time

    from tests.bot.harness import ROOT

    # Each process imports everything, says so, then waits for the same go: the upgrades
    # start within a few milliseconds of one another, not an interpreter start apart.
    code = (
        "import sys, time, pathlib; from bot.store import Store; s = Store(sys.argv[1]); "
        "d = pathlib.Path(sys.argv[2]); (d / sys.argv[3]).touch(); "
        "exec('while not (d / \"go\").exists(): time.sleep(0.001)'); s.migrate(); s.close()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, postgres_url, str(tmp_path), f"ready{i}"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready*"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    (tmp_path / "go").touch()
    answers = [(p.communicate(timeout=120)[1], p.returncode) for p in procs]
    assert [err for err, code in answers if code != 0] == []
    s = Store(postgres_url)
    try:
        with s.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    finally:
        s.close()


def test_a_help_reply_on_an_ungated_pr_is_no_head_a_rerun_can_take(store: Store) -> None:
    from bot.github.events import HELP

    help_request = GateRequest(11, "octo/repo", "", HELP, 7, rerun=True, comment_id=1)
    [reply] = store.deliveries.record("d1", "issue_comment", "created", [help_request]).job_ids
    assert store.leases.job(reply) is not None
    rerun = GateRequest(11, "octo/repo", "", "issue_comment.rerun", 7, rerun=True, comment_id=2)
    recorded = store.deliveries.record("d2", "issue_comment", "created", [rerun])
    assert recorded.job_ids == ()
    assert "patchgate has not gated octo/repo#7" in recorded.notes[0]


def test_connections_opening_a_new_sqlite_store_at_once_all_connect(tmp_path: Path) -> None:
    # Web and worker threads (or processes) reaching a new SQLite file together: the WAL switch
    # on connect used to fail one of them with "database is locked".
    for trial in range(25):
        engine = make_engine(f"sqlite:///{tmp_path / f'{trial}.sqlite'}")

        def connect(engine: Engine = engine) -> None:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        try:
            assert at_once(connect) == []
        finally:
            engine.dispose()
