// Type-checked (not run) by `npm test`: the README's examples against the built declarations
// (dist/index.d.ts), so a change that breaks what users write fails the build.
import {
  CaptureClient,
  CaptureError,
  Job,
  JobFailedError,
  NotFoundError,
  RateLimitError,
  ValidationError,
  WebhookVerificationError,
  renderLink,
  verifyWebhook,
  type Balance,
  type CursorPage,
  type MonitorCheck,
  type ScreenshotRequest,
  type WebhookEventType,
  type models,
} from '../dist/index.js';

declare const rawBody: Uint8Array;
declare const orderId: string;

export async function readme(): Promise<void> {
  const client = new CaptureClient({ baseUrl: 'https://capture.example.com', apiKey: 'sk_live_x' });
  const job: Job = await client.screenshots.create({ url: 'https://example.com', fullPage: true, format: 'png' });
  await job.wait({ timeoutMs: 120_000 });
  const status: models.JobStatus = job.status;
  const title: string | null | undefined = job.pageTitle;
  const finalUrl: string | undefined = job.metadata?.finalUrl;
  const bytes: Uint8Array = await job.download();
  const ab: ArrayBufferLike = bytes.buffer;
  void [status, title, finalUrl, ab];

  for await (const j of client.screenshots.list({ limit: 50 })) void j.id;
  const page: CursorPage<Job> = await client.screenshots.list({ limit: 20 }).firstPage();
  void page.nextCursor;
  const uploaded = await client.screenshots.upload(bytes, { filename: 'shot.png', contentType: 'image/png' });
  const share = await client.screenshots.share(uploaded.id);
  void share.shareUrl;

  try {
    await client.screenshots.create({ url: 'https://example.com', width: -5 });
  } catch (e) {
    if (e instanceof ValidationError) void [e.code, e.field, e.reason];
    else if (e instanceof RateLimitError) void [e.code, e.retryAfter];
    else if (e instanceof NotFoundError) void e.code;
    else if (e instanceof JobFailedError) void (e.resource as Job).error;
    else if (e instanceof CaptureError) void [e.status, e.code, e.message, e.requestId, e.details];
  }

  await client.screenshots.create({ url: 'https://example.com' }, { idempotencyKey: `order-${orderId}` });
  await client.screenshots.get('scr_x', { signal: AbortSignal.timeout(5000), maxRetries: 0 });

  const batch = await client.screenshots.bulk({
    defaults: { width: 1280, height: 800, format: 'webp', blockAds: true },
    requests: [{ url: 'https://example.com/' }, { url: 'https://example.com/pricing', fullPage: true }],
  });
  await batch.waitAll();
  const files: Uint8Array[] = await Promise.all(batch.jobs.filter((j) => j.status === 'done').map((j) => j.download()));
  void files;

  const key = await client.renderKeys.create({ name: 'website' });
  const src: string = await renderLink({
    baseUrl: 'https://capture.example.com',
    keyId: key.id,
    secret: key.secret,
    url: 'https://example.com',
    width: 1200,
    hideSelectors: ['#chat'],
    expires: new Date(Date.now() + 7 * 86400e3),
  });
  void src;

  const endpoint = await client.webhooks.create({ url: 'https://example.com/hooks/capture', events: ['screenshot.completed'] });
  const secret: string = endpoint.secret;
  try {
    const event = await verifyWebhook(new Headers(), rawBody, secret, { toleranceSec: 300 });
    const type: WebhookEventType | (string & {}) = event.type;
    if (event.type === 'screenshot.completed') void event.data.publicUrl;
    void [type, event.id];
  } catch (e) {
    if (e instanceof WebhookVerificationError) void e.reason;
  }
  await verifyWebhook({ 'webhook-signature': 't=1,v1=00' }, 'body', secret);

  const audit = await client.audits.create({ url: 'https://example.com', reportType: 'full_site', maxPages: 10 });
  await audit.wait({ onEvent: (e) => e.event === 'progress' && console.log(e.data) });
  void [audit.scores?.seo, audit.reportUrl, audit.pdfUrl];

  const monitor = await client.monitors.create({
    name: 'Pricing',
    url: 'https://shop.example/pricing',
    schedule: { every: '1h' },
    capture: { width: 1280, blockAds: true },
    compare: 'both',
    ignoreSelectors: ['.clock'],
  });
  for await (const check of client.monitors.checks(monitor.id)) {
    const c: MonitorCheck = check;
    void [c.status, c.diffRatio];
  }
  await client.monitors.pause(monitor.id);

  await client.proxies.create({ name: 'office', url: 'http://bob:s3cret@proxy.example:3128' });
  await client.screenshots.create({ url: 'https://intranet.example', proxy: 'office' });

  const balance: Balance = await client.account.balance();
  void `${balance.usage.used} of ${balance.usage.limit ?? '∞'} ${balance.unit} this month`;

  const options: ScreenshotRequest = { url: 'https://example.com', waitUntil: 'networkidle' };
  void options;
  const run = await client.request<{ id: string }>('GET', '/v1/runs/{id}', { params: { id: 'run_x' } });
  void run.id;

  // @ts-expect-error a format the API does not take
  await client.screenshots.create({ url: 'https://example.com', format: 'bmp' });
  // @ts-expect-error url is required
  await client.screenshots.create({ width: 100 });
}
