"""What the sync and async clients share: the configuration, the retry policy, error
answers as exceptions, option names, and the server-sent events parser. No I/O here."""

from __future__ import annotations

import email.utils
import json as _json
import random
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

import httpx

from . import errors
from ._version import __version__

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_RETRY_WAIT = 60.0
USER_AGENT = f"capture-client-python/{__version__}"

# Status codes worth another try: the answer says "later" (409 in flight, 429 rate or queue,
# 503 busy) or the service failed (5xx). A 429 whose Retry-After is longer than
# max_retry_wait (PLAN_QUOTA_EXCEEDED: the month's reset) is not retried.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# Codes that are final whatever the status says.
NO_RETRY_CODES = frozenset({"PLAN_QUOTA_EXCEEDED", "CAPTURE_FAILED", "IDEMPOTENCY_KEY_REUSED"})


def new_idempotency_key() -> str:
    """A fresh key for one logical write (``[A-Za-z0-9_-]{8,128}``)."""
    return uuid.uuid4().hex


_CAMEL = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """``full_page`` → ``fullPage``; names already in camelCase stay as they are."""
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


def api_fields(fields: Mapping[str, Any], drop_none: bool = True) -> Dict[str, Any]:
    """Keyword arguments as the API's field names (top level only: nested objects are sent
    as given), leaving out None unless ``drop_none`` is false."""
    return {camel(k): v for k, v in fields.items() if not (drop_none and v is None)}


@dataclass
class Request:
    """One HTTP call to make (and make again on a retry)."""

    method: str
    path: str
    params: Optional[Dict[str, Any]] = None
    json: Any = None
    files: Any = None
    data: Any = None
    headers: Dict[str, str] = field(default_factory=dict)
    # Writes carry an Idempotency-Key, the same on every attempt of this one call.
    idempotency_key: Optional[str] = None
    # Whether a retry may follow an attempt the service may have acted on (a lost answer, a
    # 5xx): reads, PUT/PATCH/DELETE, and writes whose operation honours the key. Other writes
    # are retried only when the service provably did nothing (no connection, 409, 429, 503).
    replayable: bool = True

    def http_headers(self) -> Dict[str, str]:
        h = dict(self.headers)
        if self.idempotency_key:
            h["Idempotency-Key"] = self.idempotency_key
        return h


def write(method: str, path: str, json: Any = None, *, idempotency_key: Optional[str] = None, **kw: Any) -> Request:
    """A write with its Idempotency-Key (given, or a fresh one for this call)."""
    key = idempotency_key or new_idempotency_key()
    return Request(method, path, json=json, idempotency_key=key, replayable=honours_key(method, path), **kw)


_KEYED: Optional[List[Tuple[str, "re.Pattern[str]"]]] = None


def honours_key(method: str, path: str) -> bool:
    """Whether the OpenAPI document says ``method path`` takes an Idempotency-Key (so a
    retry with the same key replays the first answer instead of acting twice)."""
    global _KEYED
    if _KEYED is None:
        from .models import IDEMPOTENT_OPERATIONS

        _KEYED = []
        for op in IDEMPOTENT_OPERATIONS:
            m, _, template = op.partition(" ")
            pattern = re.escape(template)
            pattern = re.sub(r"\\\{[^/]*?\\\}", "[^/]+", pattern)
            _KEYED.append((m, re.compile(pattern + r"\Z")))
    path = urlsplit(path).path
    return any(m == method.upper() and rx.match(path) for m, rx in _KEYED)


# Refusals after which the service did nothing: safe to retry any write.
NOTHING_DONE_STATUSES = frozenset({409, 425, 429, 503})


