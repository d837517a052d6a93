// @capture/client against a real Capture server (the `capture` binary with the api, worker
// and scheduler roles, Debian's Chromium) capturing a page served here on 127.0.0.1.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import {
  Batch,
  CaptureClient,
  Job,
  NotFoundError,
  ValidationError,
  WebhookVerificationError,
  renderLink,
  verifyWebhook,
} from '../dist/index.js';
import { pngFirstPixel, pngSize, startFixtureSite, startReceiver, startService } from './support.mjs';

let svc;
let site;
let receiver;
/** Tenant A's client, tenant B's. */
let a;
let b;

before(async () => {
  [svc, site, receiver] = await Promise.all([startService(), startFixtureSite(), startReceiver()]);
  a = new CaptureClient({ baseUrl: svc.base, apiKey: svc.keyA });
  b = new CaptureClient({ baseUrl: svc.base, apiKey: svc.keyB });
});

after(async () => {
  await Promise.all([svc?.stop(), site?.close(), receiver?.close()]);
});

const firstJob = { id: undefined };

test('a capture: create, wait on its stream, download a PNG of the asked size', async () => {
  const job = await a.screenshots.create({ url: site.url, width: 800, height: 600 });
  assert.ok(job instanceof Job);
  assert.match(job.id, /^scr_/);
  assert.ok(['pending', 'processing'].includes(job.status), job.status);
  const events = [];
  const done = await job.wait({ timeoutMs: 120_000, onEvent: (e) => events.push(e.event) });
  assert.equal(done, job, 'wait answers the same object, updated');
  assert.equal(job.status, 'done');
  assert.ok(events.includes('done'), `followed the stream: ${events.join(',')}`);
  assert.ok(job.publicUrl);
  assert.equal(job.pageTitle, 'SDK fixture page');
  const png = await job.download();
  assert.ok(png instanceof Uint8Array);
  assert.deepEqual(pngSize(png), { width: 800, height: 600 });
  // The page's block is #e53935: the image shows it, not an empty page.
  const [r, g, bl] = pngFirstPixel(png);
  assert.ok(Math.abs(r - 0xe5) <= 4 && Math.abs(g - 0x39) <= 4 && Math.abs(bl - 0x35) <= 4, `top-left pixel ${[r, g, bl]}`);
  firstJob.id = job.id;
});

test('wait() falls back to polling when the stream fails', async () => {
  const calls = [];
  const noStream = new CaptureClient({
    baseUrl: svc.base,
    apiKey: svc.keyA,
    fetch: async (input, init) => {
      const url = String(input);
      calls.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
      if (url.includes('/stream')) throw new TypeError('fetch failed: the stream is blocked by a proxy');
      return fetch(input, init);
    },
  });
  const job = await noStream.screenshots.create({ url: site.url, width: 320, height: 240 });
  await job.wait({ timeoutMs: 120_000, pollIntervalMs: 200 });
  assert.equal(job.status, 'done');
  assert.ok(calls.some((c) => c.endsWith('/stream')), 'tried the stream');
  assert.ok(calls.filter((c) => c === `GET /v1/screenshot/${job.id}`).length >= 1, 'then polled');
  assert.deepEqual(pngSize(await job.download()), { width: 320, height: 240 });
});

test('an unknown job is NotFoundError with code NOT_FOUND and the request id', async () => {
  await assert.rejects(a.screenshots.get('scr_doesnotexist0000000000'), (e) => {
    assert.ok(e instanceof NotFoundError, e.constructor.name);
    assert.equal(e.status, 404);
    assert.equal(e.code, 'NOT_FOUND');
    assert.ok(e.requestId, 'requestId');
    assert.equal(e.requestId, e.headers.get('x-request-id'));
    return true;
  });
});

