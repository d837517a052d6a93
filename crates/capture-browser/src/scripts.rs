//! JavaScript run inside captured pages.

/// Wait (MutationObserver + a slow poll) up to MS ms for a selector; resolves
/// true / false, or the string 'invalid' for a bad selector.
pub(crate) fn wait_selector(sel_json: &str, ms: u64) -> String {
    format!(
        r#"((sel, ms) => new Promise((resolve) => {{
  const q = () => document.querySelector(sel);
  try {{ if (q()) return resolve(true); }} catch (e) {{ return resolve('invalid'); }}
  let done = false;
  const finish = (v) => {{ if (done) return; done = true; mo.disconnect(); clearInterval(iv); clearTimeout(to); resolve(v); }};
  const check = () => {{ if (q()) finish(true); }};
  const mo = new MutationObserver(check);
  mo.observe(document, {{ childList: true, subtree: true, attributes: true, characterData: true }});
  const iv = setInterval(check, 100);
  const to = setTimeout(() => finish(false), ms);
}}))({sel_json}, {ms})"#
    )
}

/// The page's visible text (the body's `innerText`, else the document's text).
pub(crate) const PAGE_TEXT: &str = "(document.body && document.body.innerText) || (document.documentElement && document.documentElement.textContent) || ''";

/// `blockResources: websocket`: every WebSocket the page opens fails as a blocked one would.
pub(crate) const NO_WEBSOCKETS: &str = r#"(() => {
  const refuse = function () { throw new DOMException('WebSocket connections are blocked by this capture (blockResources)', 'SecurityError'); };
  Object.defineProperty(window, 'WebSocket', { value: refuse, writable: false, configurable: false });
})()"#;

/// Neutralise the page's page breaks (`fitOnePage`: everything on one sheet).
pub(crate) const NO_PAGE_BREAKS: &str = r#"(() => {
  const style = document.createElement('style');
  style.textContent = '*, *::before, *::after { break-before: auto !important; break-after: auto !important; break-inside: auto !important; page-break-before: auto !important; page-break-after: auto !important; page-break-inside: auto !important; }';
  (document.head || document.documentElement).appendChild(style);
  return true;
})()"#;

/// The document's height in CSS px once laid out `width_px` wide (for `fitOnePage`): the
/// viewport is left alone; the body is measured at that width in print media.
pub(crate) fn content_height(width_px: f64) -> String {
    format!(
        r#"(() => {{
  const root = document.documentElement;
  const before = root.style.width;
  root.style.width = '{width_px}px';
  const h = Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0);
  root.style.width = before;
  return h;
}})()"#
    )
}

/// Hide the elements of a list of selectors (one rule each, so one bad selector cannot void
/// the others); the index of the first the browser cannot parse, or -1.
pub(crate) fn hide_selectors(list_json: &str) -> String {
    format!(
        r#"((list) => {{
  for (let i = 0; i < list.length; i++) {{
    try {{ document.querySelectorAll(list[i]); }} catch (e) {{ return i; }}
  }}
  const style = document.createElement('style');
  style.setAttribute('data-capture', 'hide');
  style.textContent = list.map((s) => s + ' {{ visibility: hidden !important; }}').join('\n');
  (document.head || document.documentElement).appendChild(style);
  return -1;
}})({list_json})"#
    )
}

/// The classes and ids on the page (for the filter lists' generic element rules), at most
/// 20,000 of each.
pub(crate) const CLASSES_AND_IDS: &str = r#"(() => {
  const c = new Set(), i = new Set();
  for (const el of document.querySelectorAll('[class],[id]')) {
    if (el.id) i.add(el.id);
    for (const k of el.classList) c.add(k);
    if (c.size > 20000 || i.size > 20000) break;
  }
  return { classes: [...c], ids: [...i] };
})()"#;

/// Hide what the filter lists name (`display: none`, as content blockers do): one rule per
/// selector, so a selector this browser cannot parse is skipped alone; and collapse the
/// frames, images and embeds whose request was refused. Returns how many rules took.
pub(crate) fn hide_blocked(selectors_json: &str, blocked_urls_json: &str) -> String {
    format!(
        r#"((selectors, blocked) => {{
  const style = document.createElement('style');
  style.setAttribute('data-capture', 'blocklists');
  (document.head || document.documentElement).appendChild(style);
  let rules = 0;
  for (const s of selectors) {{
    try {{ style.sheet.insertRule(s + ' {{ display: none !important; }}', style.sheet.cssRules.length); rules++; }} catch (e) {{}}
  }}
  const refused = new Set(blocked);
  for (const el of document.querySelectorAll('iframe[src], img[src], embed[src], object[data], video[src]')) {{
    const src = el.src || el.data || el.currentSrc;
    if (src && refused.has(src)) el.style.setProperty('display', 'none', 'important');
  }}
  return rules;
}})({selectors_json}, {blocked_urls_json})"#
    )
}

/// Scroll an element into view and return its box in document coordinates, or null.
pub(crate) fn element_box(sel_json: &str) -> String {
    format!(
        r#"((sel) => {{
  const el = document.querySelector(sel);
  if (!el) return null;
  el.scrollIntoView({{ block: 'center', inline: 'center', behavior: 'instant' }});
  const r = el.getBoundingClientRect();
  return {{ x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height }};
}})({sel_json})"#
    )
}

