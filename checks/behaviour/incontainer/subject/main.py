"""The subject: the only process that imports and runs the change's code.

Usage: ``python3 -P -s -B /patchgate/launch.py subject SOCKET REPO``

It runs as the sandbox's untrusted uid, connects to the grader's socket and
serves its requests (``agent.py``) until the grader closes the channel.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from .. import process
from . import ambient, tracer
from .agent import Agent
from .cases import CallTimeout

CONNECT_S = 60.0


def _on_alarm(signum: int, frame: object) -> None:
    raise CallTimeout("the call did not return before its deadline")


def connect(path: str, within: float = CONNECT_S) -> socket.socket:
    """Connect to the grader's socket, waiting for it to listen."""
    deadline = time.monotonic() + within
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    """Connect, then serve until the grader closes the channel."""
    path, repo = argv
    ambient.STARTUP.update(os.environ)
    sock = connect(path)
    harness = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != harness]
    tracer.TOOL_PATH[:] = sys.path  # the tools load from here, never from the tree
    sys.path[:0] = [p for p in (os.path.join(repo, "src"), repo) if os.path.isdir(p)]
    os.chdir(repo)
    # What we create in a test's shared folders the grader may remove (a TemporaryDirectory's
    # cleanup, as the test's uid): nothing of ours is kept from the grader.
    os.umask(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    process.become_subreaper()
    signal.signal(signal.SIGALRM, _on_alarm)
    # The process's logging, once, by the process itself (an Agent made in another process, a test's,
    # must not turn that process's root logger to its lowest level).
    ambient.install_log_relay()
    agent = Agent(sock, repo)
    threading.Thread(target=agent.watchdog, name="patchgate-watchdog", daemon=True).start()
    agent.peer.serve_forever()
    return 0
