"""The synchronous client, :class:`Capture`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import httpx

from . import _ops as ops
from . import errors
from ._core import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_WAIT,
    DEFAULT_TIMEOUT,
    FINAL,
    Config,
    Deadline,
    Request,
    SSEDecoder,
    clean_params,
    connection_error,
    error_from,
    parse_json,
    poll_interval,
    stream_timeout,
    write,
)
from ._record import AuditFields, JobFields, Record
from .signing import Expires, render_link

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from . import models

PathLike = Union[str, "os.PathLike[str]"]
DEFAULT_WAIT = 300.0


class Capture:
    """A client of a Capture service.

    >>> client = Capture("http://127.0.0.1:8080", "sk_live_…")
    >>> job = client.screenshots.create(url="https://example.com", fullPage=True)
    >>> job.wait(timeout=120).download("example.png")

    Every write carries an ``Idempotency-Key`` (one per call, the same on its retries); calls
    are retried on connection errors, 409/429/5xx answers (``max_retries`` times), waiting
    what ``Retry-After`` says when it says at most ``max_retry_wait`` seconds. Error answers
    raise :class:`~capture_client.errors.CaptureError` subclasses.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
        headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        base_url = base_url or os.environ.get("CAPTURE_BASE_URL") or ""
        api_key = api_key if api_key is not None else os.environ.get("CAPTURE_API_KEY")
        self._config = Config(base_url, api_key, timeout=timeout, max_retries=max_retries, max_retry_wait=max_retry_wait, headers=headers)
        self._own_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout, follow_redirects=False)
        self.screenshots = Screenshots(self)
        self.audits = Audits(self)
        self.monitors = Monitors(self)
        self.proxies = Proxies(self)
        self.webhooks = Webhooks(self)
        self.render_keys = RenderKeys(self)
        self.storage_destinations = StorageDestinations(self)
        self.account = Account(self)

    @property
    def base_url(self) -> str:
        return self._config.base_url

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- HTTP -------------------------------------------------------------------------------

    def _headers(self, url: str, extra: Mapping[str, str]) -> Dict[str, str]:
        if self._config.same_origin(url):
            return {**self._config.headers, **extra}
        return {"User-Agent": self._config.headers["User-Agent"], **extra}

    def _send(self, req: Request, *, timeout: Any = None) -> httpx.Response:
        """Make ``req``, again on a retryable failure, and answer its response (raising the
        error answers)."""
        url = self._config.url(req.path)
        headers = self._headers(url, req.http_headers())
        attempt = 0
        while True:
            try:
                resp = self._http.request(
                    req.method,
                    url,
                    params=req.params,
                    json=req.json,
                    files=req.files,
                    data=req.data,
                    headers=headers,
                    timeout=timeout if timeout is not None else self._config.timeout,
                )
            except httpx.TransportError as exc:
                wait = self._config.retry_wait(req, attempt, None, exc)
                if wait is None:
                    raise connection_error(exc, req) from exc
            else:
                if resp.is_success:
                    return resp
                wait = self._config.retry_wait(req, attempt, resp, None)
                if wait is None:
                    raise error_from(resp)
            time.sleep(wait)
            attempt += 1

    def _call(self, req: Request) -> Any:
        return parse_json(self._send(req))

    def request(self, method: str, path: str, *, params: Optional[Mapping[str, Any]] = None, json: Any = None, idempotency_key: Optional[str] = None) -> Any:
        """Any call of the API (``client.request("GET", "/v1/runs")``): the parsed JSON
        answer, with the client's authentication, retries and errors. Writes (POST) get an
        ``Idempotency-Key``."""
        method = method.upper()
        if method == "POST":
            req = write(method, path, json, idempotency_key=idempotency_key)
        else:
            req = Request(method, path, json=json, idempotency_key=idempotency_key)
        req.params = clean_params(params)
        return self._call(req)

    def paginate(self, path: str, *, limit: Optional[int] = None, **params: Any) -> Iterator[Any]:
        """Every item of any cursor-paged list (``{data, nextCursor}``), page after page:
        ``client.paginate("/v1/runs", limit=50)``."""
        return self._pages(Request("GET", path, params=clean_params({"limit": limit, **params})))

    def _pages(self, req: Request, wrap: Callable[[Any], Any] = lambda x: x) -> Iterator[Any]:
        params = dict(req.params or {})
        while True:
            body = self._call(Request("GET", req.path, params=params or None))
            for item in ops.items(body):
                yield wrap(item)
            cursor = body.get("nextCursor") if isinstance(body, dict) else None
            if not cursor:
                return
            params["before"] = cursor

    def _follow(self, path: str, deadline: Deadline, on_event: Callable[[str, Any], None]) -> Optional[Tuple[str, Any]]:
        """Read an SSE stream until its final event (``done``/``failed``: returned with its
        data) or its end (None). Raises the API's errors and httpx's transport errors."""
        url = self._config.url(path)
        headers = self._headers(url, {"Accept": "text/event-stream"})
        with self._http.stream("GET", url, headers=headers, timeout=stream_timeout(deadline, min(30.0, self._config.timeout))) as resp:
            if resp.status_code != 200:
                resp.read()
                raise error_from(resp)
            if not resp.headers.get("content-type", "").startswith("text/event-stream"):
                raise errors.CaptureError(f"{path} did not answer an event stream")
            decoder = SSEDecoder()
            for line in resp.iter_lines():
                ev = decoder.feed(line)
                if ev is not None:
                    data = ev.json()
                    if ev.event in FINAL:
                        return ev.event, data
                    if ev.event == "timeout":
                        return None
                    on_event(ev.event, data)
                if deadline.expired():
                    return None
        return None

    # --- conveniences -----------------------------------------------------------------------

    def render_link(self, url: str, key_id: str, secret: str, *, expires: Expires = None, **options: Any) -> str:
        """A signed render link on this client's service (see :func:`capture_client.render_link`)."""
        return render_link(self.base_url, key_id, secret, url, expires=expires, **options)

    def download(self, url: str, path: Optional[PathLike] = None) -> Union[bytes, Path]:
        """GET a file (a job's ``publicUrl``, a thumbnail): its bytes, or written to ``path``.
        The API key is sent only to the service's own origin."""
        if path is None:
            return self._send(Request("GET", url)).content
        target = Path(path)
        req = Request("GET", url)
        full = self._config.url(url)
        attempt = 0
        while True:
            try:
                with self._http.stream("GET", full, headers=self._headers(full, {"Accept": "*/*"}), timeout=self._config.timeout) as resp:
                    if resp.is_success:
                        tmp = target.with_name(target.name + ".part")
                        with open(tmp, "wb") as f:
                            for chunk in resp.iter_bytes():
                                f.write(chunk)
                        os.replace(tmp, target)
                        return target
                    resp.read()
                    wait = self._config.retry_wait(req, attempt, resp, None)
                    if wait is None:
                        raise error_from(resp)
            except httpx.TransportError as exc:
                wait = self._config.retry_wait(req, attempt, None, exc)
                if wait is None:
                    raise connection_error(exc, req) from exc
            time.sleep(wait)
            attempt += 1


