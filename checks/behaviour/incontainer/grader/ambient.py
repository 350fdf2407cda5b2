"""Process state that travels with each request, and what comes back besides the answer.

In one process, a test's ``monkeypatch.setenv``, ``chdir`` and
``random.seed`` reach the code under test, and that code's prints and
warnings reach the test's ``capsys`` and ``pytest.warns``. Across the two
trust domains they travel with the requests, and what crosses is an
allowlist of the test's own changes, never a copy of the grader's state:

- the **environment**: each variable has an owner, decided when it is
  first written: the *test* when, walking out from the write, a frame of
  the suite's own code comes before any of the runner's
  (``monkeypatch.setenv`` in a test or a fixture, a conftest setting one at
  import), the *runner* otherwise (pytest's ``PYTEST_CURRENT_TEST``, which
  names the running test and its parameters, even when a conftest drives
  the test's protocol itself; anything a tool sets).
  Only the test's variables cross: their value, their removal, or their
  return to how the grader started (the subject then takes its own
  starting value back). What the grader started with, the runner's
  variables and patchgate's never reach the subject in any form, and a
  plain dict a test hands over (``dict(os.environ)``) crosses without the
  runner's variables; ``os.environ`` itself, handed over, is the subject's
  own (``bridge.py``);
- the **working directory**, when it changed (a test's ``tmp_path`` has an
  opaque name: ``pytest_runner.py``);
- ``sys.argv`` and ``sys.stdin`` once a test replaced them (a CLI test's
  arguments, click's ``CliRunner`` input): the list as it is, the stream as
  a stand-in the subject reads from; pytest's own never cross;
- ``sys.stdout`` and ``sys.stderr`` while an object of a class of the
  suite's own stands there (``monkeypatch.setattr("sys.stdout",
  MockStdout())``): the subject's stream for the request is a stand-in of
  it, so the change's writes, ``isatty()`` and ``fileno()`` are the test's
  object's. Any other stream - pytest's capture, a ``StringIO`` of
  ``redirect_stdout``, a CLI runner's buffer, the process's own - never
  crosses: the subject captures the change's prints and they are written
  to it here;
- each ``random.seed``/``random.setstate`` the test made since the last
  request - the test's own choices, never the generator's state otherwise
  (that would let the code under test predict the test's later draws) and
  never back (the code under test would choose the test's random inputs);
- a test's replacement of a standard-library function through which code
  reads its surroundings (``protocol.AMBIENT_FUNCTIONS``: ``os.isatty``,
  ``time.time``, ``time.sleep``, ``platform.system``...): owned as a
  variable is, by whoever wrote it first, and crossing as the test's own
  callable (the change's ``os.isatty(fd)`` calls the test's lambda), or as
  "the subject's own again" once the test's patch is undone.

Back from the subject (``deliver``): what the request printed and the
warnings it raised, re-issued here under the test's own filters, and the
records it logged, handled here by the logger of the same name when the
test's levels let it log one (``caplog``, ``assertLogs``). A record is
data: its message, place and traceback as text, never an object.
"""

from __future__ import annotations

import importlib
import io
import logging
import os
import pathlib
import random
import sys
import threading
import types
import uuid
import warnings
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

from ..channel import byname
from ..channel.protocol import AMBIENT_FUNCTIONS, HARNESS_DIR, MAX_RECORDS, RECORD_CHARS

MAX_WARNINGS = 100
_GETCWD = os.getcwd
_CHDIRS = [0]  # how many times this process changed its working directory (install() counts)
_SEEDS: list[tuple[str, tuple[Any, ...]]] = []
_SEED_LOCK = threading.Lock()
_SEEDABLE = (int, float, str, bytes, bytearray, type(None))
# How a test-owned variable reaches the subject: its value, its removal, or back to the subject's own.
SET, UNSET, REVERT = "set", "unset", "revert"


