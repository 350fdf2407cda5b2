"""The grader's bridge against a real subject process, over a socketpair (no Docker, no uids).

The uid split and the private files are proven against real Docker in
tests/checks/behaviour/test_trust_domains.py; here, what crosses the channel
and what never does.
"""

from __future__ import annotations

import collections
import enum
import os
import re
import socket
import subprocess
import sys
import unittest
from collections.abc import Iterator
from pathlib import Path

import pytest

from checks.behaviour.incontainer.channel.peer import Peer
from checks.behaviour.incontainer.grader.bridge import Bridge
from checks.behaviour.incontainer.grader.errors import SubjectGone, SubjectTimeout
from checks.behaviour.incontainer.grader.handles import Remote
from checks.behaviour.incontainer.grader.names import Importer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[4]
SUBJECT = """
import os, signal, socket, sys
sys.path.insert(0, sys.argv[1])
from checks.behaviour.incontainer.subject import agent, main as subject
repo, fd = sys.argv[2], int(sys.argv[3])
sys.path[:0] = [repo]
os.chdir(repo)
signal.signal(signal.SIGALRM, subject._on_alarm)
subject.ambient.install_log_relay()
agent = agent.Agent(socket.socket(fileno=fd), repo)
agent.peer.serve_forever()
"""

MODULE = """
import sys

class ParseError(ValueError):
    def __init__(self, text, position):
        super().__init__(f"cannot parse {text!r} at {position}")
        self.position = position

class AlwaysEqual:
    seen = []
    def __eq__(self, other):
        AlwaysEqual.seen.append(repr(other))
        return True
    __hash__ = object.__hash__
    def __lt__(self, other):
        AlwaysEqual.seen.append(repr(other))
        return True

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)
    __hash__ = None

def parse(text):
    if not text.isdigit():
        raise ParseError(text, 0)
    return int(text)

def cheat():
    return AlwaysEqual()

def seen():
    return list(AlwaysEqual.seen)

def apply(fn, value):
    return fn(value)

def peek(obj, name):
    return getattr(obj, name)

def count(n):
    yield from range(n)

def shout(text):
    print(text)
    return len(text)

def leave():
    raise SystemExit(3)

def interrupt():
    raise KeyboardInterrupt

def spin():
    while True:
        try:
            pass
        except Exception:  # the deadline is not an Exception: this cannot swallow it
            pass

def env(name):
    import os
    return os.environ.get(name)

def env_of(mapping, name):
    return mapping.get(name)

def cli():
    import sys
    return [sys.argv[1:], sys.stdin.readline()]

def write_every_way():
    import os, sys
    print("printed")
    sys.stdout.buffer.write(b"bytes\\n")
    with open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=False) as out:
        out.write("descriptor\\n")
    return sys.stdout.encoding

def is_text_stream(stream):
    import io
    return isinstance(stream, io.TextIOBase) and stream.read()

def tag(fn):
    fn.__cli_params__ = ["opt"]
    return fn

def tags_of(fn):
    return fn.__cli_params__

def option(name):
    def decorate(fn):
        if not hasattr(fn, "__opts__"):
            fn.__opts__ = []
        fn.__opts__.append(name)
        return fn
    return decorate

def opts_of(fn):
    return list(fn.__opts__)

def poke(obj, name, value):
    setattr(obj, name, value)

def seen_names(fn):
    # Reversed: what the subject saw, out of reach of the grader's restoring of aliases.
    return [fn.__qualname__[::-1], fn.__module__[::-1], repr(fn)[::-1]]

def wrap(fn):
    import functools
    @functools.wraps(fn)
    def wrapper(*a):
        return fn(*a)
    return wrapper

def cwd():
    import os
    return os.getcwd()

def wraps(wrapped, wrapper):
    import functools
    return functools.wraps(wrapped)(wrapper)

def add_doc(fn, doc):
    fn.__doc__ = doc

def move(fn, like):
    fn.__module__ = like.__module__

def moved_name(fn):
    # Reversed: what the change saw, past the grader putting the real names back into its answers.
    fn.__module__ = "elsewhere"
    return [fn.__qualname__[::-1], repr(fn)[::-1]]

def renamed(fn, name, value, of=None, before=""):
    # Set to ``value``, after the first part of what the change reads of ``of`` (after ``before``);
    # reversed: what the change reads back of what it set.
    setattr(fn, name, before + getattr(fn, of).split(".")[0] + value if of else value)
    found = getattr(fn, name)
    return found[::-1] if isinstance(found, str) else found

_held = {}

def adopt(fn, suite_file):
    # Names a library's function after this module, then says this module is a file of the suite.
    import sys
    fn.__module__ = __name__
    _held["fn"] = fn
    sys.modules[__name__].__file__ = suite_file

def grow_its_result():
    found = _held["fn"]()
    found.append("evil")
    return len(found)

def reinit(obj, *args):
    type(obj).__init__(obj, *args)

_kept = {}

def keep_alias(items, fn):
    _kept["items"] = items
    items.append(fn.__qualname__.split(".")[0])

def kept_strings():
    return [s[::-1] for s in _kept["items"] if isinstance(s, str)]

def alias_of(fn):
    return fn.__qualname__.split(".")[0]

def seen_text(text):
    return text[::-1]

def pass_default_to(fn, others, holder):
    # A decorator's way (bind, then apply the defaults) back into the function; then the same sealed
    # default handed to the test's other callables, and into a test object's __dict__.
    import inspect
    bound = inspect.signature(fn).bind(1)
    bound.apply_defaults()
    sealed = bound.arguments["expected"]
    found = [fn(*bound.args, **bound.kwargs)]
    uses = [lambda other=other: other(sealed) for other in others]
    for use in [*uses, lambda: holder.__dict__.setdefault("pg_x", sealed)]:
        try:
            found.append(repr(use()))
        except TypeError as exc:
            found.append(str(exc))
    return found

def missing(fn, obj):
    # An alias looked up where it is missing: what the errors say, reversed past the grader's restoring.
    found = []
    try:
        getattr(obj, fn.__qualname__.split(".")[0])
    except AttributeError as exc:
        found += [str(exc)[::-1], str(exc.name)[::-1]]
    try:
        obj.__dict__[fn.__module__]
    except KeyError as exc:
        found.append(str(exc)[::-1])
    try:
        fn()
    except TypeError as exc:
        found.append(str(exc)[::-1])
    return found

def sealed_in_errors(fn, holder, items):
    import inspect
    sealed = inspect.signature(fn).parameters["expected"].default
    holder.pg_error = ValueError(sealed)
    items.append(KeyError(sealed))
    return repr(holder.pg_error.args)

def case_says(case):
    return [case.id()[::-1], str(case)[::-1]]

def seen_in(mapping):
    return [[key[::-1], value[0][::-1]] for key, value in mapping.items()]

def placed(fn):
    # What inspection reads of where a function was defined (the file reversed past the grader's
    # restoring of aliases).
    code = fn.gi_code if hasattr(fn, "gi_code") else fn.__code__
    return [code.co_filename[::-1], code.co_firstlineno]

def warn_at(fn):
    # pluggy's deprecation of a hook implementation: warned at the function's own file and line.
    import warnings
    code = fn.__code__
    warned = DeprecationWarning("old")
    warnings.warn_explicit(warned, DeprecationWarning, code.co_filename, code.co_firstlineno)

def yielded_twice(gen):
    # pluggy's error for a wrapper that yields twice: its file and line in the text.
    code = gen.gi_code
    where = f"{code.co_filename}:{code.co_firstlineno}"
    raise RuntimeError(f"wrap_controller at {code.co_name!r} {where} yielded twice")

def enum_seen(value):
    import enum
    return [repr(value), str(value), getattr(value, "name", None), isinstance(value, enum.Enum)]

def same(value):
    return value

def member_of(cls, value):
    return cls(value)

def names_of(cls):
    return [member.name for member in cls]

def plus_one(value):
    return value + 1

def _agent():
    import gc
    from checks.behaviour.incontainer.subject.agent import Agent
    return next(o for o in gc.get_objects() if isinstance(o, Agent))

def set_on_class_of(member, name, value):
    # The class of a member it was handed, named by the number the grader gave it, written.
    from checks.behaviour.incontainer.subject.standins import GraderObject
    agent = _agent()
    number = agent.test_enums._numbers[type(member)][0]
    agent.callback("setattr", GraderObject(agent, number), name, value)

def raise_with(text):
    raise ValueError(text)

def error_through(fn, callback):
    # A test's callback that calls back into the change with a suite file's alias; what the error says.
    try:
        callback(fn.__code__.co_filename)
    except Exception as exc:
        return [str(exc)[::-1], [str(a)[::-1] for a in exc.args]]
    return None

def name_after_file(fn):
    fn.__qualname__ = fn.__code__.co_filename

def combine(a, b):
    return a | b

def counted(items):
    return len(list(items))

def named_in_sealed(fn, echo):
    # A sealed default named as an enum's member, sent raw to a suite function that returns its argument.
    import inspect
    agent = _agent()
    sealed = inspect.signature(fn).parameters["kind"].default
    number = object.__getattribute__(sealed, "_pg_id")
    found = []
    for place in range(2):
        tag = {"__type__": "obj", "side": "g", "id": number, "member": place}
        answer = agent.peer.request({"op": "call", "obj": agent.encode(echo), "args": [tag], "kwargs": {}})
        found.append(str(answer["raise"]) if "raise" in answer else repr(agent.decode(answer["ok"])))
    return found

class Lazy:
    # six.moves' lazy modules: any attribute imports the module it stands for, which may not exist.
    def __getattr__(self, name):
        raise ImportError("No module named '_gdbm'")

def lazies():
    return [Lazy(), Lazy]

def chunks_of(source):
    # xmltodict.parse: a generator is iterated for its chunks, anything else read or parsed whole.
    import inspect, types
    kinds = [inspect.isgenerator(source), isinstance(source, types.GeneratorType)]
    kinds.append(inspect.iscoroutine(source))
    return [*kinds, "".join(source) if inspect.isgenerator(source) else None]

def look_up(mapping, *keys):
    return [mapping[key] for key in keys]

def group_into(groups, pairs):
    for key, value in pairs:
        groups[key].append(value)

def update_from(wrapper, wrapped, name):
    # functools.update_wrapper's ``updated``: the wrapper's own dict, updated in place.
    getattr(wrapper, name).update(getattr(wrapped, name))
"""


