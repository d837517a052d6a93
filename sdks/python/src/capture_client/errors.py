"""Typed errors: every error answer of the API becomes a :class:`CaptureError` (or one of its
subclasses) carrying the HTTP status, the API's stable ``code``, its message, the
``requestId`` that finds the service's log lines, and ``details`` (e.g. ``{field, reason}``
for ``VALIDATION_ERROR``)."""

from __future__ import annotations

from typing import Any, Mapping, Optional


class CaptureError(Exception):
    """An error answered by the Capture API, or one met while talking to it.

    ``status`` is the HTTP status (None when no answer came), ``code`` the API's stable
    machine code (``NOT_FOUND``, ``VALIDATION_ERROR``, ``PLAN_QUOTA_EXCEEDED``…),
    ``message`` its human-readable text, ``request_id`` the ``X-Request-ID`` of the answer,
    ``details`` the optional details object and ``retry_after`` the ``Retry-After`` seconds
    when the answer had one."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        request_id: Optional[str] = None,
        details: Optional[Mapping[str, Any]] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.details = details
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        parts = []
        if self.status is not None:
            parts.append(str(self.status))
        if self.code:
            parts.append(self.code)
        head = " ".join(parts)
        tail = f" (request {self.request_id})" if self.request_id else ""
        return f"{head}: {self.message}{tail}" if head else f"{self.message}{tail}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r}, request_id={self.request_id!r})"


class ValidationError(CaptureError):
    """400: a bad request (``VALIDATION_ERROR`` with ``details.field``, ``INVALID_JSON``,
    ``INVALID_IDEMPOTENCY_KEY``…)."""


class AuthenticationError(CaptureError):
    """401 ``UNAUTHORIZED``: a missing, unknown or revoked API key."""


class PermissionDeniedError(CaptureError):
    """403: ``FORBIDDEN``, ``PLAN_LIMIT_EXCEEDED``."""


class NotFoundError(CaptureError):
    """404 ``NOT_FOUND``: no such resource for this account."""


class ConflictError(CaptureError):
    """409 (``IDEMPOTENCY_IN_FLIGHT``) or 422 (``IDEMPOTENCY_KEY_REUSED``: the key was used
    with another body)."""


class RateLimitError(CaptureError):
    """429: ``PLAN_QUOTA_EXCEEDED`` (``details`` has used, limit, plan, resetAt), ``QUEUE_FULL``,
    ``RATE_LIMITED``, ``CONCURRENCY_LIMIT``; ``retry_after`` holds ``Retry-After``."""


class ServerError(CaptureError):
    """5xx: ``INTERNAL_ERROR``, ``SERVICE_UNAVAILABLE``, ``CAPTURE_FAILED``…"""


class APIConnectionError(CaptureError):
    """No answer: the connection failed or timed out (after the retries)."""


class JobFailedError(CaptureError):
    """A job (a capture or an audit) ended ``failed``; ``job`` is it, ``message`` its error."""

    def __init__(self, message: str, job: Any = None) -> None:
        super().__init__(message, code="CAPTURE_FAILED")
        self.job = job


class WaitTimeoutError(CaptureError, TimeoutError):
    """``wait(timeout=…)`` ran out before the job ended (the job goes on)."""

    def __init__(self, message: str, job: Any = None) -> None:
        super().__init__(message, code="TIMEOUT")
        self.job = job


class WebhookVerificationError(ValueError):
    """A webhook delivery whose signature does not verify (wrong secret, altered body,
    a timestamp outside the tolerance, a missing or malformed header)."""


_BY_STATUS = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: ConflictError,
    429: RateLimitError,
}


def error_class(status: int) -> type:
    """The :class:`CaptureError` subclass of an HTTP status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return CaptureError
