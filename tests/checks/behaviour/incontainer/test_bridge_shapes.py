"""Shapes of real projects' tests through the bridge (bench/isolation.py found each one failing).

A real subject process over a socketpair, as in test_bridge.py; each test
names the project test that showed the shape.
"""

from __future__ import annotations

import datetime
import inspect
import signal
import socket
import subprocess
import sys
import threading
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.incontainer.channel.peer import Peer
from checks.behaviour.incontainer.grader.bridge import Bridge
from checks.behaviour.incontainer.grader.names import Importer
from tests.checks.behaviour.incontainer.test_bridge import start_subject

pytestmark = pytest.mark.slow

Load = Callable[[str], Any]


@contextmanager
def loading(tmp_path: Path, suite_root: str = "") -> Iterator[Load]:
    """Start subjects whose repository holds ``lib.py`` with the given source; each call returns the
    proxy module. With ``suite_root`` the files there are the suite: their names cross as aliases."""
    started: list[tuple[subprocess.Popen[bytes], socket.socket, Importer]] = []

    def start(source: str) -> Any:
        (tmp_path / "lib.py").write_text(source)
        process, mine = start_subject(tmp_path)
        importer = Importer(Bridge(Peer(mine, lambda request: {}), suite_root=suite_root), ["lib", "pkg"])
        sys.meta_path.insert(0, importer)
        started.append((process, mine, importer))
        sys.modules.pop("lib", None)
        import lib  # type: ignore[import-not-found]

        return lib

    try:
        yield start
    finally:
        for process, mine, importer in started:
            sys.meta_path.remove(importer)
            sys.modules.pop("lib", None)
            mine.close()
            process.wait(timeout=30)


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Load]:
    """Start a subject whose repository holds ``lib.py`` with the given source; return the proxy module."""
    with loading(tmp_path) as start:
        yield start


THREADS = '''
import queue, threading

def feed(callback, items):
    """Call back from a thread of our own while the caller waits (more_itertools.callback_iter)."""
    out = queue.Queue()
    def work():
        for item in items:
            out.put(callback(item))
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return [out.get() for _ in items]

def later(callback):
    """Start a thread that calls back after this call returned."""
    done = threading.Event()
    result = []
    def work():
        result.append(callback(21))
        done.set()
    threading.Thread(target=work).start()
    return done, lambda: result

class Once:
    def __init__(self, fn):
        self.fn, self.lock, self.value = fn, threading.Lock(), None
    def __call__(self):
        with self.lock:
            if self.value is None:
                self.value = self.fn()
        return self.value

def nested(callback):
    return feed(lambda x: callback(lambda: x * 10), [1, 2])
'''


def test_a_callback_from_the_changes_own_thread_runs_and_the_channel_holds(load: Load) -> None:
    # more_itertools CallbackIterTests: the channel broke ("an answer arrived out of order").
    lib = load(THREADS)
    seen: list[str] = []

    def callback(item: int) -> int:
        seen.append(threading.current_thread().name)
        return item * 2

    assert lib.feed(callback, [1, 2, 3]) == [2, 4, 6]
    # Served on a thread of the grader, not on the test's thread that happened to be waiting.
    assert threading.main_thread().name not in seen
    done, result = lib.later(lambda x: x * 2)
    assert done.wait(10)
    assert result() == [42]
    # A callback that calls back into the subject, from the subject's thread.
    assert lib.nested(lambda f: f() + 1) == [11, 21]
    assert lib.feed(callback, []) == []


def test_the_tests_own_threads_call_the_change_at_once(load: Load) -> None:
    # boltons test_once_thread_safety: ten threads of the test call one remote function.
    lib = load(THREADS)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 99

    once = lib.Once(compute)
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(once())) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [99] * 10
    assert calls == [1]


class Interrupted(Exception):
    pass


