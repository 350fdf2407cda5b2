"""A fake GitHub REST server: a real HTTP server in a thread, backed by local git repositories.

It speaks the few endpoints patchgate uses, the way GitHub does:
- ``POST /app/installations/{id}/access_tokens`` checks the App JWT (RS256,
  against the App's public key) and issues a short token; a removed
  installation answers 404 and its tokens stop working (401);
- pulls, contents (a file at a sha, base64) and tarballs (``git archive`` of a
  local repository with one top-level folder, behind a redirect like
  codeload's); a pull's commits (``git log`` of base..head); issues (set with
  ``set_issue``; 403 when the installation lacks the ``issues`` permission);
  a commit by ref (``GET /repos/{repo}/commits/{ref}``, the sha only), and the
  installation covering a repository (App JWT; 404 unless set in ``installations``);
  a PR's comments (list, create, edit; 403 without issues or pull_requests write) and reactions on them:
  what the App writes is the App's bot user's (``{slug}[bot]``, ``type: "Bot"``), and a test posts as
  anyone else with ``post_comment``; ``GET /app`` (App JWT) answers the App with its ``slug``;
- git trees (a commit's, recursive; cut short for ``truncate_trees``) and blobs (base64), which
  patchgate checks a tarball against;
- check runs: every create/update body is validated against githubkit's
  request models (and GitHub's size limits) and recorded; annotations
  accumulate across updates as on GitHub;
- ``POST /app-manifests/{code}/conversions`` for the App manifest flow.
- ``POST /repos/{repo}/code-scanning/sarifs``: the body is checked against the
  REST description's schema (tests/fixtures/rest/), the log is gunzipped and
  kept in ``sarifs``; 403 without ``security_events: write``.
Any request can be scripted to fail first (``fail``): 500s, rate limits, 404s.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import secrets
import subprocess
import threading
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jwt
from pydantic import BaseModel, ValidationError

MAX_SUMMARY_BYTES = 65_535
# GitHub's own example payloads (tests/fixtures/webhooks/README.md).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"


# GitHub's reaction contents (https://docs.github.com/en/rest/reactions/reactions#about-reactions).
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


@dataclass(frozen=True)
class Call:
    """One request the fake received, and what it answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int


@dataclass
class Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: dict[str, Any]
    # Do the work, then answer with the failure (GitHub failing after it acted).
    after: bool = False
    # Only requests whose JSON body holds this key at any depth (e.g. "annotations").
    body_key: str | None = None


