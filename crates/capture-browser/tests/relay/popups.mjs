// A page opens 30 popups (on load without a gesture, from a click, through target=_blank
// links) and the client asks for more pages than allowed: the session never ends up with
// more than its limit, and the client sees the extras closed.
// Usage: node popups.mjs <endpoint> <site> → one JSON line.
import puppeteer from 'puppeteer-core';

const [endpoint, site] = process.argv.slice(2);
const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null });
let created = 0;
let destroyed = 0;
browser.on('targetcreated', (t) => { if (t.type() === 'page') created++; });
browser.on('targetdestroyed', (t) => { if (t.type() === 'page') destroyed++; });
const [page] = await browser.pages();
// The protocol's own target events (puppeteer makes no Target of a page closed before it
// could attach to it).
const conn = page._client().connection();
const seen = new Set();
let rawCreated = 0;
let rawDestroyed = 0;
conn.on('Target.targetCreated', (e) => { if (e.targetInfo.type === 'page' && !seen.has(e.targetInfo.targetId)) { seen.add(e.targetInfo.targetId); rawCreated++; } });
conn.on('Target.targetDestroyed', (e) => { if (seen.delete(e.targetId)) rawDestroyed++; });
const out = {};
// Bounded wait for the session to be back within its limit with nothing left pending.
const settle = async () => {
  let pages = [];
  for (let i = 0; i < 200; i++) {
    pages = await browser.pages();
    if (pages.length <= 5 && seen.size <= 4 && created - destroyed <= 4) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { pages: pages.length, created, destroyed, rawCreated, rawDestroyed };
};
const closeOthers = async () => {
  for (const p of await browser.pages()) if (p !== page) await p.close().catch(() => {});
  for (let i = 0; i < 100 && (await browser.pages()).length > 1; i++) await new Promise((r) => setTimeout(r, 20));
  created = 0;
  destroyed = 0;
  rawCreated = 0;
  rawDestroyed = 0;
};
await page.goto(`${site}/popups?auto=30`);
out.onLoad = await settle();
out.openedOnLoad = await page.evaluate(() => window.opened.filter((w) => w && !w.closed).length);
await closeOthers();
await page.goto(`${site}/popups`);
await page.click('#open');
out.onClick = await settle();
await closeOthers();
for (let i = 0; i < 8; i++) await page.click(`#l${i}`);
out.links = await settle();
await closeOthers();
const extra = [];
for (let i = 0; i < 6; i++) extra.push(await browser.newPage().then(() => 'ok', (e) => `error: ${e.message}`));
out.newPages = extra;
out.afterNewPages = (await browser.pages()).length;
await browser.disconnect();
console.log(JSON.stringify(out));