def _recording(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        with _SEED_LOCK:
            _SEEDS.append((name, args))
        return result

    call._patchgate_records = True  # type: ignore[attr-defined]
    return call


def install_seed_hooks() -> None:
    """Record the test's random.seed and random.setstate calls (the module's shared generator)."""
    if not getattr(random.seed, "_patchgate_records", False):
        random.seed = _recording("seed", random.seed)
        random.setstate = _recording("setstate", random.setstate)


class Environment:
    """Who owns each environment variable of this process, from its first write on."""

    def __init__(self) -> None:
        self.environ: Mapping[str, str] = os.environ
        self.baseline: dict[str, str] = dict(os.environ)
        self.owners: dict[str, str] = {}
        self.runner: list[str] = []
        self.version = 0
        self.suite_prefix = ""
        self._lock = threading.Lock()

    def written(self, key: object, depth: int = 2) -> None:
        if not isinstance(key, str):
            return
        with self._lock:
            owner = self.owners.get(key)
            if owner is None:
                owner = self.owners[key] = "test" if self._suite_wrote(depth + 1) else "runner"
                if owner == "runner":
                    self.runner.append(key)
            if owner == "test":
                self.version += 1

    def _suite_wrote(self, depth: int) -> bool:
        """Whether the suite's own code made the write: walking out from it, a frame of the suite's
        comes before any of the runner's.

        The runner is pytest, pluggy and the harness; a frame of anything else (the standard
        library's ``os``, ``unittest.mock``, a library) only passes the write on to its caller, as
        pytest's ``monkeypatch`` does, the test's own tool. A frame of the runner's decides for the
        runner even with the suite's code further out: a conftest that drives a test's protocol
        itself (``runtestprotocol``) would otherwise own pytest's ``PYTEST_CURRENT_TEST``, and the
        running test's id would cross.
        """
        prefix = self.suite_prefix
        if not prefix:
            return False
        frame: FrameType | None = sys._getframe(depth)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(prefix):
                return True
            if _runner_frame(frame, filename):
                return False
            frame = frame.f_back
        return False

    def delta(self) -> dict[str, list[str]]:
        """Each test-owned variable's state, as it should reach the subject (a replaced os.environ: all)."""
        current: Mapping[str, str] = os.environ
        if current is not self.environ and type(current) is not dict:
            # Read with the bridge's lock held: only a mapping whose reads run nothing of anyone's (a
            # handle's would be a request, waiting for that very lock) is followed.
            return {}
        keys = [k for k, owner in self.owners.items() if owner == "test"]
        if current is not self.environ:  # a test swapped os.environ for a plain dict of its own
            runner = set(self.runner)
            keys = [k for k in {*self.baseline, *current} if type(k) is str and k not in runner]
        out: dict[str, list[str]] = {}
        for key in keys:
            value = current.get(key)
            if value is not None and type(value) is not str:
                continue  # a value that is no string: never compared here (its __eq__ may be a request)
            if value == self.baseline.get(key):
                out[key] = [REVERT]
            elif value is None:
                out[key] = [UNSET]
            else:
                out[key] = [SET, str(value)]
        return out

    def scrub(self, value: dict[Any, Any]) -> dict[Any, Any]:
        """Return ``value`` without the runner's variables, where it holds them as the grader has them."""
        dropped = [k for k in self.runner if k in value and value[k] == os.environ.get(k)]
        if not dropped:
            return value
        return {k: v for k, v in value.items() if k not in dropped}


# The runner's code, by module: whatever it writes is the runner's (``Environment._suite_wrote``).
_RUNNER_PACKAGES = frozenset({"_pytest", "pytest", "pluggy"})
# The runner's tools a test calls to write on its own behalf: their caller decides.
_TEST_TOOLS = frozenset({"_pytest.monkeypatch"})


def _runner_frame(frame: FrameType, filename: str) -> bool:
    if filename.startswith(HARNESS_DIR):
        return True
    module = frame.f_globals.get("__name__")
    if not isinstance(module, str) or module in _TEST_TOOLS:
        return False
    return module.partition(".")[0] in _RUNNER_PACKAGES


ENVIRONMENT = Environment()
_INSTALLED: list[bool] = []
_MISSING: Any = object()


class Patches:
    """Who owns each of ``AMBIENT_FUNCTIONS`` of this process, from its first write on (as variables are)."""

    def __init__(self) -> None:
        self.originals: dict[str, object] = {}  # the grader's own function, before any test ran
        self.owners: dict[str, str] = {}
        self.version = 0
        self._lock = threading.Lock()

    def written(self, module: types.ModuleType, name: str, depth: int = 2) -> None:
        key = f"{module.__name__}.{name}"
        with self._lock:
            owner = self.owners.get(key)
            if owner is None:
                owner = self.owners[key] = "test" if ENVIRONMENT._suite_wrote(depth + 1) else "runner"
            if owner == "test":
                self.version += 1

    def current(self) -> dict[str, object]:
        """Each test-owned function as this process has it now (``_MISSING``: deleted)."""
        found: dict[str, object] = {}
        for key, owner in list(self.owners.items()):
            module = sys.modules.get(key.rpartition(".")[0])
            if owner == "test" and module is not None:
                found[key] = vars(module).get(key.rpartition(".")[2], _MISSING)
        return found


PATCHES = Patches()


_AMBIENT_VALUES = frozenset({type(None), bool, int, float, str, bytes, uuid.UUID})
_STRUCT_MODULES = frozenset({"builtins", "time", "os", "posix", "platform", "shutil"})


def _ambient_value(value: object, depth: int = 0) -> bool:
    """A value a standard-library function of ``AMBIENT_FUNCTIONS`` takes or gives: a plain one, a tuple
    of them (``struct_time``, ``terminal_size``, ``uname_result``), a standard-library path."""
    kind = type(value)
    if kind in _AMBIENT_VALUES:
        return True
    if isinstance(value, tuple) and depth < 3 and kind.__module__ in _STRUCT_MODULES:
        return all(_ambient_value(v, depth + 1) for v in tuple.__iter__(value))
    return isinstance(value, pathlib.PurePath) and kind.__module__ == "pathlib"


class CallOnly:
    """A test's replacement of an ambient function, as the change gets it: called, nothing else.

    The change may call the test's ``time.sleep`` double as its own ``time.sleep``; it may not read or
    set its attributes (a ``MagicMock``'s ``call_count``, ``assert_called_once_with`` or a
    ``return_value`` the test's own ``time.time()`` would then give), nor reach what it wraps.
    """

    __slots__ = ("_pg_target",)

    def __init__(self, target: Callable[..., Any]) -> None:
        object.__setattr__(self, "_pg_target", target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # What the standard library's own function takes and gives (a descriptor, seconds, a path, a
        # struct_time): the change's object handed to the test's double (``self.now += s``) would reach
        # the double's state through its reflected operators, and a test's object given back, its own.
        if not all(_ambient_value(v) for v in (*args, *kwargs.values())):
            raise TypeError("patchgate: a test's stand-in for a standard-library function takes plain values")
        found = object.__getattribute__(self, "_pg_target")(*args, **kwargs)
        # Anything else the double gives (a MagicMock's default return value for time.sleep, which gives
        # None) is None to the change: a test's object is never handed over this way.
        return found if _ambient_value(found) else None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"patchgate: the code under test may not set {name!r} of a test's function")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"patchgate: the code under test may not delete {name!r} of a test's function")