test('a bad body is ValidationError with code VALIDATION_ERROR naming the field', async () => {
  await assert.rejects(a.screenshots.create({ url: site.url, width: -5 }), (e) => {
    assert.ok(e instanceof ValidationError, e.constructor.name);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'VALIDATION_ERROR');
    assert.equal(e.field, 'width');
    assert.match(e.message, /width/);
    return true;
  });
  await assert.rejects(a.screenshots.create({ url: 'ftp://example.com/' }), (e) => e instanceof ValidationError && e.code === 'VALIDATION_ERROR');
});

test('an idempotent retry returns the same job', async () => {
  const marker = `${site.url}?idem=${Date.now()}`;
  // The same key twice: the service replays the first answer.
  const key = `sdk-ts-${Date.now()}`;
  const one = await a.screenshots.create({ url: marker }, { idempotencyKey: key });
  const two = await a.screenshots.create({ url: marker }, { idempotencyKey: key });
  assert.equal(two.id, one.id);
  // A connection lost after the service made the job: the client retries with its key.
  const posts = [];
  let dropped = false;
  const flaky = new CaptureClient({
    baseUrl: svc.base,
    apiKey: svc.keyA,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method === 'POST') {
        posts.push(new Headers(init.headers).get('idempotency-key'));
        if (!dropped) {
          dropped = true;
          await res.arrayBuffer();
          throw new TypeError('fetch failed: socket hang up');
        }
      }
      return res;
    },
  });
  const url2 = `${site.url}?idem2=${Date.now()}`;
  const job = await flaky.screenshots.create({ url: url2 });
  assert.equal(posts.length, 2, 'retried once');
  assert.equal(posts[0], posts[1], 'with the same Idempotency-Key');
  const made = (await a.screenshots.list({ limit: 100 }).toArray()).filter((j) => j.url === url2);
  assert.equal(made.length, 1, 'one job for the two attempts');
  assert.equal(made[0].id, job.id);
  await job.wait({ timeoutMs: 120_000 });
  await one.wait({ timeoutMs: 120_000 });
});

test('two tenants: the second key cannot see the first one’s job', async () => {
  assert.ok(firstJob.id);
  await assert.rejects(b.screenshots.get(firstJob.id), (e) => e instanceof NotFoundError && e.code === 'NOT_FOUND');
  const theirs = await b.screenshots.list({ limit: 100 }).toArray();
  assert.ok(!theirs.some((j) => j.id === firstJob.id));
  // And the first still can.
  assert.equal((await a.screenshots.get(firstJob.id)).status, 'done');
});

test('paging iterates across more than one page', async () => {
  const all = await a.screenshots.list({ limit: 100 }).toArray();
  assert.ok(all.length >= 4, `jobs so far: ${all.length}`);
  let pages = 0;
  const ids = [];
  for await (const page of a.screenshots.list({ limit: 2 }).pages()) {
    pages++;
    assert.ok(page.data.length <= 2);
    ids.push(...page.data.map((j) => j.id));
  }
  assert.ok(pages >= 2, `pages: ${pages}`);
  const iterated = [];
  for await (const job of a.screenshots.list({ limit: 2 })) {
    assert.ok(job instanceof Job);
    iterated.push(job.id);
  }
  assert.deepEqual(iterated, ids);
  assert.deepEqual(iterated, all.map((j) => j.id), 'the same jobs, newest first, each once');
  assert.equal(new Set(iterated).size, iterated.length);
  assert.deepEqual((await a.screenshots.list({ limit: 2 }).toArray(3)).length, 3);
});

test('a render link signed by renderLink answers an image', async () => {
  const key = await a.renderKeys.create({ name: 'sdk-ts' });
  assert.match(key.id, /^rlk_/);
  assert.match(key.secret, /^rks_/);
  const link = await renderLink({
    baseUrl: svc.base,
    keyId: key.id,
    secret: key.secret,
    url: site.url,
    width: 640,
    height: 480,
    expires: new Date(Date.now() + 3600_000),
  });
  let res;
  for (let i = 0; i < 10; i++) {
    res = await fetch(link);
    if (res.status !== 202) break;
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 2000));
  }
  assert.equal(res.status, 200, await res.clone().text().catch(() => ''));
  assert.equal(res.headers.get('content-type'), 'image/png');
  assert.deepEqual(pngSize(new Uint8Array(await res.arrayBuffer())), { width: 640, height: 480 });
  // A changed byte breaks it.
  const tampered = link.replace('width=640', 'width=641');
  assert.equal((await fetch(tampered)).status, 401);
  assert.ok((await a.renderKeys.list()).some((k) => k.id === key.id));
  await a.renderKeys.delete(key.id);
  assert.equal((await fetch(link)).status, 403);
});

