//! The website as a place to work: the playground (a real job through the screenshots
//! service, its page followed to the file), the screenshots list (filters, search, cursor
//! pages) and a job's page, usage over time (by product and by key, with the allowance),
//! getting started until the first job. (The front page's live example is tested against the
//! binary: `crates/capture-cli/tests/api/front_page.rs`.)

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Api, Db, Opts, Site, TestApp, assert_px, decode, eventually, solid};
use crate::web::{PASSWORD, email, pdf, png, spawn, upload};
use capture_testkit::both_dbs;
use capture_testkit::visitor::{Page, Visitor};

/// The `<tr>…</tr>`s of the table with id `id`.
fn rows<'a>(page: &'a Page, id: &str) -> Vec<&'a str> {
    let Some(start) = page.body.find(&format!("<table id=\"{id}\"")) else { return vec![] };
    let table = page.body[start..].split("</table>").next().unwrap();
    let body = table.split("<tbody>").nth(1).unwrap_or("").split("</tbody>").next().unwrap();
    body.split("<tr>").skip(1).map(|r| r.split("</tr>").next().unwrap()).collect()
}

/// The job ids a screenshots page links to, in order.
fn listed(page: &Page) -> Vec<String> {
    rows(page, "shots")
        .iter()
        .map(|r| {
            let i = r.find("/dashboard/screenshots/scr_").expect("a job link") + "/dashboard/screenshots/".len();
            r[i..].split('"').next().unwrap().to_string()
        })
        .collect()
}

/// The `href` of the "Older screenshots" link, unescaped.
fn next_link(page: &Page) -> Option<String> {
    let i = page.body.find("rel=\"next\"")?;
    let before = &page.body[..i];
    let h = before.rfind("href=\"")? + 6;
    Some(before[h..].split('"').next()?.replace("&amp;", "&").replace("&#x2f;", "/"))
}

async fn job_page_until_final(v: &Visitor, href: &str) -> Page {
    eventually("the job finishes", Duration::from_secs(90), || async move {
        let p = v.get(href).await.expect(200);
        if !p.body.contains("data-events=") {
            return Ok(p);
        }
        // A running job's page refreshes itself without JavaScript.
        assert!(p.body.contains("<noscript><meta http-equiv=\"refresh\" content=\"2\"></noscript>"), "{}", p.body);
        Err(p.body)
    })
    .await
}

