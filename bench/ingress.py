"""Webhook ingress under load: prints acknowledgement latency and throughput (not a test).

Starts the real server (`patchgate serve`, in-process workers, the fake
GitHub of the tests) on loopback and sends it signed deliveries from this
process, open loop: each delivery leaves at its scheduled time whether or not
the earlier ones were answered, as GitHub's would.

What it sends is GitHub's own example payloads (the npm package
`@octokit/webhooks-examples`, every example of every action) of every event
GitHub sends this App: the manifest's `default_events` (bot/cli/app-manifest.json)
and the events every App receives unsubscribed (`installation`,
`installation_repositories`, `github_app_authorization`, `ping`). The package
is fetched once with `npm pack` into a cache under $TMPDIR (`--examples-cache`)
and read from there; nothing of it is in the repository beyond the first
example of each action that tests/fixtures/webhooks vendors. Each body is the
example as GitHub serialises it, signed with the webhook secret as GitHub signs
it (`X-Hub-Signature-256`, and the headers GitHub sends beside it). Only one
field is changed: a pull_request delivery that starts a gate run gets a fresh
head sha (as each real push has), so it queues a job instead of meeting the
one its example queued before; the worker then runs it against the fake
GitHub, which knows no such PR, so the job ends at once. Examples without an
`installation` (a repository webhook's) are recorded and ignored, as the
server would any.

The fake GitHub runs in a process of its own and the client is plain asyncio
over keep-alive connections (not httpx), so neither takes the cores' time
from the sending; a delivery's latency runs from its due time, not from when
this process got round to sending it (the row's `client late` says by how
much it was late), so a slow client never flatters the server. Per rate it
prints p50, p99 and max of the time to the 202, the answers per second, and
the p99 against the 50 ms target; with `--by-event`, the same per event.
Run on SQLite and, when PATCHGATE_TEST_POSTGRES_URL is set
(scripts/services.sh), on PostgreSQL. Each row ends with the machine's
1-minute load average: the client, the server and its workers share the
machine's cores, so a busy machine shows in the tail first.

`--baseline REV` runs the server of another commit too (`git archive REV`
into a scratch directory; the same virtualenv), alternating the two
`--rounds` times per store, so a before/after pair is taken on the same
machine minutes apart.

Usage: .venv/bin/python bench/ingress.py [--rates 25,100] [--seconds 10] [--store sqlite,postgres]
         [--baseline REV] [--rounds 2] [--burst] [--by-event] [--examples-cache DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.web.signature import sign  # noqa: E402 - after the path set-up above
from sandbox.host import run_process  # noqa: E402
from tests.bot.harness import SECRET, Server, server_env  # noqa: E402
from tests.fakes.github_server import FakeGitHub, fake_github  # noqa: E402

TARGET_P99_S = 0.050
TARGET_RATE = 100
TARGET_MAX_S = 0.100
TARGET_MAX_RATE = 25
EXAMPLES = "@octokit/webhooks-examples@7.6.1"
MANIFEST = ROOT / "bot" / "cli" / "app-manifest.json"
# Sent to every GitHub App whatever it subscribes to (GitHub's "About webhooks for GitHub Apps").
ALWAYS_SENT = ("installation", "installation_repositories", "github_app_authorization", "ping")
# pull_request actions that start a gate run: each real one carries a new head sha.
NEW_HEAD = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})


# (example name, headers, body): one signed delivery, ready to send.
Delivery = tuple[str, dict[str, str], bytes]


@dataclass(frozen=True)
class Example:
    event: str
    action: str
    payload: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.event}.{self.action}" if self.action else self.event


def subscribed_events() -> list[str]:
    """Return every event GitHub sends this App: the manifest's and those sent to all Apps."""
    default: list[str] = json.loads(MANIFEST.read_text())["default_events"]
    return [*default, *(e for e in ALWAYS_SENT if e not in default)]


