"""Signed render links (docs/render-links.md) and webhook verification (docs/webhooks.md).
Both are pure functions of their inputs: no client, no network."""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union
from urllib.parse import urlencode

from ._core import camel
from .errors import WebhookVerificationError

DEFAULT_TOLERANCE = 300

Expires = Union[int, float, _dt.datetime, _dt.timedelta, None]


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return str(v)


def _unix(expires: Expires) -> Optional[int]:
    if expires is None:
        return None
    if isinstance(expires, _dt.timedelta):
        return int(time.time() + expires.total_seconds())
    if isinstance(expires, _dt.datetime):
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=_dt.timezone.utc)
        return int(expires.timestamp())
    return int(expires)


def render_link(
    base_url: str,
    key_id: str,
    secret: str,
    url: str,
    *,
    expires: Expires = None,
    captures_per_hour: Optional[int] = None,
    **options: Any,
) -> str:
    """A signed ``GET /v1/render`` link that answers the capture itself (for an ``<img src>``).

    ``key_id`` and ``secret`` are a render-link key's (``rlk_…``/``rks_…`` from
    ``client.render_keys.create()``), never an API key. ``options`` are the capture options
    of ``POST /v1/screenshot`` (``width=1200``, ``fullPage=True`` or ``full_page=True``,
    ``format="webp"``…); objects and lists are sent as JSON. ``expires`` is unix seconds, a
    ``datetime``, or a ``timedelta`` from now; ``captures_per_hour`` bounds the captures the
    link may start in an hour (1–1000, default 60).

    The signature is the lowercase hex HMAC-SHA256, keyed with the secret, of the query string
    exactly as built here, appended last as ``&signature=``.
    """
    pairs: List[Tuple[str, str]] = [("url", url)]
    for k, v in options.items():
        if v is None:
            continue
        pairs.append((camel(k), _query_value(v)))
    if captures_per_hour is not None:
        pairs.append(("capturesPerHour", str(int(captures_per_hour))))
    pairs.append(("key", key_id))
    at = _unix(expires)
    if at is not None:
        pairs.append(("expires", str(at)))
    query = urlencode(pairs)
    signature = hmac.new(secret.encode(), query.encode(), hashlib.sha256).hexdigest()
    return f"{base_url.rstrip('/')}/v1/render?{query}&signature={signature}"


HeadersLike = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def _header(headers: HeadersLike, name: str) -> Optional[str]:
    items = headers.items() if hasattr(headers, "items") else headers  # type: ignore[union-attr]
    name = name.lower()
    for k, v in items:  # type: ignore[misc]
        k = k.decode() if isinstance(k, bytes) else k
        if k.lower() == name:
            return v.decode() if isinstance(v, bytes) else v
    return None


def verify_webhook(
    headers: HeadersLike,
    body: Union[bytes, str],
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE,
    *,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """Check a webhook delivery's ``Webhook-Signature`` and return its parsed event
    ``{id, type, createdAt, data}``; raise :class:`WebhookVerificationError` when it does not
    verify.

    ``headers`` is the request's headers (any mapping or list of pairs, names in any case),
    ``body`` the **raw** request body as received, ``secret`` the endpoint's whole
    ``whsec_…`` secret. The signature header is ``t=<unix seconds>,v1=<hex>`` (several
    ``v1`` may be given, e.g. across a rotation); each ``v1`` is compared in constant time
    with the HMAC-SHA256 of ``"<t>.<body>"``, and ``t`` must be within ``tolerance``
    seconds of the clock (``now``, default the current time).
    """
    header = _header(headers, "webhook-signature")
    if not header:
        raise WebhookVerificationError("no Webhook-Signature header")
    raw = body.encode() if isinstance(body, str) else bytes(body)
    t: Optional[str] = None
    signatures: List[str] = []
    for part in header.split(","):
        k, sep, v = part.strip().partition("=")
        if not sep:
            continue
        if k == "t":
            t = v
        elif k == "v1":
            signatures.append(v)
    if t is None or not signatures:
        raise WebhookVerificationError("the Webhook-Signature header has no t= or no v1=")
    try:
        ts = int(t)
    except ValueError:
        raise WebhookVerificationError("the Webhook-Signature timestamp is not a number") from None
    clock = time.time() if now is None else now
    if abs(clock - ts) > tolerance:
        raise WebhookVerificationError(f"the delivery's timestamp is {int(clock - ts)} s from this clock (tolerance {tolerance} s)")
    expected = hmac.new(secret.encode(), t.encode() + b"." + raw, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected.encode(), s.strip().lower().encode()) for s in signatures):
        raise WebhookVerificationError("the signature does not match the body and secret")
    try:
        event = json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return event