class _Watched(types.ModuleType):
    """A standard-library module of ``AMBIENT_FUNCTIONS`` here: a write of one of them is followed."""

    def __setattr__(self, name: str, value: Any) -> None:
        types.ModuleType.__setattr__(self, name, value)
        if name in AMBIENT_FUNCTIONS.get(self.__name__, ()):
            PATCHES.written(self, name)

    def __delattr__(self, name: str) -> None:
        types.ModuleType.__delattr__(self, name)
        if name in AMBIENT_FUNCTIONS.get(self.__name__, ()):
            PATCHES.written(self, name)


def watch_ambient_functions() -> None:
    """Follow writes to ``AMBIENT_FUNCTIONS`` (their modules become ``_Watched``; never ``sys``, whose
    type the import system uses for every new module)."""
    for module_name, names in AMBIENT_FUNCTIONS.items():
        module = importlib.import_module(module_name)
        for name in names:
            PATCHES.originals.setdefault(f"{module_name}.{name}", vars(module).get(name, _MISSING))
        if type(module) is types.ModuleType:
            module.__class__ = _Watched
    byname.MODULE_TYPES.add(_Watched)  # still the standard library's module, taken there by name


def install(suite_prefix: str) -> None:
    """Follow writes to ``os.environ`` (once per process); the suite's code lives under ``suite_prefix``."""
    ENVIRONMENT.suite_prefix = suite_prefix
    if _INSTALLED:
        return
    _INSTALLED.append(True)
    environ_type = type(os.environ)
    original_set, original_del = environ_type.__setitem__, environ_type.__delitem__

    def setitem(self: Any, key: Any, value: Any) -> None:
        original_set(self, key, value)
        if self is ENVIRONMENT.environ:
            ENVIRONMENT.written(key)

    def delitem(self: Any, key: Any) -> None:
        original_del(self, key)
        if self is ENVIRONMENT.environ:
            ENVIRONMENT.written(key)

    environ_type.__setitem__ = setitem  # type: ignore[method-assign]
    environ_type.__delitem__ = delitem  # type: ignore[method-assign]
    for name in ("chdir", "fchdir"):
        original = getattr(os, name)

        def counted(*args: Any, original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            try:
                return original(*args, **kwargs)
            finally:
                _CHDIRS[0] += 1

        setattr(os, name, counted)
    install_seed_hooks()
    watch_ambient_functions()


# What the grader's process started with for the streams and arguments a test may replace (a CLI
# test's monkeypatch of sys.argv, click's CliRunner swapping sys.stdin): pytest's own never crosses.
_STARTED = {"argv": list(sys.argv), "stdin": sys.stdin}


class _LogLevels:
    """The lowest level a record of the change's may have for any of the test's loggers to take it.

    In one process the change's ``log.debug`` under pytest's default levels makes no record at all, and
    ``isEnabledFor(DEBUG)`` is False; the subject's root logger stands at this floor, so the change makes
    the records some logger of the test's could take (the grader's loggers decide, ``_log``), and asks
    ``isEnabledFor`` of a level the test lets through somewhere. Worked out again only after a level
    changed: ``Logger.setLevel`` and ``logging.disable`` clear the root logger's cache of answers, a mark
    in it included (a level assigned to ``.level`` directly goes unseen, as ``isEnabledFor``'s own cache
    would miss it in one process). The mark is an object of ours, never a level anyone asks about.
    """

    _MARK = object()

    def __init__(self) -> None:
        self._floor = logging.NOTSET

    def floor(self) -> int:
        root = logging.root
        cache = vars(root).get("_cache")
        if isinstance(cache, dict):
            if cache.get(self._MARK) is True:
                return self._floor
            # Marked before the levels are read: a level set while they are read clears it again.
            cache[self._MARK] = True
        manager = logging.Logger.manager
        levels = [root.getEffectiveLevel()]
        loggers = list(manager.loggerDict.values())  # copied in C: no other thread runs meanwhile
        # Any int: a level may be an IntEnum's member, as setLevel takes it.
        levels += [
            int(lg.level) for lg in loggers if isinstance(lg, logging.Logger) and isinstance(lg.level, int)
        ]
        levels = [level for level in levels if level] or [logging.NOTSET]  # NOTSET: a logger that defers
        floor = min(levels)
        disabled = manager.disable
        if isinstance(disabled, int) and disabled >= floor:
            floor = int(disabled) + 1
        self._floor = floor
        return floor

    def add(self, message: dict[str, Any], sent: list[int]) -> None:
        """Put the floor in ``message`` when it is not ``sent[0]``, the last one sent."""
        floor = self.floor()
        if floor != sent[0]:
            message["log_level"], sent[0] = floor, floor


LOG_LEVELS = _LogLevels()


class Outbound:
    """The grader's side: what a request carries besides itself."""

    def __init__(self) -> None:
        self._version = -1
        self._swapped: object = None
        self._sent: dict[str, list[str]] = {}
        self._cwd: str | None = None
        self._chdirs = -1
        self._argv: list[str] | None = None
        self._stdin: object = _STARTED["stdin"]
        self._patches = -1
        self._patched: dict[str, object] = {}
        self._streams: dict[str, object] = {"out": None, "err": None}
        self._seen_streams: tuple[object, object] = (None, None)
        # The log floor last sent (a request's or a callback's answer: a level a callback sets counts
        # before the change logs again, as in one process).
        self.log_floor = [-1]

    def add(self, message: dict[str, Any], encode: Callable[[object], Any]) -> None:
        env = ENVIRONMENT
        swapped = os.environ if os.environ is not env.environ else None
        if env.version != self._version or swapped is not None or self._swapped is not None:
            self._version, self._swapped = env.version, swapped
            delta = env.delta()
            changed = {k: v for k, v in delta.items() if self._sent.get(k) != v}
            changed.update({k: [REVERT] for k in self._sent if k not in delta and self._sent[k] != [REVERT]})
            if changed:
                message["env"] = changed
                self._sent.update(changed)
        # Read again only after a chdir (counted by install()); our own getcwd: a test that patches
        # os.getcwd to see whether the change calls it sees only the change's calls.
        if _CHDIRS[0] != self._chdirs:
            self._chdirs = _CHDIRS[0]
            cwd = _GETCWD()
            if cwd != self._cwd:
                message["cwd"], self._cwd = cwd, cwd
        text = _argv()
        argv = text if text != _STARTED["argv"] else None
        if argv != self._argv:
            message["argv"], self._argv = {"set": argv} if argv is not None else {"revert": True}, argv
        if sys.stdin is not self._stdin:
            self._stdin = sys.stdin
            replaced = sys.stdin is not _STARTED["stdin"]
            message["stdin"] = {"set": encode(sys.stdin)} if replaced else {"revert": True}
        # By identity: this runs with the bridge's lock held, where a value's own __eq__ (a handle's:
        # a request) would wait for that very lock.
        if sys.stdout is not self._seen_streams[0] or sys.stderr is not self._seen_streams[1]:
            self._add_streams(message, encode)
        if PATCHES.version != self._patches:
            self._patches = PATCHES.version
            self._add_patches(message, encode)
        LOG_LEVELS.add(message, self.log_floor)
        if not _SEEDS:
            return
        with _SEED_LOCK:
            seeds, _SEEDS[:] = list(_SEEDS), []
        kept = [
            (n, args) for n, args in seeds if n == "setstate" or all(isinstance(a, _SEEDABLE) for a in args)
        ]
        if kept:
            message["random"] = encode([[name, list(args)] for name, args in kept])

    def _add_streams(self, message: dict[str, Any], encode: Callable[[object], Any]) -> None:
        """A test's own object standing as ``sys.stdout`` or ``sys.stderr`` (never pytest's capture)."""
        self._seen_streams = (sys.stdout, sys.stderr)
        changed: dict[str, Any] = {}
        for key, stream, own in (("out", sys.stdout, sys.__stdout__), ("err", sys.stderr, sys.__stderr__)):
            mine = stream if stream is not own and _suite_class(type(stream)) else None
            if mine is not self._streams[key]:
                self._streams[key] = mine
                changed[key] = {"set": encode(StreamFace(mine))} if mine is not None else {"revert": True}
        if changed:
            message["streams"] = changed

    def _add_patches(self, message: dict[str, Any], encode: Callable[[object], Any]) -> None:
        """Each test-owned ambient function changed since the last request: the test's callable, none,
        or the subject's own again."""
        changed: dict[str, list[Any]] = {}
        for key, value in PATCHES.current().items():
            if key in self._patched and self._patched[key] is value:
                continue
            self._patched[key] = value
            if value is PATCHES.originals.get(key):
                changed[key] = [REVERT]
            elif value is _MISSING:
                changed[key] = [UNSET]
            elif callable(value):
                changed[key] = [SET, encode(CallOnly(value))]
            else:  # a value set in a function's place: a plain one crosses as itself, a test's object never
                changed[key] = [SET, encode(value)] if _ambient_value(value) else [REVERT]
        if changed:
            message["patched"] = changed


def _argv() -> list[str]:
    """``sys.argv`` as text, read without running any object's own code (the bridge's lock is held): a
    string or a standard-library path as itself, a number as its digits, anything else as nothing."""
    found: object = sys.argv
    items: list[object] = list(list.__iter__(found)) if isinstance(found, list) else []
    return [_arg_text(a) for a in items]


def _arg_text(item: object) -> str:
    if type(item) is str:
        return item
    if isinstance(item, pathlib.PurePath) and type(item).__module__ == "pathlib":
        return str(os.fspath(item))
    return repr(item) if type(item) in (int, float) else ""


def _suite_class(cls: type) -> bool:
    """Whether ``cls`` is written in the suite's own files (a test's fake stream), by its module's file.

    Read from this process's own module namespace alone: never a class's ``__module__`` as a metaclass
    answers it, nor a module of the change's, which answers from the subject (a request, and the bridge's
    lock is held here) and could name a suite file whenever it liked.
    """
    prefix = ENVIRONMENT.suite_prefix
    name = type.__dict__["__module__"].__get__(cls) if isinstance(cls, type) else None
    module = sys.modules.get(name) if isinstance(name, str) else None
    if not prefix or type(module) is not types.ModuleType:
        return False
    filename = _MODULE_DICT.__get__(module).get("__file__")
    return isinstance(filename, str) and filename.startswith(prefix)


_MODULE_DICT = vars(types.ModuleType)["__dict__"]


class StreamFace:
    """A test's own stream object standing as ``sys.stdout``, as the change gets it: the stream protocol
    and nothing else (a tee the test wrote holds pytest's capture, with the test's prints, as an
    attribute)."""

    __slots__ = ("_pg_stream",)

    def __init__(self, stream: object) -> None:
        object.__setattr__(self, "_pg_stream", stream)

    def _call(self, name: str, *args: Any) -> Any:
        return getattr(object.__getattribute__(self, "_pg_stream"), name)(*args)

    # Exact strings in, the protocol's own types out: the change's object handed to the test's write
    # (``self.text += s`` would hand the test's buffer to its ``__radd__``), or a test's object handed
    # back (a tee's ``write`` returning itself), would reach past the stream.
    def write(self, text: str) -> int | None:
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        written = self._call("write", text)
        return written if type(written) is int else None

    def writelines(self, lines: Any) -> None:
        texts = list(lines) if type(lines) in (list, tuple) else None
        if texts is None or any(type(t) is not str for t in texts):
            raise TypeError("writelines() argument must be a list of str")
        self._call("writelines", texts)

    def flush(self) -> None:
        self._call("flush")

    def isatty(self) -> bool:
        found = self._call("isatty")
        return found if type(found) is bool else False

    def fileno(self) -> int:
        found = self._call("fileno")
        if type(found) is not int:
            raise io.UnsupportedOperation("fileno")
        return found

    def writable(self) -> bool:
        found = self._call("writable")
        return found if type(found) is bool else True

    @property
    def encoding(self) -> Any:
        found = getattr(object.__getattribute__(self, "_pg_stream"), "encoding", "utf-8")
        return found if isinstance(found, str) else "utf-8"

    @property
    def errors(self) -> Any:
        found = getattr(object.__getattribute__(self, "_pg_stream"), "errors", "strict")
        return found if isinstance(found, str) else "strict"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"patchgate: the code under test may not set {name!r} of a test's stream")


