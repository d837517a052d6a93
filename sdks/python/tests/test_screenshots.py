"""Captures as a user makes them: create, wait (stream and polling), download, errors,
idempotent retries, paging, bulk, uploads, two tenants."""

from __future__ import annotations

import time

import httpx
import pytest

from capture_client import (
    Capture,
    CaptureError,
    Job,
    JobFailedError,
    NotFoundError,
    ValidationError,
    WaitTimeoutError,
)
from png import read_png

from conftest import PAGE_RGB


def assert_page_png(data: bytes, width: int, height: int) -> None:
    png = read_png(data)
    assert (png.width, png.height) == (width, height)
    r, g, b = png.pixel(width // 2, height - 5)[:3]
    assert abs(r - PAGE_RGB[0]) <= 3 and abs(g - PAGE_RGB[1]) <= 3 and abs(b - PAGE_RGB[2]) <= 3, (r, g, b)


@pytest.fixture(scope="module")
def done_job(client: Capture, site):
    job = client.screenshots.create(url=site.url("/shot"), width=400, height=300)
    return job.wait(timeout=120)


def test_create_wait_download(client: Capture, site, done_job, tmp_path):
    assert done_job.id.startswith("scr_")
    assert done_job.status == "done"
    assert done_job.done and done_job.public_url
    assert done_job["pageTitle"] == "SDK test page"
    assert done_job.page_title == "SDK test page"  # snake_case reads camelCase fields
    png = done_job.download()
    assert isinstance(png, bytes)
    assert_page_png(png, 400, 300)
    written = done_job.download(tmp_path / "shot.png")
    assert written.read_bytes() == png


def test_create_returns_pending_job_and_snake_case_options(client: Capture, site):
    job = client.screenshots.create(url=site.url("/snake"), width=320, height=240, full_page=False, device_scale_factor=1)
    assert job.status in ("pending", "processing", "done")
    job.wait(timeout=120)
    assert (job.width, job.height) == (320, 240)
    assert_page_png(job.download(), 320, 240)


def test_wait_falls_back_to_polling_when_the_stream_fails(service, api_key, site):
    """The event stream refused (a proxy that drops it, say): wait() polls instead."""
    streams = []

    class NoStreams(httpx.HTTPTransport):
        def handle_request(self, request):
            if request.url.path.endswith("/stream"):
                streams.append(request.url.path)
                raise httpx.ConnectError("streams are blocked here", request=request)
            return super().handle_request(request)

    with Capture(service.base, api_key, http_client=httpx.Client(transport=NoStreams())) as c:
        job = c.screenshots.create(url=site.url("/poll"), width=300, height=200)
        job.wait(timeout=120)
        assert job.status == "done"
        assert streams == [f"/v1/screenshot/{job.id}/stream"]  # tried once, then polled
        assert_page_png(job.download(), 300, 200)


def test_wait_with_poll_and_timeout(client: Capture, site):
    job = client.screenshots.create(url=site.url("/slow"), width=300, height=200, delay=3000)
    with pytest.raises(WaitTimeoutError) as e:
        job.wait(timeout=0.5)
    assert isinstance(e.value, TimeoutError)
    job.wait(timeout=120, poll=True)
    assert job.status == "done"


def test_failed_job_raises_job_failed(client: Capture, site):
    job = client.screenshots.create(url=site.url("/status/404"), failOnHttpError=True)
    with pytest.raises(JobFailedError) as e:
        job.wait(timeout=120)
    assert e.value.job is job and job.status == "failed" and job.failed
    assert job.error and "404" in job.error and e.value.message == job.error
    # Asked not to raise, wait() answers the failed job; download() has nothing to give.
    assert client.screenshots.get(job.id).wait(raise_on_failure=False).status == "failed"
    with pytest.raises(JobFailedError):
        job.download()


def test_not_found(client: Capture, done_job):
    missing = done_job.id[:-4] + ("aaaa" if not done_job.id.endswith("aaaa") else "bbbb")
    with pytest.raises(NotFoundError) as e:
        client.screenshots.get(missing)
    err = e.value
    assert isinstance(err, CaptureError)
    assert err.status == 404 and err.code == "NOT_FOUND"
    assert err.message and err.request_id


def test_validation_error(client: Capture, site):
    with pytest.raises(ValidationError) as e:
        client.screenshots.create(url=site.url("/"), width=-5)
    err = e.value
    assert err.status == 400 and err.code == "VALIDATION_ERROR"
    assert err.details and err.details.get("field") == "width"
    assert err.request_id
    with pytest.raises(ValidationError) as e:
        client.screenshots.create(url="ftp://example.com/")
    assert e.value.code == "VALIDATION_ERROR" and e.value.details["field"] == "url"


def test_same_idempotency_key_returns_the_same_job(client: Capture, site):
    key = "sdk-test-" + str(time.time_ns())
    a = client.screenshots.create(url=site.url("/idem"), width=300, height=200, idempotency_key=key)
    b = client.screenshots.create(url=site.url("/idem"), width=300, height=200, idempotency_key=key)
    assert a.id == b.id


def test_a_lost_answer_is_retried_with_the_same_key_and_makes_one_job(service, site):
    """The first POST reaches the service but its answer is lost: the client retries with the
    same Idempotency-Key and gets the same job; the account has one job, not two."""
    key = service.new_key("lost-answer")
    seen_keys = []

    class LoseFirstAnswer(httpx.HTTPTransport):
        lost = False

        def handle_request(self, request):
            resp = super().handle_request(request)
            if request.method == "POST":
                seen_keys.append(request.headers.get("idempotency-key"))
                if not self.lost:
                    self.lost = True
                    resp.read()
                    resp.close()
                    raise httpx.ReadError("connection reset by peer", request=request)
            return resp

    with Capture(service.base, key, http_client=httpx.Client(transport=LoseFirstAnswer())) as c:
        job = c.screenshots.create(url=site.url("/lost"), width=300, height=200)
        assert len(seen_keys) == 2 and seen_keys[0] == seen_keys[1] and seen_keys[0]
        ids = [j.id for j in c.screenshots.iter()]
        assert ids == [job.id]
        # Another logical call gets another key, so another job.
        other = c.screenshots.create(url=site.url("/lost"), width=300, height=200)
        assert other.id != job.id and seen_keys[2] != seen_keys[0]


def test_retry_after_is_honoured(service, api_key, site):
    """A 503 with Retry-After: 1 is retried after a second, with the same key."""
    attempts = []

    class BusyOnce(httpx.HTTPTransport):
        def handle_request(self, request):
            if request.method == "POST":
                attempts.append((time.monotonic(), request.headers.get("idempotency-key")))
                if len(attempts) == 1:
                    return httpx.Response(
                        503,
                        headers={"retry-after": "1", "content-type": "application/json"},
                        json={"error": "busy", "code": "SERVICE_UNAVAILABLE", "requestId": "req_test"},
                    )
            return super().handle_request(request)

    with Capture(service.base, api_key, http_client=httpx.Client(transport=BusyOnce())) as c:
        job = c.screenshots.create(url=site.url("/busy"), width=300, height=200)
    assert job.id.startswith("scr_")
    assert len(attempts) == 2
    assert attempts[1][0] - attempts[0][0] >= 0.95
    assert attempts[0][1] == attempts[1][1]


def test_no_retry_beyond_max_retries(service, api_key):
    calls = []

    class AlwaysDown(httpx.BaseTransport):
        def handle_request(self, request):
            calls.append(request)
            return httpx.Response(502, headers={"retry-after": "0"}, json={"error": "bad gateway", "code": "INTERNAL_ERROR", "requestId": "req_x"})

    c = Capture(service.base, api_key, max_retries=2, http_client=httpx.Client(transport=AlwaysDown()))
    with pytest.raises(CaptureError) as e:
        c.account.balance()
    assert e.value.status == 502 and e.value.code == "INTERNAL_ERROR" and len(calls) == 3


def test_two_tenants_do_not_see_each_others_jobs(service, client: Capture, done_job):
    other = service.client(service.new_key("tenant-b"))
    with pytest.raises(NotFoundError) as e:
        other.screenshots.get(done_job.id)
    assert e.value.code == "NOT_FOUND"
    assert [j.id for j in other.screenshots.iter()] == []
    # Nor their other resources.
    key = client.render_keys.create("tenant-a")
    with pytest.raises(NotFoundError):
        other.render_keys.delete(key["id"])
    assert other.render_keys.list() == []
    # Following the other tenant's job (its stream, then polling) is NOT_FOUND too.
    with pytest.raises(NotFoundError):
        Job(other, {"id": done_job.id, "status": "pending"}).wait(timeout=10)
    with pytest.raises(NotFoundError):
        Job(other, {"id": done_job.id, "status": "pending"}).wait(timeout=10, poll=True)


def test_paging_iterates_across_pages(service, site):
    requests = []
    c = Capture(service.base, service.new_key("paging"), http_client=httpx.Client(event_hooks={"request": [lambda r: requests.append(str(r.url))]}))
    batch = c.screenshots.bulk([{"url": site.url(f"/p{i}")} for i in range(5)], defaults={"width": 200, "height": 150})
    created = [j.id for j in batch]
    first = c.screenshots.list(limit=2)
    assert len(first["data"]) == 2 and first["nextCursor"]
    second = c.screenshots.list(limit=2, before=first["nextCursor"])
    assert len(second["data"]) == 2
    assert not {j["id"] for j in first["data"]} & {j["id"] for j in second["data"]}
    requests.clear()
    listed = [j.id for j in c.screenshots.iter(limit=2)]
    assert sorted(listed) == sorted(created) and len(listed) == 5
    assert len(requests) == 3  # 2 + 2 + 1
    # Any cursor list, by path.
    assert [j["id"] for j in c.paginate("/v1/screenshots", limit=3)] == listed
    batch.wait(timeout=180)


def test_bulk(client: Capture, site):
    batch = client.screenshots.bulk(
        [{"url": site.url("/b0")}, {"url": site.url("/b1"), "width": 240}],
        defaults={"width": 320, "height": 200},
    )
    assert batch.batch_id.startswith("bat_") and len(batch) == 2
    jobs = batch.wait(timeout=180)
    assert [j.status for j in jobs] == ["done", "done"]
    assert [j.width for j in jobs] == [320, 240]
    assert_page_png(jobs[1].download(), 240, 200)
    listed = batch.refresh().jobs
    assert [j.id for j in listed] == [j.id for j in jobs]


def test_bulk_refuses_all_naming_the_bad_request(client: Capture, site):
    with pytest.raises(ValidationError) as e:
        client.screenshots.bulk([{"url": site.url("/ok")}, {"url": site.url("/bad"), "width": 0}])
    assert e.value.details["field"] == "requests[1].width"


def test_upload_an_image(client: Capture, done_job):
    png = done_job.download()
    job = client.screenshots.upload(png, filename="mine.png", content_type="image/png")
    job.wait(timeout=60)
    assert job.status == "done" and (job.width, job.height) == (400, 300)
    assert read_png(job.download()).width == 400


def test_share_and_devices(client: Capture, done_job):
    link = done_job.share()
    assert link["screenshotId"] == done_job.id
    page = httpx.get(link["shareUrl"])
    assert page.status_code == 200 and "SDK test page" in page.text
    done_job.unshare()
    devices = client.screenshots.devices()["data"]
    assert any(d["name"].startswith("iphone") for d in devices)