def start_subject(repo: Path) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start a subject process serving the repository ``repo``; return it and our end of its socket."""
    mine, theirs = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", SUBJECT, str(ROOT), str(repo), str(theirs.fileno())],
        pass_fds=(theirs.fileno(),),
        # As in the sandbox, the subject starts with an environment of its own, not the runner's.
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    )
    theirs.close()
    return process, mine


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[Bridge]:
    (tmp_path / "calc.py").write_text(MODULE)
    (tmp_path / "boom.py").write_text("raise SystemExit(0)\n")
    process, mine = start_subject(tmp_path)
    # The tests in this folder stand for the suite: the environment changes they make are the test's.
    bridge = Bridge(Peer(mine, lambda request: {}), suite_root=str(ROOT / "tests"))
    importer = Importer(bridge, ["calc", "boom"])
    sys.meta_path.insert(0, importer)
    try:
        yield bridge
    finally:
        sys.meta_path.remove(importer)
        for name in [n for n in sys.modules if n in ("calc", "boom")]:
            del sys.modules[name]
        mine.close()
        process.wait(timeout=30)


def test_values_cross_by_value_and_calls_run_in_the_subject(bridge: Bridge) -> None:
    import calc  # type: ignore[import-not-found]

    assert calc.parse("42") == 42
    assert type(calc.parse("42")) is int
    assert list(calc.count(3)) == [0, 1, 2]
    assert calc.__all__ and "parse" in calc.__all__
    # The module was never imported here: it is a proxy.
    assert type(calc).__name__ == "RemoteModule"


def test_exceptions_of_the_change_are_mirrored_and_catchable(bridge: Bridge) -> None:
    import calc

    with pytest.raises(calc.ParseError, match="cannot parse 'x' at 0") as info:
        calc.parse("x")
    assert info.value.position == 0
    assert isinstance(info.value, ValueError)
    assert calc.ParseError is calc.ParseError
    with pytest.raises(ValueError, match="cannot parse 'y'"):
        calc.parse("y")
    with pytest.raises(SystemExit):
        calc.leave()


def test_an_object_equal_to_everything_never_sees_the_expected_value(bridge: Bridge) -> None:
    import calc

    cheat = calc.cheat()
    assert issubclass(type(cheat), Remote)  # a handle (its class offers what the object offers)
    # `==` both ways: never asked of the subject, so never True.
    assert (cheat == [4]) is False
    assert ([4] == cheat) is False  # noqa: SIM300 - the operand order is what is tested
    assert cheat != "secret"
    with pytest.raises(TypeError):
        _ = cheat < 5
    assert calc.seen() == []
    # Between two of the change's own objects, the change decides, as in any test run.
    assert calc.Point(1, 2) == calc.Point(1, 2)
    assert calc.Point(1, 2) != calc.Point(2, 1)


def test_callbacks_run_here_but_never_open_the_tests_internals(bridge: Bridge) -> None:
    import calc

    secret = [4242]

    def double(x: int) -> int:
        return x * 2 + 0 * len(secret)

    assert calc.apply(double, 21) == 42
    for name in ("__globals__", "__closure__", "_private"):
        with pytest.raises(AttributeError, match="may not read"):
            calc.peek(double, name)
    # Its __code__ is a stand-in's: the name and parameters, an empty body (nothing of ours in it).
    code = calc.peek(double, "__code__")
    assert (code.co_name, code.co_varnames, code.co_names, code.co_consts) == ("double", ("x",), (), (None,))


def test_no_module_or_frame_of_the_test_side_ever_reaches_the_subject(bridge: Bridge) -> None:
    import json

    import calc

    expected = [4242]
    # A standard-library module arrives as the subject's own; no other module of ours ever does.
    assert calc.peek(json, "__name__") == "json"
    with pytest.raises(TypeError, match="never handed"):
        calc.apply(lambda module: module, sys.modules[__name__])
    with pytest.raises(TypeError, match="never handed"):
        calc.apply(len, [sys._getframe()])
    # A generator of the test crosses as a handle to iterate, never to open its frame.
    numbers = (n for n in expected)
    code = calc.peek(numbers, "gi_code")  # a stand-in of its name only (pluggy's error messages)
    assert code.co_name in ("<genexpr>", "function")
    assert 4242 not in code.co_consts and code.co_filename == __file__  # its alias, restored here
    for name in ("gi_frame", "gi_yieldfrom"):
        with pytest.raises(AttributeError, match="may not read"):
            calc.peek(numbers, name)
    assert calc.apply(list, numbers) == [4242]


def test_prints_reach_the_tests_capture(bridge: Bridge, capsys: pytest.CaptureFixture[str]) -> None:
    import calc

    assert calc.shout("hello") == 5
    assert capsys.readouterr().out == "hello\n"


def test_the_environment_follows_the_test(bridge: Bridge, monkeypatch: pytest.MonkeyPatch) -> None:
    import calc

    monkeypatch.setenv("PATCHGATE_BRIDGE_PROBE", "on")
    assert calc.env("PATCHGATE_BRIDGE_PROBE") == "on"
    monkeypatch.undo()
    assert calc.env("PATCHGATE_BRIDGE_PROBE") is None


def test_the_runner_s_variables_never_reach_the_subject(
    bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    import calc

    # pytest names the running test (and its parameters) here; the code under test never sees it.
    assert "test_the_runner_s_variables_never_reach_the_subject" in os.environ["PYTEST_CURRENT_TEST"]
    assert calc.env("PYTEST_CURRENT_TEST") is None
    monkeypatch.setenv("PATCHGATE_BRIDGE_PROBE", "on")
    # os.environ handed over is the subject's own, with the test's changes in it; a copy loses the runner's.
    assert calc.env_of(os.environ, "PATCHGATE_BRIDGE_PROBE") == "on"
    assert calc.env_of(os.environ, "PYTEST_CURRENT_TEST") is None
    assert calc.env_of(dict(os.environ), "PYTEST_CURRENT_TEST") is None
    assert calc.env_of(dict(os.environ), "PATCHGATE_BRIDGE_PROBE") == "on"


def test_the_names_of_the_suite_s_own_definitions_reach_the_subject_as_aliases(bridge: Bridge) -> None:
    import calc

    def callback(x: int) -> int:
        return x + 1

    qualname, module, text = (s[::-1] for s in calc.seen_names(callback))
    # The test's name and its module's never reach the code under test, in any form.
    for real in ("test_the_names_of_the_suite_s_own_definitions", __name__.rsplit(".", 1)[-1]):
        assert real not in qualname + module + text
    assert qualname.endswith(".<locals>.callback") and module.startswith("_pgm")
    # What the change copies from a callback comes back as the test's own.
    wrapped = calc.wrap(callback)
    assert (wrapped.__qualname__, wrapped.__module__, wrapped.__name__) == (
        callback.__qualname__, callback.__module__, "callback",
    )  # fmt: skip
    assert wrapped(1) == 2


def test_a_cli_test_s_arguments_and_input_reach_the_code_under_test(
    bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    import calc

    monkeypatch.setattr(sys, "argv", ["prog", "--flag", "x"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("typed line\n"))
    assert calc.cli() == [["--flag", "x"], "typed line\n"]


def test_what_the_code_under_test_writes_reaches_the_test_whichever_way_it_writes(
    bridge: Bridge, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    import calc

    assert calc.write_every_way() == "utf-8"
    assert capsys.readouterr().out == "printed\nbytes\ndescriptor\n"
    assert calc.write_every_way() == "utf-8"  # again: each request's capture starts empty
    assert capsys.readouterr().out == "printed\nbytes\ndescriptor\n"
    assert calc.is_text_stream(io.StringIO("text")) == "text"


def test_the_code_under_test_may_keep_its_own_attributes_on_a_test_s_function(bridge: Bridge) -> None:
    import calc

    def command() -> None:
        pass

    assert calc.tag(command) is command
    assert command.__cli_params__ == ["opt"]
    assert calc.tags_of(command) == ["opt"]
    # A container it set there is its own, changed through the attribute as click adds each option.
    options = calc.option("--b")(calc.option("--a")(command))
    assert options is command and calc.opts_of(command) == ["--a", "--b"]
    # Never one the object has already, nor anything on a class (a special method would change them all).
    with pytest.raises(AttributeError, match="may not set '__code__'"):
        calc.poke(command, "__code__", 1)

    class Point:
        pass

    with pytest.raises(AttributeError, match="may not set '__eq__'"):
        calc.poke(Point, "__eq__", command)
    assert Point() != Point()


def test_an_exit_at_import_fails_that_import_only(bridge: Bridge) -> None:
    with pytest.raises(ImportError, match="SystemExit"):
        import boom  # type: ignore[import-not-found]  # noqa: F401
    import calc

    assert calc.parse("1") == 1


def test_an_interrupt_in_the_change_does_not_end_the_session(bridge: Bridge) -> None:
    import calc

    with pytest.raises(RuntimeError, match="KeyboardInterrupt"):
        calc.interrupt()
    assert calc.parse("2") == 2


def test_a_subject_that_is_gone_fails_every_later_request(tmp_path: Path) -> None:
    mine, theirs = socket.socketpair()
    theirs.close()
    bridge = Bridge(Peer(mine, lambda request: {}))
    try:
        with pytest.raises(SubjectGone):
            bridge.request("import", name="calc")
        with pytest.raises(SubjectGone):
            bridge.request("import", name="calc")
    finally:
        mine.close()


def test_a_hanging_call_is_cut_at_its_deadline_and_the_subject_answers_again(bridge: Bridge) -> None:
    import calc

    bridge.default_deadline_s = 2.0
    with pytest.raises(SubjectTimeout):
        calc.spin()
    assert calc.parse("3") == 3


def test_a_message_nested_past_the_parser_is_a_closed_channel_not_a_crash() -> None:
    from checks.behaviour.incontainer.channel import wire

    mine, theirs = socket.socketpair()
    try:
        # Deeper than the parser's recursion limit, small enough for the socket's buffer (nobody reads yet).
        payload = b"[" * 5_000 + b"]" * 5_000
        theirs.sendall(len(payload).to_bytes(4, "big") + payload)
        with pytest.raises(wire.ChannelClosed, match="malformed"):
            wire.receive(mine, timeout=10)
    finally:
        mine.close()
        theirs.close()


def test_the_subject_serves_exactly_the_protocols_requests_and_refuses_any_other(bridge: Bridge) -> None:
    from checks.behaviour.incontainer.channel.protocol import SUBJECT_SERVES
    from checks.behaviour.incontainer.subject import agent

    methods = {name.removeprefix("_serve_") for name in vars(agent.Agent) if name.startswith("_serve_")}
    assert set(agent._SERVES) == SUBJECT_SERVES == methods
    # A method of the agent's that is not a request (its own helpers) cannot be reached by name.
    for op in ("_dispatch", "handle", "target", "serve_call", "__init__", "nope"):
        with pytest.raises(ValueError, match="unknown request"):
            bridge.request(op)
    # The subject answers again after each refusal.
    assert bridge.request("import", name="calc") is not None


def test_the_change_names_a_test_s_function_as_functools_wraps_does(bridge: Bridge) -> None:
    # six.wraps and six._add_doc over a test's functions: set in one process, set here too.
    import calc

    def original() -> None:
        """The original's doc."""

    def wrapper() -> int:
        return 42

    assert calc.wraps(original, wrapper) is wrapper
    assert (wrapper.__name__, wrapper.__qualname__, wrapper.__doc__) == (
        "original", original.__qualname__, "The original's doc.",
    )  # fmt: skip
    assert wrapper.__module__ == __name__ and wrapper.__wrapped__ is original
    calc.add_doc(original, "New doc")
    assert original.__doc__ == "New doc"


