"""The MCP automation tools driven by the official MCP Python SDK over OAuth, against a
fixture site served here: a phone session signs up (tap, type, fill, select, check, submit),
a touch-only control answers a tap, a carousel is swiped, the phone is rotated and the layout
changes, and the session ends with a video. Then every other tool on a second session, and
the session bounds (idle timeout, the per-account limit, expiry, the egress guard).

The service runs with its own settings (three page slots, two sessions per account), started
here like conftest's."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import queue
import re
import secrets
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
import websockets
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata

from conftest import Account, Service, start_service
from test_mcp_oauth import REDIRECT_URI, Browser, MemoryStorage, png_size_and_first_pixel, text_of

SIGNUP_HTML = """<!doctype html><html lang="en"><head><title>Fixture shop</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font-family: sans-serif; margin: 0; padding: 8px; }
#layout { display: flex; flex-direction: column; gap: 8px; }
#orient-landscape { display: none; }
@media (orientation: landscape) {
  #layout { flex-direction: row; }
  #orient-portrait { display: none; }
  #orient-landscape { display: block; }
}
#touch-only { width: 160px; height: 60px; background: #3a7; color: white; }
#carousel { width: 300px; height: 80px; overflow: hidden; background: #ddd; touch-action: pan-y; }
</style></head><body>
<h1>Create your account</h1>
<p id="orient-portrait">Portrait layout</p><p id="orient-landscape">Landscape layout</p>
<div id="layout">
<form method="post" action="/signup">
  <label for="email">Email</label> <input id="email" name="email" type="email">
  <label for="password">Password</label> <input id="password" name="password" type="password">
  <label for="plan">Plan</label>
  <select id="plan" name="plan"><option value="free">Free</option><option value="pro">Pro</option></select>
  <label><input type="checkbox" id="terms" name="terms"> I agree to the terms</label>
  <button type="submit">Sign up</button>
</form>
<div id="touch-only" role="button" aria-label="Touch me">Touch me</div>
<p id="touch-result">untouched</p>
<div id="carousel" role="region" aria-label="Carousel"><p id="slide-label">Slide 1 of 3</p></div>
</div>
<script>
document.getElementById('touch-only').addEventListener('touchstart', e => {
  document.getElementById('touch-result').textContent = 'touched by ' + e.touches.length + ' finger';
});
let slide = 0, startX = null, lastX = null;
const car = document.getElementById('carousel');
car.addEventListener('touchstart', e => { startX = lastX = e.touches[0].clientX; });
car.addEventListener('touchmove', e => { lastX = e.touches[0].clientX; });
car.addEventListener('touchend', () => {
  const dx = lastX - startX;
  if (dx < -40 && slide < 2) slide++;
  if (dx > 40 && slide > 0) slide--;
  document.getElementById('slide-label').textContent = 'Slide ' + (slide + 1) + ' of 3';
});
</script></body></html>"""

TOOLS_HTML = """<!doctype html><html><head><title>Tool bench</title>
<meta name="viewport" content="width=device-width, initial-scale=1, maximum-scale=1, user-scalable=no">
<style>
.pad { width: 200px; height: 60px; background: #ccd; margin: 6px; }
#tall { height: 3000px; }
</style></head><body>
<h1>Tool bench</h1>
<div class="pad" id="double">double</div><p id="double-result">-</p>
<div class="pad" id="long">long</div><p id="long-result">-</p>
<div class="pad" id="pinch">pinch</div><p id="pinch-result">-</p>
<div class="pad" id="hover">hover</div><p id="hover-result">-</p>
<button id="confirm">Delete everything</button><p id="confirm-result">-</p>
<label for="file">Avatar</label><input type="file" id="file"><p id="file-result">-</p>
<button id="copy">Copy code</button><p id="copy-result">-</p>
<button id="where">Where am I</button><p id="where-result">-</p>
<input id="note" aria-label="Note" value="old text">
<a id="echo" href="/echo">Echo</a>
<div id="track" style="width:320px;height:44px;background:#eee;position:relative">
  <div id="knob" style="width:44px;height:44px;background:#333;position:absolute;left:0;touch-action:none"></div>
  <div id="drop" style="width:20px;height:44px;position:absolute;right:0;background:#9c9"></div>
</div><p id="drag-result">-</p>
<button id="fetch">Load more</button><p id="fetch-result">-</p>
<p id="js-on">no scripts</p>
<div id="red" style="width:60px;height:60px;background:rgb(220,20,20)"></div><p id="tilt">-</p>
<div id="tall"></div><p id="bottom">The end</p>
<script>
console.error('fixture boom');
document.getElementById('js-on').textContent = 'scripts ran';
window.addEventListener('deviceorientation', e => {
  if (e.beta !== null) out('tilt', 'beta ' + Math.round(e.beta) + ' gamma ' + Math.round(e.gamma));
});
let downX = null;
document.getElementById('knob').addEventListener('pointerdown', e => { downX = e.clientX; });
document.addEventListener('pointerup', e => {
  if (downX !== null) out('drag-result', 'moved ' + Math.round(e.clientX - downX) + ' by ' + e.pointerType); downX = null;
});
document.getElementById('fetch').addEventListener('click', () => {
  fetch('/echo?more=1').then(r => out('fetch-result', 'loaded ' + r.status), () => out('fetch-result', 'blocked'));
});
const out = (id, t) => { document.getElementById(id).textContent = t; };
let lastTap = 0;
document.getElementById('double').addEventListener('touchend', () => {
  const now = Date.now(); if (now - lastTap < 400) out('double-result', 'double tapped'); lastTap = now;
});
let pressed = 0;
const lp = document.getElementById('long');
lp.addEventListener('touchstart', () => { pressed = Date.now(); });
lp.addEventListener('touchend', () => { out('long-result', Date.now() - pressed >= 600 ? 'long pressed' : 'short'); });
let d0 = null, d1 = null;
const dist = t => Math.hypot(t[0].clientX - t[1].clientX, t[0].clientY - t[1].clientY);
const pz = document.getElementById('pinch');
pz.addEventListener('touchstart', e => { if (e.touches.length === 2) d0 = d1 = dist(e.touches); });
pz.addEventListener('touchmove', e => { if (e.touches.length === 2) d1 = dist(e.touches); });
pz.addEventListener('touchend', () => { if (d0) out('pinch-result', d1 / d0 > 1.2 ? 'pinched out' : 'pinched in'); d0 = null; });
document.getElementById('hover').addEventListener('mouseenter', () => out('hover-result', 'hovered'));
document.getElementById('confirm').addEventListener('click', () => {
  out('confirm-result', confirm('Delete everything?') ? 'confirmed' : 'cancelled');
});
document.getElementById('file').addEventListener('change', e => {
  const f = e.target.files[0]; out('file-result', f.name + ' ' + f.size + ' ' + f.type);
});
document.getElementById('copy').addEventListener('click', () => {
  navigator.clipboard.writeText('CODE-123').then(() => out('copy-result', 'copied'), err => out('copy-result', 'failed ' + err));
});
document.getElementById('where').addEventListener('click', () => {
  navigator.geolocation.getCurrentPosition(p => out('where-result', p.coords.latitude + ',' + p.coords.longitude),
                                           err => out('where-result', 'denied ' + err.code));
});
</script>
<img src="/missing.png" alt="">
</body></html>"""


# Webhook deliveries the fixture site received.
HOOKS: queue.Queue = queue.Queue()


class _Site(ThreadingHTTPServer):
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: str, ctype: str = "text/html; charset=utf-8") -> None:
        raw = body.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/":
            self._send(200, SIGNUP_HTML)
        elif path == "/tools":
            self._send(200, TOOLS_HTML)
        elif path == "/big":
            self._send(200, BIG_HTML)
        elif path == "/echo":
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._send(200, "<!doctype html><title>Echo</title><pre id='headers'>%s</pre>"
                       % json.dumps(headers).replace("<", "&lt;"))
        else:
            self._send(404, "not here", "text/plain")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
        if self.path == "/hook":
            HOOKS.put(json.loads(raw))
            self._send(200, "{}", "application/json")
            return
        form = {k: v[0] for k, v in parse_qs(raw).items()}
        body = ("<!doctype html><title>Welcome</title><h1>Welcome, %s!</h1><p id='details'>plan: %s, terms: %s</p>"
                % (form.get("email", "?"), form.get("plan", "?"), form.get("terms", "off")))
        self._send(200, body)


# A page of 5,000 buttons, a toggle that changes one text, and 1,500 console messages.
BIG_HTML = ("<!doctype html><html lang='en'><head><title>Big page</title></head><body><h1>Big page</h1>"
            "<button id='toggle' onclick=\"document.getElementById('status').textContent = 'clicked'\">Toggle</button>"
            "<p id='status'>waiting</p><div id='items'>"
            + "".join(f"<button>Item {i:04d}</button>" for i in range(5000))
            + "</div><script>for (let i = 0; i < 1500; i++) console.log('message ' + i + ' ' + 'x'.repeat(40));"
            "</script></body></html>")


@pytest.fixture(scope="module")
def fixture_site():
    srv = _Site(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


# Every module test runs on one node (SQLite), then on two nodes of one deployment
# (PostgreSQL) whose MCP requests the client sends round robin, one to each node in turn, as
# a balancer without stickiness would: every automation tool must work through either node.
NODE_MODES = ["one node", "two nodes"]


@pytest.fixture(scope="module", params=NODE_MODES)
def auto_service(request):
    """The service with room for sessions: three page slots, two sessions per account."""
    binary = os.environ.get("CAPTURE_BIN")
    if not binary or not Path(binary).is_file():
        pytest.fail("set CAPTURE_BIN to the capture binary (tests/mcp/run.sh does)")
    two = request.param == "two nodes"
    pg = os.environ.get("CAPTURE_TEST_PG_URL")
    if two and not pg:
        pytest.skip("two nodes need PostgreSQL (CAPTURE_TEST_PG_URL)")
    tmp = tempfile.TemporaryDirectory(prefix="capture-mcp-auto-")
    db_url = f"sqlite://{Path(tmp.name) / 'capture.db'}"
    db_name = None
    if two:
        db_name = f"capture_mcp_{secrets.token_hex(4)}"
        subprocess.run(["psql", pg, "-q", "-c", f"CREATE DATABASE {db_name}"], check=True, capture_output=True)
        db_url = pg.rsplit("/", 1)[0] + "/" + db_name
    env = {
        **os.environ,
        "CAPTURE_LISTEN": "127.0.0.1:0",
        # Both nodes share the folder: the master key (and so the cluster key) and the files.
        "CAPTURE_DATA_DIR": str(Path(tmp.name) / "data"),
        "CAPTURE_DATABASE_URL": db_url,
        "CAPTURE_EGRESS_ALLOW": "127.0.0.1",
        "CAPTURE_WEBHOOK_ALLOW_HTTP": "true",
        "CAPTURE_BROWSERS": "1",
        "CAPTURE_WORKER_CONCURRENCY": "3",
        "CAPTURE_AUTOMATION_MAX_SESSIONS": "2",
        "CAPTURE_LOG": "warn",
    }
    env.pop("CAPTURE_BASE_URL", None)
    procs = []
    proc, base = start_service(binary, env)
    procs.append(proc)
    svc = Service(base=base, env=env, binary=binary)
    if two:
        # The second node is the same deployment: the first node's public address.
        proc, other = start_service(binary, {**env, "CAPTURE_BASE_URL": base})
        procs.append(proc)
        svc.mcp_nodes = [base, other]
    yield svc
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if db_name:
        subprocess.run(["psql", pg, "-q", "-c", f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"], capture_output=True)
    tmp.cleanup()


class RoundRobin(httpx.AsyncBaseTransport):
    """Sends each MCP request to the next node in turn (the rest as addressed)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, nodes: list[str]) -> None:
        self.inner = inner
        self.nodes = [httpx.URL(n) for n in nodes]
        self.next = 0
        self.sent: dict[str, int] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/mcp"):
            node = self.nodes[self.next % len(self.nodes)]
            self.next += 1
            request.url = request.url.copy_with(host=node.host, port=node.port)
            request.headers["host"] = f"{node.host}:{node.port}"
            key = f"{node.host}:{node.port}"
            self.sent[key] = self.sent.get(key, 0) + 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture(scope="module")
