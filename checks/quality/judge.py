"""The call to the judge model through litellm: one request, one repair retry, usage and cost.

litellm is imported lazily (it takes seconds) after LITELLM_LOCAL_MODEL_COST_MAP
is set, so no price map is fetched from the network. Every call passes its own
settings (model, endpoint, key, timeout, retries); the only module state
touched is a price registration for models litellm has no price for, and the
clean-up of litellm's cached clients before the event loop closes, and its
``suppress_debug_info`` switch (see `litellm`). A run's calls share the
settings' time budget (JudgeSettings.budget_s).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from checks.quality.answer import Answer, AnswerError, parse_answer, response_format
from checks.quality.inputs import JudgeSettings

log = logging.getLogger(__name__)

# Criteria are judged concurrently, but politely: rate limits are per account.
MAX_CONCURRENT_CALLS = 4
# How much of an invalid reply is sent back when asking for a repair.
REPAIR_ECHO_CHARS = 2000
REPAIR = (
    "Your previous reply could not be used: {error}. Reply again with only the JSON object "
    "described in the instructions, and nothing else."
)

A = TypeVar("A", bound=Answer)
T = TypeVar("T")


class JudgeUnavailable(Exception):
    """The judge could not be reached or kept failing (timeout, 429, 5xx, ...): not the PR's fault.

    ``rejected``: the endpoint refused the request itself (a 4xx but for authentication, a timeout or a
    rate limit: a content filter, a prompt too long, an invalid prompt). The request holds the change's
    text, so the change may be what it refused: not an outage, which would end neutral.
    """

    def __init__(self, reason: str, *, rejected: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rejected = rejected


# 4xx answers that say nothing of the request's content: authentication, a timeout, a rate limit.
_NOT_THE_REQUEST = frozenset({401, 403, 408, 429})


def rejected_request(exc: BaseException) -> bool:
    """Whether the endpoint refused this request for what it holds (``JudgeUnavailable.rejected``)."""
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in _NOT_THE_REQUEST


@dataclass
class Usage:
    """Tokens and cost spent across the calls of one run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    calls: int = 0
    # (input, output) USD per token from the settings, e.g. zero for a local model. Applied here,
    # per run: registering it in litellm's global price map would leak into every other run.
    price: tuple[float, float] | None = None

    def add(self, response: Any, model: str) -> None:
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.calls += 1
        if self.price is not None:
            self.cost_usd += prompt * self.price[0] + completion * self.price[1]
            return
        try:
            self.cost_usd += float(litellm().completion_cost(completion_response=response, model=model))
        except Exception:  # litellm raises several types for "no price known for this model"
            self.unpriced = True


@dataclass
class Judge:
    """One run's connection to the judge model: settings, a concurrency limit, and the usage tally."""

    model: str
    settings: JudgeSettings
    usage: Usage = field(default_factory=Usage)
    limit: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(MAX_CONCURRENT_CALLS))

    async def _complete(
        self, messages: list[dict[str, str]], kind: type[Answer]
    ) -> tuple[str | None, str | None]:
        """Send one request; return the reply's (content, refusal)."""
        s = self.settings
        async with self.limit:
            # Measured after the wait for a slot: queueing behind other criteria spends the budget too.
            left = s.remaining()
            if left is not None and left <= 0:
                raise JudgeUnavailable(out_of_budget(s))
            call = litellm().acompletion(
                model=self.model,
                messages=messages,
                temperature=0,
                response_format=response_format(kind),
                timeout=s.timeout_s if left is None else min(s.timeout_s, left),
                num_retries=s.num_retries,
                api_base=s.api_base,
                api_key=s.api_key,
            )
            try:
                # litellm's retries happen inside the call: the budget bounds them as a whole.
                response = await (call if left is None else asyncio.wait_for(call, left))
            except Exception as exc:  # whatever the transport raises, the judge is unavailable
                spent = left is not None and (s.remaining() or 0.0) <= 0
                reason = out_of_budget(s) if spent else describe(exc, s)
                raise JudgeUnavailable(reason, rejected=not spent and rejected_request(exc)) from exc
        self.usage.add(response, self.model)
        choices = getattr(response, "choices", None) or []
        if not choices:
            return None, None
        message = choices[0].message
        content = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        return (
            content if isinstance(content, str) else None,
            refusal if isinstance(refusal, str) else None,
        )

    async def ask(self, messages: list[dict[str, str]], kind: type[A]) -> A | AnswerError:
        """Ask once, and once more with the validation error if the reply is unusable.

        Returns the validated answer, or the AnswerError of the second reply.
        Raises JudgeUnavailable when the endpoint itself fails.
        """
        content, refusal = await self._complete(messages, kind)
        try:
            return parse_answer(content, kind, refusal=refusal)
        except AnswerError as first:
            log.info("judge reply unusable (%s); asking once more", first)
            echo = (content or refusal or "")[:REPAIR_ECHO_CHARS] or "(empty)"
            repair = [
                *messages,
                {"role": "assistant", "content": echo},
                {"role": "user", "content": REPAIR.format(error=first)},
            ]
        content, refusal = await self._complete(repair, kind)
        try:
            return parse_answer(content, kind, refusal=refusal)
        except AnswerError as second:
            return second