def test_the_change_cannot_move_a_function_of_no_suite_module_into_the_suite(bridge: Bridge) -> None:
    # Hostile: whether a function is the suite's decides what its results may do (kept containers,
    # BOUND); the change read a test's module as an alias and writes it on a library's function.
    import calc

    def mine() -> None:
        pass

    before = pytest.approx.__module__
    with pytest.raises(AttributeError, match="may not move a function into the suite"):
        calc.move(pytest.approx, mine)
    assert pytest.approx.__module__ == before
    calc.move(mine, pytest.approx)  # out of the suite: it may do less, never more
    assert mine.__module__ == before


def test_a_container_a_suite_function_holds_is_the_test_s_own(bridge: Bridge) -> None:
    import calc

    def wrapped() -> None:
        pass

    def wrapper() -> None:
        pass

    wrapped.glue = {"melon": "egg"}  # type: ignore[attr-defined]
    wrapper.glue = glue = {"foo": "bar"}  # type: ignore[attr-defined]
    calc.update_from(wrapper, wrapped, "glue")
    assert wrapper.glue is glue and glue == {"foo": "bar", "melon": "egg"}  # type: ignore[attr-defined]


def test_a_name_set_from_an_alias_reads_back_as_the_alias_and_the_doc_as_written(bridge: Bridge) -> None:
    # Hostile: the doc is no name, yet it was restored too - an alias written there read back as the
    # running test's real name; a module name likewise.
    import calc

    def callback() -> None:
        pass

    test_name = "test_a_name_set_from_an_alias_reads_back"
    doc = calc.renamed(callback, "__doc__", "", of="__qualname__")[::-1]
    assert doc.startswith("_pgq") and test_name not in doc, doc
    doc = calc.renamed(callback, "__doc__", "", of="__module__")[::-1]
    assert doc.startswith("_pgm") and "test_bridge" not in doc, doc
    # A name set from an alias is the real name on this side (functools.wraps), the alias on that one.
    alias = calc.renamed(callback, "__qualname__", ".<locals>.cb", of="__qualname__")[::-1]
    assert alias.startswith("_pgq") and alias.endswith(".<locals>.cb"), alias
    assert callback.__qualname__.startswith(test_name) and callback.__qualname__.endswith(".<locals>.cb")


