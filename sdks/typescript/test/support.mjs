// Test support: start the real `capture` binary (api, worker and scheduler roles) on a random
// port with a fresh data folder, make two accounts with a key each, and serve a small page on
// 127.0.0.1 for it to capture. Nothing here downloads anything.
import { execFileSync, spawn } from 'node:child_process';
import { inflateSync } from 'node:zlib';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** $CAPTURE_BIN, else ${CARGO_TARGET_DIR:-../../target}/debug/capture (from sdks/typescript). */
export function captureBinary() {
  const bin = process.env.CAPTURE_BIN || join(resolve(pkg, process.env.CARGO_TARGET_DIR || '../../target'), 'debug', 'capture');
  if (!existsSync(bin)) throw new Error(`no capture binary at ${bin}: build it (cargo build -p capture --bin capture) or set CAPTURE_BIN`);
  return bin;
}

/**
 * Start the service and make two tenants. Answers `{base, keyA, keyB, env, stop()}`.
 * `extraEnv` adds to the service's environment.
 */
export async function startService(extraEnv = {}) {
  const bin = captureBinary();
  const dir = mkdtempSync(join(tmpdir(), 'capture-sdk-ts-'));
  const env = {
    ...process.env,
    CAPTURE_LISTEN: '127.0.0.1:0',
    CAPTURE_DATA_DIR: join(dir, 'data'),
    CAPTURE_DATABASE_URL: `sqlite://${join(dir, 'capture.db')}`,
    CAPTURE_EGRESS_ALLOW: '127.0.0.1',
    CAPTURE_WEBHOOK_ALLOW_HTTP: 'true',
    CAPTURE_BROWSERS: '1',
    CAPTURE_WORKER_CONCURRENCY: '2',
    CAPTURE_LOG: process.env.CAPTURE_LOG ?? 'warn',
    ...extraEnv,
  };
  delete env.CAPTURE_BASE_URL;
  const admin = (...args) => execFileSync(bin, ['admin', ...args], { env, cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  admin('user', 'create', '--email', 'sdk-a@example.com', '--plan', 'pro');
  admin('user', 'create', '--email', 'sdk-b@example.com', '--plan', 'pro');
  const keyA = admin('key', 'create', '--email', 'sdk-a@example.com', '--name', 'sdk-ts').trim().split('\n').pop().trim();
  const keyB = admin('key', 'create', '--email', 'sdk-b@example.com', '--name', 'sdk-ts').trim().split('\n').pop().trim();
  const child = spawn(bin, ['serve', '--roles', 'api,worker,scheduler'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((res) => child.once('exit', (code, signal) => res({ code, signal })));
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  const lines = createInterface({ input: child.stdout });
  const base = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error('capture did not print "listening on" within 90 s')), 90_000);
    timer.unref();
    lines.on('line', (line) => {
      const m = /^listening on (\S+)/.exec(line.trim());
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    exited.then((e) => rej(new Error(`capture exited before listening: ${JSON.stringify(e)}`)));
  });
  return {
    base,
    keyA,
    keyB,
    env,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(t);
      }
      process.removeListener('exit', reap);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A page on 127.0.0.1: a solid coloured block filling the viewport. */
export async function startFixtureSite() {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      '<!doctype html><html><head><title>SDK fixture page</title>' +
        '<style>html,body{margin:0;height:100%}#block{width:100%;height:100%;background:#e53935}</style>' +
        '</head><body><div id="block">Capture SDK</div></body></html>',
    );
  });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => new Promise((res) => server.close(res)),
  };
}

/**
 * A webhook receiver on 127.0.0.1 keeping every request's headers and raw body; `next()`
 * resolves with the next one (or one already received and not yet taken).
 */
export async function startReceiver() {
  const received = [];
  const waiters = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
      const item = { headers: req.headers, body: Buffer.concat(chunks) };
      const w = waiters.shift();
      if (w) w(item);
      else received.push(item);
    });
  });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    next(ms = 30_000) {
      if (received.length) return Promise.resolve(received.shift());
      return new Promise((res, rej) => {
        const t = setTimeout(() => rej(new Error(`no webhook delivery within ${ms} ms`)), ms);
        waiters.push((item) => {
          clearTimeout(t);
          res(item);
        });
      });
    },
    close: () => new Promise((res) => server.close(res)),
  };
}

/** Width and height of a PNG from its IHDR chunk, after checking its signature. */
export function pngSize(bytes) {
  const sig = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  for (let i = 0; i < 8; i++) if (bytes[i] !== sig[i]) throw new Error('not a PNG: wrong signature');
  const ascii = String.fromCharCode(bytes[12], bytes[13], bytes[14], bytes[15]);
  if (ascii !== 'IHDR') throw new Error(`not a PNG: first chunk ${ascii}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/**
 * The colour [r, g, b] of a PNG's top-left pixel (8-bit RGB or RGBA). Whatever the first
 * row's filter, its first pixel is stored as it is (every predictor of it is 0).
 */
export function pngFirstPixel(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const depth = bytes[24];
  const colorType = bytes[25];
  if (depth !== 8 || (colorType !== 2 && colorType !== 6)) throw new Error(`unexpected PNG depth ${depth} colour type ${colorType}`);
  const idat = [];
  for (let off = 8; off < bytes.length; ) {
    const len = view.getUint32(off);
    const type = String.fromCharCode(...bytes.subarray(off + 4, off + 8));
    if (type === 'IDAT') idat.push(bytes.subarray(off + 8, off + 8 + len));
    if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  return [raw[1], raw[2], raw[3]];
}
