// Test support: build or locate the `capture` binary, start it on a random port with a
// fresh data folder, launch Debian's Chromium through playwright-core, a fixture site.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The `capture` binary: $CAPTURE_BIN, or built here with cargo (debug profile). */
export function captureBinary() {
  if (process.env.CAPTURE_BIN) return process.env.CAPTURE_BIN;
  const out = execFileSync('cargo', ['build', '--locked', '-p', 'capture', '--bin', 'capture', '--message-format=json-render-diagnostics'], {
    cwd: repo,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 256 * 1024 * 1024,
  });
  for (const line of out.split('\n').reverse()) {
    if (!line.startsWith('{')) continue;
    const msg = JSON.parse(line);
    if (msg.reason === 'compiler-artifact' && msg.target?.name === 'capture' && msg.executable) return msg.executable;
  }
  throw new Error('cargo did not report the capture binary');
}

/** Start `capture serve` (api, worker and scheduler roles) on 127.0.0.1 with a temp data dir. */
export async function startService() {
  const dir = mkdtempSync(join(tmpdir(), 'capture-e2e-'));
  const bin = captureBinary();
  const env = {
    ...process.env,
    CAPTURE_LISTEN: '127.0.0.1:0',
    CAPTURE_DATA_DIR: join(dir, 'data'),
    CAPTURE_DATABASE_URL: `sqlite://${join(dir, 'capture.db')}`,
    CAPTURE_EGRESS_ALLOW: '127.0.0.1',
    CAPTURE_BROWSERS: '1',
    CAPTURE_WORKER_CONCURRENCY: '1',
    CAPTURE_LOG: process.env.CAPTURE_LOG ?? 'warn',
  };
  const child = spawn(bin, ['serve', '--roles', 'api,worker,scheduler'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((res) => child.once('exit', (code, signal) => res({ code, signal })));
  // Never leave the service behind, even when the test process dies early.
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  const lines = createInterface({ input: child.stdout });
  const first = await Promise.race([
    new Promise((res) => lines.once('line', res)),
    exited.then((e) => { throw new Error(`capture exited before listening: ${JSON.stringify(e)}`); }),
    new Promise((_, rej) => setTimeout(() => rej(new Error('capture did not print its address within 90 s')), 90_000).unref()),
  ]);
  lines.on('line', () => {}); // keep draining stdout
  const base = first.replace(/^listening on /, '').trim();
  if (!base.startsWith('http://')) throw new Error(`unexpected first line: ${first}`);
  return {
    base,
    /** `capture <args>` on the same database (e.g. `admin key create`): its stdout. */
    cli: (...args) => execFileSync(bin, args, { cwd: dir, env, encoding: 'utf8' }),
    /** SIGTERM, wait (SIGKILL after 20 s), remove the data folder. */
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

/** Debian's Chromium, headless, never downloading a browser of its own. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CAPTURE_CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** A fixture page on 127.0.0.1 for the service to capture. */
export async function startFixtureSite() {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html><head><title>E2E fixture page</title><style>html,body{margin:0;height:100%;background:#1e88e5}</style></head><body></body></html>');
  });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => new Promise((res) => server.close(res)),
  };
}

/** Poll `fn` until it returns a truthy value, or fail after `ms`. */
export async function eventually(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