def test_a_name_like_a_test_s_in_clear_is_refused_whether_or_not_it_is_one(bridge: Bridge) -> None:
    # Hostile: the change sets a guessed test name and reads it back; the running test's own read
    # back as its alias (``_pgq1``), a wrong guess as a new one - an oracle for the hidden name.
    import calc

    def callback() -> None:
        pass

    real = "test_a_name_like_a_test_s_in_clear_is_refused_whether_or_not_it_is_one"
    for guess in (real, "test_not_in_this_suite"):
        for name in ("__qualname__", "__name__", "__module__"):
            with pytest.raises(AttributeError, match="may not name a test's function"):
                calc.renamed(callback, name, f"{guess}.<locals>.callback")
    assert callback.__qualname__ == f"{real}.<locals>.callback"
    assert (
        calc.renamed(callback, "__name__", "handler")[::-1] == "handler"
    )  # a name of its own: as in one process


def test_a_module_of_the_change_never_makes_a_function_the_suite_s(bridge: Bridge, tmp_path: Path) -> None:
    # Hostile: the change names a library's function after its own module, then sets that module's
    # __file__ (which the grader read from the subject) to a suite file: the function became the
    # suite's, and a list it returned was kept in step - the change wrote the grader's library state.
    import calc

    (tmp_path / "grader_side").mkdir()
    (tmp_path / "grader_side" / "pg_registry.py").write_text(
        "REG = {'plugins': ['safe']}\n\ndef plugins():\n    return REG['plugins']\n"
    )
    sys.path.insert(0, str(tmp_path / "grader_side"))
    try:
        import pg_registry  # type: ignore[import-not-found]

        calc.adopt(pg_registry.plugins, str(ROOT / "tests" / "planted.py"))
        assert not bridge._suite_function(pg_registry.plugins)
        assert not bridge.handed.aliases.suite_module("calc")
        calc.grow_its_result()
        calc.grow_its_result()  # a later request would carry the write back
        assert pg_registry.REG == {"plugins": ["safe"]}
    finally:
        sys.path.remove(str(tmp_path / "grader_side"))
        sys.modules.pop("pg_registry", None)


