"""`patchgate setup`: create the GitHub App from its manifest (GitHub's manifest flow).

The manifest ships with the package (bot/cli/app-manifest.json; deploy/app-manifest.json
in a checkout links to it).

1. A local page POSTs the manifest to GitHub (``/settings/apps/new``, or the
   organization's), which shows the App to be created.
2. GitHub redirects back to ``/callback?code=...&state=...``; the code is
   exchanged with ``POST /app-manifests/{code}/conversions`` for the App id,
   private key and webhook secret, which are written to the config file with
   mode 0600 - never printed.
https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
"""

from __future__ import annotations

import argparse
import html
import json
import os
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from bot.github.app import convert_manifest
from bot.settings import config_path, load_settings

# An edited copy here (or a checkout's own) wins over the packaged manifest.
LOCAL_MANIFEST = Path("deploy/app-manifest.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        help="config file to write (default: $PATCHGATE_CONFIG or .state/patchgate.env)",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        help="the App manifest (default: ./deploy/app-manifest.json if present, else the packaged one)",
    )
    parser.add_argument("--org", help="create the App in this organization instead of your account")
    parser.add_argument("--host", default="127.0.0.1", help="address of the set-up page (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000, help="port of the set-up page (default: 3000)")


def read_manifest(given: Path | None) -> str:
    """Return the manifest's text: the given file, ./deploy/app-manifest.json, or the packaged one."""
    if given is not None:
        return given.read_text(encoding="utf-8")
    if LOCAL_MANIFEST.is_file():
        return LOCAL_MANIFEST.read_text(encoding="utf-8")
    return (resources.files("bot.cli") / "app-manifest.json").read_text(encoding="utf-8")


def build_manifest(template: dict[str, Any], *, public_url: str, redirect_url: str) -> dict[str, Any]:
    """Fill in where the App's webhooks go and where GitHub sends the browser back."""
    manifest: dict[str, Any] = json.loads(json.dumps(template))
    manifest["hook_attributes"] = {**manifest.get("hook_attributes", {}), "url": f"{public_url}/webhook"}
    manifest["redirect_url"] = redirect_url
    return manifest


def _quote(value: str) -> str:
    # dotenv double-quoted value: python-dotenv undoes exactly these escapes.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def write_config(path: Path, values: dict[str, str]) -> None:
    """Set ``values`` in a dotenv config file (other lines kept); the file is created 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = []
    if path.exists():
        kept = [line for line in path.read_text().splitlines() if line.split("=", 1)[0].strip() not in values]
    lines = kept + [f"{key}={_quote(value)}" for key, value in values.items()]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write("\n".join(lines) + "\n")


class SetupServer(ThreadingHTTPServer):
    """The two-page set-up flow; ``done`` is set once the credentials are written."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        manifest: dict[str, Any],
        config: Path,
        org: str | None,
        github_url: str,
        github_api_url: str,
    ) -> None:
        super().__init__(address, _Handler)
        self.manifest, self.config, self.org = manifest, config, org
        self.github_url, self.github_api_url = github_url, github_api_url
        self.state = secrets.token_urlsafe(16)
        self.done = threading.Event()
        self.result: dict[str, Any] = {}

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: SetupServer

    def log_message(self, format: str, *args: Any) -> None:
        # The callback URL carries the one-time code: keep it out of the terminal.
        return

    def _page(self, status: int, body: str) -> None:
        data = f"<!doctype html><meta charset=utf-8><title>patchgate setup</title>{body}".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/":
            self._start()
        elif url.path == "/callback":
            query = parse_qs(url.query)
            self._callback(query.get("code", [""])[0], query.get("state", [""])[0])
        else:
            self._page(404, "<p>not found</p>")

    def _start(self) -> None:
        srv = self.server
        target = (
            f"{srv.github_url}/organizations/{quote(srv.org)}/settings/apps/new"
            if srv.org
            else f"{srv.github_url}/settings/apps/new"
        )
        self._page(
            200,
            (
                "<h1>Create the patchgate GitHub App</h1>"
                f'<form method=post action="{html.escape(target)}?state={srv.state}">'
                f'<input type=hidden name=manifest value="{html.escape(json.dumps(srv.manifest))}">'
                "<button type=submit>Create the App on GitHub</button></form>"
            ),
        )

    def _callback(self, code: str, state: str) -> None:
        srv = self.server
        if not code or not secrets.compare_digest(state, srv.state):
            self._page(400, "<p>missing code or wrong state: start again from the first page</p>")
            return
        try:
            app = convert_manifest(srv.github_api_url, code)
        except Exception as exc:  # show any failure in the browser; the code is single-use anyway
            self._page(502, f"<p>GitHub did not convert the code: {html.escape(type(exc).__name__)}</p>")
            return
        write_config(
            srv.config,
            {
                "PATCHGATE_APP_ID": str(app["id"]),
                "PATCHGATE_PRIVATE_KEY": str(app["pem"]),
                "PATCHGATE_WEBHOOK_SECRET": str(app["webhook_secret"]),
            },
        )
        srv.result = {"id": app["id"], "slug": app.get("slug", ""), "html_url": app.get("html_url", "")}
        install = f"{app.get('html_url', '')}/installations/new"
        self._page(
            200,
            (
                f"<h1>App {html.escape(str(app.get('slug', app['id'])))} created</h1>"
                f"<p>Credentials written to <code>{html.escape(str(srv.config))}</code> (mode 0600).</p>"
                f'<p>Next: <a href="{html.escape(install)}">install it on your repositories</a>, '
                "then run <code>patchgate serve</code>.</p>"
            ),
        )
        srv.done.set()


def command(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    config = args.config or config_path()
    try:
        template = json.loads(read_manifest(args.manifest))
    except (OSError, ValueError) as exc:
        print(f"patchgate setup: {exc}", file=sys.stderr)
        return 2
    server = SetupServer(
        (args.host, args.port),
        manifest={},
        config=config,
        org=args.org,
        github_url=settings.github_url,
        github_api_url=settings.github_api_url,
    )
    server.manifest = build_manifest(
        template, public_url=settings.public_url, redirect_url=f"{server.base}/callback"
    )
    print(
        f"open {server.base}/ in a browser to create the App (webhooks will go to "
        f"{settings.public_url}/webhook; set PATCHGATE_PUBLIC_URL to change that)",
        flush=True,  # the command now waits for the browser: say where to go even through a pipe
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    try:
        # Ctrl-C as soon as the page answers can land while start() returns: inside the try.
        thread.start()
        server.done.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        server.shutdown()
        server.server_close()
    print(f"created App {server.result.get('slug') or server.result.get('id')}; credentials are in {config}")
    return 0
