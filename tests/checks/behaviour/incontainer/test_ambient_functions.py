"""A test's replacement of a standard-library function the change reads its surroundings through crosses.

termcolor's tests stage a terminal with ``monkeypatch.setattr(os, "isatty",
lambda fd: True)``; a library's retry tests skip its waits with a patched
``time.sleep``. In one process the library calls the test's replacement;
isolated it called its own (second holdout, first run: 42 of termcolor's
84 tests lost). Only ``protocol.AMBIENT_FUNCTIONS`` cross, only the suite's
own patches, and never a function that acts on the world for its caller.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from checks.behaviour.incontainer.channel.protocol import AMBIENT_FUNCTIONS, HARNESS_DIR
from checks.behaviour.incontainer.grader import ambient
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, loading

pytestmark = pytest.mark.slow

LIB = """
import os, time

def colour():
    return os.isatty(1)

def wait(seconds):
    time.sleep(seconds)
    return "waited"

def now():
    return time.time()

def shell(command):
    return os.system(command)

def stdout_colour():
    import io, sys
    try:
        return os.isatty(sys.stdout.fileno())
    except io.UnsupportedOperation:
        return sys.stdout.isatty()

def shout(text):
    print(text)

def stdout_kind():
    import sys
    return type(sys.stdout).__name__

def forge_count():
    time.sleep.call_count = 3  # a test's MagicMock: its count, were it handed over whole

def forge_assert():
    time.sleep.assert_called_once_with = lambda *a, **k: None

def forge_clock():
    time.time.return_value = 100.0  # the test's own time.time() would then say so

def peek_inner():
    import sys
    return sys.stdout.inner  # a test's tee holds pytest's capture, with the test's prints

def name_of(module):
    return module.__name__

def write_back():
    import sys
    return type(sys.stdout.write("x")).__name__

class Evil:
    seen = []

    def __radd__(self, other):
        Evil.seen.append(other)
        return other

def write_evil():
    import sys
    try:
        sys.stdout.write(Evil())
    except TypeError:
        pass
    try:
        time.sleep(Evil())
    except TypeError:
        pass
    return list(Evil.seen)

def hostname_kind():
    import socket
    return type(socket.gethostname).__name__

def argv_of():
    import sys
    return list(sys.argv)

class Writer:
    def write(self, text):
        return len(text)

    def flush(self):
        pass