def test_a_name_the_change_gave_by_alias_goes_back_to_it_as_the_alias(bridge: Bridge) -> None:
    # Hostile: an alias the change wrote into a test's kept list was the real name on the test's side,
    # and went back in clear when the test touched its list; a test passing back a string the change
    # returned did the same.
    import calc

    def callback() -> None:
        pass

    real = "test_a_name_the_change_gave_by_alias_goes_back"
    items: list[object] = []
    calc.keep_alias(items, callback)
    assert isinstance(items[0], str) and items[0].startswith(real)  # the test's side: as in one process
    items.append(1)  # touched: its contents go to the subject again
    seen = [text[::-1] for text in calc.kept_strings()]
    assert seen and all(text.startswith("_pgq") and real not in text for text in seen), seen
    name = calc.alias_of(callback)
    assert name.startswith(real)
    back = calc.seen_text(name)[::-1]
    assert back.startswith("_pgq") and real not in back, back
    for part in calc.seen_in({name: [name]})[0]:  # as a key and as an item too
        assert part[::-1].startswith("_pgq") and real not in part[::-1], part


class Holder:
    pass


def test_an_alias_looked_up_where_it_is_missing_is_named_as_the_change_sent_it(bridge: Bridge) -> None:
    # Hostile: getattr(obj, alias) failed with the real name the alias stands for in its text and its
    # ``name``, a missing __dict__ key likewise, and a test's callback called wrongly named its test:
    # any alias decoded.
    import calc

    def callback(needed: int) -> None:
        pass

    real, module = "test_an_alias_looked_up_where_it_is_missing", "test_bridge"
    found = [text[::-1] for text in calc.missing(callback, Holder())]
    assert len(found) == 4, found
    assert all(real not in text and module not in text for text in found), found
    assert "_pgq" in found[0] and "_pgm" in found[2] and "_pgq" in found[3], found


