from __future__ import annotations

import json

import jsonschema
import pytest

from checks.quality.answer import (
    SCHEMAS,
    Answer,
    AnswerError,
    CriterionAnswer,
    PairAnswer,
    ShadowAnswer,
    parse_answer,
    response_format,
)

CITED = {"path": "a.py", "start_line": 2, "end_line": 3, "quote": "x = 1"}


@pytest.mark.parametrize(
    ("content", "verdict"),
    [
        (json.dumps({"verdict": "PASS", "reason": "ok", "evidence": [CITED]}), "PASS"),
        (json.dumps({"verdict": " fail ", "reason": "bad", "evidence": [CITED]}), "FAIL"),
        (json.dumps({"verdict": "n/a", "reason": "no code"}), "N/A"),
        ("```json\n" + json.dumps({"verdict": "N/A", "reason": "", "evidence": []}) + "\n```", "N/A"),
        ("  ```JSON \n\n" + json.dumps({"verdict": "N/A", "reason": ""}) + "\n\n```  ", "N/A"),
        ("```" + json.dumps({"verdict": "N/A", "reason": ""}) + "```", "N/A"),
        ("Here you go: " + json.dumps({"verdict": "PASS", "evidence": [CITED]}) + " Hope it helps.", "PASS"),
        (json.dumps({"verdict": "PASS", "evidence": [CITED], "confidence": 0.9}), "PASS"),
    ],
)
def test_valid_replies(content: str, verdict: str) -> None:
    assert parse_answer(content, CriterionAnswer).verdict == verdict


@pytest.mark.parametrize(
    ("content", "refusal", "message"),
    [
        (None, None, "empty output"),
        ("   \n", None, "empty output"),
        (None, "I can't help with that.", "refusal: I can't help with that."),
        ("PASS, looks good", None, "not JSON"),
        ('{"verdict": "PASS", "reason": "trunc', None, "not JSON"),
        ("[1, 2]", None, "not a JSON object"),
        (json.dumps({"verdict": "PASS", "reason": "no evidence"}), None, "must cite at least one"),
        (json.dumps({"verdict": "MAYBE", "evidence": []}), None, "verdict"),
        (json.dumps({"verdict": "FAIL", "evidence": [{**CITED, "start_line": 5}]}), None, "end_line is"),
        (json.dumps({"verdict": "FAIL", "evidence": [{**CITED, "start_line": 0}]}), None, "start_line"),
        (json.dumps({"verdict": "FAIL", "evidence": [{**CITED, "quote": ""}]}), None, "quote"),
        (json.dumps({"verdict": "FAIL", "evidence": [CITED] * 21}), None, "evidence"),
    ],
)
def test_unusable_replies_say_why(content: str | None, refusal: str | None, message: str) -> None:
    with pytest.raises(AnswerError) as caught:
        parse_answer(content, CriterionAnswer, refusal=refusal)
    assert message in str(caught.value)


def test_a_fence_with_a_megabyte_of_whitespace_is_read_in_linear_time() -> None:
    # The old fence pattern gave the whitespace back one character at a time, rescanning the rest
    # from each (37 s for 64k spaces, hours for this); now milliseconds. A regression hangs here
    # until the suite's timeout.
    with pytest.raises(AnswerError, match="not JSON"):
        parse_answer("```json" + " " * 1_000_000 + "x", CriterionAnswer)
    reply = "```json" + " \n" * 500_000 + json.dumps({"verdict": "N/A", "reason": ""}) + "\n```"
    assert parse_answer(reply, CriterionAnswer).verdict == "N/A"


def test_other_answer_kinds() -> None:
    assert parse_answer('{"verdict": "fail", "reason": "r"}', ShadowAnswer).verdict == "FAIL"
    with pytest.raises(AnswerError):
        parse_answer('{"verdict": "N/A"}', ShadowAnswer)
    assert parse_answer('{"preferred": "second", "reason": ""}', PairAnswer).preferred == "SECOND"


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_response_format_is_strict_and_matches_the_model(kind: type[Answer]) -> None:
    fmt = response_format(kind)
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])
    examples: dict[type[Answer], dict[str, object]] = {
        CriterionAnswer: {"verdict": "FAIL", "reason": "r", "evidence": [CITED]},
        ShadowAnswer: {"verdict": "PASS", "reason": "r"},
        PairAnswer: {"preferred": "TIE", "reason": "r"},
    }
    example = examples[kind]
    jsonschema.validate(example, schema)
    assert parse_answer(json.dumps(example), kind)
