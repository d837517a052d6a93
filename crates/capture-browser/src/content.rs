//! The page as text (issue 41): Markdown, plain text and the rendered HTML of the loaded page,
//! read after the capture from the same load, so the consent, blocking and pop-up options have
//! run first.
//!
//! Everything runs in the page, in an isolated world of its own (the page's scripts cannot see
//! or change what we run there, nor replace the built-ins it uses), with kept libraries
//! shipped inside the binary (`vendor/`, licences beside them):
//! - **Turndown** 7.2.5 and its GFM plugin 1.0.2 (MIT) turn the cleaned DOM into Markdown.
//!   Chosen over a Rust converter (`htmd`, a Turndown port) because the page's own DOM is
//!   already parsed and laid out there: what is hidden is known from the computed style, URLs
//!   resolve against the document's base, and no HTML parser is added to the build (html5ever
//!   and its tree would be new to it).
//! - **Readability** 0.6.0 (Mozilla, Apache-2.0) finds the main content (`mainContent`), the
//!   article's own title, byline and published time.
//!
//! What is left out: `script`, `style`, `noscript`, `template`, frames, embeds, canvases and
//! SVG drawings, and every element not displayed (`display: none`, `visibility: hidden`) —
//! which is where the consent engine and the lists put banners and ads. What an open shadow
//! root shows is read as the browser lays it out: its tree, with the light-DOM children its
//! slots take.

use serde::Deserialize;

use capture_core::metadata::{ContentReport, Extracted};
use capture_core::options::{ContentFormat, ContentSettings, ExtractRule, page_text};

/// Turndown's browser build, unmodified from the npm package `turndown@7.2.5`.
const TURNDOWN: &str = include_str!("../vendor/turndown/turndown.browser.umd.js");
/// Turndown's GFM plugin (tables, strikethrough, task lists), unmodified from the npm package
/// `turndown-plugin-gfm@1.0.2`.
const TURNDOWN_GFM: &str = include_str!("../vendor/turndown/turndown-plugin-gfm.js");
/// Readability, unmodified from the npm package `@mozilla/readability@0.6.0`.
const READABILITY: &str = include_str!("../vendor/readability/Readability.js");

/// The versions built in.
pub const TURNDOWN_VERSION: &str = "7.2.5";
pub const READABILITY_VERSION: &str = "0.6.0";

/// The name of the isolated world the extraction runs in.
pub(crate) const WORLD: &str = "capture-content";

/// The page as text.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageContent {
    /// Markdown (GFM), without front matter (see [`front_matter`]).
    pub markdown: String,
    /// The visible text, a line per block, cells separated by tabs.
    pub text: String,
    /// The cleaned DOM as HTML: scripts, styles and hidden elements removed, URLs absolute.
    pub html: String,
    /// The article's own title (Readability's, with `mainContent`), else the document's.
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub byline: Option<String>,
    #[serde(default)]
    pub excerpt: Option<String>,
    #[serde(default)]
    pub published_time: Option<String>,
    #[serde(default)]
    pub site_name: Option<String>,
    /// Readability found an article (with `mainContent`; false: the whole page was kept).
    #[serde(default)]
    pub article: bool,
}

/// Why the page could not be read as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentError {
    /// A selector the browser cannot parse: the field (`includeSelectors[1]`) and selector.
    Selector(String, String),
    /// The document is not HTML (an image, a PDF, plain data): its media type.
    NotHtml(String),
    /// The script failed.
    Failed(String),
}

/// The script that reads the page as `settings` asks and the fields `rules` name, to
/// evaluate in [`WORLD`]. Its answer is `{content, extract}` (each null when not asked for).
pub(crate) fn script(
    settings: Option<&ContentSettings>,
    rules: Option<&std::collections::BTreeMap<String, ExtractRule>>,
) -> String {
    let opts = settings.map(|settings| {
        serde_json::json!({
            "mainContent": settings.main_content,
            "include": settings.include_selectors,
            "exclude": settings.exclude_selectors,
        })
    });
    let rules = rules.map(|r| serde_json::to_value(r).unwrap_or_default());
    let args = serde_json::json!({ "content": opts, "rules": rules });
    format!(
        "(() => {{\nconst lib = {{}};\n(function () {{ var module = {{ exports: {{}} }}; var exports = module.exports;\n{TURNDOWN}\n;lib.Turndown = module.exports; }}).call({{}});\n(function () {{\n{TURNDOWN_GFM}\n;lib.gfm = turndownPluginGfm.gfm; }}).call({{}});\n(function () {{ var module = {{ exports: {{}} }};\n{READABILITY}\n;lib.Readability = module.exports; }}).call({{}});\nlib.turndown = ({TURNDOWN_SETUP})(lib);\nconst args = {args};\nreturn {{ content: args.content ? ({EXTRACT})(lib, args.content) : null, extract: args.rules ? ({RULES})(lib, args.rules) : null }};\n}})()"
    )
}

