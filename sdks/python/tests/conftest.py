"""Fixtures: the real `capture` service (CAPTURE_BIN) on a random port with a fresh data
directory and the api, worker and scheduler roles; a web page and a webhook receiver on
127.0.0.1 (which the service may reach: CAPTURE_EGRESS_ALLOW=127.0.0.1); accounts with keys."""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from capture_client import AsyncCapture, Capture

# The page the tests capture: one solid colour, so a pixel of the image can be checked.
PAGE_RGB = (20, 180, 90)
PAGE_HTML = (
    "<!doctype html><html><head><title>SDK test page</title>"
    "<style>html,body{margin:0;height:100%%;background:rgb(%d,%d,%d)}</style></head>"
    "<body><h1 style='margin:0;font:20px sans-serif;color:#fff'>Capture SDK</h1></body></html>" % PAGE_RGB
)


@dataclass
class Service:
    base: str
    env: Dict[str, str]
    binary: str
    proc: subprocess.Popen
    log: Path

    def cli(self, *args: str) -> str:
        out = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"capture {' '.join(args)} failed: {out.stderr}"
        return out.stdout

    def new_key(self, prefix: str = "sdk") -> str:
        """A new account (pro plan) and an API key of it."""
        email = f"{prefix}-{secrets.token_hex(4)}@example.com"
        self.cli("admin", "user", "create", "--email", email, "--plan", "pro")
        out = self.cli("admin", "key", "create", "--email", email, "--name", "sdk-tests")
        key = out.strip().splitlines()[-1].strip()
        assert key.startswith("sk_"), out
        return key

    def client(self, key: str, **kw) -> Capture:
        return Capture(self.base, key, **kw)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_service(tmp: Path, extra_env: Optional[Dict[str, str]] = None, roles: str = "api,worker,scheduler") -> Service:
    binary = os.environ.get("CAPTURE_BIN")
    if not binary or not Path(binary).is_file():
        pytest.fail("set CAPTURE_BIN to the capture binary (sdks/python/run-tests.sh does)")
    env = {
        **os.environ,
        "CAPTURE_LISTEN": "127.0.0.1:0",
        "CAPTURE_DATA_DIR": str(tmp / "data"),
        "CAPTURE_DATABASE_URL": f"sqlite://{tmp / 'capture.db'}",
        "CAPTURE_EGRESS_ALLOW": "127.0.0.1",
        "CAPTURE_WEBHOOK_ALLOW_HTTP": "true",
        "CAPTURE_PLAN_LIMITS": "free=1000000,starter=1000000,pro=1000000",
        "CAPTURE_BROWSERS": "1",
        "CAPTURE_WORKER_CONCURRENCY": "2",
        "CAPTURE_LOG": "warn",
        **(extra_env or {}),
    }
    for k in ("CAPTURE_BASE_URL", "CAPTURE_CONFIG", "CAPTURE_ROLES"):
        env.pop(k, None)
    log = tmp / "server.log"
    proc = subprocess.Popen(
        [binary, "serve", "--roles", roles], env=env, stdout=subprocess.PIPE, stderr=open(log, "wb"), text=True
    )
    lines: "queue.Queue[str]" = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        first = lines.get(timeout=90)
    except queue.Empty:
        proc.kill()
        pytest.fail(f"the service did not print its address: {log.read_text()[-3000:]}")
    if not first.startswith("listening on "):
        proc.kill()
        pytest.fail(f"unexpected first line {first!r}: {log.read_text()[-3000:]}")
    return Service(base=first.removeprefix("listening on ").strip(), env=env, binary=binary, proc=proc, log=log)


@pytest.fixture(scope="session")
def service() -> Iterator[Service]:
    tmp = tempfile.TemporaryDirectory(prefix="capture-sdk-python-")
    svc = start_service(Path(tmp.name))
    yield svc
    svc.stop()
    tmp.cleanup()


@pytest.fixture(scope="session")
def api_key(service: Service) -> str:
    return service.new_key("tenant-a")


@pytest.fixture(scope="session")
def client(service: Service, api_key: str) -> Iterator[Capture]:
    with Capture(service.base, api_key) as c:
        yield c


@pytest.fixture
def async_client(service: Service, api_key: str) -> AsyncCapture:
    return AsyncCapture(service.base, api_key)


# --- the local site: a page to capture and a webhook receiver ---------------------------------


@dataclass
class Hook:
    path: str
    headers: Dict[str, str]
    raw: bytes

    @property
    def body(self) -> dict:
        return json.loads(self.raw)


@dataclass
class Site:
    base: str
    hooks: "queue.Queue[Hook]" = field(default_factory=queue.Queue)
    pending: List[Hook] = field(default_factory=list)

    def url(self, path: str = "/") -> str:
        return self.base + path

    def next_hook(self, path: str, timeout: float = 60, event: Optional[str] = None) -> Hook:
        """The next delivery POSTed to ``path`` (of type ``event`` if given)."""
        end = time.monotonic() + timeout
        while True:
            for h in list(self.pending):
                if h.path == path and (event is None or h.headers.get("x-service-event") == event):
                    self.pending.remove(h)
                    return h
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no webhook delivery to {path} ({event or 'any event'}) within {timeout} s")
            try:
                self.pending.append(self.hooks.get(timeout=min(left, 1.0)))
            except queue.Empty:
                pass


class _Local(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


class _Handler(BaseHTTPRequestHandler):
    server: _Local

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        # /status/<code> answers that status (with the page); anything else 200.
        parts = self.path.split("/")
        status = int(parts[2]) if len(parts) > 2 and parts[1] == "status" and parts[2].isdigit() else 200
        body = PAGE_HTML.encode()
        self.send_response(status)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.site.hooks.put(Hook(self.path, headers, raw))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "11")
        self.end_headers()
        self.wfile.write(b'{"ok":true}')


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    srv = _Local(("127.0.0.1", 0), _Handler)
    s = Site(base=f"http://127.0.0.1:{srv.server_address[1]}")
    srv.site = s
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield s
    srv.shutdown()