# --- jobs -------------------------------------------------------------------------------------


def _wait(
    record: Record,
    client: Capture,
    get: Request,
    stream_path: str,
    final_key: str,
    timeout: Optional[float],
    poll: bool,
    raise_on_failure: bool,
) -> None:
    """Follow ``record`` until it is done or failed: its event stream, or polling once the
    stream fails (or with ``poll=True``)."""
    deadline = Deadline(timeout)
    use_stream = not poll
    polls = 0
    quick_ends = 0

    def on_event(name: str, data: Any) -> None:
        if isinstance(data, dict) and data.get("status") and data["status"] not in FINAL:
            record._update({**record.data, "status": data["status"]})
        if name == "progress" and isinstance(data, dict):
            record._update({**record.data, **{k: v for k, v in data.items() if k in ("pagesDone", "pagesTotal")}})

    while record.status not in FINAL:
        if deadline.expired():
            raise errors.WaitTimeoutError(f"{record.id} is still {record.status} after {timeout} s", job=record)
        if use_stream:
            started = time.monotonic()
            try:
                final = client._follow(stream_path, deadline, on_event)
            except errors.NotFoundError:
                raise
            except (errors.CaptureError, httpx.HTTPError):
                use_stream = False
                continue
            if final is not None:
                name, data = final
                whole = data.get(final_key) if isinstance(data, dict) else None
                if name == "done" and isinstance(whole, dict):
                    record._update(whole)
                    continue
            # A final event without the whole object, the stream's own timeout, or its end:
            # read the current state (and go back to the stream if it is still running).
            record._update(client._call(get))
            if final is None and time.monotonic() - started < 1.0:
                quick_ends += 1
                if quick_ends >= 3:
                    use_stream = False
        else:
            record._update(client._call(get))
            if record.status in FINAL:
                break
            time.sleep(deadline.cap(poll_interval(polls)))
            polls += 1
    if record.status == "failed" and raise_on_failure:
        raise errors.JobFailedError(record.get("error") or f"{record.id} failed", job=record)