def examples_index(cache: Path) -> Path:
    """Return the package's api.github.com/index.json, fetching it with ``npm pack`` when absent."""
    index = cache / "package" / "api.github.com" / "index.json"
    if index.is_file():
        return index
    cache.mkdir(parents=True, exist_ok=True)
    argv = ("npm", "pack", "--silent", "--pack-destination", str(cache), EXAMPLES)
    result = run_process(argv, cwd=cache, check=True, timeout=300, what=f"fetching {EXAMPLES}")
    tgz = cache / result.stdout.decode().strip().splitlines()[-1]
    with tarfile.open(fileobj=io.BytesIO(tgz.read_bytes())) as tar:
        tar.extractall(cache, filter="data")
    return index


def load_examples(cache: Path) -> list[Example]:
    """Every example payload of every event this App receives, in the package's order."""
    wanted = subscribed_events()
    found: dict[str, list[Example]] = defaultdict(list)
    for entry in json.loads(examples_index(cache).read_text()):
        if entry["name"] in wanted:
            for payload in entry["examples"]:
                found[entry["name"]].append(Example(entry["name"], payload.get("action") or "", payload))
    missing = [e for e in wanted if not found[e]]
    if missing:
        raise SystemExit(f"{EXAMPLES} has no example of {', '.join(missing)}")
    return [ex for event in wanted for ex in found[event]]


def encode(example: Example, serial: int) -> tuple[dict[str, str], bytes]:
    """One delivery of ``example``: the body GitHub would send and the headers it signs it with."""
    payload = example.payload
    if example.event == "pull_request" and example.action in NEW_HEAD:
        payload = json.loads(json.dumps(payload))
        payload["pull_request"]["head"]["sha"] = hashlib.sha1(f"{serial}".encode()).hexdigest()  # noqa: S324 - a sha-shaped name, not security
    # GitHub sends compact JSON; the signature is over exactly these bytes.
    body = json.dumps(payload, separators=(",", ":")).encode()
    installation = payload.get("installation")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/bench",
        "X-GitHub-Event": example.event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "1",
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": "4242",
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
    }
    if isinstance(installation, dict):
        headers["X-GitHub-Hook-Installation-Target-ID"] = str(installation.get("id", 4242))
    return headers, body


def deliveries(examples: list[Example], count: int, seed: int) -> list[Delivery]:
    """``count`` signed deliveries: every example in turn, each turn shuffled (``seed``)."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible order, not a secret
    out: list[Delivery] = []
    while len(out) < count:
        turn = list(examples)
        rng.shuffle(turn)
        for ex in turn[: count - len(out)]:
            out.append((ex.name, *encode(ex, seed * 1_000_000 + len(out))))
    return out


@dataclass
class Result:
    latencies: list[tuple[str, float]]
    achieved: float
    errors: int
    # How late this process sent its deliveries: the client's own share of the tail.
    late: list[float]


def request_bytes(host: str, headers: dict[str, str], body: bytes) -> bytes:
    """One HTTP/1.1 POST /webhook, keep-alive, ready to write."""
    lines = ["POST /webhook HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Connections:
    """Keep-alive connections to the server: an idle one is reused, else a new one is opened.

    A plain asyncio client, not httpx: at 100 requests a second httpx cost this process
    a couple of milliseconds of CPU each, on the cores the server under test shares.
    """

    def __init__(self, url: str) -> None:
        parts = httpx.URL(url)
        self.host, self.port = parts.host, parts.port or 80
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, request: bytes) -> int:
        """Send ``request``; return the answer's status once its body is read."""
        for attempt in (1, 2):
            fresh = not self.idle
            conn = await asyncio.open_connection(self.host, self.port) if fresh else self.idle.pop()
            try:
                status = await self._exchange(conn, request)
            except (asyncio.IncompleteReadError, ConnectionError):
                conn[1].close()
                if fresh or attempt == 2:  # a reused connection may have timed out: one more try
                    raise
                continue
            self.idle.append(conn)
            return status
        raise AssertionError("unreachable")

    @staticmethod
    async def _exchange(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], request: bytes) -> int:
        reader, writer = conn
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length:
            await reader.readexactly(length)
        return status

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


