//! The audit tools: `run_audit` starts a website audit (and waits a while for it, with
//! progress notifications), `get_audit` reads one. Both call the audits' service functions.

use std::time::Duration;

use capture_core::{AuditId, ErrorCode, JobStatus};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam};
use serde_json::{Value, json};

use crate::audits::service as audits;
use crate::audits::types::{Audit, AuditIn, GetAuditArgs};
use crate::error::Result;
use crate::tool::{Cx, annotations, id_arg, structured, tool_group, valid};

/// How long `run_audit` waits for a single-page audit before handing back its id.
const WAIT_SINGLE: Duration = Duration::from_secs(120);
/// How long `run_audit` waits for a full-site audit before handing back its id.
const WAIT_SITE: Duration = Duration::from_secs(240);
/// The code of a tool error for an audit that failed (its `error` says why).
/// Issues listed in a tool's text summary.
const TOP_ISSUES: usize = 8;

tool_group! {
    "run_audit": AuditIn, annotations("Run a website audit", false, false, true),
        "Audit a website like Lighthouse and an SEO tool would: performance (LCP, CLS, TTFB, TBT), SEO \
             (title, meta description, h1, canonical, noindex, alt texts, broken links, robots.txt, sitemap), \
             accessibility (axe-core) and best practices (console errors, failed requests, HTTPS and security \
             headers). reportType single_page audits the URL (1 action); full_site crawls the site (1 action per \
             page, maxPages default 10, at most 50, reserved up front and the unused part given back). Waits for the \
             audit and returns scores 0-100, the top issues and a public report link (reportUrl, pdfUrl); a long \
             audit returns its id to check with get_audit."
        => run_audit;
    "get_audit": GetAuditArgs, annotations("Get a website audit", true, true, false),
        "Get one website audit by id (aud_…): status, pages audited, scores, the top issues, reportUrl and \
             pdfUrl. Set includeReport for the whole report: every page with its measurements, screenshots and \
             findings with evidence (URL, CSS selector, value measured)."
        => get_audit;
}

async fn get_audit(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let id: AuditId = id_arg(args)?;
    let include = matches!(args.get("includeReport"), Some(Value::Bool(true)));
    let audit = audits::get(cx.state, cx.account, &id).await?;
    Ok(result(audit, include))
}

async fn run_audit(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let (state, account) = (cx.state, cx.account);
    let opts = valid::<AuditIn>(args)?;
    // Subscribe before creating so no change is missed.
    let mut changes = state.job_events.subscribe();
    let id = audits::create(state, account, &opts, None).await?.audit.id;
    let wait = if opts.max_pages > 1 { WAIT_SITE } else { WAIT_SINGLE };
    let deadline = tokio::time::Instant::now() + wait;
    let progress = cx.progress_token();
    let mut poll = tokio::time::interval(state.cfg.queue.poll.max(Duration::from_millis(200)));
    let mut last: Option<(JobStatus, i64)> = None;
    loop {
        let row = audits::find(state, account, &id).await?;
        if last != Some((row.status, row.pages_audited)) {
            last = Some((row.status, row.pages_audited));
            if let Some(token) = &progress {
                let total = row.pages_total.max(row.pages_audited).max(1);
                let note = ProgressNotificationParam::new(token.clone(), row.pages_audited as f64)
                    .with_total(total as f64)
                    .with_message(format!("audit {} is {}: {} pages audited", row.id, row.status, row.pages_audited));
                cx.notify_progress(note).await;
            }
        }
        if row.status.is_final() {
            return Ok(result(audits::view(state, &row, true), false));
        }
        // The caller stopping ends the wait too.
        let woke = tokio::select! {
            _ = cx.cancelled() => false,
            w = state.next_change(&mut changes, id.as_str(), &mut poll, deadline) => w,
        };
        if !woke {
            let audit = audits::view(state, &row, false);
            let mut r = structured(&audit);
            r.content.insert(
                0,
                ContentBlock::text(format!(
                    "Audit {} is still {} ({} pages audited so far); call get_audit with this id for the result.",
                    audit.id, row.status, row.pages_audited
                )),
            );
            return Ok(r);
        }
    }
}

/// An audit as a tool result: a readable summary (scores, top issues, links) and the audit as
/// structured content — the whole report only when asked for (it can be large).
fn result(mut audit: Audit, include_report: bool) -> CallToolResult {
    if audit.status == JobStatus::Failed {
        let error = audit.error.clone().unwrap_or_else(|| "unknown error".into());
        let mut r = CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: the audit of {} failed: {error} (its actions were given back)",
            ErrorCode::AuditFailed.as_str(),
            audit.url
        ))]);
        r.structured_content = Some(json!({"code": ErrorCode::AuditFailed.as_str(), "error": error, "audit": audit}));
        return r;
    }
    let report = audit.report.take();
    let mut text = match audit.status {
        JobStatus::Done => format!(
            "Audit of {} ({}): {} page(s) audited.\nReport: {}\nPDF: {}",
            audit.url,
            audit.report_type.as_str(),
            audit.pages_audited,
            audit.report_url,
            audit.pdf_url
        ),
        s => format!("Audit {} of {} is {s} ({} pages audited so far).", audit.id, audit.url, audit.pages_audited),
    };
    if let Some(s) = &audit.scores {
        let show = |v: Option<u8>| v.map_or("n/a".to_string(), |v| v.to_string());
        text.push_str(&format!(
            "\nScores: performance {}, SEO {}, accessibility {}, best practices {}",
            show(s.performance),
            show(s.seo),
            show(s.accessibility),
            show(s.best_practices)
        ));
    }
    let top = report.as_ref().map(|r| r["summary"].clone()).unwrap_or(Value::Null);
    if let Some(issues) = top["topIssues"].as_array().filter(|i| !i.is_empty()) {
        text.push_str(&format!(
            "\nFindings: {} critical, {} warning, {} info. Fix first:",
            top["critical"], top["warning"], top["info"]
        ));
        for i in issues.iter().take(TOP_ISSUES) {
            text.push_str(&format!(
                "\n- [{}] {} ({} page(s))",
                i["severity"].as_str().unwrap_or(""),
                i["title"].as_str().unwrap_or(""),
                i["pages"]
            ));
        }
    }
    let mut body = serde_json::to_value(&audit).unwrap_or(Value::Null);
    if include_report {
        body["report"] = report.unwrap_or(Value::Null);
    } else if !top.is_null() {
        body["summary"] = top;
    }
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(body);
    r
}