async fn the_playground_captures_a_page_and_its_job_page_shows_the_file(db: Db) {
    let site = Site::start(vec![("/green", "text/html", solid("rgb(20, 160, 60)"))]).await;
    let app = TestApp::spawn(Opts::full(db).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, csrf) = v.dashboard().await;
    // A webhook endpoint, so the job causes a delivery (nothing listens there).
    v.submit("/dashboard/webhooks", &csrf, &[("url", "http://127.0.0.1:9/hook"), ("events", "*")]).await.expect(200);

    let form = v.get("/dashboard/playground").await.expect(200);
    assert!(form.body.contains("<label for=\"pg-url\">Page URL</label>"), "{}", form.body);
    assert!(form.body.contains("href=\"/dashboard/playground\" aria-current=\"page\""));
    assert!(form.body.contains("<strong id=\"remaining\">100</strong> left"), "the allowance is shown");
    assert!(form.body.contains(&format!("curl -X POST {}/v1/screenshot", app.base)), "a curl snippet");
    assert!(form.body.contains("$CAPTURE_API_KEY") && form.body.contains("process.env.CAPTURE_API_KEY"));
    assert!(form.body.contains("os.environ[&quot;CAPTURE_API_KEY&quot;]"), "a Python snippet");

    // Bad input: the form again, with the message and what was typed; nothing is used.
    let bad = v
        .submit(
            "/dashboard/playground",
            &csrf,
            &[("url", site.url("/green").as_str()), ("width", "50"), ("format", "png")],
        )
        .await
        .expect(400);
    assert!(bad.body.contains("role=\"alert\">The width must be"), "{}", bad.body);
    assert!(bad.body.contains(&format!("value=\"{}\"", site.url("/green"))), "the URL is kept");
    let no_scheme = v.submit("/dashboard/playground", &csrf, &[("url", "example")]).await.expect(400);
    assert!(no_scheme.body.contains("The URL is not a valid URL"), "{}", no_scheme.body);

    let fields = [
        ("url", site.url("/green")),
        ("width", "400".into()),
        ("height", "300".into()),
        ("deviceScaleFactor", "1".into()),
        ("format", "png".into()),
        ("darkMode", "on".into()),
        ("waitUntil", "load".into()),
        ("delay", "0".into()),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let created = v.submit("/dashboard/playground", &csrf, &fields).await.expect(303);
    let href = created.location().to_string();
    assert!(href.starts_with("/dashboard/screenshots/scr_"), "{href}");
    let id = href.rsplit('/').next().unwrap().to_string();

    let done = job_page_until_final(&v, &href).await;
    assert!(done.body.contains("Status: <strong>done</strong>"), "{}", done.body);
    // The file: shown, downloadable, the right picture.
    let i =
        done.body.find("id=\"result-image\" src=\"").expect("the image is shown") + "id=\"result-image\" src=\"".len();
    let src = done.body[i..].split('"').next().unwrap().replace("&#x2f;", "/").replace("&amp;", "&");
    let (status, _, bytes) = app.fetch(&src).await;
    assert_eq!(status, 200);
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (400, 300));
    assert_px(&img, 200, 150, [20, 160, 60]);
    assert!(done.body.contains("alt=\"Capture of "), "the image has a text alternative");
    assert!(done.body.contains(" download>Download png</a>"), "{}", done.body);
    // Options in the contract's names, timings, events.
    assert!(done.body.contains("<dt><code>width</code></dt><dd>400</dd>"), "{}", done.body);
    assert!(done.body.contains("<dt><code>darkMode</code></dt><dd>true</dd>"));
    assert!(done.body.contains("<dt><code>waitUntil</code></dt><dd>load</dd>"));
    assert!(done.body.contains("<dt>Capture</dt>") && done.body.contains("<dt>Total</dt>"));
    let events = rows(&done, "events");
    assert!(events.first().unwrap().contains("pending") && events.last().unwrap().contains("done"), "{events:?}");
    // The same request as code, for this job.
    assert!(done.body.contains("&quot;darkMode&quot;: True"), "the Python snippet has the options");
    // The delivery it caused, once the sender picked it up.
    eventually("the delivery is listed", Duration::from_secs(30), || async {
        let p = v.get(&href).await.expect(200);
        let listed = rows(&p, "deliveries").iter().any(|r| r.contains("screenshot.completed"));
        if listed { Ok(()) } else { Err(p.body) }
    })
    .await;
    // The event stream the page follows with JavaScript, for its owner only.
    let stream = v.get(&format!("{href}/events")).await.expect(200);
    assert!(stream.header("content-type").starts_with("text/event-stream"));
    assert!(stream.body.contains("event: done") && stream.body.contains(&id), "{}", stream.body);

    // Share from the job's page, and come back to it.
    let (_, csrf) = v.dashboard().await;
    let shared =
        v.submit(&format!("/dashboard/screenshots/{id}/share"), &csrf, &[("back", href.as_str())]).await.expect(303);
    assert_eq!(shared.location(), href);
    assert!(v.get(&href).await.body.contains("class=\"share-link\""));
    let elsewhere =
        v.submit(&format!("/dashboard/screenshots/{id}/unshare"), &csrf, &[("back", "https://evil.example/")]).await;
    assert_eq!(elsewhere.location(), "/dashboard#screenshots", "only a job page is a way back");

    // A PDF: the first page as a preview, and the download through the session.
    let (_, csrf) = v.dashboard().await;
    let pdf_fields = [("url", site.url("/green")), ("format", "pdf".to_string()), ("waitUntil", "load".to_string())];
    let pdf_fields: Vec<(&str, &str)> = pdf_fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let pdf_href = v.submit("/dashboard/playground", &csrf, &pdf_fields).await.expect(303).location().to_string();
    let pdf_page = job_page_until_final(&v, &pdf_href).await;
    assert!(pdf_page.body.contains("Status: <strong>done</strong>"), "{}", pdf_page.body);
    assert!(pdf_page.body.contains("<dt><code>pdf</code></dt><dd>true</dd>"), "{}", pdf_page.body);
    assert!(pdf_page.body.contains("alt=\"Preview of the first page of the PDF of "), "{}", pdf_page.body);
    let download = format!("{pdf_href}/pdf");
    assert!(pdf_page.body.contains(&format!("<a class=\"button\" href=\"{download}\" download>Download PDF</a>")));
    let file = v.get(&download).await.expect(200);
    assert_eq!(file.header("content-type"), "application/pdf");
    assert!(file.body.starts_with("%PDF"));

    // Two actions were used, through the account's quota, with no key.
    let (dash, _) = v.dashboard().await;
    assert!(dash.body.contains("<strong>2</strong> of <strong>100</strong> actions used"), "{}", dash.body);
    assert!(!dash.body.contains("id=\"start\""), "getting started is gone after the first job");

    // Nobody else sees it.
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    other.get(&href).await.expect(404);
    other.get(&format!("{href}/events")).await.expect(404);
    Visitor::new(&app).get(&href).await.expect(303);
}
both_dbs!(the_playground_captures_a_page_and_its_job_page_shows_the_file);

