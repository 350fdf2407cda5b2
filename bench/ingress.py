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

Per rate it prints p50, p99 and max of the time to the 202, the answers per
second, and the p99 against the 50 ms target; with `--by-event`, the same
per event. Run on SQLite and, when PATCHGATE_TEST_POSTGRES_URL is set
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
import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.web.signature import sign  # noqa: E402 - after the path set-up above
from sandbox.host import run_process  # noqa: E402
from tests.bot.harness import SECRET, Server, server_env  # noqa: E402
from tests.fakes.github_server import fake_github  # noqa: E402

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


def deliveries(examples: list[Example], count: int, seed: int) -> list[tuple[str, dict[str, str], bytes]]:
    """``count`` signed deliveries: every example in turn, each turn shuffled (``seed``)."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible order, not a secret
    out: list[tuple[str, dict[str, str], bytes]] = []
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


async def open_loop(url: str, batch: list[tuple[str, dict[str, str], bytes]], rate: float) -> Result:
    """Send ``batch`` at ``rate``/s; return each answer's latency, answers/s and errors."""
    latencies: list[tuple[str, float]] = []
    errors = 0
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def one(name: str, headers: dict[str, str], body: bytes, due: float) -> None:
            nonlocal errors
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            sent = time.monotonic()
            try:
                response = await client.post("/webhook", content=body, headers=headers)
            except httpx.HTTPError:
                errors += 1
                return
            if response.status_code != 202:
                errors += 1
            latencies.append((name, time.monotonic() - sent))

        start = time.monotonic() + 0.2
        await asyncio.gather(*(one(n, h, b, start + i / rate) for i, (n, h, b) in enumerate(batch)))
        elapsed = time.monotonic() - start
    return Result(latencies, len(latencies) / elapsed, errors)


async def closed_loop(url: str, batch: list[tuple[str, dict[str, str], bytes]], senders: int) -> float:
    """Send ``batch`` from ``senders`` concurrent senders; return answers/s."""
    queue: asyncio.Queue[tuple[str, dict[str, str], bytes]] = asyncio.Queue()
    for item in batch:
        queue.put_nowait(item)
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:

        async def sender() -> None:
            while not queue.empty():
                _, headers, body = queue.get_nowait()
                await client.post("/webhook", content=body, headers=headers)

        start = time.monotonic()
        await asyncio.gather(*(sender() for _ in range(senders)))
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


def source_tree(rev: str, scratch: Path) -> Path:
    """Return a copy of the sources at ``rev`` (``git archive``: the repository is not touched)."""
    tree = scratch / f"tree-{rev.replace('/', '_')}"
    if not tree.exists():
        tree.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", rev], check=True, capture_output=True
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
    with fake_github(4242, public) as github, tempfile.TemporaryDirectory() as scratch:
        state = Path(scratch)
        extra = {"PATCHGATE_CONCURRENCY": "2", "PATCHGATE_LEASE_S": "60", "PATCHGATE_REAPER_INTERVAL_S": "15"}
        if store == "postgres":
            extra["PATCHGATE_DATABASE_URL"] = fresh_postgres(os.environ["PATCHGATE_TEST_POSTGRES_URL"])
        env = server_env(github=github, private_key=private, state=state, **extra)
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
    print(
        f"{label:10s} {store:8s} {rate:5.0f}/s  p50 {p50 * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  "
        f"max {top * 1000:7.1f} ms  answered {result.achieved:6.1f}/s  errors {result.errors}  "
        f"p99/target {p99 / TARGET_P99_S:5.2f}  {' '.join(marks):14s} (load {os.getloadavg()[0]:.1f})",
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
    args = parser.parse_args()
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
