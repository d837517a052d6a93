//! The page as text (issue 41), read from the same load as the capture: Markdown that keeps
//! headings, lists, absolute links and images, GFM tables, code blocks with their language and
//! block quotes, and leaves out what is hidden, scripts and styles; the main content
//! (Readability) without navigation, sidebars and footers; selectors that narrow or prune; and
//! a page whose own scripts break the built-ins cannot break the reading.

mod support;

use std::sync::Arc;

use capture_browser::{BrowserPool, CaptureError, CaptureOutput};
use capture_core::options::{ContentFormat, ContentSettings, ExtractIn, ImageFormat};
use support::*;

const ARTICLE: &str = r#"<!doctype html><html lang="en"><head><title>Roasting coffee at home, step by step | Bean Blog</title>
<meta name="author" content="Ada Roast">
<meta property="article:published_time" content="2026-11-30T08:00:00Z">
<style>.promo { color: red }</style>
<script>window.tracked = true; document.write('');</script></head>
<body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/about">About us</a></nav>
<aside class="sidebar"><h3>Popular posts</h3><ul><li><a href="/p/1">Grinders ranked</a></li><li><a href="/p/2">Cold brew</a></li></ul></aside>
<main><article>
<h1>Roasting coffee at home, step by step</h1>
<p class="byline">By Ada Roast</p>
<p>Roasting coffee at home takes a pan, a <a href="/guides/heat">steady heat</a> and about fifteen minutes. The beans pass through yellow, cinnamon and the first crack, and every stage changes what ends up in the cup. This guide walks through each one.</p>
<p>Green beans keep for a year; roasted ones for a few weeks. Buy green, roast small batches, and let them rest a day before brewing so the gas can escape and the flavour can settle into what you want.</p>
<h2>What you need</h2>
<ul><li>Green beans</li><li>A heavy pan</li><li>A colander to cool them</li></ul>
<ol><li>Heat the pan</li><li>Stir without stopping</li></ol>
<img src="/img/cup.png" alt="A cup of coffee" width="40" height="40">
<h2>Roast levels</h2>
<table><tr><td>Light</td><td>first crack</td></tr><tr><td>Dark | oily</td><td>second crack</td></tr></table>
<table><thead><tr><th>Origin</th><th>Roast</th></tr></thead><tbody><tr><td>Kenya</td><td>light</td></tr><tr><td>Sumatra</td><td>dark</td></tr></tbody></table>
<pre><code class="language-rust">fn main() {
    println!("crack");
}</code></pre>
<blockquote><p>Coffee is a language in itself.</p></blockquote>
<p class="hidden-note" style="display:none">Secret coupon SAVE50</p>
<div style="visibility:hidden">Invisible upsell</div>
<noscript>Enable JavaScript</noscript>
<p>Once the beans reach the colour you like, pour them into the colander and shake them until they are cool enough to hold, which stops the roast where you want it.</p>
</article></main>
<section class="comments"><h3>Comments</h3><p>First!</p></section>
<footer><p>© 2026 Bean Blog · <a href="/privacy">Privacy</a></p></footer>
<script>document.body.insertAdjacentHTML('beforeend', '<p id="late">Added by a script</p>');</script>
</body></html>"#;

/// A page that breaks the built-ins of its own world: the reading runs in another.
const HOSTILE: &str = r#"<!doctype html><html><head><title>Hostile</title></head><body>
<h1>Still readable</h1><p>Text that must come through.</p>
<script>
Array.prototype.map = function () { throw new Error('no map'); };
Array.prototype.filter = function () { throw new Error('no filter'); };
Node.prototype.cloneNode = function () { throw new Error('no clone'); };
window.getComputedStyle = function () { throw new Error('no style'); };
JSON.stringify = function () { return '"tampered"'; };
</script></body></html>"#;

async fn pool() -> (Arc<BrowserPool>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    (BrowserPool::start(cfg).await.expect("pool starts"), dir)
}

