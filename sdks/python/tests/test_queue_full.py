"""A real 429 with Retry-After: a service that lets an account have one capture waiting or
running (CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT=1) refuses a second with QUEUE_FULL and
Retry-After: 5. The client waits that long and tries again with the same Idempotency-Key;
without retries the caller gets a RateLimitError."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx
import pytest

from capture_client import Capture, RateLimitError
from conftest import start_service


@pytest.fixture(scope="module")
def bounded_service():
    tmp = tempfile.TemporaryDirectory(prefix="capture-sdk-python-bounded-")
    svc = start_service(Path(tmp.name), {"CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT": "1", "CAPTURE_WORKER_CONCURRENCY": "1"}, roles="api,worker")
    yield svc
    svc.stop()
    tmp.cleanup()


def test_queue_full_is_retried_after_retry_after(bounded_service, site):
    key = bounded_service.new_key("bounded")
    no_retries = Capture(bounded_service.base, key, max_retries=0)
    first = no_retries.screenshots.create(url=site.url("/q1"), width=200, height=100, delay=3000)
    with pytest.raises(RateLimitError) as e:
        no_retries.screenshots.create(url=site.url("/q2"), width=200, height=100)
    assert e.value.status == 429 and e.value.code == "QUEUE_FULL"
    assert e.value.retry_after == 5

    posts = []
    http = httpx.Client(event_hooks={"response": [lambda r: posts.append((time.monotonic(), r.status_code, r.request.headers.get("idempotency-key"))) if r.request.method == "POST" else None]})
    with Capture(bounded_service.base, key, http_client=http) as c:
        second = c.screenshots.create(url=site.url("/q2"), width=200, height=100)
    assert second.id != first.id
    codes = [p[1] for p in posts]
    assert codes[0] == 429 and codes[-1] == 202, codes
    assert len({p[2] for p in posts}) == 1  # one key for the whole call
    assert posts[1][0] - posts[0][0] >= 4.9  # waited what Retry-After said
    assert second.wait(timeout=120).status == "done"
