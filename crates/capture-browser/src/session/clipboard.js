// The session's clipboard in the page (see clipboard.rs). Runs in the main world of every
// document of the session before the page's own scripts; talks to the session's store
// through the DevTools binding `__captureClipboard`. Chromium's own clipboard (one per
// browser process, shared by every tenant) is never read or written from here.
(() => {
  const NAME = '__captureClipboard';
  const KEY = Symbol.for(NAME);
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return;
  const binding = window[NAME];
  const pending = new Map();
  let seq = 0;
  const notAllowed = () => new DOMException('the clipboard is not available', 'NotAllowedError');
  const request = (op, text) => new Promise((resolve, reject) => {
    const id = ++seq;
    pending.set(id, { resolve, reject });
    try {
      (window[NAME] || binding)(JSON.stringify({ id, op, text }));
    } catch (e) {
      pending.delete(id);
      reject(notAllowed());
    }
  });
  const read = () => request('read');
  const write = (text) => request('write', String(text)).then(() => undefined);

  // The element a clipboard action acts on: the focused one, through shadow roots and
  // same-origin frames (a cross-origin frame's own copy of this script acts there).
  const focused = () => {
    let doc = document;
    let el = doc.activeElement;
    for (;;) {
      if (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; continue; }
      if (el && (el.tagName === 'IFRAME' || el.tagName === 'FRAME')) {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        if (inner && inner.defaultView && inner.defaultView[KEY]) return { shim: inner.defaultView[KEY] };
        return null;
      }
      return { el: el || doc.body };
    }
  };
  const isText = (el) => el && ((el.tagName === 'INPUT' && /^(text|search|url|tel|password|email|number|)$/i.test(el.type || '')) || el.tagName === 'TEXTAREA');
  const editable = (el) => el && (isText(el) ? !el.readOnly && !el.disabled : el.isContentEditable);
  const selected = (el) => {
    if (isText(el)) {
      try { return el.value.slice(el.selectionStart, el.selectionEnd); } catch (e) { return ''; }
    }
    const s = el && el.ownerDocument ? el.ownerDocument.getSelection() : getSelection();
    return s ? s.toString() : '';
  };
  const ours = new WeakSet();
  const clipboardEvent = (type, data, target) => {
    const dt = new DataTransfer();
    if (data !== undefined) dt.setData('text/plain', data);
    const ev = new ClipboardEvent(type, { clipboardData: dt, bubbles: true, cancelable: true, composed: true });
    ours.add(ev);
    target.dispatchEvent(ev);
    return ev;
  };

  // copy / cut: the page's handlers may put their own data (and cancel); otherwise the
  // selection is copied. Either way it goes to the session's clipboard.
  const copy = (op, el) => {
    const text = selected(el);
    const ev = clipboardEvent(op, undefined, el);
    if (ev.defaultPrevented) {
      if (ev.clipboardData.types.includes('text/plain')) write(ev.clipboardData.getData('text/plain'));
      return;
    }
    if (!text) return;
    write(text);
    if (op === 'cut' && editable(el)) el.ownerDocument.execCommand('delete');
  };
  // paste: the page's handlers see the session's clipboard; otherwise it is inserted.
  const paste = async (el) => {
    const text = await read().catch(() => '');
    const ev = clipboardEvent('paste', text, el);
    if (!ev.defaultPrevented && text && editable(el)) {
      if (el.focus) el.focus();
      el.ownerDocument.execCommand('insertText', false, text);
    }
  };
  const act = (op, el) => (op === 'paste' ? paste(el) : copy(op, el));
  // An editing command the service was asked to run (`commands` of a key event).
  const command = (op) => {
    const f = focused();
    if (!f) return false;
    if (f.shim) return f.shim.command(op);
    act(op, f.el);
    return true;
  };
  Object.defineProperty(window, KEY, {
    value: Object.freeze({
      settle(id, ok, value) {
        const p = pending.get(id);
        if (!p) return;
        pending.delete(id);
        if (ok) p.resolve(value); else p.reject(notAllowed());
      },
      command,
    }),
  });

  // navigator.clipboard: the session's clipboard (text; other types are dropped).
  const C = window.Clipboard && window.Clipboard.prototype;
  if (C) {
    const def = (name, fn) => Object.defineProperty(C, name, { value: fn, writable: true, configurable: true, enumerable: true });
    def('readText', function readText() { return read(); });
    def('writeText', function writeText(text) { return write(text); });
    def('read', function read_() {
      return read().then((t) => [new ClipboardItem({ 'text/plain': new Blob([t], { type: 'text/plain' }) })]);
    });
    def('write', async function write_(items) {
      let text = '';
      for (const item of items || []) {
        if (item && item.types && item.types.includes('text/plain')) {
          text = await (await item.getType('text/plain')).text();
          break;
        }
      }
      return write(text);
    });
  }
  // The session's clipboard needs no permission: say so to pages that ask first.
  const P = window.Permissions && window.Permissions.prototype;
  if (P && P.query) {
    const query = P.query;
    Object.defineProperty(P, 'query', {
      value: function q(desc) {
        const name = desc && desc.name;
        if (typeof name === 'string' && name.startsWith('clipboard')) {
          return Promise.resolve({ name, state: 'granted', onchange: null, addEventListener() {}, removeEventListener() {}, dispatchEvent() { return true; } });
        }
        return query.apply(this, arguments);
      },
      writable: true, configurable: true, enumerable: true,
    });
  }

  // Keyboard shortcuts Chromium maps to clipboard commands on Linux. The service sends
  // them with key code 0 so Chromium runs no command of its own; here they act on the
  // session's clipboard (and get their key code back for the page's handlers).
  const CODES = { KeyC: 67, KeyV: 86, KeyX: 88, Insert: 45, Delete: 46 };
  const shortcut = (e) => {
    if (e.altKey || e.metaKey) return null;
    const k = e.code || '';
    const c = e.ctrlKey, s = e.shiftKey;
    if (c && !s && (k === 'KeyC' || k === 'Insert')) return 'copy';
    if ((c && !s && k === 'KeyX') || (!c && s && k === 'Delete')) return 'cut';
    if ((c && k === 'KeyV') || (!c && s && k === 'Insert')) return 'paste';
    return null;
  };
  addEventListener('keydown', (e) => {
    if (!e.isTrusted) return;
    const op = shortcut(e);
    if (!op) return;
    let cancelled = false;
    if (e.keyCode === 0 && CODES[e.code]) {
      Object.defineProperty(e, 'keyCode', { value: CODES[e.code] });
      Object.defineProperty(e, 'which', { value: CODES[e.code] });
    } else {
      // Not neutralised: stop Chromium's own command; the page's cancel is still seen.
      const pd = e.preventDefault;
      pd.call(e);
      Object.defineProperty(e, 'preventDefault', { value() { cancelled = true; } });
      Object.defineProperty(e, 'defaultPrevented', { get() { return cancelled; } });
    }
    const target = e.composedPath()[0] || e.target;
    setTimeout(() => { if (!cancelled && !e.defaultPrevented) act(op, target); }, 0);
  }, true);
  // Clipboard events Chromium itself raises (execCommand('copy') in a click handler): the
  // page sees ours instead, and Chromium's clipboard is left alone.
  for (const type of ['copy', 'cut', 'paste']) {
    addEventListener(type, (e) => {
      if (ours.has(e) || !e.isTrusted) return;
      e.preventDefault();
      e.stopImmediatePropagation();
      act(type, e.composedPath()[0] || e.target);
    }, true);
  }
  // A middle click pastes Linux's selection buffer (also shared by the whole browser).
  addEventListener('mouseup', (e) => { if (e.isTrusted && e.button === 1) e.preventDefault(); }, true);
})();
