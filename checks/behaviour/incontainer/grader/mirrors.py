"""Exceptions across the two domains, on the grader's side.

The change's exception classes become local classes, one per remote class
(``pytest.raises(mod.ParseError)`` catches them; a standard-library class
is the grader's own, as a built-in is); what the subject raises is rebuilt
as an instance of that class, with the subject's arguments and text. A
test's own exception classes are described for the subject, which makes a
class of its own for each (so the change's ``except (Fiz, Buzz)`` catches
what a test's callback raises), and a test's exception that comes back is
the test's own object again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ..channel import byname, codec
from .aliases import Aliases
from .errors import SubjectGone, SubjectTimeout
from .handed import Handed

_FIXED_TEXT: dict[type[BaseException], type[BaseException]] = {}


# How many links of a cause chain the subject may describe (it sends four).
MAX_CAUSES = 4


class Mirrors:
    """The subject's exception classes as ours, by the subject's number, and the exceptions it raises."""

    def __init__(self, decode: Callable[[Any], Any], handed: Handed) -> None:
        self.decode = decode
        self.handed = handed
        self.by_number: dict[int, type[BaseException]] = {}

    def mirror(self, number: int, tag: dict[str, Any]) -> type[BaseException]:
        """Return the local class standing for the subject's exception class ``number`` (one per class)."""
        found = self.by_number.get(number)
        if found is not None:
            return found
        own = _stdlib_exception(tag.get("stdlib"))
        if own is not None:  # json.JSONDecodeError is the grader's own, as ValueError is
            self.by_number[number] = own
            return own
        bases = tuple(b for b in (self.decode(x) for x in tag.get("bases") or []) if _is_exception_class(b))
        namespace = {
            "__module__": str(tag.get("module") or "?"),
            "__qualname__": str(tag.get("qualname") or tag.get("name")),
            "__str__": _mirrored_str,
            "__getattr__": _mirrored_getattr,
        }
        name = str(tag.get("name") or "RemoteError")
        try:
            cls = type(name, bases or (Exception,), namespace)
        except TypeError:  # bases whose layouts conflict: keep the first
            cls = type(name, bases[:1] or (Exception,), namespace)
        self.by_number[number] = cls
        MIRROR_IDS[cls] = number
        return cls

    def exception(self, info: Any, chained: int = 0) -> BaseException:
        """Build the exception the subject raised, as the grader's own object (its cause a few deep)."""
        if not isinstance(info, dict):
            return SubjectGone("the subject described an exception it raised in a form we do not read")
        # Decoded whatever comes next: each handle the subject sends is accounted for when it is dropped.
        handle = None
        if isinstance(info.get("obj"), dict):
            with contextlib.suppress(ValueError, LookupError):
                handle = self.decode(info["obj"])
        gref = info.get("gref")
        mine = self.handed.by_number.get(gref) if type(gref) is int else None
        if isinstance(mine, BaseException):
            return mine
        text = self.handed.aliases.restore(str(info.get("text", "")))
        if info.get("timeout"):
            return SubjectTimeout(f"Timeout: the code under test did not return in time ({text})")
        cls = self.decode(info.get("cls"))
        try:
            args = self.decode(info.get("args"))
        except ValueError:
            args = None
        args = tuple(args) if isinstance(args, (tuple, list)) else (text,)
        if not _is_exception_class(cls):
            return SubjectGone(f"the subject raised something that is not an exception: {text}")
        ours = issubclass(cls, (Exception, SystemExit)) or cls in MIRROR_IDS
        if issubclass(cls, _ENDS_SESSION) or not ours:
            # KeyboardInterrupt and the like would end the grader's whole session; the change's own
            # BaseException classes (more_itertools.AbortThread) are mirrored like any other.
            return RuntimeError(f"the code under test raised {cls.__name__}: {text}")
        exc = _build(cls, args, text)
        if cls in MIRROR_IDS and handle is not None:
            exc.__dict__["_pg_ref"] = handle
        # What ``raise ... from`` set in the subject (``raise`` here leaves both as they are).
        if isinstance(info.get("cause"), dict) and chained < MAX_CAUSES:
            exc.__cause__ = self.exception(info["cause"], chained + 1)
        if info.get("suppress") is True:
            exc.__suppress_context__ = True
        return exc


def test_class(
    value: type[BaseException], number: int, encode: Callable[[object], Any], aliases: Aliases
) -> dict[str, Any]:
    """Describe a test's exception class for the subject (its bases encoded: built-ins go by name)."""
    bases = [encode(b) for b in value.__bases__ if issubclass(b, BaseException)]
    module = value.__module__
    named = {name: aliases.attribute(module, f"__{name}__", getattr(value, f"__{name}__"))
             for name in ("name", "qualname", "module")}  # fmt: skip
    return {codec.TYPE: "obj", "side": "g", "id": number, "kind": "exc_class", "bases": bases, **named}


def raised_here(exc: BaseException, gref: int, encode: Callable[[object], Any]) -> dict[str, Any]:
    """Describe an exception a test's callback raised: the subject gets its class's stand-in, or its base."""
    base = next((c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"), "Exception")
    text = codec.exception_text(exc)
    found = {codec.TYPE: "gexc", "gref": gref, "base": base, "text": text, "cls": encode(type(exc))}
    if isinstance(exc, StopIteration):
        # A test's generator's return value, as ``next()`` or ``send()`` of it raised it: what a
        # callback returns crosses anyway (pluggy's wrappers ``return result``; ``yield from``).
        with contextlib.suppress(TypeError):  # one that never crosses (a module): the text alone
            found["value"] = encode(exc.value)
    return found


def is_mirror(value: object) -> bool:
    return isinstance(value, type) and value in MIRROR_IDS


MIRROR_IDS: dict[type, int] = {}
_ENDS_SESSION = (KeyboardInterrupt, GeneratorExit)


def _stdlib_exception(named: object) -> type[BaseException] | None:
    if not isinstance(named, dict):
        return None
    try:
        found = byname.from_stdlib(named)
    except Exception:
        return None
    return found if _is_exception_class(found) else None  # type: ignore[return-value]


def _is_exception_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _mirrored_str(self: BaseException) -> str:
    text = self.__dict__.get("_pg_text")
    return text if isinstance(text, str) else BaseException.__str__(self)


def _mirrored_getattr(self: BaseException, name: str) -> Any:
    handle = self.__dict__.get("_pg_ref")
    if handle is None or name.startswith("__"):
        raise AttributeError(name)
    return getattr(handle, name)


def _build(cls: type[BaseException], args: tuple[Any, ...], text: str) -> BaseException:
    """Make an instance of ``cls`` whose ``args`` and ``str()`` are the subject's."""
    if cls in MIRROR_IDS:
        exc = cls.__new__(cls, *args)
        exc.args = args
        exc.__dict__["_pg_text"] = text
        return exc
    try:
        exc = cls(*args)
        if codec.exception_text(exc) == text:
            return exc
    except Exception:  # noqa: S110 - a built-in that will not take these arguments: fixed text below
        pass
    fixed = _FIXED_TEXT.get(cls)
    if fixed is None:
        fixed = type(cls.__name__, (cls,), {"__str__": _mirrored_str, "__module__": "builtins"})
        _FIXED_TEXT[cls] = fixed
    exc = fixed.__new__(fixed, *args)
    exc.args = args
    exc.__dict__["_pg_text"] = text
    return exc
