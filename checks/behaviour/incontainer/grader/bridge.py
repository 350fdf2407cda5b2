"""The grader's end of the channel: modules, objects and exceptions that live in the subject.

The hidden tests run in the grader. When they import a module of the
repository, the import resolves to a ``RemoteModule`` (``names.py``); every attribute,
call and operator on it, or on a ``Remote`` handle it returns, is a request
to the subject (``handles.py``). Values of known types come back *by value*
(decoded here into the grader's own objects, so ``assert f(x) == [4]``
compares with the grader's list ``==``); anything else stays in the subject
as a handle. Exception classes of the change are mirrored as real local
classes (``mirrors.py``), so ``pytest.raises(mod.ParseError)`` catches
them. A test's own objects handed to the change are served by
``handed.py``, under its refusals.
"""

from __future__ import annotations

import threading
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

from ..channel import byname, codec
from ..channel.kept import Kept, keepable
from ..channel.peer import Peer, PeerGone
from ..channel.protocol import BOUND, ENVIRON, KEPT, caps
from . import ambient, enums, handles, iteration, mirrors
from .aliases import Aliases
from .classes import Classes, RemoteClass
from .errors import SubjectGone
from .handed import ANSWER, NEVER_HANDED, Handed, PublicNamespace, Sealed, namespace_owner
from .handles import Remote, RemoteModule, is_handle, remote_class
from .kept import ProcessState, candidates
from .members import BoundRemote, own_dict

__all__ = ["Bridge"]

DEFAULT_DEADLINE_S = 60.0
_ANSWER_GRACE_S = 5.0
_SUBJECT_MARGIN_S = 1.0
# Threads serving the change's own threads' callbacks into the tests at once (more wait their turn).
FREE_THREADS = 8
# How much of a test object's class name reaches its stand-in's type (a real name is far shorter).
_TYPE_NAME_CHARS = 200
_MAIN_THREAD = threading.main_thread().ident


# The longest list ``encode`` takes by its fast path: far inside the codec's limit on a value's parts
# (a list of n items is n + 1 of them), past which the encoder refuses it and it goes as a handle.
FAST_ITEMS = 1024


def _handle_tag(value: object) -> dict[str, Any]:
    """How one of our handles is written: the subject's object by its number."""
    return {codec.TYPE: "obj", "side": "s", "id": handles.number(value)}


def _fast(items: list[Any]) -> list[Any] | None:
    """``items`` encoded when each is a handle or an exact int, str, bool or None; else None.

    What the encoder gives for such a list, without a pass of it: an exact value type is written as
    itself, and a handle goes to ``ref`` (``Bridge._ref``), which tags it with ``_handle_tag`` too.
    """
    encoded: list[Any] = []
    for item in items:
        kind = type(item)
        if kind is int or kind is bool or item is None or (kind is str and codec.plain_text(item)):
            encoded.append(item)
        elif is_handle(item):
            encoded.append(_handle_tag(item))
        else:
            return None
    return encoded


# What of a test object's own attributes goes with it the first time (``_own_functions``), and how many.
_OWN_FUNCTIONS = (types.FunctionType, types.MethodType)
_OWN_MAX = 64


