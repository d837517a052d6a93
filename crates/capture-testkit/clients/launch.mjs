// The browserless-style baseline for the live-session figures: puppeteer.launch a fresh
// Chromium, open a page, load a URL. Loads puppeteer-core from the relay clients' folder
// (crates/capture-browser/tests/relay, installed by npm ci). Prints timings as JSON.
import { createRequire } from 'node:module';

const [clients, chromium, url] = process.argv.slice(2);
const require = createRequire(clients + '/');
const puppeteer = require('puppeteer-core');
const t0 = performance.now();
const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox'] });
const launchMs = performance.now() - t0;
const page = (await browser.pages())[0] ?? (await browser.newPage());
const firstCommandMs = performance.now() - t0;
await page.goto(url, { waitUntil: 'load' });
const loadedMs = performance.now() - t0;
await browser.close();
console.log(JSON.stringify({ launchMs: Math.round(launchMs), firstCommandMs: Math.round(firstCommandMs), loadedMs: Math.round(loadedMs) }));
