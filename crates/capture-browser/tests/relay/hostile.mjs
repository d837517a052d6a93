// A hostile client on the raw protocol: everything that would escape the session's
// context or reach the machine. Prints each attempt's answer as JSON.
import WebSocket from 'ws';

const [endpoint, base, service] = process.argv.slice(2);
const ws = new WebSocket(endpoint, { perMessageDeflate: false });
await new Promise((ok, no) => { ws.once('open', ok); ws.once('error', no); });
let next = 1;
const waiting = new Map();
const events = [];
ws.on('message', (data) => {
  const m = JSON.parse(String(data));
  if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); } else events.push(m);
});
const send = (method, params = {}, sessionId) => new Promise((ok) => {
  const id = next++;
  waiting.set(id, ok);
  ws.send(JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }));
});
const outcome = (m) => (m.error ? 'error: ' + m.error.message : m.result);
const out = {};
out.createContext = outcome(await send('Target.createBrowserContext'));
out.close = outcome(await send('Browser.close'));
out.crash = outcome(await send('Browser.crash'));
out.commandLine = outcome(await send('Browser.getBrowserCommandLine'));
out.systemInfo = outcome(await send('SystemInfo.getProcessInfo'));
out.tracing = outcome(await send('Tracing.start'));
out.fileTarget = outcome(await send('Target.createTarget', { url: 'file:///etc/passwd' }));
out.foreignContextTarget = outcome(await send('Target.createTarget', { url: 'about:blank', browserContextId: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }));
out.foreignAttach = outcome(await send('Target.attachToTarget', { targetId: 'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB', flatten: true }));
out.browserTarget = outcome(await send('Target.attachToBrowserTarget'));
out.contexts = outcome(await send('Target.getBrowserContexts'));
out.download = outcome(await send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: '/tmp' }));
const targets = (await send('Target.getTargets')).result.targetInfos;
out.targetContexts = [...new Set(targets.map((t) => t.browserContextId))].length;
const page = targets.find((t) => t.type === 'page');
const { sessionId } = (await send('Target.attachToTarget', { targetId: page.targetId, flatten: true })).result;
out.attached = typeof sessionId === 'string';
out.fileNavigate = outcome(await send('Page.navigate', { url: 'file:///etc/passwd' }, sessionId));
out.fileInput = outcome(await send('DOM.setFileInputFiles', { files: ['/etc/passwd'], backendNodeId: 1 }, sessionId));
out.loadResource = outcome(await send('Network.loadNetworkResource', { url: 'file:///etc/passwd', options: { disableCache: true, includeCredentials: false } }, sessionId));
out.sessionTarget = outcome(await send('Target.createTarget', { url: 'about:blank' }, sessionId));
await send('Page.enable', {}, sessionId);
const nav = await send('Page.navigate', { url: service + '/red' }, sessionId);
out.privateNavigate = nav.error ? 'error: ' + nav.error.message : (nav.result.errorText || 'loaded');
// Page.navigate answers once the navigation commits; the error page's text follows.
for (let i = 0; i < 50; i++) {
  const evaluated = await send('Runtime.evaluate', { expression: 'document.body ? document.body.innerText : ""', returnByValue: true }, sessionId);
  out.privateBody = evaluated.result?.result?.value ?? null;
  if (out.privateBody) break;
  await new Promise((r) => setTimeout(r, 100));
}
out.unknownSession = outcome(await send('Runtime.evaluate', { expression: '1' }, 'CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC'));
out.pageGoesOn = outcome(await send('Runtime.evaluate', { expression: '6 * 7', returnByValue: true }, sessionId)).result.value;
ws.close();
console.log(JSON.stringify(out));
