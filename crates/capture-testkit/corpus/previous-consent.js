// The cookie-consent step of the release before issue 39 (crates/capture-browser/src/scripts.rs
// at c2c39da), unchanged: kept only to measure the corpus against (tests/corpus_figure.rs).
(() => {
  const visible = (el) => {
    if (!el || !el.isConnected) return false;
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    const s = getComputedStyle(el);
    return s.display !== 'none' && s.visibility !== 'hidden' && s.opacity !== '0';
  };
  let clicked = 0, hidden = 0;
  const clickFirst = (root, sels) => {
    for (const s of sels) {
      let el = null;
      try { el = root.querySelector(s); } catch (e) { continue; }
      if (el && visible(el)) {
        try { el.click(); clicked++; return true; } catch (e) {}
      }
    }
    return false;
  };
  const vendors = [
    ['#onetrust-accept-btn-handler'],
    ['#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll', '#CybotCookiebotDialogBodyButtonAccept'],
    ['#didomi-notice-agree-button'],
    ['.qc-cmp2-summary-buttons button[mode=primary]', '.qc-cmp2-summary-buttons button:last-child'],
    ['#truste-consent-button'],
  ];
  for (const sels of vendors) clickFirst(document, sels);
  const uc = document.querySelector('#usercentrics-root');
  if (uc && uc.shadowRoot) clickFirst(uc.shadowRoot, ['[data-testid=uc-accept-all-button]']);

  const ctxRe = /cookie|consent|gdpr|privacy/i;
  const wordRe = /^(accept|accept all|accept all cookies|accept cookies|accept and close|allow|allow all|allow all cookies|allow cookies|agree|i agree|agree and close|agree & close|i accept|yes,? i agree|got it|ok|okay|understood|alle akzeptieren|akzeptieren|tout accepter|accepter|j'accepte|aceptar|aceptar todo|accetta|accetta tutto|accepteren|alles accepteren)$/i;
  const describe = (el) => {
    const cls = typeof el.className === 'string' ? el.className : (el.getAttribute && el.getAttribute('class')) || '';
    return (el.id || '') + ' ' + cls + ' ' + ((el.getAttribute && el.getAttribute('aria-label')) || '');
  };
  if (!clicked) {
    const cands = document.querySelectorAll('button, a, [role=button], input[type=button], input[type=submit]');
    for (const el of cands) {
      const raw = (el.innerText || el.value || el.getAttribute('aria-label') || '').trim().replace(/\s+/g, ' ');
      if (!raw || raw.length > 40) continue;
      const text = raw.replace(/[.!\u2713\u2714]+$/, '').trim();
      if (!wordRe.test(text)) continue;
      let p = el, inBanner = false;
      for (let i = 0; p && p.nodeType === 1 && i < 12; i++, p = p.parentElement) {
        if (ctxRe.test(describe(p))) { inBanner = true; break; }
      }
      if (inBanner && visible(el)) {
        try { el.click(); clicked++; break; } catch (e) {}
      }
    }
  }

  const hide = (el) => {
    if (el && visible(el)) { el.style.setProperty('display', 'none', 'important'); hidden++; }
  };
  const known = ['#onetrust-consent-sdk', '#CybotCookiebotDialog', '#CybotCookiebotDialogBodyUnderlay', '#didomi-host', '.qc-cmp2-container', '#usercentrics-root', '#truste-consent-track', '.truste_overlay', '.truste_box_overlay'];
  for (const s of known) document.querySelectorAll(s).forEach(hide);
  const generic = document.querySelectorAll('[id*=cookie i], [class*=cookie i], [id*=consent i], [class*=consent i]');
  for (const el of generic) {
    let p = el;
    for (let i = 0; p && p.nodeType === 1 && i < 6 && p !== document.body && p !== document.documentElement; i++, p = p.parentElement) {
      const pos = getComputedStyle(p).position;
      if (pos === 'fixed' || pos === 'sticky') { hide(p); break; }
    }
  }
  if (clicked || hidden) {
    for (const el of [document.documentElement, document.body]) {
      if (!el) continue;
      const s = getComputedStyle(el);
      if (s.overflow === 'hidden' || s.overflowY === 'hidden') el.style.setProperty('overflow', 'visible', 'important');
    }
  }
  return { clicked, hidden };
})()
