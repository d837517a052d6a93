// A live view embedded in a customer's app, in a real headless Chromium: the account allows
// the app's origin (PUT /v1/account/live-view), the app's page frames a control link, the
// session's tab shows in the frame, a click in the frame reaches the session (the page turns
// green, seen in the next frame's pixels); the same link framed by an origin the account did
// not allow is refused by the browser itself (CSP frame-ancestors), and a view link in the
// frame shows the tab but sends no input.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { eventually, launchBrowser, startService } from './support.mjs';

/** White until the button is clicked, green after; the button fills the top left. */
const SESSION_PAGE =
  '<!doctype html><html><head><title>Live</title><style>html,body{margin:0;height:100%;background:#ffffff}' +
  '#go{position:absolute;left:0;top:0;width:100%;height:100%;font-size:30px;background:transparent;border:0}</style></head>' +
  "<body><button id=go onclick=\"document.body.style.background='#00ff00'\">Go</button></body></html>";

/** The customer's app: a page framing `?src=`. */
const appPage = (src) =>
  `<!doctype html><html><head><title>Customer app</title></head><body style="margin:0">` +
  `<iframe id="live" src="${src.replaceAll('&', '&amp;').replaceAll('"', '&quot;')}" width="800" height="600" style="border:0"></iframe></body></html>`;

describe('a live view embedded in a customer app', () => {
  let service, browser, site, key, port;

  const rest = async (method, path, body) => {
    const r = await fetch(`${service.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };

  /** The colour near the bottom left of the frame's latest screencast image (away from the button's label), as [r, g, b]. */
  const centre = (frame) =>
    frame.evaluate(() => {
      const img = document.getElementById('screen');
      if (!img.complete || !img.naturalWidth) return null;
      const c = document.createElement('canvas');
      c.width = img.naturalWidth;
      c.height = img.naturalHeight;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      return Array.from(g.getImageData(10, c.height - 10, 1, 1).data.slice(0, 3));
    });
  const near = (px, [r, g, b]) => px && Math.abs(px[0] - r) < 40 && Math.abs(px[1] - g) < 40 && Math.abs(px[2] - b) < 40;

  /** A running session on the white page, and a live-view link of `mode` for it. */
  const session = async (mode) => {
    const run = await rest('POST', '/v1/runs', {
      startUrl: `http://127.0.0.1:${port}/session`,
      recordVideo: false,
      steps: [{ action: 'wait', ms: 60000 }],
    });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    const id = run.body.id;
    await eventually(async () => (await rest('GET', `/v1/runs/${id}`)).body.status === 'running', 60_000, 'the run to be running');
    const view = await rest('POST', `/v1/runs/${id}/live-view`, { mode, ttl: 600 });
    assert.equal(view.status, 201, JSON.stringify(view.body));
    return { id, url: view.body.url };
  };

  before(async () => {
    site = createServer((req, res) => {
      const u = new URL(req.url, 'http://x');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(u.pathname === '/session' ? SESSION_PAGE : appPage(u.searchParams.get('src') ?? ''));
    });
    await new Promise((res) => site.listen(0, '127.0.0.1', res));
    port = site.address().port;
    [service, browser] = await Promise.all([startService(), launchBrowser()]);
    const email = `embed-${Date.now()}@example.com`;
    service.cli('admin', 'user', 'create', '--email', email, '--plan', 'pro');
    key = service.cli('admin', 'key', 'create', '--email', email, '--name', 'e2e').trim().split('\n').pop().trim();
    const set = await rest('PUT', '/v1/account/live-view', { frameAncestors: [`http://127.0.0.1:${port}`] });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.frameAncestors, [`http://127.0.0.1:${port}`]);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    await new Promise((res) => site?.close(res));
  });

  it('shows the tab in the allowed origin and a click in the frame reaches the session', async () => {
    const { id, url } = await session('control');
    const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    await page.goto(`http://127.0.0.1:${port}/app?src=${encodeURIComponent(url)}`);
    const frame = await eventually(() => page.frames().find((f) => f.url() === url), 20_000, 'the live view in the frame');
    assert.equal(await frame.title(), 'Capture live view');
    await eventually(async () => near(await centre(frame), [255, 255, 255]), 30_000, 'a white frame of the session');
    assert.equal(await frame.locator('#mode').textContent(), 'control');
    // A person's click, in the customer's app, on the picture of the page.
    await page.frameLocator('#live').locator('#screen').click();
    await eventually(async () => near(await centre(frame), [0, 255, 0]), 30_000, 'the frame to show the page turned green');
    await page.close();
    await rest('POST', `/v1/runs/${id}/stop`);
  });

  it('is refused by the browser when framed by an origin the account did not allow', async () => {
    const { id, url } = await session('control');
    const page = await browser.newPage();
    const refusals = [];
    page.on('console', (m) => {
      if (m.text().includes('frame-ancestors')) refusals.push(m.text());
    });
    // Same server, another origin: localhost is not 127.0.0.1.
    await page.goto(`http://localhost:${port}/app?src=${encodeURIComponent(url)}`);
    await eventually(() => refusals.length > 0, 20_000, 'the browser to refuse the frame');
    assert.equal(
      refusals[0].trimEnd(),
      `Framing '${service.base}/' violates the following Content Security Policy directive: "frame-ancestors 'self' http://127.0.0.1:${port}". The request has been blocked.`,
    );
    assert.equal(page.frames().some((f) => f.url() === url && f !== page.mainFrame()), false, 'no live view loaded in the frame');
    await page.close();
    await rest('POST', `/v1/runs/${id}/stop`);
  });

  it('a view link in the frame shows the tab but its clicks reach nothing', async () => {
    const { id, url } = await session('view');
    const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    await page.goto(`http://127.0.0.1:${port}/app?src=${encodeURIComponent(url)}`);
    const frame = await eventually(() => page.frames().find((f) => f.url() === url), 20_000, 'the live view in the frame');
    await eventually(async () => near(await centre(frame), [255, 255, 255]), 30_000, 'a white frame of the session');
    assert.equal(await frame.locator('#mode').textContent(), 'view only');
    await page.frameLocator('#live').locator('#screen').click();
    // Frames keep coming (a screencast frame per change, and the page is idle): wait a while,
    // then the latest one is still white.
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(near(await centre(frame), [255, 255, 255]), 'the session did not change');
    await page.close();
    await rest('POST', `/v1/runs/${id}/stop`);
  });
});
