from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from checks.quality.answer import AnswerError, CriterionAnswer, ShadowAnswer
from checks.quality.inputs import JudgeSettings
from checks.quality.judge import Judge, JudgeUnavailable, describe, gather, run
from tests.checks.quality.conftest import MODEL, settings
from tests.fakes.openai_server import Reply, serve

CHAT = [{"role": "system", "content": "rules"}, {"role": "user", "content": "material"}]
GOOD = Reply(content=json.dumps({"verdict": "FAIL", "reason": "r"}))


def test_importing_the_quality_layer_does_not_import_litellm() -> None:
    code = "import sys, checks.quality, checks.quality.judge; assert 'litellm' not in sys.modules"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_num_retries_and_timeout_reach_the_client() -> None:
    with serve(lambda request: Reply.error(500)) as server:
        s = settings(server, num_retries=2)
        with pytest.raises(JudgeUnavailable, match=r"server error \(HTTP 500\) after 2 retries"):
            run(lambda: Judge(MODEL, s).ask(CHAT, ShadowAnswer))
        assert server.calls == 3
    with serve(lambda request: Reply(content="late", delay_s=2)) as server:
        s = settings(server, timeout_s=0.3)
        with pytest.raises(JudgeUnavailable, match=r"timeout after 0.3s"):
            run(lambda: Judge(MODEL, s).ask(CHAT, ShadowAnswer))
        assert server.calls == 1


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(raw=b"<html>upstream says hello</html>"), "answered HTTP 200 with a body that is not JSON"),
        (Reply(raw=b""), "answered HTTP 200 with a body that is not JSON"),
        (Reply.error(500), r"server error (HTTP 500)"),
        (Reply(raw=b"not json", status=502), "server error (HTTP 502)"),
        (Reply(content="late", delay_s=2), "timeout after 0.3s"),
    ],
    ids=["html-200", "empty-200", "http-500", "non-json-502", "timeout"],
)
def test_each_outage_is_named_and_nothing_reaches_stdout(
    reply: Reply, reason: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with serve(lambda request: reply) as server:
        s = settings(server, timeout_s=0.3)
        with pytest.raises(JudgeUnavailable) as raised:
            run(lambda: Judge(MODEL, s).ask(CHAT, ShadowAnswer))
    assert reason in raised.value.reason
    # litellm prints a "Give Feedback / Get Help" banner on stdout unless told not to.
    assert capfd.readouterr().out == ""


@pytest.mark.slow
def test_the_run_budget_bounds_every_call_and_retry() -> None:
    # A hanging endpoint with a long timeout and retries: the budget ends it, not the timeouts.
    with serve(lambda request: Reply(content="late", delay_s=30)) as server:
        s = settings(server, timeout_s=60, num_retries=2, budget_s=1.0).started()
        start = time.monotonic()
        with pytest.raises(JudgeUnavailable, match=r"judge time budget \(1s\) is spent"):
            run(lambda: Judge(MODEL, s).ask(CHAT, ShadowAnswer))
        # The 1 s budget ended it, not the 30 s reply (three times, with the retries).
        assert time.monotonic() - start < 20
        # A later call of the same run starts with nothing left and asks nobody.
        calls = server.calls
        with pytest.raises(JudgeUnavailable, match="budget"):
            run(lambda: Judge(MODEL, s).ask(CHAT, ShadowAnswer))
        assert server.calls == calls


def test_started_settings_share_one_clock_that_starts_at_the_first_call() -> None:
    s = JudgeSettings(budget_s=100).started()
    assert s.clock is not None
    # Read into a name: narrowing the attribute itself would outlive the call that sets it.
    not_yet = s.clock.started_at
    assert not_yet is None  # imports and token counting are free
    assert s.started() is s  # a second start keeps the first clock
    copy = replace(s, timeout_s=5)
    left = copy.remaining()
    assert left is not None and 0 < left <= 100  # counted from that call (a busy machine may be slow)
    assert s.clock.started_at is not None  # the copy's call started the shared clock
    assert JudgeSettings(budget_s=None).started().remaining() is None
    assert JudgeSettings().remaining() is None  # not started: no budget yet


def test_runs_on_concurrent_threads_do_not_break_each_other() -> None:
    """The pipeline runs in worker threads: two runs at once must both get their answer."""
    results: list[object] = []
    with serve(lambda request: Reply(content=GOOD.content, delay_s=0.2)) as server:

        def one() -> None:
            results.append(run(lambda: Judge(MODEL, settings(server)).ask(CHAT, ShadowAnswer)))

        threads = [threading.Thread(target=one) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert len(results) == 3
    assert all(isinstance(r, ShadowAnswer) for r in results)


def test_one_repair_retry_then_an_answer_error() -> None:
    with serve(None, Reply(content="garbage"), GOOD) as server:
        answer = run(lambda: Judge(MODEL, settings(server)).ask(CHAT, ShadowAnswer))
        assert isinstance(answer, ShadowAnswer) and answer.verdict == "FAIL"
        assert server.calls == 2
        repair = server.requests[1]["messages"]
        assert repair[:2] == CHAT
        assert repair[2] == {"role": "assistant", "content": "garbage"}
        assert "not JSON" in repair[3]["content"]
    with serve(None, Reply(content=""), Reply(content='{"verdict": "PASS"}')) as server:
        usage_judge: list[Judge] = []

        async def ask() -> CriterionAnswer | AnswerError:
            usage_judge.append(Judge(MODEL, settings(server)))
            return await usage_judge[0].ask(CHAT, CriterionAnswer)

        failed = run(ask)
        assert isinstance(failed, AnswerError)
        assert "must cite at least one" in str(failed)
        assert server.calls == 2
        assert usage_judge[0].usage.calls == 2
        assert usage_judge[0].usage.prompt_tokens == 200


def test_gather_prefers_the_outage_and_cancels_the_rest() -> None:
    cancelled: list[bool] = []

    async def slow() -> int:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return 1

    async def down() -> int:
        await asyncio.sleep(0)
        raise JudgeUnavailable("rate limited (HTTP 429)")

    async def both() -> list[int]:
        return await gather([slow(), down()])

    with pytest.raises(JudgeUnavailable, match="429"):
        run(both)
    assert cancelled == [True]

    async def values() -> list[int]:
        async def one(n: int) -> int:
            return n

        return await gather(one(n) for n in range(3))

    assert run(values) == [0, 1, 2]


class Timeout(Exception):
    status_code = 408


class RateLimitError(Exception):
    status_code = 429


class InternalServerError(Exception):
    status_code = 500


class AuthenticationError(Exception):
    status_code = 401


class APIConnectionError(Exception):
    pass


class BadRequestError(Exception):
    status_code = 400


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (Timeout("slow"), "timeout after 60s after 2 retries"),
        (TimeoutError(), "timeout after 60s after 2 retries"),
        (RateLimitError("x"), "rate limited (HTTP 429) after 2 retries"),
        (InternalServerError("boom\nmore"), "server error (HTTP 500) after 2 retries: boom"),
        (AuthenticationError("bad key sk-secret"), "authentication failed (HTTP 401)"),
        (APIConnectionError("refused"), "cannot connect to the judge endpoint after 2 retries"),
        (BadRequestError("key sk-secret is wrong"), "request rejected (HTTP 400): key *** is wrong"),
        (ValueError("odd sk-secret"), "ValueError: odd ***"),
    ],
)
def test_describe_outages_without_the_key(exc: Exception, text: str) -> None:
    assert describe(exc, JudgeSettings(api_key="sk-secret")) == text


def test_runs_leave_no_open_client_behind() -> None:
    """litellm caches HTTP clients across calls; each run's event loop closes, so they must close too."""
    import litellm

    with serve(lambda request: GOOD) as server:
        for _ in range(3):
            run(lambda: Judge(MODEL, settings(server)).ask(CHAT, ShadowAnswer))
    assert server.calls == 3
    cached = litellm.in_memory_llm_clients_cache.cache_dict.values()
    clients = [getattr(c, "_client", None) or getattr(c, "client", None) for c in cached]
    open_clients = [c for c in clients if c is not None and not c.is_closed]
    assert clients
    assert open_clients == []
