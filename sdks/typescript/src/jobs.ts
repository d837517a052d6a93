/** A capture job and an audit as objects that can wait for their end; a bulk batch. */
import { CaptureError, JobFailedError, WaitTimeoutError } from './errors.js';
import { waitUntilFinal, type WaitOptions } from './follow.js';
import type { RequestOptions, Transport } from './http.js';
import type * as models from './models.js';

// The classes carry the fields of their records (declaration merging): `job.status`,
// `job.publicUrl`, `audit.scores`… as the service last answered them.
export interface Job extends models.Job {}

/**
 * A capture job (`scr_…`): the job's fields as last read, plus `wait()`, `refresh()` and
 * `download()`.
 */
export class Job {
  readonly #transport: Transport;

  constructor(transport: Transport, data: models.Job) {
    this.#transport = transport;
    Object.assign(this, data);
  }

  /** Read the job again. */
  async refresh(options: RequestOptions = {}): Promise<this> {
    const data = await this.#transport.json<models.Job>({ method: 'GET', path: '/v1/screenshot/{id}', params: { id: this.id }, ...options });
    Object.assign(this, data);
    return this;
  }

  /**
   * Wait until the job is done (or failed: JobFailedError), following its event stream and
   * polling when the stream fails; the job is updated in place and answered.
   */
  async wait(options: WaitOptions = {}): Promise<this> {
    const t = this.#transport;
    const id = this.id;
    const final = await waitUntilFinal<models.Job>(
      {
        transport: t,
        label: `job ${id}`,
        streamPath: '/v1/screenshot/{id}/stream',
        params: { id },
        get: (signal) => t.json<models.Job>({ method: 'GET', path: '/v1/screenshot/{id}', params: { id }, ...(signal ? { signal } : {}) }),
        fromEvent: (event, data) => (event === 'done' && data.job && typeof data.job === 'object' ? (data.job as models.Job) : undefined),
        failCode: 'CAPTURE_FAILED',
      },
      this.snapshot(),
      { ...options, throwOnFailure: false },
    );
    Object.assign(this, final);
    if (this.status === 'failed' && options.throwOnFailure !== false) {
      throw new JobFailedError<Job>({ status: 0, code: 'CAPTURE_FAILED', message: `job ${id} failed: ${this.error ?? 'no reason given'}`, resource: this });
    }
    return this;
  }

  /**
   * The job's file (PNG, JPEG, WebP, PDF, video, text) as bytes, waiting for the job first
   * if it is not done. `.buffer` of the answer is its ArrayBuffer.
   */
  async download(options: WaitOptions & RequestOptions = {}): Promise<Uint8Array> {
    if (this.status !== 'done') await this.wait(options);
    if (!this.publicUrl) throw new CaptureError({ status: 0, code: 'NO_FILE', message: `job ${this.id} has no file` });
    const { signal, timeoutMs, maxRetries, headers } = options;
    const res = await this.#transport.send({
      method: 'GET',
      path: this.publicUrl,
      headers: { Accept: '*/*', ...(headers ?? {}) },
      ...(signal ? { signal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
    });
    try {
      return new Uint8Array(await res.arrayBuffer());
    } finally {
      this.#transport.release(res);
    }
  }

  /** The job's fields as a plain object. */
  snapshot(): models.Job {
    return { ...this } as models.Job;
  }
}

export interface Audit extends models.Audit {}

/** A website audit (`aud_…`): its fields as last read, plus `wait()` and `refresh()`. */
export class Audit {
  readonly #transport: Transport;

  constructor(transport: Transport, data: models.Audit) {
    this.#transport = transport;
    Object.assign(this, data);
  }

  async refresh(options: RequestOptions = {}): Promise<this> {
    const data = await this.#transport.json<models.Audit>({ method: 'GET', path: '/v1/audits/{id}', params: { id: this.id }, ...options });
    Object.assign(this, data);
    return this;
  }

  /**
   * Wait until the audit is done (with its `report`) or failed (AuditFailed as JobFailedError),
   * following its stream (`onEvent` sees `progress {pagesDone, pagesTotal}`), polling when it fails.
   */
  async wait(options: WaitOptions = {}): Promise<this> {
    const t = this.#transport;
    const id = this.id;
    const get = (signal?: AbortSignal) => t.json<models.Audit>({ method: 'GET', path: '/v1/audits/{id}', params: { id }, ...(signal ? { signal } : {}) });
    const final = await waitUntilFinal<models.Audit>(
      {
        transport: t,
        label: `audit ${id}`,
        streamPath: '/v1/audits/{id}/stream',
        params: { id },
        get,
        // The done event's audit lacks the report: read the whole audit.
        fromEvent: () => undefined,
        failCode: 'AUDIT_FAILED',
      },
      { ...this } as models.Audit,
      { ...options, throwOnFailure: false },
    );
    Object.assign(this, final);
    if (this.status === 'failed' && options.throwOnFailure !== false) {
      throw new JobFailedError<Audit>({ status: 0, code: 'AUDIT_FAILED', message: `audit ${id} failed: ${this.error ?? 'no reason given'}`, resource: this });
    }
    return this;
  }
}

/** The answer of a bulk request: the batch's id and its jobs, in the request's order. */
export class Batch {
  readonly #transport: Transport;
  readonly batchId: string;
  readonly jobs: Job[];

  constructor(transport: Transport, batchId: string, jobs: Job[]) {
    this.#transport = transport;
    this.batchId = batchId;
    this.jobs = jobs;
  }

  /**
   * Wait for every job of the batch (failed ones too: no JobFailedError here unless
   * `throwOnFailure: true`): reads the batch in one call, follows a job still running, and
   * reads the batch again, until every job has ended.
   */
  async waitAll(options: WaitOptions = {}): Promise<Job[]> {
    const timeoutMs = options.timeoutMs ?? 300_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.refresh(options.signal ? { signal: options.signal } : {});
      const running = this.jobs.find((j) => j.status !== 'done' && j.status !== 'failed');
      if (!running) break;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new WaitTimeoutError({ status: 0, code: 'WAIT_TIMEOUT', message: `batch ${this.batchId} did not end within ${timeoutMs} ms` });
      }
      await running.wait({ ...options, throwOnFailure: false, timeoutMs: left });
    }
    if (options.throwOnFailure === true) {
      const failed = this.jobs.find((j) => j.status === 'failed');
      if (failed) {
        throw new JobFailedError<Job>({ status: 0, code: 'CAPTURE_FAILED', message: `job ${failed.id} of batch ${this.batchId} failed: ${failed.error ?? 'no reason given'}`, resource: failed });
      }
    }
    return this.jobs;
  }

  /** The batch's jobs as the service lists them now (`GET /v1/screenshots?batch=`). */
  async refresh(options: RequestOptions = {}): Promise<Job[]> {
    const page = await this.#transport.json<models.JobList>({ method: 'GET', path: '/v1/screenshots', query: { batch: this.batchId }, ...options });
    const byId = new Map(page.data.map((j) => [j.id, j]));
    for (const job of this.jobs) {
      const fresh = byId.get(job.id);
      if (fresh) Object.assign(job, fresh);
    }
    return this.jobs;
  }
}
