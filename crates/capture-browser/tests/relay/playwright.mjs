// A live session driven by playwright-core's connectOverCDP through the relay: the
// default context is the session's; navigate, click, fill, select, evaluate, a second page.
import { chromium } from 'playwright-core';

const [endpoint, base] = process.argv.slice(2);
const out = {};
const t0 = performance.now();
const browser = await chromium.connectOverCDP(endpoint, { timeout: 20000 });
out.connectMs = Math.round(performance.now() - t0);
out.contexts = browser.contexts().length;
const context = browser.contexts()[0];
out.pages = context.pages().length;
const page = context.pages()[0];
await page.goto(base + '/form');
await page.click('#name');
await page.fill('#name', 'Grace Hopper');
await page.selectOption('#plan', 'pro');
await Promise.all([page.waitForURL('**/done?**'), page.click('#go')]);
out.url = page.url();
out.text = await page.textContent('#q');
out.eval = await page.evaluate(() => 6 * 7);
const second = await context.newPage();
await second.goto(base + '/form');
out.pagesWithSecond = context.pages().length;
await second.close();
// A second context must be refused.
try {
  await browser.newContext();
  out.newContext = 'created';
} catch (e) {
  out.newContext = String(e.message).split('\n')[0];
}
await browser.close();
console.log(JSON.stringify(out));
