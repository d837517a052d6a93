/**
 * Following a job or an audit to its end: its server-sent event stream read from the fetch
 * body, falling back to polling its GET when the stream cannot be had (a proxy that buffers
 * or cuts it, a runtime without streaming bodies).
 */
import { CaptureError, JobFailedError, WaitTimeoutError } from './errors.js';
import { linkedSignal, sleep, type Transport } from './http.js';
import { readEvents, type ServerSentEvent } from './sse.js';

export interface WaitOptions {
  /** Give up (WaitTimeoutError) after this many ms. Default 300 000 (5 minutes). */
  timeoutMs?: number;
  /** Follow the event stream (default) or only poll. */
  stream?: boolean;
  /** First polling interval in ms (it grows to `maxPollIntervalMs`). Default 500. */
  pollIntervalMs?: number;
  /** Longest polling interval in ms. Default 5000. */
  maxPollIntervalMs?: number;
  /** Throw JobFailedError when it ends failed (default); false resolves with it. */
  throwOnFailure?: boolean;
  /** Every stream event as it arrives (`status`, `progress`, `done`, …), data parsed. */
  onEvent?: (event: { event: string; data: unknown }) => void;
  signal?: AbortSignal;
}

export interface FollowSpec<T extends { status: string }> {
  transport: Transport;
  /** What is followed, for messages: `job scr_…`. */
  label: string;
  streamPath: string;
  params: Record<string, string>;
  /** Read the resource now. */
  get: (signal?: AbortSignal) => Promise<T>;
  /** The final resource a stream event carries (undefined: read it with `get`). */
  fromEvent: (event: string, data: Record<string, unknown>) => T | undefined;
  /** The error code of a failure (`CAPTURE_FAILED`, `AUDIT_FAILED`). */
  failCode: string;
}

const FINAL = new Set(['done', 'failed']);

export function isFinal(status: string | undefined): boolean {
  return status !== undefined && FINAL.has(status);
}

/** Follow `current` until it is done or failed. */
export async function waitUntilFinal<T extends { status: string; error?: string | null | undefined }>(
  spec: FollowSpec<T>,
  current: T,
  opts: WaitOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const deadline = Date.now() + timeoutMs;
  const outer = opts.signal;
  let useStream = opts.stream !== false && typeof ReadableStream !== 'undefined';
  let streamsEnded = 0;
  let interval = opts.pollIntervalMs ?? 500;
  const maxInterval = opts.maxPollIntervalMs ?? 5000;
  const timeout = () =>
    new WaitTimeoutError({ status: 0, code: 'WAIT_TIMEOUT', message: `${spec.label} did not end within ${timeoutMs} ms (it goes on; wait again or poll)` });
  const finish = (r: T): T => {
    if (r.status === 'failed' && opts.throwOnFailure !== false) {
      throw new JobFailedError<T>({ status: 0, code: spec.failCode, message: `${spec.label} failed: ${r.error ?? 'no reason given'}`, resource: r });
    }
    return r;
  };
  let last = current;
  if (isFinal(last.status)) return finish(last);
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw timeout();
    if (useStream) {
      try {
        const r = await followStream(spec, remaining, outer, opts.onEvent);
        if (r && isFinal(r.status)) return finish(r);
        // The stream ended without an end (its own time limit, a node shutting down): look,
        // then follow it again — a few times, then poll.
        last = await spec.get(outer);
        if (isFinal(last.status)) return finish(last);
        if (++streamsEnded >= 3) useStream = false;
        continue;
      } catch (e) {
        if (outer?.aborted) throw e;
        if (Date.now() >= deadline) throw timeout();
        // The stream failed: poll from here on.
        useStream = false;
      }
    }
    last = await spec.get(outer);
    if (isFinal(last.status)) return finish(last);
    const left = deadline - Date.now();
    if (left <= 0) throw timeout();
    await sleep(Math.min(interval, left), outer);
    interval = Math.min(maxInterval, Math.round(interval * 1.5));
  }
}

/** Read the stream until its final event; undefined when it ended without one. */
async function followStream<T extends { status: string }>(
  spec: FollowSpec<T>,
  remaining: number,
  outer: AbortSignal | undefined,
  onEvent: WaitOptions['onEvent'],
): Promise<T | undefined> {
  const link = linkedSignal(outer, remaining);
  try {
    const res = await spec.transport.send({
      method: 'GET',
      path: spec.streamPath,
      params: spec.params,
      signal: link.signal,
      timeoutMs: Math.min(remaining, 30_000),
      maxRetries: 0,
      headers: { Accept: 'text/event-stream', 'Cache-Control': 'no-cache' },
    });
    const type = res.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream') || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw new CaptureError({ status: res.status, code: 'STREAM_UNAVAILABLE', message: `${spec.label}: the stream answered ${type || 'no content type'}` });
    }
    for await (const ev of readEvents(res.body)) {
      const data = parse(ev);
      onEvent?.({ event: ev.event, data });
      if (ev.event === 'done' || ev.event === 'failed') {
        const fromEvent = data && typeof data === 'object' ? spec.fromEvent(ev.event, data as Record<string, unknown>) : undefined;
        return fromEvent ?? (await spec.get(outer));
      }
      if (ev.event === 'timeout') return undefined;
    }
    return undefined;
  } finally {
    link.clear();
  }
}

function parse(ev: ServerSentEvent): unknown {
  try {
    return JSON.parse(ev.data);
  } catch {
    return ev.data;
  }
}
