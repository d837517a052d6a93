/**
 * The transport under every call: the API key, JSON in and out, typed errors, and retries —
 * with one Idempotency-Key per logical write, reused by each retry, so a retried create never
 * makes a second job.
 */
import { randomUUID } from './crypto.js';
import {
  CaptureError,
  ConnectionError,
  errorFromResponse,
  type ErrorPayload,
} from './errors.js';
import { IDEMPOTENT_OPERATIONS } from './models.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** The API key (`sk_live_…`). Default: the `CAPTURE_API_KEY` environment variable, where there is one. */
  apiKey?: string;
  /** The service's address, e.g. `https://capture.example.com`. Default: `CAPTURE_BASE_URL`, else `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /** Retries of a call that failed transiently (429, 5xx, network). Default 3. */
  maxRetries?: number;
  /** Time limit of one attempt, in ms. Default 60 000. */
  timeoutMs?: number;
  /** A `Retry-After` longer than this (ms) is not waited for: the error is thrown (e.g. a month's quota). Default 60 000. */
  maxRetryDelayMs?: number;
  /** Another fetch (a proxy agent, a test double). Default: the global `fetch`. */
  fetch?: FetchLike;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** `X-Organization-ID` sent with every call. */
  organizationId?: string;
}

/** Options every call takes. */
export interface RequestOptions {
  /** The Idempotency-Key of a write (default: a random UUID per call, reused by its retries). */
  idempotencyKey?: string;
  /** Abort the call (and its retries). */
  signal?: AbortSignal;
  /** Time limit of one attempt, in ms (overrides the client's). */
  timeoutMs?: number;
  /** Retries of this call (overrides the client's). */
  maxRetries?: number;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

export type QueryValue = string | number | boolean | null | undefined | object;

export interface CallSpec extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
  /** The path template as the OpenAPI document writes it, e.g. `/v1/screenshot/{id}`. */
  path: string;
  params?: Record<string, string>;
  query?: Record<string, QueryValue> | undefined;
  /** A JSON body, or FormData as it is. */
  body?: unknown;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH']);
const SAFE = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const IDEMPOTENT = new Set(IDEMPOTENT_OPERATIONS);

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name] || undefined;
}

