  // Run after the load event and a short settle: returns every fact the checks need.
  const MAX_IMAGES = 50;
  const MAX_LINKS = 300;
  const MAX_MIXED = 50;
  const MAX_TEXT = 300;
  const MAX_H1 = 10;
  const MAX_OG = 30;
  const MAX_FORMS = 10;
  const MAX_LARGEST = 10;
  const clip = (s, n) => {
    const t = String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
    return t.length > n ? t.slice(0, n) + '…' : t;
  };
  const attr = (sel, name) => {
    const el = document.querySelector(sel);
    return el ? el.getAttribute(name) : null;
  };
  const st = window.__captureAudit || null;
  if (st && typeof st.flush === 'function') st.flush();

  const nav = performance.getEntriesByType('navigation')[0] || null;
  const navigation = nav
    ? {
        ttfbMs: Math.max(0, nav.responseStart - (nav.activationStart || 0)),
        domContentLoadedMs: nav.domContentLoadedEventEnd || null,
        loadMs: nav.loadEventEnd || nav.loadEventStart || null,
        transferBytes: nav.transferSize || 0,
        encodedBodyBytes: nav.encodedBodySize || 0,
        decodedBodyBytes: nav.decodedBodySize || 0,
        protocol: nav.nextHopProtocol || null,
        responseStatus: nav.responseStatus || null,
      }
    : null;

  // Resource type from what the browser knows, most reliable first.
  const typeOf = (e) => {
    const it = e.initiatorType;
    if (it === 'xmlhttprequest' || it === 'fetch' || it === 'beacon') return 'xhr';
    const ct = (e.contentType || '').toLowerCase();
    if (ct.includes('css')) return 'stylesheet';
    if (ct.includes('javascript') || ct.includes('ecmascript')) return 'script';
    if (ct.startsWith('image/')) return 'image';
    if (ct.startsWith('font/') || ct.includes('font-')) return 'font';
    if (ct === 'text/html' && (it === 'iframe' || it === 'frame')) return 'document';
    let path = '';
    try {
      path = new URL(e.name).pathname.toLowerCase();
    } catch (err) {}
    const ext = (path.match(/\.([a-z0-9]+)$/) || [])[1] || '';
    if (['woff', 'woff2', 'ttf', 'otf', 'eot'].includes(ext)) return 'font';
    if (ext === 'css') return 'stylesheet';
    if (['js', 'mjs'].includes(ext)) return 'script';
    if (['png', 'jpg', 'jpeg', 'gif', 'webp', 'avif', 'svg', 'ico', 'bmp'].includes(ext)) return 'image';
    if (it === 'script') return 'script';
    if (it === 'img' || it === 'image' || it === 'input') return 'image';
    if (it === 'iframe' || it === 'frame') return 'document';
    if (it === 'link' && ext === '') return 'stylesheet';
    return 'other';
  };
  const byType = {};
  const add = (type, bytes) => {
    const t = byType[type] || (byType[type] = { count: 0, bytes: 0 });
    t.count++;
    t.bytes += bytes;
  };
  const sized = [];
  if (nav) {
    add('document', nav.transferSize || nav.encodedBodySize || 0);
    sized.push({ url: clip(nav.name, 500), type: 'document', bytes: nav.transferSize || nav.encodedBodySize || 0 });
  }
  const resources = performance.getEntriesByType('resource');
  let opaque = 0;
  for (const e of resources) {
    const type = typeOf(e);
    // transferSize is 0 for cache hits and for other origins without Timing-Allow-Origin.
    const bytes = e.transferSize || e.encodedBodySize || 0;
    if (!bytes) opaque++;
    add(type, bytes);
    sized.push({ url: clip(e.name, 500), type, bytes });
  }
  sized.sort((a, b) => b.bytes - a.bytes);
  let totalBytes = 0;
  let totalRequests = 0;
  for (const k in byType) {
    totalBytes += byType[k].bytes;
    totalRequests += byType[k].count;
  }

  let tbt = 0;
  const fcp = st ? st.fcp : null;
  if (st) {
    for (const t of st.longTasks) {
      if (fcp == null || t.startTime + t.duration > fcp) tbt += Math.max(0, t.duration - 50);
    }
  }
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const vitals = {
    observersInstalled: !!st,
    lcpMs: st ? st.lcp : null,
    lcpSelector: st ? st.lcpSelector : null,
    lcpUrl: st && st.lcpUrl ? clip(st.lcpUrl, 500) : null,
    cls: st ? Math.round(st.cls * 10000) / 10000 : null,
    layoutShifts: st ? st.shifts : [],
    fcpMs: fcp != null ? fcp : paint ? paint.startTime : null,
    tbtMs: st ? Math.round(tbt) : null,
    longTasks: st ? st.longTaskCount : null,
  };

  const titleEl = document.querySelector('title');
  const h1s = Array.from(document.querySelectorAll('h1'));
  const robotsMeta = Array.from(document.querySelectorAll('meta[name="robots" i], meta[name="captureaudit" i]'))
    .map((m) => (m.getAttribute('content') || '').toLowerCase())
    .filter(Boolean);
  const og = {};
  for (const m of document.querySelectorAll('meta[property^="og:" i]')) {
    const p = (m.getAttribute('property') || '').toLowerCase();
    if (p && !(p in og) && Object.keys(og).length < MAX_OG) og[p] = clip(m.getAttribute('content'), MAX_TEXT);
  }
  const seo = {
    title: titleEl ? clip(titleEl.textContent, 500) : null,
    metaDescription: (() => {
      const v = attr('meta[name="description" i]', 'content');
      return v == null ? null : clip(v, 1000);
    })(),
    h1Count: h1s.length,
    h1: h1s.slice(0, MAX_H1).map((h) => clip(h.textContent, MAX_TEXT)),
    canonical: Array.from(document.querySelectorAll('link[rel~="canonical" i]')).map((l) => clip(l.href, 1000)),
    lang: document.documentElement.getAttribute('lang'),
    viewport: attr('meta[name="viewport" i]', 'content'),
    robotsMeta,
    noindex: robotsMeta.some((c) => /(^|[\s,])(noindex|none)([\s,]|$)/.test(c)),
    nofollow: robotsMeta.some((c) => /(^|[\s,])(nofollow|none)([\s,]|$)/.test(c)),
    openGraph: og,
    themeColor: attr('meta[name="theme-color" i]', 'content'),
  };

  const imgs = Array.from(document.images);
  const noAlt = imgs.filter((img) => {
    if (img.hasAttribute('alt')) return false;
    const role = (img.getAttribute('role') || '').toLowerCase();
    return role !== 'presentation' && role !== 'none' && img.getAttribute('aria-hidden') !== 'true';
  });
  const images = {
    total: imgs.length,
    withoutAltCount: noAlt.length,
    withoutAlt: noAlt.slice(0, MAX_IMAGES).map((img) => ({
      selector: cssSelector(img),
      src: clip(img.currentSrc || img.src, 500),
      html: snippet(img, 300),
    })),
  };

  const anchors = Array.from(document.querySelectorAll('a[href], area[href]'));
  const links = [];
  for (const a of anchors) {
    if (links.length >= MAX_LINKS) break;
    let u;
    try {
      u = new URL(a.href, document.baseURI);
    } catch (e) {
      continue;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
    links.push({
      href: clip(u.href, 2000),
      text: clip(a.innerText || a.textContent || a.getAttribute('aria-label') || '', 120),
      nofollow: /(^|\s)nofollow(\s|$)/i.test(a.getAttribute('rel') || ''),
      sameOrigin: u.origin === location.origin,
    });
  }

  const https = location.protocol === 'https:';
  const mixed = [];
  if (https) {
    const seen = new Set();
    const push = (url, kind, selector) => {
      if (mixed.length < MAX_MIXED && url && url.startsWith('http:') && !seen.has(url)) {
        seen.add(url);
        mixed.push({ url: clip(url, 500), kind, selector });
      }
    };
    for (const e of resources) push(e.name, typeOf(e), null);
    const q = 'img[src], script[src], iframe[src], audio[src], video[src], source[src], embed[src], object[data], link[rel~="stylesheet" i][href], link[rel~="icon" i][href]';
    for (const el of document.querySelectorAll(q)) {
      const url = el.src || el.href || el.data || '';
      push(url, el.localName, cssSelector(el));
    }
  }

  const insecureForms = [];
  for (const input of document.querySelectorAll('input[type="password" i]')) {
    if (insecureForms.length >= MAX_FORMS) break;
    const form = input.form;
    const action = form ? form.action || location.href : location.href;
    if (!https || action.startsWith('http:')) {
      insecureForms.push({ selector: cssSelector(form || input), action: clip(action, 500) });
    }
  }

  // What the page shows (title, text, images, link targets) as a 64-bit hash and a length:
  // two addresses that render the same are one page to the crawl, the last of its
  // de-duplication rules. A page showing no text has none (a blank page is no evidence).
  const bodyText = document.body ? (document.body.innerText || '').replace(/\s+/g, ' ').trim() : '';
  let fingerprint = null;
  if (bodyText) {
    const parts = [document.title, bodyText];
    for (const img of document.images) parts.push(img.currentSrc || img.src);
    for (const a of anchors) parts.push(a.href);
    const s = parts.join('\u0001');
    let h1 = 0xdeadbeef;
    let h2 = 0x41c6ce57;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    const hex = (n) => (n >>> 0).toString(16).padStart(8, '0');
    fingerprint = hex(h2) + hex(h1) + ':' + s.length;
  }

  return {
    url: location.href,
    https,
    fingerprint,
    navigation,
    vitals,
    resources: {
      totalBytes,
      totalRequests,
      byType,
      largest: sized.slice(0, MAX_LARGEST),
      withoutSize: opaque,
    },
    seo,
    images,
    linksTotal: anchors.length,
    links,
    mixedContent: mixed,
    insecurePasswordForms: insecureForms,
  };
