//! What still covers the page once everything that removes pop-ups has run: a fixed or sticky
//! element over more than a quarter of the viewport, on top of the page (what a viewer sees
//! at the viewport's points is that element). Captures report it (`overlay-remaining`,
//! `metadata.overlay`) rather than pass a covered page off as clean; `hidePopups` hides it and
//! gives the page back the scrolling it locked.
//!
//! Found by sampling: the top-most element at a 5×5 grid of the viewport's points
//! (`document.elementFromPoint`, which sees what is painted on top), climbed to its outermost
//! fixed or sticky ancestor. A layer that holds the page itself (a fixed app shell with most of
//! the page's text, or its `main`) is the layout, not an overlay.

use serde::Deserialize;

/// Evaluated as `(OVERLAYS)(hide)`: `{found: [{selector, coverage}], hidden}`.
pub(crate) const OVERLAYS: &str = r#"((hide) => {
  const W = innerWidth, H = innerHeight;
  if (!W || !H || !document.body) return { found: [], hidden: 0 };
  const pageText = (document.body.innerText || '').length;
  const fixedish = (el) => { const p = getComputedStyle(el).position; return p === 'fixed' || p === 'sticky'; };
  const visible = (el) => { const s = getComputedStyle(el); return s.display !== 'none' && s.visibility !== 'hidden' && Number(s.opacity) > 0.05; };
  const cover = (el) => {
    const r = el.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, W) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, H) - Math.max(r.top, 0));
    return (w * h) / (W * H);
  };
  const layout = (el) => {
    if (el.querySelector('main,article,[role=main]')) return true;
    const t = (el.innerText || '').length;
    return pageText > 400 && t > pageText * 0.5;
  };
  const esc = (s) => (window.CSS && CSS.escape) ? CSS.escape(s) : s.replace(/[^a-zA-Z0-9_-]/g, '\\$&');
  const selector = (el) => {
    const parts = [];
    for (let e = el; e && e.nodeType === 1 && parts.length < 4; e = e.parentElement) {
      if (e.id) { parts.unshift('#' + esc(e.id)); break; }
      let p = e.tagName.toLowerCase();
      const cls = typeof e.className === 'string' ? e.className.trim().split(/\s+/).filter(Boolean).slice(0, 2) : [];
      if (cls.length) p += '.' + cls.map(esc).join('.');
      const parent = e.parentElement;
      if (parent) {
        const same = Array.from(parent.children).filter((c) => c.tagName === e.tagName);
        if (same.length > 1) p += ':nth-of-type(' + (same.indexOf(e) + 1) + ')';
      }
      parts.unshift(p);
      if (e === document.body) break;
    }
    return parts.join(' > ');
  };
  const seen = new Set();
  const found = [];
  for (let i = 0; i < 5; i++) for (let j = 0; j < 5; j++) {
    const x = W * (i + 0.5) / 5, y = H * (j + 0.5) / 5;
    let top = document.elementFromPoint(x, y);
    // Inside a shadow root, the host is the page's element.
    let over = null;
    for (let e = top; e && e !== document.body && e !== document.documentElement; e = e.parentElement || (e.getRootNode() && e.getRootNode().host) || null) {
      if (e.nodeType === 1 && fixedish(e)) over = e;
    }
    if (!over || seen.has(over)) continue;
    seen.add(over);
    const c = cover(over);
    if (c > 0.25 && visible(over) && !layout(over)) found.push({ el: over, selector: selector(over), coverage: Math.round(c * 1000) / 1000 });
  }
  found.sort((a, b) => b.coverage - a.coverage);
  let hidden = 0;
  const taller = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight) > H + 1;
  if (hide && (found.length || taller)) {
    for (const f of found) { f.el.style.setProperty('display', 'none', 'important'); hidden++; }
    // A modal's scroll lock (overflow hidden, or the body fixed in place), also one left by a
    // pop-up the filter lists hid: a page taller than the view that cannot scroll.
    for (const el of [document.documentElement, document.body]) {
      const s = getComputedStyle(el);
      if (s.overflow === 'hidden' || s.overflowY === 'hidden') el.style.setProperty('overflow', 'visible', 'important');
      if (s.position === 'fixed') { el.style.setProperty('position', 'static', 'important'); el.style.setProperty('top', 'auto', 'important'); }
    }
    for (const cls of ['modal-open', 'no-scroll', 'noscroll', 'overflow-hidden', 'is-locked', 'scroll-lock']) {
      document.documentElement.classList.remove(cls);
      document.body.classList.remove(cls);
    }
  }
  return { found: found.map((f) => ({ selector: f.selector, coverage: f.coverage })), hidden };
})"#;

/// One overlay found.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Found {
    pub selector: String,
    pub coverage: f64,
}

/// [`OVERLAYS`]'s answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct Overlays {
    #[serde(default)]
    pub found: Vec<Found>,
    #[serde(default)]
    pub hidden: u32,
}

/// The script to evaluate: find (and with `hide`, hide) what covers the page.
pub(crate) fn script(hide: bool) -> String {
    format!("({OVERLAYS})({hide})")
}