/// Read the script's answer: the content (when asked for) and the extracted fields (when
/// rules were given).
pub(crate) fn read(v: serde_json::Value) -> Result<(Option<PageContent>, Option<Extracted>), ContentError> {
    for part in ["content", "extract"] {
        let p = &v[part];
        if let Some(kind) = p.get("notHtml").and_then(|f| f.as_str()) {
            return Err(ContentError::NotHtml(kind.to_owned()));
        }
        if let Some(field) = p.get("badSelector").and_then(|f| f.as_str()) {
            let sel = p.get("selector").and_then(|s| s.as_str()).unwrap_or_default();
            return Err(ContentError::Selector(field.to_owned(), sel.to_owned()));
        }
    }
    let content = match v.get("content").filter(|c| !c.is_null()) {
        Some(c) => Some(
            serde_json::from_value(c.clone())
                .map_err(|e| ContentError::Failed(format!("reading the page's content: {e}")))?,
        ),
        None => None,
    };
    let extract = match v.get("extract").filter(|c| !c.is_null()) {
        Some(x) => {
            let x: Extracted = serde_json::from_value(x.clone())
                .map_err(|e| ContentError::Failed(format!("reading the extracted fields: {e}")))?;
            let size = serde_json::to_string(&x.data).map_or(0, |s| s.len());
            if size > EXTRACT_DATA_MAX {
                return Err(ContentError::Failed(format!(
                    "extract: the data is {size} bytes of JSON, more than the 1000000 a job keeps; narrow the rules"
                )));
            }
            Some(x)
        }
        None => None,
    };
    Ok((content, extract))
}

/// Most bytes of the extracted data, as JSON.
pub const EXTRACT_DATA_MAX: usize = 1_000_000;

