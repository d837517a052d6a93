/**
 * @capture/client — the TypeScript client of the Capture page-capture service.
 * fetch-based, no runtime dependencies; runs in Node 20+, Deno, Bun, browsers and workers.
 */
export { CaptureClient, Screenshots, Audits, Monitors, Proxies, Webhooks, RenderKeys, Account } from './client.js';
export type { CaptureOptions, BulkRequest, MonitorSchedule, MonitorCreate, MonitorUpdate } from './client.js';
export { Job, Audit, Batch } from './jobs.js';
export type { WaitOptions } from './follow.js';
export type { ClientOptions, RequestOptions, FetchLike } from './http.js';
export { Paginator } from './paging.js';
export type { CursorPage, ListParams } from './paging.js';
export {
  CaptureError,
  ValidationError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  ServerError,
  ConnectionError,
  WaitTimeoutError,
  JobFailedError,
  WebhookVerificationError,
} from './errors.js';
export type { CaptureErrorInit, ErrorPayload } from './errors.js';
export { renderLink, verifyWebhook } from './signing.js';
export type { RenderLinkOptions, RenderLinkCaptureOptions, WebhookEvent, HeadersLike, VerifyWebhookOptions } from './signing.js';
export { readEvents } from './sse.js';
export type { ServerSentEvent } from './sse.js';
export { WEBHOOK_EVENT_TYPES, IDEMPOTENT_OPERATIONS } from './models.js';
// Every request and response type of the API, generated from its OpenAPI document. The
// record types whose names the classes above take (Job, Audit) are under `models`.
export type * from './models.js';
export type * as models from './models.js';
