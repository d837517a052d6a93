//! Looking at a session's page: screenshots, the accessibility snapshot with refs, finding
//! elements, text, HTML, attributes, URL and title, the console and network logs, a PDF.

use capture_core::ErrorCode;
use std::time::Duration;

use capture_browser::session::{CallOutcome, PdfSpec, ScreenshotSpec, Session, ShotArea, Target, WaitFor};
use capture_browser::{CaptureError, ImageFormat};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::sessions::live;
use super::snapshot::{self, Snapshot};
use super::{element, required_element, timeout};
use crate::blob;
use crate::error::{Error, Result};
use crate::tool::{Cx, Reply, invalid, refused};

mod logs;

pub use logs::{
    ConsoleLogsIn, GetDialogsIn, NetworkLogsIn, PerformanceIn, WaitForRequestIn, console_logs, get_dialogs,
    get_performance, network_logs, wait_for_request,
};

/// Largest image returned inline (MCP clients refuse much larger ones); bigger ones are
/// only linked.
const MAX_INLINE_IMAGE: usize = 3 * 1024 * 1024 + 512 * 1024;
/// Object group of the remote objects the tools make.
const GROUP: &str = "capture-automation";

/// `png` or `jpeg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShotFormat {
    Png,
    Jpeg,
}

/// Take a screenshot of the session's viewport (default), the whole page (fullPage), or one element (ref or selector). Returns the image itself, and its size and a URL of the stored file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenshotIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The whole scrollable page instead of the viewport.
    pub full_page: Option<bool>,
    /// Only this element (a ref from snapshot or find).
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Only the element matching this CSS selector.
    pub selector: Option<String>,
    /// png (default) or jpeg.
    pub format: Option<ShotFormat>,
    /// JPEG quality 1–100 (default 80).
    #[schemars(range(min = 1, max = 100))]
    pub quality: Option<u8>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

fn truncate(mut s: String, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    (s, true)
}

pub async fn screenshot(cx: &Cx<'_>, a: ScreenshotIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let el = element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let area = match (el, a.full_page.unwrap_or(false)) {
        (Some(_), true) => return Err(invalid("fullPage", "an element screenshot cannot be full page")),
        (Some(t), false) => ShotArea::Element(t),
        (None, true) => ShotArea::FullPage,
        (None, false) => ShotArea::Viewport,
    };
    if a.quality.is_some_and(|q| !(1..=100).contains(&q)) {
        return Err(invalid("quality", "must be from 1 to 100"));
    }
    let format = match a.format.unwrap_or(ShotFormat::Png) {
        ShotFormat::Png => ImageFormat::Png,
        ShotFormat::Jpeg => ImageFormat::Jpeg,
    };
    let img = l.session.screenshot(ScreenshotSpec { area, format, quality: a.quality }, t).await?;
    let ext = if format == ImageFormat::Png { "png" } else { "jpg" };
    let name = blob::new_name(ext);
    cx.state.blobs.put(&name, img.bytes.clone(), img.content_type).await.map_err(Error::internal)?;
    let url = cx.state.file_url(&name).await;
    let data = json!({"width": img.width, "height": img.height, "contentType": img.content_type, "bytes": img.bytes.len(), "url": url});
    let mut reply = Reply::data(data).with_text(format!("Screenshot {}×{} px: {url}", img.width, img.height));
    if img.bytes.len() <= MAX_INLINE_IMAGE {
        reply.image = Some((img.bytes, img.content_type));
    }
    Ok(reply)
}

/// `full`: the tree; `diff`: only what changed since this session's last snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotMode {
    Full,
    Diff,
}

