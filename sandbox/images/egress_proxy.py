"""A CONNECT-only proxy to the allowed host:port pairs, and the relay that reaches it (standard library only).

Run by sandbox/egress.py, in two places::

    python3 -I egress_proxy.py --serve <unix socket> <host:port>[,<host:port>...]
    python3 -I egress_proxy.py --relay <port> <unix socket>

``--serve`` runs in a container of its own on the engine's default network,
listening on a Unix socket only (in a folder shared with the build): a
request is one ``CONNECT host:port`` line and its headers; an allowed target
gets ``200`` and the two sockets are spliced, any other request (another
target, a plain ``GET http://...``, a malformed line) gets ``403`` and is
closed. The target is the name as asked, compared exactly.

``--relay`` runs inside the build container, which has no network at all
(only loopback): it listens on ``127.0.0.1:<port>`` and carries each
connection to the Unix socket, so pip's ``proxy`` setting works. It returns
once it listens, and goes on in the background. The code being built may
stop it or talk to the socket itself: either way the proxy decides.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Awaitable, Callable

MAX_HEADER_BYTES = 16 * 1024
IDLE_S = 300.0
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), IDLE_S):
            writer.write(chunk)
            await writer.drain()
    except (OSError, TimeoutError):
        pass
    finally:
        writer.close()


async def _refuse(writer: asyncio.StreamWriter, why: str) -> None:
    body = why.encode()
    writer.write(
        b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    try:
        await writer.drain()
    finally:
        writer.close()


def proxy(allowed: frozenset[str]) -> Handler:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            writer.close()
            return
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) != 3 or parts[0] != "CONNECT":
            await _refuse(writer, "patchgate: only CONNECT to the package index is allowed\n")
            return
        target = parts[1].lower()
        if target not in allowed:
            print(f"refused {target}", flush=True)
            await _refuse(writer, f"patchgate: {target} is not the package index\n")
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 30)
        except (OSError, ValueError, TimeoutError) as exc:
            await _refuse(writer, f"patchgate: {target} cannot be reached ({type(exc).__name__})\n")
            return
        print(f"connected {target}", flush=True)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(_pipe(reader, upstream[1]), _pipe(upstream[0], writer))

    return serve


def relay(path: str) -> Handler:
    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_unix_connection(path)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, upstream[1]), _pipe(upstream[0], writer))

    return carry


async def _serve_unix(path: str, allowed: frozenset[str]) -> None:
    server = await asyncio.start_unix_server(proxy(allowed), path, limit=MAX_HEADER_BYTES)
    os.chmod(path, 0o666)  # noqa: S103 - the build runs as root, the proxy as nobody: the way in is this
    print(f"listening on {path} for {','.join(sorted(allowed))}", flush=True)
    async with server:
        await server.serve_forever()


async def _relay(listening: socket.socket, path: str) -> None:
    server = await asyncio.start_server(relay(path), sock=listening)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--serve":
        asyncio.run(_serve_unix(argv[1], frozenset(t.lower() for t in argv[2].split(",") if t)))
        return 0
    if len(argv) == 3 and argv[0] == "--relay":
        listening = socket.create_server(("127.0.0.1", int(argv[1])))
        if os.fork():
            return 0  # listening already: what comes next may connect at once
        os.setsid()
        asyncio.run(_relay(listening, argv[2]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
