"""A differential check's trusted side: the reference, the strategies of its inputs, its input generator.

Everything here runs in the grader. The reference is a function of the suite
(``/grader/suite``, never readable by the subject) or, for a refactor, the
base tree's own function (``/grader/base``: base is trusted). Its observations
are made as the subject makes the change's (``subject/calls.py``): the
arguments decoded from the same encoding, the result encoded by the same
codec, so both sides see and give values of the same types.

Inputs come from Hypothesis strategies: by default ``st.from_type`` of the
reference's annotations (never the change's: it could narrow them), or an
expression the suite writes per parameter, evaluated with ``st`` and the
names of the reference's module in scope.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import random
import signal
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ..channel import codec

# The largest inputs an efficiency check may hand over (the wire's own cap still holds).
MAX_INPUT_NODES = 4_000_000


class SuiteProblem(Exception):
    """The suite cannot run as written (its reference, a strategy, a generator): never the change's fault."""


class ReferenceTimeout(BaseException):
    """The reference did not return in time (a BaseException: the reference's own handlers miss it)."""


@dataclass(frozen=True)
class Reference:
    """A reference function and how to call it: which parameters go by position, which by name."""

    function: Callable[..., Any]
    module: Any
    positional: tuple[str, ...]
    keyword: tuple[str, ...]


def load(spec: dict[str, Any], roots: dict[str, str]) -> Reference:
    """Import the reference ``spec`` names (``{"source": "suite"|"base", "module", "function"}``)."""
    source, module_name, name = str(spec.get("source")), str(spec.get("module")), str(spec.get("function"))
    root = roots.get(source)
    if root is None:
        raise SuiteProblem(f"no {source} to take the reference from")
    if root not in sys.path:
        # The suite's modules first (it owns its names), base's last (the grader's tools keep theirs),
        # with its src/ layout if it has one.
        if source == "suite":
            sys.path.insert(0, root)
        else:
            sys.path += [p for p in (root, os.path.join(root, "src")) if os.path.isdir(p)]
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # the suite's own module: whatever it raises is the suite's problem
        why = codec.first_line(exc) or type(exc).__name__
        raise SuiteProblem(f"the reference module {module_name} does not import: {why}") from None
    where = str(getattr(module, "__file__", "") or "")
    if not where.startswith(root + "/"):
        raise SuiteProblem(f"{module_name} is not the {source}'s own module (it is {where or 'built in'})")
    function = getattr(module, name, None)
    if not callable(function):
        raise SuiteProblem(f"{module_name} has no function {name}")
    return Reference(function, module, *_parameters(function, f"{module_name}.{name}"))


def _parameters(function: Callable[..., Any], name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    positional: list[str] = []
    keyword: list[str] = []
    for p in inspect.signature(function).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise SuiteProblem(f"{name} takes *args or **kwargs: name every parameter")
        if p.kind == p.KEYWORD_ONLY or keyword:
            keyword.append(p.name)
        else:
            positional.append(p.name)
    return tuple(positional), tuple(keyword)


def arguments(
    ref: Reference, written: dict[str, str]
) -> st.SearchStrategy[tuple[tuple[Any, ...], dict[str, Any]]]:
    """The strategy of one call's arguments: positional ones by position, the rest by name.

    A parameter with a default and no strategy of the suite's is left to its default; the ones
    after it then go by name, as the change must accept them.
    """
    try:
        hints = typing.get_type_hints(ref.function)
    except Exception:  # a forward reference that does not resolve: the annotation as written
        hints = dict(getattr(ref.function, "__annotations__", {}))
    unknown = sorted(set(written) - {*ref.positional, *ref.keyword})
    if unknown:  # checked on the host against a suite's reference; base's is read here first
        raise SuiteProblem(f"strategies for {', '.join(unknown)}, which the reference does not take")
    namespace = {**vars(ref.module), "st": st}
    parameters = inspect.signature(ref.function).parameters
    positional: list[st.SearchStrategy[Any]] = []
    keyword: dict[str, st.SearchStrategy[Any]] = {}
    by_name = False
    for name in (*ref.positional, *ref.keyword):
        strategy = _strategy(name, written, hints, parameters[name], namespace)
        if strategy is None:
            by_name = True
        elif by_name or name in ref.keyword:
            keyword[name] = strategy
        else:
            positional.append(strategy)
    return st.tuples(st.tuples(*positional), st.fixed_dictionaries(keyword))


def _strategy(
    name: str,
    written: dict[str, str],
    hints: dict[str, Any],
    parameter: inspect.Parameter,
    namespace: dict[str, Any],
) -> st.SearchStrategy[Any] | None:
    if name in written:
        try:
            found = eval(written[name], namespace)  # noqa: S307 - the suite's own expression, in the grader
        except Exception as exc:
            raise SuiteProblem(
                f"the strategy for {name!r} does not evaluate: {codec.first_line(exc)}"
            ) from None
        if not isinstance(found, st.SearchStrategy):
            raise SuiteProblem(f"the strategy for {name!r} is not a Hypothesis strategy")
        return found
    if parameter.default is not parameter.empty:
        return None
    if name not in hints:
        raise SuiteProblem(f"parameter {name!r} has no annotation and no strategy: write one in the suite")
    try:
        return st.from_type(hints[name])
    except Exception as exc:
        raise SuiteProblem(f"no strategy for {name!r} from its annotation: {codec.first_line(exc)}") from None


def generator(spec: dict[str, Any], roots: dict[str, str]) -> Callable[[int, random.Random], Any]:
    """The suite's input generator of an efficiency check: ``(n, rng) -> tuple of arguments``."""
    loaded = load({**spec, "source": "suite"}, roots)
    return loaded.function


def encode_input(value: object, what: str) -> Any:
    """Encode arguments for the subject; a value that cannot cross by value is the suite's problem."""
    encoder = codec.Encoder()
    encoder.max_nodes = MAX_INPUT_NODES
    try:
        return encoder(value)
    except codec.Unserializable as exc:
        raise SuiteProblem(f"{what} cannot be handed over by value: {exc}") from None


def _alarm(signum: int, frame: object) -> None:
    raise ReferenceTimeout


def observe(ref: Reference, args: Any, kwargs: Any, timeout_s: float) -> dict[str, Any]:
    """Call the reference on decoded copies of the encoded arguments and encode what it did.

    The arguments go through the wire's text as the subject's do, so both sides pay the same
    decoding and encoding work (an efficiency check times this whole function).
    Raises SuiteProblem when the reference does not return within ``timeout_s`` or returns
    what has no encoding: the suite must fix it.
    """
    payload = json.loads(json.dumps([args, kwargs]))
    decoded_args, decoded_kwargs = codec.decode(payload[0]), codec.decode(payload[1])
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        value = ref.function(*decoded_args, **decoded_kwargs)
        observation: dict[str, Any] = {"status": "returned", "value": _encode_result(value)}
    except ReferenceTimeout:
        raise SuiteProblem(f"the reference did not return within {timeout_s:g}s") from None
    except codec.Unserializable as exc:
        raise SuiteProblem(f"the reference's result cannot be compared: {exc}") from None
    except BaseException as exc:  # what the reference raises is its answer, SystemExit too
        observation = {"status": "raised", "exception": codec.describe(exc)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return observation


def _encode_result(value: object) -> Any:
    encoder = codec.Encoder()
    encoder.max_nodes = MAX_INPUT_NODES
    return encoder(value)