"""

# A write made by the harness's own code (a file under its folder), not by the suite's.
_AS_HARNESS = compile("def patch(os):\n    os.isatty = lambda fd: True\n", HARNESS_DIR + "/fake.py", "exec")


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Load]:
    """A subject for LIB, with this file's folder as the suite (its writes are the test's own), and
    the ownership of ambient functions as a fresh process has it (a test's own monkeypatch undoes
    nothing of it)."""
    ambient.install(str(Path(__file__).parent) + "/")
    fresh = ambient.Patches()
    fresh.originals = dict(ambient.PATCHES.originals)
    suite = str(Path(__file__).parent)
    with pytest.MonkeyPatch.context() as ours, loading(tmp_path, suite_root=suite) as begin:
        ours.setattr(ambient, "PATCHES", fresh)
        yield begin


def test_the_change_calls_the_test_s_replacement_until_the_test_undoes_it(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = start(LIB)
    own = lib.colour()
    monkeypatch.setattr(os, "isatty", lambda fd: fd == 1)
    assert lib.colour() is True
    slept: list[Any] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    assert lib.wait(3600) == "waited"  # the subject's own sleep would take the hour
    assert slept == [3600]
    monkeypatch.setattr(time, "time", lambda: 1234.5)
    assert lib.now() == 1234.5
    monkeypatch.undo()
    assert lib.colour() is own
    assert lib.now() != 1234.5


def test_a_deleted_ambient_function_is_gone_for_the_change_too(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = start(LIB)
    monkeypatch.delattr(os, "isatty")
    with pytest.raises(AttributeError):
        lib.colour()
    monkeypatch.undo()
    assert isinstance(lib.colour(), bool)


def test_the_harness_s_own_write_never_crosses(start: Load) -> None:
    lib = start(LIB)
    own, original = lib.colour(), os.isatty
    namespace: dict[str, Any] = {}
    exec(_AS_HARNESS, namespace)  # noqa: S102 - our own two-line function, compiled under a chosen name
    try:
        namespace["patch"](os)
        assert lib.colour() is own
    finally:
        os.isatty = original


def test_a_function_that_acts_on_the_world_is_never_handed_over(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = start(LIB)
    ran: list[str] = []

    # A test's stand-in for os.system: were it to cross, the change would run commands as the grader.
    def system(command: str) -> int:
        ran.append(command)
        return 0

    monkeypatch.setattr(os, "system", system)
    assert lib.shell("exit 3") != 0  # the subject's own os.system ran it
    assert ran == []
    acting = [("os", "system"), ("subprocess", "Popen"), ("subprocess", "run"), ("os", "execv")]
    assert all(name not in AMBIENT_FUNCTIONS.get(module, ()) for module, name in acting)


class MockStdout:
    """termcolor's shape: a test's own stream, with no descriptor and a terminal of its own."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def fileno(self) -> int:
        raise io.UnsupportedOperation()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.written.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_test_s_own_stream_object_is_the_change_s_stdout(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = start(LIB)
    mock = MockStdout()
    monkeypatch.setattr("sys.stdout", mock)
    assert lib.stdout_colour() is True
    lib.shout("hi")
    assert "".join(mock.written) == "hi\n"
    monkeypatch.undo()
    assert lib.stdout_kind() == "_Stream"  # the subject's own capture again


def test_pytest_s_capture_and_a_plain_buffer_are_never_handed_over(
    start: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = start(LIB)
    print("the test's own output, which the change must not read")
    assert lib.stdout_kind() == "_Stream"
    lib.shout("from the change")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert lib.stdout_kind() == "_Stream"
        lib.shout("redirected")
    assert buffer.getvalue() == "redirected\n"  # relayed here, as before
    assert capsys.readouterr().out.endswith("from the change\n")


def test_a_test_s_double_is_handed_over_to_be_called_and_nothing_else(start: Load) -> None:
    # Red-team: the test's mock.patch("time.sleep") MagicMock reached the change whole - it set the
    # mock's call_count, replaced its assert method and the return value of the test's own clock.
    lib = start(LIB)
    with mock.patch("time.sleep") as sleep:
        with pytest.raises(AttributeError):
            lib.forge_count()
        with pytest.raises(AttributeError):
            lib.forge_assert()
        assert sleep.call_count == 0
        with pytest.raises(AssertionError):
            sleep.assert_called_once_with(5)
        assert lib.wait(2) == "waited" and sleep.call_args_list == [mock.call(2)]  # called: yes
    with mock.patch("time.time", return_value=0.0):
        with pytest.raises(AttributeError):
            lib.forge_clock()
        assert time.time() == 0.0


class Tee:
    """A test's helper: records what is written and passes it on (to pytest's capture)."""

    def __init__(self) -> None:
        self.inner = sys.stdout
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines.append(text)
        return int(self.inner.write(text))

    def flush(self) -> None:
        self.inner.flush()


def test_a_test_s_stream_is_handed_over_as_a_stream_alone(
    start: Load, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Red-team: a tee of the suite's as sys.stdout handed the change pytest's capture through .inner.
    lib = start(LIB)
    print("EXPECTED-SECRET-43")
    tee = Tee()
    monkeypatch.setattr(sys, "stdout", tee)
    with pytest.raises(AttributeError):
        lib.peek_inner()
    lib.shout("through the tee")
    monkeypatch.undo()
    assert tee.lines == ["through the tee", "\n"]


def test_the_change_s_own_object_as_the_test_s_stdout_is_no_suite_stream(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Red-team: reading its module's __file__ was a request made under the bridge's lock (a hang to
    # the deadline), and the change could answer it with a suite path.
    lib = start(LIB)
    monkeypatch.setattr(sys, "stdout", lib.Writer())
    kind = lib.stdout_kind()
    monkeypatch.undo()
    assert kind == "_Stream"


def test_a_watched_standard_library_module_still_crosses_as_the_subject_s_own(start: Load) -> None:
    lib = start(LIB)
    assert [lib.name_of(m) for m in (json, time, os)] == ["json", "time", "os"]


class Keeper:
    """A test's fake stream that keeps its text and gives itself back from write (as a tee may)."""

    def __init__(self) -> None:
        self.text = "the test's own private text"

    def write(self, text: str) -> Keeper:
        self.text += text
        return self


class Clock:
    def __init__(self) -> None:
        self.now = 1700000123.25

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_what_the_test_s_stream_and_double_take_and_give_is_plain(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Red-team (second pass): a tee's write returning itself handed the change the tee, pytest's capture
    # with it; the change's object written to the test's stream, or passed to its double, reached their
    # state through __radd__ (self.text += s, self.now += s).
    lib = start(LIB)
    monkeypatch.setattr(sys, "stdout", Keeper())
    monkeypatch.setattr(time, "sleep", Clock().sleep)
    assert lib.write_back() == "NoneType"
    assert lib.write_evil() == []


def test_the_change_s_objects_as_the_test_s_streams_or_arguments_never_hang_the_grader(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Red-team (second pass): comparing two of the change's objects at sys.stdout, or turning one in
    # sys.argv into text, ran their __eq__ / __str__ - a request - with the bridge's lock held.
    lib = start(LIB)
    monkeypatch.setattr(sys, "stdout", lib.Writer())
    assert lib.stdout_kind() == "_Stream"
    monkeypatch.setattr(sys, "stdout", lib.Writer())
    assert lib.stdout_kind() == "_Stream"
    monkeypatch.undo()
    monkeypatch.setattr(sys, "argv", ["prog", lib.Writer(), 3, Path("/tmp/x")])
    assert lib.argv_of() == ["prog", "", "3", "/tmp/x"]


class Secret:
    token = "the test's private token"


def test_a_test_s_object_set_in_a_function_s_place_is_never_handed_over(
    start: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    lib = start(LIB)
    monkeypatch.setattr(socket, "gethostname", Secret())  # not callable: no double to call
    assert lib.hostname_kind() == "builtin_function_or_method"  # the subject's own
