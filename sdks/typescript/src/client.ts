/** The client and its resources: one method per call of the API a program makes. */
import { Transport, type ClientOptions, type RequestOptions } from './http.js';
import { Audit, Batch, Job } from './jobs.js';
import type * as models from './models.js';
import { Paginator, type CursorPage, type ListParams } from './paging.js';

type Opts = RequestOptions;

/** The capture options of `POST /v1/screenshot` but `url` (bulk defaults, a monitor's `capture`). */
export type CaptureOptions = Omit<models.ScreenshotRequest, 'url'>;

/** `POST /v1/screenshots/bulk`: 1–500 requests, each the body of `POST /v1/screenshot`, merged over `defaults`. */
export interface BulkRequest extends Omit<models.BulkIn, 'requests' | 'defaults'> {
  requests: models.ScreenshotRequest[];
  defaults?: CaptureOptions | null;
}

/** When a monitor runs: `{every: '15m'}` or `{cron: '0 9 * * 1-5', timezone: 'Europe/Berlin'}`. */
export type MonitorSchedule = { every: string } | { cron: string; timezone?: string };

/** `POST /v1/monitors`, with its schedule and capture options typed. */
export interface MonitorCreate extends Omit<models.MonitorIn, 'schedule' | 'capture'> {
  schedule: MonitorSchedule;
  capture?: Omit<CaptureOptions, 'cacheTtl' | 'cacheKey' | 'scroll' | 'pdf'> | null;
}

/** `PATCH /v1/monitors/{id}`: the fields given replace the monitor's own. */
export interface MonitorUpdate extends Omit<models.MonitorPatch, 'schedule' | 'capture'> {
  schedule?: MonitorSchedule | null;
  capture?: Omit<CaptureOptions, 'cacheTtl' | 'cacheKey' | 'scroll' | 'pdf'> | null;
}

function cursor<T>(page: { data: T[]; nextCursor?: string | null | undefined }): CursorPage<T> {
  return { data: page.data, nextCursor: page.nextCursor ?? null };
}

function listQuery(params: ListParams, before: string | undefined): Record<string, string | number | undefined> {
  return { limit: params.limit, before };
}

/** Capture jobs: `POST /v1/screenshot`, uploads, bulk, reading and listing. */
export class Screenshots {
  constructor(private readonly t: Transport) {}

  /**
   * Ask for a capture (`202`): the job, `pending`. Retries reuse one Idempotency-Key, so a
   * retried call never makes a second job.
   *
   * ```ts
   * const job = await client.screenshots.create({ url: 'https://example.com', fullPage: true });
   * const png = await (await job.wait()).download();
   * ```
   */
  async create(options: models.ScreenshotRequest, opts: Opts = {}): Promise<Job> {
    const data = await this.t.json<models.Job>({ method: 'POST', path: '/v1/screenshot', body: options, ...opts });
    return new Job(this.t, data);
  }

  /** A job by id. */
  async get(id: string, opts: Opts = {}): Promise<Job> {
    return new Job(this.t, await this.t.json<models.Job>({ method: 'GET', path: '/v1/screenshot/{id}', params: { id }, ...opts }));
  }

  /** The account's jobs, newest first, fetched page by page as the loop goes (`for await`). */
  list(params: ListParams = {}, opts: Opts = {}): Paginator<Job> {
    return new Paginator<Job>(async (before) => {
      const page = await this.t.json<models.JobList>({ method: 'GET', path: '/v1/screenshots', query: listQuery(params, before), ...opts });
      return cursor({ data: page.data.map((j) => new Job(this.t, j)), nextCursor: page.nextCursor });
    }, params.before);
  }

  /**
   * Up to 500 captures at once, all or none (docs/bulk.md): each request merged over
   * `defaults`. One Idempotency-Key covers the batch.
   */
  async bulk(body: BulkRequest, opts: Opts = {}): Promise<Batch> {
    const res = await this.t.json<models.BatchCreated>({ method: 'POST', path: '/v1/screenshots/bulk', body, ...opts });
    return new Batch(this.t, res.batchId, res.data.map((j) => new Job(this.t, j)));
  }

