"""Helpers for driving the real service: the server process, signed deliveries, PR scenarios."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.settings import Settings
from bot.web.signature import sign
from tests.conftest import GitRepo
from tests.fakes.github_server import FakeGitHub, pull_json

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "webhooks"
APP_ID = 4242
INSTALLATION = 77
SECRET = "webhook-secret-for-tests"
AGENT = "patchbot[bot]"


def fixture(name: str) -> dict[str, Any]:
    """Load a recorded GitHub delivery (tests/fixtures/webhooks/<event>.<action>.json)."""
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@dataclass
class Server:
    """``patchgate serve`` as a real process (uvicorn on a loopback port)."""

    env: dict[str, str]
    log: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    pipeline: str = "tests.bot.pipelines:findings_gate"
    # The source tree the server runs from (bench/ingress.py runs an older commit's beside this one).
    root: Path = ROOT

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        argv = [
            sys.executable,
            "-m",
            "bot.cli",
            "serve",
            "--port",
            str(self.port),
            "--pipeline",
            self.pipeline,
        ]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                argv, cwd=self.root, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        wait_for(self._healthy, 90, f"the server on port {self.port} (log: {self.log})")
        # githubkit's validators are built in the background; tests time the steady state.
        wait_for(
            lambda: httpx.get(f"{self.url}/readyz", timeout=5).json().get("warm_up") == "ok",
            90,
            "the warm-up",
        )
        return self

    def _healthy(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(
                f"the server exited with {self.proc.returncode}:\n{self.log.read_text()[-4000:]}"
            )
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill9(self) -> None:
        """SIGKILL: no shutdown hooks, no chance to finish anything."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def post(
        self,
        event: str,
        payload: dict[str, Any] | bytes,
        *,
        delivery: str | None = None,
        headers: dict[str, str] | None = None,
        secret: str = SECRET,
    ) -> httpx.Response:
        """Deliver a webhook signed like GitHub does."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        sent = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/test",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "1",
            "X-Hub-Signature-256": sign(secret.encode(), body),
        }
        sent.update(headers or {})
        return httpx.post(
            f"{self.url}/webhook",
            content=body,
            headers={k: v for k, v in sent.items() if v != ""},
            timeout=60,
        )


def in_process_settings(github: FakeGitHub, private_key: str, tmp_path: Path, **extra: Any) -> Settings:
    """Settings for a worker or job run in the test's own process: SQLite and folders under ``tmp_path``."""
    return Settings(
        app_id=APP_ID,
        private_key=private_key,  # type: ignore[arg-type]
        webhook_secret="s",  # type: ignore[arg-type]
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        github_api_url=github.url,
        work_dir=tmp_path / "work",
        test_store=tmp_path / "suites",
        **extra,
    )


def server_env(*, github: FakeGitHub, private_key: str, state: Path, **extra: str) -> dict[str, str]:
    """The environment of a server process: the App, the fake GitHub, a private database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHGATE_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "PATCHGATE_CONFIG": str(state / "absent.env"),
            "PATCHGATE_APP_ID": str(APP_ID),
            "PATCHGATE_PRIVATE_KEY": private_key,
            "PATCHGATE_WEBHOOK_SECRET": SECRET,
            "PATCHGATE_DATABASE_URL": f"sqlite:///{state / 'patchgate.db'}",
            "PATCHGATE_GITHUB_API_URL": github.url,
            "PATCHGATE_WORK_DIR": str(state / "work"),
            "PATCHGATE_TEST_STORE": str(state / "suites"),
            "PATCHGATE_LEASE_S": "5",
            "PATCHGATE_REAPER_INTERVAL_S": "0.5",
            "PATCHGATE_RETRY_BACKOFF_S": "0.05",
            "PATCHGATE_MAX_BODY_BYTES": str(1024 * 1024),
        }
    )
    env.update(extra)
    return env


@dataclass
class Pull:
    """One PR scenario: a base repository (and maybe a fork) registered with the fake, and its payloads."""

    github: FakeGitHub
    repository: str
    repo: GitRepo
    number: int
    base_sha: str
    head_sha: str
    head_ref: str
    head_repository: str
    author: str = AGENT
    labels: tuple[str, ...] = ()
    draft: bool = False
    installation: int = INSTALLATION
    body: str = "Agent-written fix."

    def pr(self, state: str = "open") -> dict[str, Any]:
        return pull_json(
            fixture("pull_request.opened")["pull_request"],
            repository=self.repository,
            number=self.number,
            head_sha=self.head_sha,
            head_ref=self.head_ref,
            base_sha=self.base_sha,
            head_repository=self.head_repository,
            author=self.author,
            labels=self.labels,
            draft=self.draft,
            state=state,
            body=self.body,
        )

    def publish(self, state: str = "open") -> None:
        """Make the fake's REST view of the PR match this scenario."""
        self.github.set_pull(self.repository, self.number, self.pr(state))

    def payload(self, action: str) -> dict[str, Any]:
        """A real recorded pull_request delivery, with this PR's fields."""
        data = copy.deepcopy(fixture(f"pull_request.{action}"))
        owner, name = self.repository.split("/")
        data["action"] = action
        data["number"] = self.number
        data["pull_request"] = self.pr("closed" if action == "closed" else "open")
        data["repository"] = {
            **data["repository"],
            "full_name": self.repository,
            "name": name,
            "owner": {**data["repository"]["owner"], "login": owner},
        }
        data["installation"] = {
            "id": self.installation,
            "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==",
        }
        return data

    def push(self, files: dict[str, str | bytes | None], message: str = "more") -> str:
        """Commit more work on the head branch; the fake's PR moves to it."""
        self.head_sha = self.repo.commit(message, files)
        self.publish()
        return self.head_sha

    def runs(self) -> list[dict[str, Any]]:
        return self.github.runs_of(self.repository)

    def run_for(self, sha: str) -> dict[str, Any] | None:
        found = [r for r in self.runs() if r["head_sha"] == sha]
        return found[-1] if found else None

    def completed(self, sha: str | None = None) -> dict[str, Any] | None:
        run = self.run_for(sha or self.head_sha)
        return run if run is not None and run["status"] == "completed" else None


