// A live session driven by puppeteer-core through the relay: connect, navigate, click,
// type, select, evaluate, a second page, disconnect. Prints what it saw as JSON.
import puppeteer from 'puppeteer-core';

const [endpoint, base] = process.argv.slice(2);
const out = {};
const t0 = performance.now();
const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null, protocolTimeout: 20000 });
out.connectMs = Math.round(performance.now() - t0);
const pages = await browser.pages();
out.pages = pages.length;
const page = pages[0];
out.firstCommandMs = Math.round(performance.now() - t0);
await page.goto(base + '/form', { waitUntil: 'load' });
await page.click('#name');
await page.type('#name', 'Ada Lovelace');
await page.select('#plan', 'pro');
await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#go')]);
out.url = page.url();
out.text = await page.$eval('#q', (e) => e.textContent);
out.eval = await page.evaluate(() => 6 * 7);
out.title = await page.title();
const second = await browser.newPage();
await second.goto(base + '/form');
out.pagesWithSecond = (await browser.pages()).length;
out.secondTitle = await second.title();
await second.close();
await browser.disconnect();
console.log(JSON.stringify(out));
