// A live run's DevTools client that makes its page log about 5 MB/s with Runtime events on
// and then stops reading its socket for SECONDS (default 15), then leaves. Prints one JSON line:
// when the server closed it (if it did), with which code and reason. Used by slow-reader.sh.
// Usage: node slow-reader.mjs <connectUrl> [seconds]
import WebSocket from 'ws';

const [url, secs = '15'] = process.argv.slice(2);
const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 0 });
let id = 0;
const waiting = new Map();
const call = (method, params = {}, sessionId) => new Promise((resolve) => {
  const n = ++id;
  waiting.set(n, resolve);
  ws.send(JSON.stringify({ id: n, method, params, ...(sessionId ? { sessionId } : {}) }));
});
ws.on('message', (data) => {
  const m = JSON.parse(data.toString());
  if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
});
const out = { closed: null };
const started = Date.now();
ws.on('close', (code, reason) => { out.closed = { afterMs: Date.now() - started, code, reason: reason.toString() }; });
await new Promise((r) => ws.once('open', r));
const targets = await call('Target.getTargets');
const page = targets.result.targetInfos.find((t) => t.type === 'page').targetId;
const { result: { sessionId } } = await call('Target.attachToTarget', { targetId: page, flatten: true });
await call('Runtime.enable', {}, sessionId);
// 50 messages of 100 KB a second: about 5 MB/s.
await call('Runtime.evaluate', { expression: "setInterval(() => console.log('x'.repeat(100000)), 20); 1" }, sessionId);
// Stop reading: the socket's buffers fill, then the server's side waits on us.
ws._socket.pause();
await new Promise((r) => setTimeout(r, Number(secs) * 1000));
ws._socket.resume();
// Read what is left for a moment (a close frame, if the server sent one), then leave.
await new Promise((r) => { if (out.closed) r(); else { ws.once('close', r); setTimeout(r, 3000); } });
ws.terminate();
console.log(JSON.stringify(out));