  /** The jobs of a bulk request, in the request's order. */
  async listBatch(batchId: string, opts: Opts = {}): Promise<Job[]> {
    const page = await this.t.json<models.JobList>({ method: 'GET', path: '/v1/screenshots', query: { batch: batchId }, ...opts });
    return page.data.map((j) => new Job(this.t, j));
  }

  /**
   * Upload a file (`POST /v1/screenshot/upload`): PNG, JPEG, WebP or PDF become a done job;
   * HTML is rendered with `options` (capture options sent as form fields).
   */
  async upload(
    file: Blob | ArrayBuffer | ArrayBufferView,
    options: { filename?: string; contentType?: string; [option: string]: unknown } = {},
    opts: Opts = {},
  ): Promise<Job> {
    const { filename = 'upload', contentType, ...fields } = options;
    const form = new FormData();
    const blob =
      file instanceof Blob
        ? file
        : new Blob([file as BlobPart], contentType ? { type: contentType } : {});
    form.append('file', blob, filename);
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined || v === null) continue;
      form.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    }
    const data = await this.t.json<models.Job>({ method: 'POST', path: '/v1/screenshot/upload', body: form, ...opts });
    return new Job(this.t, data);
  }

  /** A public share page for a job (`/s/…`) until revoked. */
  async share(id: string, opts: Opts = {}): Promise<models.ShareLink> {
    return this.t.json<models.ShareLink>({ method: 'POST', path: '/api/screenshots/{id}/share', params: { id }, ...opts });
  }

  /** Revoke a job's share page. */
  async unshare(id: string, opts: Opts = {}): Promise<void> {
    await this.t.json<void>({ method: 'DELETE', path: '/api/screenshots/{id}/share', params: { id }, ...opts });
  }

  /** The device presets of the `device` option. */
  async devices(opts: Opts = {}): Promise<models.DeviceList> {
    return this.t.json<models.DeviceList>({ method: 'GET', path: '/v1/devices', ...opts });
  }
}

/** Website audits (docs/audits.md). */
export class Audits {
  constructor(private readonly t: Transport) {}

  /** Start an audit (`202`): `{url, reportType?: 'single_page' | 'full_site', maxPages?}`. */
  async create(body: models.AuditRequest, opts: Opts = {}): Promise<Audit> {
    return new Audit(this.t, await this.t.json<models.Audit>({ method: 'POST', path: '/v1/audits', body, ...opts }));
  }

  /** An audit by id; once done it carries the whole `report`. */
  async get(id: string, opts: Opts = {}): Promise<Audit> {
    return new Audit(this.t, await this.t.json<models.Audit>({ method: 'GET', path: '/v1/audits/{id}', params: { id }, ...opts }));
  }

  /** The account's audits, newest first (without their reports). */
  list(params: ListParams = {}, opts: Opts = {}): Paginator<Audit> {
    return new Paginator<Audit>(async (before) => {
      const page = await this.t.json<models.AuditList>({ method: 'GET', path: '/v1/audits', query: listQuery(params, before), ...opts });
      return cursor({ data: page.data.map((a) => new Audit(this.t, a)), nextCursor: page.nextCursor });
    }, params.before);
  }
}

/** Monitors: pages captured on a schedule and compared with their baseline (docs/monitors.md). */
export class Monitors {
  constructor(private readonly t: Transport) {}

  async create(body: MonitorCreate, opts: Opts = {}): Promise<models.Monitor> {
    return this.t.json<models.Monitor>({ method: 'POST', path: '/v1/monitors', body, ...opts });
  }

  async get(id: string, opts: Opts = {}): Promise<models.Monitor> {
    return this.t.json<models.Monitor>({ method: 'GET', path: '/v1/monitors/{id}', params: { id }, ...opts });
  }

  /** The account's monitors, newest first. */
  list(params: ListParams = {}, opts: Opts = {}): Paginator<models.Monitor> {
    return new Paginator<models.Monitor>(async (before) =>
      cursor(await this.t.json<models.MonitorList>({ method: 'GET', path: '/v1/monitors', query: listQuery(params, before), ...opts })),
    params.before);
  }

  /** Change a monitor: the fields given replace its own. */
  async update(id: string, body: MonitorUpdate, opts: Opts = {}): Promise<models.Monitor> {
    return this.t.json<models.Monitor>({ method: 'PATCH', path: '/v1/monitors/{id}', params: { id }, body, ...opts });
  }