test('verifyWebhook accepts a real delivery and rejects an altered body and an old timestamp', async () => {
  const endpoint = await a.webhooks.create({ url: receiver.url, events: ['test.ping', 'screenshot.completed'], description: 'sdk-ts' });
  assert.match(endpoint.id, /^whe_/);
  assert.match(endpoint.secret, /^whsec_/);
  const ping = await a.webhooks.test(endpoint.id);
  assert.equal(ping.eventType, 'test.ping');
  const got = await receiver.next(60_000);
  const event = await verifyWebhook(got.headers, got.body, endpoint.secret);
  assert.equal(event.type, 'test.ping');
  assert.equal(event.id, got.headers['webhook-id']);
  assert.equal(event.data.endpointId, endpoint.id);
  // An altered body.
  const altered = Buffer.from(got.body.toString().replace('test.ping', 'test.pong'));
  await assert.rejects(verifyWebhook(got.headers, altered, endpoint.secret), (e) => e instanceof WebhookVerificationError && e.reason === 'signature_mismatch');
  // An old timestamp: the same delivery checked 10 minutes later.
  const t = Number(/t=(\d+)/.exec(got.headers['webhook-signature'])[1]);
  await assert.rejects(verifyWebhook(got.headers, got.body, endpoint.secret, { now: t + 600 }), (e) => e instanceof WebhookVerificationError && e.reason === 'timestamp_out_of_range');
  await assert.rejects(verifyWebhook(got.headers, got.body, endpoint.secret, { toleranceSec: 30, now: t + 31 }), WebhookVerificationError);
  // The wrong secret.
  await assert.rejects(verifyWebhook(got.headers, got.body, 'whsec_wrong'), WebhookVerificationError);

  // A capture's own event verifies too.
  const job = await a.screenshots.create({ url: site.url, width: 400, height: 300 });
  await job.wait({ timeoutMs: 120_000 });
  const delivery = await receiver.next(60_000);
  const completed = await verifyWebhook(new Headers(Object.entries(delivery.headers)), new Uint8Array(delivery.body), endpoint.secret);
  assert.equal(completed.type, 'screenshot.completed');
  assert.equal(completed.data.screenshotId, job.id);

  assert.ok((await a.webhooks.list()).some((e) => e.id === endpoint.id));
  const deliveries = await a.webhooks.deliveries(endpoint.id);
  assert.ok(deliveries.some((d) => d.eventType === 'test.ping'));
  const rotated = await a.webhooks.rotate(endpoint.id);
  assert.notEqual(rotated.secret, endpoint.secret);
  await a.webhooks.delete(endpoint.id);
  assert.ok(!(await a.webhooks.list()).some((e) => e.id === endpoint.id));
});

test('bulk: the jobs in order, waited for, listed by batch', async () => {
  const batch = await a.screenshots.bulk({
    defaults: { width: 300, height: 200 },
    requests: [{ url: `${site.url}?bulk=1` }, { url: `${site.url}?bulk=2`, width: 500 }],
  });
  assert.ok(batch instanceof Batch);
  assert.match(batch.batchId, /^bat_/);
  assert.equal(batch.jobs.length, 2);
  await batch.waitAll({ timeoutMs: 180_000 });
  assert.deepEqual(batch.jobs.map((j) => j.status), ['done', 'done']);
  const listed = await a.screenshots.listBatch(batch.batchId);
  assert.deepEqual(listed.map((j) => j.id), batch.jobs.map((j) => j.id));
  assert.deepEqual(pngSize(await batch.jobs[1].download()), { width: 500, height: 200 });
  // A bad request refuses the whole batch, naming it.
  await assert.rejects(
    a.screenshots.bulk({ requests: [{ url: site.url }, { url: site.url, width: -1 }] }),
    (e) => e instanceof ValidationError && e.field === 'requests[1].width',
  );
});

