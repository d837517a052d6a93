"""The Python client of Capture, the self-hostable page-capture service.

    from capture_client import Capture

    client = Capture("http://127.0.0.1:8080", "sk_live_…")
    job = client.screenshots.create(url="https://example.com", fullPage=True)
    job.wait(timeout=120).download("example.png")

``AsyncCapture`` is the same, awaited. ``render_link`` signs render links and
``verify_webhook`` checks webhook deliveries; neither needs a client. The API's request and
response types are in :mod:`capture_client.models`, generated from its OpenAPI document.
"""

from . import models
from ._version import __version__
from .async_client import AsyncAudit, AsyncBatch, AsyncCapture, AsyncJob
from .client import Audit, Batch, Capture, Job
from .errors import (
    APIConnectionError,
    AuthenticationError,
    CaptureError,
    ConflictError,
    JobFailedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ValidationError,
    WaitTimeoutError,
    WebhookVerificationError,
)
from .signing import render_link, verify_webhook

__all__ = [
    "__version__",
    "models",
    "Capture",
    "AsyncCapture",
    "Job",
    "AsyncJob",
    "Batch",
    "AsyncBatch",
    "Audit",
    "AsyncAudit",
    "render_link",
    "verify_webhook",
    "CaptureError",
    "ValidationError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "ServerError",
    "APIConnectionError",
    "JobFailedError",
    "WaitTimeoutError",
    "WebhookVerificationError",
]