/// The page as an accessibility tree: one line per element an agent can read or act on (role, name, value, states such as checked or disabled) with its ref (e.g. [ref=e42]). Pass a ref to tap, fill, type, check, select_option, get_text, screenshot… instead of a selector. Refs are stable: the same element keeps its ref across snapshots; one that is gone fails with NO_SUCH_ELEMENT_REF. The answer stays within maxChars (default 8000, at most 20000): what does not fit is left out, and the answer says how much and how to read on (from=nextFrom), or narrow it to a part (ref or selector). mode=diff gives only what changed since the last snapshot of the same part: + lines for new or changed elements, - lines for gone ones.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Only this element and what is inside it (a ref from snapshot or find).
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Only the first element matching this CSS selector and what is inside it.
    pub selector: Option<String>,
    /// full (default) or diff: only what changed since the last snapshot of the same part.
    pub mode: Option<SnapshotMode>,
    /// Most characters of tree in the answer (default 8000, 200–20000).
    #[schemars(range(min = 200, max = 20000))]
    pub max_chars: Option<usize>,
    /// Start at this line (a previous answer's nextFrom), to read on past what it left out.
    pub from: Option<usize>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

/// The page's accessibility snapshot.
pub async fn take_snapshot(s: &Session, t: Duration) -> Result<Snapshot> {
    let nodes = s.accessibility_tree(t).await?;
    Ok(snapshot::build(&nodes))
}

/// The backend node id of the first element matching `sel` (not waited for).
async fn backend_of(s: &Session, sel: &str, t: Duration) -> Result<i64> {
    let root = s.dom_document(t).await?.node_id.unwrap_or(1);
    let found = s.query_selector(root, sel, t).await.map_err(|e| match e {
        CaptureError::Script(m) => {
            refused(ErrorCode::ElementNotFound, format!("'{sel}' is not a valid CSS selector ({m})"))
        }
        other => other.into(),
    })?;
    let Some(node) = found else {
        return Err(refused(ErrorCode::ElementNotFound, format!("no element matches '{sel}'")));
    };
    let d = s.describe_node(node, t).await?;
    d.backend_node_id.ok_or_else(|| refused(ErrorCode::ElementNotFound, format!("no element matches '{sel}'")))
}

/// A size bound of a tool's answer: `max` given (from 200 to `most`) or `default`.
pub(crate) fn max_chars(max: Option<usize>, default: usize, most: usize) -> Result<usize> {
    let m = max.unwrap_or(default);
    if !(200..=most).contains(&m) {
        return Err(invalid("maxChars", format!("must be from 200 to {most}")));
    }
    Ok(m)
}