/** A query value as the API reads it: objects and lists as JSON, the rest as text. */
export function queryString(value: QueryValue): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** An AbortSignal that fires when `outer` does or after `ms`; `clear()` drops the timer. */
export function linkedSignal(
  outer: AbortSignal | undefined,
  ms: number | undefined,
): { signal: AbortSignal; timedOut: () => boolean; clearTimer: () => void; clear: () => void } {
  const ctl = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onAbort = () => ctl.abort(abortReason(outer!));
  if (outer) {
    if (outer.aborted) ctl.abort(abortReason(outer));
    else outer.addEventListener('abort', onAbort, { once: true });
  }
  if (ms !== undefined && ms > 0 && Number.isFinite(ms)) {
    timer = setTimeout(() => {
      timedOut = true;
      ctl.abort(new DOMException('The request timed out', 'TimeoutError'));
    }, ms);
  }
  return {
    signal: ctl.signal,
    timedOut: () => timedOut,
    clearTimer: () => {
      if (timer !== undefined) clearTimeout(timer);
    },
    clear: () => {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

export class Transport {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly maxRetries: number;
  readonly timeoutMs: number;
  readonly maxRetryDelayMs: number;
  readonly fetch: FetchLike;
  private readonly headers: Record<string, string>;
  /** What unlinks a sent request from its caller's signal, once its body has been read. */
  private readonly unlink = new WeakMap<Response, () => void>();

  constructor(opts: ClientOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? env('CAPTURE_BASE_URL') ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.apiKey = opts.apiKey ?? env('CAPTURE_API_KEY');
    this.maxRetries = opts.maxRetries ?? 3;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 60_000;
    const f = opts.fetch ?? (globalThis.fetch as FetchLike | undefined);
    if (!f) throw new Error('@capture/client needs fetch (Node 20+, Deno, Bun, a browser) or the `fetch` option');
    this.fetch = opts.fetch ? f : (input, init) => globalThis.fetch(input, init);
    this.headers = { ...(opts.headers ?? {}) };
    if (opts.organizationId) this.headers['X-Organization-ID'] = opts.organizationId;
  }

  /** The absolute URL of `path` (a template filled with `params`) with `query`. */
  url(path: string, params?: Record<string, string>, query?: Record<string, QueryValue>): string {
    // An absolute URL (a job's publicUrl) is taken as it is; a path is a template.
    const absolute = /^https?:\/\//i.test(path);
    const filled = absolute
      ? path
      : path.replace(/\{([^}]+)\}/g, (_, name: string) => {
          const v = params?.[name];
          if (v === undefined || v === '') throw new TypeError(`missing path parameter ${name} of ${path}`);
          return encodeURIComponent(v);
        });
    const u = absolute ? new URL(filled) : new URL(this.baseUrl + (filled.startsWith('/') ? filled : `/${filled}`));
    for (const [k, v] of Object.entries(query ?? {})) {
      const s = queryString(v);
      if (s !== undefined) u.searchParams.append(k, s);
    }
    return u.toString();
  }

  /** Whether `url` is on the service itself (only then does a request carry the API key). */
  isOwnOrigin(url: string): boolean {
    try {
      return new URL(url).origin === new URL(this.baseUrl).origin;
    } catch {
      return false;
    }
  }

  /** Headers for a request to `url`. */
  headersFor(url: string, extra?: Record<string, string>): Headers {
    const h = new Headers(this.headers);
    if (this.apiKey && this.isOwnOrigin(url)) h.set('Authorization', `Bearer ${this.apiKey}`);
    for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
    return h;
  }

  /** Call the API and answer its JSON (undefined for 204). */
  async json<T>(spec: CallSpec): Promise<T> {
    const res = await this.send(spec);
    try {
      return (await readBody(res)) as T;
    } finally {
      this.release(res);
    }
  }

  /** Forget the caller's signal of a response `send` answered, once its body is read. */
  release(res: Response): void {
    this.unlink.get(res)?.();
    this.unlink.delete(res);
  }

  /**
   * Send `spec`, retrying what is safe to retry, and answer the first 2xx response (its body
   * unread: the caller's signal can still abort it; `release(res)` once it is read); anything
   * else is thrown as a {@link CaptureError}.
   */
  async send(spec: CallSpec): Promise<Response> {
    const url = this.url(spec.path, spec.params, spec.query);
    const write = WRITES.has(spec.method);
    const idempotencyKey = write ? (spec.idempotencyKey ?? randomUUID()) : undefined;
    // A write is safe to repeat when the service dedupes it by its key.
    const replayable = SAFE.has(spec.method) || IDEMPOTENT.has(`${spec.method} ${spec.path}`);
    const maxRetries = Math.max(0, spec.maxRetries ?? this.maxRetries);
    const timeoutMs = spec.timeoutMs ?? this.timeoutMs;
    let body: BodyInit | undefined;
    const extra: Record<string, string> = { Accept: 'application/json', ...(spec.headers ?? {}) };
    if (spec.body !== undefined) {
      if (typeof FormData !== 'undefined' && spec.body instanceof FormData) body = spec.body;
      else {
        body = JSON.stringify(spec.body);
        extra['Content-Type'] = 'application/json';
      }
    }
    if (idempotencyKey) extra['Idempotency-Key'] = idempotencyKey;
    for (let attempt = 0; ; attempt++) {
      const { signal, timedOut, clearTimer, clear } = linkedSignal(spec.signal, timeoutMs);
      let res: Response;
      try {
        res = await this.fetch(url, { method: spec.method, headers: this.headersFor(url, extra), body: body ?? null, signal });
      } catch (cause) {
        clear();
        if (spec.signal?.aborted) throw cause;
        const err = new ConnectionError({
          status: 0,
          code: timedOut() ? 'REQUEST_TIMEOUT' : 'NETWORK_ERROR',
          message: timedOut()
            ? `${spec.method} ${url}: no answer within ${timeoutMs} ms`
            : `${spec.method} ${url}: ${(cause as Error)?.message ?? String(cause)}`,
          cause,
        });
        if (attempt < maxRetries && replayable) {
          await sleep(backoff(attempt), spec.signal);
          continue;
        }
        throw err;
      }
      if (res.ok) {
        // The timer must not cut a body that is still being read; the caller's signal still may.
        clearTimer();
        this.unlink.set(res, clear);
        return res;
      }
      // A DELETE whose first attempt went through before its answer was lost: gone is what
      // was asked.
      if (spec.method === 'DELETE' && attempt > 0 && res.status === 404) {
        clear();
        await res.body?.cancel().catch(() => {});
        return new Response(null, { status: 204 });
      }
      let text = '';
      try {
        text = await res.text();
      } catch {
        /* the body is only for the message */
      } finally {
        clear();
      }
      let payload: ErrorPayload | undefined;
      try {
        payload = text ? (JSON.parse(text) as ErrorPayload) : undefined;
      } catch {
        payload = undefined;
      }
      const err = errorFromResponse(res, payload, text);
      const delay = this.retryDelay(err, attempt, replayable);
      if (attempt < maxRetries && delay !== undefined) {
        await sleep(delay, spec.signal);
        continue;
      }
      throw err;
    }
  }

  /** How long to wait before retrying after `err`, or undefined when it is not retried. */
  private retryDelay(err: CaptureError, attempt: number, replayable: boolean): number | undefined {
    const s = err.status;
    // Refusals made before any work (rate limits, queue bounds, an unavailable service) are
    // safe to repeat; other failures only when the service dedupes the call.
    const refusal = s === 429 || s === 503;
    const transient = s === 408 || s === 500 || s === 502 || s === 504 || (s === 409 && err.code === 'IDEMPOTENCY_IN_FLIGHT');
    if (!(refusal || (transient && replayable))) return undefined;
    if (err.retryAfter !== undefined) {
      const ms = err.retryAfter * 1000;
      return ms > this.maxRetryDelayMs ? undefined : ms;
    }
    return backoff(attempt);
  }
}

/** Exponential backoff with jitter: about 0.5 s, 1 s, 2 s, … capped at 8 s. */
function backoff(attempt: number): number {
  const base = Math.min(8000, 500 * 2 ** attempt);
  return Math.round(base / 2 + Math.random() * (base / 2));
}

/** A response's body: JSON when it says so, else text; undefined when empty. */
export async function readBody(res: Response): Promise<unknown> {
  if (res.status === 204 || res.status === 205) return undefined;
  const text = await res.text();
  if (!text) return undefined;
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('json')) return JSON.parse(text);
  return text;
}