async fn site() -> Server {
    Server::start(Arc::new(|path: &str, _: &str| match path {
        "/hostile" => html(HOSTILE),
        "/img/cup.png" => Resp::Full(200, "image/png", solid_png(40, 40, [120, 60, 20]), 0),
        "/table" => html(&big_table()),
        "/product" => html(PRODUCT),
        "/shadow" => html(SHADOW),
        _ => html(ARTICLE),
    }))
    .await
}

fn settings(main: bool, include: &[&str], exclude: &[&str]) -> ContentSettings {
    ContentSettings {
        formats: vec![ContentFormat::Markdown, ContentFormat::Text, ContentFormat::Html],
        main_content: main,
        include_selectors: include.iter().map(|s| s.to_string()).collect(),
        exclude_selectors: exclude.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

async fn read(pool: &BrowserPool, url: String, s: ContentSettings) -> Result<CaptureOutput, CaptureError> {
    let mut r = url_req(url);
    r.options.content = Some(s);
    pool.capture(r).await
}

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn markdown_keeps_structure_and_leaves_out_what_is_hidden() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let out = read(&pool, srv.url("/article"), settings(false, &[], &[])).await.expect("capture");
    // The image is still there: the content comes beside it.
    assert_eq!(out.content_type, "image/png");
    let c = out.content.expect("content");
    let md = lines(&c.markdown);
    let base = srv.url("");
    for want in [
        "# Roasting coffee at home, step by step".to_string(),
        "## What you need".to_string(),
        "- Green beans".to_string(),
        "1. Heat the pan".to_string(),
        format!("![A cup of coffee]({base}/img/cup.png)"),
        "| Origin | Roast |".to_string(),
        "| --- | --- |".to_string(),
        "| Kenya | light |".to_string(),
        "| Sumatra | dark |".to_string(),
        // A table without a header row keeps every row, with an empty header; a pipe in a
        // cell is escaped.
        "|  |  |".to_string(),
        "| Light | first crack |".to_string(),
        "| Dark \\| oily | second crack |".to_string(),
        "```rust".to_string(),
        "    println!(\"crack\");".to_string(),
        "> Coffee is a language in itself.".to_string(),
        "Added by a script".to_string(),
    ] {
        assert!(md.contains(&want.as_str()), "missing line {want:?} in:\n{}", c.markdown);
    }
    // Links are absolute.
    assert!(
        c.markdown.contains(&format!("[steady heat]({base}/guides/heat)")),
        "relative link not made absolute:\n{}",
        c.markdown
    );
    // Hidden, script, style and noscript content is not there.
    for gone in ["SAVE50", "Invisible upsell", "window.tracked", "color: red", "Enable JavaScript"] {
        assert!(!c.markdown.contains(gone), "{gone} in markdown:\n{}", c.markdown);
        assert!(!c.text.contains(gone), "{gone} in text:\n{}", c.text);
        assert!(!c.html.contains(gone), "{gone} in html");
    }
    // The whole page: the navigation and footer are kept without mainContent.
    assert!(c.markdown.contains("About us"), "{}", c.markdown);
    assert_eq!(c.title.as_deref(), Some("Roasting coffee at home, step by step | Bean Blog"));
    assert!(!c.article);
    // Text: a line per block, tabs between cells.
    let text = lines(&c.text);
    assert!(text.contains(&"Roasting coffee at home, step by step"), "{}", c.text);
    assert!(text.contains(&"Kenya\tlight"), "{}", c.text);
    assert!(text.contains(&"Green beans"), "{}", c.text);
    // HTML: no scripts, absolute URLs, a document of its own.
    assert!(
        c.html.starts_with("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"),
        "{}",
        &c.html[..200]
    );
    assert!(!c.html.contains("<script"), "script kept");
    assert!(c.html.contains(&format!("src=\"{base}/img/cup.png\"")), "image URL not absolute");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn main_content_keeps_the_article_and_its_own_title() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let c = read(&pool, srv.url("/article"), settings(true, &[], &[])).await.expect("capture").content.unwrap();
    assert!(c.article, "Readability found no article:\n{}", c.markdown);
    assert_eq!(c.title.as_deref(), Some("Roasting coffee at home, step by step"));
    assert_eq!(c.published_time.as_deref(), Some("2026-11-30T08:00:00Z"));
    for kept in ["Green beans", "| Kenya | light |", "fifteen minutes", "> Coffee is a language in itself."] {
        assert!(c.markdown.contains(kept), "{kept} missing:\n{}", c.markdown);
    }
    for gone in ["About us", "Popular posts", "Grinders ranked", "Privacy", "First!"] {
        assert!(!c.markdown.contains(gone), "{gone} kept:\n{}", c.markdown);
        assert!(!c.text.contains(gone), "{gone} kept in text:\n{}", c.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn selectors_narrow_and_prune_and_a_bad_one_names_its_field() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let c =
        read(&pool, srv.url("/article"), settings(false, &["table", "h2"], &["thead"])).await.unwrap().content.unwrap();
    assert_eq!(
        lines(&c.text),
        vec![
            "What you need",
            "Roast levels",
            "Light\tfirst crack",
            "Dark | oily\tsecond crack",
            "Kenya\tlight",
            "Sumatra\tdark"
        ],
        "{}",
        c.text
    );
    assert!(!c.markdown.contains("Origin"), "{}", c.markdown);
    let err = read(&pool, srv.url("/article"), settings(false, &[], &["p", "[["])).await.unwrap_err();
    assert_eq!(err.to_string(), "excludeSelectors[1]: '[[' is not a valid CSS selector");
    let err = read(&pool, srv.url("/article"), settings(false, &["a:::b"], &[])).await.unwrap_err();
    assert_eq!(err.to_string(), "includeSelectors[0]: 'a:::b' is not a valid CSS selector");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_that_breaks_its_own_built_ins_is_still_read() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let c = read(&pool, srv.url("/hostile"), settings(false, &[], &[])).await.expect("capture").content.unwrap();
    assert_eq!(c.markdown, "# Still readable\n\nText that must come through.");
    assert_eq!(c.text, "Still readable\nText that must come through.");
}

/// A page of 5,000 elements: a table of 1,000 rows of four cells.
fn big_table() -> String {
    let mut h = String::from(
        "<!doctype html><html><head><title>Stock</title></head><body><h1>Stock</h1><table><thead><tr><th>Row</th><th>Item</th><th>Count</th></tr></thead><tbody>",
    );
    for i in 0..1000 {
        h.push_str(&format!("<tr><td>row {i}</td><td>item-{}</td><td>{}</td></tr>", "x".repeat(i % 13), i * 7));
    }
    h.push_str("</tbody></table></body></html>");
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_chars_pages_a_5000_element_page_and_keeps_every_row_whole() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let row = regex_lite_row();
    let (mut from, mut rows, mut pages) = (Some(0u64), Vec::new(), 0);
    let mut total = None;
    while let Some(f) = from {
        let mut r = url_req(srv.url("/table"));
        r.options.format = ImageFormat::Markdown;
        r.options.content = Some(ContentSettings {
            formats: vec![ContentFormat::Markdown],
            max_chars: Some(4000),
            from: f,
            ..Default::default()
        });
        let out = pool.capture(r).await.expect("capture");
        let md = String::from_utf8(out.bytes).unwrap();
        let report = out.metadata.content.clone().expect("report");
        assert_eq!(report.from, f);
        // The front matter, then the part: within maxChars, ending after a whole line.
        let body = md.split_once("\n---\n\n").expect("front matter").1;
        assert!(body.chars().count() <= 4001, "{} chars", body.chars().count());
        assert_eq!(report.chars, md.chars().count() as u64);
        assert!(*total.get_or_insert(report.total_chars) == report.total_chars);
        for line in body.lines().filter(|l| l.starts_with('|')) {
            if line.starts_with("| row ") {
                assert!(row(line), "a row cut or broken: {line:?}");
                rows.push(line.to_string());
            }
        }
        pages += 1;
        assert!(pages < 40, "paging does not end");
        from = report.next_from;
    }
    // Every row, once, in order.
    assert_eq!(rows.len(), 1000, "{pages} pages");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r, &format!("| row {i} | item-{} | {} |", "x".repeat(i % 13), i * 7));
    }
    assert!(pages >= 8, "{pages} pages for {total:?} characters");
}

/// A whole row of the stock table: `| row N | item x… | M |`.
fn regex_lite_row() -> impl Fn(&str) -> bool {
    |line: &str| {
        let cells: Vec<&str> = line.split(" | ").collect();
        line.starts_with("| row ") && line.ends_with(" |") && cells.len() == 3
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn text_forms_beside_the_image_come_from_the_same_load() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/article"));
    r.options.content = Some(ContentSettings {
        formats: vec![ContentFormat::Markdown, ContentFormat::Text],
        main_content: true,
        ..Default::default()
    });
    let out = pool.capture(r).await.expect("capture");
    assert_eq!(out.content_type, "image/png");
    assert!(image::load_from_memory(&out.bytes).is_ok(), "the image is still the job's file");
    let forms: Vec<ContentFormat> = out.texts.iter().map(|t| t.0).collect();
    assert_eq!(forms, vec![ContentFormat::Markdown, ContentFormat::Text]);
    let md = String::from_utf8(out.texts[0].1.clone()).unwrap();
    let text = String::from_utf8(out.texts[1].1.clone()).unwrap();
    assert!(md.starts_with("---\ntitle: \"Roasting coffee at home, step by step\"\n"), "{md}");
    assert!(md.contains("\n| Kenya | light |\n"), "{md}");
    assert!(text.contains("\nRoasting coffee at home takes a pan, a steady heat and about fifteen minutes."), "{text}");
    assert!(!text.contains("About us"), "{text}");
    // The report is the first form's (the Markdown file).
    let report = out.metadata.content.expect("report");
    assert_eq!(report.chars, md.chars().count() as u64);
    assert_eq!(report.next_from, None);
    assert!(report.article);
}

const PRODUCT: &str = r#"<!doctype html><html><head><title>Grinder</title>
<meta property="product:price:amount" content="1299.00">
<link rel="canonical" href="/p/grinder"></head><body>
<h1 class="name">  Burr   grinder  </h1>
<p class="price">Now only $1,299.50!</p>
<p class="price-eu">1.299,50 €</p>
<span class="stock" data-in-stock="">In stock</span>
<time class="released" datetime="2026-03-01T10:00:00Z">March 1st</time>
<ul class="tags"><li>steel</li><li>conical</li><li> </li><li>quiet</li></ul>
<a class="manual" href="/docs/manual.pdf">Manual</a>
<div class="desc"><p>A <b>quiet</b> grinder.</p><script>x()</script></div>
<p class="rating" style="display:none">4.5</p>
</body></html>"#;

fn rules(v: serde_json::Value) -> capture_core::options::ExtractSettings {
    serde_json::from_value::<ExtractIn>(v).unwrap().check().expect("valid extract")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extract_reads_each_field_by_its_rule_and_says_where_from() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/product"));
    r.options.extract = Some(rules(serde_json::json!({"rules": {
        "name": {"selector": ".name"},
        "price": {"selector": ".price", "type": "number"},
        "priceEu": {"selector": ".price-eu", "type": "number"},
        "metaPrice": {"selector": "meta[property='product:price:amount']", "attr": "content", "type": "number"},
        "inStock": {"selector": ".stock", "attr": "data-in-stock", "type": "boolean"},
        "released": {"selector": "time.released", "type": "date"},
        "tags": {"selector": ".tags li", "all": true},
        "manual": {"selector": "a.manual", "type": "url"},
        "desc": {"selector": ".desc", "type": "markdown"},
        "descHtml": {"selector": ".desc", "type": "html"},
        "sku": {"selector": ".sku", "fallback": [{"selector": "[data-sku]", "attr": "data-sku"}]},
        "title": {"selector": ".headline", "fallback": [{"selector": "h2"}, {"selector": "h1"}]},
        "none": {"selector": ".nothing", "all": true}
    }, "schema": {"type": "object", "properties": {"price": {"type": "number"}}}})));
    let out = pool.capture(r).await.expect("capture");
    let x = out.metadata.extract.expect("extracted");
    let base = srv.url("");
    assert_eq!(
        x.data,
        serde_json::json!({
            "name": "Burr grinder",
            "price": 1299.5,
            "priceEu": 1299.5,
            "metaPrice": 1299,
            "inStock": true,
            "released": "2026-03-01T10:00:00.000Z",
            "tags": ["steel", "conical", "quiet"],
            "manual": format!("{base}/docs/manual.pdf"),
            "desc": "A **quiet** grinder.",
            "descHtml": "<p>A <b>quiet</b> grinder.</p>",
            "sku": null,
            "title": "Burr grinder",
            "none": []
        })
    );
    assert_eq!(x.sources["title"].as_deref(), Some("h1"));
    assert_eq!(x.sources["sku"], None);
    assert_eq!(x.sources["price"].as_deref(), Some(".price"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extract_fails_naming_a_bad_selector_or_the_schema_path() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/product"));
    r.options.extract =
        Some(rules(serde_json::json!({"rules": {"sku": {"selector": ".sku", "fallback": [{"selector": "a[[b"}]}}})));
    let err = pool.capture(r).await.unwrap_err();
    assert_eq!(err.to_string(), "extract.rules.sku.fallback[0].selector: 'a[[b' is not a valid CSS selector");
    let mut r = url_req(srv.url("/product"));
    r.options.extract = Some(rules(serde_json::json!({"rules": {"price": {"selector": ".price"}},
        "schema": {"type": "object", "properties": {"price": {"type": "number"}}}})));
    let err = pool.capture(r).await.unwrap_err();
    assert!(matches!(err, CaptureError::Rejected(_)), "{err:?}");
    assert!(err.to_string().starts_with("extract: the data does not match the schema at /price: "), "{err}");
}

/// A page built of web components: open shadow roots with slots, one nested in another, and
/// hidden parts inside them.
const SHADOW: &str = r#"<!doctype html><html><head><title>Components</title></head><body>
<h1>Made of components</h1>
<product-card><span slot="name">Burr grinder</span><p>Grinds evenly.</p></product-card>
<script>
customElements.define('price-tag', class extends HTMLElement {
  constructor() { super(); this.attachShadow({ mode: 'open' }).innerHTML = '<strong>$129</strong><style>strong{color:red}</style>'; }
});
customElements.define('product-card', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<h2><slot name="name">Unnamed</slot></h2><slot></slot><price-tag></price-tag>' +
      '<p hidden>Internal note</p><ul><li>In stock</li><li><a href="/buy">Buy now</a></li></ul><slot name="extra">No extras</slot>';
  }
});
</script></body></html>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_open_shadow_roots_show_is_read_in_place() {
    let srv = site().await;
    let (pool, _dir) = pool().await;
    let c = read(&pool, srv.url("/shadow"), settings(false, &[], &[])).await.expect("capture").content.unwrap();
    let base = srv.url("");
    assert_eq!(
        c.markdown,
        format!(
            "# Made of components\n\n## Burr grinder\n\nGrinds evenly.\n\n**$129**\n\n- In stock\n- [Buy now]({base}/buy)\n\nNo extras"
        ),
        "{}",
        c.markdown
    );
    assert!(!c.text.contains("Internal note") && !c.text.contains("Unnamed"), "{}", c.text);
}
