"""The API's operations as requests, written once for both clients. Each route the SDK calls
is named in ``ROUTES`` (checked against the OpenAPI document's ``OPERATIONS`` by the tests,
so a renamed path fails there rather than in a user's program)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence
from urllib.parse import quote

from ._core import Request, api_fields, clean_params, write

ROUTES = frozenset(
    {
        "POST /v1/screenshot",
        "GET /v1/screenshot/{id}",
        "GET /v1/screenshot/{id}/stream",
        "GET /v1/screenshots",
        "POST /v1/screenshots/bulk",
        "POST /v1/screenshot/upload",
        "POST /api/screenshots/{id}/share",
        "DELETE /api/screenshots/{id}/share",
        "GET /v1/devices",
        "POST /v1/audits",
        "GET /v1/audits",
        "GET /v1/audits/{id}",
        "GET /v1/audits/{id}/stream",
        "POST /v1/monitors",
        "GET /v1/monitors",
        "GET /v1/monitors/{id}",
        "PATCH /v1/monitors/{id}",
        "DELETE /v1/monitors/{id}",
        "POST /v1/monitors/{id}/pause",
        "POST /v1/monitors/{id}/resume",
        "POST /v1/monitors/{id}/check",
        "GET /v1/monitors/{id}/checks",
        "GET /v1/monitors/{id}/checks/{checkId}",
        "POST /v1/monitors/{id}/baseline",
        "POST /v1/proxies",
        "GET /v1/proxies",
        "GET /v1/proxies/{id}",
        "PATCH /v1/proxies/{id}",
        "DELETE /v1/proxies/{id}",
        "POST /v1/proxies/{id}/test",
        "POST /v1/webhooks",
        "GET /v1/webhooks",
        "DELETE /v1/webhooks/{id}",
        "POST /v1/webhooks/{id}/rotate",
        "POST /v1/webhooks/{id}/test",
        "GET /v1/webhooks/{id}/deliveries",
        "POST /v1/render-keys",
        "GET /v1/render-keys",
        "DELETE /v1/render-keys/{id}",
        "POST /v1/storage-destinations",
        "GET /v1/storage-destinations",
        "GET /v1/storage-destinations/{id}",
        "DELETE /v1/storage-destinations/{id}",
        "GET /v1/account/balance",
    }
)


def seg(value: str) -> str:
    """An id as one path segment."""
    if not value:
        raise ValueError("an id is required")
    return quote(str(value), safe="")


# --- screenshots ----------------------------------------------------------------------------


def screenshot_create(url: str, options: Mapping[str, Any], idempotency_key: Optional[str]) -> Request:
    return write("POST", "/v1/screenshot", {"url": url, **api_fields(options)}, idempotency_key=idempotency_key)


def screenshot_get(job_id: str) -> Request:
    return Request("GET", f"/v1/screenshot/{seg(job_id)}")


def screenshot_stream_path(job_id: str) -> str:
    return f"/v1/screenshot/{seg(job_id)}/stream"


def screenshot_list(limit: Optional[int], before: Optional[str], filters: Mapping[str, Any]) -> Request:
    return Request("GET", "/v1/screenshots", params=clean_params({"limit": limit, "before": before, **filters}))


def screenshot_bulk(
    requests: Sequence[Mapping[str, Any]], defaults: Optional[Mapping[str, Any]], idempotency_key: Optional[str]
) -> Request:
    body: Dict[str, Any] = {"requests": [api_fields(r) for r in requests]}
    if defaults:
        body["defaults"] = api_fields(defaults)
    return write("POST", "/v1/screenshots/bulk", body, idempotency_key=idempotency_key)


def screenshot_upload(
    content: bytes, filename: str, content_type: Optional[str], options: Mapping[str, Any], idempotency_key: Optional[str]
) -> Request:
    import json

    fields: Dict[str, str] = {}
    for k, v in api_fields(options).items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (dict, list)):
            v = json.dumps(v)
        fields[k] = str(v)
    file = (filename, content, content_type) if content_type else (filename, content)
    req = write("POST", "/v1/screenshot/upload", idempotency_key=idempotency_key)
    req.files = {"file": file}
    req.data = fields
    return req


def screenshot_share(job_id: str) -> Request:
    return write("POST", f"/api/screenshots/{seg(job_id)}/share")


def screenshot_unshare(job_id: str) -> Request:
    return Request("DELETE", f"/api/screenshots/{seg(job_id)}/share")


def devices() -> Request:
    return Request("GET", "/v1/devices")


# --- audits ---------------------------------------------------------------------------------


def audit_create(url: str, fields: Mapping[str, Any], idempotency_key: Optional[str]) -> Request:
    return write("POST", "/v1/audits", {"url": url, **api_fields(fields)}, idempotency_key=idempotency_key)


def audit_get(audit_id: str) -> Request:
    return Request("GET", f"/v1/audits/{seg(audit_id)}")


def audit_stream_path(audit_id: str) -> str:
    return f"/v1/audits/{seg(audit_id)}/stream"


def page(path: str, limit: Optional[int], before: Optional[str], **filters: Any) -> Request:
    return Request("GET", path, params=clean_params({"limit": limit, "before": before, **filters}))


# --- monitors -------------------------------------------------------------------------------


def monitor_create(url: str, schedule: Mapping[str, Any], fields: Mapping[str, Any], idempotency_key: Optional[str]) -> Request:
    return write("POST", "/v1/monitors", {"url": url, "schedule": dict(schedule), **api_fields(fields)}, idempotency_key=idempotency_key)


def monitor_path(monitor_id: str, tail: str = "") -> str:
    return f"/v1/monitors/{seg(monitor_id)}{tail}"


def monitor_update(monitor_id: str, fields: Mapping[str, Any]) -> Request:
    return Request("PATCH", monitor_path(monitor_id), json=api_fields(fields))


def monitor_action(monitor_id: str, action: str) -> Request:
    return write("POST", monitor_path(monitor_id, f"/{action}"))


def monitor_baseline(monitor_id: str, check_id: str) -> Request:
    return write("POST", monitor_path(monitor_id, "/baseline"), {"checkId": check_id})


# --- proxies, webhooks, render keys, storage ------------------------------------------------


def create(path: str, body: Mapping[str, Any], idempotency_key: Optional[str] = None) -> Request:
    return write("POST", path, api_fields(body), idempotency_key=idempotency_key)


def get(path: str) -> Request:
    return Request("GET", path)


def delete(path: str) -> Request:
    return Request("DELETE", path)


def patch(path: str, body: Mapping[str, Any]) -> Request:
    return Request("PATCH", path, json=api_fields(body))


def post(path: str, body: Any = None) -> Request:
    return write("POST", path, body)


def items(page_body: Any) -> List[Any]:
    """The rows of a list answer (``{data: [...]}``)."""
    if isinstance(page_body, dict):
        return list(page_body.get("data") or [])
    return list(page_body or [])
