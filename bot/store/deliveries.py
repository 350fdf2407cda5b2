"""Recording deliveries: dedupe by delivery id, jobs per sha, cancel flags, installations."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from bot.github.events import REPLIES, Action, CancelRequest, GateRequest, Ignore, InstallationChange, run_key
from bot.store.database import Part
from bot.store.tables import LIVE, QUEUED, RUNNING, Delivery, Installation, Job, Repository

# A job whose sha already has one of these is not queued again by a plain pull_request event.
_SETTLED_OR_LIVE = (QUEUED, RUNNING, "done")


@dataclass(frozen=True, kw_only=True)
class Incoming:
    """One authenticated delivery and the work it asks for, as the web side read it."""

    delivery_id: str
    event: str
    action: str
    actions: Sequence[Action]
    installation_id: int | None = None
    repository: str = ""
    # When it arrived (UNIX seconds); the recording transaction may come a little later.
    received_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """What recording a delivery did: a duplicate records nothing."""

    duplicate: bool
    job_ids: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    # queued, ignored or recorded, as stored on the delivery's row (the web side answers with it)
    outcome: str = "duplicate"


def _ignored(actions: Sequence[Action]) -> bool:
    return all(isinstance(a, Ignore) for a in actions)


class Deliveries(Part):
    """What each webhook delivery asked for, recorded in one transaction."""

    def record(
        self,
        delivery_id: str,
        event: str,
        action: str,
        actions: Sequence[Action],
        *,
        installation_id: int | None = None,
        repository: str = "",
        now: float | None = None,
        enqueued: bool = False,
    ) -> Recorded:
        """Record a delivery and the work it asks for in one transaction; a known id is a duplicate."""
        incoming = Incoming(
            delivery_id=delivery_id,
            event=event,
            action=action,
            actions=actions,
            installation_id=installation_id,
            repository=repository,
            received_at=now,
        )
        return self.record_batch([incoming], enqueued=enqueued)[0]

    def record_batch(self, batch: Sequence[Incoming], *, enqueued: bool = False) -> list[Recorded]:
        """Record deliveries in order in one transaction (one commit for all); a known id is a duplicate.

        Any failure rolls back the whole batch: the caller records the deliveries one by one then,
        so one delivery's trouble is never another's.
        """
        now = time.time()
        with self._tx() as s:
            return [self._record(s, one, now, enqueued=enqueued) for one in batch]

    def _record(self, s: Session, one: Incoming, now: float, *, enqueued: bool) -> Recorded:
        received = now if one.received_at is None else one.received_at
        row = {
            "id": one.delivery_id,
            "event": one.event,
            "action": one.action,
            "installation_id": one.installation_id,
            "repository": one.repository,
            "received_at": received,
        }
        if _ignored(one.actions):
            # Most of what GitHub sends: the row is final at once, one statement.
            notes = tuple(f"ignored: {a.reason}" for a in one.actions if isinstance(a, Ignore))
            final = {**row, "outcome": "ignored", "detail": "; ".join(notes)[:4000]}
            if not self._insert_ignore(s, Delivery, final):
                return Recorded(duplicate=True)
            return Recorded(duplicate=False, notes=notes, outcome="ignored")
        if not self._insert_ignore(s, Delivery, {**row, "outcome": "recorded", "detail": ""}):
            return Recorded(duplicate=True)
        job_ids, notes = self._work(s, one, received, enqueued=enqueued)
        outcome = "queued" if job_ids else "recorded"
        s.execute(
            update(Delivery)
            .where(Delivery.id == one.delivery_id)
            .values(outcome=outcome, detail="; ".join(notes)[:4000])
            .execution_options(synchronize_session=False)
        )
        return Recorded(duplicate=False, job_ids=job_ids, notes=notes, outcome=outcome)

    def _work(
        self, s: Session, one: Incoming, now: float, *, enqueued: bool
    ) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """Queue, flag and record what a fresh delivery asks for; return the new job ids and notes."""
        job_ids: list[int] = []
        notes: list[str] = []
        for act in one.actions:
            if isinstance(act, GateRequest):
                job_id, note = self._add_job(s, one.delivery_id, act, now, enqueued=enqueued)
                if job_id is not None:
                    job_ids.append(job_id)
                notes.append(note)
            elif isinstance(act, CancelRequest):
                pr = (Job.repository == act.repository, Job.pr_number == act.pr_number)
                n = self._flag(s, *pr, reason=act.reason, now=now)
                notes.append(f"{act.reason}: {n} live job(s) flagged")
            elif isinstance(act, InstallationChange):
                notes.append(self._installation(s, act, now))
            elif isinstance(act, Ignore):
                notes.append(f"ignored: {act.reason}")
        return tuple(job_ids), tuple(notes)

    def outcome(self, delivery_id: str) -> tuple[str, str] | None:
        with self._tx() as s:
            row = s.get(Delivery, delivery_id)
            return (row.outcome, row.detail) if row is not None else None

    def _add_job(
        self, s: Session, delivery_id: str, req: GateRequest, now: float, *, enqueued: bool = False
    ) -> tuple[int | None, str]:
        number = req.pr_number
        if number is None and req.external_id:
            origin = s.scalar(select(Job).where(Job.key == req.external_id))
            number = origin.pr_number if origin is not None else None
        if number is None:
            number = s.scalar(
                select(Job.pr_number)
                .where(Job.repository == req.repository, Job.head_sha == req.head_sha)
                .order_by(Job.id.desc())
                .limit(1)
            )
        if number is None:
            return None, f"{req.trigger}: no pull request known for {req.head_sha[:12]}"
        if not req.head_sha:  # a comment command: the PR's latest gated head
            head = s.scalar(
                select(Job.head_sha)
                # A reply's job (help) names no head: it is no gated head to rerun.
                .where(Job.repository == req.repository, Job.pr_number == number, Job.head_sha != "")
                .order_by(Job.id.desc())
                .limit(1)
            )
            if head is None and req.trigger not in REPLIES:
                return None, f"{req.trigger}: patchgate has not gated {req.repository}#{number}"
            # A reply (help, an unknown command) needs no gated head: it answers on any PR.
            req = replace(req, head_sha=head or "")
        key = run_key(req.repository, number, req.head_sha)
        if not req.rerun:
            # The key's fields too: a LIKE on the key alone scanned every job ever recorded (neither
            # SQLite's case-insensitive LIKE nor PostgreSQL's collation can use the key's index);
            # these narrow it to the sha's jobs through ix_jobs_sha.
            existing = s.scalar(
                select(Job)
                .where(
                    Job.repository == req.repository,
                    Job.head_sha == req.head_sha,
                    Job.pr_number == number,
                    Job.key.startswith(key, autoescape=True),
                )
                .order_by(Job.id.desc())
                .limit(1)
            )
            if existing is not None and existing.state in _SETTLED_OR_LIVE and not existing.cancel_reason:
                return None, f"{req.trigger}: {key} is already {existing.state} (job {existing.id})"
            if existing is not None:
                key = run_key(req.repository, number, req.head_sha, delivery_id)
        else:
            key = run_key(req.repository, number, req.head_sha, delivery_id)
        if req.supersedes:
            self._flag(
                s,
                Job.repository == req.repository,
                Job.pr_number == number,
                Job.head_sha != req.head_sha,
                reason=f"superseded by {req.head_sha}",
                now=now,
            )
        job_id = self._insert_returning(
            s,
            Job,
            {
                "key": key,
                "delivery_id": delivery_id,
                "trigger": req.trigger,
                "installation_id": req.installation_id,
                "repository": req.repository,
                "pr_number": number,
                "head_sha": req.head_sha,
                "judge_anyway": req.judge_anyway,
                "state": QUEUED,
                "attempts": 0,
                "not_before": 0.0,
                "enqueued_at": now if enqueued else None,
                "detail": "",
                "created_at": now,
                "updated_at": now,
                "comment_id": req.comment_id,
                "argument": req.argument,
            },
        )
        if job_id is None:
            return None, f"{req.trigger}: {key} was queued concurrently"
        return int(job_id), f"{req.trigger}: queued {key} as job {job_id}"

    def _flag(self, s: Session, *where: Any, reason: str, now: float) -> int:
        """Ask live jobs to stop: the worker running one completes its check run with ``reason``."""
        result = s.execute(
            update(Job)
            .where(*where, Job.state.in_(LIVE), Job.cancel_reason.is_(None))
            .values(cancel_reason=reason, updated_at=now)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def _installation(self, s: Session, change: InstallationChange, now: float) -> str:
        row = s.get(Installation, change.installation_id)
        if row is None:
            s.add(
                Installation(
                    id=change.installation_id, account=change.account, active=change.active, updated_at=now
                )
            )
        else:
            row.active, row.updated_at = change.active, now
            row.account = change.account or row.account
        for name in change.repos_added:
            repo = s.get(Repository, name)
            if repo is None:
                s.add(
                    Repository(
                        full_name=name, installation_id=change.installation_id, active=True, updated_at=now
                    )
                )
            else:
                repo.installation_id, repo.active, repo.updated_at = change.installation_id, True, now
        for name in change.repos_removed:
            s.execute(
                update(Repository).where(Repository.full_name == name).values(active=False, updated_at=now)
            )
        flagged = 0
        if not change.active:
            what = "suspended" if change.action == "suspend" else "removed"
            flagged = self._flag(
                s,
                Job.installation_id == change.installation_id,
                reason=f"the installation was {what}",
                now=now,
            )
        for name in change.repos_removed:
            flagged += self._flag(
                s, Job.repository == name, reason="the repository was removed from the installation", now=now
            )
        return f"installation {change.installation_id} {change.action}; {flagged} live job(s) flagged"

    def installation_active(self, installation_id: int) -> bool | None:
        with self._tx() as s:
            row = s.get(Installation, installation_id)
            return None if row is None else row.active