def deliver(
    answer: dict[str, Any],
    decode: Callable[[Any], Any],
    registry: dict[Any, Any],
    restore: Callable[[str], str] = lambda text: text,
) -> None:
    """The grader's side: the request's prints to our streams, its warnings through our filters
    (``restore``: a suite name or file the text or the file gives by alias, itself again)."""
    for stream, key in ((sys.stdout, "out"), (sys.stderr, "err")):
        text = answer.get(key)
        if isinstance(text, str) and text:
            kept = _spend("chars", len(text), MAX_CHARS_PER_TEST)
            if kept:
                stream.write(text[:kept])
    found = answer.get("warnings")
    for w in found[:MAX_WARNINGS] if isinstance(found, list) else []:
        if not isinstance(w, dict):
            continue
        try:
            category = decode(w.get("category"))
        except ValueError:
            continue
        if not (isinstance(category, type) and issubclass(category, Warning)):
            continue
        lineno = w.get("lineno")
        filename, line = restore(str(w.get("filename"))), lineno if isinstance(lineno, int) else 0
        if not filename:  # warned with a stacklevel past the change's code: the test's line that called
            filename, line = _caller()
        message: Any = restore(str(w.get("message")))
        if "same" in w:  # a warning object the test handed over, warned as itself (``record.message is``)
            try:
                same = decode(w["same"])
            except (ValueError, TypeError):
                same = None
            if isinstance(same, category):
                message = same
        warnings.warn_explicit(message, category, filename, line, registry=registry)
    if "logs" in answer:
        _log(answer["logs"])
        cut = answer.get("logs_cut")
        if type(cut) is int and cut > 0:
            logging.getLogger("patchgate").warning("%d more records the code under test logged in one call "
                                                   "were not relayed", cut)  # fmt: skip


