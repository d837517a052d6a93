//! Client commands: `balance`, `shot` (and what `read` shares with it), `audit`, `webhooks …`.

use std::io::Write;
use std::path::PathBuf;

use capture_core::options::ScreenshotIn;
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::client::Client;
use crate::error::{ClientError, Result, exit};

/// `capture balance [--json]`.
pub async fn balance(c: &Client, as_json: bool) -> Result<()> {
    let v = c.get("/v1/account/balance").await?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    let u = &v["usage"];
    let reset = v["window"]["resetAt"].as_str().unwrap_or("?");
    if u["unlimited"] == true {
        println!(
            "Plan {} (admin): unlimited; {} actions used this month.",
            v["plan"].as_str().unwrap_or("?"),
            u["used"]
        );
    } else {
        println!(
            "Plan {}: {} of {} actions used this month ({}%), {} left; resets {reset}.",
            v["plan"].as_str().unwrap_or("?"),
            u["used"],
            u["limit"],
            u["percentUsed"],
            u["remaining"]
        );
    }
    Ok(())
}

/// Options of `capture shot`, already in API field names.
pub struct ShotArgs {
    pub output: Option<PathBuf>,
    /// The request (its URL included).
    pub options: ScreenshotIn,
    pub quiet: bool,
    /// The Idempotency-Key of every attempt to create the job.
    pub idempotency_key: String,
}

/// `capture shot URL`: create the job (retried under one Idempotency-Key, so a lost answer
/// never makes a second job), follow its event stream, save the file.
pub async fn shot(c: &Client, a: ShotArgs) -> Result<()> {
    let finished = capture(c, &a.options, &a.idempotency_key, a.quiet).await?;
    let (public, bytes) = job_file(c, &finished).await?;
    let out = a.output.unwrap_or_else(|| {
        let id = finished["id"].as_str().unwrap_or("capture");
        PathBuf::from(format!("{id}.{}", extension(&public)))
    });
    std::fs::write(&out, &bytes)
        .map_err(|e| ClientError::new(exit::FAILURE, format!("writing {}: {e}", out.display())))?;
    println!("{}", out.display());
    if !a.quiet {
        eprintln!("saved {} ({} bytes) from {public}", out.display(), bytes.len());
    }
    Ok(())
}

/// Create a capture job (retried under one Idempotency-Key, so a lost answer never makes a
/// second job) and follow it to its end, progress on stderr unless `quiet`: the done job, or
/// the capture-failed error with the job's own.
pub async fn capture(c: &Client, options: &ScreenshotIn, idempotency_key: &str, quiet: bool) -> Result<Value> {
    let body = serde_json::to_value(options).map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?;
    let created = c.post_idempotent("/v1/screenshot", &body, idempotency_key).await?;
    let job = created.body;
    let id =
        job["id"].as_str().ok_or_else(|| ClientError::new(exit::FAILURE, "the server returned no job id"))?.to_string();
    if !quiet {
        if created.replayed {
            eprintln!(
                "job {id}: {} (replayed: Idempotency-Key {idempotency_key} was used before)",
                job["status"].as_str().unwrap_or("pending"),
            );
        } else {
            eprintln!("job {id}: pending");
        }
    }
    let finished = follow(c, &id, quiet).await?;
    if finished["status"] != "done" {
        let err = finished["error"].as_str().unwrap_or("unknown error");
        return Err(ClientError::new(exit::CAPTURE_FAILED, format!("the capture failed: {err}")));
    }
    Ok(finished)
}

/// A done job's file: its `publicUrl` and its bytes.
pub async fn job_file(c: &Client, job: &Value) -> Result<(String, Vec<u8>)> {
    let public =
        job["publicUrl"].as_str().ok_or_else(|| ClientError::new(exit::FAILURE, "the job has no publicUrl"))?;
    let bytes = c.get_bytes(public).await?;
    Ok((public.to_string(), bytes))
}

/// The extension of a job's file, from its URL's path (`….md`, `….txt`, `….page.html` →
/// `html`); `png` when it has none.
fn extension(url: &str) -> &str {
    let path = url.split(['?', '#']).next().unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or_default();
    match name.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() && ext.len() <= 4 && ext.chars().all(|c| c.is_ascii_alphanumeric()) => ext,
        _ => "png",
    }
}

