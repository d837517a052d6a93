  // A CSS selector that matches `el` and nothing else in the document: the element's id when
  // unique, else a child path (`tag:nth-of-type(n)`) up to the first unique ancestor id.
  const cssSelector = (el) => {
    if (!el || el.nodeType !== 1) return null;
    const esc = (s) => (window.CSS && CSS.escape ? CSS.escape(s) : String(s).replace(/[^a-zA-Z0-9_-]/g, (c) => '\\' + c));
    const unique = (sel) => {
      try {
        return document.querySelectorAll(sel).length === 1;
      } catch (e) {
        return false;
      }
    };
    if (el.id && unique('#' + esc(el.id))) return '#' + esc(el.id);
    const parts = [];
    let node = el;
    while (node && node.nodeType === 1) {
      if (node !== el && node.id && unique('#' + esc(node.id))) {
        parts.unshift('#' + esc(node.id));
        return parts.join(' > ');
      }
      let part = node.localName;
      const parent = node.parentElement;
      if (parent) {
        const same = Array.prototype.filter.call(parent.children, (c) => c.localName === node.localName);
        if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(node) + 1) + ')';
      }
      parts.unshift(part);
      if (unique(parts.join(' > '))) return parts.join(' > ');
      node = parent;
    }
    return parts.join(' > ');
  };
  const snippet = (el, max) => {
    try {
      const html = el.outerHTML || '';
      const open = html.indexOf('>') + 1;
      const s = open > 0 && open < html.length ? html.slice(0, open) : html;
      return s.length > max ? s.slice(0, max) + '…' : s;
    } catch (e) {
      return '';
    }
  };