def test_a_request_interrupted_by_the_tests_timeout_leaves_the_channel_working(load: Load) -> None:
    # more_itertools TestRandomOrderedRange::test_lcg_mitigation timed out mid-request; every later
    # test failed ("a request was interrupted before its answer came").
    lib = load("import time\n\ndef nap(s):\n    time.sleep(s)\n    return s\n")

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Interrupted):
            lib.nap(1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The late answer to nap(1) is dropped; the next request gets its own.
    assert lib.nap(0) == 0
    assert [lib.nap(x) for x in (0.01, 0.02)] == [0.01, 0.02]


HOSTILE = '''
import __main__

def ask(target, *args):
    """Send the grader a request of our own making, naming its target however we like."""
    answer = __main__.agent.peer.request({"op": "call", "obj": target, "args": list(args), "kwargs": {}})
    return "raise" in answer, str(answer)[:300]
'''


def test_a_request_may_only_name_a_test_object_it_was_handed(load: Load) -> None:
    import builtins

    lib = load(HOSTILE)
    marker = "import builtins; builtins.PATCHGATE_PWNED = 1"
    for target in (
        {"__type__": "builtin", "name": "exec"},
        {"__type__": "stdlib", "module": "builtins", "qualname": "exec"},
        {"__type__": "obj", "side": "g", "id": 10_000},
        {"__type__": "obj", "side": "s", "id": 1},
        "exec",
    ):
        refused, answer = lib.ask(target, marker)
        assert refused, answer
        assert "may only use a test object it was handed" in answer
    assert not hasattr(builtins, "PATCHGATE_PWNED")


CALLABLES = """
import functools, inspect

def read(obj, name):
    return getattr(obj, name)

def call_without(fn, *args):
    return fn(*args)

def shape(fn):
    sig = inspect.signature(fn)
    return [(p.name, p.kind.name, p.default is not p.empty) for p in sig.parameters.values()]

def default_of(fn, name):
    return repr(inspect.signature(fn).parameters[name].default)

def wrapped(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)
    return wrapper

def tag(fn, pattern):
    fn.pattern = pattern  # parse.with_pattern
    return fn

def set_private(fn):
    fn._seen = True
    return fn._seen

def set_existing(fn):
    fn.__defaults__ = (1, 2)

def defaults(fn):
    return len(fn.__defaults__), sorted(fn.__kwdefaults__)

def use_default(fn):
    return fn.__defaults__[0] + 1
"""


def test_a_test_functions_metadata_and_signature_reach_the_change_never_its_values(load: Load) -> None:
    # boltons.funcutils.wraps, toolz.curry and toolz.memoize read these of a test's function.
    lib = load(CALLABLES)
    expected = 4242

    def check(value: int, want: int = expected, *, strict: bool = True) -> bool:
        """Check the value."""
        return value == want

    for name, value in (("__name__", "check"), ("__doc__", "Check the value."), ("__module__", __name__)):
        assert lib.read(check, name) == value
    assert lib.read(check, "__qualname__").endswith("check")
    for name in ("__globals__", "__closure__", "_private"):
        with pytest.raises(AttributeError, match="may not read"):
            lib.read(check, name)
    # Its defaults as many as there are, each sealed (pluggy's varnames counts them).
    assert lib.defaults(check) == (1, ["strict"])
    with pytest.raises(TypeError, match="unsupported operand"):
        lib.use_default(check)  # no operator of its value: it is sealed
    assert lib.shape(check) == [
        ("value", "POSITIONAL_OR_KEYWORD", False),
        ("want", "POSITIONAL_OR_KEYWORD", True),
        ("strict", "KEYWORD_ONLY", True),
    ]
    # A default is sealed: the change can leave the argument out, never read the value.
    assert lib.call_without(check, expected) is True
    with pytest.raises(TypeError, match="may only use a test object it was handed"):
        lib.default_of(check, "want")
    wrapper = lib.wrapped(check)
    assert (wrapper.__name__, wrapper.__doc__, wrapper(expected)) == ("check", "Check the value.", True)
    assert lib.tag(check, r"\d+") is check
    assert check.pattern == r"\d+"
    # A new attribute of its own it may set and read back (click's __click_params__); one the function
    # already has it may not (its defaults: the test's values).
    assert lib.set_private(check) is True
    with pytest.raises(AttributeError, match="may not set"):
        lib.set_existing(check)


KINDS = """
import inspect

def kinds(fn):
    code = fn.__code__
    return {
        "function": inspect.isfunction(fn), "generator": inspect.isgeneratorfunction(fn),
        "coroutine": inspect.iscoroutinefunction(fn), "asyncgen": inspect.isasyncgenfunction(fn),
        "name": code.co_name, "args": code.co_varnames[:code.co_argcount + code.co_kwonlyargcount],
        "varargs": bool(code.co_flags & inspect.CO_VARARGS), "posonly": code.co_posonlyargcount,
    }

def body(fn):
    code = fn.__code__
    return [c for c in code.co_consts if c is not None], list(code.co_names), code.co_filename

def pager(source):
    # click.echo_via_pager: a generator function is called, anything else iterated.
    if inspect.isgeneratorfunction(source):
        source = source()
    return "".join(source)
"""


def test_a_test_function_s_kind_and_parameters_reach_the_change_never_its_code(load: Load) -> None:
    # click's echo_via_pager(test_generator_function): 18 click tests iterated the function itself.
    lib = load(KINDS)
    secret = "the held-out test's expected value"

    def lines(count=3):
        for i in range(count):
            yield f"{secret[:0]}line {i}\n"

    async def fetch(url, /, retries, *rest, timeout=None):
        return secret

    async def stream():
        yield secret

    def plain(a, b, **more):
        return secret

    for fn in (lines, fetch, stream, plain):
        here = {**lib.kinds(fn)}
        assert here == {  # what one process says of each
            "function": True, "generator": inspect.isgeneratorfunction(fn),
            "coroutine": inspect.iscoroutinefunction(fn), "asyncgen": inspect.isasyncgenfunction(fn),
            "name": fn.__name__,
            "args": fn.__code__.co_varnames[:fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount],
            "varargs": bool(fn.__code__.co_flags & inspect.CO_VARARGS),
            "posonly": fn.__code__.co_posonlyargcount,
        }, fn.__name__  # fmt: skip
        # ...but never the test's code: no constant, no name it uses, not its file.
        consts, names, filename = lib.body(fn)
        assert secret not in str(consts) and "range" not in names and "secret" not in names
        assert filename != __file__
    assert lib.pager(lines) == "line 0\nline 1\nline 2\n"


STANDINS = """
from collections.abc import Mapping

def probe(obj):
    return {
        "callable": callable(obj),
        "iterable": _iterable(obj),
        "sized": hasattr(obj, "__len__"),
        "mapping": isinstance(obj, Mapping),
        "self_iter": _iterable(obj) and iter(obj) is obj,
        "hashable": _hashable(obj),
    }

def _iterable(obj):
    try:
        iter(obj)
    except TypeError:
        return False
    return True

def _hashable(obj):
    try:
        hash(obj)
    except TypeError:
        return False
    return True

def store(obj, key, value):
    obj[key] = value
    del obj["gone"]
    return sorted(dir(obj))[:3]

def same(a, b):
    return a is b

def method_of(fn):
    class Holder:
        kind = "holder"
        f = fn
    return Holder().f()
"""


def test_a_stand_in_offers_what_the_test_objects_type_offers(load: Load) -> None:
    # toolz: juxt(generator), isiterable(NotIterable()), merge_with(fn, CustomMapping) and
    # isdistinct(iter(...)) each asked a stand-in that offered everything.
    from collections.abc import Mapping

    lib = load(STANDINS)

    class Table(Mapping[str, int]):
        def __init__(self) -> None:
            self.d = {"a": 1, "gone": 2}

        def __getitem__(self, key: str) -> int:
            return self.d[key]

        def __setitem__(self, key: str, value: int) -> None:
            self.d[key] = value

        def __delitem__(self, key: str) -> None:
            del self.d[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self.d)

        def __len__(self) -> int:
            return len(self.d)

    class NotIterable:
        __iter__ = None

        def __getitem__(self, i: int) -> int:
            return i

    def generator() -> Iterator[int]:
        yield 1

    it = iter([1, 2])
    assert lib.probe(it) == {"callable": False, "iterable": True, "sized": False, "mapping": False,
                             "self_iter": True, "hashable": True}  # fmt: skip
    assert lib.probe(generator())["callable"] is False
    assert lib.probe(len)["callable"] is True
    assert lib.probe(NotIterable())["iterable"] is False
    table = Table()
    assert lib.probe(table)["mapping"] is True
    assert lib.probe([{}] and {"x": 1})["mapping"] is True  # a plain dict crosses by value
    assert lib.probe(type("Unhashable", (), {"__hash__": None})())["hashable"] is False
    assert lib.store(table, "b", 2) == ["d", "get", "items"]
    assert table.d == {"a": 1, "b": 2}
    assert lib.same(table, table) is True
    # A test's function kept on a class of the change's binds as a method, as in one process.
    assert lib.method_of(lambda self: self.kind) == "holder"


LIBRARY = '''
"""A library."""
import collections, copy, functools, json, os

__version__ = "1.2"

class curry:
    """Curry a function."""
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args
    def __call__(self, *args):
        return self.fn(*self.args, *args)
    def __get__(self, instance, owner=None):
        return self if instance is None else curry(self.fn, instance)
    def __reduce__(self):
        return curry, (self.fn, *self.args)

def numbers():
    yield 1

def table():
    return collections.defaultdict(int, a=1)

def kind():
    return collections.defaultdict

def grouped():
    return collections.namedtuple("Pair", "left right")(1, 2)

class BarrelList(list):
    def lists(self):
        return [list(self)]

def barrel():
    return BarrelList([1, 2])

class Peekable:
    def __init__(self, items):
        self.items = items
    def __getitem__(self, index):
        return self.items[index]

def cyclic():
    x = [1]
    x.append(x)
    return x

def length(x):
    return len(x)

class AbortThread(BaseException):
    pass

def abort():
    raise AbortThread("canceled by user")

def handle(fn, handler):
    try:
        return fn()
    except Exception as exc:
        return handler(exc)

def bad_json():
    return json.loads("{")

def is_partial(cls):
    return cls is functools.partial

def evaluator():
    return eval

def where():
    return os.getpid()

def calls_nothing():
    return 1
'''


def test_a_handle_offers_what_the_subjects_type_offers(load: Load) -> None:
    lib = load(LIBRARY)
    gen = lib.numbers()
    assert not callable(gen)
    assert not hasattr(gen, "__len__")
    assert callable(lib.numbers)
    assert list(gen) == [1]

    # toolz: @curry on a test's method binds, as it does in one process.
    class Adder:
        base = 10

        @lib.curry
        def add(self, x: int) -> int:
            return self.base + x

    assert Adder().add(5) == 15
    assert (lib.curry.__doc__, lib.curry.__module__) == ("Curry a function.", "lib")
    assert lib.__doc__ == "A library."
    assert lib.__version__ == "1.2"


def test_handles_pickle_and_copy_in_the_subject(load: Load) -> None:
    # toolz test_serialization, boltons test_omd_pickle and copy: the object is pickled there, the grader
    # never unpickles anything of the subject's.
    import copy
    import pickle

    lib = load(LIBRARY)
    curried = lib.curry(max, 3)
    again = pickle.loads(pickle.dumps(curried))  # noqa: S301 - our own stream, loaded in the subject
    assert again(1) == 3
    assert pickle.loads(pickle.dumps(lib.length)) is lib.length  # noqa: S301
    assert copy.copy(curried)(5) == 5
    assert copy.deepcopy(curried)(2) == 3
    # The stream names patchgate's loader and carries the subject's bytes: nothing else runs here.
    assert b"_unpickle" in pickle.dumps(curried)


def test_monkeypatch_of_a_module_attribute_is_undone(load: Load, monkeypatch: pytest.MonkeyPatch) -> None:
    # parse: monkeypatch.setattr(parse, "datetime", Frozen) read the module's local __dict__, found
    # nothing and deleted parse.datetime at teardown.
    lib = load(LIBRARY)
    original = lib.calls_nothing
    with monkeypatch.context() as patch:
        patch.setattr(lib, "calls_nothing", lambda: 2)
        assert lib.calls_nothing() == 2
    assert lib.calls_nothing is original
    assert "calls_nothing" in lib.__dict__
    assert lib.calls_nothing() == 1


def test_values_keep_their_shape(load: Load) -> None:
    import collections

    lib = load(LIBRARY)
    pair = lib.grouped()
    assert (pair.left, pair.right, pair, type(pair).__name__) == (1, 2, (1, 2), "Pair")
    assert pickle_roundtrip(pair) == (1, 2)
    # A standard-library class is the grader's own; a list subclass with methods stays a handle.
    assert type(lib.table()) is dict  # a defaultdict crosses as its base value, as before
    assert lib.kind() is collections.defaultdict
    barrel = lib.barrel()
    assert barrel.lists() == [[1, 2]]
    assert list(barrel) == [1, 2]
    # more_itertools peekable[1:3], parse Result[0:2]: a slice crosses by value.
    assert lib.Peekable([1, 2, 3, 4])[1:3] == [2, 3]
    assert lib.Peekable("abcd")[::-2] == "db"
    # A cyclic value is a handle; the identities inside it hold.
    cyclic = lib.cyclic()
    assert cyclic[1] is cyclic
    assert lib.length(cyclic) == 2
    mine: list[object] = [1]
    mine.append(mine)
    assert lib.length(mine) == 2


def pickle_roundtrip(value: object) -> object:
    import pickle

    return pickle.loads(pickle.dumps(value))  # noqa: S301 - the grader's own value


def test_exceptions_cross_as_what_they_are(load: Load) -> None:
    import json

    lib = load(LIBRARY)
    # more_itertools.AbortThread derives from BaseException: mirrored, not a RuntimeError.
    with pytest.raises(lib.AbortThread, match="canceled by user"):
        lib.abort()
    # A standard-library exception is the grader's own class.
    with pytest.raises(json.JSONDecodeError):
        lib.bad_json()
    # toolz.excepts: the handler gets the test's own exception back, and the change's as its mirror.
    mine = ValueError("mine")

    def fail() -> None:
        raise mine

    assert lib.handle(fail, lambda exc: exc) is mine
    seen = lib.handle(lib.bad_json, lambda exc: exc)
    assert isinstance(seen, json.JSONDecodeError)


def test_the_standard_library_crosses_by_name_and_code_runners_never_come_back(load: Load) -> None:
    import functools
    import os

    lib = load(LIBRARY)
    assert lib.is_partial(functools.partial) is True
    # eval returned by the change is a handle: calling it evaluates in the subject, never here.
    evaluator = lib.evaluator()
    assert evaluator is not eval
    assert evaluator("__import__('os').getpid()") == lib.where() != os.getpid()


STREAMS = """
import io, pathlib, queue, subprocess

StringIO, BytesIO, Queue, SimpleQueue = io.StringIO, io.BytesIO, queue.Queue, queue.SimpleQueue
FileIO, Path, Popen = io.FileIO, pathlib.Path, subprocess.Popen

def print_(*args, file):
    file.write(" ".join(args) + "\\n")
    file.flush()
"""


def test_in_memory_streams_and_queues_are_the_grader_s_own_classes_and_nothing_that_reaches_a_path(
    load: Load,
) -> None:
    import io
    import pathlib
    import queue
    import subprocess

    lib = load(STREAMS)
    # six.StringIO, six.moves.queue: a test subclasses them and checks they are classes.
    assert (lib.StringIO, lib.BytesIO, lib.Queue, lib.SimpleQueue) == (
        io.StringIO, io.BytesIO, queue.Queue, queue.SimpleQueue,
    )  # fmt: skip

    class Flushable(lib.StringIO):  # type: ignore[misc, name-defined]
        flushed = False

        def flush(self) -> None:
            self.flushed = True

    out = Flushable()
    lib.print_("Hello", file=out)
    assert out.getvalue() == "Hello\n" and out.flushed
    # Hostile: a class that opens a path or runs a program stays the subject's, called there.
    for theirs, ours in ((lib.FileIO, io.FileIO), (lib.Path, pathlib.Path), (lib.Popen, subprocess.Popen)):
        assert theirs is not ours and not isinstance(theirs, type(ours))


def test_the_harness_calls_none_of_the_tests_patched_functions(
    load: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    # boltons test_scrub_does_not_read_the_cwd patches os.getcwd and counts the calls.
    import os

    lib = load(LIBRARY)
    calls: list[str] = []
    real = os.getcwd

    def getcwd() -> str:
        calls.append("getcwd")
        return real()

    monkeypatch.setattr(os, "getcwd", getcwd)
    assert lib.calls_nothing() == 1
    assert calls == []


def test_a_forked_child_of_the_grader_fails_at_once_instead_of_hanging(load: Load) -> None:
    # toolz test_fold: a multiprocessing pool forks the grader; a child has our socket, not our reader.
    import os

    lib = load(LIBRARY)
    assert lib.calls_nothing() == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            lib.calls_nothing()
            os.write(write, b"answered")
        except Exception as exc:
            os.write(write, type(exc).__name__.encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 100) == b"SubjectGone"
    os.close(read)
    assert lib.calls_nothing() == 1


AMBIENT = """
import random, warnings

class LibraryWarning(UserWarning):
    pass

def old():
    warnings.warn("old() is deprecated", DeprecationWarning, stacklevel=2)
    warnings.warn("and odd", LibraryWarning)
    return 1

def draws(n):
    return [random.random() for _ in range(n)]

def warn_as_is(warning):
    warnings.warn(warning)
"""


def test_the_changes_warnings_reach_the_tests_filters(load: Load) -> None:
    # toolz test_compat_warn: pytest.warns(DeprecationWarning) around the change's call saw nothing.
    lib = load(AMBIENT)
    with pytest.warns(DeprecationWarning, match="deprecated"), pytest.warns(lib.LibraryWarning):
        assert lib.old() == 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning):
            lib.old()


def test_a_warning_past_the_change_points_at_the_test_s_line_and_a_test_s_warning_is_itself(
    load: Load,
) -> None:
    # pluggy: stacklevel=2 from the library names the test's line (one process: the caller's frame,
    # here the harness's); a test's own warning object warned by the library is that object.
    import warnings

    lib = load(AMBIENT)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        lib.old()
        line = sys._getframe().f_lineno - 1
    (record,) = [r for r in records if r.category is DeprecationWarning]
    assert (record.filename, record.lineno) == (__file__, line)
    mine = DeprecationWarning("the test's own")
    with pytest.warns(DeprecationWarning, match="the test.s own") as again:
        lib.warn_as_is(mine)
    assert again[0].message is mine


def test_the_tests_random_seed_reaches_the_change_and_nothing_comes_back(load: Load) -> None:
    # more_itertools SampleTests: seed(0) in the test, then mi.sample() drew from an unseeded generator.
    import random

    lib = load(AMBIENT)
    random.seed(1234)
    first = lib.draws(3)
    random.seed(1234)
    assert first == [random.random() for _ in range(3)]  # noqa: S311 - a test's draws
    # The change's draws never move the test's generator: only the test's own seeds travel.
    random.seed(99)
    mine = random.getstate()
    lib.draws(5)
    assert random.getstate() == mine
    assert lib.draws(1) != lib.draws(1)


UNTIL = """
def until(fn, errors):
    out = []
    try:
        while True:
            out.append(fn())
    except errors as exc:
        return out, exc
"""


def test_the_changes_except_catches_a_test_exception_class(load: Load) -> None:
    # more_itertools.iter_except(fizbuzz, (Fiz, Buzz)): the test's classes were stand-ins the change's
    # `except` could not use.
    lib = load(UNTIL)

    class Fiz(Exception):
        pass

    class Buzz(Fiz):
        pass

    count = iter(range(10))

    def fizbuzz() -> int:
        i = next(count)
        if i == 3:
            raise Buzz("three")
        return i

    out, exc = lib.until(fizbuzz, (KeyError, Fiz))
    assert out == [0, 1, 2]
    assert type(exc) is Buzz  # the test's own exception, back


def test_a_handle_collected_late_releases_only_what_it_saw(load: Load) -> None:
    # more_itertools TestSubfactorial: "no object number 54032" - a handle in a reference cycle was
    # finalized after a newer handle for the same object had arrived, and released the object.
    import gc

    lib = load("class Box:\n    pass\n\nBOX = Box()\n\ndef box():\n    return BOX\n")
    first = lib.box()
    bridge = object.__getattribute__(first, "_pg_bridge")
    number = object.__getattribute__(first, "_pg_id")
    del bridge.handles[number]  # as when the collector has cleared the weak reference, not yet finalized
    second = lib.box()
    assert second is not first
    del first
    gc.collect()
    second.label = "still there"
    assert second.label == "still there"


CACHING = '''
class cachedproperty:
    """boltons.cacheutils.cachedproperty: caches on the instance's __dict__."""
    def __init__(self, func):
        self.func = func
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        value = obj.__dict__[self.func.__name__] = self.func(obj)
        return value

def names(obj):
    return sorted(obj.__dict__)

def peek(obj, name):
    return obj.__dict__[name]

def as_int(obj):
    return int(obj), float(obj)

def cached_on(obj, value):
    # cachetools' cachedmethod: state of its own under a private name in the instance's __dict__.
    return obj.__dict__.setdefault("__cachetools_cachedmethods", value)

def overwrite(obj, name):
    obj.__dict__[name] = "the change's"
'''


def test_a_test_objects_dict_is_its_public_names_only(load: Load) -> None:
    lib = load(CACHING)
    calls: list[int] = []

    class Proper:
        def __init__(self) -> None:
            self._secret = 4242
            self.shown = 1

        @lib.cachedproperty
        def useful(self) -> int:
            calls.append(1)
            return 7

    proper = Proper()
    assert (proper.useful, proper.useful, calls) == (7, 7, [1])
    assert lib.names(proper) == ["shown", "useful"]
    with pytest.raises(KeyError):
        lib.peek(proper, "_secret")
    # A private name of its own it may put there and read back; the test's own it may not overwrite.
    assert (lib.cached_on(proper, 1), lib.cached_on(proper, 2)) == (1, 1)
    assert "__cachetools_cachedmethods" in vars(proper)
    assert lib.names(proper) == ["__cachetools_cachedmethods", "shown", "useful"]
    with pytest.raises(KeyError, match="may not set"):
        lib.overwrite(proper, "_secret")
    assert proper._secret == 4242

    class Number:
        def __int__(self) -> int:
            return 3

        def __float__(self) -> float:
            return 3.5

    # more_itertools IsSortedTests: key=int over a test's objects.
    assert lib.as_int(Number()) == (3, 3.5)


MEETING = '''
import threading

ROOM = threading.Barrier(2, timeout=10)

def meet():
    return ROOM.wait() in (0, 1)

class named:
    """boltons InstancePartial: a descriptor that learns its name from the class it is put on."""
    name = None
    def __set_name__(self, owner, name):
        self.name = name
    def __get__(self, instance, owner=None):
        return self.name

class abstract:
    def __init__(self, func):
        self.func = func
    @property
    def __isabstractmethod__(self):
        return getattr(self.func, "__isabstractmethod__", False)
'''


def test_calls_from_the_tests_threads_run_at_once_in_the_subject(load: Load) -> None:
    # boltons socketutils: a server thread of the test and the test itself both in the change's code,
    # each waiting for the other; the subject served one request at a time and both timed out.
    lib = load(MEETING)
    results: list[bool] = []
    other = threading.Thread(target=lambda: results.append(lib.meet()))
    other.start()
    results.append(lib.meet())
    other.join(15)
    assert results == [True, True]


def test_more_of_the_tests_threads_than_a_pool_meet_inside_the_changes_code(load: Load) -> None:
    # cachetools test_cached_lock: ten threads of the test call the change's wrapper, whose callback
    # (the test's function) waits at a barrier for all ten. The subject served eight at once: two
    # calls waited for a thread that never came, and the barrier broke after its timeout.
    lib = load("def call(f):\n    return f()\n")
    threads_n = 12
    barrier = threading.Barrier(threads_n, timeout=20)
    results: list[int] = []

    def meet() -> int:
        return barrier.wait()

    threads = [threading.Thread(target=lambda: results.append(lib.call(meet))) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not barrier.broken
    assert sorted(results) == list(range(threads_n))


def test_a_descriptor_of_the_change_learns_its_name_and_abstractness_from_a_tests_class(load: Load) -> None:
    # boltons InstancePartial (__set_name__) and cachedmethod over an abstractmethod (__isabstractmethod__).
    import abc

    lib = load(MEETING)

    class Greeter:
        greet = lib.named()

    assert Greeter().greet == "greet"

    class Car(abc.ABC):
        @lib.abstract
        @abc.abstractmethod
        def hand(self) -> None: ...

    with pytest.raises(TypeError, match="abstract"):
        Car()  # type: ignore[abstract]


def test_a_submodule_read_off_its_package_is_the_imported_one(load: Load, tmp_path: Path) -> None:
    # toolz test_tlz (m1 is m2, __package__) and test_compat_warn (importlib.reload warns again).
    import importlib

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from . import sub\n")
    (tmp_path / "pkg" / "sub.py").write_text("import warnings\nwarnings.warn('loaded', DeprecationWarning)\n")
    load("")
    with pytest.warns(DeprecationWarning, match="loaded"):
        import pkg  # type: ignore[import-not-found]

    early = pkg.sub
    import pkg.sub as imported  # type: ignore[import-not-found]  # written to tmp_path just above

    try:
        assert early is imported
        assert (pkg.__package__, imported.__package__) == ("pkg", "pkg")
        with pytest.warns(DeprecationWarning, match="loaded"):
            importlib.reload(imported)
    finally:
        for name in ("pkg", "pkg.sub"):
            sys.modules.pop(name, None)


INPLACE = """
class Frozen(dict):
    def __ior__(self, other):
        raise TypeError("a Frozen cannot change")

class Bag:
    def __init__(self):
        self.items = []
    def __iadd__(self, more):
        self.items.extend(more)
        return self
"""


def test_an_in_place_operator_is_the_objects_own(load: Load) -> None:
    # boltons test_frozendict_ior: without __ior__ on the handle, `fd |= x` fell back to `fd = fd | x`.
    lib = load(INPLACE)
    frozen = lib.Frozen(a=1)
    with pytest.raises(TypeError, match="cannot change"):
        frozen |= {"b": 2}
    bag = original = lib.Bag()
    bag += [1, 2]
    assert bag is original
    assert bag.items == [1, 2]


CURRY = '''
class curry:
    """ Curry a callable function """
    def __init__(self, func):
        self.func = func
        self.__doc__ = getattr(func, "__doc__", None)

    def __call__(self, *args):
        return self.func(*args)
'''


def test_an_instance_s_own_docstring_is_the_subject_s_word(load: Load) -> None:
    # toolz's curry sets the curried function's docstring on itself: the local class's docstring
    # answers on the class only.
    lib = load(CURRY)

    def f(x: int) -> int:
        """A docstring"""
        return x

    g = lib.curry(f)
    assert (g.__doc__, g(3)) == ("A docstring", 3)
    assert lib.curry.__doc__ == " Curry a callable function "


PATCHED = """
class Shell:
    @staticmethod
    def _check_version():
        raise RuntimeError("no such shell here")

    @classmethod
    def name(cls):
        return "shell:" + cls.__name__

    def complete(self):
        self._check_version()
        return "completed"

def restored():
    return type(Shell.__dict__["_check_version"]).__name__, type(Shell.__dict__["name"]).__name__
"""


def test_patching_a_library_class_s_static_method_twice_puts_it_back_each_time(load: Load) -> None:
    # click's _patch_for_completion fixture: monkeypatch.setattr("...BashComplete._check_version", ...)
    # in each of 9 tests. monkeypatch reads Cls.__dict__ to know what to restore; a library's class's
    # namespace here lacked the static method, so the first undo deleted it and the next 8 errored.
    from unittest import mock

    lib = load(PATCHED)
    for _ in range(2):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("lib.Shell._check_version", lambda self: None)  # click's own
            assert lib.Shell().complete() == "completed"
        assert lib.restored() == ("staticmethod", "classmethod")
        with pytest.raises(RuntimeError, match="no such shell"):
            lib.Shell().complete()

    # mock.patch.object reads the same namespace, and puts back the static method itself.
    def quiet(self: object) -> None:
        return None

    with mock.patch.object(lib.Shell, "_check_version", quiet):
        assert lib.Shell().complete() == "completed"
    assert lib.restored() == ("staticmethod", "classmethod")
    assert "_check_version" in lib.Shell.__dict__ and "complete" in lib.Shell.__dict__

    # A test's own subclass keeps its own namespace.
    class Quiet(lib.Shell):  # type: ignore[misc, name-defined]
        @staticmethod
        def _check_version() -> None:
            return None

    assert set(Quiet.__dict__) >= {"_check_version"} and "complete" not in Quiet.__dict__
    assert Quiet().complete() == "completed"
    assert Quiet.name() == "shell:Quiet"


WRAPPER = """
class Curry:
    '''Curry a function.'''

    def __init__(self, module):
        self.__module__ = module  # toolz.curry: the module of the function it wraps
"""


def test_an_instance_s_own_module_is_the_subject_s_word_and_the_class_keeps_its_own(load: Load) -> None:
    # toolz test_curry_module and test_curry_attributes_writable: the class's __module__ shadowed it.
    lib = load(WRAPPER)
    curried = lib.Curry("toolz.curried.exceptions")
    assert curried.__module__ == "toolz.curried.exceptions"
    curried.__module__ = "newmodule"
    assert curried.__module__ == "newmodule"
    assert lib.Curry.__module__ == type(curried).__module__ == "lib"
    assert lib.Curry.__doc__ == "Curry a function."
    assert type(lib.Curry).__name__ == "RemoteClass"


DOCTESTED = '''
__version__ = "1.0"

def add(a, b):
    """Add two numbers.

    >>> add(1, 2)
    3
    """
    return a + b
'''


def test_a_module_s_doctests_run_against_the_change(load: Load) -> None:
    # toolz's test_curried_doctests: doctest copies module.__dict__ for the examples' globals.
    import doctest

    lib = load(DOCTESTED)
    namespace = vars(lib).copy()
    assert type(namespace) is dict and namespace["add"] is lib.add
    lib.__test__ = {"more": ">>> 2 + 2\n4\n"}  # toolz names more doctests, then removes them
    assert doctest.testmod(lib) == (0, 2)
    del lib.__test__
    assert not hasattr(lib, "__test__")
    assert doctest.testmod(lib) == (0, 1)
    # A dunder of the module's own, not set here, is the subject's to delete.
    del lib.__version__
    assert not hasattr(lib, "__version__")


KEYWORDS = """
def keywords(**kwargs):
    return sorted(kwargs.items())

class Made:
    def __init__(self, /, **kwargs):
        self.kwargs = kwargs

    def method(self, /, **kwargs):
        return sorted(kwargs.items())

def call_back(callback):
    return callback(self=1, cls=2)
"""


def test_a_keyword_named_self_or_cls_reaches_the_callee_both_ways(load: Load) -> None:
    # cachetools' test_self_keyword: wrapper(self=1) on the change's function.
    lib = load(KEYWORDS)
    assert lib.keywords(self=1, cls=2) == [("cls", 2), ("self", 1)]
    assert lib.Made(self=1).kwargs == {"self": 1}
    assert lib.Made().method(self=3) == [("self", 3)]
    assert lib.call_back(lambda **kwargs: sorted(kwargs)) == ["cls", "self"]


CHAINED = """
class ParseError(Exception):
    pass

def parse(text):
    try:
        return int(text)
    except ValueError as exc:
        raise ParseError(text) from exc

def quiet(mapping):
    try:
        return mapping["missing"]
    except KeyError:
        raise LookupError("not there") from None

def looped():
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    raise a
"""


def test_an_exception_s_cause_and_suppressed_context_reach_the_test(load: Load) -> None:
    # cachetools' test_popitem_exception_context; pytest.raises(...).value.__cause__ in many suites.
    lib = load(CHAINED)
    with pytest.raises(lib.ParseError) as caught:
        lib.parse("x")
    assert isinstance(caught.value.__cause__, ValueError) and caught.value.__suppress_context__
    with pytest.raises(LookupError) as quiet:
        lib.quiet({})
    assert quiet.value.__cause__ is None and quiet.value.__suppress_context__
    with pytest.raises(ValueError, match="a") as looped:  # a cycle of causes: a few links, no more
        lib.looped()
    links = 0
    cause: BaseException | None = looped.value
    while cause is not None:
        links, cause = links + 1, cause.__cause__
    assert 1 < links <= 5


CLASS_NAMESPACE = """
class Descriptor:
    # cachetools' cachedmethod: it finds itself again through its owner's namespace when copied.
    def __set_name__(self, owner, name):
        self.owner, self.name = owner, name

    def __get__(self, obj, objtype=None):
        return self

    def found_again(self):
        return self.owner.__dict__[self.name] is self

def names_of(cls):
    return sorted(cls.__dict__)

def write(cls, name):
    try:
        cls.__dict__[name] = "written by the change"
    except Exception as exc:
        return type(exc).__name__
    return "written"

def read(cls, name):
    try:
        return cls.__dict__[name]
    except KeyError:
        return "KeyError"

def seen_reversed(cls, name):
    return cls.__dict__[name][::-1]

def attribute_reversed(cls, name):
    return getattr(cls, name)[::-1]
"""


def test_a_test_class_s_namespace_is_readable_public_and_read_only(load: Load) -> None:
    lib = load(CLASS_NAMESPACE)

    class Owner:
        method = lib.Descriptor()
        public = "shown"
        _private = "hidden"

    assert Owner.method.found_again() is True
    # Its module (as its alias) and docstring, as the class's namespace holds them; no private name.
    assert lib.names_of(Owner) == ["__doc__", "__module__", "method", "public"]
    assert lib.read(Owner, "__module__") == __name__  # the alias restored on the way back
    # What the change saw there is what getattr gives it (a suite module's alias, where aliased).
    assert lib.seen_reversed(Owner, "__module__") == lib.attribute_reversed(Owner, "__module__")
    assert lib.read(Owner, "public") == "shown" and lib.read(Owner, "_private") == "KeyError"
    # Hostile: the change may not change a test class through its namespace.
    assert lib.write(Owner, "public") == "TypeError" and lib.write(Owner, "__eq__") == "TypeError"
    assert Owner.public == "shown" and "__eq__" not in vars(Owner)


VALUE_ARITHMETIC = """
class Token(str):
    def __add__(self, other):
        return Token(str.__add__(self, other))

    def __radd__(self, other):
        return Token(str.__add__(other, self))

    def render(self):
        return '"' + str(self) + '"'

class Count(int):
    def __add__(self, other):
        return Count(int(self) + other)

    def __neg__(self):
        return Count(-int(self))

    def render(self):
        return f"+{int(self)}" if self > 0 else str(int(self))

def token(text):
    return Token(text)

def count(n):
    return Count(n)
"""


def test_a_value_subclass_s_own_arithmetic_is_the_change_s(load: Load) -> None:
    # tomlkit's String/Integer: `i += " bar"` keeps an item (its as_string()), as in one process.
    lib = load(VALUE_ARITHMETIC)
    text = lib.token("foo")
    text += " bar"
    assert text == "foo bar" and text.render() == '"foo bar"'
    assert ("x" + lib.token("y")).render() == '"xy"'
    number = lib.count(1) + 2
    assert number == 3 and number.render() == "+3" and (-number).render() == "-3"


TZ = """
import datetime

class Utc(datetime.tzinfo):
    def utcoffset(self, dt):
        return datetime.timedelta(0)

    def tzname(self, dt):
        return "UTC"

    def dst(self, dt):
        return datetime.timedelta(0)

class Fixed(datetime.tzinfo):
    def __init__(self, hours):
        self.hours = hours

    def utcoffset(self, dt):
        return datetime.timedelta(hours=self.hours)

    def tzname(self, dt):
        return f"FIXED{self.hours:+d}"

    def dst(self, dt):
        return None

UTC = Utc()

def stamp():
    return datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)

def offset_of(value):
    return [value.utcoffset(), value.tzname(), value.tzinfo is UTC]

def at(hours):
    return datetime.datetime(2020, 1, 1, 12, tzinfo=Fixed(hours))
"""


def test_the_change_s_tzinfo_is_a_tzinfo_for_the_test_s_datetimes(load: Load) -> None:
    # isodate's test modules build datetime(..., tzinfo=isodate.UTC) at import: isolated, a TypeError
    # ("tzinfo argument must be None or of a tzinfo subclass") took out three modules.
    lib = load(TZ)
    utc = datetime.UTC
    mine = datetime.datetime(2012, 1, 1, tzinfo=lib.UTC)
    assert isinstance(lib.UTC, datetime.tzinfo)
    assert (mine.utcoffset(), mine.tzname(), mine.isoformat()) == (
        datetime.timedelta(0), "UTC", "2012-01-01T00:00:00+00:00",
    )  # fmt: skip
    # The change's datetimes come back with its own tzinfo object, the test's go to it with it.
    stamp = lib.stamp()
    assert stamp.tzinfo is lib.UTC and stamp == datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=utc)
    assert lib.offset_of(mine) == [datetime.timedelta(0), "UTC", True]
    later = lib.at(2)
    assert later.tzname() == "FIXED+2" and later == datetime.datetime(2020, 1, 1, 10, tzinfo=utc)
    assert lib.offset_of(datetime.time(1, 2, tzinfo=lib.UTC))[1:] == ["UTC", True]

    class Plus3(datetime.tzinfo):
        def utcoffset(self, dt: object) -> datetime.timedelta:
            return datetime.timedelta(hours=3)

        def dst(self, dt: object) -> None:
            return None

        def tzname(self, dt: object) -> str:
            return "P3"

    # A test's own tzinfo still goes by the offset it gives.
    assert lib.offset_of(datetime.datetime(2020, 1, 1, tzinfo=Plus3()))[0] == datetime.timedelta(hours=3)


METACLASSES = r"""
import enum, sys, types

def add_metaclass(metaclass):
    # six.add_metaclass: the class rebuilt by its metaclass from what it reads of it.
    def wrapper(cls):
        orig_vars = cls.__dict__.copy()
        slots = orig_vars.get("__slots__")
        if slots is not None:
            for slots_var in [slots] if isinstance(slots, str) else slots:
                orig_vars.pop(slots_var)
        orig_vars.pop("__dict__", None)
        orig_vars.pop("__weakref__", None)
        orig_vars["__qualname__"] = cls.__qualname__
        return metaclass(cls.__name__, cls.__bases__, orig_vars)
    return wrapper

def with_metaclass(meta, *bases):
    # six.with_metaclass: a temporary class whose metaclass hands the class statement to ``meta``.
    class metaclass(type):
        def __new__(cls, name, this_bases, d):
            resolved_bases = types.resolve_bases(bases)
            if resolved_bases is not bases:
                d["__orig_bases__"] = bases
            return meta(name, resolved_bases, d)

        @classmethod
        def __prepare__(cls, name, this_bases):
            return meta.__prepare__(name, bases)
    return type.__new__(metaclass, "temporary_class", (), {})

class Choice(enum.Enum):
    # A library's enum base a test's enum derives from (the metaclass prepares the body's namespace).
    def describe(self):
        return f"{type(self).__name__}.{self.name}={self.value}"

class Recorded(dict):
    pass

class Recording(type):
    # A metaclass that keeps every name and value a class body binds.
    @classmethod
    def __prepare__(mcs, name, bases):
        return Recorded()

    def __new__(mcs, name, bases, namespace):
        cls = super().__new__(mcs, name, bases, dict(namespace))
        cls.bound = sorted(f"{k}={v!r}" for k, v in namespace.items())
        return cls

class Recorder(metaclass=Recording):
    pass

def structure(cls):
    return [b.__name__ for b in cls.__bases__], [k.__name__ for k in cls.__mro__], sorted(vars(cls))

def bound_reversed(cls):
    return " ".join(cls.bound)[::-1]
"""


def test_a_library_rebuilds_a_test_s_class_with_a_metaclass(load: Load) -> None:
    lib = load(METACLASSES)

    class Meta(type):
        pass

    class Base:
        b = "b"

    class Plain(Base):
        "success"

        def method(self) -> str:
            return "method"

    # six.add_metaclass: what the change reads of the test's class is the class as the test wrote it
    # (its bases, its namespace: no machinery of ours), and the test's metaclass makes the class.
    names = ["__doc__", "__module__", "method"]
    assert lib.structure(Plain) == (["Base"], ["Plain", "Base", "object"], names)
    made = lib.add_metaclass(Meta)(Plain)
    assert type(made) is Meta and made.__bases__ == (Base,)
    assert made.__module__ == __name__ and made.__doc__ == "success"
    assert made.__qualname__ == Plain.__qualname__
    assert made().method() == "method" and made().b == "b"

    class Slotted:
        __slots__ = ["a", "b"]

    made = lib.add_metaclass(Meta)(Slotted)
    assert made.__slots__ == ["a", "b"]
    instance = made()
    instance.a = "foo"
    with pytest.raises(AttributeError):
        instance.c = "bar"


def test_a_test_s_class_statement_is_the_change_s_metaclass_s_to_make(load: Load) -> None:
    lib = load(METACLASSES)

    class Meta(type):
        pass

    class Base:
        pass

    class Made(lib.with_metaclass(Meta, Base)):  # type: ignore[misc]
        def method(self) -> object:
            return __class__  # type: ignore[name-defined]  # the class cell: the class the statement gave

    assert type(Made) is Meta and Made.__mro__ == (Made, Base, object)
    assert Made().method() is Made

    class Namespace(dict):
        pass

    class Preparing(type):
        @classmethod
        def __prepare__(mcs, name: str, bases: tuple[type, ...]) -> Namespace:  # type: ignore[override]
            namespace = Namespace(super().__prepare__(name, bases), cls=mcs, bases=bases)
            namespace["namespace"] = namespace
            return namespace

    class Prepared(lib.with_metaclass(Preparing, Base)):  # type: ignore[misc]
        pass

    assert Prepared.cls is Preparing and Prepared.bases == (Base,)
    assert isinstance(Prepared.namespace, Namespace)

    # A base that is not a class: the change's resolve_bases asks the test's object what stands for it.
    T = typing.TypeVar("T")

    class Generic(lib.with_metaclass(Meta, typing.Generic[T])):  # type: ignore[misc]
        pass

    assert isinstance(Generic, Meta) and Generic.__bases__ == (typing.Generic,)
    assert Generic.__orig_bases__ == (typing.Generic[T],)  # type: ignore[attr-defined, index]


def test_a_test_s_enum_over_a_library_s_enum_base_is_made_by_the_enum_s_metaclass(load: Load) -> None:
    lib = load(METACLASSES)

    class Colour(lib.Choice):  # type: ignore[misc, name-defined]
        RED = 1
        GREEN = 2

    assert [m.name for m in Colour] == ["RED", "GREEN"]  # type: ignore[attr-defined]
    assert Colour.RED.value == 1 and Colour(2) is Colour.GREEN  # type: ignore[attr-defined]
    assert isinstance(Colour.RED, lib.Choice)
    assert Colour.GREEN.describe() == "Colour.GREEN=2"


def test_a_class_body_run_into_the_change_s_namespace_never_names_its_test(load: Load) -> None:
    # Hostile: a metaclass of the change's that prepares the namespace sees every name the body binds,
    # as in one process; the class's module and qualified name go as their aliases, never in clear.
    lib = load(METACLASSES)
    bridge: Bridge = object.__getattribute__(lib, "_pg_bridge")
    bridge.handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"

    class Recorded(lib.Recorder):  # type: ignore[misc, name-defined]
        value = 42

    seen = lib.bound_reversed(Recorded)[::-1]
    assert "value=42" in seen and "__module__='_pgm" in seen and "__qualname__='_pgq" in seen, seen
    assert "test_a_class_body" not in seen and "test_bridge_shapes" not in seen, seen


def test_the_change_s_enum_iterates_counts_and_looks_up_as_its_metaclass_offers(load: Load) -> None:
    lib = load(
        "import enum\n"
        "class Color(enum.Enum):\n    RED = 1\n    GREEN = 2\n"
        "class Meta(type):\n    pass\n"
        "class Plain(metaclass=Meta):\n    pass\n"
    )
    assert list(lib.Color) == [lib.Color.RED, lib.Color.GREEN] and len(lib.Color) == 2
    assert lib.Color["GREEN"] is lib.Color.GREEN and lib.Color.RED in lib.Color
    assert list(reversed(lib.Color)) == [lib.Color.GREEN, lib.Color.RED]
    with pytest.raises(TypeError):  # its metaclass offers no iteration: as in one process
        iter(lib.Plain)