pub async fn snapshot(cx: &Cx<'_>, a: SnapshotIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let max = max_chars(a.max_chars, snapshot::DEFAULT_CHARS, snapshot::MAX_CHARS)?;
    let mode = a.mode.unwrap_or(SnapshotMode::Full);
    let target = element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let (root, part) = match &target {
        Some(Target::Ref(id)) => (Some(*id), snapshot::ref_of(*id)),
        Some(Target::Selector(sel)) => (Some(backend_of(&l.session, sel, t).await?), sel.clone()),
        _ => (None, String::new()),
    };
    let nodes = l.session.accessibility_tree(t).await?;
    let snap = snapshot::build_from(&nodes, root).ok_or_else(|| match root {
        Some(id) if a.element_ref.is_some() => {
            refused(ErrorCode::NoSuchElementRef, format!("no such element ref e{id}"))
        }
        _ => refused(ErrorCode::ElementNotFound, format!("'{part}' has no accessibility node (not rendered?)")),
    })?;
    let (title, url) = l.session.title_url(t).await?;
    let before = {
        let mut kept = l.snapshots.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= 16 && !kept.contains_key(&part) {
            kept.clear();
        }
        kept.insert(part.clone(), snap.entries.clone())
    };
    let (lines, unchanged, mode) = match (mode, before) {
        (SnapshotMode::Diff, Some(before)) => {
            let (lines, same) = snapshot::diff(&before, &snap.entries);
            (lines, Some(same), "diff")
        }
        // Nothing to compare with: the whole tree.
        _ => (snap.lines(), None, "full"),
    };
    let from = a.from.unwrap_or(0).min(lines.len());
    let (tree, shown) = snapshot::lines_within(&lines, from, max);
    let next = from + shown;
    let left = lines.len() - next;
    let mut text = format!("Page URL: {url}\nPage title: {title}\n");
    if !part.is_empty() {
        text.push_str(&format!("Part: {part}\n"));
    }
    if let Some(same) = unchanged {
        text.push_str(&format!("Changes since the last snapshot ({} changed, {same} unchanged):\n", lines.len()));
    }
    text.push('\n');
    text.push_str(if tree.is_empty() && unchanged.is_some() { "(nothing changed)\n" } else { &tree });
    let left_chars: usize = lines[next..].iter().map(|l| l.len() + 1).sum();
    let note = (left > 0).then(|| {
        format!(
            "[{left} more lines ({left_chars} characters) left out. Read on with from={next}, look at one part \
             with ref or selector, or raise maxChars (at most {}).]",
            snapshot::MAX_CHARS
        )
    });
    if let Some(n) = &note {
        text.push_str(n);
        text.push('\n');
    }
    let data = json!({
        "url": url, "title": title, "mode": mode, "part": (!part.is_empty()).then_some(&part),
        "entries": snap.entries.len(), "truncated": snap.truncated,
        "lines": lines.len(), "from": from, "shown": shown,
        "nextFrom": (left > 0).then_some(next), "leftOut": left, "leftOutChars": left_chars,
        "unchanged": unchanged, "snapshot": tree,
    });
    Ok(Reply::data(data).with_text(text))
}

/// Find elements by role (button, link, textbox, checkbox, heading…), accessible name, text, or CSS selector. Returns their refs (for tap, fill, check…) with role and name, in document order.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FindIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// ARIA role, e.g. button, link, textbox, checkbox, combobox, heading (any case).
    pub role: Option<String>,
    /// Accessible name, contained (any case) unless exact.
    pub name: Option<String>,
    /// Text shown by the element (its name or value), contained unless exact.
    pub text: Option<String>,
    /// A CSS selector (every match, not waited for).
    pub selector: Option<String>,
    /// Match name and text exactly (ignoring case).
    pub exact: Option<bool>,
    /// Most matches returned (default 20, at most 100).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<usize>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn find(cx: &Cx<'_>, a: FindIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let limit = a.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(invalid("limit", "must be from 1 to 100"));
    }
    if a.role.is_none() && a.name.is_none() && a.text.is_none() && a.selector.is_none() {
        return Err(invalid("role", "give at least one of role, name, text or selector"));
    }
    let l = live(cx, &a.session_id).await?;
    let snap = take_snapshot(&l.session, t).await?;
    let exact = a.exact.unwrap_or(false);
    let mut found: Vec<Value> = Vec::new();
    if let Some(sel) = &a.selector {
        if sel.trim().is_empty() || sel.len() > 1024 {
            return Err(invalid("selector", "must be a CSS selector of 1 to 1024 characters"));
        }
        let root = l.session.dom_document(t).await?.node_id.unwrap_or(1);
        let ids = l.session.query_selector_all(root, sel, t).await.map_err(|e| match e {
            CaptureError::Script(m) => {
                refused(ErrorCode::ElementNotFound, format!("'{sel}' is not a valid CSS selector ({m})"))
            }
            other => other.into(),
        })?;
        for id in ids {
            let d = l.session.describe_node(id, t).await?;
            let Some(backend) = d.backend_node_id else { continue };
            let r = snapshot::ref_of(backend);
            let entry = snap.entries.iter().find(|e| e.reference.as_deref() == Some(r.as_str()));
            // The other filters narrow a selector's matches.
            if let Some(e) = entry {
                if !snap
                    .find(a.role.as_deref(), a.name.as_deref(), a.text.as_deref(), exact)
                    .iter()
                    .any(|m| m.reference == e.reference)
                {
                    continue;
                }
                found.push(json!({"ref": r, "role": e.role, "name": e.name, "value": e.value, "states": e.states}));
            } else if a.role.is_none() && a.name.is_none() && a.text.is_none() {
                let tag = d.local_name;
                found.push(json!({"ref": r, "role": null, "name": "", "tag": tag}));
            }
            if found.len() >= limit {
                break;
            }
        }
    } else {
        for e in snap.find(a.role.as_deref(), a.name.as_deref(), a.text.as_deref(), exact).into_iter().take(limit) {
            found.push(
                json!({"ref": e.reference, "role": e.role, "name": e.name, "value": e.value, "states": e.states}),
            );
        }
    }
    let lines: Vec<String> = found
        .iter()
        .map(|f| {
            format!("{} {} {}", f["ref"].as_str().unwrap_or(""), f["role"].as_str().unwrap_or("element"), f["name"])
        })
        .collect();
    let text = if found.is_empty() { "No element matches.".to_string() } else { lines.join("\n") };
    Ok(Reply::data(json!({"matches": found})).with_text(text))
}

