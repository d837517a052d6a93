//! The lists' procedural and action rules (`#?#` / `##…:has-text()`, `:upward()`,
//! `:matches-css()`, `:xpath()`, `:remove()`, `:style()`…), as the adblock engine hands them
//! over (JSON of its `ProceduralOrActionFilter`), applied in the page by [`RUN`]: each rule's
//! operators narrow a set of elements from the document down, then its action (hide by
//! default) is applied. An operator the runner does not know skips its rule, never the page.

/// Evaluated as `(RUN)(rules)` with `rules` the JSON strings; returns how many elements were
/// acted on.
pub(crate) const RUN: &str = r#"((rules) => {
  const text = (arg) => {
    const m = /^\/(.*)\/([a-z]*)$/s.exec(arg);
    if (m) { try { return new RegExp(m[1], m[2]); } catch (e) { return null; } }
    return { test: (s) => s.includes(arg) };
  };
  const cssMatch = (pseudo) => (els, arg) => {
    const i = arg.indexOf(':');
    if (i < 0) return [];
    const prop = arg.slice(0, i).trim(), want = text(arg.slice(i + 1).trim());
    if (!want) return [];
    return els.filter((e) => want.test(getComputedStyle(e, pseudo).getPropertyValue(prop)));
  };
  const relative = (els, sel) => {
    const s = sel.trim();
    const out = new Set();
    for (const e of els) {
      try {
        if (s.startsWith('+') || s.startsWith('~')) {
          const rest = s.slice(1).trim();
          for (let n = e.nextElementSibling; n; n = s.startsWith('+') ? null : n.nextElementSibling) {
            if (n.matches(rest)) out.add(n);
          }
        } else {
          e.querySelectorAll(':scope ' + s).forEach((x) => out.add(x));
        }
      } catch (err) { return null; }
    }
    return Array.from(out);
  };
  const ops = {
    'css-selector': (els, arg, first) => {
      if (first) { try { return Array.from(document.querySelectorAll(arg)); } catch (e) { return null; } }
      return relative(els, arg);
    },
    'has-text': (els, arg) => { const t = text(arg); return t ? els.filter((e) => t.test(e.textContent || '')) : null; },
    'min-text-length': (els, arg) => els.filter((e) => (e.textContent || '').length >= Number(arg)),
    'upward': (els, arg) => {
      const out = new Set();
      const n = Number(arg);
      for (const e of els) {
        let p = null;
        if (Number.isInteger(n) && n > 0) { p = e; for (let i = 0; p && i < n; i++) p = p.parentElement; }
        else { try { p = e.parentElement && e.parentElement.closest(arg); } catch (err) { return null; } }
        if (p && p !== document.documentElement && p !== document.body) out.add(p);
      }
      return Array.from(out);
    },
    'matches-css': cssMatch(null),
    'matches-css-before': cssMatch('::before'),
    'matches-css-after': cssMatch('::after'),
    'matches-attr': (els, arg) => {
      const m = /^("?)(.+?)\1(?:=("?)(.*)\3)?$/s.exec(arg.trim());
      if (!m) return null;
      const name = text(m[2]), value = m[4] === undefined ? null : text(m[4]);
      if (!name) return null;
      return els.filter((e) => Array.from(e.attributes).some((a) => name.test(a.name) && (!value || value.test(a.value))));
    },
    'matches-path': (els, arg) => { const t = text(arg); return t && t.test(location.pathname + location.search) ? els : []; },
    'xpath': (els, arg, first) => {
      const out = [];
      for (const root of (first ? [document] : els)) {
        try {
          const r = document.evaluate(arg, root, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
          for (let i = 0; i < r.snapshotLength; i++) { const n = r.snapshotItem(i); if (n.nodeType === 1) out.push(n); }
        } catch (e) { return null; }
      }
      return out;
    },
  };
  // A selector in uBO's syntax: CSS and operators, e.g. `.promo:has-text(/offer/i):upward(2)`.
  const known = new Set(['has-text', 'upward', 'matches-css', 'matches-css-before', 'matches-css-after', 'min-text-length', 'matches-attr', 'matches-path', 'xpath', 'remove', 'style', 'remove-attr', 'remove-class']);
  const actions = new Set(['remove', 'style', 'remove-attr', 'remove-class']);
  const parse = (sel) => {
    const selector = [];
    let action = null, css = '', i = 0, depth = 0, quote = null;
    const flush = () => { if (css.trim()) selector.push({ type: 'css-selector', arg: css }); css = ''; };
    while (i < sel.length) {
      const c = sel[i];
      if (quote) { css += c; if (c === quote && sel[i - 1] !== '\\') quote = null; i++; continue; }
      if (c === '"' || c === "'") { quote = c; css += c; i++; continue; }
      if (c === '(' || c === '[') depth++;
      if (c === ')' || c === ']') depth--;
      if (c === ':' && depth === 0) {
        const m = /^:([a-z-]+)\(/.exec(sel.slice(i));
        if (m && known.has(m[1])) {
          let j = i + m[0].length, d = 1;
          while (j < sel.length && d > 0) { if (sel[j] === '(') d++; else if (sel[j] === ')') d--; j++; }
          if (d !== 0) return null;
          const arg = sel.slice(i + m[0].length, j - 1);
          flush();
          if (actions.has(m[1])) action = m[1] === 'remove' ? { type: 'remove' } : { type: m[1], arg };
          else selector.push({ type: m[1], arg });
          i = j;
          continue;
        }
      }
      css += c;
      i++;
    }
    flush();
    return selector.length ? { selector, action } : null;
  };
  let acted = 0;
  for (const raw of rules) {
    let rule;
    try { rule = raw.startsWith('{') ? JSON.parse(raw) : parse(raw); } catch (e) { continue; }
    if (!rule) continue;
    let els = [];
    let ok = true;
    (rule.selector || []).forEach((op, i) => {
      if (!ok) return;
      const f = ops[op.type];
      const r = f ? f(els, op.arg, i === 0) : null;
      if (r === null) ok = false; else els = r;
    });
    if (!ok) continue;
    const a = rule.action || null;
    for (const e of els) {
      if (!a) e.style.setProperty('display', 'none', 'important');
      else if (a.type === 'remove') e.remove();
      else if (a.type === 'style') e.setAttribute('style', (e.getAttribute('style') || '') + ';' + a.arg);
      else if (a.type === 'remove-attr') e.removeAttribute(a.arg);
      else if (a.type === 'remove-class') e.classList.remove(a.arg);
      else continue;
      acted++;
    }
  }
  return acted;
})"#;

/// The script applying `rules` (adblock's JSON strings).
pub(crate) fn script(rules: &[String]) -> String {
    let json = serde_json::to_string(rules).unwrap_or_else(|_| "[]".into());
    format!("({RUN})({json})")
}