def _log(records: object) -> None:
    """The change's records, each handled by the test's logger of its name if the test's levels let it.

    Their text is the change's as it wrote it: a suite name it holds by alias stays the alias (prints
    are relayed so too), or a test that hands ``caplog.text`` back would hand over the real names.
    """
    listed = records[:MAX_RECORDS] if isinstance(records, list) else []
    for found in listed[: _spend("records", len(listed), MAX_RECORDS_PER_TEST)]:
        if not isinstance(found, dict) or type(found.get("levelno")) is not int:
            continue
        fields = {key: found[key] for key, kind in _RECORD_FIELDS.items() if type(found.get(key)) in kind}
        fields.update({k: v[:RECORD_CHARS] for k, v in fields.items() if type(v) is str})
        logger = _logger(fields.pop("name", "root"))
        if not logger.isEnabledFor(fields["levelno"]):
            continue
        record = logging.makeLogRecord({**fields, "name": logger.name, "args": None, "exc_info": None})
        try:
            logger.handle(record)
        except Exception:  # noqa: S112 - a test's handler failing on one record: the next ones still go
            continue


# What one test's calls may relay in all (pytest keeps a test's captured output and records): past it,
# the rest is dropped and one patchgate warning says so.
MAX_RECORDS_PER_TEST = 20_000
MAX_CHARS_PER_TEST = 16_000_000
_SPENT: dict[str, int] = {"records": 0, "chars": 0}
_CUT: list[bool] = [False]


