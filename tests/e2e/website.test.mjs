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

// The website as a place to work: the front page signed out (with the service's own live
// capture), getting started, the playground with JavaScript on (the job's event stream)
// and off (the page refreshes itself), usage over time, the screenshots list, and monitors.
describe('the website as a place to work', () => {
  let service, browser, context, page, site;
  const email2 = `e2e-work-${Date.now()}-${process.pid}@example.com`;
  const url = (path) => `${service.base}${path}`;
  // A 2×2 PNG, for instant uploads.
  const tinyPng = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGMQUDAAIgYIBQAKDgGBVjPu8wAAAABJRU5ErkJggg==',
    'base64',
  );
  const uploadPng = async (apiKey, name) => {
    const form = new FormData();
    form.append('file', new Blob([tinyPng], { type: 'image/png' }), name);
    const res = await fetch(url('/v1/screenshot/upload'), { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()).id;
  };
  const capture = async (p, width, height, delay = 0) => {
    await p.getByLabel('Page URL').fill(site.url);
    await p.getByLabel('Extra delay (ms)').fill(String(delay));
    await p.getByLabel('Width (px)').fill(String(width));
    await p.getByLabel('Height (px)').fill(String(height));
    await p.getByLabel('Format').selectOption({ label: 'PNG image' });
    await p.getByLabel('Wait until').selectOption('load');
    await p.getByRole('button', { name: 'Capture' }).click();
    await p.waitForURL(/\/dashboard\/screenshots\/scr_[A-Za-z0-9]+$/);
    const image = p.getByRole('img', { name: /^Capture of / });
    await image.waitFor({ timeout: 90_000 });
    await eventually(() => image.evaluate((img, w) => img.complete && img.naturalWidth === w, width), 10_000, 'the captured image');
    return p.url().split('/').pop();
  };

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

  it('shows signed-out visitors what it does, a live capture of its own docs, and the way in', async () => {
    const res = await page.goto(url('/'));
    assert.equal(res.status(), 200);
    await page.getByRole('heading', { level: 1, name: 'Web pages to images and PDFs, through one API' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Create a free account' }).getAttribute('href'), '/signup');
    assert.equal(await page.getByRole('link', { name: 'sign in', exact: true }).getAttribute('href'), '/login');
    // The node captured its API reference at start-up; reload until it is there.
    const example = page.getByRole('img', { name: /API reference page/ });
    await eventually(async () => {
      if ((await example.count()) === 0) {
        await page.reload();
        return false;
      }
      return example.evaluate((img) => img.complete && img.naturalWidth === 1280);
    }, 90_000, 'the live example');
    assert.equal(await page.getByRole('link', { name: 'API reference' }).first().getAttribute('href'), '/docs');
  });

  it('guides a new account through getting started, each step copyable', async () => {
    await page.getByRole('link', { name: 'Create a free account' }).click();
    await page.getByLabel('Email').fill(email2);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(url('/dashboard'));
    const start = page.getByRole('region', { name: 'Get started' });
    await start.waitFor();
    assert.match(await start.getByLabel('curl').inputValue(), new RegExp(`^curl -X POST ${service.base}/v1/screenshot`));
    assert.equal(await start.getByLabel('MCP server URL').inputValue(), `${service.base}/mcp`);
    assert.match(await start.getByLabel('Claude Code').inputValue(), /^claude mcp add --transport http capture /);
    assert.match(await start.getByLabel('Codex').inputValue(), /^codex mcp add capture --url /);
    assert.equal(await start.getByLabel('CLI sign-in').inputValue(), `capture login --server ${service.base}`);
    await start.getByRole('button', { name: 'Copy Claude Code' }).click();
    await start.getByRole('status').filter({ hasText: 'Copied.' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), `claude mcp add --transport http capture ${service.base}/mcp`);
  });

  it('captures a fixture page in the playground, following the job as it runs (JavaScript on)', async () => {
    await page.getByRole('link', { name: 'Playground', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
    assert.match(await page.getByLabel('curl').inputValue(), /\$CAPTURE_API_KEY/);
    assert.match(await page.getByLabel('Python').inputValue(), /requests\.post/);
    assert.match(await page.getByLabel('Node.js').inputValue(), /await fetch/);
    // The capture waits 3 s on the page, so its page opens while it runs and follows the
    // job's event stream (there is no meta refresh with JavaScript on).
    const streamed = page.waitForRequest((r) => /\/dashboard\/screenshots\/scr_[A-Za-z0-9]+\/events$/.test(r.url()), { timeout: 30_000 });
    const id = await capture(page, 640, 480, 3000);
    assert.ok((await streamed).url().endsWith(`/dashboard/screenshots/${id}/events`));
    assert.match(await page.locator('#job-status').textContent(), /Status: done/);
    const download = page.getByRole('link', { name: 'Download png' });
    assert.equal(await download.getAttribute('download'), '');
    const res = await fetch(await download.getAttribute('href'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    // The same request as code, with this job's options.
    assert.match(await page.getByLabel('curl').inputValue(), /"width":640/);
    // Events of the job, and a public link to share.
    const events = page.getByRole('table', { name: 'What happened to this job' });
    assert.ok((await events.getByRole('row').count()) >= 3);
    await page.getByRole('button', { name: 'Share a public link' }).click();
    await page.waitForURL(url(`/dashboard/screenshots/${id}`));
    const share = await page.locator('a.share-link').getAttribute('href');
    assert.equal((await fetch(share)).status, 200);
    // Getting started is gone now that a job exists.
    await page.goto(url('/dashboard'));
    assert.equal(await page.getByRole('region', { name: 'Get started' }).count(), 0);
  });

  it('captures in the playground with JavaScript turned off (the page refreshes until done)', async () => {
    const noJs = await browser.newContext({ javaScriptEnabled: false });
    try {
      const p = await noJs.newPage();
      p.setDefaultTimeout(20_000);
      await p.goto(url('/login'));
      await p.getByLabel('Email').fill(email2);
      await p.getByLabel('Password').fill(password);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.waitForURL(url('/dashboard'));
      await p.getByRole('link', { name: 'Playground', exact: true }).click();
      await capture(p, 500, 400);
      assert.equal(await p.getByRole('button', { name: /^Copy/ }).count(), 0, 'Copy needs JavaScript');
    } finally {
      await noJs.close();
    }
  });

  it('charts the actions of this month, with a table behind the chart', async () => {
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Usage over time' }).waitFor();
    const chart = page.getByRole('img', { name: /^Actions per day, \d{4}-\d{2}/ }).first();
    await chart.waitFor();
    assert.equal(await page.locator('#usage-this').getAttribute('data-total'), '2');
    assert.equal(await chart.locator('rect.bar').count(), 1, 'one bar: today');
    assert.equal(await chart.locator('line.quota').count(), 1);
    const table = page.getByRole('table', { name: /^Actions per day in \d{4}-\d{2}, by product$/ }).first();
    const today = new Date().toISOString().slice(0, 10);
    const row = table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: today }) });
    assert.deepEqual(await row.getByRole('cell').allTextContents(), ['2', '0', '0', '0', '2', '2']);
    await page.getByRole('link', { name: 'By API key' }).click();
    await page.getByText('Website, CLI and MCP (no key): 2').first().waitFor();
  });

  it('lists, filters, searches and pages through the screenshots', async () => {
    await page.goto(url('/dashboard'));
    await page.getByLabel('Key name').fill('list key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const apiKey = await page.getByLabel('API key').inputValue();
    const uploads = [];
    for (const name of ['one.png', 'two.png', 'three.png']) uploads.push(await uploadPng(apiKey, name));

    await page.goto(url('/dashboard'));
    await page.getByRole('link', { name: 'Screenshots', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Screenshots' }).waitFor();
    const links = () => page.getByRole('table', { name: /^Screenshots/ }).getByRole('rowheader').getByRole('link');
    assert.equal(await links().count(), 5);

    await page.getByLabel('Search URL or title').fill('TWO');
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.deepEqual(await links().allTextContents(), ['two.png']);

    await page.getByLabel('Search URL or title').fill('');
    await page.getByLabel('Status').selectOption({ label: 'Done' });
    await page.getByLabel('Format').selectOption({ label: 'PNG' });
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.equal(await links().count(), 5);
    await page.getByLabel('Status').selectOption({ label: 'Failed' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No screenshots match these filters.').waitFor();

    // Pages of two, newest first, through the "Older screenshots" link.
    await page.goto(url('/dashboard/screenshots?limit=2'));
    const seen = [];
    for (;;) {
      for (const href of await links().evaluateAll((as) => as.map((a) => a.getAttribute('href')))) seen.push(href.split('/').pop());
      const older = page.getByRole('link', { name: 'Older screenshots' });
      if ((await older.count()) === 0) break;
      await older.click();
    }
    assert.equal(seen.length, 5);
    assert.equal(new Set(seen).size, 5, 'no job twice');
    assert.deepEqual(seen.slice(0, 3), [...uploads].reverse());

    // A row opens the job's page.
    await page.goto(url('/dashboard/screenshots'));
    await links().first().click();
    await page.getByRole('heading', { level: 1, name: 'three.png' }).waitFor();
    await page.getByRole('heading', { level: 2, name: 'Timings' }).waitFor();
    await page.getByText('This file was uploaded; it has no capture options.').waitFor();
  });

  it('monitors a page: made with the form, checked now, its check shown before and after', async () => {
    const ctx = await browser.newContext();
    try {
      const p = await ctx.newPage();
      p.setDefaultTimeout(20_000);
      await p.goto(url('/login'));
      await p.getByLabel('Email').fill(email2);
      await p.getByLabel('Password').fill(password);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.waitForURL(url('/dashboard'));
      await p.getByRole('link', { name: 'Monitors', exact: true }).click();
      await p.getByRole('heading', { level: 1, name: 'Monitors' }).waitFor();
      await p.getByText('No monitors yet.').waitFor();

      await p.getByLabel('Page URL').fill(site.url);
      await p.getByLabel('Name (optional)').fill('E2E watched page');
      assert.equal(await p.getByLabel('Check every').inputValue(), '1h');
      await p.getByLabel('Compare', { exact: true }).selectOption({ label: 'Pixels and text' });
      assert.equal(await p.getByLabel('Threshold').inputValue(), '0.001');
      await p.getByLabel('Ignore selectors (one per line)').fill('.clock');
      assert.equal(await p.getByLabel('Notify e-mails (one per line)').inputValue(), '');
      await p.getByRole('button', { name: 'Create monitor' }).click();
      await p.waitForURL(/\/dashboard\/monitors\/mon_[A-Za-z0-9]+\?notice=created$/);
      await p.getByRole('heading', { level: 1, name: 'E2E watched page' }).waitFor();
      const monitorUrl = p.url().split('?')[0];

      // Check now (the first check may still be running: the page then says so), then the
      // page refreshes itself until the history shows the baseline.
      await p.getByRole('button', { name: 'Check now' }).click();
      await p.waitForURL(/\?notice=(started|busy)$/);
      const history = p.getByRole('table', { name: /^Checks of this monitor/ });
      const baseline = history.getByRole('link', { name: 'baseline', exact: true });
      await baseline.first().waitFor({ timeout: 120_000 });
      const href = await eventually(async () => {
        try {
          return await baseline.first().getAttribute('href', { timeout: 5_000 });
        } catch {
          return null; // the page was refreshing
        }
      }, 30_000, "the baseline check's link");
      assert.ok(href.startsWith(`${new URL(monitorUrl).pathname}?check=chk_`), href);

      // The check's view: the capture of the check, loaded.
      await p.goto(url(href));
      assert.match(await p.locator('#check-status').textContent(), /^Status: baseline/);
      const after = p.getByRole('img', { name: 'After', exact: true });
      await eventually(() => after.evaluate((img) => img.complete && img.naturalWidth > 0), 10_000, 'the After image');
      assert.equal(await p.getByRole('button', { name: 'Accept as baseline' }).count(), 0, 'it is the baseline already');

      // Listed by its name, with the last check's status.
      await p.getByRole('link', { name: 'All monitors' }).click();
      const row = p.getByRole('row').filter({ has: p.getByRole('rowheader', { name: 'E2E watched page', exact: true }) });
      await row.waitFor();
      assert.equal(await row.getByRole('cell', { name: 'active', exact: true }).count(), 1);
    } finally {
      await ctx.close();
    }
  });
});