def test_a_name_with_an_alias_glued_inside_a_part_is_refused(bridge: Bridge) -> None:
    # Hostile: ``x_pgq1.y`` passed the test-word check, was restored to ``xtest_....y`` and read back
    # in clear (its qualname's parts are aliased one by one, and ``xtest_...`` is no test's word).
    import calc

    def callback() -> None:
        pass

    with pytest.raises(AttributeError, match="may not name a test's function"):
        calc.renamed(callback, "__qualname__", ".y", of="__qualname__", before="x")
    assert callback.__qualname__.endswith(".<locals>.callback")


def test_a_sealed_default_stays_sealed_in_an_error_the_change_puts_in_a_test_s_object(bridge: Bridge) -> None:
    # Hostile: the arguments of an exception the change set on a test's object (or put in a kept list)
    # were decoded with every sealed default unsealed, and read back in clear.
    import calc

    def check(value: int, expected: tuple[str, int] = ("hidden", 4242)) -> bool:
        return value == 1

    items: list[object] = []
    shown = calc.sealed_in_errors(check, holder := Holder(), items)
    assert "4242" not in shown, shown
    assert "4242" not in repr(holder.pg_error.args) and "4242" not in repr(items), (holder.pg_error, items)  # type: ignore[attr-defined]


def test_a_sealed_default_goes_back_to_the_test_s_code_only_and_never_straight_back(bridge: Bridge) -> None:
    # Hostile: a sealed default was its value again as any call's argument, so a test's identity
    # function or a test object's ``__dict__.setdefault`` handed it back in clear. The test's own code
    # gets it (pluggy hands a hookspec's default to the hook's implementations); handed straight back
    # it is sealed again.
    import calc

    def check(value: int, expected: tuple[str, int] = ("hidden", 4242)) -> bool:
        return value == 1 and expected == ("hidden", 4242)

    def echo(value: object) -> object:
        return value

    def implementation(kwarg: object) -> bool:
        return kwarg == ("hidden", 4242)

    found = calc.pass_default_to(check, [echo, implementation], Holder())
    assert found[:3:2] == [True, "True"], found  # its own function, and another of the test's: the value
    assert "4242" not in found[1], found  # the identity: sealed again
    assert "4242" not in found[3] and "the test's own code only" in found[3], found


