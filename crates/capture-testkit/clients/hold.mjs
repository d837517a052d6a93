// A live-session client that connects and does nothing until the service ends the session:
// prints how long it stayed connected and the page it saw.
import { createRequire } from 'node:module';

const [clients, endpoint] = process.argv.slice(2);
const require = createRequire(clients + '/');
const puppeteer = require('puppeteer-core');
const t0 = performance.now();
const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null });
// Listened for at once: a session that ends while the pages are read is seen to end (a
// listener added after would wait for nothing, and node would exit 13, silently).
const gone = new Promise((ok) => browser.once('disconnected', ok));
const [page] = await browser.pages();
const url = page.url();
console.error('connected');
await gone;
console.log(JSON.stringify({ url, connectedMs: Math.round(performance.now() - t0) }));
