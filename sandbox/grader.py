"""The second trust domain of a run: a grader beside the untrusted command, each with its own uid.

Inside one container (see sandbox.docker for the conventions):

- the grader runs as GRADER_UID in ``GRADER_HOME`` (a tmpfs of mode 0700 it
  owns: the untrusted uid can neither list, read nor write anything there);
- its private files (a hidden suite, a plan, expected values) reach that
  tmpfs through an exec's standard input as a tarball, so no file on the host
  or in the container that another uid can open ever holds them;
- it listens on a socket in ``RENDEZVOUS`` (mode 0711, owned by the grader:
  the untrusted uid may connect to the socket, never create, rename or remove
  a file there);
- the untrusted command runs as SANDBOX_UID with the oom-killer's highest
  score, so a memory bomb loses its own process first; its output is drained
  and capped, and never read as a result.
"""

from __future__ import annotations

import io
import socket
import tarfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from sandbox.errors import SandboxError
from sandbox.spec import GRADER_HOME, MiB, Mount
from sandbox.stream import Demux, ExecStream

GRADER_UID = 10003
PRIVATE_CAP = 256 * MiB
SUBJECT_OUTPUT_CAP = 64 * 1024
_PRIVATE_TIMEOUT_S = 120.0
_UNPACK = f"umask 077 && tar -x -f - -C {GRADER_HOME} && echo patchgate-private-ok"


def pack_private(private: Sequence[Mount]) -> bytes:
    """Return one tarball of every private source, each under its target below GRADER_HOME."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for mount in private:
            target = mount.target.removeprefix(GRADER_HOME).strip("/")
            if not mount.target.startswith(GRADER_HOME + "/") or ".." in target.split("/") or not target:
                raise ValueError(f"a private target must be a path under {GRADER_HOME}: {mount.target!r}")
            if not mount.source.exists():
                raise SandboxError(f"private source {mount.source} does not exist")
            tar.add(mount.source, arcname=target, filter=_plain)
    data = buf.getvalue()
    if len(data) > PRIVATE_CAP:
        raise SandboxError(f"the grader's private files exceed {PRIVATE_CAP // MiB} MiB")
    return data


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isdir() or info.isreg()):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o700 if info.isdir() else 0o600
    return info


def copy_private(api: Any, container_id: str, payload: bytes) -> None:
    """Unpack ``payload`` into GRADER_HOME as the grader, fed through the exec's stdin."""
    exec_id = api.exec_create(
        container_id, ["sh", "-c", _UNPACK], user=f"{GRADER_UID}:{GRADER_UID}", stdin=True
    )["Id"]
    handle = api.exec_start(exec_id, socket=True)
    raw: socket.socket = getattr(handle, "_sock", None) or handle
    stream = ExecStream(handle)
    demux = Demux(64 * 1024)
    try:
        raw.settimeout(_PRIVATE_TIMEOUT_S)
        raw.sendall(payload)
        raw.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + _PRIVATE_TIMEOUT_S
        while time.monotonic() < deadline:
            chunk = stream.read(1.0)
            if chunk == b"":
                break
            if chunk:
                demux.feed(chunk)
    finally:
        stream.close()
    code = api.exec_inspect(exec_id).get("ExitCode")
    if code != 0 or b"patchgate-private-ok" not in demux.stdout:
        detail = bytes(demux.stderr[-500:]).decode("utf-8", "replace").strip()
        raise SandboxError(f"copying the grader's private files failed (exit {code}): {detail}")


class SubjectDrain:
    """Read the untrusted command's exec stream in a thread, keeping at most a small cap.

    The engine finishes an exec only after its output is delivered, so the
    stream is read to its end whatever it holds; bytes past the cap are dropped.
    """

    def __init__(self, api: Any, exec_id: str) -> None:
        self.api = api
        self.exec_id = exec_id
        self.demux = Demux(SUBJECT_OUTPUT_CAP)
        self._stream = ExecStream(api.exec_start(exec_id, socket=True))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="patchgate-subject", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            chunk = self._stream.read(0.25)
            if chunk == b"":
                return
            if chunk:
                self.demux.feed(chunk)

    def finish(self, timeout: float) -> tuple[bytes, int | None]:
        """Stop reading (after ``timeout`` at most) and return (output, exit code or None)."""
        self._thread.join(timeout)
        self._stop.set()
        self._thread.join(1.0)
        self._stream.close()
        output = bytes(self.demux.stdout) + bytes(self.demux.stderr)
        try:
            code = self.api.exec_inspect(self.exec_id).get("ExitCode")
        except Exception:  # the container may be gone; the code is informative only
            code = None
        return output, code if isinstance(code, int) else None