async def open_loop(url: str, batch: list[Delivery], rate: float) -> Result:
    """Send ``batch`` at ``rate``/s; return each answer's latency from its due time, answers/s, errors."""
    pool = Connections(url)
    requests = [(name, request_bytes(f"{pool.host}:{pool.port}", h, b)) for name, h, b in batch]
    latencies: list[tuple[str, float]] = []
    late: list[float] = []
    errors = 0
    kinds: dict[str, int] = defaultdict(int)

    async def one(name: str, request: bytes, due: float) -> None:
        nonlocal errors
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        late.append(time.monotonic() - due)
        try:
            status = await pool.post(request)
        except (OSError, asyncio.IncompleteReadError) as exc:
            errors += 1
            kinds[type(exc).__name__] += 1
            return
        if status != 202:
            errors += 1
            kinds[f"{name} {status}"] += 1
        # From the due time, not the send: a late client counts against the server, never for it.
        latencies.append((name, time.monotonic() - due))

    start = time.monotonic() + 0.2
    await asyncio.gather(*(one(n, r, start + i / rate) for i, (n, r) in enumerate(requests)))
    elapsed = time.monotonic() - start
    pool.close()
    if kinds:
        print(f"  errors: {dict(kinds)}", flush=True)
    return Result(latencies, len(latencies) / elapsed, errors, late)


async def closed_loop(url: str, batch: list[Delivery], senders: int) -> float:
    """Send ``batch`` from ``senders`` concurrent senders; return answers/s."""
    pool = Connections(url)
    queue = [request_bytes(f"{pool.host}:{pool.port}", h, b) for _, h, b in batch]
    queue.reverse()

    async def sender() -> None:
        while queue:
            await pool.post(queue.pop())

    start = time.monotonic()
    await asyncio.gather(*(sender() for _ in range(senders)))
    pool.close()
    return len(batch) / (time.monotonic() - start)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fresh_postgres(url: str) -> str:
    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(url)
    name = f"patchgate_bench_{uuid.uuid4().hex[:8]}"
    admin = base.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.set(database=name).render_as_string(hide_password=False)


def key_pair() -> tuple[str, bytes]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


@contextlib.contextmanager
def fake_github_process(public_key: bytes) -> Iterator[str]:
    """Run the tests' fake GitHub in a process of its own; yield its URL.

    In this process its threads would share a GIL with the client: a job's GitHub call
    would delay the sending and the timing of deliveries.
    """
    argv = [sys.executable, str(Path(__file__).resolve()), "--fake-github"]
    # A server process for the run's length, not a command: run_process cannot hold it open.
    proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(public_key)
        proc.stdin.close()
        url = proc.stdout.readline().decode().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"the fake GitHub did not start (exit {proc.wait()})")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def serve_fake_github() -> None:
    """The child of fake_github_process: the App's public key on stdin, the URL on stdout."""
    public = sys.stdin.buffer.read()
    with fake_github(4242, public) as github:
        print(github.url, flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})