def token_counter(model: str) -> Callable[[str], int]:
    """Return a function counting ``model``'s prompt tokens in a text (litellm.token_counter)."""
    module = litellm()

    def count(text: str) -> int:
        return int(module.token_counter(model=model, text=text))

    return count


async def gather(coros: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run coroutines concurrently; on the first failure cancel the rest and raise that failure.

    A JudgeUnavailable is preferred over other errors raised at the same time.
    """
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coros]
    except BaseExceptionGroup as failed:
        errors = list(failed.exceptions)
        raise next((e for e in errors if isinstance(e, JudgeUnavailable)), errors[0]) from None
    return [t.result() for t in tasks]


def out_of_budget(settings: JudgeSettings) -> str:
    """Say that the run's judge time budget is spent."""
    return f"the run's judge time budget ({settings.budget_s:g}s) is spent"


def _not_json(exc: BaseException) -> json.JSONDecodeError | None:
    """Return the JSON error behind ``exc`` when the endpoint answered with a body that is not JSON.

    litellm reports a 2xx answer it cannot decode as an InternalServerError
    (HTTP 500); the decoding error is in the exception's chain.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, json.JSONDecodeError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def describe(exc: BaseException, settings: JudgeSettings) -> str:
    """Say why the judge is unavailable in one line, without the API key."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    retries = f" after {settings.num_retries} retries" if settings.num_retries else ""
    first_line = (str(exc).strip().splitlines() or [""])[0][:200]
    decoding = _not_json(exc)
    if decoding is not None:
        text = f"the endpoint answered HTTP 200 with a body that is not JSON ({decoding.msg}){retries}"
    elif "Timeout" in name or isinstance(exc, TimeoutError):
        text = f"timeout after {settings.timeout_s:g}s{retries}"
    elif status == 429:
        text = f"rate limited (HTTP 429){retries}"
    elif isinstance(status, int) and status >= 500:
        text = f"server error (HTTP {status}){retries}: {first_line}"
    elif status in (401, 403):
        text = f"authentication failed (HTTP {status})"
    elif "Connection" in name:
        text = f"cannot connect to the judge endpoint{retries}"
    elif isinstance(status, int):
        text = f"request rejected (HTTP {status}): {first_line}"
    else:
        text = f"{name}: {first_line}"
    if settings.api_key:
        text = text.replace(settings.api_key, "***")
    return text


def litellm() -> Any:
    """Import litellm with the bundled price map (never fetched from the network), quietly.

    litellm prints a "Give Feedback / Get Help" banner on stdout for every
    failed call unless ``suppress_debug_info`` is set: stdout belongs to the
    report (``patchgate run --format json``), so it is set here.
    """
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm as module  # seconds to import: only when a judge runs

    module.suppress_debug_info = True
    return module


async def _release() -> None:
    """Let litellm finish its logging tasks and close its cached HTTP clients on this loop.

    Each run has its own event loop (asyncio.run); clients cached by litellm
    would otherwise outlive the loop and leak their sockets.
    """
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
        from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout=5)
        await GLOBAL_LOGGING_WORKER.stop()
        await close_litellm_async_clients()  # type: ignore[no-untyped-call]
    except Exception:  # clean-up is best effort: a litellm internals change must not fail a run
        log.debug("litellm clean-up failed", exc_info=True)


# litellm keeps process-wide state bound to an event loop (a logging worker, cached
# clients); two runs on two threads' loops would close each other's clients. Runs in
# one process therefore take turns; criteria within a run are still concurrent.
_RUN_LOCK = threading.Lock()


def run(make: Callable[[], Awaitable[T]]) -> T:
    """Run one judging coroutine on a fresh event loop, then release litellm's per-loop state."""

    async def main() -> T:
        try:
            return await make()
        finally:
            await _release()

    with _RUN_LOCK:
        return asyncio.run(main())