class HiddenCases(unittest.TestCase):
    def test_secret_case(self) -> None:
        pass


def test_a_test_case_s_id_names_its_test_by_alias(bridge: Bridge) -> None:
    # Hostile: only a test object's repr was aliased; TestCase.id() - a method of unittest's on it -
    # gave the test's module and name in clear.
    import calc

    said = [text[::-1] for text in calc.case_says(HiddenCases("test_secret_case"))]
    assert all("test_secret_case" not in text and "test_bridge" not in text for text in said), said


class Account:
    def __init__(self, balance: int) -> None:
        self._balance = balance

    @property
    def balance(self) -> int:
        return self._balance


def test_a_test_class_s_init_is_described_never_run_by_the_change(bridge: Bridge) -> None:
    # Hostile: ``type(obj).__init__(obj, ...)`` set the test object's private state with the change's
    # arguments, which ``obj._balance = ...`` may not.
    import calc

    account = Account(10)
    with pytest.raises(AttributeError, match="may not set"):
        calc.poke(account, "_balance", 10**6)
    with pytest.raises(TypeError, match="may not run a test class's __init__"):
        calc.reinit(account, 10**6)
    assert account.balance == 10


def test_a_test_s_function_moved_out_of_the_suite_still_hides_its_test_s_name(bridge: Bridge) -> None:
    # Hostile: a function's module decided whether its names were aliased; the change may now set it.
    import calc

    def callback() -> None:
        pass

    seen = [text[::-1] for text in calc.moved_name(callback)]
    assert callback.__module__ == "elsewhere"
    assert not any("test_a_test_s_function_moved" in text for text in seen), seen
    assert seen[0].endswith(".<locals>.callback") and seen[0].startswith("_pgq"), seen


def test_a_test_function_s_file_reaches_the_change_by_alias_and_its_line_as_it_is(bridge: Bridge) -> None:
    # pluggy: a deprecated hook implementation is warned at its own file and line; a wrapper that
    # yields twice is named by its file and line in the error.
    import calc

    def hook() -> None:
        pass

    filename, line = calc.placed(hook)
    assert re.fullmatch(r"_pgf\d+", filename[::-1])  # what the change read: an alias, no path
    assert line == hook.__code__.co_firstlineno
    # Back on the test's side, the alias is the file again: the warning's, the error's text.
    with pytest.warns(DeprecationWarning, match="old") as records:
        calc.warn_at(hook)
    (record,) = records
    assert (record.filename, record.lineno) == (__file__, hook.__code__.co_firstlineno)
    numbers = (n for n in [1])
    with pytest.raises(RuntimeError) as info:
        calc.yielded_twice(numbers)
    line = numbers.gi_code.co_firstlineno  # type: ignore[attr-defined]
    assert f"{__file__}:{line} yielded twice" in str(info.value)
    # The same file, the same alias; a function of no suite file's says nothing of where it is.
    assert calc.placed(numbers)[0] == filename
    assert calc.placed(Bridge.encode) == ["<patchgate: a test's function>"[::-1], 1]


class Exit(enum.IntEnum):
    OK = 0
    FAILED = 1


class Mode(str, enum.Enum):  # noqa: UP042 - the shape of enum.StrEnum, with str's own __str__
    __str__ = str.__str__
    PLAIN = "plain"


class Color(enum.Enum):
    RED = "red"
    CRIMSON = "red"  # an alias


class Doubling(enum.Enum):
    ONE = 1

    def doubled(self) -> int:
        return int(self.value) * 2


def test_a_test_s_enum_crosses_as_an_enum_and_its_members_come_back_as_the_test_s(bridge: Bridge) -> None:
    # pluggy's tracer shows a test's IntEnum as <Exit.FAILED: 1>: by value it was 1, with no name.
    import calc

    assert calc.enum_seen(Exit.FAILED) == ["<Exit.FAILED: 1>", "1", "FAILED", True]
    assert calc.enum_seen(Mode.PLAIN) == ["<Mode.PLAIN: 'plain'>", "plain", "PLAIN", True]
    assert calc.enum_seen(Color.CRIMSON) == ["<Color.RED: 'red'>", "Color.RED", "RED", True]
    # Back, the test's own member and class; a member the change looked up is the test's too.
    assert calc.same(Exit.FAILED) is Exit.FAILED
    assert calc.same([Mode.PLAIN, Color.RED]) == [Mode.PLAIN, Color.RED]
    assert calc.same(Exit) is Exit
    assert calc.member_of(Exit, 0) is Exit.OK
    assert calc.member_of(Color, "red") is Color.RED
    assert calc.names_of(Color) == ["RED"]
    # An IntEnum is an int there as here.
    assert calc.plus_one(Exit.FAILED) == 2
    # An enum with a method of its own is no enum made there: it crosses as any test object.
    assert calc.enum_seen(Doubling.ONE)[3] is False
    assert calc.same(Doubling.ONE) is Doubling.ONE


