// A live-session client that connects and does nothing until the service ends the session:
// prints how long it stayed connected and the page it saw.
import { createRequire } from 'node:module';

const [clients, endpoint] = process.argv.slice(2);
const require = createRequire(clients + '/');
const puppeteer = require('puppeteer-core');
const t0 = performance.now();
const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null });
const [page] = await browser.pages();
const url = page.url();
console.error('connected');
await new Promise((ok) => browser.once('disconnected', ok));
console.log(JSON.stringify({ url, connectedMs: Math.round(performance.now() - t0) }));
