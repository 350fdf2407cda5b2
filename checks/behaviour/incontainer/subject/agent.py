"""The subject's agent: it serves the grader's requests on the change's code (see main.py).

It answers requests: import a module, get or set an attribute, call, apply an
operator, run a declarative case in a forked child. What crosses back is an
*observation*: a value encoded by ``codec`` (exact built-in types walked
through their base methods), a handle for anything else, or an exception
described by its real type. It never sees a test's source, an expected
value, the grader's files or its memory: those live under another uid.
"""

from __future__ import annotations

import builtins
import codecs
import contextlib
import importlib
import os
import pickle
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from ..channel import byname, codec
from ..channel.kept import Kept
from ..channel.peer import Peer, PeerGone
from ..channel.protocol import BOUND, CODEC_FIELDS, CONTENTS, ENVIRON, KEPT, OPERATORS, SUBJECT_SERVES, caps
from . import ambient, calls, cases, classes, iteration, tracer, tree
from .enums import TestEnums
from .objects import Objects
from .readahead import ReadAhead
from .standins import GraderObject, Standins, test_class_id

_WATCHDOG_GRACE_S = 5.0
# How many links of an exception's ``__cause__`` chain the grader is told (a chain may be a cycle).
_CAUSES = 4
_RAISED_KEPT = 256  # the grader's exceptions remembered as possible causes
_CAUSE = BaseException.__dict__["__cause__"].__get__
_SUPPRESS = BaseException.__dict__["__suppress_context__"].__get__
# Threads serving calls from a test's own threads at once (more wait their turn). One process would run
# every thread of the test at once, and its threads may wait for each other inside the change's code (a
# barrier in a callback: cachetools' lock tests run ten): a call never waits for a thread here unless the
# test runs more at once than this. Each has a test's thread waiting for its answer, so it is the suite,
# never the change, that decides how many there are; the container's pids limit bounds both sides.
FREE_THREADS = 64


def _changes_tzinfo(tz: object) -> bool:
    """A tzinfo of the change's (or a library's) goes by reference: the grader asks it its offset."""
    return classes.proxied(type(tz))