POLICY = "agents:\n  authors: ['*[bot]']\n"


def make_pull(
    github: FakeGitHub,
    root: Path,
    name: str,
    *,
    number: int = 1,
    scenario: dict[str, Any] | None = None,
    policy: str | None = POLICY,
    fork: bool = False,
    author: str = AGENT,
    draft: bool = False,
    head_ref: str = "agent/work",
    installation: int = INSTALLATION,
) -> Pull:
    """Create a repository (base on main, head on agent/work) and register it with the fake."""
    repository = f"octo/{name}"
    repo = GitRepo(root / name)
    base_files: dict[str, str | bytes | None] = {"app.py": "def add(a, b):\n    return a - b\n"}
    if policy is not None:
        base_files[".github/patchgate.yml"] = policy
    base_sha = repo.commit("base", base_files)
    head_files: dict[str, str | bytes | None] = {
        "app.py": "def add(a, b):\n    return a + b\n",
        "patchgate-test.json": json.dumps(scenario or {}),
    }
    head_repository = repository
    if fork:
        head_repository = f"forker/{name}"
        fork_repo = GitRepo(root / f"fork-{name}")
        subprocess.run(["git", "-C", str(fork_repo.path), "pull", "-q", str(repo.path), "main"], check=True)
        head_sha = fork_repo.commit("head", head_files)
        github.add_repo(head_repository, fork_repo.path)
        # GitHub has no copy of a fork's commits in the base repository's own branches.
        repo_for_head = fork_repo
    else:
        repo.branch(head_ref)
        head_sha = repo.commit("head", head_files)
        repo_for_head = repo
    github.add_repo(repository, repo.path)
    pull = Pull(
        github,
        repository,
        repo_for_head,
        number,
        base_sha,
        head_sha,
        head_ref,
        head_repository,
        author=author,
        draft=draft,
        installation=installation,
    )
    pull.publish()
    return pull


def another_pull(pull: Pull, number: int, *, scenario: dict[str, Any] | None = None) -> Pull:
    """Open a second PR on ``pull``'s repository: a branch of its own from the same base."""
    head_ref = f"agent/pr{number}"
    pull.repo.branch(head_ref, pull.base_sha)
    head_sha = pull.repo.commit(
        "head",
        {"app.py": "def add(a, b):\n    return a + b\n", "patchgate-test.json": json.dumps(scenario or {})},
    )
    other = dataclasses.replace(pull, number=number, head_sha=head_sha, head_ref=head_ref)
    other.publish()
    return other


def jobs(server: Server, repository: str | None = None) -> list[dict[str, Any]]:
    """The server's job rows, read straight from its SQLite database."""
    import sqlite3

    path = server.env["PATCHGATE_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM jobs ORDER BY id")]
    return [r for r in rows if repository is None or r["repository"] == repository]


def hold_file(tmp_path: Path, name: str = "hold") -> Path:
    """A file the test gate waits for (it touches ``<file>.started`` when it begins waiting)."""
    return tmp_path / name


def started(hold: Path) -> Callable[[], bool]:
    return lambda: Path(str(hold) + ".started").exists()
