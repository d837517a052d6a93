"""Fixtures: the real `capture` service (binary from CAPTURE_BIN) on a random port with a
fresh data directory, a web page and a webhook receiver on 127.0.0.1, and a signed-up
account."""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# The page the tests capture: one solid colour, so a pixel of the image can be checked.
PAGE_RGB = (20, 180, 90)
PAGE_HTML = (
    "<!doctype html><html><head><title>MCP test page</title>"
    "<style>html,body{margin:0;height:100%%;background:rgb(%d,%d,%d)}</style></head>"
    "<body></body></html>" % PAGE_RGB
)


@dataclass
class Service:
    base: str
    env: dict[str, str]
    binary: str

    def cli(self, *args: str) -> str:
        out = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"capture {args} failed: {out.stderr}"
        return out.stdout


def start_service(binary: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`capture serve` with `env`: its process and the address it prints."""
    proc = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        first = lines.get(timeout=90)
    except queue.Empty:
        proc.kill()
        pytest.fail("the service did not print its address")
    assert first.startswith("listening on "), first
    return proc, first.removeprefix("listening on ").strip()


@pytest.fixture(scope="session")
def service():
    binary = os.environ.get("CAPTURE_BIN")
    if not binary or not Path(binary).is_file():
        pytest.fail("set CAPTURE_BIN to the capture binary (tests/mcp/run.sh does)")
    tmp = tempfile.TemporaryDirectory(prefix="capture-mcp-")
    env = {
        **os.environ,
        "CAPTURE_LISTEN": "127.0.0.1:0",
        "CAPTURE_DATA_DIR": str(Path(tmp.name) / "data"),
        "CAPTURE_DATABASE_URL": f"sqlite://{Path(tmp.name) / 'capture.db'}",
        "CAPTURE_EGRESS_ALLOW": "127.0.0.1",
        "CAPTURE_WEBHOOK_ALLOW_HTTP": "true",
        "CAPTURE_BROWSERS": "1",
        "CAPTURE_WORKER_CONCURRENCY": "1",
        "CAPTURE_LOG": "warn",
    }
    env.pop("CAPTURE_BASE_URL", None)
    proc, base = start_service(binary, env)
    svc = Service(base=base, env=env, binary=binary)
    yield svc
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    tmp.cleanup()


@dataclass
class Account:
    email: str
    password: str
    api_key: str


@pytest.fixture(scope="session")
def account(service: Service) -> Account:
    email = f"mcp-{secrets.token_hex(4)}@example.com"
    password = "correct horse battery staple"
    service.cli("admin", "user", "create", "--email", email, "--password", password)
    out = service.cli("admin", "key", "create", "--email", email, "--name", "rest")
    return Account(email=email, password=password, api_key=out.strip().splitlines()[-1].strip())


class _Local(ThreadingHTTPServer):
    daemon_threads = True
    hooks: queue.Queue


class _Handler(BaseHTTPRequestHandler):
    server: _Local

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        body = PAGE_HTML.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.hooks.put({"headers": headers, "raw": raw, "body": json.loads(raw or b"{}")})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok":true}')


@dataclass
class Site:
    base: str
    hooks: queue.Queue


@pytest.fixture(scope="session")
def site():
    srv = _Local(("127.0.0.1", 0), _Handler)
    srv.hooks = queue.Queue()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield Site(base=f"http://127.0.0.1:{srv.server_address[1]}", hooks=srv.hooks)
    srv.shutdown()