class Job(JobFields):
    """A screenshot job (``scr_…``): its fields (``job.status``, ``job.public_url``,
    ``job["pageTitle"]``, ``job.data``) as last read, and what to do with it."""

    __slots__ = ("_client",)

    def __init__(self, client: Capture, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        object.__setattr__(self, "_client", client)

    def refresh(self) -> "Job":
        """Read the job again."""
        self._update(self._client._call(ops.screenshot_get(self.id)))
        return self

    def wait(self, timeout: Optional[float] = DEFAULT_WAIT, *, poll: bool = False, raise_on_failure: bool = True) -> "Job":
        """Wait until the job is done (or failed) and return it, following its event stream
        (``GET /v1/screenshot/{id}/stream``), or polling ``GET /v1/screenshot/{id}`` when the
        stream fails or ``poll`` is true. Raises :class:`~capture_client.errors.JobFailedError`
        when it failed (unless ``raise_on_failure`` is false) and
        :class:`~capture_client.errors.WaitTimeoutError` after ``timeout`` seconds (None:
        no limit)."""
        _wait(self, self._client, ops.screenshot_get(self.id), ops.screenshot_stream_path(self.id), "job", timeout, poll, raise_on_failure)
        return self

    def download(self, path: Optional[PathLike] = None, *, timeout: Optional[float] = DEFAULT_WAIT) -> Union[bytes, Path]:
        """The job's file (image, PDF, video or text): its bytes, or written to ``path``
        (returned as a :class:`~pathlib.Path`). Waits for the job first if it is not done."""
        if self.status != "done":
            self.wait(timeout)
        url = self.public_url
        if not url:
            raise errors.CaptureError(f"{self.id} has no file (publicUrl is null)")
        return self._client.download(url, path)

    def share(self) -> "models.ShareLink":
        """A public page for the job (``/s/…``) until :meth:`unshare`."""
        return self._client._call(ops.screenshot_share(self.id))

    def unshare(self) -> None:
        self._client._call(ops.screenshot_unshare(self.id))


class Batch:
    """A bulk request's answer: ``batch_id`` and its jobs in the request's order."""

    def __init__(self, client: Capture, data: Mapping[str, Any]) -> None:
        self._client = client
        self.data = dict(data)
        self.batch_id: str = data["batchId"]
        self.jobs: List[Job] = [Job(client, j) for j in data.get("data") or []]

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return f"Batch(batch_id={self.batch_id!r}, jobs={len(self.jobs)})"

    def refresh(self) -> "Batch":
        """Read the batch's jobs again (``GET /v1/screenshots?batch=``)."""
        body = self._client._call(ops.screenshot_list(None, None, {"batch": self.batch_id}))
        self.jobs = [Job(self._client, j) for j in ops.items(body)]
        return self

    def wait(self, timeout: Optional[float] = DEFAULT_WAIT, *, raise_on_failure: bool = False) -> List[Job]:
        """Wait until every job ended; the jobs (failed ones included unless
        ``raise_on_failure``)."""
        deadline = Deadline(timeout)
        for job in self.jobs:
            left = deadline.left()
            job.wait(None if left is None else max(left, 0.001), raise_on_failure=raise_on_failure)
        return self.jobs


class Audit(AuditFields):
    """A website audit (``aud_…``)."""

    __slots__ = ("_client",)

    def __init__(self, client: Capture, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        object.__setattr__(self, "_client", client)

    def refresh(self) -> "Audit":
        self._update(self._client._call(ops.audit_get(self.id)))
        return self

    def wait(self, timeout: Optional[float] = DEFAULT_WAIT, *, poll: bool = False, raise_on_failure: bool = True) -> "Audit":
        """Wait until the audit is done (or failed): its stream, falling back to polling."""
        _wait(self, self._client, ops.audit_get(self.id), ops.audit_stream_path(self.id), "audit", timeout, poll, raise_on_failure)
        if self.status == "done" and "report" not in self.data:
            self.refresh()
        return self


# --- resources ------------------------------------------------------------------------------


class _Resource:
    def __init__(self, client: Capture) -> None:
        self._client = client


class Screenshots(_Resource):
    """``/v1/screenshot…``: capture jobs."""

    def create(self, url: str, *, idempotency_key: Optional[str] = None, **options: "Unpack[models.ScreenshotOptions]") -> Job:
        """Ask for a capture of ``url`` (202: the job, ``pending``). ``options`` are the
        capture options in the API's names (``fullPage=True``, ``format="webp"``) or in
        snake_case (``full_page=True``)."""
        return Job(self._client, self._client._call(ops.screenshot_create(url, options, idempotency_key)))

    def get(self, job_id: str) -> Job:
        return Job(self._client, self._client._call(ops.screenshot_get(job_id)))

    def list(self, *, limit: Optional[int] = None, before: Optional[str] = None, **filters: Any) -> "models.JobList":
        """One page, newest first: ``{data, nextCursor}`` (pass ``nextCursor`` as ``before``)."""
        return self._client._call(ops.screenshot_list(limit, before, filters))

    def iter(self, *, limit: Optional[int] = None, **filters: Any) -> Iterator[Job]:
        """Every job, newest first, page after page (``limit`` per page)."""
        return self._client._pages(ops.screenshot_list(limit, None, filters), lambda j: Job(self._client, j))

    def bulk(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        defaults: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Batch:
        """Up to 500 captures in one call, all accepted or none (docs/bulk.md): each request
        is a capture request (``{"url": …, options}``), merged over ``defaults``."""
        return Batch(self._client, self._client._call(ops.screenshot_bulk(requests, defaults, idempotency_key)))

    def upload(
        self,
        file: Union[bytes, PathLike],
        *,
        filename: Optional[str] = None,
        content_type: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        **options: Any,
    ) -> Job:
        """Upload a PNG, JPEG, WebP, PDF (a done job with a thumbnail) or an HTML file
        (rendered with ``options``)."""
        if isinstance(file, (bytes, bytearray)):
            content, name = bytes(file), filename or "upload"
        else:
            content, name = Path(file).read_bytes(), filename or Path(file).name
        return Job(self._client, self._client._call(ops.screenshot_upload(content, name, content_type, options, idempotency_key)))

    def devices(self) -> "models.DeviceList":
        """The device presets of the ``device`` option."""
        return self._client._call(ops.devices())


class Audits(_Resource):
    """``/v1/audits…``: website audits (docs/audits.md)."""

    def create(self, url: str, *, report_type: Optional[str] = None, max_pages: Optional[int] = None, idempotency_key: Optional[str] = None, **fields: Any) -> Audit:
        return Audit(self._client, self._client._call(ops.audit_create(url, {"reportType": report_type, "maxPages": max_pages, **fields}, idempotency_key)))

    def get(self, audit_id: str) -> Audit:
        return Audit(self._client, self._client._call(ops.audit_get(audit_id)))

    def list(self, *, limit: Optional[int] = None, before: Optional[str] = None) -> "models.AuditList":
        return self._client._call(ops.page("/v1/audits", limit, before))

    def iter(self, *, limit: Optional[int] = None) -> Iterator[Audit]:
        return self._client._pages(ops.page("/v1/audits", limit, None), lambda a: Audit(self._client, a))


class Monitors(_Resource):
    """``/v1/monitors…``: pages captured on a schedule and compared (docs/monitors.md)."""

    def create(self, url: str, schedule: Mapping[str, Any], *, idempotency_key: Optional[str] = None, **fields: Any) -> "models.Monitor":
        """``schedule`` is ``{"every": "1h"}`` or ``{"cron": "0 9 * * 1-5", "timezone": …}``;
        ``fields``: name, capture, compare, threshold, ignoreSelectors, notify, baseline, paused."""
        return self._client._call(ops.monitor_create(url, schedule, fields, idempotency_key))

    def get(self, monitor_id: str) -> "models.Monitor":
        return self._client._call(ops.get(ops.monitor_path(monitor_id)))

    def list(self, *, limit: Optional[int] = None, before: Optional[str] = None) -> "models.MonitorList":
        return self._client._call(ops.page("/v1/monitors", limit, before))

    def iter(self, *, limit: Optional[int] = None) -> Iterator["models.Monitor"]:
        return self._client._pages(ops.page("/v1/monitors", limit, None))

    def update(self, monitor_id: str, **fields: Any) -> "models.Monitor":
        return self._client._call(ops.monitor_update(monitor_id, fields))

    def delete(self, monitor_id: str) -> None:
        self._client._call(ops.delete(ops.monitor_path(monitor_id)))

    def pause(self, monitor_id: str) -> "models.Monitor":
        return self._client._call(ops.monitor_action(monitor_id, "pause"))

    def resume(self, monitor_id: str) -> "models.Monitor":
        return self._client._call(ops.monitor_action(monitor_id, "resume"))

    def check(self, monitor_id: str) -> "models.MonitorCheck":
        """Check now: the pending check."""
        return self._client._call(ops.monitor_action(monitor_id, "check"))

    def checks(self, monitor_id: str, *, limit: Optional[int] = None, before: Optional[str] = None) -> "models.MonitorCheckList":
        return self._client._call(ops.page(ops.monitor_path(monitor_id, "/checks"), limit, before))

    def iter_checks(self, monitor_id: str, *, limit: Optional[int] = None) -> Iterator["models.MonitorCheck"]:
        return self._client._pages(ops.page(ops.monitor_path(monitor_id, "/checks"), limit, None))

    def get_check(self, monitor_id: str, check_id: str) -> "models.MonitorCheck":
        return self._client._call(ops.get(ops.monitor_path(monitor_id, f"/checks/{ops.seg(check_id)}")))

    def set_baseline(self, monitor_id: str, check_id: str) -> "models.Monitor":
        return self._client._call(ops.monitor_baseline(monitor_id, check_id))


class Proxies(_Resource):
    """``/v1/proxies…``: your own proxies (docs/proxies.md)."""

    def create(self, name: str, *, url: Optional[str] = None, urls: Optional[Sequence[str]] = None, idempotency_key: Optional[str] = None, **fields: Any) -> "models.Proxy":
        body = {"name": name, "url": url, "urls": list(urls) if urls is not None else None, **fields}
        return self._client._call(ops.create("/v1/proxies", body, idempotency_key))

    def get(self, proxy_id: str) -> "models.Proxy":
        return self._client._call(ops.get(f"/v1/proxies/{ops.seg(proxy_id)}"))

    def list(self) -> List["models.Proxy"]:
        return ops.items(self._client._call(ops.get("/v1/proxies")))

    def update(self, proxy_id: str, **fields: Any) -> "models.Proxy":
        return self._client._call(ops.patch(f"/v1/proxies/{ops.seg(proxy_id)}", fields))

    def delete(self, proxy_id: str) -> None:
        self._client._call(ops.delete(f"/v1/proxies/{ops.seg(proxy_id)}"))

    def test(self, proxy_id: str, *, url: Optional[str] = None) -> "models.ProxyTest":
        """Fetch ``url`` (default: the operator's address-echo page) through each member: its
        latency and exit address."""
        return self._client._call(ops.post(f"/v1/proxies/{ops.seg(proxy_id)}/test", {"url": url} if url else None))


class Webhooks(_Resource):
    """``/v1/webhooks…``: signed event deliveries (docs/webhooks.md)."""

    def create(self, url: str, *, events: Optional[Sequence[str]] = None, description: Optional[str] = None, idempotency_key: Optional[str] = None) -> "models.EndpointWithSecret":
        """An endpoint (with its ``secret``, shown this once)."""
        body = {"url": url, "events": list(events) if events is not None else None, "description": description}
        return self._client._call(ops.create("/v1/webhooks", body, idempotency_key))["endpoint"]

    def list(self) -> List["models.Endpoint"]:
        return ops.items(self._client._call(ops.get("/v1/webhooks")))

    def delete(self, endpoint_id: str) -> None:
        self._client._call(ops.delete(f"/v1/webhooks/{ops.seg(endpoint_id)}"))

    def rotate(self, endpoint_id: str) -> "models.RotatedSecret":
        """A new secret; the old one stops verifying at once."""
        return self._client._call(ops.post(f"/v1/webhooks/{ops.seg(endpoint_id)}/rotate"))

    def test(self, endpoint_id: str) -> "models.TestPing":
        """Send a ``test.ping`` delivery."""
        return self._client._call(ops.post(f"/v1/webhooks/{ops.seg(endpoint_id)}/test"))

    def deliveries(self, endpoint_id: str) -> List["models.Delivery"]:
        """The last 50 deliveries, newest first."""
        return ops.items(self._client._call(ops.get(f"/v1/webhooks/{ops.seg(endpoint_id)}/deliveries")))


class RenderKeys(_Resource):
    """``/v1/render-keys``: the keys that sign render links (docs/render-links.md)."""

    def create(self, name: str, *, idempotency_key: Optional[str] = None) -> "models.RenderKeyCreated":
        """``{id, name, secret, createdAt}``: the secret is shown this once."""
        return self._client._call(ops.create("/v1/render-keys", {"name": name}, idempotency_key))

    def list(self) -> List["models.RenderKey"]:
        return ops.items(self._client._call(ops.get("/v1/render-keys")))

    def delete(self, key_id: str) -> None:
        self._client._call(ops.delete(f"/v1/render-keys/{ops.seg(key_id)}"))


class StorageDestinations(_Resource):
    """``/v1/storage-destinations…``: your own S3-compatible buckets."""

    def create(self, *, idempotency_key: Optional[str] = None, **fields: Any) -> "models.StorageDestination":
        return self._client._call(ops.create("/v1/storage-destinations", fields, idempotency_key))

    def list(self) -> List["models.StorageDestination"]:
        return ops.items(self._client._call(ops.get("/v1/storage-destinations")))

    def get(self, destination_id: str) -> "models.StorageDestination":
        return self._client._call(ops.get(f"/v1/storage-destinations/{ops.seg(destination_id)}"))

    def delete(self, destination_id: str) -> None:
        self._client._call(ops.delete(f"/v1/storage-destinations/{ops.seg(destination_id)}"))


class Account(_Resource):
    """``/v1/account…``."""

    def balance(self) -> "models.Balance":
        """The live monthly balance: plan, window, usage."""
        return self._client._call(ops.get("/v1/account/balance"))