paged_element_input! {
    /// The visible text (innerText) of the whole page, or of one element (ref or selector), a page of maxChars characters at a time (default 8000, at most 20000): when there is more, the answer says so, gives nextFrom to read on with, and a fileUrl of the whole text.
    GetTextIn
}

/// Most characters `get_text` and `get_html` return at once (`maxChars`), and the default.
const TEXT_CHARS: usize = 20_000;
const TEXT_DEFAULT: usize = 8_000;

pub async fn get_text(cx: &Cx<'_>, a: GetTextIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let max = max_chars(a.max_chars, TEXT_DEFAULT, TEXT_CHARS)?;
    let target = element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let whole = l.session.text(target, t).await?;
    paged(cx, "text", whole, a.from.unwrap_or(0), max).await
}

paged_element_input! {
    /// The HTML (outerHTML) of the whole page's body, or of one element (ref or selector), a page of maxChars characters at a time (default 8000, at most 20000): when there is more, the answer says so, gives nextFrom to read on with, and a fileUrl of the whole HTML (served as text).
    GetHtmlIn
}

pub async fn get_html(cx: &Cx<'_>, a: GetHtmlIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let max = max_chars(a.max_chars, TEXT_DEFAULT, TEXT_CHARS)?;
    let target = element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let whole = l.session.html(target, t).await?;
    paged(cx, "html", whole, a.from.unwrap_or(0), max).await
}

/// The page as Markdown (headings, lists, absolute links and images, tables as GFM, code blocks with their language), read in an isolated world after the page's own scripts: the whole page, or with mainContent only the article as Firefox's Reader View finds it (navigation, sidebars and footers left out). A page of maxChars characters at a time (default 8000, at most 20000, about a quarter as many tokens): when there is more, the answer says so, gives nextFrom to read on with, and a fileUrl of the whole Markdown.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetMarkdownIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Keep only the article (default false: the whole page).
    pub main_content: Option<bool>,
    /// Most characters in the answer (default 8000, 200–20000).
    #[schemars(range(min = 200, max = 20000))]
    pub max_chars: Option<usize>,
    /// Start at this character (a previous answer's nextFrom).
    pub from: Option<usize>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn get_markdown(cx: &Cx<'_>, a: GetMarkdownIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let max = max_chars(a.max_chars, TEXT_DEFAULT, TEXT_CHARS)?;
    let l = live(cx, &a.session_id).await?;
    let content = l.session.markdown(a.main_content.unwrap_or(false), t).await?;
    // The article's own title heads its Markdown (Readability takes it out of the body).
    let whole = match (&content.title, content.article) {
        (Some(title), true) if !title.trim().is_empty() => format!("# {}\n\n{}", title.trim(), content.markdown),
        _ => content.markdown,
    };
    paged(cx, "markdown", whole, a.from.unwrap_or(0), max).await
}

