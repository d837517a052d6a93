/**
 * Signed render links (docs/render-links.md) and webhook verification (docs/webhooks.md),
 * both HMAC-SHA256 through WebCrypto, so they run in browsers, Deno, Bun, workers and Node.
 */
import { hmacSha256Hex, timingSafeEqual, toBytes } from './crypto.js';
import { WebhookVerificationError } from './errors.js';
import { queryString, type QueryValue } from './http.js';
import type { ScreenshotRequest, WebhookEventType } from './models.js';

/** The capture options of a render link: those of `POST /v1/screenshot`, but `url`. */
export type RenderLinkCaptureOptions = Omit<Partial<ScreenshotRequest>, 'url'>;

export type RenderLinkOptions = RenderLinkCaptureOptions & {
  /** The service's address, e.g. `https://capture.example.com`. */
  baseUrl: string;
  /** The render-link key's id (`rlk_…`; never an API key). */
  keyId: string;
  /** The key's secret (`rks_…`), shown once when the key was made. */
  secret: string;
  /** The page to capture. */
  url: string;
  /** When the link stops working: a Date or unix seconds. */
  expires?: Date | number;
  /** Captures the link may start per hour (1–1000; default 60 on the service). */
  capturesPerHour?: number;
  /** Any other query parameter the service takes. */
  [option: string]: unknown;
};

/**
 * A signed `GET /v1/render` link answering the capture itself (for an `<img src>`): the
 * options as query parameters (objects and lists as JSON), then `key`, `expires` and last
 * `signature`, the lowercase hex HMAC-SHA256 (keyed with the secret) of the query string
 * exactly as written before `&signature=`.
 *
 * ```ts
 * const src = await renderLink({ baseUrl, keyId, secret, url: 'https://example.com', width: 1200, expires: new Date(Date.now() + 86400e3) });
 * ```
 */
export async function renderLink(options: RenderLinkOptions): Promise<string> {
  const { baseUrl, keyId, secret, url, expires, ...rest } = options;
  if (!baseUrl) throw new TypeError('renderLink: baseUrl is required');
  if (!keyId) throw new TypeError('renderLink: keyId is required');
  if (!secret) throw new TypeError('renderLink: secret is required');
  if (!url) throw new TypeError('renderLink: url is required');
  const q = new URLSearchParams();
  q.append('url', url);
  for (const [k, v] of Object.entries(rest)) {
    if (k === 'key' || k === 'signature' || k === 'expires') continue;
    const s = queryString(v as QueryValue);
    if (s !== undefined) q.append(k, s);
  }
  q.append('key', keyId);
  if (expires !== undefined) {
    const seconds = expires instanceof Date ? Math.floor(expires.getTime() / 1000) : Math.floor(expires);
    if (!Number.isFinite(seconds)) throw new TypeError('renderLink: expires must be a Date or unix seconds');
    q.append('expires', String(seconds));
  }
  const query = q.toString();
  const signature = await hmacSha256Hex(secret, query);
  return `${baseUrl.replace(/\/+$/, '')}/v1/render?${query}&signature=${signature}`;
}

/** A webhook delivery's body, once verified. */
export interface WebhookEvent<D = Record<string, unknown>> {
  /** Equals the `Webhook-Id` header: the same on every retry, deduplicate on it. */
  id: string;
  type: WebhookEventType | (string & {});
  createdAt: string;
  data: D;
}

/** Headers as any server hands them: a Headers, a plain object (Node's req.headers), entries. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined> | Iterable<[string, string]>;

export interface VerifyWebhookOptions {
  /** Reject a timestamp more than this many seconds from the clock. Default 300. */
  toleranceSec?: number;
  /** The clock, in unix seconds (for tests). Default now. */
  now?: number;
}

function header(headers: HeadersLike, name: string): string | undefined {
  const lower = name.toLowerCase();
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get(lower) ?? undefined;
  if (typeof (headers as Iterable<[string, string]>)[Symbol.iterator] === 'function') {
    for (const [k, v] of headers as Iterable<[string, string]>) if (k.toLowerCase() === lower) return v;
    return undefined;
  }
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === lower) return Array.isArray(v) ? v.join(',') : v;
  }
  return undefined;
}

/**
 * Verify a webhook delivery and answer its event; throws {@link WebhookVerificationError}
 * otherwise. `body` must be the raw request body as received (re-serialised JSON differs).
 *
 * The algorithm (docs/webhooks.md): take `t` and every `v1` from `Webhook-Signature`
 * (`t=<unix seconds>,v1=<hex>`), compute the lowercase hex HMAC-SHA256 keyed with the whole
 * secret string (`whsec_…` included) over `"<t>.<raw body>"`, compare it with each `v1` in
 * constant time, reject a `t` more than `toleranceSec` (300) from the clock; only then parse.
 *
 * ```ts
 * const event = await verifyWebhook(req.headers, rawBody, process.env.CAPTURE_WEBHOOK_SECRET!);
 * if (event.type === 'screenshot.completed') …
 * ```
 */
export async function verifyWebhook<D = Record<string, unknown>>(
  headers: HeadersLike,
  body: string | ArrayBuffer | ArrayBufferView,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent<D>> {
  if (!secret) throw new TypeError('verifyWebhook: secret is required');
  const sig = header(headers, 'webhook-signature');
  if (!sig) throw new WebhookVerificationError('missing_header', 'no Webhook-Signature header');
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of sig.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === 't') t = v;
    else if (k === 'v1') v1.push(v);
  }
  if (!t || !/^\d+$/.test(t) || !v1.length) {
    throw new WebhookVerificationError('malformed_header', 'Webhook-Signature is not t=<timestamp>,v1=<signature>');
  }
  const tolerance = options.toleranceSec ?? 300;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(t)) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_range', `the delivery was signed at ${t}, more than ${tolerance} s from now (${now})`);
  }
  const raw = toBytes(body);
  const prefix = toBytes(`${t}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix, 0);
  signed.set(raw, prefix.length);
  const expected = await hmacSha256Hex(secret, signed);
  let ok = false;
  for (const candidate of v1) if (timingSafeEqual(expected, candidate.toLowerCase())) ok = true;
  if (!ok) throw new WebhookVerificationError('signature_mismatch', 'the signature does not match the body and secret');
  let event: WebhookEvent<D>;
  try {
    event = JSON.parse(new TextDecoder().decode(raw)) as WebhookEvent<D>;
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not JSON');
  }
  return event;
}