async fn the_screenshots_list_filters_searches_and_pages(db: Db) {
    let app = spawn(db).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, key) = v.create_key("list").await;
    // Done uploads (png, pdf) and pending captures (jpeg; no worker runs here).
    let mut png_ids = Vec::new();
    for name in ["alpha.png", "beta.png", "gamma.png"] {
        png_ids.push(upload(&app, &key, name, png(40, 30, [10, 20, 30])).await["id"].as_str().unwrap().to_string());
    }
    let report = upload(&app, &key, "Quarterly-Report.pdf", pdf()).await["id"].as_str().unwrap().to_string();
    let mut pending = Vec::new();
    for path in ["/one", "/two"] {
        let job = app.create(&key, json!({"url": format!("https://pending.example{path}"), "format": "jpeg"})).await;
        pending.push(job["id"].as_str().unwrap().to_string());
    }

    let all = v.get("/dashboard/screenshots").await.expect(200);
    assert!(all.body.contains("href=\"/dashboard/screenshots\" aria-current=\"page\""));
    assert!(all.body.contains("<label for=\"f-q\">Search URL or title</label>"));
    let mut newest_first: Vec<String> = pending.iter().rev().cloned().collect();
    newest_first.push(report.clone());
    newest_first.extend(png_ids.iter().rev().cloned());
    assert_eq!(listed(&all), newest_first);

    let pending_page = v.get("/dashboard/screenshots?status=pending").await.expect(200);
    assert_eq!(listed(&pending_page), pending.iter().rev().cloned().collect::<Vec<_>>());
    assert!(pending_page.body.contains("<option value=\"pending\" selected>"), "the filter is kept");
    let pdfs = v.get("/dashboard/screenshots?format=pdf&status=done").await.expect(200);
    assert_eq!(listed(&pdfs), vec![report.clone()]);
    let found = v.get("/dashboard/screenshots?q=quarterly").await.expect(200);
    assert_eq!(listed(&found), vec![report.clone()], "search ignores case");
    assert!(found.body.contains("value=\"quarterly\""));
    let by_url = v.get("/dashboard/screenshots?q=pending.example%2Ftwo").await.expect(200);
    assert_eq!(listed(&by_url), vec![pending[1].clone()]);
    let none = v.get("/dashboard/screenshots?q=nothing-like-this&format=png").await.expect(200);
    assert!(none.body.contains("No screenshots match these filters."));

    // Pages of two with the cursor, filters kept: every done job once, in order.
    let mut seen = Vec::new();
    let mut next = Some("/dashboard/screenshots?status=done&limit=2".to_string());
    let mut pages = 0;
    while let Some(href) = next {
        let p = v.get(&href).await.expect(200);
        assert!(href == "/dashboard/screenshots?status=done&limit=2" || href.contains("status=done"), "{href}");
        seen.extend(listed(&p));
        next = next_link(&p);
        pages += 1;
        assert!(pages < 10);
    }
    let done: Vec<String> = newest_first.iter().filter(|i| !pending.contains(i)).cloned().collect();
    assert_eq!(seen, done);

    // Bad filters are a 400 page, not a 500.
    for q in ["status=lost", "format=tiff", "limit=0", "before=yesterday"] {
        let p = v.get(&format!("/dashboard/screenshots?{q}")).await;
        assert_eq!(p.status, 400, "{q}: {}", p.body);
        assert!(p.header("content-type").starts_with("text/html"));
    }

    // A pending job's page follows it; an upload's page says it has no options.
    let p = v.get(&format!("/dashboard/screenshots/{}", pending[0])).await.expect(200);
    assert!(p.body.contains("data-events=\"/dashboard/screenshots/"), "{}", p.body);
    assert!(p.body.contains("<noscript><meta http-equiv=\"refresh\" content=\"2\"></noscript>"));
    assert!(p.body.contains("<dt><code>format</code></dt><dd>jpeg</dd>"), "{}", p.body);
    let u = v.get(&format!("/dashboard/screenshots/{report}")).await.expect(200);
    assert!(u.body.contains("no capture options") && u.body.contains("Download PDF"), "{}", u.body);
    assert!(!u.body.contains("http-equiv=\"refresh\""));

    // Another account's list is empty and its job pages are not found.
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    let empty = other.get("/dashboard/screenshots").await.expect(200);
    assert!(listed(&empty).is_empty() && empty.body.contains("No screenshots yet"));
    other.get(&format!("/dashboard/screenshots/{report}")).await.expect(404);
    other.get("/dashboard/screenshots/not-an-id").await.expect(404);
}
both_dbs!(the_screenshots_list_filters_searches_and_pages);

