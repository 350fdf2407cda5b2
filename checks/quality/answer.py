"""The judge's answers: JSON Schemas sent as `response_format`, and pydantic models that validate replies.

Model output is hostile input: it is parsed here and nowhere else, sizes are
capped, and anything that does not validate is an `AnswerError` (which earns
one repair request, then makes the criterion `error`).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

# Possessive before the body, so linear: ``[a-zA-Z]*\s*\n?(.*?)`` gave a run of whitespace back one
# character at a time and rescanned the rest from each (quadratic: 37 s for ```` ``` ```` and 64k
# spaces). Giving any back can never help: no closing fence starts inside whitespace or letters.
_FENCE = re.compile(r"^\s*+```[a-zA-Z]*+\s*+(.*?)\n?```\s*$", re.DOTALL)


class AnswerError(Exception):
    """The reply is empty, a refusal, not JSON, or not the JSON asked for; the message says which."""


def _upper(value: Any) -> Any:
    # Models write "pass", " PASS " or "n/a"; the meaning is unambiguous.
    return value.strip().upper() if isinstance(value, str) else value


Verdict = Annotated[Literal["PASS", "FAIL", "N/A"], BeforeValidator(_upper)]
TaskVerdict = Annotated[Literal["PASS", "FAIL"], BeforeValidator(_upper)]
Preference = Annotated[Literal["FIRST", "SECOND", "TIE"], BeforeValidator(_upper)]


class Answer(BaseModel):
    # Extra keys are ignored, not trusted: a reply may add "confidence" or similar.
    model_config = ConfigDict(extra="ignore", frozen=True)


class CitationAnswer(Answer):
    path: str = Field(min_length=1, max_length=500)
    start_line: int = Field(ge=1, le=10_000_000)
    end_line: int = Field(ge=1, le=10_000_000)
    quote: str = Field(min_length=1, max_length=4000)

    @model_validator(mode="after")
    def _ordered(self) -> CitationAnswer:
        if self.end_line < self.start_line:
            raise ValueError("end_line is before start_line")
        return self


class CriterionAnswer(Answer):
    verdict: Verdict
    reason: str = Field(default="", max_length=4000)
    evidence: list[CitationAnswer] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _cited(self) -> CriterionAnswer:
        if self.verdict != "N/A" and not self.evidence:
            raise ValueError("a PASS or FAIL verdict must cite at least one piece of evidence")
        return self


class ShadowAnswer(Answer):
    verdict: TaskVerdict
    reason: str = Field(default="", max_length=4000)


class PairAnswer(Answer):
    preferred: Preference
    reason: str = Field(default="", max_length=4000)


def _strict(properties: dict[str, Any]) -> dict[str, Any]:
    # OpenAI's strict structured output wants every property required and no extras.
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_CITATION_SCHEMA = _strict(
    {
        "path": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "quote": {"type": "string"},
    }
)
SCHEMAS: dict[type[Answer], tuple[str, dict[str, Any]]] = {
    CriterionAnswer: (
        "criterion_verdict",
        _strict(
            {
                "verdict": {"type": "string", "enum": ["PASS", "FAIL", "N/A"]},
                "reason": {"type": "string"},
                "evidence": {"type": "array", "items": _CITATION_SCHEMA},
            }
        ),
    ),
    ShadowAnswer: (
        "task_verdict",
        _strict({"verdict": {"type": "string", "enum": ["PASS", "FAIL"]}, "reason": {"type": "string"}}),
    ),
    PairAnswer: (
        "pairwise_preference",
        _strict(
            {
                "preferred": {"type": "string", "enum": ["FIRST", "SECOND", "TIE"]},
                "reason": {"type": "string"},
            }
        ),
    ),
}

A = TypeVar("A", bound=Answer)


def response_format(kind: type[Answer]) -> dict[str, Any]:
    """Return the `response_format` argument that asks for ``kind`` as strict JSON."""
    name, schema = SCHEMAS[kind]
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _json_object(text: str) -> Any:
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        # Some models wrap the object in prose; take the outermost braces once.
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                pass
        raise AnswerError(f"not JSON ({first.msg} at char {first.pos})") from first


def parse_answer(content: str | None, kind: type[A], *, refusal: str | None = None) -> A:
    """Validate one reply as ``kind``, or raise AnswerError saying what was wrong with it."""
    if refusal:
        raise AnswerError(f"refusal: {refusal.strip()[:200]}")
    if content is None or not content.strip():
        raise AnswerError("empty output")
    data = _json_object(content.strip())
    if not isinstance(data, dict):
        raise AnswerError(f"not a JSON object (got {type(data).__name__})")
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise AnswerError(f"does not match the schema: {problems}") from exc
