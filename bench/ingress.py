"""Webhook ingress under load: prints acknowledgement latency and throughput (not a test).

Starts the real server (`patchgate serve`, in-process workers, the fake
GitHub of the tests) on loopback and sends it signed deliveries from this
process, open loop, at rising rates: each delivery leaves at its scheduled
time whether or not the earlier ones were answered, as GitHub's would. A
third each of `check_run.created` and `pull_request.labeled` (recorded,
ignored) and `pull_request.synchronize` (parsed, routed, a job queued; the
fake GitHub answers 404 for the PR, so the job ends at once). Per rate it
prints p50 and p99 of the time to the 202, the deliveries answered per
second, and the p99 against the 50 ms target; then a closed-loop burst (32
senders as fast as they can) for the sustained rate. Run on SQLite and, when
PATCHGATE_TEST_POSTGRES_URL is set (scripts/services.sh), on PostgreSQL.
Each row ends with the machine's 1-minute load average: the client, the
server and its workers share the machine's cores, so a busy machine shows in
the tail first.

Usage: .venv/bin/python bench/ingress.py [--rates 25,50,100,200] [--seconds 10] [--store sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.web.signature import sign  # noqa: E402 - after the path set-up above
from tests.bot.harness import SECRET, Server, fixture, server_env  # noqa: E402
from tests.fakes.github_server import fake_github  # noqa: E402

TARGET_P99_S = 0.050
TARGET_RATE = 100


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


def deliveries(count: int) -> list[tuple[dict[str, str], bytes]]:
    """Signed deliveries, ready to send: a third each of two ignored events and a routed one."""
    templates = [
        ("check_run", fixture("check_run.created")),
        ("pull_request", fixture("pull_request.labeled")),
        ("pull_request", fixture("pull_request.synchronize")),
    ]
    out = []
    for i in range(count):
        event, payload = templates[i % 3]
        if payload.get("action") == "synchronize":
            payload = json.loads(json.dumps(payload))
            payload["pull_request"]["head"]["sha"] = f"{i:040x}"
        body = json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
        }
        out.append((headers, body))
    return out


async def open_loop(url: str, rate: float, seconds: float) -> tuple[list[float], float, int]:
    """Send ``rate``/s for ``seconds``; return latencies, achieved answers/s and errors."""
    batch = deliveries(int(rate * seconds))
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def one(headers: dict[str, str], body: bytes, due: float) -> None:
            nonlocal errors
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            sent = time.monotonic()
            try:
                response = await client.post("/webhook", content=body, headers=headers)
                if response.status_code != 202:
                    errors += 1
            except httpx.HTTPError:
                errors += 1
                return
            latencies.append(time.monotonic() - sent)

        start = time.monotonic() + 0.2
        tasks = [one(h, b, start + i / rate) for i, (h, b) in enumerate(batch)]
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - start
    return latencies, len(latencies) / elapsed, errors


async def closed_loop(url: str, senders: int, total: int) -> float:
    """Send ``total`` deliveries from ``senders`` concurrent senders; return answers/s."""
    batch = deliveries(total)
    queue: asyncio.Queue[tuple[dict[str, str], bytes]] = asyncio.Queue()
    for item in batch:
        queue.put_nowait(item)
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:

        async def sender() -> None:
            while not queue.empty():
                headers, body = queue.get_nowait()
                await client.post("/webhook", content=body, headers=headers)

        start = time.monotonic()
        await asyncio.gather(*(sender() for _ in range(senders)))
        return total / (time.monotonic() - start)


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


def run_store(store: str, rates: list[float], seconds: float) -> list[tuple[str, float, float, float, float]]:
    private, public = key_pair()
    rows = []
    with fake_github(4242, public) as github, tempfile.TemporaryDirectory() as scratch:
        state = Path(scratch)
        extra = {"PATCHGATE_CONCURRENCY": "2"}
        if store == "postgres":
            extra["PATCHGATE_DATABASE_URL"] = fresh_postgres(os.environ["PATCHGATE_TEST_POSTGRES_URL"])
        env = server_env(github=github, private_key=private, state=state, **extra)
        env["PATCHGATE_LEASE_S"] = "60"
        env["PATCHGATE_REAPER_INTERVAL_S"] = "15"
        server = Server(env, log=state / "server.log")
        server.pipeline = "tests.bot.pipelines:findings_gate"
        server.start()
        try:
            asyncio.run(open_loop(server.url, 20, 2))  # warm the connection pool and the parsers
            for rate in rates:
                latencies, achieved, errors = asyncio.run(open_loop(server.url, rate, seconds))
                p50, p99 = pct(latencies, 0.5), pct(latencies, 0.99)
                rows.append((store, rate, p50, p99, achieved))
                mark = "ok" if p99 <= TARGET_P99_S else "MISSED" if rate == TARGET_RATE else ""
                ratio = p99 / TARGET_P99_S
                print(
                    f"{store:8s} {rate:6.0f}/s  p50 {p50 * 1000:8.1f} ms  p99 {p99 * 1000:8.1f} ms  "
                    f"answered {achieved:6.1f}/s  errors {errors}  p99/target {ratio:6.2f} {mark}"
                    f"  (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
                time.sleep(1)
            burst = asyncio.run(closed_loop(server.url, 32, int(max(rates) * 5)))
            print(f"{store:8s} sustained (32 senders, closed loop): {burst:6.1f} deliveries/s", flush=True)
        finally:
            server.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", default="25,50,100,200")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--store", default="sqlite,postgres")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    print(f"machine: {os.cpu_count()} cores; {args.seconds:.0f} s per rate; target p99 <= 50 ms at 100/s")
    for store in args.store.split(","):
        if store == "postgres" and not os.environ.get("PATCHGATE_TEST_POSTGRES_URL"):
            print("postgres: skipped (PATCHGATE_TEST_POSTGRES_URL is not set; eval scripts/services.sh)")
            continue
        rows = run_store(store, rates, args.seconds)
        at_target = [r for r in rows if r[1] == TARGET_RATE]
        if at_target:
            p99 = at_target[0][3]
            print(f"{store:8s} p99 at {TARGET_RATE}/s / 50 ms target = {p99 / TARGET_P99_S:.2f}")


if __name__ == "__main__":
    main()