async fn usage_over_time_counts_todays_actions_by_product_and_by_key(db: Db) {
    let app = spawn(db).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, alpha) = v.create_key("alpha").await;
    let (_, beta) = v.create_key("beta").await;
    let empty = v.get("/dashboard/usage").await.expect(200);
    assert!(empty.body.contains("data-total=\"0\""), "{}", empty.body);
    upload(&app, &alpha, "a.png", png(20, 20, [1, 2, 3])).await;
    upload(&app, &alpha, "b.png", png(20, 20, [1, 2, 3])).await;
    upload(&app, &beta, "c.png", png(20, 20, [1, 2, 3])).await;
    let r = app.post_json(&beta, "/v1/audits", &json!({"url": "https://audited.example/"})).await;
    assert_eq!(r.status(), 202);
    // What the audit reserved is what the balance says beyond the three uploads.
    let balance: Value = app.get(&alpha, "/v1/account/balance").await.json().await.unwrap();
    let total = balance["usage"]["used"].as_i64().unwrap();
    let audit_actions = total - 3;
    assert!(audit_actions >= 1, "{balance}");

    let p = v.get("/dashboard/usage").await.expect(200);
    assert!(p.body.contains("href=\"/dashboard/usage\" aria-current=\"page\""));
    let this = p.body.split("<section id=\"usage-this\"").nth(1).unwrap().split("</section>").next().unwrap();
    assert!(this.contains(&format!("data-total=\"{total}\"")), "{this}");
    assert!(this.contains("role=\"img\"") && this.contains("<title id=\"chart-this-title\">"), "the chart is named");
    assert!(this.contains("class=\"quota\""), "the allowance line is drawn");
    assert!(this.contains("class=\"bar\""), "bars are drawn");
    let table = rows(&p, "usage-this-table");
    let today = table.last().expect("a row for today");
    // Columns: screenshots, audits, ads, runs, total, running total.
    assert!(today.contains(&format!("<td class=\"num\">3</td><td class=\"num\">{audit_actions}</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">{total}</td><td class=\"num\">{total}</td>")), "{today}");
    assert!(p.body.contains("<th scope=\"col\">Screenshots</th><th scope=\"col\">Audits</th>"));
    let last = p.body.split("<section id=\"usage-previous\"").nth(1).unwrap();
    assert!(last.contains("data-total=\"0\""), "last month had nothing");

    let k = v.get("/dashboard/usage?by=key").await.expect(200);
    assert!(
        k.body.contains("Key “alpha”: 2") && k.body.contains(&format!("Key “beta”: {}", 1 + audit_actions)),
        "{}",
        k.body
    );
    v.get("/dashboard/usage?by=colour").await.expect(400);
    Visitor::new(&app).get("/dashboard/usage").await.expect(303);
}
both_dbs!(usage_over_time_counts_todays_actions_by_product_and_by_key);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn getting_started_shows_until_the_first_job() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (dash, _) = v.dashboard().await;
    let start =
        dash.body.split("<section id=\"start\"").nth(1).expect("getting started").split("</section>").next().unwrap();
    assert!(start.contains("Name it below"), "no key yet: {start}");
    assert!(start.contains(&format!("curl -X POST {}/v1/screenshot", app.base)), "{start}");
    assert!(start.contains(&format!("value=\"{}/mcp\"", app.base)), "the MCP URL, copyable: {start}");
    assert!(start.contains(&format!("claude mcp add --transport http capture {}/mcp", app.base)));
    assert!(start.contains("codex mcp add capture --url"));
    assert!(start.contains(&format!("capture login --server {}", app.base)));
    for id in ["start-curl-code", "start-mcp-url", "start-claude", "start-codex", "start-cli-code"] {
        assert!(start.contains(&format!("<label for=\"{id}\">")), "{id} is labelled");
        assert!(start.contains(&format!("data-copy=\"{id}\"")), "{id} has a copy button");
    }
    let (_, key) = v.create_key("first").await;
    let (dash, _) = v.dashboard().await;
    assert!(dash.body.contains("Done: you have a key."), "the first step is ticked");
    upload(&app, &key, "first.png", png(10, 10, [0, 0, 0])).await;
    let (dash, _) = v.dashboard().await;
    assert!(!dash.body.contains("id=\"start\""), "gone once a job exists");
}