def test_the_change_names_a_member_only_of_a_test_s_enum_and_only_one_it_has(bridge: Bridge) -> None:
    secret = ["the held-out test's expected value"]
    # The subject names a member by its class's number and its place: never of another object.
    for number, place in ((bridge.handed.keep(secret), 0), (bridge.handed.keep(Exit), 2)):
        tag = {"__type__": "obj", "side": "g", "id": number, "member": place}
        with pytest.raises(ValueError, match="member"):
            bridge.decode(tag)
        with pytest.raises(ValueError, match="member"):
            bridge.decode_held(tag)


class Perm(enum.Flag):
    R = 1
    W = 2


def test_a_combination_of_a_test_s_flags_crosses_both_ways(bridge: Bridge) -> None:
    import calc

    assert calc.enum_seen(Perm.R | Perm.W)[:3] == ["<Perm.R|W: 3>", "Perm.R|W", "R|W"]
    assert calc.combine(Perm.R, Perm.W) == Perm.R | Perm.W
    assert calc.same(Perm(0)) == Perm(0)
    # None is lost on the way: a member that could not be tagged once ended an iterator early.
    assert calc.counted(iter([Perm.R, Perm.R | Perm.W, Perm.W])) == 3


def test_a_test_s_enum_class_is_never_written_by_the_change(bridge: Bridge) -> None:
    # Handed one member, the change named its class and set `value` there: every member's value.
    import calc

    assert calc.same(Color.RED) is Color.RED
    for name in ("value", "name"):
        with pytest.raises(AttributeError, match="may not set"):
            calc.set_on_class_of(Color.RED, name, "forged")
    assert (Color.RED.value, Color.RED.name) == ("red", "RED")
    assert "value" not in vars(Color)


def test_a_sealed_default_is_never_named_as_a_member_of_its_enum(bridge: Bridge) -> None:
    import calc

    def handler(event: object = None, kind: type = Color) -> object:  # a default: sealed
        return event

    def echo(value: object) -> object:
        return value

    found = calc.named_in_sealed(handler, echo)
    assert all("named no member" in text for text in found), found


def test_a_suite_file_s_path_never_reaches_the_change_in_an_error_or_a_name(bridge: Bridge) -> None:
    import calc

    def calls_back(text: str) -> None:
        calc.raise_with(text)  # the change raises the file's alias: restored here to the path

    def names_its_file(text: str) -> None:
        raise FileNotFoundError(__file__)

    suite = str(ROOT / "tests")
    for callback in (calls_back, names_its_file):
        found = calc.error_through(callback, callback)
        assert found is not None
        seen = " ".join([found[0][::-1], *(a[::-1] for a in found[1])])
        assert suite not in seen and "test_bridge" not in seen, seen
        assert re.search(r"_pgf\d+", seen)
    with pytest.raises(AttributeError, match="like a test"):
        calc.name_after_file(calls_back)


def test_the_harness_never_asks_the_change_s_objects_for_attributes_of_its_own(bridge: Bridge) -> None:
    # six's lazy modules import on any attribute: the subject looking up `_name_` on every object it
    # sent (whether it was a test's enum) made test_six.py fail to import with ImportError.
    import calc

    found = calc.lazies()
    assert len(found) == 2 and isinstance(found[0], found[1])


def test_a_test_s_generator_is_a_generator_to_the_change(bridge: Bridge) -> None:
    import calc

    assert calc.chunks_of(part for part in ["<a>", "1</a>"]) == [True, True, False, "<a>1</a>"]
    assert calc.chunks_of(iter(["<a/>"]))[:3] == [False, False, False]  # an iterator is none


def test_a_test_s_defaultdict_keeps_its_factory_and_what_the_change_adds(bridge: Bridge) -> None:
    # xmltodict's namespaces=defaultdict(lambda: None): crossed as a plain dict, a missing key raised.
    import calc

    namespaces: collections.defaultdict[str, object] = collections.defaultdict(lambda: None, {"a": "x"})
    assert calc.look_up(namespaces, "a", "missing") == ["x", None]
    assert dict(namespaces) == {"a": "x", "missing": None}  # the key the factory made, here too
    groups: collections.defaultdict[str, list[int]] = collections.defaultdict(list)
    calc.group_into(groups, [("odd", 1), ("even", 2), ("odd", 3)])
    assert groups == {"odd": [1, 3], "even": [2]} and groups.default_factory is list
    assert calc.same(groups) is groups


def test_a_string_with_surrogates_reaches_the_change_as_the_test_wrote_it(bridge: Bridge) -> None:
    import calc

    pair = "\ud835" + "\udce3"  # two code points, not the one character UTF-16 would make of them
    assert calc.counted(pair) == 2
    for text in (pair, "a\udce3", "\U0001d4e3"):
        assert calc.same(text) == text and len(calc.same(text)) == len(text)
    assert calc.same({pair: [pair]}) == {pair: [pair]}