/// A page of `whole` (characters `from`.. within `max`) as the answer's `field`: with
/// `from`, `nextFrom`, `totalChars`, `truncated`, and — when it does not fit — a link to
/// the whole of it, stored as a text file (never served as HTML).
async fn paged(cx: &Cx<'_>, field: &str, whole: String, from: usize, max: usize) -> Result<Reply> {
    let total = whole.chars().count();
    let from = from.min(total);
    let start = whole.char_indices().nth(from).map_or(whole.len(), |(i, _)| i);
    let rest = &whole[start..];
    let (piece, _) = truncate(rest.to_string(), max);
    let shown = piece.chars().count();
    let next = from + shown;
    let mut data = json!({
        field: piece, "from": from, "totalChars": total, "truncated": next < total,
        "nextFrom": (next < total).then_some(next),
    });
    let mut text = piece;
    if shown < total {
        let mut note = format!("characters {from}–{next} of {total}");
        if next < total {
            note.push_str(&format!(". Read on with from={next}"));
        }
        // The first page of a long one links the whole of it too.
        if from == 0 {
            let name = blob::new_name(if field == "markdown" { "md" } else { "txt" });
            cx.state.blobs.put(&name, whole.into_bytes(), blob::content_type(&name)).await.map_err(Error::internal)?;
            let url = cx.state.file_url(&name).await;
            note.push_str(&format!("; the whole {field}: {url}"));
            data["fileUrl"] = json!(url);
        }
        text.push_str(&format!("\n[{note}]"));
    }
    Ok(Reply::data(data).with_text(text))
}

/// Call `function` (a JavaScript function declaration) with `this` = the target element.
pub async fn on_element(s: &Session, target: &Target, function: &str, args: Vec<Value>, t: Duration) -> Result<Value> {
    let object = match target {
        Target::Ref(id) => s.resolve_node(*id, GROUP, t).await.map_err(|e| match e {
            CaptureError::Script(_) => refused(ErrorCode::NoSuchElementRef, format!("no such element ref e{id}")),
            other => other.into(),
        })?,
        Target::Selector(sel) => {
            s.wait_for(WaitFor::Selector(sel.clone()), t).await?;
            let expr = format!("document.querySelector({})", json!(sel));
            s.evaluate_to_object(&expr, GROUP, t).await?
        }
        Target::Point { x, y } => {
            let expr = format!("document.elementFromPoint({x}, {y})");
            s.evaluate_to_object(&expr, GROUP, t).await?
        }
    };
    let Some(object) = object else {
        return Err(refused(ErrorCode::ElementNotFound, format!("no element for {target}")));
    };
    let r = s.call_function_on(&object, function, args, t).await;
    let _ = s.release_object_group(GROUP, Duration::from_secs(2)).await;
    match r? {
        CallOutcome::Threw(ex) => Err(refused(
            ErrorCode::ActionFailed,
            format!("the element's script threw: {}", ex.message().unwrap_or("an exception")),
        )),
        CallOutcome::Returned(value) => Ok(value),
    }
}