@dataclass
class FakeGitHub:
    """The fake's state. Register repositories and pulls, then point the App at ``url``."""

    app_id: int
    public_key: bytes
    repos: dict[str, Path] = field(default_factory=dict)
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    removed_installations: set[int] = field(default_factory=set)
    tokens: dict[str, int] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    conversions: dict[str, dict[str, Any]] = field(default_factory=dict)
    issues: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    # Repositories whose installation the App may look up (GET /repos/{repo}/installation).
    installations: dict[str, int] = field(default_factory=dict)
    # PR comments by id: repository, number, body, user (issues/{n}/comments). A comment stored
    # without a user was not written through the API: it is shown as someone else's (OTHER_USER).
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The App's slug (GET /app); its bot user, who writes what the App writes, is "{slug}[bot]".
    slug: str = "patchgate"
    # Reactions the App put on comments: (repository, comment id, content), in order.
    reactions: list[tuple[str, int, str]] = field(default_factory=list)
    # What installation tokens may do (the App's granted permissions).
    permissions: dict[str, str] = field(
        default_factory=lambda: {
            "checks": "write",
            "contents": "read",
            "issues": "read",
            "pull_requests": "write",
            "metadata": "read",
        }
    )
    # SARIF uploads: repository, the request body and the decoded log, in order.
    sarifs: list[dict[str, Any]] = field(default_factory=list)
    # Blobs read (git/blobs): repository and sha, in order; repositories whose trees list in part.
    blobs_read: list[tuple[str, str]] = field(default_factory=list)
    truncate_trees: set[str] = field(default_factory=set)
    failures: list[Failure] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)
    url: str = ""
    token_ttl: timedelta = timedelta(hours=1)

    # -- set-up ---------------------------------------------------------------------------------

    def add_repo(self, full_name: str, path: Path) -> None:
        with self.lock:
            self.repos[full_name] = path

    def set_pull(self, repository: str, number: int, data: dict[str, Any]) -> None:
        with self.lock:
            self.pulls[(repository, number)] = data

    def set_issue(self, repository: str, number: int, title: str, body: str | None) -> None:
        """Answer GET /repos/{repository}/issues/{number} with this issue (GitHub's example, refitted)."""
        template = json.loads((FIXTURES / "issues.opened.json").read_text())["issue"]
        api = f"{self.url}/repos/{repository}/issues/{number}"
        with self.lock:
            self.issues[(repository, number)] = {
                **template,
                "number": number,
                "title": title,
                "body": body,
                "url": api,
                "html_url": f"https://github.com/{repository}/issues/{number}",
            }

    def post_comment(
        self, repository: str, number: int, body: str, *, login: str, user_type: str = "User"
    ) -> int:
        """Post a comment on PR ``number`` as someone other than the App (``user_type`` "User" or "Bot")."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.lock:
            comment_id = self.next_comment_id()
            self.comments[comment_id] = {
                "repository": repository, "number": number, "body": body, "user": user_json(login, user_type),
                "created_at": now, "updated_at": now, "edits": 0,
            }  # fmt: skip
            return comment_id

    def next_comment_id(self) -> int:
        with self.lock:
            return max(self.comments, default=999) + 1

    def bot_user(self) -> dict[str, Any]:
        """The App's bot user, as GitHub shows it on what the App writes."""
        return user_json(f"{self.slug}[bot]", "Bot")

    def remove_installation(self, installation_id: int) -> None:
        """Uninstall: token requests answer 404 and issued tokens answer 401 from now on."""
        with self.lock:
            self.removed_installations.add(installation_id)

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        message: str = "scripted failure",
        after: bool = False,
        body_key: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` (``after``: once it did the work).

        ``body_key`` narrows the match to requests whose JSON body holds that key at any depth.
        """
        with self.lock:
            self.failures.append(
                Failure(
                    method,
                    re.compile(path_regex),
                    status,
                    times,
                    headers or {},
                    {"message": message},
                    after,
                    body_key,
                )
            )

    # -- what happened --------------------------------------------------------------------------

    def calls_to(self, method: str | None = None, path_regex: str = "") -> list[Call]:
        with self.lock:
            return [
                c
                for c in self.calls
                if (method is None or c.method == method) and re.search(path_regex, c.path)
            ]

    def comments_on(self, repository: str, number: int) -> list[dict[str, Any]]:
        """The comments of a PR, oldest first (a copy)."""
        with self.lock:
            return [dict(c) for _, c in sorted(self.comments.items())
                    if (c["repository"], c["number"]) == (repository, number)]  # fmt: skip

    def check_run_calls(self, repository: str) -> list[Call]:
        """Every create/update of a check run in ``repository``, in order (failed ones too)."""
        return self.calls_to(None, rf"^/repos/{re.escape(repository)}/check-runs(/\d+)?$")

    def runs_of(self, repository: str) -> list[dict[str, Any]]:
        with self.lock:
            return [
                json.loads(json.dumps(r)) for r in self.check_runs.values() if r["repository"] == repository
            ]

    # -- answering ------------------------------------------------------------------------------

    def _scripted(self, method: str, path: str, body: Any = None) -> Failure | None:
        with self.lock:
            for f in self.failures:
                if f.body_key is not None and not _has_key(body, f.body_key):
                    continue
                if f.method == method and f.pattern.search(path) and f.times > 0:
                    f.times -= 1
                    return f
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    override: Failure | None = None
    request_seen: tuple[str, str, dict[str, list[str]], Any] = ("", "", {}, None)

    def log_message(self, format: str, *args: Any) -> None:
        return

    @property
    def fake(self) -> FakeGitHub:
        return self.server.fake

    def _send(
        self,
        status: int,
        body: Any = None,
        *,
        raw: bytes | None = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> int:
        if self.override is not None:
            status, body, raw, headers = self.override.status, self.override.body, None, self.override.headers
            self.override = None
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        # Recorded before the answer leaves: a client that has its answer finds the call recorded.
        method, path, query, request_body = self.request_seen
        call = Call(method, path, query, dict(self.headers.items()), request_body, status)
        with self.fake.lock:
            self.fake.calls.append(call)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        return status

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.request_seen = (method, path, query, body)
        self._route(method, path, query, body)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> int:
        scripted = self.fake._scripted(method, path, body)
        if scripted is not None and not scripted.after:
            return self._send(scripted.status, scripted.body, headers=scripted.headers)
        self.override = scripted
        if m := re.fullmatch(r"/app-manifests/([^/]+)/conversions", path):
            return self._conversion(method, m.group(1))
        if m := re.fullmatch(r"/app/installations/(\d+)/access_tokens", path):
            return self._token(method, int(m.group(1)))
        if m := re.fullmatch(r"/_codeload/([^/]+/[^/]+)/legacy\.tar\.gz/(.+)", path):
            return self._tarball(m.group(1), m.group(2))
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/installation", path):
            return self._repo_installation(method, m.group(1))
        if path == "/app":
            return self._app(method)
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)", path)
        if m is None:
            return self._send(404, {"message": "Not Found"})
        if not self._authorized():
            return self._send(401, {"message": "Bad credentials"})
        repo, rest = m.group(1), m.group(2)
        if method == "GET" and (p := re.fullmatch(r"/pulls/(\d+)", rest)):
            pr = self.fake.pulls.get((repo, int(p.group(1))))
            return self._send(200, pr) if pr is not None else self._send(404, {"message": "Not Found"})
        if method == "GET" and (p := re.fullmatch(r"/pulls/(\d+)/commits", rest)):
            return self._pull_commits(repo, int(p.group(1)))
        if method == "GET" and (p := re.fullmatch(r"/issues/(\d+)", rest)):
            if "issues" not in self.fake.permissions:
                return self._send(403, {"message": "Resource not accessible by integration"})
            issue = self.fake.issues.get((repo, int(p.group(1))))
            return self._send(200, issue) if issue is not None else self._send(404, {"message": "Not Found"})
        if p := re.fullmatch(r"/issues/(\d+)/comments", rest):
            return self._issue_comments(method, repo, int(p.group(1)), query, body)
        if method == "PATCH" and (p := re.fullmatch(r"/issues/comments/(\d+)", rest)):
            return self._edit_comment(repo, int(p.group(1)), body)
        if method == "POST" and (p := re.fullmatch(r"/issues/comments/(\d+)/reactions", rest)):
            return self._react(repo, int(p.group(1)), body)
        if method == "GET" and (p := re.fullmatch(r"/contents/(.+)", rest)):
            return self._contents(repo, p.group(1), query.get("ref", ["HEAD"])[0])
        if method == "GET" and (p := re.fullmatch(r"/tarball/(.+)", rest)):
            # GitHub answers with a redirect to codeload; the token stays in the header.
            return self._send(
                302,
                raw=b"",
                headers={"Location": f"{self.fake.url}/_codeload/{repo}/legacy.tar.gz/{p.group(1)}"},
            )
        if method == "GET" and (p := re.fullmatch(r"/git/trees/([^/]+)", rest)):
            return self._tree(repo, unquote(p.group(1)), recursive="recursive" in query)
        if method == "GET" and (p := re.fullmatch(r"/git/blobs/([0-9a-f]{40})", rest)):
            return self._blob(repo, p.group(1))
        if method == "GET" and (p := re.fullmatch(r"/commits/([^/]+)/check-runs", rest)):
            return self._list_runs(repo, p.group(1), query)
        if method == "GET" and (p := re.fullmatch(r"/commits/([^/]+)", rest)):
            return self._commit(repo, unquote(p.group(1)))
        if method == "POST" and rest == "/check-runs":
            return self._create_run(repo, body)
        if method == "POST" and rest == "/code-scanning/sarifs":
            return self._upload_sarif(repo, body)
        if method == "PATCH" and (p := re.fullmatch(r"/check-runs/(\d+)", rest)):
            return self._update_run(repo, int(p.group(1)), body)
        if method == "GET" and (p := re.fullmatch(r"/check-runs/(\d+)", rest)):
            with self.fake.lock:
                run = self.fake.check_runs.get(int(p.group(1)))
                if run is None or run["repository"] != repo:
                    return self._send(404, {"message": "Not Found"})
                return self._send(200, self._run_json(run))
        return self._send(404, {"message": "Not Found"})

    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("token "):
            return False
        with self.fake.lock:
            inst = self.fake.tokens.get(auth.removeprefix("token "))
            return inst is not None and inst not in self.fake.removed_installations

    def _token(self, method: str, installation_id: int) -> int:
        auth = self.headers.get("Authorization", "")
        try:
            claims = jwt.decode(auth.removeprefix("Bearer "), self.fake.public_key, algorithms=["RS256"])
        except jwt.PyJWTError as exc:
            return self._send(401, {"message": f"A JSON web token could not be decoded: {exc}"})
        if method != "POST" or str(claims.get("iss")) != str(self.fake.app_id):
            return self._send(401, {"message": "'Issuer' claim ('iss') must be the App id"})
        if installation_id in self.fake.removed_installations:
            return self._send(404, {"message": "Not Found"})
        token = "ghs_" + secrets.token_hex(18)
        with self.fake.lock:
            self.fake.tokens[token] = installation_id
        expires = (datetime.now(UTC) + self.fake.token_ttl).strftime("%Y-%m-%dT%H:%M:%SZ")
        return self._send(
            201,
            {
                "token": token,
                "expires_at": expires,
                "permissions": dict(self.fake.permissions),
                "repository_selection": "all",
            },
        )

    def _may_comment(self) -> bool:
        # Either permission lets an App write a PR's comments:
        # https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
        perms = self.fake.permissions
        return "write" in (perms.get("issues"), perms.get("pull_requests"))

    def _comment_json(self, comment_id: int, c: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.fake.url}/repos/{c['repository']}/issues/comments/{comment_id}"
        return {
            "id": comment_id, "node_id": f"IC_{comment_id}", "url": api, "body": c["body"],
            "html_url": f"https://github.com/{c['repository']}/pull/{c['number']}#issuecomment-{comment_id}",
            "issue_url": f"{self.fake.url}/repos/{c['repository']}/issues/{c['number']}",
            "user": c.get("user", OTHER_USER), "author_association": "NONE",
            "created_at": c["created_at"], "updated_at": c["updated_at"],
        }  # fmt: skip

    def _issue_comments(
        self, method: str, repo: str, number: int, query: dict[str, list[str]], body: Any
    ) -> int:
        """List (paginated, oldest first) or create the comments of issue/PR ``number``."""
        if method == "GET":
            per_page = min(int(query.get("per_page", ["30"])[0]), 100)
            page = int(query.get("page", ["1"])[0])
            with self.fake.lock:
                mine = [(i, c) for i, c in sorted(self.fake.comments.items())
                        if (c["repository"], c["number"]) == (repo, number)]  # fmt: skip
                shown = mine[(page - 1) * per_page : page * per_page]
                return self._send(200, [self._comment_json(i, c) for i, c in shown])
        if method != "POST":
            return self._send(404, {"message": "Not Found"})
        if not self._may_comment():
            return self._send(403, {"message": "Resource not accessible by integration"})
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return self._send(422, {"message": "Invalid request: body is required"})
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.fake.lock:
            comment_id = self.fake.next_comment_id()
            self.fake.comments[comment_id] = {
                "repository": repo, "number": number, "body": body["body"], "user": self.fake.bot_user(),
                "created_at": now, "updated_at": now, "edits": 0,
            }  # fmt: skip
            return self._send(201, self._comment_json(comment_id, self.fake.comments[comment_id]))

    def _react(self, repo: str, comment_id: int, body: Any) -> int:
        """Create a reaction (201), or answer 200 with the one this App already put there."""
        # https://docs.github.com/en/rest/reactions/reactions#create-reaction-for-an-issue-comment
        if not self._may_comment():
            return self._send(403, {"message": "Resource not accessible by integration"})
        content = body.get("content") if isinstance(body, dict) else None
        if content not in REACTIONS or set(body) != {"content"}:
            return self._send(422, {"message": f"Invalid request: content {content!r}"})
        with self.fake.lock:
            mine = (repo, comment_id, content)
            status = 200 if mine in self.fake.reactions else 201
            if status == 201:
                self.fake.reactions.append(mine)
            reaction_id = 1 + self.fake.reactions.index(mine)
        return self._send(status, {
            "id": reaction_id, "node_id": f"REA_{reaction_id}", "content": content,
            "user": self.fake.bot_user(), "created_at": "2026-01-01T00:00:00Z",
        })  # fmt: skip

    def _edit_comment(self, repo: str, comment_id: int, body: Any) -> int:
        if not self._may_comment():
            return self._send(403, {"message": "Resource not accessible by integration"})
        with self.fake.lock:
            c = self.fake.comments.get(comment_id)
            if c is None or c["repository"] != repo:
                return self._send(404, {"message": "Not Found"})
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return self._send(422, {"message": "Invalid request: body is required"})
            c["body"], c["edits"] = body["body"], c["edits"] + 1
            c["updated_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            return self._send(200, self._comment_json(comment_id, c))

    def _app_jwt(self) -> bool:
        auth = self.headers.get("Authorization", "")
        try:
            claims = jwt.decode(auth.removeprefix("Bearer "), self.fake.public_key, algorithms=["RS256"])
        except jwt.PyJWTError:
            return False
        return str(claims.get("iss")) == str(self.fake.app_id)

    def _app(self, method: str) -> int:
        """GET /app, as the App: the App itself, its ``slug`` among the rest (GitHub's ``integration``)."""
        # https://docs.github.com/en/rest/apps/apps#get-the-authenticated-app
        if not self._app_jwt():
            return self._send(401, {"message": "A JSON web token could not be decoded"})
        if method != "GET":
            return self._send(404, {"message": "Not Found"})
        slug = self.fake.slug
        return self._send(200, {
            "id": self.fake.app_id, "slug": slug, "node_id": f"A_{self.fake.app_id}",
            "client_id": f"Iv1.{self.fake.app_id:016x}", "owner": user_json("octo", "Organization"),
            "name": slug, "description": "", "external_url": "https://example.com",
            "html_url": f"https://github.com/apps/{slug}", "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "permissions": dict(self.fake.permissions),
            "events": ["check_run", "check_suite", "issue_comment", "pull_request"],
        })  # fmt: skip

    def _repo_installation(self, method: str, repo: str) -> int:
        """GET /repos/{repo}/installation, as the App: the installation covering ``repo``, or 404."""
        if not self._app_jwt():
            return self._send(401, {"message": "A JSON web token could not be decoded"})
        with self.fake.lock:
            inst = self.fake.installations.get(repo)
        if method != "GET" or inst is None or inst in self.fake.removed_installations:
            return self._send(404, {"message": "Not Found"})
        owner = repo.split("/", 1)[0]
        account = {"login": owner, "id": 1, "type": "Organization"}
        return self._send(
            200,
            {
                "id": inst, "account": account, "app_id": self.fake.app_id, "target_type": "Organization",
                "repository_selection": "selected", "permissions": dict(self.fake.permissions),
            },
        )  # fmt: skip

    def _commit(self, repo: str, ref: str) -> int:
        """GET /repos/{repo}/commits/{ref}: the commit a ref names (only the fields patchgate reads)."""
        if repo not in self.fake.repos:
            return self._send(404, {"message": "Not Found"})
        sha = self._git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
        if sha.returncode != 0:
            return self._send(422, {"message": f"No commit found for SHA: {ref}"})
        value = sha.stdout.decode().strip()
        return self._send(200, {"sha": value, "url": f"{self.fake.url}/repos/{repo}/commits/{value}"})

    def _tree(self, repo: str, ref: str, *, recursive: bool) -> int:
        """GET /repos/{repo}/git/trees/{sha}: a tree (a commit's sha names its tree), every entry with
        ``recursive``, folders too; ``truncate_trees`` cuts a listing short as GitHub does past 100,000."""
        if repo not in self.fake.repos:
            return self._send(404, {"message": "Not Found"})
        tree = self._git(repo, "rev-parse", "--verify", f"{ref}^{{tree}}")
        if tree.returncode != 0:
            return self._send(404, {"message": "Not Found"})
        sha = tree.stdout.decode().strip()
        listed = self._git(
            repo, "ls-tree", *(("-r", "-t") if recursive else ()), "-z", "-l", "--full-tree", sha
        )
        entries: list[dict[str, Any]] = []
        for record in listed.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, blob, size = meta.decode().split()
            entry: dict[str, Any] = {"path": path.decode("utf-8", "surrogateescape"), "mode": mode,
                                     "type": kind, "sha": blob}  # fmt: skip
            if kind == "blob":
                entry["size"] = int(size)
                entry["url"] = f"{self.fake.url}/repos/{repo}/git/blobs/{blob}"
            elif kind == "tree":
                entry["url"] = f"{self.fake.url}/repos/{repo}/git/trees/{blob}"
            entries.append(entry)
        truncated = repo in self.fake.truncate_trees
        if truncated:
            entries = entries[: len(entries) // 2]
        url = f"{self.fake.url}/repos/{repo}/git/trees/{sha}"
        return self._send(200, {"sha": sha, "url": url, "tree": entries, "truncated": truncated})

    def _blob(self, repo: str, sha: str) -> int:
        """GET /repos/{repo}/git/blobs/{sha}: base64 in lines of 60, as GitHub sends it."""
        if repo not in self.fake.repos:
            return self._send(404, {"message": "Not Found"})
        found = self._git(repo, "cat-file", "blob", sha)
        if found.returncode != 0:
            return self._send(404, {"message": "Not Found"})
        self.fake.blobs_read.append((repo, sha))
        encoded = base64.b64encode(found.stdout).decode()
        content = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
        return self._send(200, {
            "content": content, "encoding": "base64", "url": f"{self.fake.url}/repos/{repo}/git/blobs/{sha}",
            "sha": sha, "size": len(found.stdout), "node_id": f"B_{sha[:12]}",
        })  # fmt: skip

    def _git(self, repo: str, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "-C", str(self.fake.repos[repo]), *args], capture_output=True, check=False
        )

    def _contents(self, repo: str, path: str, ref: str) -> int:
        if repo not in self.fake.repos:
            return self._send(404, {"message": "Not Found"})
        shown = self._git(repo, "show", f"{ref}:{path}")
        if shown.returncode != 0:
            return self._send(404, {"message": "Not Found"})
        api = f"{self.fake.url}/repos/{repo}/contents/{path}"
        return self._send(
            200,
            {
                "type": "file",
                "encoding": "base64",
                "size": len(shown.stdout),
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "content": base64.encodebytes(shown.stdout).decode(),
                "sha": "0" * 40,
                "url": api,
                "git_url": None,
                "html_url": None,
                "download_url": None,
                "_links": {"self": api, "git": None, "html": None},
            },
        )

    def _pull_commits(self, repo: str, number: int) -> int:
        """List a pull's commits as GitHub does: oldest first, with the git author and message."""
        pr = self.fake.pulls.get((repo, number))
        if pr is None or repo not in self.fake.repos:
            return self._send(404, {"message": "Not Found"})
        base, head = pr["base"]["sha"], pr["head"]["sha"]
        fields = "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%B%x1e"
        log = self._git(repo, "log", "--reverse", fields, f"{base}..{head}")
        commits: list[dict[str, Any]] = []
        for entry in log.stdout.decode().split("\x1e"):
            if not entry.strip():
                continue
            sha, name, email, date, message = entry.strip("\n").split("\x1f", 4)
            person = {"name": name, "email": email, "date": date}
            commits.append(
                {
                    "sha": sha,
                    "node_id": "C_fake",
                    "url": f"{self.fake.url}/repos/{repo}/commits/{sha}",
                    "html_url": f"https://github.com/{repo}/commit/{sha}",
                    "comments_url": "",
                    "commit": {
                        "author": person,
                        "committer": person,
                        "message": message.rstrip("\n"),
                        "comment_count": 0,
                        "url": "",
                        "tree": {"sha": "0" * 40, "url": ""},
                    },
                    # GitHub matches the author's email to an account; the fake knows none.
                    "author": None,
                    "committer": None,
                    "parents": [],
                }
            )
        return self._send(200, commits)

    def _tarball(self, repo: str, ref: str) -> int:
        if repo not in self.fake.repos:
            return self._send(404, {"message": "Not Found"})
        sha = self._git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
        if sha.returncode != 0:
            return self._send(404, {"message": "Not Found"})
        prefix = f"{repo.replace('/', '-')}-{sha.stdout.decode().strip()[:7]}/"
        archive = self._git(repo, "archive", "--format=tar.gz", f"--prefix={prefix}", ref)
        return self._send(200, raw=archive.stdout, content_type="application/x-gzip")

    def _run_json(self, run: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.fake.url}/repos/{run['repository']}/check-runs/{run['id']}"
        out = run["output"]
        return {
            "id": run["id"],
            "head_sha": run["head_sha"],
            "node_id": f"CR_{run['id']}",
            "external_id": run.get("external_id"),
            "url": api,
            "html_url": f"https://github.example/runs/{run['id']}",
            "details_url": run.get("details_url"),
            "status": run["status"],
            "conclusion": run.get("conclusion"),
            "started_at": run["started_at"],
            "completed_at": run.get("completed_at"),
            "name": run["name"],
            "output": {
                "title": out.get("title"),
                "summary": out.get("summary"),
                "text": out.get("text"),
                "annotations_count": len(run["annotations"]),
                "annotations_url": f"{api}/annotations",
            },
            "check_suite": {"id": 1},
            "app": None,
            "pull_requests": [],
        }

    def _list_runs(self, repo: str, sha: str, query: dict[str, list[str]]) -> int:
        name = query.get("check_name", [None])[0]
        with self.fake.lock:
            runs = [
                self._run_json(r)
                for r in self.fake.check_runs.values()
                if r["repository"] == repo and r["head_sha"] == sha and (name is None or r["name"] == name)
            ]
        # GitHub pages lists: per_page (default 30, at most 100) and page (from 1).
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = max(int(query.get("page", ["1"])[0]), 1)
        shown = runs[(page - 1) * per_page : page * per_page]
        return self._send(200, {"total_count": len(runs), "check_runs": shown})

    def _upload_sarif(self, repo: str, body: Any) -> int:
        if self.fake.permissions.get("security_events") != "write":
            return self._send(403, {"message": "Resource not accessible by integration"})
        problems, log = validate_sarif_upload(body)
        if problems:
            with self.fake.lock:
                self.fake.problems.extend(problems)
            return self._send(422, {"message": "Validation Failed", "errors": problems})
        with self.fake.lock:
            upload_id = f"{len(self.fake.sarifs) + 1:08d}-0000-4000-8000-000000000000"
            self.fake.sarifs.append({"repository": repo, "body": body, "log": log})
        url = f"{self.fake.url}/repos/{repo}/code-scanning/sarifs/{upload_id}"
        return self._send(202, {"id": upload_id, "url": url})

    def _create_run(self, repo: str, body: Any) -> int:
        problems = validate_check_run_body("POST", body)
        if problems:
            with self.fake.lock:
                self.fake.problems.extend(problems)
            return self._send(422, {"message": "Validation Failed", "errors": problems})
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.fake.lock:
            run_id = 1000 + len(self.fake.check_runs)
            run = {
                "id": run_id,
                "repository": repo,
                "name": body["name"],
                "head_sha": body["head_sha"],
                "external_id": body.get("external_id"),
                "details_url": body.get("details_url"),
                "status": body.get("status", "queued"),
                "conclusion": body.get("conclusion"),
                "started_at": now,
                "completed_at": now if body.get("status") == "completed" else None,
                "output": {},
                "annotations": [],
                "actions": body.get("actions", []),
            }
            self._apply_output(run, body.get("output"))
            self.fake.check_runs[run_id] = run
            return self._send(201, self._run_json(run))

    def _update_run(self, repo: str, run_id: int, body: Any) -> int:
        problems = validate_check_run_body("PATCH", body)
        if problems:
            with self.fake.lock:
                self.fake.problems.extend(problems)
            return self._send(422, {"message": "Validation Failed", "errors": problems})
        with self.fake.lock:
            run = self.fake.check_runs.get(run_id)
            if run is None or run["repository"] != repo:
                return self._send(404, {"message": "Not Found"})
            if run["status"] == "completed" and body.get("status") not in (None, "completed"):
                self.fake.problems.append(f"check run {run_id}: reopened after completion")
            for key in ("status", "conclusion", "details_url", "external_id", "name", "actions"):
                if key in body:
                    run[key] = body[key]
            if "conclusion" in body:
                run["status"] = "completed"
                run["completed_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._apply_output(run, body.get("output"))
            return self._send(200, self._run_json(run))

    @staticmethod
    def _apply_output(run: dict[str, Any], output: dict[str, Any] | None) -> None:
        if not output:
            return
        run["output"] = {k: v for k, v in output.items() if k != "annotations"}
        # GitHub appends the annotations of each request to the run's.
        run["annotations"].extend(output.get("annotations", []))

    def _conversion(self, method: str, code: str) -> int:
        with self.fake.lock:
            data = self.fake.conversions.pop(code, None)
        if method != "POST" or data is None:
            return self._send(404, {"message": "Not Found"})
        return self._send(201, data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeGitHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


def _has_key(data: Any, key: str) -> bool:
    if isinstance(data, dict):
        return key in data or any(_has_key(v, key) for v in data.values())
    return False


def _unknown_keys(model: type[BaseModel], data: Any, where: str) -> list[str]:
    """List keys GitHub's schema does not have (githubkit's models accept extras silently)."""
    if not isinstance(data, dict):
        return []
    fields = {(f.alias or name): f for name, f in model.model_fields.items()}
    problems = []
    for key, value in data.items():
        if key not in fields:
            problems.append(f"{where}.{key}: not a field of {model.__name__}")
            continue
        for sub in _models_in(fields[key].annotation):
            items = value if isinstance(value, list) else [value]
            for i, item in enumerate(items):
                problems += _unknown_keys(
                    sub, item, f"{where}.{key}[{i}]" if isinstance(value, list) else f"{where}.{key}"
                )
    return problems


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


SARIF_UPLOAD = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "rest" / "code-scanning-upload-sarif.json").read_text()
)


def validate_sarif_upload(body: Any) -> tuple[list[str], dict[str, Any] | None]:
    """Check an upload body against GitHub's schema; return the problems and the decoded log."""
    import jsonschema

    schema = jsonschema.Draft202012Validator(SARIF_UPLOAD["request"])
    problems = [f"upload body: {e.json_path}: {e.message}" for e in schema.iter_errors(body)]
    if problems:
        return problems, None
    try:
        log: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(body["sarif"], validate=True)))
    except (ValueError, OSError) as exc:
        return [f"upload body: sarif is not gzipped, base64-encoded JSON: {exc}"], None
    return [], log


def validate_check_run_body(method: str, body: Any) -> list[str]:
    """Check a check-run request body against githubkit's request models and GitHub's limits."""
    from githubkit_schemas.latest import models

    if not isinstance(body, dict):
        return [f"{method} body is not an object"]
    if method == "POST":
        model: type[BaseModel] = (
            models.ReposOwnerRepoCheckRunsPostBodyOneof0
            if body.get("status") == "completed"
            else models.ReposOwnerRepoCheckRunsPostBodyOneof1
        )
    else:
        model = (
            models.ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof0
            if "conclusion" in body
            else models.ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof1
        )
    problems: list[str] = []
    try:
        model.model_validate(body)
    except ValidationError as exc:
        problems += [f"{method} body: {e['loc']}: {e['msg']}" for e in exc.errors()]
    problems += _unknown_keys(model, body, method)
    output = body.get("output") or {}
    summary = output.get("summary", "")
    if len(summary.encode()) > MAX_SUMMARY_BYTES:
        problems.append(f"output.summary is {len(summary.encode())} bytes (> {MAX_SUMMARY_BYTES})")
    if len(output.get("annotations", [])) > 50:
        problems.append(f"{len(output['annotations'])} annotations in one request (> 50)")
    actions = body.get("actions", [])
    if len(actions) > 3:
        problems.append("more than 3 actions")
    for a in actions:
        if (
            len(a.get("label", "")) > 20
            or len(a.get("description", "")) > 40
            or len(a.get("identifier", "")) > 20
        ):
            problems.append(f"action {a} exceeds GitHub's length limits")
    return problems


def user_json(login: str, user_type: str) -> dict[str, Any]:
    """A user as GitHub shows it on a comment or a reaction (its ``simple-user``)."""
    web, api = f"https://github.com/{login}", f"https://api.github.com/users/{login}"
    user_id = 1 + int.from_bytes(login.encode()[:6], "big") % 10**8  # stable per login
    return {
        "login": login, "id": user_id, "node_id": f"U_{user_id}", "avatar_url": f"{web}.png",
        "gravatar_id": "", "url": api, "html_url": web, "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}", "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs", "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}", "received_events_url": f"{api}/received_events",
        "type": user_type, "site_admin": False,
    }  # fmt: skip


# Who wrote a comment a test stored without saying: anyone but the App.
OTHER_USER = user_json("octocat", "User")


@contextmanager
def fake_github(app_id: int, public_key: bytes) -> Iterator[FakeGitHub]:
    """Run a FakeGitHub on a loopback port for the duration of the block."""
    fake = FakeGitHub(app_id, public_key)
    server = _Server(fake)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def pull_json(
    template: dict[str, Any],
    *,
    repository: str,
    number: int,
    head_sha: str,
    head_ref: str,
    base_sha: str,
    base_ref: str = "main",
    head_repository: str | None = None,
    author: str = "patchbot[bot]",
    labels: tuple[str, ...] = (),
    draft: bool = False,
    state: str = "open",
    title: str = "Fix the bug",
    body: str = "Agent-written fix.",
) -> dict[str, Any]:
    """Return a REST pull request (a webhook's ``pull_request`` made to fit githubkit's PullRequest)."""
    pr = json.loads(json.dumps(template))
    pr.update(
        number=number,
        state=state,
        draft=draft,
        title=title,
        body=body,
        auto_merge=None,
        merged=False,
        labels=[
            {**(pr["labels"][0] if pr.get("labels") else {}), "name": n, "id": i + 1}
            for i, n in enumerate(labels)
        ],
    )
    pr["user"] = {**pr["user"], "login": author}
    for side, repo, sha, ref in (
        ("head", head_repository or repository, head_sha, head_ref),
        ("base", repository, base_sha, base_ref),
    ):
        owner, name = repo.split("/")
        pr[side] = {
            **pr[side],
            "sha": sha,
            "ref": ref,
            "label": f"{owner}:{ref}",
            "repo": {
                **pr[side]["repo"],
                "full_name": repo,
                "name": name,
                "owner": {**pr[side]["repo"]["owner"], "login": owner},
            },
        }
    return pr