/// Follow `/v1/screenshot/:id/stream` to the end; falls back to polling if the stream
/// breaks. Returns the final job.
async fn follow(c: &Client, id: &str, quiet: bool) -> Result<Value> {
    let url = format!("{}/v1/screenshot/{id}/stream", c.server);
    if let Ok(r) = c.get_raw(&url).await {
        let mut stream = r.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(pos) = buf.find("\n\n") {
                let block: String = buf.drain(..pos + 2).collect();
                let mut event = "message";
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(e) = line.strip_prefix("event:") {
                        event = if e.trim() == "status" {
                            "status"
                        } else if e.trim() == "done" {
                            "done"
                        } else if e.trim() == "failed" {
                            "failed"
                        } else {
                            "other"
                        };
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.trim_start());
                    }
                }
                let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                match event {
                    "status" if !quiet => eprintln!("job {id}: {}", v["status"].as_str().unwrap_or("?")),
                    "done" | "failed" => return c.get(&format!("/v1/screenshot/{id}")).await,
                    _ => {}
                }
            }
        }
    }
    // The stream ended without a result (timeout or a dropped connection): poll.
    loop {
        let v = c.get(&format!("/v1/screenshot/{id}")).await?;
        if v["status"] == "done" || v["status"] == "failed" {
            return Ok(v);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// What `capture audit` was asked.
pub struct AuditArgs {
    pub url: String,
    pub full_site: bool,
    pub max_pages: Option<u32>,
    /// Save the report's PDF here.
    pub pdf: Option<PathBuf>,
    pub json: bool,
    pub quiet: bool,
    /// A browser profile to audit signed in.
    pub profile: Option<String>,
    /// One of the caller's proxies (id or name) the audit leaves through.
    pub proxy: Option<String>,
    /// A sticky pool's key.
    pub proxy_sticky_key: Option<String>,
    /// The Idempotency-Key of every attempt to create the audit.
    pub idempotency_key: String,
}

impl AuditArgs {
    /// The body of `POST /v1/audits`.
    fn body(&self) -> Value {
        let mut body = json!({"url": self.url, "reportType": if self.full_site { "full_site" } else { "single_page" }});
        if let Some(n) = self.max_pages {
            body["maxPages"] = json!(n);
        }
        for (k, v) in [("profile", &self.profile), ("proxy", &self.proxy), ("proxyStickyKey", &self.proxy_sticky_key)] {
            if let Some(v) = v {
                body[k] = json!(v);
            }
        }
        body
    }
}

/// `capture audit URL`: start the audit (retried under one Idempotency-Key), follow it until
/// it ends (progress on stderr), then print the scores, the issues to fix first and the
/// report's links (or the audit as JSON), and save the PDF when asked.
pub async fn audit(c: &Client, a: AuditArgs) -> Result<()> {
    let created = c.post_idempotent("/v1/audits", &a.body(), &a.idempotency_key).await?.body;
    let id =
        created["id"].as_str().ok_or_else(|| ClientError::new(exit::FAILURE, "the server returned no audit id"))?;
    let quiet = a.quiet || a.json;
    if !quiet {
        eprintln!(
            "audit {id}: {} (up to {} page(s))",
            created["status"].as_str().unwrap_or("pending"),
            created["maxPages"]
        );
    }
    let mut shown = -1;
    let done = loop {
        let v = c.get(&format!("/v1/audits/{id}")).await?;
        let pages = v["pagesAudited"].as_i64().unwrap_or(0);
        if !quiet && pages != shown && v["status"] == "processing" {
            shown = pages;
            eprintln!("audit {id}: {pages} of {} page(s) audited", v["pagesTotal"].as_i64().unwrap_or(0).max(pages));
        }
        if v["status"] == "done" || v["status"] == "failed" {
            break v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    if done["status"] != "done" {
        let err = done["error"].as_str().unwrap_or("unknown error");
        return Err(ClientError::new(exit::CAPTURE_FAILED, format!("the audit failed: {err}")));
    }
    if let Some(out) = &a.pdf {
        let url = done["pdfUrl"].as_str().ok_or_else(|| ClientError::new(exit::FAILURE, "the audit has no pdfUrl"))?;
        let bytes = c.get_bytes(url).await?;
        std::fs::write(out, &bytes)
            .map_err(|e| ClientError::new(exit::FAILURE, format!("writing {}: {e}", out.display())))?;
        if !quiet {
            eprintln!("saved the PDF report to {} ({} bytes)", out.display(), bytes.len());
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&done).unwrap_or_default());
        return Ok(());
    }
    if a.quiet {
        println!("{}", done["reportUrl"].as_str().unwrap_or_default());
        return Ok(());
    }
    let score = |k: &str| done["scores"][k].as_u64().map_or_else(|| "n/a".to_string(), |v| v.to_string());
    println!("{} — {} page(s) audited", done["url"].as_str().unwrap_or_default(), done["pagesAudited"]);
    println!(
        "performance {}  SEO {}  accessibility {}  best practices {}",
        score("performance"),
        score("seo"),
        score("accessibility"),
        score("bestPractices")
    );
    let summary = &done["report"]["summary"];
    println!("findings: {} critical, {} warning, {} info", summary["critical"], summary["warning"], summary["info"]);
    for i in summary["topIssues"].as_array().into_iter().flatten().take(10) {
        println!(
            "  [{}] {} ({} page(s))",
            i["severity"].as_str().unwrap_or_default(),
            i["title"].as_str().unwrap_or_default(),
            i["pages"]
        );
    }
    println!("report: {}", done["reportUrl"].as_str().unwrap_or_default());
    println!("pdf:    {}", done["pdfUrl"].as_str().unwrap_or_default());
    Ok(())
}

/// `capture webhooks …`.
pub enum WebhookCmd {
    List,
    Create { url: String, events: Vec<String>, description: Option<String> },
    Test { id: String },
    Rotate { id: String },
    Deliveries { id: String },
    Delete { id: String },
}

/// Run a webhooks subcommand; prints JSON with `--json`, a readable table otherwise.
pub async fn webhooks(c: &Client, cmd: WebhookCmd, as_json: bool) -> Result<()> {
    let out = match cmd {
        WebhookCmd::List => {
            let v = c.get("/v1/webhooks").await?;
            if !as_json {
                for e in v["data"].as_array().into_iter().flatten() {
                    println!(
                        "{}  {}  events={}  {}",
                        e["id"].as_str().unwrap_or(""),
                        e["url"].as_str().unwrap_or(""),
                        e["events"],
                        e["description"].as_str().unwrap_or("")
                    );
                }
                return Ok(());
            }
            v
        }
        WebhookCmd::Create { url, events, description } => {
            let mut b = json!({"url": url});
            if !events.is_empty() {
                b["events"] = json!(events);
            }
            if let Some(d) = description {
                b["description"] = json!(d);
            }
            let v = c.post("/v1/webhooks", Some(&b)).await?;
            if !as_json {
                println!(
                    "created {} for {}",
                    v["endpoint"]["id"].as_str().unwrap_or(""),
                    v["endpoint"]["url"].as_str().unwrap_or("")
                );
                println!("signing secret (shown once): {}", v["endpoint"]["secret"].as_str().unwrap_or(""));
                return Ok(());
            }
            v
        }
        WebhookCmd::Test { id } => c.post(&format!("/v1/webhooks/{id}/test"), None).await?,
        WebhookCmd::Rotate { id } => c.post(&format!("/v1/webhooks/{id}/rotate"), None).await?,
        WebhookCmd::Deliveries { id } => {
            let v = c.get(&format!("/v1/webhooks/{id}/deliveries")).await?;
            if !as_json {
                for d in v["data"].as_array().into_iter().flatten() {
                    println!(
                        "{}  {:<22} {:<10} attempts={} code={} {}",
                        d["id"].as_str().unwrap_or(""),
                        d["eventType"].as_str().unwrap_or(""),
                        d["status"].as_str().unwrap_or(""),
                        d["attempts"],
                        d["responseCode"],
                        d["errorMessage"].as_str().unwrap_or("")
                    );
                }
                return Ok(());
            }
            v
        }
        WebhookCmd::Delete { id } => {
            c.delete(&format!("/v1/webhooks/{id}")).await?;
            json!({"deleted": id})
        }
    };
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    let _ = std::io::stdout().flush();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{AuditArgs, extension};
    use serde_json::json;

    #[test]
    fn the_audit_body_names_the_profile_and_the_proxy_when_given() {
        let mut a = AuditArgs {
            url: "https://example.com/".into(),
            full_site: false,
            max_pages: None,
            pdf: None,
            json: false,
            quiet: false,
            profile: None,
            proxy: None,
            proxy_sticky_key: None,
            idempotency_key: "k".repeat(16),
        };
        assert_eq!(a.body(), json!({"url": "https://example.com/", "reportType": "single_page"}));
        a.full_site = true;
        a.max_pages = Some(5);
        a.proxy = Some("office".into());
        a.proxy_sticky_key = Some("customer-42".into());
        assert_eq!(
            a.body(),
            json!({"url": "https://example.com/", "reportType": "full_site", "maxPages": 5,
                   "proxy": "office", "proxyStickyKey": "customer-42"})
        );
    }

    #[test]
    fn a_saved_file_is_named_by_the_extension_of_the_job_s_file() {
        let base = "http://127.0.0.1:8080/files/acc/scr_1";
        assert_eq!(extension(&format!("{base}.png")), "png");
        assert_eq!(extension(&format!("{base}.jpeg")), "jpeg");
        assert_eq!(extension(&format!("{base}.pdf")), "pdf");
        assert_eq!(extension(&format!("{base}.webm")), "webm");
        assert_eq!(extension(&format!("{base}.md")), "md");
        assert_eq!(extension(&format!("{base}.txt")), "txt");
        assert_eq!(extension(&format!("{base}.page.html")), "html");
        assert_eq!(extension(&format!("{base}.md?sig=abc.def")), "md", "the query is not the name");
        assert_eq!(extension("http://127.0.0.1:8080/files/v1.2/scr_1"), "png", "a dot in a folder is not one");
    }
}
