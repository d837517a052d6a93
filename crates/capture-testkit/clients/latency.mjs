// Live-session start latency beside a browserless-style puppeteer.launch, in one process:
// for each of N rounds, POST /v1/runs {live: true} → puppeteer.connect(connectUrl) → the
// first command (pages(); the start page is loaded by then) → disconnect; then N rounds
// of puppeteer.launch → first page → goto(startUrl, load) → close. Prints the medians.
import { createRequire } from 'node:module';

const [clients, base, key, startUrl, chromium, rounds] = process.argv.slice(2);
const require = createRequire(clients + '/');
const puppeteer = require('puppeteer-core');
const n = Number(rounds || 5);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return Math.round(s[Math.floor(s.length / 2)]); };
const live = { post: [], connect: [], firstCommand: [], postToLoaded: [] };
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const res = await fetch(base + '/v1/runs', {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ startUrl, live: true, recordVideo: false, timeoutMs: 60000 }),
  });
  const run = await res.json();
  if (res.status !== 202) throw new Error('POST /v1/runs: ' + JSON.stringify(run));
  const t1 = performance.now();
  const browser = await puppeteer.connect({ browserWSEndpoint: run.connectUrl, defaultViewport: null });
  const t2 = performance.now();
  const [page] = await browser.pages();
  const t3 = performance.now();
  if (page.url() !== startUrl) throw new Error('the start page is ' + page.url());
  live.post.push(t1 - t0); live.connect.push(t2 - t1); live.firstCommand.push(t3 - t1); live.postToLoaded.push(t3 - t0);
  await browser.disconnect();
}
const launch = { launch: [], firstCommand: [], loaded: [] };
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
  const t1 = performance.now();
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  const t2 = performance.now();
  await page.goto(startUrl, { waitUntil: 'load' });
  const t3 = performance.now();
  launch.launch.push(t1 - t0); launch.firstCommand.push(t2 - t0); launch.loaded.push(t3 - t0);
  await browser.close();
}
const med = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, median(v)]));
console.log(JSON.stringify({ rounds: n, live: med(live), launch: med(launch) }));