  async delete(id: string, opts: Opts = {}): Promise<void> {
    await this.t.json<void>({ method: 'DELETE', path: '/v1/monitors/{id}', params: { id }, ...opts });
  }

  async pause(id: string, opts: Opts = {}): Promise<models.Monitor> {
    return this.t.json<models.Monitor>({ method: 'POST', path: '/v1/monitors/{id}/pause', params: { id }, ...opts });
  }

  async resume(id: string, opts: Opts = {}): Promise<models.Monitor> {
    return this.t.json<models.Monitor>({ method: 'POST', path: '/v1/monitors/{id}/resume', params: { id }, ...opts });
  }

  /** Check now (`202`, the pending check). */
  async checkNow(id: string, opts: Opts = {}): Promise<models.MonitorCheck> {
    return this.t.json<models.MonitorCheck>({ method: 'POST', path: '/v1/monitors/{id}/check', params: { id }, ...opts });
  }

  /** A monitor's checks, newest first. */
  checks(id: string, params: ListParams = {}, opts: Opts = {}): Paginator<models.MonitorCheck> {
    return new Paginator<models.MonitorCheck>(async (before) =>
      cursor(await this.t.json<models.MonitorCheckList>({ method: 'GET', path: '/v1/monitors/{id}/checks', params: { id }, query: listQuery(params, before), ...opts })),
    params.before);
  }

  async getCheck(id: string, checkId: string, opts: Opts = {}): Promise<models.MonitorCheck> {
    return this.t.json<models.MonitorCheck>({ method: 'GET', path: '/v1/monitors/{id}/checks/{checkId}', params: { id, checkId }, ...opts });
  }

  /** Accept a done check as the baseline. */
  async setBaseline(id: string, checkId: string, opts: Opts = {}): Promise<models.Monitor> {
    const body: models.BaselineIn = { checkId };
    return this.t.json<models.Monitor>({ method: 'POST', path: '/v1/monitors/{id}/baseline', params: { id }, body, ...opts });
  }
}

/** Your own proxies (docs/proxies.md); `id` may be the proxy's id or name. */
export class Proxies {
  constructor(private readonly t: Transport) {}

  async create(body: models.ProxyIn, opts: Opts = {}): Promise<models.Proxy> {
    return this.t.json<models.Proxy>({ method: 'POST', path: '/v1/proxies', body, ...opts });
  }

  async list(opts: Opts = {}): Promise<models.Proxy[]> {
    return (await this.t.json<models.ProxyList>({ method: 'GET', path: '/v1/proxies', ...opts })).data;
  }

  async get(id: string, opts: Opts = {}): Promise<models.Proxy> {
    return this.t.json<models.Proxy>({ method: 'GET', path: '/v1/proxies/{id}', params: { id }, ...opts });
  }

  async update(id: string, body: models.ProxyPatch, opts: Opts = {}): Promise<models.Proxy> {
    return this.t.json<models.Proxy>({ method: 'PATCH', path: '/v1/proxies/{id}', params: { id }, body, ...opts });
  }

  async delete(id: string, opts: Opts = {}): Promise<void> {
    await this.t.json<void>({ method: 'DELETE', path: '/v1/proxies/{id}', params: { id }, ...opts });
  }

  /** Fetch a page through every member and report each one's latency and exit address. */
  async test(id: string, body: models.ProxyTestIn = {}, opts: Opts = {}): Promise<models.ProxyTest> {
    return this.t.json<models.ProxyTest>({ method: 'POST', path: '/v1/proxies/{id}/test', params: { id }, body, ...opts });
  }
}

/** Webhook endpoints and their deliveries (docs/webhooks.md); verify deliveries with `verifyWebhook`. */
export class Webhooks {
  constructor(private readonly t: Transport) {}

  /** Register an endpoint; the answer's `secret` (`whsec_…`) is shown this once. */
  async create(body: models.WebhookEndpointRequest, opts: Opts = {}): Promise<models.EndpointWithSecret> {
    return (await this.t.json<models.CreatedEndpoint>({ method: 'POST', path: '/v1/webhooks', body, ...opts })).endpoint;
  }

