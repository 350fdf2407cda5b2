"""Where the grader and the subject meet: a socket only the grader can create, one connection."""

from __future__ import annotations

import os
import socket
import struct

SOCKET_NAME = "grader.sock"
_UCRED = struct.Struct("3i")


class NoSubject(Exception):
    """The subject never connected (its tree did not fit, or its start-up failed)."""


def open_report(path: str) -> int:
    """Create the report (it must not exist) and return a descriptor that alone can write it.

    The file and everything else under the grader's home become read-only,
    even to the grader: a test that writes to a path the code under test
    planted as a symlink into /grader (a test's own ``tmp_path`` is shared
    with it) is refused by the kernel instead of overwriting the report.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    home = os.path.dirname(path)
    for dirpath, dirnames, filenames in os.walk(home, topdown=False):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o400, follow_symlinks=False)
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o500, follow_symlinks=False)
    os.chmod(home, 0o500)
    return fd


def listen(directory: str) -> tuple[socket.socket, str]:
    """Listen on a socket in ``directory`` (ours, mode 0711) that other uids may connect to."""
    path = os.path.join(directory, SOCKET_NAME)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    # Connecting needs write permission on the socket; the directory stays ours alone.
    os.chmod(path, 0o666)  # noqa: S103 - the subject must connect; it cannot create or remove
    server.listen(1)
    return server, path


def accept(server: socket.socket, timeout: float) -> socket.socket:
    """Accept the first connection from another uid; nobody else gets in after it."""
    server.settimeout(timeout)
    try:
        while True:
            conn, _ = server.accept()
            _, uid, _ = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
            if uid not in (os.getuid(), 0):
                conn.settimeout(None)
                return conn
            conn.close()
    except TimeoutError:
        raise NoSubject(f"the code under test did not start within {timeout:g}s") from None
    finally:
        server.close()