test('an upload of a PNG is a done job', async () => {
  const src = await a.screenshots.get(firstJob.id);
  const bytes = await src.download();
  const job = await a.screenshots.upload(bytes, { filename: 'shot.png', contentType: 'image/png' });
  assert.equal(job.status, 'done');
  assert.deepEqual(pngSize(await job.download()), { width: 800, height: 600 });
});

test('an audit: create, wait, the report', async () => {
  const audit = await a.audits.create({ url: site.url, reportType: 'single_page' });
  assert.match(audit.id, /^aud_/);
  const progress = [];
  await audit.wait({ timeoutMs: 180_000, onEvent: (e) => progress.push(e.event) });
  assert.equal(audit.status, 'done');
  assert.equal(audit.pagesAudited, 1);
  assert.ok(audit.scores && typeof audit.scores.seo === 'number');
  assert.ok(audit.report, 'the whole report once done');
  const listed = await a.audits.list({ limit: 10 }).toArray();
  assert.ok(listed.some((x) => x.id === audit.id));
  await assert.rejects(b.audits.get(audit.id), NotFoundError);
});

test('monitors: create, read, pause, resume, checks, delete', async () => {
  const m = await a.monitors.create({ name: 'sdk-ts', url: site.url, schedule: { every: '1h' }, capture: { width: 640, height: 480 }, compare: 'pixels' });
  assert.match(m.id, /^mon_/);
  assert.equal((await a.monitors.get(m.id)).name, 'sdk-ts');
  assert.ok((await a.monitors.list().toArray()).some((x) => x.id === m.id));
  assert.equal((await a.monitors.pause(m.id)).status, 'paused');
  assert.equal((await a.monitors.resume(m.id)).status, 'active');
  const renamed = await a.monitors.update(m.id, { name: 'sdk-ts renamed' });
  assert.equal(renamed.name, 'sdk-ts renamed');
  const checks = await a.monitors.checks(m.id).toArray();
  assert.ok(Array.isArray(checks));
  await assert.rejects(a.monitors.create({ url: site.url, schedule: { every: '1m' } }), (e) => e instanceof ValidationError && e.field === 'schedule.every');
  await a.monitors.delete(m.id);
  await assert.rejects(a.monitors.get(m.id), NotFoundError);
});

test('proxies: create (credentials never returned), list, get by name, delete', async () => {
  const p = await a.proxies.create({ name: 'sdk-office', url: 'http://bob:s3cret@127.0.0.1:3128' });
  assert.match(p.id, /^prx_/);
  assert.ok(!JSON.stringify(p).includes('s3cret'));
  assert.ok((await a.proxies.list()).some((x) => x.id === p.id));
  assert.equal((await a.proxies.get('sdk-office')).id, p.id);
  await assert.rejects(b.proxies.get(p.id), NotFoundError);
  await assert.rejects(a.proxies.create({ name: 'bad', url: 'ftp://127.0.0.1:21' }), ValidationError);
  await a.proxies.delete(p.id);
  await assert.rejects(a.proxies.get(p.id), NotFoundError);
});

test('the account balance counts the captures', async () => {
  const bal = await a.account.balance();
  assert.equal(bal.plan, 'pro');
  assert.equal(bal.unit, 'actions');
  assert.ok(bal.usage.used >= 5, `used ${bal.usage.used}`);
  assert.equal(bal.usage.unlimited, false);
  const other = await b.account.balance();
  assert.equal(other.usage.used, 0);
});
