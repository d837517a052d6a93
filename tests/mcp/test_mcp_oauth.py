"""The Capture MCP server driven by the official MCP Python SDK, end to end: OAuth discovery,
dynamic client registration, sign-in on the website and consent (done over HTTP by the
redirect handler, as a person would in a browser), the token exchange with PKCE, tool calls,
and a refresh with rotation."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import struct
import time
from html import unescape
from urllib.parse import parse_qs, urljoin, urlparse

import httpx
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from conftest import PAGE_RGB, Account, Service, Site

REDIRECT_URI = "http://127.0.0.1:8976/callback"


class MemoryStorage:
    """TokenStorage kept in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def hidden_fields(html: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input type=\"hidden\"[^>]*>", html):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and value:
            fields[unescape(name.group(1))] = unescape(value.group(1))
    return fields


class Browser:
    """What a person does in the browser the MCP client opens: sign in on the website, then
    press "Allow" on the consent page. Hands the code to the client's callback."""

    def __init__(self, base: str, account: Account) -> None:
        self.base = base
        self.account = account
        self.result: asyncio.Future[AuthorizationCodeResult] | None = None
        self.visits: list[str] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        self.visits.append(authorization_url)
        self.result = asyncio.get_running_loop().create_future()
        async with httpx.AsyncClient(follow_redirects=False, timeout=30) as http:
            r = await http.get(authorization_url)
            # Not signed in: the website's sign-in page, coming back here afterwards.
            assert r.status_code == 303, r.text
            login = urljoin(self.base, r.headers["location"])
            assert urlparse(login).path == "/login"
            page = await http.get(login)
            assert page.status_code == 200
            form = hidden_fields(page.text)
            assert "csrf" in form and form.get("next", "").startswith("/oauth/authorize?")
            r = await http.post(
                urljoin(self.base, "/login"),
                data={**form, "email": self.account.email, "password": self.account.password},
            )
            assert r.status_code == 303, r.text
            consent_url = urljoin(self.base, r.headers["location"])
            assert urlparse(consent_url).path == "/oauth/authorize"
            consent = await http.get(consent_url)
            assert consent.status_code == 200
            assert ">Allow</button>" in consent.text and self.account.email in consent.text
            fields = hidden_fields(consent.text)
            r = await http.post(urljoin(self.base, "/oauth/authorize"), data={**fields, "decision": "allow"})
            assert r.status_code == 303, r.text
            back = urlparse(r.headers["location"])
            assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT_URI
            q = {k: v[0] for k, v in parse_qs(back.query).items()}
            self.result.set_result(AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss")))

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the redirect handler ran first"
        return await self.result


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def png_size_and_first_pixel(data: bytes) -> tuple[int, int, tuple[int, int, int]]:
    """Width, height and the top-left pixel of a non-interlaced 8-bit RGB(A) PNG. Pixel (0, 0)
    needs no unfiltering: every PNG filter predicts it from zeros."""
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, colour = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    return width, height, (raw[1], raw[2], raw[3])


def rest_balance(service: Service, account: Account) -> dict:
    r = httpx.get(f"{service.base}/v1/account/balance", headers={"authorization": f"Bearer {account.api_key}"})
    assert r.status_code == 200
    return r.json()


async def connect_and_use(service: Service, account: Account, site: Site) -> None:
    mcp_url = f"{service.base}/mcp"
    storage = MemoryStorage()
    browser = Browser(service.base, account)
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="MCP SDK test",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    async with create_mcp_http_client(auth=provider) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
            # The first request was answered 401: discovery, registration, sign-in, consent, token.
            assert len(browser.visits) == 1
            auth_url = urlparse(browser.visits[0])
            params = {k: v[0] for k, v in parse_qs(auth_url.query).items()}
            assert f"{auth_url.scheme}://{auth_url.netloc}{auth_url.path}" == f"{service.base}/oauth/authorize"
            assert params["code_challenge_method"] == "S256"
            assert params["resource"] == mcp_url
            assert storage.client_info is not None and storage.client_info.client_id.startswith("oc_")
            assert storage.tokens is not None and storage.tokens.access_token.startswith("cap_at_")

            # rmcp and the SDK agree on the stateless 2026-07-28 revision (server/discover).
            assert client.protocol_version == "2026-07-28"
            tools = {t.name: t for t in (await client.list_tools()).tools}
            expected = {
                "account_balance",
                "take_screenshot",
                "get_screenshot",
                "list_screenshots",
                "share_screenshot",
                "list_webhooks",
                "create_webhook",
                "test_webhook",
            }
            assert expected <= set(tools), set(tools)
            capture_props = tools["take_screenshot"].input_schema["properties"]
            for option in ["url", "width", "height", "fullPage", "format", "pdf", "delay", "darkMode",
                           "cookieConsent", "waitFor", "waitUntil", "timeoutMs", "preScreenshotJs",
                           "deviceScaleFactor", "clickBefore"]:
                assert option in capture_props, option

            # account_balance is the REST balance.
            balance = await client.call_tool("account_balance", {})
            assert not balance.is_error
            assert balance.structured_content == rest_balance(service, account)
            used_before = balance.structured_content["usage"]["used"]

            # take_screenshot waits and returns the image.
            shot = await client.call_tool(
                "take_screenshot",
                {"url": f"{site.base}/page", "width": 640, "height": 400, "waitUntil": "load"},
            )
            assert not shot.is_error, text_of(shot)
            images = [c for c in shot.content if c.type == "image"]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            width, height, pixel = png_size_and_first_pixel(base64.b64decode(images[0].data))
            assert (width, height) == (640, 400)
            assert all(abs(a - b) <= 3 for a, b in zip(pixel, PAGE_RGB)), pixel
            job = shot.structured_content
            assert job["status"] == "done" and job["publicUrl"] in text_of(shot)
            file = httpx.get(job["publicUrl"])
            assert file.status_code == 200 and file.content[:8] == b"\x89PNG\r\n\x1a\n"

            # A PDF comes back as a link; progress notifications arrive while it is made.
            progress: list[tuple[float, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, message))

            pdf = await client.call_tool(
                "take_screenshot",
                {"url": f"{site.base}/page", "pdf": True, "waitUntil": "load"},
                progress_callback=on_progress,
            )
            assert not pdf.is_error, text_of(pdf)
            assert not [c for c in pdf.content if c.type == "image"]
            assert pdf.structured_content["format"] == "pdf"
            assert pdf.structured_content["publicUrl"].endswith(".pdf")
            assert pdf.structured_content["publicUrl"] in text_of(pdf)
            assert httpx.get(pdf.structured_content["publicUrl"]).content[:5] == b"%PDF-"
            assert progress and (progress[-1][1] or "").endswith("is done"), progress

            # The captures were charged to the account, as through REST.
            after = await client.call_tool("account_balance", {})
            assert after.structured_content["usage"]["used"] == used_before + 2
            assert after.structured_content == rest_balance(service, account)

            listed = await client.call_tool("list_screenshots", {"limit": 5})
            assert [j["id"] for j in listed.structured_content["data"]][:2] == [pdf.structured_content["id"], job["id"]]
            got = await client.call_tool("get_screenshot", {"id": job["id"]})
            assert got.structured_content["status"] == "done"
            assert got.structured_content["publicUrl"] == job["publicUrl"]
            shared = await client.call_tool("share_screenshot", {"id": job["id"]})
            share_url = shared.structured_content["shareUrl"]
            page = httpx.get(share_url)
            assert page.status_code == 200 and job["publicUrl"] in page.text

            # Errors are tool errors carrying the service's error code.
            missing = await client.call_tool("get_screenshot", {"id": "scr_doesnotexist"})
            assert missing.is_error and text_of(missing).startswith("NOT_FOUND")
            assert missing.structured_content["code"] == "NOT_FOUND"
            invalid = await client.call_tool("take_screenshot", {"url": "ftp://example.com/"})
            assert invalid.is_error and invalid.structured_content["code"] == "VALIDATION_ERROR"

            # Webhooks: create, list, and a test.ping that reaches the receiver signed.
            created = await client.call_tool(
                "create_webhook", {"url": f"{site.base}/hook", "events": ["test.ping"], "description": "mcp"}
            )
            assert not created.is_error, text_of(created)
            endpoint = created.structured_content
            assert endpoint["secret"].startswith("whsec_")
            hooks = await client.call_tool("list_webhooks", {})
            assert endpoint["id"] in [e["id"] for e in hooks.structured_content["data"]]
            sent = await client.call_tool("test_webhook", {"id": endpoint["id"]})
            assert not sent.is_error, text_of(sent)
            delivery = await asyncio.to_thread(site.hooks.get, True, 60)
            assert delivery["body"]["type"] == "test.ping"
            assert delivery["body"]["data"]["endpointId"] == endpoint["id"]
            signature = dict(p.split("=", 1) for p in delivery["headers"]["webhook-signature"].split(","))
            signed = signature["t"].encode() + b"." + delivery["raw"]
            expected_mac = hmac.new(endpoint["secret"].encode(), signed, hashlib.sha256).hexdigest()
            assert hmac.compare_digest(signature["v1"], expected_mac)

            # Browser runs: a scripted run is waited for and comes back finished; a live one
            # comes back at once with its single-use connect URL, and stop_run ends it.
            assert {"start_run", "get_run", "stop_run"} <= set(tools)
            assert "steps" in tools["start_run"].input_schema["properties"]
            steps = [{"action": "evaluate", "expression": "6 * 7"}, {"action": "assertUrl", "url": "/page"}]
            started = await client.call_tool(
                "start_run", {"startUrl": f"{site.base}/page", "recordVideo": False, "steps": steps}
            )
            assert not started.is_error, text_of(started)
            run = started.structured_content
            assert run["id"].startswith("run_") and run["status"] == "completed", run
            assert run["stepResults"][0]["result"] == 42 and run["actionsCharged"] == 1
            got = await client.call_tool("get_run", {"id": run["id"]})
            assert got.structured_content["status"] == "completed"
            live = await client.call_tool("start_run", {"startUrl": f"{site.base}/page", "live": True})
            assert not live.is_error, text_of(live)
            assert live.structured_content["connectUrl"].startswith("ws://")
            stopped = await client.call_tool("stop_run", {"id": live.structured_content["id"]})
            assert stopped.structured_content["status"] == "stopped"
            assert stopped.structured_content["actionsCharged"] == 0
            missing_run = await client.call_tool("get_run", {"id": "run_doesnotexist"})
            assert missing_run.is_error and missing_run.structured_content["code"] == "NOT_FOUND"
            bad_run = await client.call_tool("start_run", {"startUrl": f"{site.base}/page", "steps": [{"action": "fly"}]})
            assert bad_run.is_error and bad_run.structured_content["code"] == "VALIDATION_ERROR"

            # Refresh: once the access token is due, the SDK refreshes before the next request
            # (the expiry is moved instead of waiting an hour).
            first = storage.tokens
            provider.context.token_expiry_time = time.time() - 1
            again = await client.call_tool("account_balance", {})
            assert not again.is_error
            assert storage.tokens.access_token != first.access_token
            assert storage.tokens.refresh_token != first.refresh_token
            assert again.structured_content == rest_balance(service, account)

    # The rotated-out refresh token is refused, and presenting it ends the grant.
    token_url = f"{service.base}/oauth/token"
    client_id = storage.client_info.client_id
    old = httpx.post(token_url, data={"grant_type": "refresh_token", "refresh_token": first.refresh_token,
                                      "client_id": client_id})
    assert old.status_code == 400 and old.json()["error"] == "invalid_grant"
    r = httpx.get(f"{service.base}/v1/account/balance",
                  headers={"authorization": f"Bearer {storage.tokens.access_token}"})
    assert r.status_code == 401


async def legacy_handshake(service: Service, account: Account) -> None:
    """A client pinned to the initialize handshake (2025-11-25 era) works too."""
    storage = MemoryStorage()
    browser = Browser(service.base, account)
    provider = OAuthClientProvider(
        server_url=f"{service.base}/mcp",
        client_metadata=OAuthClientMetadata(client_name="legacy", redirect_uris=[REDIRECT_URI],
                                            token_endpoint_auth_method="none"),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    async with create_mcp_http_client(auth=provider) as http:
        async with Client(streamable_http_client(f"{service.base}/mcp", http_client=http), mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            balance = await client.call_tool("account_balance", {})
            assert balance.structured_content == rest_balance(service, account)


def test_an_mcp_client_signs_in_with_oauth_and_uses_every_tool(service: Service, account: Account, site: Site):
    asyncio.run(asyncio.wait_for(connect_and_use(service, account, site), timeout=300))


def test_a_handshake_era_client_works_too(service: Service, account: Account):
    asyncio.run(asyncio.wait_for(legacy_handshake(service, account), timeout=120))


def test_mcp_without_a_token_says_where_to_sign_in(service: Service):
    r = httpx.post(f"{service.base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"accept": "application/json, text/event-stream"})
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith(
        f'Bearer resource_metadata="{service.base}/.well-known/oauth-protected-resource/mcp"'
    )
    body = r.json()
    assert body["mcp_url"] == f"{service.base}/mcp"
    assert body["login_url"] == f"{service.base}/login"
    assert body["setup_url"] == f"{service.base}/mcp/setup"
    assert body["codex_login_command"] == "codex mcp login capture"
    assert httpx.get(body["setup_url"]).status_code == 200