class Bridge:
    """The grader's end of the channel: handles, mirrored classes and the grader's own objects."""

    def __init__(self, peer: Peer | None, *, broken: str | None = None, suite_root: str = "") -> None:
        self.peer = peer
        self.broken = broken
        self.handles: weakref.WeakValueDictionary[int, Remote] = weakref.WeakValueDictionary()
        self.handed = Handed(Aliases(suite_root.rstrip("/") + "/" if suite_root else ""))
        self._enums: dict[type, bool] = {}  # a test's enum class: whether the subject makes one (enums.py)
        self.handed.encode = self.encode  # items lent ahead go encoded, within a message's budget
        self.handed.decode_held = self.decode_held
        self.handed.subjects = is_handle  # the change's own objects a test's class holds go back as such
        self.modules: dict[int, RemoteModule] = {}
        self.mirrors = mirrors.Mirrors(self.decode, self.handed)
        self.classes = Classes(self, self.handed.aliases)
        self.released: list[list[int]] = []
        # Items of the subject's iterators fetched ahead for a consumer that takes them whole.
        self.batches: dict[int, iteration.Batch] = {}
        # A test's containers handed to the change, kept in step with the subject's objects for them.
        self.kept = Kept()
        self._state = ProcessState(suite_root.rstrip("/") + "/" if suite_root else "")
        self.deadline_at: float | None = None
        self.default_deadline_s = DEFAULT_DEADLINE_S
        self._outbound = ambient.Outbound()
        self._warned: dict[Any, Any] = {}
        self._describing = threading.local()  # the test objects whose own functions are being encoded
        self._lock = threading.Lock()
        if peer is not None:
            # The suite's own code is where the test's environment changes come from.
            ambient.install(suite_root.rstrip("/") + "/" if suite_root else "")
            peer.handler = self._serve
            peer.free_threads = FREE_THREADS
            handles._CURRENT[:] = [self]

    # -- requests -------------------------------------------------------------------------------

    def request(self, op: str, **fields: Any) -> Any:
        if self.peer is None or self.broken is not None or self.peer.broken is not None:
            why = self.broken or (self.peer.broken if self.peer is not None else None)
            raise SubjectGone(f"the code under test is not running: {why}")
        left = (self.deadline_at - time.monotonic()) if self.deadline_at else self.default_deadline_s
        left = max(left, 0.5)
        message: dict[str, Any] = {"op": op, **fields, "deadline": max(left - _SUBJECT_MARGIN_S, 0.25)}
        # From a test's own thread: served at once on a thread of the subject, not after the main line.
        message["main"] = threading.get_ident() == _MAIN_THREAD
        iteration.forget()  # no list()'s iter()-then-length pair has a request between the two
        with self._lock:
            self._outbound.add(message, self.encode)
            if self.released:
                message["release"], self.released = self.released, []
        self.kept.outbound(message, self.encoder)
        try:
            answer = self.peer.request(message, timeout=left + _ANSWER_GRACE_S)
        except PeerGone as exc:
            raise SubjectGone(f"the code under test stopped answering: {exc}") from None
        # What the change took of a test's iterators, first: the test's code may see them from here on.
        self.handed.lent.settle(answer.get("took"))
        # Interrupted while the subject works (a test's timeout): the answer, when it comes, finds no
        # one waiting and is dropped; the subject's own deadline for the request ends it soon after.
        try:
            ambient.deliver(answer, self.decode, self._warned, self.handed.aliases.restore)
            if "raise" in answer:
                raise self.mirrors.exception(answer["raise"])
            # A suite name that went out as an alias comes back as itself (functools.wraps of a callback).
            with self.handed.unsealing(ANSWER):  # the test's own values, a sealed default its value again
                value = self.decode(answer.get("ok"))
            return self.handed.aliases.restore_in(value, self.kept.holds)
        finally:
            # After the answer is read (it may name a container the subject lets go of in this message),
            # before the test's code runs again.
            self.kept.inbound(answer, self._decode_written)

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments encoded; a test's containers among them are kept in step (kept.py)."""
        for value in candidates(self._state, [*args, *kwargs.values()]):
            self.kept.keep(value)
        return {"args": self.encode(list(args)), "kwargs": self.encode(kwargs)}

    def attribute_value(self, value: object) -> Any:
        """A value a test sets as an attribute of the change's object, encoded; a container is kept."""
        for found in candidates(self._state, [value]):
            self.kept.keep(found)
        return self.encode(value)

    # -- values ---------------------------------------------------------------------------------

    def _ref(self, value: object) -> dict[str, Any]:
        if value is ambient.ENVIRONMENT.environ:
            return {codec.TYPE: ENVIRON}
        if is_handle(value):
            return _handle_tag(value)
        if isinstance(value, RemoteClass) and "_pgc_id" in own_dict(value):
            return {codec.TYPE: "obj", "side": "s", "id": own_dict(value)["_pgc_id"]}
        if type(value) is BoundRemote:  # handed on as a value: the subject's own bound method
            return self._ref(value.materialize())
        if isinstance(value, NEVER_HANDED):
            # A module reaches every other module (sys, gc): one would hand over the whole grader.
            kind = type(value).__name__
            raise TypeError(f"patchgate: a {kind} of the test side is never handed to the code under test")
        if mirrors.is_mirror(value):
            return {codec.TYPE: "obj", "side": "s", "id": mirrors.MIRROR_IDS[value]}  # type: ignore[index]
        if isinstance(value, BaseException):
            return self._my_exception(value)
        if isinstance(value, type) and issubclass(value, BaseException):
            return mirrors.test_class(value, self.handed.keep(value), self.encode, self.handed.aliases)
        if isinstance(value, Sealed):
            return {codec.TYPE: "obj", "side": "g", "id": self.handed.keep(value), "caps": []}
        tag = {codec.TYPE: "obj", "side": "g", "id": self.handed.keep(value), "caps": caps(value)}
        tag["type"] = self._type_names(type(value))
        if isinstance(value, type) and self._test_enum(value):  # an enum of the subject's own (enums.py)
            return enums.tag(value, self.handed.keep(value), self._type_names(value), self.encode, tag)
        if self._test_enum(type(value)):  # a member of one
            # Its class goes with it to read, never to write (the handed class itself: handed.py).
            cls = self.handed.reach(type(value))
            number, names = self.handed.keep(cls), self._type_names(cls)
            return enums.tag(cls, number, names, self.encode, tag, member=value)  # type: ignore[arg-type]
        if self.handed.mirrorable(value):  # a class of its own there (handed.describe)
            tag.update(kind="tclass", names=self._type_names(value))  # type: ignore[arg-type]
        elif self.handed.mirrorable(type(value)):
            # Its class goes with it, to read and call, never to write (it is every object's).
            tag["of"] = self._ref(self.handed.reach(type(value)))
            own = self._own_functions(value)
            if own:
                tag["own"] = own
        elif type(value) is types.MethodType and self._suite_function(value.__func__):
            # Bound there as here (inspect.ismethod): to the object if the subject holds it, else to
            # it sealed - passed back by a call of the method, never read, never written.
            owner = value.__self__
            held = (
                owner if self.handed.holds(owner) else self.handed.seal(owner, owner=True, of=value.__func__)
            )
            tag["bound"] = [self._ref(value.__func__), self._ref(held)]
        return tag

    def _test_enum(self, cls: type) -> bool:
        """Whether ``cls`` is a test's enum the subject makes one of its own for (enums.py)."""
        if type(cls) is not enums.EnumType:
            return False
        found = self._enums.get(cls)
        if found is None:
            found = self._enums[cls] = enums.mirrorable(
                cls, self.handed.aliases.suite_module, self.handed.aliases.names_a_test
            )
        return found

    def _member(self, found: object, tag: dict[str, Any]) -> object:
        """The object a grader tag names: ``found``, or the member of a test's enum at the tag's place
        (enums.py) - only of a class the subject was given as a test's enum."""
        if "member" not in tag and "flag" not in tag:
            return found
        if not (isinstance(found, type) and self._test_enum(found)):
            raise ValueError(enums.REFUSED)
        return enums.member(found, tag)

    def _handled(self, value: object) -> bool:
        """What the encoder hands to ``_ref`` whatever its type: our handles, a test's enum's members."""
        return is_handle(value) or self._test_enum(type(value))

    def _own_functions(self, value: object) -> list[list[Any]]:
        """The functions and methods a test class's object holds as its own public attributes (pluggy
        finds a plugin's hooks with ``inspect.getattr_static``, which reads the object's own
        ``__dict__``): what ``getattr`` of those names already gives the subject, as it first crosses."""
        describing: set[int] = self._describing.__dict__.setdefault("ids", set())
        if id(value) in describing:
            return []  # a method of its own bound to it: the object is being described already
        try:
            own = [
                (k, v) for k, v in list(vars(value).items())
                if type(v) in _OWN_FUNCTIONS and isinstance(k, str) and not k.startswith("_")
            ]  # fmt: skip
        except TypeError:
            return []
        describing.add(id(value))
        try:
            return [[self.handed.aliases.name(k), self.encode(v)] for k, v in own[:_OWN_MAX]]
        finally:
            describing.discard(id(value))

    def _suite_function(self, value: object) -> bool:
        """Whether ``value`` is a plain function of the suite's own (a test class's method), by its code."""
        return self.handed.aliases.suite_function(value)

    def _type_names(self, kind: type) -> list[str]:
        """What the stand-in's type says of the object's class: its name, qualified name and module, the
        suite's own as aliases (a library formats ``type(x).__name__``, reads ``__class__.__module__``)."""
        aliases = self.handed.aliases
        module = type.__dict__["__module__"].__get__(kind)
        names = [(n, type.__dict__[n].__get__(kind)) for n in ("__name__", "__qualname__")]
        found = [str(aliases.attribute(module, n, value))[:_TYPE_NAME_CHARS] for n, value in names]
        return [*found, str(aliases.attribute(module, "__module__", module))[:_TYPE_NAME_CHARS]]

    def _my_exception(self, exc: BaseException) -> dict[str, Any]:
        found = mirrors.raised_here(exc, self.handed.keep(exc), self.encode)
        # Its text names what raised it: a test's callback (``test_x.<locals>.cb() missing ...``), a
        # test's class, an attribute looked up - each test's name aliased, as a test object's repr.
        found["text"] = self.handed.aliases.names_in(str(found["text"]))
        # Caused by one the subject already holds (a test's exception it threw back into a test's
        # generator): the subject's exception for it is the cause there too, ``is`` holding.
        cause = BaseException.__dict__["__cause__"].__get__(exc)
        if cause is not None and self.handed.holds(cause):
            found["cause"] = self.handed.keep(cause)
        return found

    def encode(self, value: object) -> Any:
        if (
            type(value) is list
            and len(value) <= FAST_ITEMS
            and not (self.kept and self.kept.holds(value))
            and not self.handed.aliases.given  # a restored string is written as the subject wrote it
        ):
            # The arguments of most requests: handles and plain scalars, as the encoder would write them.
            fast = _fast(value)
            if fast is not None:
                return fast
        encoder = self.encoder()
        try:
            return encoder(value)
        except codec.Unserializable:
            for undo in encoder.undo:  # a kept container this pass tagged never reaches the subject
                undo()
            return self._ref(value)  # cyclic, too deep or too large: a handle, whose identities hold

    def encoder(self) -> codec.Encoder:
        """Return a fresh pass of the codec as ``encode`` runs it (its fast path gives the same)."""
        encoder = codec.Encoder(
            self._ref, extended=True, names="all", scrub=ambient.ENVIRONMENT.scrub, handle=self._handled
        )
        encoder.tz_ref = is_handle  # the change's tzinfo in a test's datetime: its own object there
        if self.kept:
            encoder.kept = self.kept.tag
        if self.handed.aliases.given:  # a string restored from aliases goes back with them (aliases.py)
            encoder.strings = self.handed.aliases.given_back
        return encoder

    def decode(self, data: Any) -> Any:
        return codec.decode(data, self._resolve)

    def decode_held(self, data: Any) -> Any:
        """Decode what the subject puts in a test's object (a kept container's contents, an attribute
        it sets): a sealed default it names stays sealed there, never the value it stands for."""
        return codec.decode(data, self._resolve_held)

    def _decode_written(self, data: Any) -> Any:
        """A kept container's contents as the subject wrote them, a suite name back as itself."""
        return self.handed.aliases.restore_in(self.decode_held(data), self.kept.holds)

    def _resolve_held(self, tag: dict[str, Any]) -> object:
        number = tag.get("id")
        if tag.get(codec.TYPE) == "obj" and tag.get("side") == "g" and type(number) is int:
            return self._member(self.handed.held(number), tag)
        if tag.get(codec.TYPE) == BOUND:  # bound to a sealed default: it stays sealed
            return self._bound(tag, self.decode_held)
        return self._resolve(tag)

    def _bound(self, tag: dict[str, Any], decode: Callable[[Any], Any]) -> types.MethodType:
        """A test's function the change bound: only a function of the suite's, to what it names."""
        func = decode(tag.get("func"))
        if not self._suite_function(func):
            raise ValueError("patchgate: only a test's function is bound on the test's side")
        owner = decode(tag.get("self"))
        if owner is None:
            raise ValueError("patchgate: a bound function needs its object")
        return types.MethodType(func, owner)

    def _resolve(self, tag: dict[str, Any]) -> object:
        if tag.get(codec.TYPE) == "sexc":  # an exception of the subject's, handed to a test's callback
            return self.mirrors.exception(tag)
        if tag.get(codec.TYPE) == "stdlib":  # collections.defaultdict is ours too (value classes only)
            return byname.from_stdlib(tag, safe_classes=True)
        if tag.get(codec.TYPE) == KEPT:  # a test's own container, back as itself
            return self.kept.resolve(tag, self.decode, make=False)
        if tag.get(codec.TYPE) == BOUND:
            return self._bound(tag, self.decode)
        number = tag.get("id")
        if tag.get(codec.TYPE) != "obj" or not isinstance(number, int):
            raise ValueError(f"unknown tag {tag.get(codec.TYPE)!r}")
        if tag.get("side") == "g":
            if "member" in tag or "flag" in tag:  # as held: a sealed enum class is never a member's
                return self._member(self.handed.held(number), tag)
            return self.handed.resolve(number)
        if tag.get("kind") == "exc_class":
            return self.mirrors.mirror(number, tag)
        if tag.get("kind") == "module":
            return self._module(number, tag)
        if tag.get("kind") == "class":
            return self.classes.resolve(number, tag, self.decode)
        handle = self.handles.get(number)
        if handle is None:
            if "cls" in tag:  # an instance of one of the subject's classes: a handle of its local class
                cls = self.decode(tag["cls"])
                found = (
                    self.classes.instance(cls, number, tag, self.decode) if isinstance(cls, type) else None
                )
                if found is not None and not isinstance(found, Remote):
                    return found  # a value subclass: held by value, one local object per remote one
                handle = found if isinstance(found, Remote) else remote_class(None)(self, number)
            else:
                handle = remote_class(tag.get("caps"))(self, number)
            self.handles[number] = handle
        object.__setattr__(handle, "_pg_seen", object.__getattribute__(handle, "_pg_seen") + 1)
        return handle

    def _module(self, number: int, tag: dict[str, Any]) -> RemoteModule:
        """One RemoteModule per module of the subject, imported or read off its parent (`pkg.sub`)."""
        found = self.modules.get(number)
        if found is None:
            names = self.request("names", obj=number)
            doc = self.request("getattr", obj=number, name="__doc__")
            handle = remote_class([])(self, number)
            found = RemoteModule(str(tag.get("name")), handle, [str(n) for n in names])
            found.__doc__ = doc if isinstance(doc, str) else None
            self.modules[number] = found
        return found

    # -- the subject's requests (callbacks into the grader's objects) ---------------------------

    def _serve(self, request: dict[str, Any]) -> dict[str, Any]:
        self.handed.lent.settle(request.get("took"))  # before a test's callback can see its iterators
        try:
            self.kept.inbound(request, self._decode_written)  # the change's writes, before the callback reads
            found = self.handed.serve(request, self.decode)
            if request.get("op") == "take":
                answer = {"ok": found}
            else:
                if self._test_data(request, found):
                    for value in candidates(self._state, [found]):
                        self.kept.keep(value)
                answer = {"ok": self.encode(found)}
            self.kept.outbound(answer, self.encoder)
        except BaseException as exc:  # a test's callback may raise anything; it goes back as such
            answer = {"raise": {"gexc": self._my_exception(exc)}}
        with self._lock:  # a level the callback set reaches the change before it logs again
            ambient.LOG_LEVELS.add(answer, self._outbound.log_floor)
        return answer

    def _test_data(self, request: dict[str, Any], found: object) -> bool:
        """Whether the change reached a test's own container through a test's object: an attribute the
        object itself holds, of a class of the suite's (``self.cache``), or what a function of the
        suite's returned - never a class attribute or one of a library's objects (``BOOLEAN_STATES``
        of a ``ConfigParser`` a test handed over is the grader's, for every test)."""
        if not keepable(found) or self._state.owns(found):
            return False
        target = self.handed.by_number.get(request["obj"]["id"])  # served: it names one we hold
        op = request.get("op")
        view = getattr(target, "__self__", None) if op == "call" else target
        if type(view) is PublicNamespace and (op == "call" or request.get("name") == "getitem"):
            # Through a test object's ``__dict__`` (cachetools' ``obj.__dict__.setdefault(name, {})``).
            return self._own_attribute(namespace_owner(view), found)
        if op == "getattr":
            return self._own_attribute(target, found)
        if op == "call":
            func = target.__func__ if type(target) is types.MethodType else target
            if type(func) is types.FunctionType:  # by its code: its __module__ is the change's to set
                return self._suite_function(func)
            return self.handed.aliases.suite_module(getattr(target, "__module__", None))
        return False

    def _own_attribute(self, owner: object, found: object) -> bool:
        """Whether ``found`` is held in ``owner``'s own namespace, and ``owner``'s class is the suite's
        (or ``owner`` is a function of the suite's)."""
        try:
            held = any(value is found for value in list(vars(owner).values()))
        except TypeError:  # no namespace of its own
            return False
        if held and type(owner) is types.FunctionType:  # a suite function's attribute (six.wraps updates it)
            return self._suite_function(owner)
        return held and self.handed.aliases.suite_module(type.__dict__["__module__"].__get__(type(owner)))