def auto_account(auto_service: Service) -> Account:
    email = f"auto-{secrets.token_hex(4)}@example.com"
    password = "correct horse battery staple"
    auto_service.cli("admin", "user", "create", "--email", email, "--password", password)
    out = auto_service.cli("admin", "key", "create", "--email", email, "--name", "rest")
    return Account(email=email, password=password, api_key=out.strip().splitlines()[-1].strip())


# The most characters a tool answer carries (its text and structured content together), as
# the service promises (automation::MAX_ANSWER_CHARS), and the largest answer seen per tool.
MAX_ANSWER_CHARS = 48_000
ANSWER_CHARS: dict[str, int] = {}


def answer_chars(r) -> int:
    return len(text_of(r)) + len(json.dumps(r.structured_content or {}, ensure_ascii=False, separators=(",", ":")))


class Agent:
    """An MCP client signed in over OAuth, with helpers that fail loudly."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.used: set[str] = set()

    async def ok(self, tool: str, args: dict) -> dict:
        self.used.add(tool)
        started = time.monotonic()
        r = await self.client.call_tool(tool, args)
        TIMINGS.setdefault(tool, []).append(time.monotonic() - started)
        assert not r.is_error, f"{tool} {args}: {text_of(r)}"
        size = answer_chars(r)
        if size > ANSWER_CHARS.get(tool, 0):
            ANSWER_CHARS[tool] = size
        return r

    async def err(self, tool: str, args: dict, code: str) -> str:
        self.used.add(tool)
        r = await self.client.call_tool(tool, args)
        assert r.is_error, f"{tool} {args} should fail with {code}: {text_of(r)}"
        assert r.structured_content["code"] == code, r.structured_content
        return r.structured_content["error"]

    async def text(self, sid: str, selector: str) -> str:
        r = await self.ok("get_text", {"sessionId": sid, "selector": selector})
        return r.structured_content["text"]

    async def js(self, sid: str, expression: str):
        r = await self.ok("evaluate", {"sessionId": sid, "expression": expression})
        return r.structured_content["value"]


async def signed_in(service: Service, account: Account, body) -> None:
    mcp_url = f"{service.base}/mcp"
    browser = Browser(service.base, account)
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(client_name="automation test", redirect_uris=[REDIRECT_URI],
                                            token_endpoint_auth_method="none"),
        storage=MemoryStorage(),
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    async with create_mcp_http_client(auth=provider) as http:
        nodes = getattr(service, "mcp_nodes", None)
        if nodes:
            http._transport = RoundRobin(http._transport, nodes)
        async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
            await body(Agent(client))
        if nodes:
            # Both nodes answered MCP requests.
            assert len(http._transport.sent) == 2, http._transport.sent


def refs(snapshot: str, role: str, name: str) -> str:
    m = re.search(r'- %s "%s"[^\n]*\[ref=(e\d+)\]' % (re.escape(role), re.escape(name)), snapshot)
    assert m, f'no {role} "{name}" in\n{snapshot}'
    return m.group(1)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


async def phone_journey(agent: Agent, site: str, service: Service, account: Account) -> None:
    tools = {t.name: t for t in (await agent.client.list_tools()).tools}
    for name in ["session_start", "session_end", "snapshot", "tap", "swipe", "session_rotate", "wait_for"]:
        assert name in tools, name
        assert "sessionId" in json.dumps(tools[name].input_schema) or name == "session_start"
        assert len(tools[name].description or "") > 40

    devices = (await agent.ok("list_devices", {})).structured_content["devices"]
    handheld = [d for d in devices if d["kind"] in ("phone", "tablet")]
    assert len(handheld) >= 20 and all(d["touch"] and d["userAgent"] for d in handheld)
    tablets = (await agent.ok("list_devices", {"kind": "tablet"})).structured_content["devices"]
    assert tablets and all(d["kind"] == "tablet" for d in tablets)

    hook = await agent.ok("create_webhook", {"url": site + "/hook", "events": ["run.completed", "run.failed"]})
    assert hook.structured_content["secret"].startswith("whsec_")
    started = await agent.ok("session_start", {"url": site + "/", "device": "iphone-15",
                                               "locale": "de-DE", "timezone": "Europe/Berlin"})
    s = started.structured_content
    sid = s["sessionId"]
    assert sid.startswith("run_") and s["title"] == "Fixture shop"
    assert s["device"]["width"] == 393 and s["device"]["touch"] and s["device"]["orientation"] == "portrait"
    assert await agent.js(sid, "[innerWidth, navigator.maxTouchPoints > 0, devicePixelRatio]") == [393, True, 3]
    assert "iPhone" in await agent.js(sid, "navigator.userAgent")
    assert await agent.js(sid, "Intl.DateTimeFormat().resolvedOptions().timeZone") == "Europe/Berlin"
    assert await agent.js(sid, "navigator.language") == "de-DE"
    listed = (await agent.ok("session_list", {})).structured_content["sessions"]
    assert [x["sessionId"] for x in listed] == [sid]

    # Look: the accessibility snapshot names the form's controls with refs.
    snap = (await agent.ok("snapshot", {"sessionId": sid})).structured_content["snapshot"]
    email = refs(snap, "textbox", "Email")
    password = refs(snap, "textbox", "Password")
    plan = refs(snap, "combobox", "Plan")
    terms = refs(snap, "checkbox", "I agree to the terms")
    submit = refs(snap, "button", "Sign up")
    fields = (await agent.ok("get_form_fields", {"sessionId": sid})).structured_content["fields"]
    assert [(f["type"], f["label"]) for f in fields] == [
        ("email", "Email"), ("password", "Password"), ("select-one", "Plan"), ("checkbox", "I agree to the terms")]
    assert [f["ref"] for f in fields] == [email, password, plan, terms]
    found = (await agent.ok("find", {"sessionId": sid, "role": "button", "name": "sign up"})).structured_content
    assert [m["ref"] for m in found["matches"]] == [submit]
    found = (await agent.ok("find", {"sessionId": sid, "text": "slide 1"})).structured_content["matches"]
    assert [m["role"] for m in found] == ["text"] and found[0]["name"] == "Slide 1 of 3"

    # Sign up like a person on a phone: tap the field, type; fill; pick; tick.
    await agent.ok("tap", {"sessionId": sid, "ref": email})
    await agent.ok("type", {"sessionId": sid, "text": "ada@example.com"})
    await agent.ok("fill", {"sessionId": sid, "ref": password, "value": "s3cret-pass"})
    chosen = await agent.ok("select_option", {"sessionId": sid, "ref": plan, "values": ["Pro"]})
    assert chosen.structured_content["selected"] == ["pro"]
    await agent.ok("check", {"sessionId": sid, "ref": terms})
    # Refs are stable: the same elements have the same refs in a later snapshot.
    again = (await agent.ok("snapshot", {"sessionId": sid})).structured_content["snapshot"]
    assert refs(again, "textbox", "Email") == email and refs(again, "button", "Sign up") == submit
    assert 'value="ada@example.com"' in again and "[checked]" in again
    # A ref that names nothing is a clear error.
    msg = await agent.err("tap", {"sessionId": sid, "ref": "e987654321"}, "NO_SUCH_ELEMENT_REF")
    assert "no such element ref e987654321" in msg

    # A control that only listens for touch answers a tap.
    assert await agent.text(sid, "#touch-result") == "untouched"
    touch_me = refs(again, "button", "Touch me")
    await agent.ok("tap", {"sessionId": sid, "ref": touch_me})
    assert await agent.text(sid, "#touch-result") == "touched by 1 finger"

    # Swipe the carousel: left twice to the last slide, right once back.
    for want in ["Slide 2 of 3", "Slide 3 of 3"]:
        await agent.ok("swipe", {"sessionId": sid, "selector": "#carousel", "direction": "left", "distance": 150})
        assert await agent.text(sid, "#slide-label") == want
    await agent.ok("swipe", {"sessionId": sid, "selector": "#carousel", "direction": "right", "distance": 150})
    assert await agent.text(sid, "#slide-label") == "Slide 2 of 3"

    # Rotate: the viewport turns, the orientation media query flips the layout.
    shot = await agent.ok("screenshot", {"sessionId": sid})
    image = [c for c in shot.content if c.type == "image"][0]
    assert png_size(base64.b64decode(image.data)) == (393 * 3, 852 * 3)
    assert await agent.text(sid, "#orient-portrait") == "Portrait layout"
    turned = (await agent.ok("session_rotate", {"sessionId": sid})).structured_content
    assert turned["device"]["orientation"] == "landscape" and turned["page"]["innerWidth"] == 852
    assert turned["page"]["orientation"].startswith("landscape")
    style = (await agent.ok("get_computed_style", {"sessionId": sid, "selector": "#layout",
                                                   "properties": ["flex-direction"]})).structured_content["style"]
    assert style == {"flex-direction": "row"}
    assert await agent.js(sid, "getComputedStyle(document.getElementById('orient-landscape')).display") == "block"
    shot = await agent.ok("screenshot", {"sessionId": sid})
    image = [c for c in shot.content if c.type == "image"][0]
    assert png_size(base64.b64decode(image.data)) == (852 * 3, 393 * 3)
    # In landscape, a field named by selector gets the keys: the tool checks that its tap
    # landed on the field and that the field took the text.
    await agent.ok("clear", {"sessionId": sid, "selector": "#email"})
    typed = await agent.ok("type", {"sessionId": sid, "selector": "#email", "text": "ada@example.com"})
    assert typed.structured_content["done"] == "typed 15 characters into '#email'", typed.structured_content
    assert await agent.js(sid, "document.activeElement.id") == "email"
    assert await agent.js(sid, "document.getElementById('email').value") == "ada@example.com"
    back = (await agent.ok("session_rotate", {"sessionId": sid, "orientation": "portrait"})).structured_content
    assert back["page"]["innerWidth"] == 393

    # Submit: the tap navigates; wait for the welcome page.
    await agent.ok("tap", {"sessionId": sid, "ref": submit})
    await agent.ok("wait_for", {"sessionId": sid, "text": "Welcome"})
    assert (await agent.ok("get_url", {"sessionId": sid})).structured_content["url"] == site + "/signup"
    assert (await agent.ok("get_title", {"sessionId": sid})).structured_content["title"] == "Welcome"
    assert await agent.text(sid, "h1") == "Welcome, ada@example.com!"
    assert await agent.text(sid, "#details") == "plan: pro, terms: on"

    # End: the run is finalised with its video.
    ended = (await agent.ok("session_end", {"sessionId": sid})).structured_content
    assert ended["id"] == sid and ended["status"] == "completed" and ended["endReason"] == "finished", ended
    assert ended["kind"] == "live" and ended["actionsCharged"] >= 1 and ended["finalUrl"] == site + "/signup"
    video = httpx.get(ended["videoUrl"], timeout=60)
    assert video.status_code == 200 and video.content[4:8] == b"ftyp" and len(video.content) > 10_000
    run = httpx.get(f"{service.base}/v1/runs/{sid}", headers={"authorization": f"Bearer {account.api_key}"}).json()
    assert run["status"] == "completed" and run["videoUrl"]
    msg = await agent.err("get_url", {"sessionId": sid}, "SESSION_EXPIRED")
    assert msg.startswith("session expired")
    # The run.completed event reached the webhook endpoint, with the video.
    # (Events of the runs of earlier tests of this module may still be queued: skip them.)
    while True:
        event = await asyncio.to_thread(HOOKS.get, True, 60)
        if event["data"].get("runId") == sid:
            break
    assert event["type"] == "run.completed", event
    assert event["data"]["videoUrl"] and event["data"]["finalUrl"] == site + "/signup"
    assert (await agent.ok("session_list", {})).structured_content["sessions"] == []


async def toolbox(agent: Agent, site: str, service: Service, account: Account) -> None:
    s = (await agent.ok("session_start", {"url": site + "/tools", "device": "pixel-8", "colorScheme": "dark",
                                          "geolocation": {"latitude": 52.52, "longitude": 13.405}})).structured_content
    sid = s["sessionId"]
    assert await agent.js(sid, "matchMedia('(prefers-color-scheme: dark)').matches") is True

    # Touch gestures.
    await agent.ok("double_tap", {"sessionId": sid, "selector": "#double"})
    assert await agent.text(sid, "#double-result") == "double tapped"
    await agent.ok("long_press", {"sessionId": sid, "selector": "#long", "durationMs": 900})
    assert await agent.text(sid, "#long-result") == "long pressed"
    await agent.ok("pinch", {"sessionId": sid, "selector": "#pinch", "scale": 2.5})
    assert await agent.text(sid, "#pinch-result") == "pinched out"
    await agent.ok("pinch", {"sessionId": sid, "selector": "#pinch", "scale": 0.4})
    assert await agent.text(sid, "#pinch-result") == "pinched in"

    # Dialogs wait for handle_dialog; other tools say one is open.
    await agent.ok("tap", {"sessionId": sid, "selector": "#confirm"})
    await agent.err("get_title", {"sessionId": sid}, "DIALOG_OPEN")
    d = (await agent.ok("handle_dialog", {"sessionId": sid, "accept": False})).structured_content
    assert d["kind"] == "confirm" and d["message"] == "Delete everything?"
    assert await agent.text(sid, "#confirm-result") == "cancelled"
    await agent.err("handle_dialog", {"sessionId": sid}, "NO_DIALOG")

    # Files: a screenshot of the account, and an inline file.
    shot = httpx.post(f"{service.base}/v1/screenshot", headers={"authorization": f"Bearer {account.api_key}"},
                      json={"url": site + "/echo", "width": 400, "height": 300, "waitUntil": "load"}, timeout=120)
    assert shot.status_code in (200, 202), shot.text
    shot_id = shot.json()["id"]
    for _ in range(120):
        st = httpx.get(f"{service.base}/v1/screenshot/{shot_id}",
                       headers={"authorization": f"Bearer {account.api_key}"}).json()
        if st["status"] in ("done", "failed"):
            break
        await asyncio.sleep(0.5)
    assert st["status"] == "done", st
    await agent.ok("upload_file", {"sessionId": sid, "selector": "#file", "screenshotId": shot_id})
    assert re.fullmatch(r"scr_\w+\.png \d+ image/png", await agent.text(sid, "#file-result"))
    await agent.ok("upload_file", {"sessionId": sid, "selector": "#file", "files": [
        {"name": "note.txt", "mimeType": "text/plain", "contentBase64": base64.b64encode(b"hello").decode()}]})
    assert await agent.text(sid, "#file-result") == "note.txt 5 text/plain"

    # Geolocation from the start, then moved.
    await agent.ok("tap", {"sessionId": sid, "selector": "#where"})
    await agent.ok("wait_for", {"sessionId": sid, "text": "52.52,13.405"})
    await agent.ok("set_geolocation", {"sessionId": sid, "latitude": 48.8566, "longitude": 2.3522})
    await agent.ok("tap", {"sessionId": sid, "selector": "#where"})
    await agent.ok("wait_for", {"sessionId": sid, "text": "48.8566,2.3522"})

    # Clipboard: what the page copies can be read; what is written, the page reads.
    await agent.ok("grant_permissions", {"sessionId": sid, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    await agent.ok("tap", {"sessionId": sid, "selector": "#copy"})
    await agent.ok("wait_for", {"sessionId": sid, "text": "copied"})
    assert (await agent.ok("clipboard_read", {"sessionId": sid})).structured_content["text"] == "CODE-123"
    await agent.ok("clipboard_write", {"sessionId": sid, "text": "from the agent"})
    assert await agent.js(sid, "navigator.clipboard.readText()") == "from the agent"
    # Permissions: granted, then reset.
    await agent.ok("grant_permissions", {"sessionId": sid, "permissions": ["notifications"]})
    assert await agent.js(sid, "navigator.permissions.query({name: 'notifications'}).then(p => p.state)") == "granted"
    await agent.ok("reset_permissions", {"sessionId": sid})
    assert await agent.js(sid, "navigator.permissions.query({name: 'notifications'}).then(p => p.state)") != "granted"
    await agent.err("grant_permissions", {"sessionId": sid, "permissions": ["telepathy"]}, "VALIDATION_ERROR")

    # Fields: fill, clear, type with a key press.
    await agent.ok("fill", {"sessionId": sid, "selector": "#note", "value": "new text"})
    attr = (await agent.ok("get_attribute", {"sessionId": sid, "selector": "#note", "name": "value"})).structured_content
    assert attr["value"] == "new text" and attr["visible"] is True
    await agent.ok("clear", {"sessionId": sid, "selector": "#note"})
    await agent.ok("type", {"sessionId": sid, "selector": "#note", "text": "abc"})
    await agent.ok("press_key", {"sessionId": sid, "key": "Backspace"})
    assert await agent.js(sid, "document.getElementById('note').value") == "ab"

    # Logs: the page's console error and its missing image.
    logs = (await agent.ok("get_console_logs", {"sessionId": sid, "errorsOnly": True})).structured_content
    assert any(e["text"] == "fixture boom" for e in logs["entries"]) and logs["consoleErrorCount"] >= 1
    net = (await agent.ok("get_network_logs", {"sessionId": sid, "failedOnly": True})).structured_content
    assert any(r["url"].endswith("/missing.png") and r["status"] == 404 for r in net["requests"])
    html = (await agent.ok("get_html", {"sessionId": sid, "selector": "#bottom"})).structured_content["html"]
    assert html == '<p id="bottom">The end</p>'
    found = (await agent.ok("find", {"sessionId": sid, "selector": ".pad"})).structured_content["matches"]
    assert len(found) == 4 and all(m["ref"].startswith("e") for m in found)
    await agent.ok("screenshot", {"sessionId": sid, "ref": found[0]["ref"]})
    full = await agent.ok("screenshot", {"sessionId": sid, "fullPage": True, "format": "jpeg"})
    assert full.structured_content["height"] > 3000 and full.structured_content["contentType"] == "image/jpeg"

    # Scrolling down and to an element.
    pos = (await agent.ok("scroll", {"sessionId": sid, "direction": "down", "amount": 600})).structured_content
    assert pos["scrollY"] > 0
    pos = (await agent.ok("scroll", {"sessionId": sid, "selector": "#bottom"})).structured_content
    assert pos["scrollY"] > 2000

    # Storage and cookies.
    await agent.ok("set_local_storage", {"sessionId": sid, "key": "k", "value": "v1"})
    assert (await agent.ok("get_local_storage", {"sessionId": sid})).structured_content["items"] == {"k": "v1"}
    await agent.ok("clear_local_storage", {"sessionId": sid})
    assert await agent.js(sid, "localStorage.length") == 0
    await agent.ok("set_cookies", {"sessionId": sid, "cookies": [{"name": "flavour", "value": "oat"}]})
    assert "flavour=oat" in await agent.js(sid, "document.cookie")
    cookies = (await agent.ok("get_cookies", {"sessionId": sid})).structured_content["cookies"]
    assert [c["value"] for c in cookies if c["name"] == "flavour"] == ["oat"]

    # Headers, user agent, locale, time zone, reach the next request / the page.
    await agent.ok("set_extra_headers", {"sessionId": sid, "headers": {"X-Agent-Test": "yes"}})
    await agent.err("set_extra_headers", {"sessionId": sid, "headers": {"Proxy-Authorization": "x"}}, "VALIDATION_ERROR")
    await agent.ok("set_user_agent", {"sessionId": sid, "userAgent": "AgentPhone/1.0"})
    await agent.ok("set_locale", {"sessionId": sid, "locale": "fr-FR"})
    nav = (await agent.ok("navigate", {"sessionId": sid, "url": site + "/echo"})).structured_content
    assert nav["status"] == 200 and nav["title"] == "Echo"
    echoed = json.loads(await agent.text(sid, "#headers"))
    assert echoed["x-agent-test"] == "yes" and echoed["user-agent"] == "AgentPhone/1.0"
    assert echoed["cookie"] == "flavour=oat" and echoed["accept-language"].startswith("fr-FR")
    assert await agent.js(sid, "navigator.language") == "fr-FR"
    await agent.ok("set_timezone", {"sessionId": sid, "timezone": "Asia/Tokyo"})
    assert await agent.js(sid, "Intl.DateTimeFormat().resolvedOptions().timeZone") == "Asia/Tokyo"
    await agent.ok("clear_cookies", {"sessionId": sid})
    assert (await agent.ok("get_cookies", {"sessionId": sid})).structured_content["cookies"] == []
    await agent.ok("set_color_scheme", {"sessionId": sid, "colorScheme": "light"})
    assert await agent.js(sid, "matchMedia('(prefers-color-scheme: dark)').matches") is False

    # History.
    await agent.ok("back", {"sessionId": sid})
    assert (await agent.ok("get_url", {"sessionId": sid})).structured_content["url"] == site + "/tools"
    await agent.ok("forward", {"sessionId": sid})
    assert (await agent.ok("get_url", {"sessionId": sid})).structured_content["url"] == site + "/echo"
    await agent.ok("reload", {"sessionId": sid})
    await agent.ok("wait_for", {"sessionId": sid, "networkIdle": True})
    await agent.ok("wait_for", {"sessionId": sid, "url": "/echo"})
    await agent.ok("wait_for", {"sessionId": sid, "selector": "#headers"})
    await agent.err("wait_for", {"sessionId": sid, "selector": "#never", "timeoutMs": 500}, "ELEMENT_NOT_FOUND")
    await agent.err("wait_for", {"sessionId": sid, "text": "never shown", "timeoutMs": 500}, "TIMEOUT")

    # Network: offline, then back.
    await agent.ok("set_network", {"sessionId": sid, "profile": "offline"})
    assert await agent.js(sid, "navigator.onLine") is False
    await agent.err("navigate", {"sessionId": sid, "url": site + "/tools"}, "NAVIGATION_FAILED")
    await agent.ok("set_network", {"sessionId": sid, "latencyMs": 50, "downloadKbps": 4000})
    await agent.ok("navigate", {"sessionId": sid, "url": site + "/tools"})

    # The egress guard sees every request: internal addresses are refused.
    await agent.err("navigate", {"sessionId": sid, "url": "http://169.254.169.254/latest/meta-data/"},
                    "NAVIGATION_FAILED")
    await agent.err("navigate", {"sessionId": sid, "url": "file:///etc/passwd"}, "VALIDATION_ERROR")

    # The rest of the looking tools, on the bench page.
    await agent.ok("navigate", {"sessionId": sid, "url": site + "/tools"})
    links = (await agent.ok("get_links", {"sessionId": sid})).structured_content["links"]
    assert {"text": "Echo", "href": site + "/echo", "visible": True} in links
    dialogs = (await agent.ok("get_dialogs", {"sessionId": sid})).structured_content
    assert [d["message"] for d in dialogs["dialogs"]] == ["Delete everything?"] and dialogs["open"] is None
    perf = (await agent.ok("get_performance", {"sessionId": sid})).structured_content
    assert perf["metrics"]["Nodes"] > 10 and perf["navigation"]["loadMs"] > 0
    device = (await agent.ok("get_device", {"sessionId": sid})).structured_content
    assert device["device"]["preset"] == "pixel-8" and device["page"]["innerWidth"] == 412
    assert device["page"]["devicePixelRatio"] == 2.625
    # Focus and blur.
    await agent.ok("focus", {"sessionId": sid, "selector": "#note"})
    state = (await agent.ok("get_element_state", {"sessionId": sid, "selector": "#note"})).structured_content
    assert state["focused"] is True and state["editable"] is True and state["tag"] == "input"
    assert (await agent.ok("blur", {"sessionId": sid})).structured_content["blurred"] == "note"
    state = (await agent.ok("get_element_state", {"sessionId": sid, "selector": "#note"})).structured_content
    assert state["focused"] is False
    # Drag the knob to the drop zone with a finger.
    await agent.ok("drag", {"sessionId": sid, "fromSelector": "#knob", "toSelector": "#drop"})
    moved = await agent.text(sid, "#drag-result")
    assert re.fullmatch(r"moved \d+ by touch", moved) and int(moved.split()[1]) > 200, moved
    # (the tap right after the drag is not swallowed by a fling)
    # A request a tap starts is waited for; blocked URLs fail.
    await agent.ok("tap", {"sessionId": sid, "selector": "#fetch"})
    await agent.ok("wait_for", {"sessionId": sid, "text": "loaded 200"})
    req = (await agent.ok("wait_for_request", {"sessionId": sid, "url": "/echo?more=1", "newOnly": False})).structured_content
    assert req["request"]["status"] == 200
    await agent.ok("block_urls", {"sessionId": sid, "patterns": ["*more=2*"]})
    await agent.ok("evaluate", {"sessionId": sid, "expression": "fetch('/echo?more=2').then(() => 'ok', () => 'blocked')"})
    blocked = (await agent.ok("wait_for_request", {"sessionId": sid, "url": "more=2", "newOnly": False})).structured_content
    assert blocked["request"]["failure"], blocked
    await agent.ok("block_urls", {"sessionId": sid, "patterns": []})
    # sessionStorage; one cookie deleted by name.
    await agent.ok("set_session_storage", {"sessionId": sid, "key": "step", "value": "2"})
    assert (await agent.ok("get_session_storage", {"sessionId": sid})).structured_content["items"] == {"step": "2"}
    await agent.ok("set_cookies", {"sessionId": sid, "cookies": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]})
    gone = (await agent.ok("delete_cookie", {"sessionId": sid, "name": "a"})).structured_content
    assert gone["remainingWithThatName"] == 0 and await agent.js(sid, "document.cookie") == "b=2"
    # Media: one state per session; each tool keeps what the others set.
    media = ("[matchMedia('(prefers-color-scheme: dark)').matches, "
             "matchMedia('(prefers-reduced-motion: reduce)').matches, matchMedia('print').matches]")
    await agent.ok("set_color_scheme", {"sessionId": sid, "colorScheme": "dark"})
    assert (await agent.ok("set_reduced_motion", {"sessionId": sid, "reduce": True})).structured_content["prefersReducedMotion"] is True
    assert await agent.js(sid, media) == [True, True, False]
    assert (await agent.ok("set_media_type", {"sessionId": sid, "media": "print"})).structured_content["printMatches"] is True
    assert await agent.js(sid, media) == [True, True, True]
    await agent.ok("set_color_scheme", {"sessionId": sid, "colorScheme": "light"})
    assert await agent.js(sid, media) == [False, True, True]
    await agent.ok("set_media_type", {"sessionId": sid, "media": "screen"})
    assert await agent.js(sid, media) == [False, True, False]
    # JavaScript off: the page's own script no longer runs after a reload.
    await agent.ok("set_javascript", {"sessionId": sid, "enabled": False})
    await agent.ok("reload", {"sessionId": sid})
    assert await agent.text(sid, "#js-on") == "no scripts"
    await agent.ok("set_javascript", {"sessionId": sid, "enabled": True})
    await agent.ok("reload", {"sessionId": sid})
    assert await agent.text(sid, "#js-on") == "scripts ran"
    await agent.ok("wait", {"sessionId": sid, "ms": 200})

    # A vision deficiency changes what is rendered; the device orientation reaches the page.
    def first_pixel(r) -> tuple[int, int, int]:
        image = [c for c in r.content if c.type == "image"][0]
        return png_size_and_first_pixel(base64.b64decode(image.data))[2]

    red = first_pixel(await agent.ok("screenshot", {"sessionId": sid, "selector": "#red"}))
    assert red[0] > 150 and red[1] < 80, red
    await agent.ok("set_vision_deficiency", {"sessionId": sid, "deficiency": "achromatopsia"})
    grey = first_pixel(await agent.ok("screenshot", {"sessionId": sid, "selector": "#red"}))
    assert max(grey) - min(grey) < 25, grey
    await agent.ok("set_vision_deficiency", {"sessionId": sid, "deficiency": "none"})
    await agent.ok("set_device_orientation", {"sessionId": sid, "alpha": 10, "beta": 45, "gamma": -20})
    await agent.ok("wait_for", {"sessionId": sid, "text": "beta 45 gamma -20"})
    await agent.ok("set_device_orientation", {"sessionId": sid, "clear": True})

    # Device: a desktop, hover and click with the mouse, the viewport resized, a PDF.
    changed = (await agent.ok("session_set_device", {"sessionId": sid, "device": "desktop-1280"})).structured_content
    assert changed["device"]["touch"] is False and changed["page"]["innerWidth"] == 1280
    await agent.ok("hover", {"sessionId": sid, "selector": "#hover"})
    await agent.ok("drag", {"sessionId": sid, "fromSelector": "#knob", "toSelector": "#drop", "pointer": "mouse"})
    assert re.fullmatch(r"moved \d+ by mouse", await agent.text(sid, "#drag-result"))
    assert await agent.text(sid, "#hover-result") == "hovered"
    await agent.ok("click", {"sessionId": sid, "selector": "#confirm"})
    await agent.ok("handle_dialog", {"sessionId": sid, "accept": True})
    assert await agent.text(sid, "#confirm-result") == "confirmed"
    await agent.ok("set_viewport", {"sessionId": sid, "width": 700, "height": 900})
    assert await agent.js(sid, "innerWidth") == 700
    pdf = (await agent.ok("pdf", {"sessionId": sid})).structured_content
    assert httpx.get(pdf["url"], timeout=60).content[:5] == b"%PDF-"

    # Bad input is a validation error naming the field.
    msg = await agent.err("tap", {"sessionId": sid}, "VALIDATION_ERROR")
    assert "ref" in msg
    await agent.err("tap", {"sessionId": sid, "selector": "#x", "colour": "red"}, "VALIDATION_ERROR")
    await agent.err("swipe", {"sessionId": sid, "direction": "sideways"}, "VALIDATION_ERROR")
    await agent.err("evaluate", {"sessionId": sid, "expression": "throw new Error('nope')"}, "ACTION_FAILED")
    await agent.err("get_url", {"sessionId": "run_doesnotexist"}, "NOT_FOUND")

    ended = (await agent.ok("session_end", {"sessionId": sid})).structured_content
    assert ended["status"] == "completed" and ended["consoleErrorCount"] >= 1 and ended["networkErrorCount"] >= 1


async def budgets(agent: Agent, site: str, service: Service, account: Account) -> None:
    """Every answer on a page of 5,000 elements stays within its budget, and says how to get the rest."""
    r = await agent.ok("session_start", {"url": site + "/big"})
    sid = r.structured_content["sessionId"]
    try:
        await budgets_on(agent, sid)
    finally:
        await agent.client.call_tool("session_end", {"sessionId": sid})


async def budgets_on(agent: Agent, sid: str) -> None:
    answers = []

    async def ok(tool: str, args: dict):
        r = await agent.ok(tool, {"sessionId": sid, **args})
        answers.append((tool, args, answer_chars(r)))
        return r

    # The whole page: the first 8,000 characters of tree, and what was left out.
    r = await ok("snapshot", {})
    print(f"snapshot of the whole page with no arguments: {answers[-1][2]} chars")
    first = r.structured_content
    assert first["mode"] == "full" and first["entries"] >= 5000, {k: v for k, v in first.items() if k != "snapshot"}
    assert len(first["snapshot"]) <= 8000 and first["leftOut"] > 0 and first["nextFrom"] == first["shown"]
    assert f"left out. Read on with from={first['nextFrom']}" in text_of(r)
    assert 'button "Item 0000"' in first["snapshot"]
    # Reading on starts where it stopped; a bigger budget holds more.
    r = await ok("snapshot", {"from": first["nextFrom"], "maxChars": 20000})
    on = r.structured_content
    assert on["from"] == first["nextFrom"] and len(on["snapshot"]) <= 20000 and on["shown"] > first["shown"]
    assert on["snapshot"].splitlines()[0] not in first["snapshot"].splitlines()
    # One part of it.
    r = await ok("snapshot", {"selector": "#status"})
    part = r.structured_content
    assert part["part"] == "#status" and part["leftOut"] == 0 and 'text "waiting"' in part["snapshot"], part
    toggle = refs(first["snapshot"], "button", "Toggle")
    r = await ok("snapshot", {"ref": toggle})
    assert r.structured_content["snapshot"].startswith('- button "Toggle"'), r.structured_content
    await agent.err("snapshot", {"sessionId": sid, "maxChars": 50}, "VALIDATION_ERROR")

    # What one click changed: the page's snapshot as a diff against the last one (above).
    await ok("tap", {"ref": toggle})
    r = await ok("snapshot", {"mode": "diff"})
    diff = r.structured_content
    lines = diff["snapshot"].splitlines()
    assert diff["mode"] == "diff" and diff["unchanged"] >= 5000, {k: v for k, v in diff.items() if k != "snapshot"}
    assert any(l.startswith('+ text "clicked"') for l in lines), lines
    assert any(l.startswith('- text "waiting"') for l in lines), lines
    assert len(lines) <= 4 and len(diff["snapshot"]) < 400, lines
    r = await ok("snapshot", {"mode": "diff"})
    assert r.structured_content["snapshot"] == "" and "(nothing changed)" in text_of(r)

    # Text and HTML by pages, with the whole of them as a file.
    r = await ok("get_html", {})
    html = r.structured_content
    assert len(html["html"]) == 8000 and html["truncated"] and html["nextFrom"] == 8000, html["totalChars"]
    whole = httpx.get(html["fileUrl"], timeout=30)
    assert whole.status_code == 200 and whole.headers["content-type"].startswith("text/plain")
    assert len(whole.text) == html["totalChars"] and whole.text.startswith(html["html"])
    r = await ok("get_html", {"from": 8000, "maxChars": 20000})
    assert r.structured_content["html"] == whole.text[8000:28000] and "fileUrl" not in r.structured_content
    r = await ok("get_text", {})
    text = r.structured_content
    assert text["text"].startswith("Big page") and text["truncated"] and len(text["text"]) == 8000
    r = await ok("get_text", {"from": text["totalChars"] - 10})
    assert len(r.structured_content["text"]) == 10 and r.structured_content["nextFrom"] is None
    # Markdown the same way: a page of 8000 characters, the whole as a .md file.
    r = await ok("get_markdown", {})
    md = r.structured_content
    assert md["truncated"] and len(md["markdown"]) == 8000 and "Big page" in md["markdown"][:200], md["totalChars"]
    whole = httpx.get(md["fileUrl"], timeout=30)
    assert whole.status_code == 200 and whole.headers["content-type"].startswith("text/markdown")
    assert len(whole.text) == md["totalChars"] and whole.text.startswith(md["markdown"])

    # Logs: the last ones that fit, and where the others are.
    r = await ok("get_console_logs", {"limit": 2000})
    logs = r.structured_content
    window = logs["window"]
    assert window["total"] == 1500 and window["to"] == 1500 and 0 < len(logs["entries"]) < 1500, window
    assert logs["entries"][-1]["text"].startswith("message 1499 ") and window["earlierFrom"] is not None
    assert len(json.dumps(logs["entries"], separators=(",", ":"), ensure_ascii=False)) <= 8000
    r = await ok("get_console_logs", {"from": 0, "limit": 5})
    assert [e["text"].split()[1] for e in r.structured_content["entries"]] == ["0", "1", "2", "3", "4"]
    assert r.structured_content["window"]["nextFrom"] == 5
    await ok("get_network_logs", {"from": 0})

    # A value too big for any answer becomes a file, and the answer says where.
    r = await ok("evaluate", {"expression": "'x'.repeat(200000)"})
    cut = r.structured_content
    assert cut["cut"] is True and cut["answerChars"] > 200000, {k: v for k, v in cut.items() if k != "beginning"}
    stored = httpx.get(cut["answerUrl"], timeout=30).json()
    assert stored["structuredContent"]["value"] == "x" * 200000

    over = [(tool, args, n) for tool, args, n in answers if n > MAX_ANSWER_CHARS]
    assert not over, over
    largest = max(answers, key=lambda a: a[2])
    snap_sizes = {a[1].get("mode", "full") + (" part" if ("ref" in a[1] or "selector" in a[1]) else "")
                  + (" from" if "from" in a[1] else ""): a[2] for a in answers if a[0] == "snapshot"}
    print(f"budgets on 5,000 elements: largest answer {largest[2]} chars ({largest[0]} {largest[1]}); "
          f"snapshot answers: {snap_sizes}")


async def two_clients(agent: Agent, site: str, service: Service, account: Account) -> None:
    """A session belongs to the OAuth client that started it, unless it was started shared: another
    client of the same account neither sees nor drives it."""
    mine = (await agent.ok("session_start", {"url": site + "/", "recordVideo": False})).structured_content
    shared = (await agent.ok("session_start", {"url": site + "/", "recordVideo": False, "shared": True})
              ).structured_content
    assert (mine["shared"], shared["shared"]) == (False, True)
    seen: dict = {}

    async def other_client(b: Agent) -> None:
        seen["listed"] = [s["sessionId"] for s in (await b.ok("session_list", {})).structured_content["sessions"]]
        await b.err("get_url", {"sessionId": mine["sessionId"]}, "NOT_FOUND")
        await b.err("snapshot", {"sessionId": mine["sessionId"]}, "NOT_FOUND")
        await b.err("session_end", {"sessionId": mine["sessionId"]}, "NOT_FOUND")
        r = await b.ok("get_url", {"sessionId": shared["sessionId"]})
        seen["shared_url"] = r.structured_content["url"]

    await signed_in(service, account, other_client)
    assert seen == {"listed": [shared["sessionId"]], "shared_url": site + "/"}, seen
    # The client that started them still has both.
    listed = [s["sessionId"] for s in (await agent.ok("session_list", {})).structured_content["sessions"]]
    assert sorted(listed) == sorted([mine["sessionId"], shared["sessionId"]])
    for sid in (mine["sessionId"], shared["sessionId"]):
        await agent.ok("session_end", {"sessionId": sid})


async def bounds(agent: Agent, site: str, service: Service, account: Account) -> None:
    # Two sessions at most per account (this service's setting); a third is refused.
    a = (await agent.ok("session_start", {"url": site + "/", "device": "galaxy-s23", "recordVideo": False,
                                          "idleTimeoutMs": 2000})).structured_content["sessionId"]
    b = (await agent.ok("session_start", {"url": site + "/", "device": "ipad-mini", "orientation": "landscape",
                                          "recordVideo": False})).structured_content
    assert b["device"]["width"] == 1024 and b["device"]["orientation"] == "landscape"
    await agent.err("session_start", {"url": site + "/"}, "CONCURRENCY_LIMIT")
    # The idle one ends by itself, its run says why, its tools say it expired.
    await asyncio.sleep(4)
    await agent.err("snapshot", {"sessionId": a}, "SESSION_EXPIRED")
    run = httpx.get(f"{service.base}/v1/runs/{a}", headers={"authorization": f"Bearer {account.api_key}"}).json()
    assert run["status"] == "completed" and run["endReason"] == "idle", run
    # stop_run (the runs tool) ends a session too.
    stopped = await agent.ok("stop_run", {"id": b["sessionId"]})
    for _ in range(60):
        run = httpx.get(f"{service.base}/v1/runs/{b['sessionId']}",
                        headers={"authorization": f"Bearer {account.api_key}"}).json()
        if run["status"] != "running":
            break
        await asyncio.sleep(0.5)
    assert run["status"] == "stopped", (stopped.structured_content, run)
    await agent.err("get_url", {"sessionId": b["sessionId"]}, "SESSION_EXPIRED")
    await agent.err("session_start", {"url": site + "/", "device": "nokia-3310"}, "VALIDATION_ERROR")
    # A first page the egress guard refuses: the session starts, says why the page did not load, and
    # navigates elsewhere.
    c = (await agent.ok("session_start", {"url": "http://10.1.2.3/admin", "recordVideo": False})).structured_content
    assert c["loadError"]["code"] == "NAVIGATION_FAILED" and "egress" in c["loadError"]["error"], c
    await agent.ok("navigate", {"sessionId": c["sessionId"], "url": site + "/"})
    await agent.ok("session_end", {"sessionId": c["sessionId"]})
    await agent.err("session_start", {"url": site + "/", "idleTimeoutMs": 10_000_000}, "VALIDATION_ERROR")


async def handoff(agent: Agent, site: str, service: Service, account: Account) -> None:
    """An agent stuck on a step only a person can do: a live view to watch, then request_human.
    The person takes the link from the session.human_requested webhook, opens the live view's
    socket, sees the page and presses Done; the agent gets `done`. Unanswered, `timed_out`. The
    recording marks the hand-off as chapters."""
    await agent.ok("create_webhook", {"url": site + "/hook", "events": ["session.human_requested"]})
    s = (await agent.ok("session_start", {"url": site + "/", "recordVideo": True})).structured_content
    sid = s["sessionId"]
    view = (await agent.ok("session_live_view", {"sessionId": sid, "ttl": 120})).structured_content
    assert view["mode"] == "view" and view["url"].startswith(f"{service.base}/live/{sid}?t="), view
    page = httpx.get(view["url"], timeout=30)
    assert page.status_code == 200 and "<title>Capture live view</title>" in page.text
    await agent.err("session_live_view", {"sessionId": sid, "ttl": 0}, "VALIDATION_ERROR")

    async def person() -> dict:
        while True:
            event = await asyncio.to_thread(HOOKS.get, True, 60)
            if event["type"] == "session.human_requested" and event["data"]["sessionId"] == sid:
                break
        data = event["data"]
        assert data["reason"] == "Solve the CAPTCHA" and data["timeoutSec"] == 60, data
        url = data["url"].replace("http://", "ws://").replace("?t=", "/ws?t=")
        async with websockets.connect(url, max_size=None) as ws:
            hello = json.loads(await ws.recv())
            assert hello["t"] == "hello" and hello["mode"] == "control" and hello["reason"] == "Solve the CAPTCHA"
            frame = json.loads(await ws.recv())
            assert frame["t"] == "frame" and base64.b64decode(frame["data"])[:2] == b"\xff\xd8", frame["t"]
            await ws.send(json.dumps({"t": "done"}))
            while True:
                m = json.loads(await ws.recv())
                if m["t"] == "done":
                    return m

    asked = asyncio.create_task(agent.ok("request_human", {"sessionId": sid, "reason": "Solve the CAPTCHA", "timeoutSec": 60}))
    pressed = await asyncio.wait_for(person(), 90)
    assert pressed == {"t": "done", "handedBack": True}, pressed
    r = (await asked).structured_content
    assert r["outcome"] == "done" and 0 < r["waitedMs"] < 60_000, r
    # Nobody answers: the agent gets the session back when the time is up.
    r = (await agent.ok("request_human", {"sessionId": sid, "reason": "Approve the passkey", "timeoutSec": 10})).structured_content
    assert r["outcome"] == "timed_out" and r["waitedMs"] >= 10_000, r
    ended = (await agent.ok("session_end", {"sessionId": sid})).structured_content
    video = httpx.get(ended["videoUrl"], timeout=60)
    assert video.status_code == 200
    with tempfile.NamedTemporaryFile(suffix=".mp4") as f:
        f.write(video.content)
        f.flush()
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_chapters", "-of", "json", f.name],
                               capture_output=True, text=True, check=True)
    titles = [c["tags"]["title"] for c in json.loads(probe.stdout)["chapters"]]
    assert titles == ["session", "hand-off: Solve the CAPTCHA", "hand-off ended: done",
                      "hand-off: Approve the passkey", "hand-off ended: timed_out"], titles


USED: set[str] = set()
# Seconds per successful call of each tool, printed by the last test (pytest -s shows them).
TIMINGS: dict[str, list[float]] = {}


def run(service: Service, account: Account, site: str, scenario, limit: int = 400) -> None:
    async def body(agent: Agent) -> None:
        try:
            await scenario(agent, site, service, account)
        finally:
            USED.update(agent.used)

    asyncio.run(asyncio.wait_for(signed_in(service, account, body), timeout=limit))


def test_a_phone_signs_up_swipes_rotates_and_ends_with_a_video(auto_service, auto_account, fixture_site):
    run(auto_service, auto_account, fixture_site, phone_journey)


def test_every_other_tool_on_a_real_page(auto_service, auto_account, fixture_site):
    run(auto_service, auto_account, fixture_site, toolbox)


def test_answers_fit_their_budget_on_a_page_of_5000_elements(auto_service, auto_account, fixture_site):
    run(auto_service, auto_account, fixture_site, budgets)


def test_a_session_is_its_clients_unless_shared(auto_service, auto_account, fixture_site):
    run(auto_service, auto_account, fixture_site, two_clients)


def test_sessions_are_bounded_idle_and_expire(auto_service, auto_account, fixture_site):
    run(auto_service, auto_account, fixture_site, bounds)


def test_an_agent_asks_a_person_to_step_in_through_a_live_view(auto_service, auto_account, fixture_site):
    run(auto_service, auto_account, fixture_site, handoff)


def test_every_automation_tool_was_exercised(auto_service, auto_account):
    """Runs last: every tool of the catalogue was called by one of the tests above."""
    if not USED:
        pytest.skip("counts the tools the other tests of this module called: run the whole module")

    async def body(agent: Agent) -> None:
        tools = (await agent.client.list_tools()).tools
        # The automation tools: those on a session, and the three that open or list them.
        automation = {t.name for t in tools if "sessionId" in (t.input_schema.get("properties") or {})}
        automation |= {"list_devices", "session_start", "session_list"}
        assert len(automation) >= 55, sorted(automation)
        missing = automation - USED
        assert not missing, f"not exercised: {sorted(missing)}"
        largest = max(ANSWER_CHARS.items(), key=lambda kv: kv[1])
        print(f"largest tool answer: {largest[1]} chars ({largest[0]}); by tool: "
              + ", ".join(f"{k} {v}" for k, v in sorted(ANSWER_CHARS.items(), key=lambda kv: -kv[1])[:8]))
        assert largest[1] <= MAX_ANSWER_CHARS, largest
        for tool in ["session_start", "snapshot", "tap", "type", "swipe", "session_rotate", "screenshot", "session_end"]:
            t = sorted(TIMINGS.get(tool, []))
            if t:
                print(f"{tool}: {len(t)} calls, median {t[len(t) // 2] * 1000:.0f} ms, max {t[-1] * 1000:.0f} ms")

    asyncio.run(asyncio.wait_for(signed_in(auto_service, auto_account, body), timeout=120))