def source_tree(rev: str, scratch: Path) -> Path:
    """Return a copy of the sources at ``rev`` (``git archive``: the repository is not touched)."""
    tree = scratch / f"tree-{rev.replace('/', '_')}"
    if not tree.exists():
        tree.mkdir(parents=True)
        argv = ("git", "-C", str(ROOT), "archive", "--format=tar", rev)
        archive = run_process(
            argv, check=True, timeout=120, output_cap=1 << 30, what=f"git archive {rev}"
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
    return tree


def run_server(
    label: str,
    root: Path,
    store: str,
    *,
    rates: list[float],
    args: argparse.Namespace,
    examples: list[Example],
) -> None:
    private, public = key_pair()
    with fake_github_process(public) as github_url, tempfile.TemporaryDirectory() as scratch:
        state = Path(scratch)
        extra = {"PATCHGATE_CONCURRENCY": "2", "PATCHGATE_LEASE_S": "60", "PATCHGATE_REAPER_INTERVAL_S": "15"}
        if store == "postgres":
            extra["PATCHGATE_DATABASE_URL"] = fresh_postgres(os.environ["PATCHGATE_TEST_POSTGRES_URL"])
        env = server_env(
            github=FakeGitHub(4242, public, url=github_url), private_key=private, state=state, **extra
        )
        env["PYTHONPATH"] = str(root)
        server = Server(env, log=state / "server.log", root=root)
        server.start()
        try:
            warm = deliveries(examples, len(examples), seed=0)
            asyncio.run(open_loop(server.url, warm, 20))  # the connection pool, the parsers, every route
            for rate in rates:
                batch = deliveries(examples, int(rate * args.seconds), seed=int(rate))
                result = asyncio.run(open_loop(server.url, batch, rate))
                report(label, store, rate, result, by_event=args.by_event)
                time.sleep(1)
            if args.burst:
                batch = deliveries(examples, int(max(rates) * 5), seed=7)
                burst = asyncio.run(closed_loop(server.url, batch, 32))
                print(
                    f"{label:10s} {store:8s} sustained (32 senders, closed loop): {burst:6.1f}/s", flush=True
                )
        finally:
            server.stop()
            if args.keep_logs:
                target = Path(args.keep_logs) / f"{label}-{store}-{time.time():.0f}.log"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes((state / "server.log").read_bytes())


def report(label: str, store: str, rate: float, result: Result, *, by_event: bool) -> None:
    times = [t for _, t in result.latencies]
    p50, p99, top = pct(times, 0.5), pct(times, 0.99), max(times, default=float("nan"))
    marks = []
    if rate == TARGET_RATE:
        marks.append("p99 ok" if p99 <= TARGET_P99_S else "p99 MISSED")
    if rate == TARGET_MAX_RATE:
        marks.append("max ok" if top <= TARGET_MAX_S else "max MISSED")
    late = max(result.late, default=0.0)
    print(
        f"{label:10s} {store:8s} {rate:5.0f}/s  p50 {p50 * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  "
        f"max {top * 1000:7.1f} ms  answered {result.achieved:6.1f}/s  errors {result.errors}  "
        f"p99/target {p99 / TARGET_P99_S:5.2f}  {' '.join(marks):14s} client late <= {late * 1000:.0f} ms  "
        f"(load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    if by_event:
        per: dict[str, list[float]] = defaultdict(list)
        for name, t in result.latencies:
            per[name.split(".")[0]].append(t)
        for name, values in sorted(per.items(), key=lambda kv: -max(kv[1])):
            print(
                f"{'':20s} {name:28s} n {len(values):4d}  p50 {pct(values, 0.5) * 1000:7.1f}  "
                f"p99 {pct(values, 0.99) * 1000:7.1f}  max {max(values) * 1000:7.1f} ms",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", default="25,100")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--store", default="sqlite,postgres")
    parser.add_argument("--baseline", help="also run the server of this commit, alternating with this tree's")
    parser.add_argument("--rounds", type=int, default=1, help="alternations per store (with --baseline)")
    parser.add_argument("--burst", action="store_true", help="end with a closed-loop burst (32 senders)")
    parser.add_argument("--by-event", action="store_true", help="latency per event under each rate")
    parser.add_argument("--keep-logs", help="copy each server's log into this directory")
    parser.add_argument(
        "--examples-cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "patchgate-bench-webhooks-examples",
    )
    parser.add_argument("--fake-github", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fake_github:
        serve_fake_github()
        return
    rates = [float(r) for r in args.rates.split(",")]
    examples = load_examples(args.examples_cache)
    counts: dict[str, int] = defaultdict(int)
    for ex in examples:
        counts[ex.event] += 1
    print(
        f"machine: {os.cpu_count()} cores; {args.seconds:.0f} s per rate; {len(examples)} examples "
        f"({', '.join(f'{e} {n}' for e, n in counts.items())}); targets: p99 <= 50 ms at 100/s, "
        "max <= 100 ms at 25/s"
    )
    servers: list[tuple[str, Path]] = [("this tree", ROOT)]
    with tempfile.TemporaryDirectory() as scratch:
        if args.baseline:
            servers.insert(0, (args.baseline[:10], source_tree(args.baseline, Path(scratch))))
        for store in args.store.split(","):
            if store == "postgres" and not os.environ.get("PATCHGATE_TEST_POSTGRES_URL"):
                print("postgres: skipped (PATCHGATE_TEST_POSTGRES_URL is not set; eval scripts/services.sh)")
                continue
            for round_ in range(args.rounds if args.baseline else 1):
                for label, root in servers if round_ % 2 == 0 else servers[::-1]:
                    run_server(label, root, store, rates=rates, args=args, examples=examples)


if __name__ == "__main__":
    main()
