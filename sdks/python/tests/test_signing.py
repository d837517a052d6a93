"""Render links signed by render_link, answered by the service; webhook deliveries sent by
the service, verified by verify_webhook."""

from __future__ import annotations

import datetime as dt
import time

import httpx
import pytest

from capture_client import Capture, WebhookVerificationError, render_link, verify_webhook
from png import read_png


def fetch_render(link: str, timeout: float = 120) -> httpx.Response:
    """A render link's answer, following its 202 (still capturing) until the file comes."""
    end = time.monotonic() + timeout
    while True:
        r = httpx.get(link, timeout=90)
        if r.status_code != 202:
            return r
        assert time.monotonic() < end, "the render link stayed 202"
        time.sleep(float(r.headers.get("retry-after", "1")))


@pytest.fixture(scope="module")
def render_key(client: Capture):
    key = client.render_keys.create("sdk tests")
    assert key["id"].startswith("rlk_") and key["secret"].startswith("rks_")
    return key


def test_render_link_answers_an_image(client: Capture, site, render_key):
    link = render_link(
        client.base_url,
        render_key["id"],
        render_key["secret"],
        site.url("/render"),
        width=360,
        height=240,
        hideSelectors=["h1"],
        full_page=False,
        expires=dt.timedelta(minutes=10),
    )
    assert "&signature=" in link and "fullPage=false" in link and "hideSelectors=%5B%22h1%22%5D" in link
    r = fetch_render(link)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "image/png"
    png = read_png(r.content)
    assert (png.width, png.height) == (360, 240)
    # From the cache the second time, free.
    again = httpx.get(link)
    assert again.status_code == 200 and again.headers.get("x-cache") == "HIT"
    # The client's own helper signs the same way.
    same = client.render_link(site.url("/render"), render_key["id"], render_key["secret"], width=360, height=240)
    assert fetch_render(same).status_code == 200


def test_an_altered_or_expired_link_is_refused(client: Capture, site, render_key):
    link = render_link(client.base_url, render_key["id"], render_key["secret"], site.url("/render"), width=360)
    altered = link.replace("width=360", "width=361")
    r = httpx.get(altered)
    assert r.status_code == 401 and r.json()["code"] == "UNAUTHORIZED"
    wrong_secret = render_link(client.base_url, render_key["id"], "rks_not-the-secret", site.url("/render"))
    assert httpx.get(wrong_secret).status_code == 401
    expired = render_link(client.base_url, render_key["id"], render_key["secret"], site.url("/render"), expires=int(time.time()) - 5)
    r = httpx.get(expired)
    assert r.status_code == 403 and r.json()["code"] == "FORBIDDEN"


def test_render_link_signature_matches_the_documented_recipe():
    """docs/render-links.md: HMAC-SHA256 of the query string as sent, before &signature=."""
    import hashlib
    import hmac
    import urllib.parse

    q = urllib.parse.urlencode({"url": "https://example.com", "width": 1200, "key": "rlk_abc"})
    want = f"https://c.example/v1/render?{q}&signature=" + hmac.new(b"rks_s", q.encode(), hashlib.sha256).hexdigest()
    assert render_link("https://c.example/", "rlk_abc", "rks_s", "https://example.com", width=1200) == want


def test_verify_webhook_accepts_a_real_delivery_and_rejects_tampering(client: Capture, site):
    endpoint = client.webhooks.create(site.url("/hooks/ping"), events=["test.ping"], description="sdk")
    secret = endpoint["secret"]
    assert secret.startswith("whsec_")
    ping = client.webhooks.test(endpoint["id"])
    hook = site.next_hook("/hooks/ping", event="test.ping")
    event = verify_webhook(hook.headers, hook.raw, secret)
    assert event["type"] == "test.ping" and event["id"] == hook.headers["webhook-id"]
    assert event["data"]["endpointId"] == endpoint["id"]
    assert ping["deliveryId"]
    # Header names in any case, the body as text.
    upper = {k.title(): v for k, v in hook.headers.items()}
    assert verify_webhook(upper, hook.raw.decode(), secret)["type"] == "test.ping"

    altered = hook.raw.replace(b"test.ping", b"test.pong")
    with pytest.raises(WebhookVerificationError):
        verify_webhook(hook.headers, altered, secret)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(hook.headers, hook.raw, secret + "x")
    t = int(hook.headers["webhook-signature"].split(",")[0].split("=")[1])
    # Six minutes later the same delivery is too old (tolerance 300 s), unless told otherwise.
    with pytest.raises(WebhookVerificationError, match="tolerance"):
        verify_webhook(hook.headers, hook.raw, secret, now=t + 360)
    assert verify_webhook(hook.headers, hook.raw, secret, tolerance=600, now=t + 360)["type"] == "test.ping"
    with pytest.raises(WebhookVerificationError):
        verify_webhook({k: v for k, v in hook.headers.items() if k != "webhook-signature"}, hook.raw, secret)

    # After a rotation the old secret no longer verifies a new delivery.
    rotated = client.webhooks.rotate(endpoint["id"])
    client.webhooks.test(endpoint["id"])
    hook2 = site.next_hook("/hooks/ping", event="test.ping")
    assert verify_webhook(hook2.headers, hook2.raw, rotated["secret"])["type"] == "test.ping"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(hook2.headers, hook2.raw, secret)

    deliveries = client.webhooks.deliveries(endpoint["id"])
    assert len(deliveries) >= 2 and all(d["eventType"] == "test.ping" for d in deliveries)
    assert any(e["id"] == endpoint["id"] for e in client.webhooks.list())
    client.webhooks.delete(endpoint["id"])
    assert all(e["id"] != endpoint["id"] for e in client.webhooks.list())


def test_a_capture_delivers_a_verifiable_completed_event(client: Capture, site):
    endpoint = client.webhooks.create(site.url("/hooks/shots"), events=["screenshot.completed"])
    try:
        job = client.screenshots.create(url=site.url("/hooked"), width=300, height=200)
        hook = site.next_hook("/hooks/shots", timeout=120)
        event = verify_webhook(hook.headers, hook.raw, endpoint["secret"])
        assert event["type"] == "screenshot.completed"
        assert event["data"]["screenshotId"] == job.id
        assert event["data"]["publicUrl"] == job.wait(timeout=60).public_url
    finally:
        client.webhooks.delete(endpoint["id"])
