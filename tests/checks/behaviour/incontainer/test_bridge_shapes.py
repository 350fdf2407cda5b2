"""Shapes of real projects' tests through the bridge (bench/isolation.py found each one failing).

A real subject process over a socketpair, as in test_bridge.py; each test
names the project test that showed the shape.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.incontainer.peer import Peer
from checks.behaviour.incontainer.proxy import Bridge, Importer
from tests.checks.behaviour.incontainer.test_bridge import ROOT, SUBJECT

Load = Callable[[str], Any]


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Load]:
    """Start a subject whose repository holds ``lib.py`` with the given source; return the proxy module."""
    started: list[tuple[subprocess.Popen[bytes], socket.socket, Importer]] = []

    def start(source: str) -> Any:
        (tmp_path / "lib.py").write_text(source)
        mine, theirs = socket.socketpair()
        process = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", SUBJECT, str(ROOT), str(tmp_path), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        importer = Importer(Bridge(Peer(mine, lambda request: {})), ["lib"])
        sys.meta_path.insert(0, importer)
        started.append((process, mine, importer))
        import lib  # type: ignore[import-not-found]

        return lib

    yield start
    for process, mine, importer in started:
        sys.meta_path.remove(importer)
        sys.modules.pop("lib", None)
        mine.close()
        process.wait(timeout=30)


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
