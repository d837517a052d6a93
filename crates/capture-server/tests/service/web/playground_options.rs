//! The playground's "More options": an input for every option of the request the main form
//! does not show, generated from the request's schema, sent like the others and kept when the
//! form comes back with an error.

use crate::helpers::Db;
use crate::web::{PASSWORD, email, spawn};
use capture_testkit::both_dbs;
use capture_testkit::visitor::Visitor;

/// The `<details id="more-options">` section of a page, and the page without it.
fn split_more(body: &str) -> (&str, String) {
    let start = body.find("<details id=\"more-options\"").expect("a More options section");
    let end = start + body[start..].find("</details>").expect("its end") + "</details>".len();
    (&body[start..end], format!("{}{}", &body[..start], &body[end..]))
}

async fn more_options_are_generated_sent_and_kept(db: Db) {
    let app = spawn(db).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, csrf) = v.dashboard().await;

    let form = v.get("/dashboard/playground").await.expect(200);
    let (more, rest) = split_more(&form.body);
    assert!(more.starts_with("<details id=\"more-options\"><summary>More options</summary>"), "closed: {more}");
    for option in ["waitFor", "clickBefore", "timeoutMs", "preScreenshotJs"] {
        assert!(more.contains(&format!("name=\"{option}\"")), "{option} in More options: {more}");
        assert!(more.contains(&format!("<label for=\"pg-opt-{option}\"><code>{option}</code></label>")), "{more}");
        assert!(!rest.contains(&format!("name=\"{option}\"")), "{option} only once");
    }
    // By the schema: a number within its bounds (the default as placeholder), text within its
    // length, each described by the schema's words.
    assert!(
        more.contains(
            "<input id=\"pg-opt-timeoutMs\" name=\"timeoutMs\" type=\"number\" min=\"1000\" max=\"60000\" step=\"1\" \
             placeholder=\"10000\" aria-describedby=\"pg-opt-timeoutMs-hint\" value=\"\">"
        ),
        "{more}"
    );
    assert!(
        more.contains("<span id=\"pg-opt-timeoutMs-hint\" class=\"hint\">Timeout for navigation, waitFor and clickBefore, in milliseconds.</span>"),
        "{more}"
    );
    assert!(more.contains("name=\"waitFor\" type=\"text\" maxlength=\"1024\""), "{more}");
    assert!(more.contains("name=\"preScreenshotJs\" type=\"text\" maxlength=\"16384\""), "{more}");
    // The main form's options are not repeated there.
    for option in ["width", "format", "waitUntil", "darkMode", "cookieConsent", "pdf"] {
        assert!(!more.contains(&format!("name=\"{option}\"")), "{option} is in the main form");
    }

    // A bad value: the form again with the API's message naming the option, the values kept
    // and the section open; nothing is created.
    let fields = [("url", "https://example.com/"), ("waitFor", "body"), ("timeoutMs", "5")];
    let bad = v.submit("/dashboard/playground", &csrf, &fields).await.expect(400);
    assert!(bad.body.contains("role=\"alert\">Invalid timeoutMs: must be between 1000 and 60000.</p>"), "{}", bad.body);
    let (more, _) = split_more(&bad.body);
    assert!(more.starts_with("<details id=\"more-options\" open>"), "{more}");
    assert!(more.contains("name=\"timeoutMs\" type=\"number\"") && more.contains("value=\"5\">"), "{more}");
    assert!(more.contains("name=\"waitFor\" type=\"text\"") && more.contains("value=\"body\">"), "{more}");
    // The request as code carries what was typed.
    assert!(bad.body.contains("&quot;timeoutMs&quot;: 5,"), "{}", bad.body);
    let (dash, _) = v.dashboard().await;
    assert!(dash.body.contains("<strong>0</strong> of <strong>100</strong> actions used"), "{}", dash.body);

    // Good values: a job whose stored options carry them.
    let fields = [("url", "https://example.com/"), ("waitFor", "body"), ("timeoutMs", "5000"), ("clickBefore", "")];
    let created = v.submit("/dashboard/playground", &csrf, &fields).await.expect(303);
    let href = created.location().to_string();
    assert!(href.starts_with("/dashboard/screenshots/scr_"), "{href}");
    let job = v.get(&href).await.expect(200);
    assert!(job.body.contains("<dt><code>waitFor</code></dt><dd>body</dd>"), "{}", job.body);
    assert!(job.body.contains("<dt><code>timeoutMs</code></dt><dd>5000</dd>"), "{}", job.body);
    assert!(!job.body.contains("<dt><code>clickBefore</code></dt>"), "an empty input sends nothing");
    assert!(job.body.contains("&quot;waitFor&quot;: &quot;body&quot;,"), "the job's code has it: {}", job.body);

    // The page as text: a format of the main form; mainContent, content and extract in More
    // options (a checkbox, JSON), sent as the API reads them.
    assert!(form.body.contains("<option value=\"markdown\">Markdown (the page as text)</option>"), "{}", form.body);
    let (more, _) = split_more(&form.body);
    for option in ["mainContent", "content", "maxChars", "extract"] {
        assert!(more.contains(&format!("name=\"{option}\"")), "{option} in More options: {more}");
    }
    let fields = [
        ("url", "https://example.com/"),
        ("format", "markdown"),
        ("mainContent", "on"),
        ("content", r#"["text"]"#),
        ("extract", r#"{"rules": {"title": {"selector": "h1"}}}"#),
    ];
    let created = v.submit("/dashboard/playground", &csrf, &fields).await.expect(303);
    let job = v.get(created.location()).await.expect(200);
    assert!(job.body.contains("<dt><code>mainContent</code></dt><dd>true</dd>"), "{}", job.body);
    assert!(job.body.contains("&quot;format&quot;: &quot;markdown&quot;,"), "{}", job.body);
    // A bad rule is named, nothing created.
    let fields = [("url", "https://example.com/"), ("extract", r#"{"rules": {"title": {"selector": ""}}}"#)];
    let bad = v.submit("/dashboard/playground", &csrf, &fields).await.expect(400);
    assert!(
        bad.body.contains("Invalid extract.rules.title.selector: must be a CSS selector of 1 to 1024 bytes."),
        "{}",
        bad.body
    );
}
both_dbs!(more_options_are_generated_sent_and_kept);