class Agent:
    """Serve the grader's requests for one connection."""

    def __init__(self, sock: socket.socket, repo: str) -> None:
        self.repo = repo
        self.objects = Objects()
        # Items of a test's iterators the grader lent ahead; what was taken goes with every message.
        self.readahead = ReadAhead(lambda standin, size: self.callback("take", standin, size))
        self.standins = Standins(self)
        self._local = threading.local()
        self.mirrors: dict[int, type[BaseException]] = {}
        self.grader_classes: dict[int, type[BaseException]] = {}
        # Classes already described to the grader (kept alive: the grader keeps their local classes).
        self.described: dict[int, type] = {}
        self.grader_class_ids: dict[type, int] = {}
        self.test_enums = TestEnums()  # a test's enums, made here as enums (enums.py)
        # The exception made here for each of the last ones the grader raised: a later one caused by
        # it (pluggy's ``teardown.throw(exc)``: ``RuntimeError`` from it) has it as its ``__cause__``.
        self._raised_for: dict[int, BaseException] = {}
        self._raised_lock = threading.Lock()
        # Items a batch took that did not fit in its answer: the next request on that iterator gets them.
        self.held = iteration.Held()
        # A test's containers handed over, one object each, kept in step with the grader's (kept.py).
        self.kept = Kept()
        self._busy_since: float | None = None
        # The main thread's outermost requests, one at a time, share one capture (reset for each).
        self._capture = ambient.Capture()
        ambient.install_warning_hook()
        self._deadline = 0.0
        # Last: the peer serves requests from its first line on, and they need all of the above.
        self.peer = Peer(sock, self.handle, free_threads=FREE_THREADS, mainline=True)

    # -- encoding -------------------------------------------------------------------------------

    def _ref(self, value: object) -> dict[str, Any]:
        if isinstance(value, GraderObject):
            return {codec.TYPE: "obj", "side": "g", "id": object.__getattribute__(value, "_pg_id")}
        mirrored = test_class_id(value)
        if mirrored is not None:  # a test's class, mirrored here
            return {codec.TYPE: "obj", "side": "g", "id": mirrored}
        enum_tag = self.test_enums.ref(value)
        if enum_tag is not None:  # a test's enum made here, or one of its members: the test's own back
            return enum_tag
        bound: Any = value if type(value) is types.MethodType else None
        if bound is not None and isinstance(bound.__func__, GraderObject):
            # A test's function bound here (pluggy binds a test class's method to its object): the
            # grader binds the same function to the same object.
            return {codec.TYPE: BOUND, "func": self._ref(bound.__func__), "self": self.encode(bound.__self__)}
        if isinstance(value, BaseException):
            # Handed to a test's callback (toolz.excepts' handler): the grader's own exception when it
            # came from there, else one built as if raised.
            gref = getattr(value, "_patchgate_gref", None) if self._graders(value) else None
            if isinstance(gref, int):
                return {codec.TYPE: "obj", "side": "g", "id": gref}
            return {codec.TYPE: "sexc", **self.raised(value)}
        if isinstance(value, type) and value in self.grader_class_ids:
            return {codec.TYPE: "obj", "side": "g", "id": self.grader_class_ids[value]}
        tag: dict[str, Any] = {codec.TYPE: "obj", "side": "s", "id": self.objects.number(value)}
        if isinstance(value, types.ModuleType):  # six.moves' lazy modules are ModuleType subclasses
            tag.update(kind="module", name=str(getattr(value, "__name__", "?")))
        elif isinstance(value, type) and issubclass(value, BaseException):
            tag.update(self._exception_class(value))
        elif isinstance(value, type) and classes.proxied(value):
            # A class of the change's: the grader makes a local class of it, told once what it is.
            tag["kind"] = "class"
            if id(value) not in self.described:
                self.described[id(value)] = value
                tag.update(classes.describe(value, self.encode))
        elif classes.proxied(type(value)):
            tag["cls"] = self._ref(type(value))
            if classes.proxied_instance(value):
                tag["value"] = self._as_value(value)
        else:
            tag["caps"] = caps(value)  # what its type offers: the grader's handle offers the same
        return tag

    def _claimed(self, value: object) -> bool:
        """What the encoder hands to ``_ref`` whatever its type: a value subclass of the change's, held
        by handle as well, and a member of a test's enum made here (the test's member goes back)."""
        return classes.proxied_instance(value) or self.test_enums.claims(value)

    def _as_value(self, value: object) -> Any:
        """``value`` as its built-in base type, read with that type's own methods (never its class's)."""
        encoder = codec.Encoder(self._ref, extended=True, handle=self._claimed)
        encoder.tz_ref = _changes_tzinfo
        encoder.as_value = True
        try:
            return encoder(value)
        except codec.Unserializable:
            return None

    def _graders(self, exc: BaseException) -> bool:
        """Whether ``exc`` may stand for one the grader raised (a built-in, or a test class's stand-in)."""
        return type(exc).__module__ == "builtins" or type(exc) in self.grader_class_ids

    def _exception_class(self, cls: type[BaseException]) -> dict[str, Any]:
        bases = [b for b in cls.__bases__ if issubclass(b, BaseException)]
        named = byname.stdlib_name(cls)
        return {
            "kind": "exc_class",
            "name": cls.__name__,
            "qualname": getattr(cls, "__qualname__", cls.__name__),
            "module": getattr(cls, "__module__", "") or "",
            "bases": [self.encode(b) for b in bases],
            "stdlib": dict(zip(("module", "qualname"), named, strict=True)) if named else None,
        }

    def encode(self, value: object) -> Any:
        kind = type(value)
        # As they are, the most common answer (a string JSON would not give back exactly: tagged).
        if kind is int or kind is bool or value is None:
            return value
        if kind is str and codec.plain_text(value):  # type: ignore[arg-type]  # exactly a str
            return value
        try:
            return self.encoder()(value)
        except codec.Unserializable:
            # Cyclic or deeper than the codec goes (boltons' LRU links, a self-referencing list):
            # the grader gets a handle, and the identities inside it hold.
            return self._ref(value)

    def encoder(self) -> codec.Encoder:
        encoder = codec.Encoder(self._ref, extended=True, handle=self._claimed)
        encoder.tz_ref = _changes_tzinfo
        if self.kept:
            encoder.kept = self.kept.tag
        return encoder

    def decode(self, data: Any) -> Any:
        return codec.decode(data, self._resolve)

    def _resolve(self, tag: dict[str, Any]) -> object:
        if tag.get(codec.TYPE) == "obj" and tag.get("side") == "s":
            return self.objects.get(tag.get("id"))
        if tag.get(codec.TYPE) == "obj" and tag.get("side") == "g" and isinstance(tag.get("id"), int):
            if tag.get("kind") == "exc_class":
                return self._grader_class(int(tag["id"]), tag)
            if tag.get("kind") == "tclass":
                return self.standins.test_class(int(tag["id"]), tag)
            if tag.get("kind") == "tenum":
                return self.test_enums.resolve(tag, self.decode)
            if "bound" in tag:  # a test's method: its function bound to its object, as the grader has it
                func, owner = self.decode(tag["bound"])
                if isinstance(func, GraderObject):
                    return types.MethodType(func, owner)  # type: ignore[arg-type]
            of = self.decode(tag["of"]) if "of" in tag else None
            made = self.standins.get(int(tag["id"]), tag.get("caps"), tag.get("type"), of)
            own = tag.get("own")
            if isinstance(own, list) and self.standins.fresh(made):
                self.standins.fill(made, self.decode(own))  # after it is made: a method bound to it
            return made
        if tag.get(codec.TYPE) == "gexc":
            return self._grader_exception(tag)
        if tag.get(codec.TYPE) == "stdlib":  # the grader named one; ours is the same
            return byname.from_stdlib(tag)
        if tag.get(codec.TYPE) == ENVIRON:  # a test's os.environ: ours, with the test's changes in it
            return os.environ
        if tag.get(codec.TYPE) == KEPT:  # a test's container: ours for it, made the first time it crosses
            return self.kept.resolve(tag, self.decode, make=True)
        raise ValueError(f"unknown tag {tag.get(codec.TYPE)!r}")

    def _grader_class(self, number: int, tag: dict[str, Any]) -> type[BaseException]:
        """Our class standing for a test's exception class (one per class), a subclass of its bases."""
        found = self.grader_classes.get(number)
        if found is None:
            bases = tuple(b for b in (self.decode(x) for x in tag.get("bases") or [])
                          if isinstance(b, type) and issubclass(b, BaseException))  # fmt: skip
            namespace: dict[str, Any] = {
                "__module__": str(tag.get("module")), "__qualname__": str(tag.get("qualname")),
                # Its text is the test's exception's to say, raising as that says (pluggy's tracer
                # renders an exception whose repr raises as "unpresentable").
                "__str__": self._exception_text("str"), "__repr__": self._exception_text("repr"),
            }  # fmt: skip
            try:
                found = type(str(tag.get("name")), bases or (Exception,), namespace)
            except TypeError:  # bases whose layouts conflict: keep the first
                found = type(str(tag.get("name")), bases[:1] or (Exception,), namespace)
            self.grader_classes[number] = found
            self.grader_class_ids[found] = number
        return found

    def _exception_text(self, kind: str) -> Callable[[BaseException], str]:
        """``str``/``repr`` of our exception standing for one a test raised: the grader's answer."""
        own = getattr(BaseException, f"__{kind}__")

        def text(exc: BaseException) -> str:
            number = exc.__dict__.get("_patchgate_gref")
            if type(number) is not int:
                return str(own(exc))
            return str(self.callback("op", kind, self.standins.get(number, [])))

        return text

    def _grader_exception(self, tag: dict[str, Any]) -> BaseException:
        """Build an exception standing for one the grader raised: of its class's stand-in, or its base."""
        try:
            cls = self.decode(tag.get("cls")) if "cls" in tag else None
        except (ValueError, LookupError):
            cls = None
        text = str(tag.get("text", ""))
        exc: BaseException
        stdlib = isinstance(cls, type) and issubclass(cls, BaseException) and _stdlib_exception(cls)
        made = None
        if stdlib:
            # A standard-library exception (io.UnsupportedOperation from a test's stream): this process's
            # own class, so the change's ``except`` of it catches it, as in one process.
            with contextlib.suppress(Exception):
                made = cls(text) if text else cls()  # type: ignore[misc]
        if made is not None:
            exc = made
        elif isinstance(cls, type) and issubclass(cls, BaseException) and cls in self.grader_class_ids:
            exc = cls.__new__(cls, text)
            exc.args = (text,)
        else:
            base = getattr(builtins, str(tag.get("base")), Exception)
            if not (isinstance(base, type) and issubclass(base, BaseException)):
                base = Exception
            returned = base is StopIteration and "value" in tag  # a test's generator's return value
            try:
                exc = base(self.decode(tag["value"])) if returned else base(text) if text else base()
            except Exception:
                exc = Exception(text)
        gref, cause = tag.get("gref"), tag.get("cause")
        exc._patchgate_gref = gref  # type: ignore[attr-defined]
        with self._raised_lock:
            if type(gref) is int:
                self._raised_for[gref] = exc
                while len(self._raised_for) > _RAISED_KEPT:  # the oldest first (a dict keeps its order)
                    del self._raised_for[next(iter(self._raised_for))]
            caused_by = self._raised_for.get(cause) if type(cause) is int else None
        if caused_by is not None and caused_by is not exc:
            exc.__cause__ = caused_by
        return exc

    def raised(self, exc: BaseException, chained: int = 0) -> dict[str, Any]:
        """Describe an exception for the grader: its class, arguments, text and a handle to it.

        With what ``raise ... from`` set on it (read through BaseException's own descriptors): its
        cause, described the same way a few links deep, and whether its context is suppressed.
        """
        gref = getattr(exc, "_patchgate_gref", None) if self._graders(exc) else None
        try:
            args = self.encode(tuple(BaseException.__dict__["args"].__get__(exc)))
        except Exception:
            args = None
        instance = {codec.TYPE: "obj", "side": "s", "id": self.objects.number(exc)}
        described = {
            "cls": self.encode(type(exc)),
            "args": args,
            "text": codec.exception_text(exc)[: codec.MESSAGE_CHARS * 10],
            "obj": instance,
            "gref": gref if isinstance(gref, int) else None,
            "timeout": isinstance(exc, cases.CallTimeout),
        }
        if _SUPPRESS(exc):
            described["suppress"] = True
        cause = _CAUSE(exc)
        if isinstance(cause, BaseException) and chained < _CAUSES:
            described["cause"] = self.raised(cause, chained + 1)
        return described

    # -- requests from the grader -----------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        depth = getattr(self._local, "depth", 0) + 1
        self._local.depth = depth
        # Only the main thread's outermost request takes the grader's environment, captures
        # prints and runs against a deadline (the alarm reaches the main thread alone); a request
        # nested in a callback from one of the change's own threads is served on that thread.
        outer = depth == 1 and threading.current_thread() is threading.main_thread()
        capture = self._capture
        self.kept.inbound(request, self.decode)  # what the test changed, before its arguments are read
        try:
            if outer:
                capture.reset()
                ambient.apply(request, self.decode)
                self.objects.release(request.get("release"))
                self._arm(request.get("deadline"))
                saved = capture.start()
            try:
                answer: dict[str, Any] = {"ok": self._dispatch(request)}
            except BaseException as exc:  # the change's code may raise anything, SystemExit too
                answer = {"raise": self.raised(exc)}
            finally:
                if outer:
                    capture.stop(saved)
        finally:
            if outer:
                self._disarm()
            self._local.depth = depth - 1
        if outer:
            answer.update(capture.fields(self.encode))
        self.kept.outbound(answer, self.encoder, let_go=True)
        took = self.readahead.settle()
        if took:
            answer["took"] = took
        return answer

    def _dispatch(self, request: dict[str, Any]) -> Any:
        serve = _SERVES.get(str(request.get("op")))
        if serve is None:
            raise ValueError(f"unknown request {request.get('op')!r}")
        return serve(self, request)

    def _target(self, request: dict[str, Any]) -> Any:
        return self.objects.get(request.get("obj")) if "obj" in request else None

    def _arguments(self, request: dict[str, Any]) -> tuple[Any, Any]:
        return self.decode(request.get("args", [])), self.decode(request.get("kwargs", {}))

    def _serve_case(self, request: dict[str, Any]) -> Any:
        return cases.run_case(request, self.repo)

    def _serve_apply(self, request: dict[str, Any]) -> Any:
        return calls.apply(request, self.repo)

    def _serve_lines(self, request: dict[str, Any]) -> None:
        # Before any of the change's code is imported: which of its files to trace.
        files = request.get("files")
        tracer.start(self.repo, [str(f) for f in files] if isinstance(files, list) else [])

    def _serve_lines_report(self, request: dict[str, Any]) -> Any:
        return tracer.executed()

    def _serve_import(self, request: dict[str, Any]) -> Any:
        name = str(request["name"])
        module = importlib.import_module(name)
        top = name.partition(".")[0]
        # The top-level package must be the tree's; what that package makes of its own submodule names
        # (six.moves' lazy modules are the standard library's) is the change's, as in one process.
        tree.check(module if top == name else sys.modules.get(top), top, self.repo)
        return self.encode(module)

    def _serve_reload(self, request: dict[str, Any]) -> Any:
        return self.encode(importlib.reload(self.objects.get(request.get("obj"))))  # type: ignore[arg-type]

    def _serve_unpickle(self, request: dict[str, Any]) -> Any:
        data = self.decode(request.get("data"))
        return self.encode(pickle.loads(data if isinstance(data, bytes) else b""))  # noqa: S301 - our own object's bytes, loaded in the sandbox

    def _serve_names(self, request: dict[str, Any]) -> list[str]:
        obj = self.objects.get(request.get("obj"))
        names = getattr(obj, "__all__", None)
        if names is None:
            names = [n for n in vars(obj) if not n.startswith("_")]
        return [str(n) for n in names]

    def _serve_getattr(self, request: dict[str, Any]) -> Any:
        return self.encode(getattr(self._target(request), str(request["name"])))

    def _serve_setattr(self, request: dict[str, Any]) -> None:
        setattr(self._target(request), str(request["name"]), self.decode(request.get("value")))

    def _serve_delattr(self, request: dict[str, Any]) -> None:
        delattr(self._target(request), str(request["name"]))

    def _serve_call(self, request: dict[str, Any]) -> Any:
        target = self._target(request)
        args, kwargs = self._arguments(request)
        return self.encode(target(*args, **kwargs))

    def _serve_op(self, request: dict[str, Any]) -> Any:
        name = str(request["name"])
        args = self.decode(request.get("args", []))
        if name == "next" and args:
            waiting, item = self.held.pop(args[0])
            if type(item) is iteration.Raised:
                raise item.exc
            if waiting:
                return item
        return self.encode(OPERATORS[name].apply(*args))

    def _serve_take(self, request: dict[str, Any]) -> Any:
        """Items of an iterator many to a request, for a consumer that takes them whole (iteration.py)."""
        iterator = self._target(request)
        length = len(self.objects.get(request["len"])) if "len" in request else None  # type: ignore[arg-type]
        taken = iteration.take(iterator, request.get("size"), self.held, self.encode, self.raised)
        return taken if length is None else {**taken, "len": length}

    def _serve_call_attr(self, request: dict[str, Any]) -> Any:
        """Read the attribute and call it: one request for ``handle.method(...)``."""
        target = self._target(request)
        args, kwargs = self._arguments(request)
        return self.encode(getattr(target, str(request["name"]))(*args, **kwargs))

    def _serve_call_on(self, request: dict[str, Any]) -> Any:
        """``super().method(...)``: that class's own function, on the instance."""
        target, cls = self._target(request), self.objects.get(request.get("cls"))
        args, kwargs = self._arguments(request)
        return self.encode(getattr(cls, str(request["name"]))(target, *args, **kwargs))

    def _serve_call_classmethod(self, request: dict[str, Any]) -> Any:
        """``super().parse(...)`` in a subclass's class method: bound to that class."""
        cls, bind = self.objects.get(request.get("cls")), self.decode(request.get("bind"))
        args, kwargs = self._arguments(request)
        return self.encode(classes.call_classmethod(cls, str(request["name"]), bind, args, kwargs))  # type: ignore[arg-type]

    def _serve_codec(self, request: dict[str, Any]) -> Any:
        """A codec this process's registry finds for a name (grader/registries.py), or None."""
        try:
            info = codecs.lookup(str(request.get("name")))
        except LookupError:
            return None
        found = {key: getattr(info, key, None) for key in CODEC_FIELDS}
        text = bool(getattr(info, "_is_text_encoding", True))
        return self.encode({**found, "name": info.name, "text": text})

    def _serve_value(self, request: dict[str, Any]) -> Any:
        """A container subclass's contents as its base type reads them."""
        return self._as_value(self._target(request))

    def _serve_subclass(self, request: dict[str, Any]) -> Any:
        """A test's subclass of classes of the change's, made here: its number, when it is a new class
        of ours; else what the metaclass made of the class statement, as a value."""
        made = classes.make_subclass(request, self.decode)
        if "prepared" in request or not isinstance(made, type) or not classes.proxied(made):
            return {"made": self.encode(made)}
        if id(made) in self.described:  # a class the metaclass had made before
            return {"made": self.encode(made)}
        self.described[id(made)] = made
        return self.objects.number(made)

    def _serve_prepare(self, request: dict[str, Any]) -> Any:
        """The namespace for a test's class statement over classes of the change's, as their metaclass
        prepares it (a test's own object, when that metaclass asks the test's)."""
        found = classes.prepare(request, self.decode)
        # Ours by reference, whatever its type (an enum's namespace is a dict): the body writes into it.
        return self.encode(found) if isinstance(found, GraderObject) else self._ref(found)

    # -- deadlines ------------------------------------------------------------------------------

    def _arm(self, deadline: object) -> None:
        if not isinstance(deadline, (int, float)) or deadline <= 0:
            return
        self._busy_since = time.monotonic()
        self._deadline = float(deadline)
        signal.setitimer(signal.ITIMER_REAL, float(deadline))

    def _disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._busy_since = None

    def watchdog(self) -> None:
        """End this process when a request outlives its deadline (the code blocked our alarm)."""
        while True:
            _SLEEP(0.5)
            since = self._busy_since
            if since is not None and time.monotonic() - since > self._deadline + _WATCHDOG_GRACE_S:
                with contextlib.suppress(Exception):
                    self.peer.send({"dead": f"a request ran {self._deadline:g}s past its deadline"})
                os._exit(70)

    # -- requests to the grader -----------------------------------------------------------------

    def callback(self, kind: str, *parts: Any) -> Any:
        """Ask the grader to use one of its objects we were handed (see handed.py for what it refuses)."""
        if kind == "call":
            target, args, kwargs = parts
            request = {"op": "call", "obj": self.encode(target), "args": self.encode(list(args)),
                       "kwargs": self.encode(dict(kwargs))}  # fmt: skip
        elif kind == "op":
            name, target, *args = parts
            request = {"op": "op", "name": name, "obj": self.encode(target), "args": self.encode(list(args))}
        elif kind == "setattr":
            target, name, value = parts
            # A container set on a test's object stays ours, held there by handle: the code under test
            # goes on changing it through the attribute (click appends each option to a function's
            # __click_params__ list it set), which a copy would lose.
            mine = type(value) in CONTENTS and not self.kept.holds(value)
            held = self._ref(value) if mine else self.encode(value)
            request = {"op": "setattr", "obj": self.encode(target), "name": name, "value": held}
        elif kind == "take":
            target, size = parts
            request = {"op": "take", "obj": self.encode(target), "size": size}
        elif kind in ("getattr", "delattr"):
            target, name = parts
            request = {"op": kind, "obj": self.encode(target), "name": name}
        else:
            (target,) = parts
            request = {"op": kind, "obj": self.encode(target)}
        took = self.readahead.settle()
        if took:
            request["took"] = took
        self.kept.outbound(request, self.encoder, let_go=True)  # what the change wrote, before the test reads
        try:
            answer = self.peer.request(request)
        except PeerGone as exc:
            raise RuntimeError(f"patchgate: the grader is gone ({exc})") from None
        self.kept.inbound(answer, self.decode)
        ambient.log_level(answer)
        if "raise" in answer:
            info = answer["raise"]
            raise self._grader_exception(info.get("gexc", info) if isinstance(info, dict) else {})
        return self.decode(answer.get("ok"))


def _stdlib_exception(cls: type) -> bool:
    """Whether ``cls`` is a standard-library exception class (not a built-in: those go by base name)."""
    module = getattr(cls, "__module__", "") or ""
    return module != "builtins" and module.partition(".")[0].lstrip("_") in sys.stdlib_module_names


# Ours, as the process started (a test's time.sleep, crossed to this module, is the change's to call).
_SLEEP = time.sleep

# What the subject serves is the protocol's list, each request by its ``_serve_<op>`` method (a request
# the protocol does not name has no method to reach; one it names without a method fails at import).
_SERVES: dict[str, Callable[[Agent, dict[str, Any]], Any]] = {
    op: getattr(Agent, f"_serve_{op}") for op in sorted(SUBJECT_SERVES)
}