/// One attribute of an element (ref or selector), e.g. href, aria-expanded, value, placeholder; null when it has none. Also returns whether the element is visible and its box in CSS pixels.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttributeIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The element's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// The attribute's name (value gives a field's current value).
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn get_attribute(cx: &Cx<'_>, a: AttributeIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    if a.name.is_empty() || a.name.len() > 256 {
        return Err(invalid("name", "must be an attribute name of 1 to 256 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    let f = "function(n) { const r = this.getBoundingClientRect(); const s = getComputedStyle(this); \
             const v = n === 'value' && 'value' in this ? String(this.value) : this.getAttribute(n); \
             return {value: v, visible: r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none', \
             box: {x: r.x, y: r.y, width: r.width, height: r.height}, tag: this.localName}; }";
    let v = on_element(&l.session, &target, f, vec![json!(a.name)], t).await?;
    let text = format!("{}={}", a.name, v["value"]);
    Ok(Reply::data(
        json!({"name": a.name, "value": v["value"], "visible": v["visible"], "box": v["box"], "tag": v["tag"]}),
    )
    .with_text(text))
}

page_input! {
    /// The page's current URL (location.href, after redirects and client-side routing).
    GetUrlIn
}

pub async fn get_url(cx: &Cx<'_>, a: GetUrlIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let (_, url) = l.session.title_url(t).await?;
    Ok(Reply::data(json!({"url": url})).with_text(url))
}

page_input! {
    /// The page's current title (document.title).
    GetTitleIn
}

pub async fn get_title(cx: &Cx<'_>, a: GetTitleIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let (title, _) = l.session.title_url(t).await?;
    Ok(Reply::data(json!({"title": title})).with_text(title))
}

/// Print the page to a PDF (A4, backgrounds included), stored as a file: returns its URL and size.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Landscape paper.
    pub landscape: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn pdf(cx: &Cx<'_>, a: PdfIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let bytes = l.session.pdf(PdfSpec { landscape: a.landscape.unwrap_or(false), ..Default::default() }, t).await?;
    let name = blob::new_name("pdf");
    let size = bytes.len();
    cx.state.blobs.put(&name, bytes, "application/pdf").await.map_err(Error::internal)?;
    let url = cx.state.file_url(&name).await;
    Ok(Reply::data(json!({"url": url, "bytes": size, "contentType": "application/pdf"}))
        .with_text(format!("PDF ({size} bytes): {url}")))
}

element_input! {
    /// The state of one element (ref or selector): visible, enabled, checked, focused, editable, its tag, value and box in CSS pixels (relative to the viewport).
    ElementStateIn
}

pub async fn get_element_state(cx: &Cx<'_>, a: ElementStateIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let f = "function() { const r = this.getBoundingClientRect(); const s = getComputedStyle(this); \
             return {tag: this.localName, visible: r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none', \
             enabled: !this.disabled, checked: 'checked' in this ? !!this.checked : null, focused: document.activeElement === this, \
             editable: !!(this.isContentEditable || (('value' in this) && !this.readOnly && !this.disabled && this.localName !== 'button')), \
             value: 'value' in this ? String(this.value) : null, box: {x: r.x, y: r.y, width: r.width, height: r.height}}; }";
    let v = on_element(&l.session, &target, f, vec![], t).await?;
    Ok(Reply::data(v))
}

page_input! {
    /// Every link of the page: its text, its absolute href and whether it is visible, in document order (at most 500).
    GetLinksIn
}

pub async fn get_links(cx: &Cx<'_>, a: GetLinksIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let v = l
        .session
        .evaluate(
            "[...document.links].slice(0, 500).map(a => ({text: (a.innerText || a.textContent || '').trim().slice(0, 200), \
             href: a.href, visible: a.getClientRects().length > 0}))",
            false,
            t,
        )
        .await?;
    let text = v
        .as_array()
        .map(|a| {
            a.iter()
                .map(|l| format!("{} → {}", l["text"].as_str().unwrap_or(""), l["href"].as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    Ok(Reply::data(json!({"links": v})).with_text(if text.is_empty() { "No links.".into() } else { text }))
}

page_input! {
    /// The device the session emulates now (preset, viewport, scale, touch, mobile, orientation, user agent) and what the page sees (innerWidth, innerHeight, screen orientation, touch points), with the session's start, expiry and idle timeout.
    GetDeviceIn
}

pub async fn get_device(cx: &Cx<'_>, a: GetDeviceIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let page = l
        .session
        .evaluate(
            "({innerWidth, innerHeight, devicePixelRatio, orientation: (screen.orientation && screen.orientation.type) || null, \
             touchPoints: navigator.maxTouchPoints, userAgent: navigator.userAgent})",
            false,
            t,
        )
        .await?;
    let mut data = crate::automation::sessions::view(&l);
    data["page"] = page;
    Ok(Reply::data(data))
}

page_input! {
    /// The current page's sessionStorage items (key → value) of its origin.
    GetSessionStorageIn
}

pub async fn get_session_storage(cx: &Cx<'_>, a: GetSessionStorageIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let v = l.session.evaluate("Object.fromEntries(Object.entries(sessionStorage))", false, t).await?;
    Ok(Reply::data(json!({"items": v})))
}

/// Computed CSS of one element (ref or selector): the given properties (default display, visibility, position, width, height, color, background-color, font-size, flex-direction) as the browser resolved them, e.g. to check a layout after rotating.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComputedStyleIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The element's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// CSS property names (kebab-case).
    #[schemars(length(max = 50))]
    pub properties: Option<Vec<String>>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

const DEFAULT_STYLE: &[&str] = &[
    "display",
    "visibility",
    "position",
    "width",
    "height",
    "color",
    "background-color",
    "font-size",
    "flex-direction",
];

pub async fn get_computed_style(cx: &Cx<'_>, a: ComputedStyleIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let props: Vec<String> = a.properties.unwrap_or_else(|| DEFAULT_STYLE.iter().map(|p| p.to_string()).collect());
    if props.is_empty() || props.len() > 50 || props.iter().any(|p| p.is_empty() || p.len() > 100) {
        return Err(invalid("properties", "give 1 to 50 CSS property names"));
    }
    let l = live(cx, &a.session_id).await?;
    let f = "function(ps) { const s = getComputedStyle(this); const o = {}; for (const p of ps) o[p] = s.getPropertyValue(p); return o; }";
    let v = on_element(&l.session, &target, f, vec![json!(props)], t).await?;
    Ok(Reply::data(json!({"style": v})))
}

page_input! {
    /// The page's form fields (input, select, textarea) in document order, each with its ref (for fill, tap, select_option, check), type, name, label, value, whether it is required or checked: a quick map of what a form asks for (at most 200).
    GetFormFieldsIn
}

pub async fn get_form_fields(cx: &Cx<'_>, a: GetFormFieldsIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    const QUERY: &str = "input:not([type=hidden]), select, textarea";
    let info = l
        .session
        .evaluate(
            &format!(
                "[...document.querySelectorAll({})].slice(0, 200).map(e => ({{type: e.type || e.localName, name: e.name || null, \
                 label: ((e.labels && e.labels[0] && e.labels[0].innerText) || e.getAttribute('aria-label') || e.placeholder || '').trim(), \
                 value: e.type === 'password' ? (e.value ? '••••' : '') : e.value, required: !!e.required, \
                 checked: 'checked' in e && (e.type === 'checkbox' || e.type === 'radio') ? e.checked : null}}))",
                json!(QUERY)
            ),
            false,
            t,
        )
        .await?;
    let mut fields = info.as_array().cloned().unwrap_or_default();
    let root = l.session.dom_document(t).await?.node_id.unwrap_or(1);
    let ids = l.session.query_selector_all(root, QUERY, t).await?;
    for (field, id) in fields.iter_mut().zip(ids) {
        let d = l.session.describe_node(id, t).await?;
        if let Some(b) = d.backend_node_id {
            field["ref"] = json!(snapshot::ref_of(b));
        }
    }
    let text = fields
        .iter()
        .map(|f| {
            format!(
                "{} {} {:?} = {:?}",
                f["ref"].as_str().unwrap_or("?"),
                f["type"].as_str().unwrap_or(""),
                f["label"].as_str().unwrap_or(""),
                f["value"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Reply::data(json!({"fields": fields})).with_text(if text.is_empty() { "No form fields.".into() } else { text }))
}
