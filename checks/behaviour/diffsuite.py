"""Differential suites: ``*.diff.yml`` files naming a function of the repository and its reference.

A differential file in a suite directory::

    functions:
      - function: durations.parse_duration      # the repository's function (module.name)
        reference: ref.parse_duration           # a function of the suite's own module ref.py, or
                                                # "base": base's own function of that name
        examples: 2000                          # optional: at most the policy's budget
        strategies:                             # optional, per parameter: a Hypothesis strategy
          text: st.text(alphabet="0123456789dhms x", max_size=12)
        efficiency:                             # optional: growth against the reference
          sizes: [1e4, 3e4, 1e5]
          input: ref.long_duration              # (n, rng) -> a tuple of positional arguments

The reference lives in the suite, never in the repository: it runs in the
grader, the repository's function in the subject (``incontainer/grader/
differential.py``). ``reference: base`` takes base's own function of the same
name instead (base is trusted: its tree is the grader's private copy, as for
a refactor, ``refactor.py``) - an efficiency check against base, on the
suite's inputs, needs no reference written; its inputs are drawn from base's
annotations, and strategies are checked against base's signature when the
grader loads it. Inputs are drawn from the reference's annotations by
default (``st.from_type``); a strategy written here replaces one parameter's.
Strategy expressions see ``st`` (``hypothesis.strategies``) and the names of
the reference's module. Everything that can be checked without running is
checked here, against the reference module's source: a problem names the
file, and is the suite's (a gate configuration problem), never the change's.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from checks.behaviour.errors import SuiteError, read_yaml
from sandbox.pyparse import parse_python

DIFF_FILE_SUFFIXES = (".diff.yml", ".diff.yaml")
MAX_DIFF_FILE_BYTES = 1024 * 1024
MAX_SIZE = 10**8
# ``reference: base``: base's own function of the same name is the reference.
BASE_REFERENCE = "base"
_QUALIFIED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _qualified(value: str) -> str:
    if not _QUALIFIED.match(value):
        raise ValueError(f"{value!r} is not module.function")
    return value


class EfficiencyModel(_Model):
    sizes: list[float] = Field(min_length=2, max_length=8)
    input: str
    repetitions: int | None = Field(default=None, ge=1, le=50)

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, sizes: list[float]) -> list[float]:
        if any(s != int(s) or not 1 <= s <= MAX_SIZE for s in sizes):
            raise ValueError(f"sizes are whole numbers from 1 to {MAX_SIZE:.0e}")
        if len(set(sizes)) != len(sizes):
            raise ValueError("sizes must differ")
        return sorted(sizes)

    @field_validator("input")
    @classmethod
    def _input(cls, value: str) -> str:
        return _qualified(value)


class FunctionModel(_Model):
    function: str
    reference: str
    examples: int | None = Field(default=None, ge=1, le=100_000)
    strategies: dict[str, str] = Field(default_factory=dict)
    efficiency: EfficiencyModel | None = None

    @field_validator("function")
    @classmethod
    def _function(cls, value: str) -> str:
        return _qualified(value)

    @field_validator("reference")
    @classmethod
    def _reference(cls, value: str) -> str:
        return value if value == BASE_REFERENCE else _qualified(value)

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name, expression in self.strategies.items():
            if not name.isidentifier():
                raise ValueError(f"strategies: {name!r} is not a parameter name")
            try:
                parse_python(expression, mode="eval")
            except SyntaxError as exc:
                raise ValueError(f"strategies.{name}: not a Python expression: {exc.msg}") from None
        return self


class DiffFileModel(_Model):
    functions: list[FunctionModel] = Field(min_length=1)


@dataclass(frozen=True)
class Efficiency:
    """An efficiency check: the sizes, the suite's input generator, how many repetitions (None: policy's)."""

    sizes: tuple[int, ...]
    input: str
    repetitions: int | None = None


@dataclass(frozen=True)
class DiffSpec:
    """One function of the repository checked against a reference (``id`` is ``<file>::<function>``)."""

    id: str
    function: str
    reference: str
    strategies: tuple[tuple[str, str], ...] = ()
    examples: int | None = None
    efficiency: Efficiency | None = None
    # "suite": the reference is a function of the suite; "base": the base tree's own (a refactor).
    source: str = "suite"

    @property
    def module(self) -> str:
        return self.function.rpartition(".")[0]

    @property
    def name(self) -> str:
        return self.function.rpartition(".")[2]


def is_diff_file(name: str) -> bool:
    return name.endswith(DIFF_FILE_SUFFIXES)


def load_diff_file(path: Path, rel: str, root: Path) -> tuple[DiffSpec, ...]:
    """Read one differential file; raise SuiteError naming the file (and function) when it is invalid."""
    data = read_yaml(path, rel, MAX_DIFF_FILE_BYTES)
    try:
        model = DiffFileModel.model_validate(data)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors()]
        raise SuiteError(f"{rel}: " + "; ".join(problems)) from None
    specs: list[DiffSpec] = []
    for fn in model.functions:
        spec_id = f"{rel}::{fn.function}"
        if any(s.id == spec_id for s in specs):
            raise SuiteError(f"{rel}: function {fn.function} appears twice")
        where = f"{rel}: {fn.function}"
        from_base = fn.reference == BASE_REFERENCE
        if not from_base:  # base's signature is read by the grader, from base's tree
            _check_strategies(_signature(root, fn.reference, where), dict(fn.strategies), where)
        efficiency = None
        if fn.efficiency is not None:
            generator = _signature(root, fn.efficiency.input, f"{where}: efficiency.input")
            if len(generator) != 2:
                raise SuiteError(f"{where}: efficiency.input {fn.efficiency.input} must take (n, rng)")
            efficiency = Efficiency(
                tuple(int(s) for s in fn.efficiency.sizes), fn.efficiency.input, fn.efficiency.repetitions
            )
        specs.append(
            DiffSpec(
                spec_id,
                fn.function,
                fn.function if from_base else fn.reference,
                tuple(sorted(fn.strategies.items())),
                fn.examples,
                efficiency,
                source="base" if from_base else "suite",
            )
        )
    return tuple(specs)


# (name, has a default, has an annotation) of each parameter.
Parameters = list[tuple[str, bool, bool]]


def _signature(root: Path, qualified: str, where: str) -> Parameters:
    """The parameters of the suite's function ``module.name``, read from its source (never run here)."""
    module, _, name = qualified.rpartition(".")
    parts = module.split(".")
    candidates = [root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")]
    source = next((p for p in candidates if p.is_file()), None)
    if source is None:
        raise SuiteError(f"{where}: the suite has no module {module} (expected {parts[-1]}.py in the suite)")
    try:
        tree = parse_python(source.read_bytes())
    except (SyntaxError, ValueError) as exc:
        raise SuiteError(f"{where}: {source.relative_to(root)} does not parse: {exc}") from None
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if found is None:
        raise SuiteError(f"{where}: {module} defines no function {name} at its top level")
    args = found.args
    if args.vararg or args.kwarg:
        raise SuiteError(f"{where}: {qualified} takes *args or **kwargs: name every parameter")
    ordered = [*args.posonlyargs, *args.args]
    defaults = [False] * (len(ordered) - len(args.defaults)) + [True] * len(args.defaults)
    params = [(a.arg, d, a.annotation is not None) for a, d in zip(ordered, defaults, strict=True)]
    params += [
        (a.arg, d is not None, a.annotation is not None)
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return params


def _check_strategies(parameters: Parameters, strategies: dict[str, str], where: str) -> None:
    names = [p[0] for p in parameters]
    unknown = sorted(set(strategies) - set(names))
    if unknown:
        raise SuiteError(f"{where}: strategies for {', '.join(unknown)}, which the reference does not take")
    bare = [
        name for name, default, annotated in parameters if not (default or annotated or name in strategies)
    ]
    if bare:
        raise SuiteError(f"{where}: parameter {', '.join(bare)} has no annotation and no strategy: write one")