  async list(opts: Opts = {}): Promise<models.Endpoint[]> {
    return (await this.t.json<models.EndpointList>({ method: 'GET', path: '/v1/webhooks', ...opts })).data;
  }

  /** A new secret; the old one stops verifying at once. */
  async rotate(id: string, opts: Opts = {}): Promise<models.RotatedSecret> {
    return this.t.json<models.RotatedSecret>({ method: 'POST', path: '/v1/webhooks/{id}/rotate', params: { id }, ...opts });
  }

  /** Send a `test.ping` delivery. */
  async test(id: string, opts: Opts = {}): Promise<models.TestPing> {
    return this.t.json<models.TestPing>({ method: 'POST', path: '/v1/webhooks/{id}/test', params: { id }, ...opts });
  }

  /** The endpoint's last 50 deliveries, newest first. */
  async deliveries(id: string, opts: Opts = {}): Promise<models.Delivery[]> {
    return (await this.t.json<models.DeliveryList>({ method: 'GET', path: '/v1/webhooks/{id}/deliveries', params: { id }, ...opts })).data;
  }

  async delete(id: string, opts: Opts = {}): Promise<void> {
    await this.t.json<void>({ method: 'DELETE', path: '/v1/webhooks/{id}', params: { id }, ...opts });
  }
}

/** Render-link keys (docs/render-links.md); sign links with `renderLink`. */
export class RenderKeys {
  constructor(private readonly t: Transport) {}

  /** A new key; its `secret` (`rks_…`) is shown this once. */
  async create(body: models.RenderKeyIn, opts: Opts = {}): Promise<models.RenderKeyCreated> {
    return this.t.json<models.RenderKeyCreated>({ method: 'POST', path: '/v1/render-keys', body, ...opts });
  }

  async list(opts: Opts = {}): Promise<models.RenderKey[]> {
    return (await this.t.json<models.RenderKeyList>({ method: 'GET', path: '/v1/render-keys', ...opts })).data;
  }

  /** Revoke a key: every link it signed answers 403 from now on. */
  async delete(id: string, opts: Opts = {}): Promise<void> {
    await this.t.json<void>({ method: 'DELETE', path: '/v1/render-keys/{id}', params: { id }, ...opts });
  }
}

/** The account. */
export class Account {
  constructor(private readonly t: Transport) {}

  /** The live monthly balance: plan, used, limit, remaining, reset. */
  async balance(opts: Opts = {}): Promise<models.Balance> {
    return this.t.json<models.Balance>({ method: 'GET', path: '/v1/account/balance', ...opts });
  }
}

/**
 * The Capture API.
 *
 * ```ts
 * import { CaptureClient } from '@capture/client';
 * const client = new CaptureClient({ baseUrl: 'https://capture.example.com', apiKey: process.env.CAPTURE_API_KEY });
 * const job = await client.screenshots.create({ url: 'https://example.com' });
 * const png = await job.download(); // waits for the job first
 * ```
 */
export class CaptureClient {
  readonly screenshots: Screenshots;
  readonly audits: Audits;
  readonly monitors: Monitors;
  readonly proxies: Proxies;
  readonly webhooks: Webhooks;
  readonly renderKeys: RenderKeys;
  readonly account: Account;
  /** The transport (base URL, key, retries) the resources share. */
  readonly transport: Transport;

  constructor(options: ClientOptions = {}) {
    this.transport = new Transport(options);
    this.screenshots = new Screenshots(this.transport);
    this.audits = new Audits(this.transport);
    this.monitors = new Monitors(this.transport);
    this.proxies = new Proxies(this.transport);
    this.webhooks = new Webhooks(this.transport);
    this.renderKeys = new RenderKeys(this.transport);
    this.account = new Account(this.transport);
  }

  /** The service's base URL. */
  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  /**
   * Any other call of the API, with the same key, retries and errors:
   * `client.request('GET', '/v1/runs/{id}', { params: { id } })`.
   */
  async request<T = unknown>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    init: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown } & Opts = {},
  ): Promise<T> {
    const { params, query, body, ...opts } = init;
    return this.transport.json<T>({
      method,
      path,
      ...(params ? { params } : {}),
      ...(query ? { query: query as Record<string, string> } : {}),
      ...(body !== undefined ? { body } : {}),
      ...opts,
    });
  }
}
