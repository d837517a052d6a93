// What needs no Capture server: the generator's drift check, the SSE reader, signing against
// node:crypto, and the retry policy against a small node:http stand-in.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import {
  CaptureClient,
  ConnectionError,
  IDEMPOTENT_OPERATIONS,
  RateLimitError,
  ServerError,
  WebhookVerificationError,
  readEvents,
  renderLink,
  verifyWebhook,
} from '../dist/index.js';

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const generator = join(pkg, 'generate.mjs');
const openapi = resolve(pkg, '..', 'openapi.json');

test('the generated models are up to date with sdks/openapi.json', () => {
  const out = execFileSync(process.execPath, [generator, '--check'], { encoding: 'utf8' });
  assert.match(out, /up to date/);
});

test('--check fails naming the file when the document changed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'capture-gen-'));
  try {
    const doc = JSON.parse(readFileSync(openapi, 'utf8'));
    doc.components.schemas.Job.properties.addedByTheTest = { type: 'string', description: 'drift' };
    const changed = join(dir, 'openapi.json');
    writeFileSync(changed, JSON.stringify(doc));
    const r = spawnSync(process.execPath, [generator, '--check', '--openapi', changed], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /src\/models\.ts differs/);
    // And writing then checking against the same document passes.
    const out = join(dir, 'models.ts');
    execFileSync(process.execPath, [generator, '--openapi', changed, '--out', out]);
    assert.match(readFileSync(out, 'utf8'), /addedByTheTest\?: string;/);
    const ok = spawnSync(process.execPath, [generator, '--check', '--openapi', changed, '--out', out], { encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the creates that take an Idempotency-Key come from the document', () => {
  assert.ok(IDEMPOTENT_OPERATIONS.includes('POST /v1/screenshot'));
  assert.ok(IDEMPOTENT_OPERATIONS.includes('POST /v1/screenshots/bulk'));
  assert.ok(IDEMPOTENT_OPERATIONS.includes('POST /v1/audits'));
});

test('the SSE reader splits events across chunks, skips comments and joins data lines', async () => {
  const enc = new TextEncoder();
  const chunks = [': ping\n\nevent: sta', 'tus\ndata: {"status":"processing"}\r', '\n\r\nevent: done\ndata: {"a":\ndata: 1}\n\n'];
  const body = new ReadableStream({
    start(c) {
      for (const s of chunks) c.enqueue(enc.encode(s));
      c.close();
    },
  });
  const got = [];
  for await (const e of readEvents(body)) got.push(e);
  assert.deepEqual(got, [
    { event: 'status', data: '{"status":"processing"}' },
    { event: 'done', data: '{"a":\n1}' },
  ]);
});

test('renderLink signs the query exactly as sent, as docs/render-links.md does with node:crypto', async () => {
  const link = await renderLink({
    baseUrl: 'https://capture.example/',
    keyId: 'rlk_1',
    secret: 'rks_secret',
    url: 'https://example.com/a b?x=1&y=ü',
    width: 1200,
    fullPage: true,
    hideSelectors: ['#chat', '.ad'],
    clip: { x: 0, y: 0, width: 600, height: 300 },
    expires: new Date(1767225600 * 1000),
  });
  const u = new URL(link);
  assert.equal(u.origin + u.pathname, 'https://capture.example/v1/render');
  const raw = link.slice(link.indexOf('?') + 1);
  const [query, signature] = raw.split('&signature=');
  assert.equal(signature, createHmac('sha256', 'rks_secret').update(query).digest('hex'));
  const p = new URLSearchParams(query);
  assert.equal(p.get('url'), 'https://example.com/a b?x=1&y=ü');
  assert.equal(p.get('hideSelectors'), '["#chat",".ad"]');
  assert.equal(p.get('clip'), '{"x":0,"y":0,"width":600,"height":300}');
  assert.equal(p.get('fullPage'), 'true');
  assert.equal(p.get('key'), 'rlk_1');
  assert.equal(p.get('expires'), '1767225600');
  assert.ok(raw.endsWith(`&signature=${signature}`), 'signature is last');
});

test('verifyWebhook accepts a Stripe-style signature and rejects tampering, old timestamps, wrong secrets', async () => {
  const secret = 'whsec_test';
  const body = '{"id":"evt_1","type":"test.ping","createdAt":"2026-01-01T00:00:00Z","data":{"message":"hi"}}';
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  const headers = { 'webhook-signature': `t=${t},v1=${v1}`, 'webhook-id': 'evt_1' };
  const ev = await verifyWebhook(headers, body, secret);
  assert.equal(ev.type, 'test.ping');
  assert.equal((await verifyWebhook(new Headers(headers), new TextEncoder().encode(body), secret)).id, 'evt_1');
  // One of several v1 values may match (a rotation in progress).
  await verifyWebhook({ 'Webhook-Signature': `t=${t},v1=${'0'.repeat(64)},v1=${v1}` }, body, secret);
  const reason = async (p) => {
    try {
      await p;
    } catch (e) {
      assert.ok(e instanceof WebhookVerificationError);
      return e.reason;
    }
    assert.fail('verified');
  };
  assert.equal(await reason(verifyWebhook(headers, body.replace('hi', 'ho'), secret)), 'signature_mismatch');
  assert.equal(await reason(verifyWebhook(headers, body, 'whsec_other')), 'signature_mismatch');
  assert.equal(await reason(verifyWebhook({}, body, secret)), 'missing_header');
  assert.equal(await reason(verifyWebhook({ 'webhook-signature': 'nonsense' }, body, secret)), 'malformed_header');
  const old = t - 301;
  const oldSig = createHmac('sha256', secret).update(`${old}.${body}`).digest('hex');
  assert.equal(await reason(verifyWebhook({ 'webhook-signature': `t=${old},v1=${oldSig}` }, body, secret)), 'timestamp_out_of_range');
  await verifyWebhook({ 'webhook-signature': `t=${old},v1=${oldSig}` }, body, secret, { toleranceSec: 600 });
});

/** A stand-in answering `script` in turn, recording each request. */
async function standIn(script) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() });
      const step = script[Math.min(seen.length - 1, script.length - 1)];
      if (step === 'destroy') return req.socket.destroy();
      res.writeHead(step.status, { 'content-type': 'application/json', ...(step.headers ?? {}) });
      res.end(JSON.stringify(step.body ?? {}));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${server.address().port}`, seen, close: () => new Promise((r) => server.close(r)) };
}

const job = { id: 'scr_1', screenshotId: 'scr_1', status: 'pending', url: 'https://example.com', format: 'png', tags: [], createdAt: '2026-01-01T00:00:00Z', cached: false };

test('a create is retried after 503 with Retry-After, with the same Idempotency-Key', async () => {
  const s = await standIn([
    { status: 503, headers: { 'retry-after': '1' }, body: { error: 'busy', code: 'SERVICE_UNAVAILABLE', requestId: 'req_1' } },
    'destroy',
    { status: 202, body: job },
  ]);
  try {
    const client = new CaptureClient({ baseUrl: s.base, apiKey: 'sk_test' });
    const got = await client.screenshots.create({ url: 'https://example.com' });
    assert.equal(got.id, 'scr_1');
    assert.equal(s.seen.length, 3);
    const keys = s.seen.map((r) => r.headers['idempotency-key']);
    assert.match(keys[0], /^[0-9a-f-]{36}$/);
    assert.ok(keys.every((k) => k === keys[0]), 'one key for the logical call');
    assert.ok(s.seen[1].at - s.seen[0].at >= 950, 'waited for Retry-After');
    assert.equal(s.seen[0].headers.authorization, 'Bearer sk_test');
    assert.deepEqual(JSON.parse(s.seen[0].body), { url: 'https://example.com' });
    // A second logical call gets a key of its own.
    await client.screenshots.create({ url: 'https://example.com' });
    assert.notEqual(s.seen[3].headers['idempotency-key'], keys[0]);
  } finally {
    await s.close();
  }
});

test('a quota refusal whose Retry-After is far off is thrown at once as RateLimitError', async () => {
  const s = await standIn([{ status: 429, headers: { 'retry-after': '86400' }, body: { error: 'quota', code: 'PLAN_QUOTA_EXCEEDED', requestId: 'req_q', details: { used: 10, limit: 10 } } }]);
  try {
    const client = new CaptureClient({ baseUrl: s.base, apiKey: 'k' });
    await assert.rejects(client.screenshots.create({ url: 'https://example.com' }), (e) => {
      assert.ok(e instanceof RateLimitError);
      assert.equal(e.code, 'PLAN_QUOTA_EXCEEDED');
      assert.equal(e.status, 429);
      assert.equal(e.retryAfter, 86400);
      assert.equal(e.requestId, 'req_q');
      assert.deepEqual(e.details, { used: 10, limit: 10 });
      return true;
    });
    assert.equal(s.seen.length, 1);
  } finally {
    await s.close();
  }
});

test('a write the service cannot dedupe is not retried after a 500; reads are, up to maxRetries', async () => {
  const s = await standIn([{ status: 500, body: { error: 'internal error', code: 'INTERNAL_ERROR', requestId: 'req_5' } }]);
  try {
    const client = new CaptureClient({ baseUrl: s.base, apiKey: 'k', maxRetries: 2 });
    await assert.rejects(client.webhooks.create({ url: 'https://example.com/hook' }), ServerError);
    assert.equal(s.seen.length, 1);
    await assert.rejects(client.account.balance(), (e) => e instanceof ServerError && e.code === 'INTERNAL_ERROR');
    assert.equal(s.seen.length, 4);
  } finally {
    await s.close();
  }
});

test('a service that is not there is a ConnectionError', async () => {
  const s = await standIn([{ status: 200 }]);
  await s.close();
  const client = new CaptureClient({ baseUrl: s.base, apiKey: 'k', maxRetries: 1 });
  await assert.rejects(client.account.balance(), (e) => e instanceof ConnectionError && e.code === 'NETWORK_ERROR' && e.status === 0);
});

test('a DELETE whose answer was lost and whose retry finds nothing has done what was asked', async () => {
  const s = await standIn(['destroy', { status: 404, body: { error: 'monitor not found', code: 'NOT_FOUND', requestId: 'req_d' } }]);
  try {
    const client = new CaptureClient({ baseUrl: s.base, apiKey: 'k' });
    await client.monitors.delete('mon_1');
    assert.equal(s.seen.length, 2);
    assert.equal(s.seen[1].method, 'DELETE');
    // Without a lost first attempt a 404 is a 404.
    await assert.rejects(client.monitors.delete('mon_2'), (e) => e.code === 'NOT_FOUND');
  } finally {
    await s.close();
  }
});
