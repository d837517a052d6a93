"""The other resources: account, monitors, proxies, render keys, audits, storage, and the
escape hatch for any call."""

from __future__ import annotations

import time

import pytest

from capture_client import AuthenticationError, Capture, NotFoundError, ValidationError


def test_balance(client: Capture):
    b = client.account.balance()
    assert b["plan"] == "pro" and b["unit"] == "actions"
    assert set(b["usage"]) >= {"used", "limit", "remaining", "unlimited"}


def test_a_bad_key_is_an_authentication_error(service):
    with pytest.raises(AuthenticationError) as e:
        Capture(service.base, "sk_live_not-a-key").account.balance()
    assert e.value.status == 401 and e.value.code == "UNAUTHORIZED"


def test_request_escape_hatch(client: Capture):
    assert client.request("GET", "/v1/account/usage")["unit"] == "actions"
    page = client.request("GET", "/v1/screenshots", params={"limit": 1})
    assert "data" in page and "nextCursor" in page


def test_monitors(service, site):
    c = service.client(service.new_key("monitors"))
    first = c.monitors.create(site.url("/mon1"), {"every": "1h"}, name="one", capture={"width": 300, "height": 200}, compare="pixels")
    second = c.monitors.create(site.url("/mon2"), {"every": "2h"}, name="two", paused=True)
    assert first["id"].startswith("mon_") and first["name"] == "one"
    assert second["status"] == "paused"
    # Newest first, one per page.
    assert [m["id"] for m in c.monitors.iter(limit=1)] == [second["id"], first["id"]]
    page = c.monitors.list(limit=1)
    assert page["nextCursor"] and len(page["data"]) == 1

    assert c.monitors.update(first["id"], name="renamed", threshold=0.01)["name"] == "renamed"
    assert c.monitors.pause(first["id"])["status"] == "paused"
    assert c.monitors.resume(first["id"])["status"] == "active"

    with pytest.raises(ValidationError) as e:
        c.monitors.create(site.url("/"), {"every": "1s"})
    assert e.value.details["field"] == "schedule.every"

    # Its first check becomes the baseline.
    end = time.monotonic() + 120
    checks = []
    while time.monotonic() < end:
        checks = list(c.monitors.iter_checks(first["id"], limit=1))
        if checks and checks[-1]["status"] != "pending":
            break
        time.sleep(1)
    assert checks and checks[-1]["status"] == "baseline", checks
    got = c.monitors.get_check(first["id"], checks[-1]["id"])
    assert got["isBaseline"] is True
    assert c.monitors.set_baseline(first["id"], got["id"])["baselineCheckId"] == got["id"]

    c.monitors.delete(second["id"])
    with pytest.raises(NotFoundError):
        c.monitors.get(second["id"])


def test_proxies(client: Capture):
    p = client.proxies.create("sdk-office", url="http://user:pw@127.0.0.1:9/")
    assert p["id"].startswith("prx_") and p["name"] == "sdk-office"
    assert "pw" not in str(p)  # credentials are never returned
    assert any(x["id"] == p["id"] for x in client.proxies.list())
    assert client.proxies.get("sdk-office")["id"] == p["id"]  # by name too
    assert client.proxies.update(p["id"], name="sdk-office-2")["name"] == "sdk-office-2"
    report = client.proxies.test(p["id"])
    assert report["ok"] is False and report["members"][0]["ok"] is False
    client.proxies.delete(p["id"])
    with pytest.raises(NotFoundError):
        client.proxies.get(p["id"])


def test_render_keys(client: Capture):
    key = client.render_keys.create("temporary")
    assert any(k["id"] == key["id"] and "secret" not in k for k in client.render_keys.list())
    client.render_keys.delete(key["id"])
    assert all(k["id"] != key["id"] for k in client.render_keys.list())
    with pytest.raises(NotFoundError):
        client.render_keys.delete(key["id"])


def test_storage_destinations_list(client: Capture):
    assert client.storage_destinations.list() == []


def test_audit(client: Capture, site):
    audit = client.audits.create(site.url("/audited"), report_type="single_page")
    assert audit.id.startswith("aud_") and audit.status in ("pending", "processing")
    audit.wait(timeout=240)
    assert audit.status == "done"
    assert audit.scores and set(audit.scores) >= {"performance", "seo", "accessibility", "bestPractices"}
    assert audit["report"]
    assert audit.id in [a.id for a in client.audits.iter(limit=5)]


def test_writes_without_idempotency_are_not_replayed_after_a_lost_answer(service, site):
    """POST /v1/webhooks takes no Idempotency-Key: after a lost answer the client does not
    try again (the endpoint was made: a retry would make a second); a connection that was
    never made is retried."""
    import httpx

    from capture_client import APIConnectionError

    key = service.new_key("no-replay")
    posts = []

    class Flaky(httpx.HTTPTransport):
        mode = "lose-answer"

        def handle_request(self, request):
            if request.method == "POST":
                posts.append(request.url.path)
                if self.mode == "refuse" and len(posts) == 1:
                    raise httpx.ConnectError("connection refused", request=request)
                resp = super().handle_request(request)
                if self.mode == "lose-answer":
                    resp.read()
                    raise httpx.ReadError("connection reset by peer", request=request)
                return resp
            return super().handle_request(request)

    transport = Flaky()
    with Capture(service.base, key, http_client=httpx.Client(transport=transport)) as c:
        with pytest.raises(APIConnectionError):
            c.webhooks.create(site.url("/hooks/once"))
        assert posts == ["/v1/webhooks"]
        assert len(c.webhooks.list()) == 1  # made once, not twice
        posts.clear()
        transport.mode = "refuse"
        made = c.webhooks.create(site.url("/hooks/twice"))
        assert posts == ["/v1/webhooks", "/v1/webhooks"] and made["secret"]
        assert len(c.webhooks.list()) == 2