/// Turndown, set up as every Markdown of ours is made: ATX headings, `-` bullets, fenced code
/// with its language, GFM tables whose rows stay one line each, images only with a source.
const TURNDOWN_SETUP: &str = r#"(lib) => {
  const td = new lib.Turndown({ headingStyle: 'atx', hr: '---', bulletListMarker: '-', codeBlockStyle: 'fenced',
    emDelimiter: '_', strongDelimiter: '**', linkStyle: 'inlined' });
  td.use(lib.gfm);
  td.addRule('tableCellOneLine', {
    filter: ['th', 'td'],
    replacement: (content, node) => {
      const index = Array.prototype.indexOf.call(node.parentNode.childNodes, node);
      const text = content.replace(/\s*\n+\s*/g, ' ').replace(/\|/g, '\\|').trim();
      return (index === 0 ? '| ' : ' ') + text + ' |';
    },
  });
  // A code block's language from its own class or its `pre`'s (`language-x`, `lang-x`).
  td.addRule('fencedWithLanguage', {
    filter: (node) => node.nodeName === 'PRE',
    replacement: (content, node, options) => {
      const code = node.querySelector('code') || node;
      const cls = (code.getAttribute('class') || '') + ' ' + (node.getAttribute('class') || '');
      const m = cls.match(/(?:^|\s)(?:language|lang)-([A-Za-z0-9_+#.-]+)/);
      const text = code.textContent.replace(/\n$/, '');
      const fence = text.includes('```') ? '~~~~' : '```';
      return '\n\n' + fence + (m ? m[1] : '') + '\n' + text + '\n' + fence + '\n\n';
    },
  });
  // List items with one space after the marker (Turndown's own rule puts three).
  td.addRule('listItemOneSpace', {
    filter: 'li',
    replacement: (content, node, options) => {
      let prefix = options.bulletListMarker + ' ';
      const parent = node.parentNode;
      if (parent && parent.nodeName === 'OL') {
        const start = parent.getAttribute('start');
        const index = Array.prototype.indexOf.call(parent.children, node);
        prefix = (start ? Number(start) + index : index + 1) + '. ';
      }
      content = content.replace(/^\n+/, '').replace(/\n+$/, '\n').replace(/\n/gm, '\n' + ' '.repeat(prefix.length));
      return prefix + content + (node.nextSibling && !/\n$/.test(content) ? '\n' : '');
    },
  });
  td.addRule('imagesWithoutSource', { filter: (node) => node.nodeName === 'IMG' && !node.getAttribute('src'), replacement: () => '' });
  return td;
}"#;

/// The fields of `extract.rules`, read from the live document: per field, the first element
/// that gives a value (every one with `all`), else the fallbacks' in order; null (an empty
/// list with `all`) when none does. A selector the browser cannot parse names its field.
const RULES: &str = r#"(lib, rules) => {
  if (!/html|xml/i.test(String(document.contentType || ''))) return { notHtml: String(document.contentType || '') };
  const squash = (s) => String(s).replace(/\s+/g, ' ').trim();
  const textOf = (el) => squash(typeof el.innerText === 'string' && el.isConnected ? el.innerText : el.textContent);
  const clean = (el) => {
    const c = el.cloneNode(true);
    for (const x of Array.from(c.querySelectorAll('script, style, noscript, template'))) x.remove();
    for (const x of [c, ...c.querySelectorAll('*')]) {
      for (const a of Array.from(x.attributes || [])) if (/^on/i.test(a.name)) x.removeAttribute(a.name);
    }
    return c;
  };
  const number = (s) => {
    const m = String(s).match(/-?\d[\d.,\s\u00a0\u202f']*/);
    if (!m) return null;
    let t = m[0].replace(/[\s\u00a0\u202f']/g, '').replace(/[.,]$/, '');
    const lastDot = t.lastIndexOf('.'), lastComma = t.lastIndexOf(',');
    if (lastDot >= 0 && lastComma >= 0) {
      // The later mark is the decimal one.
      t = lastDot > lastComma ? t.replace(/,/g, '') : t.replace(/\./g, '').replace(',', '.');
    } else if (lastComma >= 0) {
      // 1,299 is a thousand; 12,5 is a decimal.
      const parts = t.split(',');
      t = parts.length === 2 && parts[1].length !== 3 ? parts.join('.') : parts.join('');
    } else if ((t.match(/\./g) || []).length > 1) {
      t = t.replace(/\./g, '');
    }
    const n = Number(t);
    return Number.isFinite(n) ? n : null;
  };
  const value = (el, rule) => {
    const type = rule.type || 'string';
    if (type === 'html') return clean(el).innerHTML.trim() || null;
    if (type === 'markdown') return lib.turndown.turndown(clean(el)).replace(/\n{3,}/g, '\n\n').trim() || null;
    let raw;
    if (rule.attr) {
      raw = el.getAttribute(rule.attr);
      if (raw === null) return null;
      if (type === 'boolean' && raw === '') return true;
    } else if (type === 'url') {
      raw = el.getAttribute('href') || el.getAttribute('src') || el.getAttribute('content') || textOf(el);
    } else if (type === 'date') {
      raw = el.getAttribute('datetime') || el.getAttribute('content') || textOf(el);
    } else {
      raw = el.localName === 'meta' ? el.getAttribute('content') || '' : textOf(el);
    }
    raw = squash(raw);
    switch (type) {
      case 'number': return number(raw);
      case 'boolean': {
        const t = raw.toLowerCase();
        if (['true', 'yes', 'on', '1'].includes(t)) return true;
        if (['false', 'no', 'off', '0'].includes(t)) return false;
        return null;
      }
      case 'url': {
        if (!raw) return null;
        try { const u = new URL(raw, document.baseURI); return /^(https?|mailto|tel):$/.test(u.protocol) ? u.href : null; } catch (e) { return null; }
      }
      case 'date': {
        if (!raw) return null;
        const t = Date.parse(raw);
        return Number.isNaN(t) ? null : new Date(t).toISOString();
      }
      default: return raw === '' ? null : raw;
    }
  };
  const data = {}, sources = {};
  for (const [name, rule] of Object.entries(rules)) {
    const all = !!rule.all;
    const tries = [[rule, `extract.rules.${name}.selector`]].concat(
      (rule.fallback || []).map((f, i) => [f, `extract.rules.${name}.fallback[${i}].selector`]));
    let got = all ? [] : null, from = null;
    for (const [r, field] of tries) {
      let els;
      try { els = document.querySelectorAll(r.selector); } catch (e) { return { badSelector: field, selector: r.selector }; }
      const vals = [];
      for (const el of els) {
        const v = value(el, r);
        if (v === null) continue;
        vals.push(v);
        if (!all) break;
      }
      if (vals.length) { got = all ? vals : vals[0]; from = r.selector; break; }
    }
    data[name] = got;
    sources[name] = from;
  }
  return { data, sources };
}"#;

/// The extraction, in the page: `lib` holds the libraries, `opts` the settings.
const EXTRACT: &str = r#"(lib, opts) => {
  const type = String(document.contentType || '');
  if (!/html|xml/i.test(type)) return { notHtml: type };
  const body = document.body || document.documentElement;
  if (!body) return { markdown: '', text: '', html: '' };
  const metaContent = (sel) => { const m = document.querySelector(sel); return (m && m.getAttribute('content')) || null; };
  // Elements never kept, by local name.
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'iframe', 'frame', 'frameset', 'object', 'embed',
    'canvas', 'svg', 'math', 'link', 'meta', 'base']);
  const hidden = (el) => {
    const s = getComputedStyle(el);
    return s.display === 'none' || s.visibility === 'hidden' || s.visibility === 'collapse';
  };
  // A copy of the body, walked beside the live one: what is not displayed, and what is never
  // kept, is dropped; links and images get the absolute URL the live element resolved.
  const copy = body.cloneNode(true);
  const drop = [];
  // An element with an open shadow root shows its shadow tree, with the light-DOM children it
  // slots in where its slots are (a slot with nothing assigned shows its own fallback).
  const shown = (el) => {
    // A shadow host shows its shadow tree; an element of a shadow tree with a slot among its
    // children shows what the slot takes.
    const root = el.shadowRoot || (Array.from(el.children).some((c) => c.localName === 'slot') ? el : null);
    if (!root) return null;
    const out = [];
    const add = (n) => {
      if (n.nodeType === 1 && n.localName === 'slot') {
        const assigned = n.assignedNodes({ flatten: true });
        for (const x of (assigned.length ? assigned : Array.from(n.childNodes))) add(x);
      } else out.push(n);
    };
    for (const n of Array.from(root.childNodes)) add(n);
    return out;
  };
  const walk = (live, dead) => {
    const flat = shown(live);
    if (flat) {
      const clones = flat.map((n) => n.cloneNode(true));
      dead.replaceChildren(...clones);
      for (let i = 0; i < flat.length; i++) if (flat[i].nodeType === 1) visit(flat[i], clones[i]);
      return;
    }
    const lc = live.children, dc = dead.children;
    const n = Math.min(lc.length, dc.length);
    for (let i = 0; i < n; i++) visit(lc[i], dc[i]);
  };
  const visit = (l, d) => {
    if (SKIP.has(l.localName) || hidden(l)) { drop.push(d); return; }
    if (l.localName === 'a') {
      const href = l.href, own = l.getAttribute('href') || '';
      // A link within the page stays `#…` until Readability has weighed it (it counts
      // in-page links as navigation less than others); it is made absolute after.
      if (own.startsWith('#')) d.setAttribute('href', own);
      else if (href && /^(https?|mailto|tel):/i.test(href)) d.setAttribute('href', href); else d.removeAttribute('href');
    } else if (l.localName === 'img') {
      const src = l.currentSrc || l.src;
      if (src && /^(https?|data):/i.test(src) && !/^data:/i.test(src)) d.setAttribute('src', src); else d.removeAttribute('src');
      d.removeAttribute('srcset');
      d.removeAttribute('sizes');
    }
    for (const a of Array.from(d.attributes)) {
      if (/^on/i.test(a.name)) d.removeAttribute(a.name);
    }
    walk(l, d);
  };
  walk(body, copy);
  for (const d of drop) d.remove();
  // Comments.
  const comments = document.createTreeWalker(copy, NodeFilter.SHOW_COMMENT);
  const gone = [];
  while (comments.nextNode()) gone.push(comments.currentNode);
  for (const c of gone) c.remove();
  const each = (list, field, fn) => {
    for (let i = 0; i < list.length; i++) {
      try { fn(list[i]); } catch (e) { return { badSelector: `${field}[${i}]`, selector: list[i] }; }
    }
    return null;
  };
  // An inert document: nothing in it loads or runs.
  const inert = document.implementation.createHTMLDocument(document.title || '');
  if (document.documentElement.lang) inert.documentElement.lang = document.documentElement.lang;
  let root = inert.importNode(copy, true);
  let bad = each(opts.exclude, 'excludeSelectors', (s) => root.querySelectorAll(s).forEach((e) => e.remove()));
  if (bad) return bad;
  if (opts.include.length) {
    const picked = [];
    bad = each(opts.include, 'includeSelectors', (s) => root.querySelectorAll(s).forEach((e) => picked.push(e)));
    if (bad) return bad;
    // In document order, each once, the outermost only.
    const uniq = Array.from(new Set(picked)).sort((a, b) =>
      a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
    const kept = uniq.filter((e) => !uniq.some((o) => o !== e && o.contains(e)));
    const box = inert.createElement('body');
    for (const e of kept) box.appendChild(e);
    root = box;
  }
  inert.body.replaceWith(root);
  // Main content: Readability on the inert document (with the page's metadata in its head).
  let info = { title: document.title || null, byline: metaContent('meta[name="author" i]'), excerpt: null,
    publishedTime: metaContent('meta[property="article:published_time" i]'), siteName: metaContent('meta[property="og:site_name" i]'),
    article: false };
  if (opts.mainContent) {
    for (const m of document.head ? document.head.querySelectorAll('title, meta, script[type="application/ld+json"]') : []) {
      inert.head.appendChild(inert.importNode(m, true));
    }
    try {
      const parsed = new lib.Readability(inert.cloneNode(true), { keepClasses: true }).parse();
      if (parsed && parsed.content) {
        const box = inert.createElement('body');
        box.innerHTML = parsed.content;
        inert.body.replaceWith(box);
        root = box;
        info = { title: parsed.title || info.title, byline: parsed.byline || info.byline, excerpt: parsed.excerpt || null,
          publishedTime: parsed.publishedTime || info.publishedTime, siteName: parsed.siteName || info.siteName, article: true };
      }
    } catch (e) {}
  }
  // In-page links, absolute now.
  const here = document.URL.replace(/#.*$/, '');
  for (const a of Array.from(root.querySelectorAll("a[href^='#']"))) a.setAttribute('href', here + a.getAttribute('href'));
  // GFM tables need a header row: a table without one gets an empty one, so every row stays
  // a row of the table. A cell's line breaks and pipes would break its row.
  for (const t of Array.from(root.querySelectorAll('table'))) {
    const first = t.rows[0];
    if (!first) continue;
    const heading = (first.parentNode.nodeName === 'THEAD') ||
      Array.from(first.cells).every((c) => c.nodeName === 'TH');
    if (!heading) {
      const cols = Math.max(...Array.from(t.rows).map((r) => Array.from(r.cells).reduce((n, c) => n + (c.colSpan || 1), 0)));
      const head = inert.createElement('thead');
      const tr = inert.createElement('tr');
      for (let i = 0; i < cols; i++) tr.appendChild(inert.createElement('th'));
      head.appendChild(tr);
      t.insertBefore(head, t.firstChild);
    }
  }
  const td = lib.turndown;
  const markdown = td.turndown(root).replace(/\n{3,}/g, '\n\n').trim();
  // Text: a line per block, tabs between cells.
  const BLOCK = /^(ADDRESS|ARTICLE|ASIDE|BLOCKQUOTE|DD|DETAILS|DIV|DL|DT|FIELDSET|FIGCAPTION|FIGURE|FOOTER|FORM|H[1-6]|HEADER|HR|LI|MAIN|NAV|OL|P|PRE|SECTION|SUMMARY|TABLE|TBODY|THEAD|TFOOT|TR|UL|BODY)$/;
  const out = [];
  let line = '';
  const flush = () => { const t = line.replace(/[ \u00a0]+/g, ' ').replace(/ ?\t ?/g, '\t').trim(); if (t) out.push(t); line = ''; };
  const text = (node, pre) => {
    for (const c of node.childNodes) {
      if (c.nodeType === 3) { line += pre ? c.data : c.data.replace(/\s+/g, ' '); continue; }
      if (c.nodeType !== 1) continue;
      const name = c.nodeName;
      if (name === 'BR') { flush(); continue; }
      if (name === 'TD' || name === 'TH') { if (line) line += '\t'; text(c, pre); continue; }
      if (name === 'IMG') { const alt = c.getAttribute('alt'); if (alt) line += alt; continue; }
      const block = BLOCK.test(name);
      if (block) flush();
      if (name === 'PRE') { for (const l of c.textContent.split('\n')) { line = l; flush(); } continue; }
      text(c, pre);
      if (block) flush();
    }
  };
  text(root, false);
  flush();
  const html = '<!doctype html>\n<html' + (document.documentElement.lang ? ` lang="${document.documentElement.lang.replace(/"/g, '')}"` : '') +
    '><head><meta charset="utf-8"><title>' + (info.title || '').replace(/[<&]/g, (c) => c === '<' ? '&lt;' : '&amp;') +
    '</title></head>' + root.outerHTML + '</html>';
  return Object.assign({ markdown, text: out.join('\n'), html }, info);
}"#;

/// A form of the page as text, as it is stored, and how long it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub report: ContentReport,
}

/// The file for `form`: Markdown with YAML front matter from the page's metadata (the
/// article's own title, byline and published time with `mainContent`), the text, or the HTML;
/// the part of it `settings.from` and `settings.max_chars` ask for (the front matter aside),
/// cut after a whole line.
pub fn render(
    form: ContentFormat,
    content: &PageContent,
    meta: &capture_core::metadata::PageMetadata,
    captured_at: &str,
    settings: &ContentSettings,
) -> Rendered {
    let body = match form {
        ContentFormat::Markdown => &content.markdown,
        ContentFormat::Text => &content.text,
        ContentFormat::Html => &content.html,
    };
    let page = page_text(body, settings.from, settings.max_chars);
    let part = page.text.strip_suffix('\n').unwrap_or(page.text);
    let text = match form {
        ContentFormat::Markdown => {
            let title = content.title.as_deref().or(meta.title.as_deref());
            let fm = front_matter(&[
                ("title", title),
                ("description", meta.description.as_deref().or(content.excerpt.as_deref())),
                ("canonical", meta.canonical.as_deref()),
                ("lang", meta.lang.as_deref()),
                ("author", content.byline.as_deref()),
                ("published", content.published_time.as_deref()),
                ("image", meta.open_graph.image.as_deref()),
                ("site", content.site_name.as_deref()),
                ("source", Some(meta.final_url.as_str())),
                ("captured_at", Some(captured_at)),
            ]);
            format!("{fm}{part}\n")
        }
        ContentFormat::Text => format!("{part}\n"),
        ContentFormat::Html => part.to_owned(),
    };
    let report = ContentReport::of(text.chars().count() as u64, content.article, &page);
    Rendered { text, report }
}

/// YAML front matter of these fields, in this order; fields without a value are left out.
/// Values are written as double-quoted scalars (JSON strings are valid YAML ones).
pub fn front_matter(fields: &[(&str, Option<&str>)]) -> String {
    let mut out = String::from("---\n");
    for (k, v) in fields {
        if let Some(v) = v.filter(|v| !v.trim().is_empty()) {
            out.push_str(k);
            out.push_str(": ");
            out.push_str(&serde_json::to_string(v).unwrap_or_default());
            out.push('\n');
        }
    }
    out.push_str("---\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_quotes_every_value_and_leaves_out_the_empty_ones() {
        let fm = front_matter(&[
            ("title", Some("A: \"quoted\" title\nwith a newline")),
            ("description", None),
            ("lang", Some("  ")),
            ("source", Some("https://example.com/a?b=1#c")),
        ]);
        assert_eq!(
            fm,
            "---\ntitle: \"A: \\\"quoted\\\" title\\nwith a newline\"\nsource: \"https://example.com/a?b=1#c\"\n---\n\n"
        );
    }

    #[test]
    fn a_bad_selector_names_its_field() {
        let v =
            serde_json::json!({"content": {"badSelector": "excludeSelectors[1]", "selector": "[["}, "extract": null});
        assert_eq!(read(v), Err(ContentError::Selector("excludeSelectors[1]".into(), "[[".into())));
        let v = serde_json::json!({"content": null, "extract": {"badSelector": "extract.rules.price.fallback[0].selector", "selector": "a["}});
        assert_eq!(
            read(v),
            Err(ContentError::Selector("extract.rules.price.fallback[0].selector".into(), "a[".into()))
        );
    }
}
