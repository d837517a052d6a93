// Two tenants on one browser try to reach each other's clipboard through everything a
// DevTools client has: permission grants, navigator.clipboard, Ctrl+C/V, Shift+Insert,
// `commands`, execCommand, a middle click. Each must see only its own clipboard.
// Usage: node clipboard.mjs <endpoint A> <endpoint B> <site> → one JSON line.
import puppeteer from 'puppeteer-core';

const [epA, epB, site] = process.argv.slice(2);
const A = await puppeteer.connect({ browserWSEndpoint: epA, defaultViewport: null });
const B = await puppeteer.connect({ browserWSEndpoint: epB, defaultViewport: null });
const [pa] = await A.pages();
const [pb] = await B.pages();
await pa.goto(`${site}/clip`);
await pb.goto(`${site}/clip`);
const out = {};
const attempt = async (f) => {
  try {
    return `ok: ${JSON.stringify(await f())}`;
  } catch (e) {
    return `error: ${e.message}`;
  }
};
const chord = async (p, mod, key) => {
  await p.keyboard.down(mod);
  await p.keyboard.press(key);
  await p.keyboard.up(mod);
};
const field = (p, id, value) => p.$eval(`#${id}`, (e, v) => { e.value = v; e.focus(); e.select(); }, value);
const value = (p, id) => p.$eval(`#${id}`, (e) => e.value);
const read = (p) => p.evaluate(() => navigator.clipboard.readText().catch((e) => `rejected ${e.name}`));
// What the field holds once the page has handled the key event (a paste lands
// asynchronously): waits (bounded) for an expected value; an empty field must stay empty
// for 300 ms, and the first thing that landed in it is returned.
const settled = async (p, id, want) => {
  for (let i = 0; i < (want === '' ? 15 : 100); i++) {
    const v = await value(p, id);
    if (want === '' ? v !== '' : v === want) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  return value(p, id);
};
// Every way B tries to paste into a fresh field; what landed.
const pasteAll = async (p, want) => {
  const got = {};
  await field(p, 'f1', '');
  await chord(p, 'Control', 'KeyV');
  got.ctrlV = await settled(p, 'f1', want);
  await field(p, 'f2', '');
  await chord(p, 'Shift', 'Insert');
  got.shiftInsert = await settled(p, 'f2', want);
  await field(p, 'f3', '');
  const s = await p.createCDPSession();
  await s.send('Input.dispatchKeyEvent', { type: 'rawKeyDown', key: 'v', code: 'KeyV', windowsVirtualKeyCode: 86, commands: ['paste'] });
  await s.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'v', code: 'KeyV', windowsVirtualKeyCode: 86 });
  got.commandsPaste = await settled(p, 'f3', want);
  await s.detach();
  got.execPaste = await p.$eval('#f4', (e) => { e.value = ''; e.focus(); return `${document.execCommand('paste')}:${e.value}`; });
  got.navigator = await read(p);
  got.pasteEvent = await p.evaluate(() => window.lastPaste);
  return got;
};

// A grants itself the clipboard (refused), writes with navigator.clipboard, then copies
// selected text with Ctrl+C.
out.grantA = await attempt(() => A.defaultBrowserContext().overridePermissions(site, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']));
// The raw command on the browser's connection (what puppeteer has no helper for).
out.setPermissionA = await attempt(() => pa._client().connection().send('Browser.setPermission', { permission: { name: 'clipboard-read' }, setting: 'granted' }));
out.writeA = await pa.evaluate(() => navigator.clipboard.writeText('A-NAV-1').then(() => 'written', (e) => `rejected ${e.name}`));
out.readA1 = await read(pa);
out.bAfterNav = await pasteAll(pb, '');
await field(pa, 'f1', 'A-KBD-2');
await chord(pa, 'Control', 'KeyC');
out.readA2 = await read(pa);
out.bAfterKbd = await pasteAll(pb, '');
out.middleB = await attempt(async () => {
  const box = await (await pb.$('#f1')).boundingBox();
  await pb.mouse.click(box.x + 5, box.y + 5, { button: 'middle' });
  return value(pb, 'f1');
});
// The other direction: B copies (Ctrl+X on its own text); A keeps its own.
await field(pb, 'f1', 'B-OWN');
await chord(pb, 'Control', 'KeyX');
out.bFieldAfterCut = await value(pb, 'f1');
out.aAfterB = await pasteAll(pa, 'A-KBD-2');
out.bOwn = await pasteAll(pb, 'B-OWN');
// A page's own copy button (execCommand('copy') in a click handler) and its copy handler.
await pa.click('#copy');
out.readA3 = await read(pa);
out.copyEventA = await pa.evaluate(() => window.lastCopy);
out.readB3 = await read(pb);
await A.disconnect();
await B.disconnect();
console.log(JSON.stringify(out));
