//! A monitor's mail: on a change, the before, after and diff pictures inline with the text's
//! diff; at the third failure in a row, why. Sent when the service has outgoing mail
//! (`CAPTURE_SMTP_URL`) and the monitor lists addresses (`notify.email`).

use capture_mail::outbound::{InlineImage, Sender};
use capture_store::{CheckOutcome, MonitorRow};

use super::types::{MonitorChanged, MonitorFailing};
use crate::state::AppState;

/// The largest picture put in a mail (a taller page is linked, not attached).
const INLINE_MAX_BYTES: usize = 4 * 1024 * 1024;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

async fn send(state: &AppState, to: &[String], subject: String, text: String, html: String, images: Vec<InlineImage>) {
    crate::notice::send(state, to, subject, text, html, images, "a monitor's mail").await;
}

async fn picture(state: &AppState, key: &Option<String>, cid: &str, content_type: &str) -> Option<InlineImage> {
    let bytes = state.blobs.get(key.as_deref()?).await.ok().flatten()?;
    (bytes.len() <= INLINE_MAX_BYTES).then(|| InlineImage {
        content_id: cid.to_owned(),
        content_type: content_type.to_owned(),
        bytes,
    })
}

fn image_type(key: &Option<String>) -> &'static str {
    crate::blob::content_type(key.as_deref().unwrap_or(""))
}

/// The change mail: what changed, where, and the three pictures.
pub async fn changed(state: &AppState, m: &MonitorRow, to: &[String], c: &MonitorChanged, o: &CheckOutcome) {
    let domain =
        Sender::parse(&state.cfg.mail.from).map(|s| s.domain().to_owned()).unwrap_or_else(|_| "capture".into());
    let cid = |what: &str| format!("{what}.{}@{domain}", c.check_id.as_str().to_ascii_lowercase());
    let mut images = Vec::new();
    let mut figures = String::new();
    for (label, key, what) in
        [("Before", &o.baseline_key, "before"), ("After", &o.image_key, "after"), ("What changed", &o.diff_key, "diff")]
    {
        if let Some(img) = picture(state, key, &cid(what), image_type(key)).await {
            figures.push_str(&format!(
                "<td style=\"vertical-align:top;padding:4px\"><div><b>{label}</b></div><img src=\"{}\" alt=\"{label}\" width=\"280\" style=\"border:1px solid #ccc\"></td>",
                img.url()
            ));
            images.push(img);
        }
    }
    let pct = c.diff_ratio.map(|r| format!("{:.2} % of the page's pixels changed", r * 100.0));
    let page = format!("{}/dashboard/monitors/{}", state.base_url, c.monitor_id.as_str());
    let mut text = format!("{} changed.\n\nPage: {}\n", m.name, m.url);
    if let Some(p) = &pct {
        text.push_str(&format!("{p} ({} regions)\n", c.changed_regions.len()));
    }
    if let Some(d) = &c.diff_url {
        text.push_str(&format!("The changes highlighted: {d}\n"));
    }
    if let Some(t) = c.text_diff.as_deref().filter(|t| !t.is_empty()) {
        text.push_str(&format!("\nThe text's changes:\n{}\n", t.chars().take(5_000).collect::<String>()));
    }
    text.push_str(&format!("\nThe monitor's history: {page}\n"));
    let mut html =
        format!("<p><b>{}</b> changed.</p><p>Page: <a href=\"{}\">{}</a></p>", esc(&m.name), esc(&m.url), esc(&m.url));
    if let Some(p) = &pct {
        html.push_str(&format!("<p>{}</p>", esc(p)));
    }
    if !figures.is_empty() {
        html.push_str(&format!("<table><tr>{figures}</tr></table>"));
    }
    if let Some(t) = c.text_diff.as_deref().filter(|t| !t.is_empty()) {
        html.push_str(&format!(
            "<p>The text's changes:</p><pre style=\"font-size:12px\">{}</pre>",
            esc(&t.chars().take(5_000).collect::<String>())
        ));
    }
    html.push_str(&format!("<p><a href=\"{}\">The monitor's history</a></p>", esc(&page)));
    send(state, to, format!("Changed: {}", m.name), text, html, images).await;
}

/// The failing mail: three checks in a row failed, and why the last did.
pub async fn failing(state: &AppState, m: &MonitorRow, to: &[String], f: &MonitorFailing, failures: i64) {
    let why = f.error.clone().unwrap_or_else(|| "the capture failed".into());
    let page = format!("{}/dashboard/monitors/{}", state.base_url, f.monitor_id.as_str());
    let text = format!(
        "The last {failures} checks of {} failed, so changes to {} are not being seen.\n\nThe last one: {why}\n\nThe monitor: {page}\n",
        m.name, m.url
    );
    let html = format!(
        "<p>The last {failures} checks of <b>{}</b> failed, so changes to <a href=\"{}\">{}</a> are not being seen.</p><p>The last one: {}</p><p><a href=\"{}\">The monitor</a></p>",
        esc(&m.name),
        esc(&m.url),
        esc(&m.url),
        esc(&why),
        esc(&page)
    );
    send(state, to, format!("Failing: {}", m.name), text, html, Vec::new()).await;
}