/// Scroll an element into view and return its centre, or null.
pub(crate) fn element_centre(sel_json: &str) -> String {
    format!(
        r#"((sel) => {{
  const el = document.querySelector(sel);
  if (!el) return null;
  el.scrollIntoView({{ block: 'center', inline: 'center', behavior: 'instant' }});
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) {{ el.click(); return {{ clicked: true }}; }}
  return {{ x: r.left + r.width / 2, y: r.top + r.height / 2 }};
}})({sel_json})"#
    )
}

/// Scroll through the page in viewport steps (lazy content), back to top; returns the
/// document height in CSS px.
pub(crate) fn scroll_through(max_css: u64) -> String {
    format!(
        r#"(async (maxH) => {{
  // One frame per step: the timeout runs after the frame's rendering update, where
  // intersection observers (and lazy image loading) see the new scroll position.
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const height = () => Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
  const step = Math.max(200, innerHeight);
  const started = Date.now();
  for (let y = step; y < Math.min(height(), maxH) && Date.now() - started < 4000; y += step) {{
    scrollTo(0, y);
    await frame();
  }}
  scrollTo(0, 0);
  await frame();
  return height();
}})({max_css})"#
    )
}

/// Wait for fonts and every rendered image (bounded); returns the document height.
pub(crate) const SETTLE: &str = r#"(async (ms) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  await frame();
  const imgs = Array.from(document.images).filter((i) => i.getClientRects().length > 0);
  const one = (img) => (img.complete ? Promise.resolve() : new Promise((r) => {
      img.addEventListener('load', r, { once: true });
      img.addEventListener('error', r, { once: true });
    })).then(() => (img.decode ? img.decode().catch(() => {}) : null));
  const all = Promise.all([document.fonts ? document.fonts.ready : null, ...imgs.map(one)]);
  await Promise.race([all, new Promise((r) => setTimeout(r, ms))]);
  await frame();
  return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
})(5000)"#;

/// Resolve once the document's load event has fired.
pub(crate) const WAIT_LOAD: &str = r#"document.readyState === 'complete' || new Promise((r) => addEventListener('load', () => r(true), { once: true }))"#;

/// Title and final URL, each cut in the page to a bounded length (a page may set a title of
/// megabytes), never inside a surrogate pair. The service cuts the title again to
/// `capture_core::limits::PAGE_TITLE_MAX` characters.
pub(crate) const TITLE_URL: &str = r#"(() => {
  const cut = (s, n) => s.length > n ? s.slice(0, n).replace(/[\uD800-\uDBFF]$/, '') : s;
  return [cut(document.title || '', 2048), cut(location.href, 16384)];
})()"#;

/// What the page says of itself, each value cut in the page (the service caps them again):
/// title, URL, description, canonical, lang, icon, and the `og:` and `twitter:` tags.
pub(crate) const METADATA: &str = r#"(() => {
  const cut = (s, n) => (s == null ? null : (s.length > n ? s.slice(0, n).replace(/[\uD800-\uDBFF]$/, '') : s));
  const abs = (u) => { try { return u ? new URL(u, location.href).href : null; } catch (e) { return null; } };
  const meta = (attr, name) => {
    for (const m of document.querySelectorAll('meta[' + attr + ']')) {
      if ((m.getAttribute(attr) || '').toLowerCase() === name) return cut(m.getAttribute('content'), 4096);
    }
    return null;
  };
  const link = (rel) => {
    for (const l of document.querySelectorAll('link[rel][href]')) {
      if (l.rel.toLowerCase().split(/\s+/).includes(rel)) return abs(l.getAttribute('href'));
    }
    return null;
  };
  const og = {}, twitter = {};
  for (const k of ['title', 'description', 'image', 'url', 'type', 'site_name']) og[k] = meta('property', 'og:' + k) || meta('name', 'og:' + k);
  if (og.image) og.image = abs(og.image);
  if (og.url) og.url = abs(og.url);
  for (const k of ['card', 'title', 'description', 'image', 'site', 'creator']) twitter[k] = meta('name', 'twitter:' + k) || meta('property', 'twitter:' + k);
  if (twitter.image) twitter.image = abs(twitter.image);
  const isHttp = location.protocol === 'http:' || location.protocol === 'https:';
  return {
    title: cut(document.title || '', 2048),
    url: cut(location.href, 16384),
    description: meta('name', 'description'),
    canonical: link('canonical'),
    lang: cut(document.documentElement.getAttribute('lang'), 64),
    favicon: link('icon') || link('apple-touch-icon') || (isHttp ? abs('/favicon.ico') : null),
    og, twitter,
  };
})()"#;

/// Loaded into spare pages to warm their renderer (fonts, layout, painting).
pub(crate) const WARM_UP_HTML: &str = "<!doctype html><html><head><style>body{margin:8px;font-family:sans-serif}</style></head><body><h1>Warm</h1><p>Abc <b>bold</b> <i>italic</i> <span style='font-family:serif'>serif</span> <code>mono</code> 0123456789</p></body></html>";
