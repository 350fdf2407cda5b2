"""Declarative cases: YAML files of calls and expectations, judged outside the sandbox.

A case file (``*cases.yml``) in a suite directory::

    module: durations            # default module for every case
    timeout_s: 5                 # default per-case timeout (10 when absent)
    cases:
      - id: hours_and_minutes
        call: parse_duration("1h30m")
        equals: {__type__: timedelta, hours: 1, minutes: 30}
      - id: garbage
        call: parse_duration("garbage")
        raises: ValueError
      - id: ratio
        module: durations.maths
        call: ratio(1, 3)
        approx: 0.3333
        tolerance: 0.001

Only the id, module, call and timeout of each case enter the sandbox
(``runner_plan``); the expectation stays on the host, where ``judge``
compares the sandbox's plain-JSON result with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from checks.behaviour.errors import SuiteError, read_yaml
from checks.behaviour.grade import MISSING, TestOutcome
from checks.behaviour.incontainer.channel.values import ValueFormatError, approx_equal, decode, equal, show
from sandbox.pyparse import parse_python

CASE_FILE_SUFFIXES = ("cases.yml", "cases.yaml")
DEFAULT_CASE_TIMEOUT_S = 10.0
MAX_CASE_FILE_BYTES = 4 * 1024 * 1024
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TEXT_CHARS = 300
Expect = Literal["equals", "raises", "approx"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseModel(_Model):
    id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$", max_length=120)
    call: str = Field(min_length=1, max_length=10_000)
    module: str | None = None
    equals: Any = None
    raises: str | None = None
    approx: Any = None
    tolerance: float | None = Field(default=None, ge=0)
    timeout_s: float | None = Field(default=None, gt=0, le=600)

    @model_validator(mode="after")
    def _check(self) -> Self:
        given = [k for k in ("equals", "raises", "approx") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(f"give exactly one of equals, raises, approx (got {', '.join(given) or 'none'})")
        if self.tolerance is not None and given != ["approx"]:
            raise ValueError("tolerance goes with approx only")
        if "raises" in given and not (self.raises and _DOTTED.match(self.raises)):
            raise ValueError("raises names an exception type, e.g. ValueError or mypkg.errors.ParseError")
        if self.module is not None and not _DOTTED.match(self.module):
            raise ValueError(f"module {self.module!r} is not a dotted module name")
        try:
            parse_python(self.call, mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"call is not a Python expression: {exc.msg}") from None
        return self


class CaseFileModel(_Model):
    module: str | None = None
    timeout_s: float = Field(default=DEFAULT_CASE_TIMEOUT_S, gt=0, le=600)
    cases: list[CaseModel] = Field(min_length=1)


@dataclass(frozen=True)
class CaseSpec:
    """One case, ready to run (``id`` is ``<file>::<case id>``) and to judge."""

    id: str
    module: str
    call: str
    timeout_s: float
    expect: Expect
    value: object = None
    raises: str = ""
    tolerance: float | None = None


def is_case_file(name: str) -> bool:
    return name.endswith(CASE_FILE_SUFFIXES)


def load_case_file(path: Path, rel: str) -> tuple[CaseSpec, ...]:
    """Read one case file; raise SuiteError naming the file (and case) when it is invalid."""
    data = read_yaml(path, rel, MAX_CASE_FILE_BYTES)
    try:
        model = CaseFileModel.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = list(err["loc"])
            if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int) and isinstance(data, dict):
                raw = data["cases"][loc[1]]
                name = raw.get("id") if isinstance(raw, dict) else None
                loc[1] = f"{loc[1]} (id {name})" if name else loc[1]
            problems.append(f"{'.'.join(str(p) for p in loc) or 'file'}: {err['msg']}")
        raise SuiteError(f"{rel}: " + "; ".join(problems)) from None
    specs: list[CaseSpec] = []
    seen: set[str] = set()
    for case in model.cases:
        if case.id in seen:
            raise SuiteError(f"{rel}: case id {case.id!r} appears twice")
        seen.add(case.id)
        specs.append(_spec(case, model, rel))
    return tuple(specs)


def _spec(case: CaseModel, file: CaseFileModel, rel: str) -> CaseSpec:
    module = case.module or file.module
    if module is None:
        raise SuiteError(f"{rel}: case {case.id!r} names no module (set `module:` on the case or the file)")
    if module and not _DOTTED.match(module):
        raise SuiteError(f"{rel}: module {module!r} is not a dotted module name")
    timeout = case.timeout_s or file.timeout_s
    spec = CaseSpec(f"{rel}::{case.id}", module, case.call, timeout, "raises", raises=case.raises or "")
    if "raises" in case.model_fields_set:
        return spec
    expect: Expect = "equals" if "equals" in case.model_fields_set else "approx"
    raw = case.equals if expect == "equals" else case.approx
    try:
        value = decode(raw)
    except ValueFormatError as exc:
        raise SuiteError(f"{rel}: case {case.id!r}: {expect}: {exc}") from None
    if expect == "approx" and not approx_equal(value, value, 0.0):
        raise SuiteError(f"{rel}: case {case.id!r}: approx takes a number, a timedelta or a list of numbers")
    return replace(spec, expect=expect, value=value, raises="", tolerance=case.tolerance)


def runner_plan(cases: tuple[CaseSpec, ...]) -> dict[str, Any]:
    """Return what the in-sandbox runner needs: no expectation is ever part of it."""
    return {
        "cases": [{"id": c.id, "module": c.module, "call": c.call, "timeout_s": c.timeout_s} for c in cases]
    }


def _text(value: object) -> str:
    """A sandbox-supplied string, made safe to show: printable and short."""
    text = value if isinstance(value, str) else ""
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if len(text) <= _TEXT_CHARS else text[: _TEXT_CHARS - 1] + "…"


def _raised(record: Mapping[str, object]) -> tuple[list[str], str]:
    exc = record.get("exception")
    if not isinstance(exc, dict):
        return [], "an exception"
    mro = [m for m in exc.get("mro", []) if isinstance(m, str)] if isinstance(exc.get("mro"), list) else []
    message = _text(exc.get("message"))
    return mro, f"{_text(exc.get('type'))}: {message}" if message else _text(exc.get("type"))


def judge(case: CaseSpec, record: Mapping[str, object] | None) -> TestOutcome:
    """Compare the sandbox's record of one case with its expectation, on the host."""
    if record is None:
        return MISSING
    status = record.get("status")
    if status == "timeout":
        return TestOutcome("timeout", f"no result within {case.timeout_s:g}s", timed_out=True)
    if status == "crashed":
        return TestOutcome("error", _text(record.get("detail")) or "the case crashed")
    if status == "import_error":
        return TestOutcome("error", f"cannot import {case.module}: {_raised(record)[1]}")
    if status == "unserializable":
        return TestOutcome("failed", f"the result cannot be compared: {_text(record.get('detail'))}")
    if status == "raised":
        mro, what = _raised(record)
        if case.expect == "raises" and case.raises in mro:
            return TestOutcome("passed")
        expected = f"expected {case.raises}, " if case.expect == "raises" else ""
        return TestOutcome("failed", f"{expected}raised {what}")
    if status != "returned" or "value" not in record:
        return TestOutcome("error", "the runner wrote a malformed record")
    try:
        actual = decode(record["value"])
    except ValueFormatError as exc:
        return TestOutcome("error", f"the runner wrote a malformed value: {exc}")
    if case.expect == "raises":
        return TestOutcome("failed", f"expected {case.raises} to be raised, got {show(actual)}")
    if case.expect == "equals":
        ok = equal(case.value, actual)
    else:
        ok = approx_equal(case.value, actual, case.tolerance)
    if ok:
        return TestOutcome("passed")
    return TestOutcome("failed", _text(f"expected {show(case.value)}, got {show(actual)}"))
