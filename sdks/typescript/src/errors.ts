/**
 * The errors of @capture/client. Every answer of the API outside 2xx becomes a
 * {@link CaptureError} carrying the API's stable `code` (`NOT_FOUND`, `VALIDATION_ERROR`,
 * `PLAN_QUOTA_EXCEEDED`, …), its message, the `requestId` (the `X-Request-ID` header, to quote
 * when asking an operator) and `details`; the common statuses get a subclass so that
 * `catch (e) { if (e instanceof NotFoundError) … }` reads naturally.
 */

/** The JSON body of every API error. */
export interface ErrorPayload {
  error?: string;
  code?: string;
  requestId?: string;
  details?: unknown;
}

export interface CaptureErrorInit {
  status: number;
  code: string;
  message: string;
  requestId?: string | undefined;
  details?: unknown;
  /** Seconds, from `Retry-After`, when the answer carried one. */
  retryAfter?: number | undefined;
  headers?: Headers | undefined;
  cause?: unknown;
}

/** An error answered by the API (or met on the way to it). */
export class CaptureError extends Error {
  /** The HTTP status (0 when no answer arrived). */
  readonly status: number;
  /** The API's stable machine code, e.g. `NOT_FOUND`, `VALIDATION_ERROR`. */
  readonly code: string;
  /** The request's id (`X-Request-ID`), when the service answered. */
  readonly requestId: string | undefined;
  /** The error's details (`{field, reason}` for a validation error, usage for a quota refusal…). */
  readonly details: unknown;
  /** Seconds the service asked the client to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;
  /** The answer's headers, when there was an answer. */
  readonly headers: Headers | undefined;

  constructor(init: CaptureErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details;
    this.retryAfter = init.retryAfter;
    this.headers = init.headers;
  }
}

/** 400: the request was refused as it stands (`VALIDATION_ERROR` names the field in `details.field`). */
export class ValidationError extends CaptureError {
  /** The field the service refused (`details.field`), e.g. `width` or `requests[3].url`. */
  get field(): string | undefined {
    const d = this.details as { field?: unknown } | null | undefined;
    return typeof d?.field === 'string' ? d.field : undefined;
  }
  /** Why (`details.reason`). */
  get reason(): string | undefined {
    const d = this.details as { reason?: unknown } | null | undefined;
    return typeof d?.reason === 'string' ? d.reason : undefined;
  }
}

/** 401: no API key, or one that is unknown or revoked. */
export class AuthenticationError extends CaptureError {}

/** 403: the key may not do this (a plan limit, a revoked render key, …). */
export class PermissionDeniedError extends CaptureError {}

/** 404: no such resource — or another account's, which reads the same. */
export class NotFoundError extends CaptureError {}

/** 409 / 422 around an Idempotency-Key: in flight elsewhere, or reused with another body. */
export class ConflictError extends CaptureError {}

/** 429: the month's quota (`PLAN_QUOTA_EXCEEDED`), a queue bound (`QUEUE_FULL`), a rate limit. */
export class RateLimitError extends CaptureError {}

/** 5xx: the service failed; retried automatically before this is thrown. */
export class ServerError extends CaptureError {}

/** No answer: the connection failed or the request timed out (`code` `NETWORK_ERROR` or `REQUEST_TIMEOUT`). */
export class ConnectionError extends CaptureError {}

/** A job or audit did not end within `wait({timeoutMs})` (`code` `WAIT_TIMEOUT`); it goes on on the service. */
export class WaitTimeoutError extends CaptureError {}

/**
 * A job or audit ended `failed` (`code` `CAPTURE_FAILED` or `AUDIT_FAILED`); `message` is its
 * `error` (e.g. `blocked: cloudflare`), `resource` the job or audit as it ended.
 */
export class JobFailedError<T = unknown> extends CaptureError {
  readonly resource: T;
  constructor(init: CaptureErrorInit & { resource: T }) {
    super(init);
    this.resource = init.resource;
  }
}

/** A webhook delivery that does not verify (`reason` says why). */
export class WebhookVerificationError extends Error {
  readonly reason: 'missing_header' | 'malformed_header' | 'timestamp_out_of_range' | 'signature_mismatch' | 'invalid_body';
  constructor(reason: WebhookVerificationError['reason'], message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

/** Seconds from a `Retry-After` header (seconds, or an HTTP date); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value == null || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const date = Date.parse(v);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - now) / 1000);
}

/** The error for an answer `res` whose body read as `payload` (when JSON). */
export function errorFromResponse(res: Response, payload: ErrorPayload | undefined, bodyText: string): CaptureError {
  const status = res.status;
  const code = typeof payload?.code === 'string' && payload.code ? payload.code : fallbackCode(status);
  const message =
    typeof payload?.error === 'string' && payload.error
      ? payload.error
      : bodyText.trim().slice(0, 500) || `HTTP ${status}${res.statusText ? ` ${res.statusText}` : ''}`;
  const init: CaptureErrorInit = {
    status,
    code,
    message,
    requestId: (typeof payload?.requestId === 'string' && payload.requestId) || res.headers.get('x-request-id') || undefined,
    details: payload?.details,
    retryAfter: parseRetryAfter(res.headers.get('retry-after')),
    headers: res.headers,
  };
  if (status === 400) return new ValidationError(init);
  if (status === 401) return new AuthenticationError(init);
  if (status === 403) return new PermissionDeniedError(init);
  if (status === 404) return new NotFoundError(init);
  if (status === 409 || (status === 422 && code === 'IDEMPOTENCY_KEY_REUSED')) return new ConflictError(init);
  if (status === 429) return new RateLimitError(init);
  if (status >= 500) return new ServerError(init);
  return new CaptureError(init);
}

function fallbackCode(status: number): string {
  switch (status) {
    case 400:
      return 'VALIDATION_ERROR';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 429:
      return 'RATE_LIMITED';
    default:
      return status >= 500 ? 'INTERNAL_ERROR' : `HTTP_${status}`;
  }
}
