"""Details-page tokens: per run, expiring, rotatable without the webhook secret."""

from __future__ import annotations

import pytest

from bot.service.runtokens import RunTokens, run_tokens
from bot.settings import Settings

NOW = 1_800_000_000.0


def tokens(**settings: object) -> RunTokens:
    return run_tokens(Settings(webhook_secret="hook", **settings))  # type: ignore[arg-type]


def test_a_token_opens_its_own_run_until_it_expires() -> None:
    t = tokens(run_token_ttl_s=60)
    token = t.issue(7, now=NOW)
    assert t.check(token, 7, now=NOW + 59) == "ok"
    assert t.check(token, 7, now=NOW + 61) == "expired"
    assert t.check(token, 8, now=NOW) == "bad"


@pytest.mark.parametrize(
    "token", ["", "0" * 32, "abc.def", f"{int(NOW) + 10**9}.{'0' * 32}", "1" * 13 + "." + "0" * 32]
)
def test_malformed_or_forged_tokens_are_bad(token: str) -> None:
    assert tokens().check(token, 7, now=NOW) == "bad"


def test_a_later_expiry_cannot_be_forged_onto_a_real_mac() -> None:
    t = tokens()
    expiry, mac = t.issue(7, now=NOW).split(".")
    assert t.check(f"{int(expiry) + 10**6}.{mac}", 7, now=NOW) == "bad"


def test_rotating_the_run_token_key_keeps_the_webhook_secret_and_drops_old_links() -> None:
    before = tokens(run_token_key="first")
    link = before.issue(7, now=NOW)
    # During a rotation the previous key still opens what it issued ...
    during = tokens(run_token_key="second", run_token_previous_key="first")
    assert during.check(link, 7, now=NOW) == "ok"
    assert during.check(during.issue(7, now=NOW), 7, now=NOW) == "ok"
    # ... and once it is dropped, its links are dead; the webhook secret never changed.
    after = tokens(run_token_key="second")
    assert after.check(link, 7, now=NOW) == "bad"


def test_without_a_key_of_its_own_the_token_derives_from_the_webhook_secret() -> None:
    link = tokens().issue(7, now=NOW)
    assert tokens().check(link, 7, now=NOW) == "ok"
    assert run_tokens(Settings(webhook_secret="other")).check(link, 7, now=NOW) == "bad"  # type: ignore[arg-type]


def test_a_repository_pages_token_opens_that_page_only() -> None:
    from bot.service.runtokens import RunTokens, repository_subject

    tokens = RunTokens((b"k" * 32,), 3600)
    token = tokens.issue(repository_subject("octo/repo"))
    assert tokens.check(token, repository_subject("octo/repo")) == "ok"
    assert tokens.check(token, repository_subject("octo/other")) == "bad"
    # Neither kind opens the other: a job's token is no repository's, and the reverse.
    assert tokens.check(tokens.issue(7), repository_subject("octo/repo")) == "bad"
    assert tokens.check(token, 7) == "bad"


def test_a_token_handed_out_from_a_page_never_outlives_the_pages_own() -> None:
    from bot.service.runtokens import RunTokens, expiry_of, repository_subject

    tokens = RunTokens((b"k" * 32,), 90 * 86400)
    page = tokens.issue(7, now=1000.0)
    handed = tokens.issue(repository_subject("octo/repo"), now=5000.0, until=expiry_of(page))
    assert expiry_of(handed) == expiry_of(page)
    assert tokens.check(handed, repository_subject("octo/repo"), now=expiry_of(page) + 1) == "expired"
    # A later expiry than the ttl's is never given.
    assert expiry_of(tokens.issue(7, now=1000.0, until=10**12)) == 1000 + 90 * 86400
