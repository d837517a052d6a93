// The website in a real headless Chromium: sign up, sign in, API keys (create, copy,
// reveal, revoke) and their effect on the REST API, sharing a screenshot, and the same
// pages with JavaScript turned off. Elements are found the way people find them: by
// label, role and accessible name.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, launchBrowser, startFixtureSite, startService } from './support.mjs';

const password = 'e2e password 123';
const email = `e2e-${Date.now()}-${process.pid}@example.com`;

describe('the website', () => {
  let service, browser, context, page, site;
  let key; // the first key, created in the browser

  const url = (path) => `${service.base}${path}`;
  const rest = (path, apiKey, init = {}) =>
    fetch(url(path), { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers ?? {}) } });
  const keyRow = (name) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });

  before(async () => {
    [service, browser, site] = await Promise.all([startService(), launchBrowser(), startFixtureSite()]);
    context = await browser.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.base });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    await site?.close();
  });

  it('signs up with an e-mail and a password and lands on the dashboard', async () => {
    await page.goto(url('/signup'));
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(url('/dashboard'));
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    const usage = await page.locator('#usage-summary').textContent();
    assert.match(usage, /0 of 100 actions used on the free plan/);
    assert.equal(await page.getByRole('meter', { name: 'Monthly usage' }).getAttribute('value'), '0');
  });

  it('signs out, refuses a wrong password, and signs in again', async () => {
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(url('/login'));
    await page.goto(url('/dashboard'));
    await page.waitForURL(/\/login\?next=%2Fdashboard$/);

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not my password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong e-mail or password' }).waitFor();

    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(url('/dashboard'));
    assert.equal(await page.getByText(email).count(), 1, 'the header shows who is signed in');
  });

  it('creates a key that the REST API accepts, and copies it', async () => {
    await page.getByLabel('Key name').fill('browser key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const field = page.getByLabel('API key');
    key = await field.inputValue();
    assert.match(key, /^sk_live_[A-Za-z0-9]{40}$/);

    const res = await rest('/v1/account/balance', key);
    assert.equal(res.status, 200);
    const balance = await res.json();
    assert.equal(balance.plan, 'free');
    assert.equal(balance.usage.limit, 100);

    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied.' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);

    await page.getByRole('link', { name: 'Back to the dashboard' }).click();
    await page.waitForURL(url('/dashboard#keys'));
    assert.equal(await keyRow('browser key').getByRole('cell', { name: 'Active' }).count(), 1);
    assert.equal(await page.getByText(key).count(), 0, 'the full key is not on the dashboard');
  });

  it('reveals the same key to its owner', async () => {
    await keyRow('browser key').getByRole('button', { name: 'Reveal' }).click();
    assert.equal(await page.getByLabel('API key').inputValue(), key);
    await page.getByRole('link', { name: 'Back to the dashboard' }).click();
  });

  it('revokes the key, and the REST API refuses it at once', async () => {
    await keyRow('browser key').getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL(url('/dashboard#keys'));
    await keyRow('browser key').getByRole('cell', { name: /^Revoked/ }).waitFor();
    assert.equal(await keyRow('browser key').getByRole('button', { name: 'Reveal' }).count(), 0);
    const res = await rest('/v1/account/balance', key);
    assert.equal(res.status, 401);
  });

  it('shares a screenshot made through the REST API; the link opens without cookies', async () => {
    await page.getByLabel('Key name').fill('shots');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shotsKey = await page.getByLabel('API key').inputValue();

    const created = await rest('/v1/screenshot', shotsKey, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: site.url, width: 800, height: 600, waitUntil: 'load' }),
    });
    assert.equal(created.status, 202);
    const { id } = await created.json();
    const job = await eventually(async () => {
      const j = await (await rest(`/v1/screenshot/${id}`, shotsKey)).json();
      return j.status === 'done' || j.status === 'failed' ? j : null;
    }, 90_000, `screenshot ${id}`);
    assert.equal(job.status, 'done', JSON.stringify(job));

    await page.goto(url('/dashboard'));
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: /E2E fixture page/ }) });
    const thumb = row.getByRole('img', { name: /^Thumbnail of / });
    await eventually(() => thumb.evaluate((img) => img.complete && img.naturalWidth > 0), 10_000, 'the thumbnail');
    assert.equal(await thumb.getAttribute('src'), job.thumbnailUrl);
    assert.match(await page.locator('#usage-summary').textContent(), /^1 of 100 actions used/);

    await row.getByRole('button', { name: 'Share' }).click();
    await page.waitForURL(url('/dashboard#screenshots'));
    const link = await row.getByRole('link', { name: /\/s\// }).getAttribute('href');
    assert.ok(link.startsWith(`${service.base}/s/`), link);

    const stranger = await browser.newContext();
    try {
      assert.deepEqual(await stranger.cookies(), []);
      const viewer = await stranger.newPage();
      const res = await viewer.goto(link);
      assert.equal(res.status(), 200);
      const image = viewer.getByRole('img', { name: /^Capture of / });
      assert.equal(await image.getAttribute('src'), job.publicUrl);
      await eventually(() => image.evaluate((img) => img.complete && img.naturalWidth === 800), 10_000, 'the shared image');

      await row.getByRole('button', { name: 'Unshare' }).click();
      await page.waitForURL(url('/dashboard#screenshots'));
      assert.equal(await row.getByRole('button', { name: 'Share' }).count(), 1);
      assert.equal((await viewer.goto(link)).status(), 404);
    } finally {
      await stranger.close();
    }
  });

  it('works with JavaScript turned off', async () => {
    const noJs = await browser.newContext({ javaScriptEnabled: false });
    try {
      const p = await noJs.newPage();
      await p.goto(url('/login'));
      await p.getByLabel('Email').fill(email);
      await p.getByLabel('Password').fill(password);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.waitForURL(url('/dashboard'));
      await p.getByLabel('Key name').fill('no script');
      await p.getByRole('button', { name: 'Create key' }).click();
      const plain = await p.getByLabel('API key').inputValue();
      assert.match(plain, /^sk_live_/);
      assert.equal(await p.getByRole('button', { name: 'Copy' }).count(), 0, 'Copy needs JavaScript, so it stays hidden');
      assert.equal((await rest('/v1/account/balance', plain)).status, 200);
      await p.getByRole('link', { name: 'Settings' }).click();
      assert.equal(await p.locator('#account-email').textContent(), email);
      await p.getByRole('button', { name: 'Sign out', exact: true }).click();
      await p.waitForURL(url('/login'));
    } finally {
      await noJs.close();
    }
  });
});
