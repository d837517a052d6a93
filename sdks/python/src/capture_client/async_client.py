"""The asynchronous client, :class:`AsyncCapture`: the calls of :class:`~capture_client.Capture`,
awaited (list iterators are ``async for``)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

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


class AsyncCapture:
    """The asynchronous client of a Capture service.

    >>> async with AsyncCapture("http://127.0.0.1:8080", "sk_live_…") as client:
    ...     job = await client.screenshots.create(url="https://example.com")
    ...     png = await (await job.wait()).download()
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
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        base_url = base_url or os.environ.get("CAPTURE_BASE_URL") or ""
        api_key = api_key if api_key is not None else os.environ.get("CAPTURE_API_KEY")
        self._config = Config(base_url, api_key, timeout=timeout, max_retries=max_retries, max_retry_wait=max_retry_wait, headers=headers)
        self._own_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        self.screenshots = AsyncScreenshots(self)
        self.audits = AsyncAudits(self)
        self.monitors = AsyncMonitors(self)
        self.proxies = AsyncProxies(self)
        self.webhooks = AsyncWebhooks(self)
        self.render_keys = AsyncRenderKeys(self)
        self.storage_destinations = AsyncStorageDestinations(self)
        self.account = AsyncAccount(self)

    @property
    def base_url(self) -> str:
        return self._config.base_url

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncCapture":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # --- HTTP -------------------------------------------------------------------------------

    def _headers(self, url: str, extra: Mapping[str, str]) -> Dict[str, str]:
        if self._config.same_origin(url):
            return {**self._config.headers, **extra}
        return {"User-Agent": self._config.headers["User-Agent"], **extra}

    async def _send(self, req: Request, *, timeout: Any = None) -> httpx.Response:
        url = self._config.url(req.path)
        headers = self._headers(url, req.http_headers())
        attempt = 0
        while True:
            try:
                resp = await self._http.request(
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
            await asyncio.sleep(wait)
            attempt += 1

    async def _call(self, req: Request) -> Any:
        return parse_json(await self._send(req))

    async def request(self, method: str, path: str, *, params: Optional[Mapping[str, Any]] = None, json: Any = None, idempotency_key: Optional[str] = None) -> Any:
        """Any call of the API: the parsed JSON answer (see :meth:`Capture.request`)."""
        method = method.upper()
        if method == "POST":
            req = write(method, path, json, idempotency_key=idempotency_key)
        else:
            req = Request(method, path, json=json, idempotency_key=idempotency_key)
        req.params = clean_params(params)
        return await self._call(req)

    def paginate(self, path: str, *, limit: Optional[int] = None, **params: Any) -> AsyncIterator[Any]:
        """Every item of any cursor-paged list, page after page (``async for``)."""
        return self._pages(Request("GET", path, params=clean_params({"limit": limit, **params})))

    async def _pages(self, req: Request, wrap: Callable[[Any], Any] = lambda x: x) -> AsyncIterator[Any]:
        params = dict(req.params or {})
        while True:
            body = await self._call(Request("GET", req.path, params=params or None))
            for item in ops.items(body):
                yield wrap(item)
            cursor = body.get("nextCursor") if isinstance(body, dict) else None
            if not cursor:
                return
            params["before"] = cursor

    async def _follow(self, path: str, deadline: Deadline, on_event: Callable[[str, Any], None]) -> Optional[Tuple[str, Any]]:
        url = self._config.url(path)
        headers = self._headers(url, {"Accept": "text/event-stream"})
        async with self._http.stream("GET", url, headers=headers, timeout=stream_timeout(deadline, min(30.0, self._config.timeout))) as resp:
            if resp.status_code != 200:
                await resp.aread()
                raise error_from(resp)
            if not resp.headers.get("content-type", "").startswith("text/event-stream"):
                raise errors.CaptureError(f"{path} did not answer an event stream")
            decoder = SSEDecoder()
            async for line in resp.aiter_lines():
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

    async def download(self, url: str, path: Optional[PathLike] = None) -> Union[bytes, Path]:
        """GET a file: its bytes, or written to ``path``. The API key goes only to the
        service's own origin."""
        content = (await self._send(Request("GET", url))).content
        if path is None:
            return content
        target = Path(path)
        tmp = target.with_name(target.name + ".part")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        return target


async def _wait(
    record: Record,
    client: AsyncCapture,
    get: Request,
    stream_path: str,
    final_key: str,
    timeout: Optional[float],
    poll: bool,
    raise_on_failure: bool,
) -> None:
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
                final = await client._follow(stream_path, deadline, on_event)
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
            record._update(await client._call(get))
            if final is None and time.monotonic() - started < 1.0:
                quick_ends += 1
                if quick_ends >= 3:
                    use_stream = False
        else:
            record._update(await client._call(get))
            if record.status in FINAL:
                break
            await asyncio.sleep(deadline.cap(poll_interval(polls)))
            polls += 1
    if record.status == "failed" and raise_on_failure:
        raise errors.JobFailedError(record.get("error") or f"{record.id} failed", job=record)


class AsyncJob(JobFields):
    """A screenshot job of the async client (see :class:`capture_client.Job`)."""

    __slots__ = ("_client",)

    def __init__(self, client: AsyncCapture, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        object.__setattr__(self, "_client", client)

    async def refresh(self) -> "AsyncJob":
        self._update(await self._client._call(ops.screenshot_get(self.id)))
        return self

    async def wait(self, timeout: Optional[float] = DEFAULT_WAIT, *, poll: bool = False, raise_on_failure: bool = True) -> "AsyncJob":
        """Wait until the job is done (or failed): its event stream, or polling when the
        stream fails."""
        await _wait(self, self._client, ops.screenshot_get(self.id), ops.screenshot_stream_path(self.id), "job", timeout, poll, raise_on_failure)
        return self

    async def download(self, path: Optional[PathLike] = None, *, timeout: Optional[float] = DEFAULT_WAIT) -> Union[bytes, Path]:
        """The job's file: its bytes, or written to ``path``; waits for the job first."""
        if self.status != "done":
            await self.wait(timeout)
        url = self.public_url
        if not url:
            raise errors.CaptureError(f"{self.id} has no file (publicUrl is null)")
        return await self._client.download(url, path)

    async def share(self) -> "models.ShareLink":
        return await self._client._call(ops.screenshot_share(self.id))

    async def unshare(self) -> None:
        await self._client._call(ops.screenshot_unshare(self.id))


class AsyncBatch:
    """A bulk request's answer: ``batch_id`` and its jobs in the request's order."""

    def __init__(self, client: AsyncCapture, data: Mapping[str, Any]) -> None:
        self._client = client
        self.data = dict(data)
        self.batch_id: str = data["batchId"]
        self.jobs: List[AsyncJob] = [AsyncJob(client, j) for j in data.get("data") or []]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return f"AsyncBatch(batch_id={self.batch_id!r}, jobs={len(self.jobs)})"

    async def refresh(self) -> "AsyncBatch":
        body = await self._client._call(ops.screenshot_list(None, None, {"batch": self.batch_id}))
        self.jobs = [AsyncJob(self._client, j) for j in ops.items(body)]
        return self

    async def wait(self, timeout: Optional[float] = DEFAULT_WAIT, *, raise_on_failure: bool = False) -> List[AsyncJob]:
        """Wait until every job ended (concurrently)."""
        await asyncio.gather(*(j.wait(timeout, raise_on_failure=raise_on_failure) for j in self.jobs))
        return self.jobs


class AsyncAudit(AuditFields):
    """A website audit of the async client."""

    __slots__ = ("_client",)

    def __init__(self, client: AsyncCapture, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        object.__setattr__(self, "_client", client)

    async def refresh(self) -> "AsyncAudit":
        self._update(await self._client._call(ops.audit_get(self.id)))
        return self

    async def wait(self, timeout: Optional[float] = DEFAULT_WAIT, *, poll: bool = False, raise_on_failure: bool = True) -> "AsyncAudit":
        await _wait(self, self._client, ops.audit_get(self.id), ops.audit_stream_path(self.id), "audit", timeout, poll, raise_on_failure)
        if self.status == "done" and "report" not in self.data:
            await self.refresh()
        return self


class _Resource:
    def __init__(self, client: AsyncCapture) -> None:
        self._client = client


class AsyncScreenshots(_Resource):
    async def create(self, url: str, *, idempotency_key: Optional[str] = None, **options: "Unpack[models.ScreenshotOptions]") -> AsyncJob:
        return AsyncJob(self._client, await self._client._call(ops.screenshot_create(url, options, idempotency_key)))

    async def get(self, job_id: str) -> AsyncJob:
        return AsyncJob(self._client, await self._client._call(ops.screenshot_get(job_id)))

    async def list(self, *, limit: Optional[int] = None, before: Optional[str] = None, **filters: Any) -> "models.JobList":
        return await self._client._call(ops.screenshot_list(limit, before, filters))

    def iter(self, *, limit: Optional[int] = None, **filters: Any) -> AsyncIterator[AsyncJob]:
        return self._client._pages(ops.screenshot_list(limit, None, filters), lambda j: AsyncJob(self._client, j))

    async def bulk(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        defaults: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> AsyncBatch:
        return AsyncBatch(self._client, await self._client._call(ops.screenshot_bulk(requests, defaults, idempotency_key)))

    async def upload(
        self,
        file: Union[bytes, PathLike],
        *,
        filename: Optional[str] = None,
        content_type: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        **options: Any,
    ) -> AsyncJob:
        if isinstance(file, (bytes, bytearray)):
            content, name = bytes(file), filename or "upload"
        else:
            content, name = Path(file).read_bytes(), filename or Path(file).name
        return AsyncJob(self._client, await self._client._call(ops.screenshot_upload(content, name, content_type, options, idempotency_key)))

    async def devices(self) -> "models.DeviceList":
        return await self._client._call(ops.devices())


class AsyncAudits(_Resource):
    async def create(self, url: str, *, report_type: Optional[str] = None, max_pages: Optional[int] = None, idempotency_key: Optional[str] = None, **fields: Any) -> AsyncAudit:
        return AsyncAudit(self._client, await self._client._call(ops.audit_create(url, {"reportType": report_type, "maxPages": max_pages, **fields}, idempotency_key)))

    async def get(self, audit_id: str) -> AsyncAudit:
        return AsyncAudit(self._client, await self._client._call(ops.audit_get(audit_id)))

    async def list(self, *, limit: Optional[int] = None, before: Optional[str] = None) -> "models.AuditList":
        return await self._client._call(ops.page("/v1/audits", limit, before))

    def iter(self, *, limit: Optional[int] = None) -> AsyncIterator[AsyncAudit]:
        return self._client._pages(ops.page("/v1/audits", limit, None), lambda a: AsyncAudit(self._client, a))


class AsyncMonitors(_Resource):
    async def create(self, url: str, schedule: Mapping[str, Any], *, idempotency_key: Optional[str] = None, **fields: Any) -> "models.Monitor":
        return await self._client._call(ops.monitor_create(url, schedule, fields, idempotency_key))

    async def get(self, monitor_id: str) -> "models.Monitor":
        return await self._client._call(ops.get(ops.monitor_path(monitor_id)))

    async def list(self, *, limit: Optional[int] = None, before: Optional[str] = None) -> "models.MonitorList":
        return await self._client._call(ops.page("/v1/monitors", limit, before))

    def iter(self, *, limit: Optional[int] = None) -> AsyncIterator["models.Monitor"]:
        return self._client._pages(ops.page("/v1/monitors", limit, None))

    async def update(self, monitor_id: str, **fields: Any) -> "models.Monitor":
        return await self._client._call(ops.monitor_update(monitor_id, fields))

    async def delete(self, monitor_id: str) -> None:
        await self._client._call(ops.delete(ops.monitor_path(monitor_id)))

    async def pause(self, monitor_id: str) -> "models.Monitor":
        return await self._client._call(ops.monitor_action(monitor_id, "pause"))

    async def resume(self, monitor_id: str) -> "models.Monitor":
        return await self._client._call(ops.monitor_action(monitor_id, "resume"))

    async def check(self, monitor_id: str) -> "models.MonitorCheck":
        return await self._client._call(ops.monitor_action(monitor_id, "check"))

    async def checks(self, monitor_id: str, *, limit: Optional[int] = None, before: Optional[str] = None) -> "models.MonitorCheckList":
        return await self._client._call(ops.page(ops.monitor_path(monitor_id, "/checks"), limit, before))

    def iter_checks(self, monitor_id: str, *, limit: Optional[int] = None) -> AsyncIterator["models.MonitorCheck"]:
        return self._client._pages(ops.page(ops.monitor_path(monitor_id, "/checks"), limit, None))

    async def get_check(self, monitor_id: str, check_id: str) -> "models.MonitorCheck":
        return await self._client._call(ops.get(ops.monitor_path(monitor_id, f"/checks/{ops.seg(check_id)}")))

    async def set_baseline(self, monitor_id: str, check_id: str) -> "models.Monitor":
        return await self._client._call(ops.monitor_baseline(monitor_id, check_id))


class AsyncProxies(_Resource):
    async def create(self, name: str, *, url: Optional[str] = None, urls: Optional[Sequence[str]] = None, idempotency_key: Optional[str] = None, **fields: Any) -> "models.Proxy":
        body = {"name": name, "url": url, "urls": list(urls) if urls is not None else None, **fields}
        return await self._client._call(ops.create("/v1/proxies", body, idempotency_key))

    async def get(self, proxy_id: str) -> "models.Proxy":
        return await self._client._call(ops.get(f"/v1/proxies/{ops.seg(proxy_id)}"))

    async def list(self) -> List["models.Proxy"]:
        return ops.items(await self._client._call(ops.get("/v1/proxies")))

    async def update(self, proxy_id: str, **fields: Any) -> "models.Proxy":
        return await self._client._call(ops.patch(f"/v1/proxies/{ops.seg(proxy_id)}", fields))

    async def delete(self, proxy_id: str) -> None:
        await self._client._call(ops.delete(f"/v1/proxies/{ops.seg(proxy_id)}"))

    async def test(self, proxy_id: str, *, url: Optional[str] = None) -> "models.ProxyTest":
        return await self._client._call(ops.post(f"/v1/proxies/{ops.seg(proxy_id)}/test", {"url": url} if url else None))


class AsyncWebhooks(_Resource):
    async def create(self, url: str, *, events: Optional[Sequence[str]] = None, description: Optional[str] = None, idempotency_key: Optional[str] = None) -> "models.EndpointWithSecret":
        body = {"url": url, "events": list(events) if events is not None else None, "description": description}
        return (await self._client._call(ops.create("/v1/webhooks", body, idempotency_key)))["endpoint"]

    async def list(self) -> List["models.Endpoint"]:
        return ops.items(await self._client._call(ops.get("/v1/webhooks")))

    async def delete(self, endpoint_id: str) -> None:
        await self._client._call(ops.delete(f"/v1/webhooks/{ops.seg(endpoint_id)}"))

    async def rotate(self, endpoint_id: str) -> "models.RotatedSecret":
        return await self._client._call(ops.post(f"/v1/webhooks/{ops.seg(endpoint_id)}/rotate"))

    async def test(self, endpoint_id: str) -> "models.TestPing":
        return await self._client._call(ops.post(f"/v1/webhooks/{ops.seg(endpoint_id)}/test"))

    async def deliveries(self, endpoint_id: str) -> List["models.Delivery"]:
        return ops.items(await self._client._call(ops.get(f"/v1/webhooks/{ops.seg(endpoint_id)}/deliveries")))


class AsyncRenderKeys(_Resource):
    async def create(self, name: str, *, idempotency_key: Optional[str] = None) -> "models.RenderKeyCreated":
        return await self._client._call(ops.create("/v1/render-keys", {"name": name}, idempotency_key))

    async def list(self) -> List["models.RenderKey"]:
        return ops.items(await self._client._call(ops.get("/v1/render-keys")))

    async def delete(self, key_id: str) -> None:
        await self._client._call(ops.delete(f"/v1/render-keys/{ops.seg(key_id)}"))


class AsyncStorageDestinations(_Resource):
    async def create(self, *, idempotency_key: Optional[str] = None, **fields: Any) -> "models.StorageDestination":
        return await self._client._call(ops.create("/v1/storage-destinations", fields, idempotency_key))

    async def list(self) -> List["models.StorageDestination"]:
        return ops.items(await self._client._call(ops.get("/v1/storage-destinations")))

    async def get(self, destination_id: str) -> "models.StorageDestination":
        return await self._client._call(ops.get(f"/v1/storage-destinations/{ops.seg(destination_id)}"))

    async def delete(self, destination_id: str) -> None:
        await self._client._call(ops.delete(f"/v1/storage-destinations/{ops.seg(destination_id)}"))


class AsyncAccount(_Resource):
    async def balance(self) -> "models.Balance":
        return await self._client._call(ops.get("/v1/account/balance"))