def new_test() -> None:
    """A test begins: its budget of relayed records and printed text is whole again (recorder.py)."""
    _SPENT.update(records=0, chars=0)
    _CUT[0] = False


def _spend(kind: str, wanted: int, budget: int) -> int:
    """How many of ``wanted`` records or characters this test may still relay; says once when cut."""
    left = max(budget - _SPENT[kind], 0)
    granted = min(wanted, left)
    _SPENT[kind] += granted
    if granted < wanted and not _CUT[0]:
        _CUT[0] = True
        logging.getLogger("patchgate").warning("the code under test printed or logged past what one test "
                                               "relays; the rest was dropped")  # fmt: skip
    return granted


# What of a record crosses, as text and numbers, by its type here (``subject/ambient.py``); never ``args``
# or ``exc_info``. A field of another type is left out (pytest's handler formats ``lineno`` with ``%d``).
_TEXT, _WHOLE = (str,), (int,)
_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "name": _TEXT, "levelno": _WHOLE, "levelname": _TEXT, "msg": _TEXT, "pathname": _TEXT, "filename": _TEXT,
    "lineno": _WHOLE, "funcName": _TEXT, "module": _TEXT, "created": (float, int), "exc_text": _TEXT,
    "stack_info": _TEXT,
}  # fmt: skip
# A logger name the change gives: each dotted prefix becomes a logger here (``logging.getLogger``), so
# one is bounded, and so is how many a run makes; past the bound, the change's records go to one logger.
MAX_LOGGER_NAME = 200
MAX_LOGGER_PARTS = 8
MAX_LOGGERS = 512
FOLDED = "patchgate.relayed"
_MADE: set[str] = set()


def _logger(name: object) -> logging.Logger:
    if not isinstance(name, str) or name in ("", "root"):
        return logging.getLogger()
    if len(name) > MAX_LOGGER_NAME or name.count(".") >= MAX_LOGGER_PARTS:
        return logging.getLogger(FOLDED)
    if name not in _MADE:
        if len(_MADE) >= MAX_LOGGERS and name not in logging.Logger.manager.loggerDict:
            return logging.getLogger(FOLDED)
        _MADE.add(name)
    return logging.getLogger(name)


def _caller() -> tuple[str, int]:
    """The innermost frame outside the harness: the test's line whose request warned."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(HARNESS_DIR):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("sys", 0)
