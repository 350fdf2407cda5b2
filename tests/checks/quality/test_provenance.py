from __future__ import annotations

import pytest

from checks.quality.provenance import co_authors, commit_signals, model_family, self_preference


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("openai/gpt-4o-mini", "OpenAI"),
        ("gpt-4.1", "OpenAI"),
        ("openai/o3-mini", "OpenAI"),
        ("azure/gpt-4o", "OpenAI"),
        ("anthropic/claude-sonnet-4-5", "Anthropic"),
        ("vertex_ai/claude-3-5-sonnet", "Anthropic"),  # the name wins over the provider
        ("bedrock/anthropic.claude-3-haiku", "Anthropic"),
        ("gemini/gemini-2.5-pro", "Google"),
        ("ollama/llama3.1", "Meta"),
        ("openai/qwen2.5-coder", "Qwen"),
        ("deepseek/deepseek-coder", "DeepSeek"),
        ("anthropic/some-new-name", "Anthropic"),  # a first-party provider says the family
        ("openai/judge-under-test", None),  # `openai/` is any OpenAI-compatible endpoint
        ("hosted_vllm/my-model", None),
    ],
)
def test_model_family(model: str, family: str | None) -> None:
    assert model_family(model) == family


MESSAGE = """\
Add sub()

Implements the issue.

Co-authored-by: Claude <noreply@anthropic.com>
co-authored-by:   aider (openai/gpt-4o) <noreply@aider.chat>
Signed-off-by: Someone <s@example.com>
"""


def test_trailers_are_read_from_commit_messages() -> None:
    assert co_authors(MESSAGE) == [
        "Claude <noreply@anthropic.com>",
        "aider (openai/gpt-4o) <noreply@aider.chat>",
    ]
    assert commit_signals("Dev <dev@example.com>", MESSAGE)[0] == "Dev <dev@example.com>"
    assert commit_signals("", "no trailers") == []


def test_trailers_past_blank_lines_and_padding_read_as_before() -> None:
    # What the old pattern (r"^\s*co-authored-by:\s*(.+?)\s*$", multiline) read, a value on the
    # next line (after an empty one) included.
    message = (
        "Fix\n\n \n\t Co-Authored-By:  Claude <c@a.com>  \r\nco-authored-by:\n  aider <a@b>\t\n"
        "not co-authored-by: x\nCo-authored-by: last  "
    )
    assert co_authors(message) == ["Claude <c@a.com>", "aider <a@b>", "last"]


def test_trailers_are_read_in_linear_time() -> None:
    # Each of these took the old pattern about an hour (quadratic in a run of whitespace: 15 s for
    # 64k newlines); now milliseconds. A regression hangs here until the suite's timeout.
    assert co_authors("\n" * 1_000_000 + "x") == []
    assert co_authors("\n" * 1_000_000 + "Co-authored-by: a") == ["a"]
    assert co_authors("Co-authored-by: a" + " " * 1_000_000 + "b") == [("a" + " " * 1_000_000)[:200]]


@pytest.mark.parametrize(
    ("signals", "model", "note"),
    [
        (["claude[bot]"], "anthropic/claude-sonnet-4-5", "both Anthropic (claude[bot])"),
        (["Claude <noreply@anthropic.com>"], "vertex_ai/claude-3-5-sonnet", "both Anthropic"),
        (["chatgpt-codex-connector[bot]"], "openai/gpt-4o-mini", "OpenAI (chatgpt-codex-connector[bot])"),
        (["google-labs-jules[bot]"], "gemini/gemini-2.5-pro", "both Google"),
        (["aider (openai/gpt-4o) <noreply@aider.chat>"], "openai/gpt-4.1", "both OpenAI"),
        (["claude[bot]"], "openai/gpt-4o-mini", ""),  # different families
        (["copilot-swe-agent[bot]"], "openai/gpt-4o-mini", ""),  # Copilot's model varies: no guess
        (["devin-ai-integration[bot]"], "anthropic/claude-sonnet-4-5", ""),
        (["claude[bot]"], "openai/judge-under-test", ""),  # the judge's family is unknown
        ([], "anthropic/claude-sonnet-4-5", ""),
        (["octocat"], "anthropic/claude-sonnet-4-5", ""),
    ],
)
def test_self_preference_note(signals: list[str], model: str, note: str) -> None:
    got = self_preference(signals, model)
    assert (note in got) if note else got == ""
    if note:
        assert got.startswith("self-preference possible")


def test_the_note_names_at_most_two_signals() -> None:
    signals = ["claude[bot]", "Claude <noreply@anthropic.com>", "claude[bot]", "Bot <a@anthropic.com>"]
    note = self_preference(signals, "anthropic/claude-opus-4")
    assert note.endswith("(claude[bot], Claude <noreply@anthropic.com> and 1 more)")