def clean_params(params: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    if not params:
        return None
    out: Dict[str, Any] = {}
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        out[camel(k)] = v
    return out or None


class Config:
    """A client's settings and the policy both clients apply."""

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required, e.g. http://127.0.0.1:8080")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._origin = _origin(self.base_url)

    def url(self, path: str) -> str:
        if path.startswith("http://") or path.startswith("https://"):
            return path
        return self.base_url + path

    def same_origin(self, url: str) -> bool:
        """Whether ``url`` is the service's own (the API key is sent only there: a job's
        ``publicUrl`` may be a bucket's presigned link)."""
        return _origin(url) == self._origin

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: 0.5 s, 1 s, 2 s… (at most 8 s)."""
        return min(8.0, 0.5 * (2**attempt)) * (0.75 + random.random() / 2)

    def retry_wait(self, req: Request, attempt: int, response: Optional[httpx.Response], exc: Optional[BaseException]) -> Optional[float]:
        """Seconds to wait before attempt ``attempt + 1``, or None when this one is final."""
        if attempt >= self.max_retries:
            return None
        if exc is not None:
            # A connection never made is safe to retry; a lost answer only when replayable.
            if req.replayable or isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
                return self.backoff(attempt)
            return None
        assert response is not None
        if response.status_code not in RETRY_STATUSES:
            return None
        if not req.replayable and response.status_code not in NOTHING_DONE_STATUSES:
            return None
        code = error_code(response)
        if code in NO_RETRY_CODES:
            return None
        after = retry_after(response)
        if after is None:
            return self.backoff(attempt)
        if after > self.max_retry_wait:
            return None
        return after


def _origin(url: str) -> Tuple[str, str, Optional[int]]:
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return (u.scheme, (u.hostname or "").lower(), port)


def retry_after(response: httpx.Response) -> Optional[float]:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), or None."""
    v = response.headers.get("retry-after")
    if not v:
        return None
    v = v.strip()
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_code(response: httpx.Response) -> Optional[str]:
    try:
        body = response.json()
    except Exception:
        return None
    return body.get("code") if isinstance(body, dict) else None


def error_from(response: httpx.Response) -> errors.CaptureError:
    """The exception of an error answer: its class by status, the body's fields."""
    body: Any = None
    try:
        body = response.json()
    except Exception:
        body = None
    if isinstance(body, dict) and ("code" in body or "error" in body):
        message = str(body.get("error") or body.get("message") or response.reason_phrase)
        code = body.get("code")
        request_id = body.get("requestId") or response.headers.get("x-request-id")
        details = body.get("details")
    else:
        text = ""
        try:
            text = response.text[:500]
        except Exception:
            pass
        message = text or response.reason_phrase or f"HTTP {response.status_code}"
        code, request_id, details = None, response.headers.get("x-request-id"), None
    cls = errors.error_class(response.status_code)
    return cls(
        message,
        status=response.status_code,
        code=code,
        request_id=request_id,
        details=details,
        retry_after=retry_after(response),
        body=body,
    )


def connection_error(exc: BaseException, req: Request) -> errors.APIConnectionError:
    return errors.APIConnectionError(f"{req.method} {req.path}: {type(exc).__name__}: {exc}")


def parse_json(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    ctype = response.headers.get("content-type", "")
    if "json" in ctype:
        return response.json()
    return response.content


# --- server-sent events -------------------------------------------------------------------


@dataclass
class SSEEvent:
    event: str
    data: str
    id: Optional[str] = None

    def json(self) -> Any:
        try:
            return _json.loads(self.data) if self.data else None
        except ValueError:
            return None


class SSEDecoder:
    """The text/event-stream format, line by line (comments such as ``: ping`` are skipped)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None

    def feed(self, line: str) -> Optional[SSEEvent]:
        line = line.rstrip("\r\n")
        if line == "":
            if not self._data and not self._event:
                return None
            ev = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data = "", []
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None

    def events(self, lines: Iterable[str]) -> Iterator[SSEEvent]:
        for line in lines:
            ev = self.feed(line)
            if ev is not None:
                yield ev


# Final states of the things a client waits for.
FINAL = frozenset({"done", "failed"})


class Deadline:
    """An overall time limit (None: none)."""

    def __init__(self, timeout: Optional[float]) -> None:
        self.end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> Optional[float]:
        return None if self.end is None else self.end - time.monotonic()

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def cap(self, seconds: float) -> float:
        left = self.left()
        return seconds if left is None else max(0.0, min(seconds, left))


def poll_interval(n: int) -> float:
    """Polling a job: 0.5 s, then 1 s, then every 2 s."""
    return (0.5, 1.0)[n] if n < 2 else 2.0


def stream_timeout(deadline: Deadline, connect: float) -> httpx.Timeout:
    # The stream sends `: ping` every 15 s: a read waiting longer than that is a dead stream.
    read = deadline.cap(45.0) or 0.001
    return httpx.Timeout(connect=connect, read=read, write=connect, pool=connect)
