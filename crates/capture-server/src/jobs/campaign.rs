//! The campaign loop: the only code that sends campaign mail.
//!
//! Each node with the scheduler or worker role runs `CAPTURE_CAMPAIGN_SENDERS` loops. A loop
//! moves campaigns along (`scheduled` → `running` once `sendAt` has come, `running` →
//! `completed` once no row is open, emitting `campaign.completed` with the row counts in the
//! same transaction) and works on the rows that are due:
//! - `pending`: claims the row and creates its audit through the audits service (so it is
//!   billed and refunded exactly like `POST /v1/audits`); the row is `auditing`;
//! - `auditing`: once the audit ended, the row is `ready` and goes on at once;
//! - `ready`: asks [`capture_core::sending::decide`] — the one gate, given the row's real
//!   report: suppression, the report's quality gates (a failing report skips the row with
//!   `quality_gate:<gate>`; it cost the account only the audit), `sendAt`, sending hours in
//!   the campaign's zone, the sender's cap (warmup and manual limit) and the recipient
//!   domain's cap — and on `Send` reserves the mail in the store
//!   ([`capture_store::Reserved`]: the outbox entry of the row and one unit of each cap, in one
//!   transaction that re-checks the suppression), then sends it over SMTP and records the outcome.
//!
//! Clocks: every "now" here is the service's clock ([`crate::state::Inner::clock`]).

use std::time::Duration;

use capture_audit::report::Report;
use capture_core::sending::{
    self, Capacity, Decision, ReportQuality, ReportStatus, SendInputs, WaitReason, parse_zone,
};
use capture_core::{CampaignStatus, JobStatus, TargetState, ids};
use capture_mail::SendError;
use capture_mail::outbound::{CampaignMail, InlineImage, Sender};
use capture_store::{AuditRow, DueTarget, Reservation, Reserved};
use tokio_util::sync::CancellationToken;

use crate::audits::types::{AuditOptions, AuditReportType};
use crate::campaigns::service::{self as campaigns, day_label, default_warmup, sender_address, sender_cap};
use crate::error::Error;
use crate::state::AppState;

/// How long a claim to start a row's audit lasts (a worker that died meanwhile is replaced).
const AUDIT_CLAIM: Duration = Duration::from_secs(120);
/// How often an auditing row looks at its audit.
const AUDIT_POLL: Duration = Duration::from_secs(2);
/// Longest wait recorded for a time rule (rows look again at least this often).
const MAX_TIME_WAIT: Duration = Duration::from_secs(300);
/// Longest wait for a spent cap or a mail problem (limits may be raised meanwhile).
const MAX_CAP_WAIT: Duration = Duration::from_secs(60);
/// An outbox entry still `sending` this long after its claim belonged to a worker that died.
const SEND_ABANDONED: Duration = Duration::from_secs(900);
/// Rows one loop looks at per round.
const BATCH: i64 = 25;
/// Most findings a mail lists.
const TOP_FINDINGS: usize = 5;
/// Campaign loops: `CAPTURE_CAMPAIGN_SENDERS` of them on scheduler and worker nodes (none at 0).
pub const WORKERS: super::Kind = super::Kind {
    name: "campaign",
    runs_on: super::RunsOn::Background,
    start: |s| {
        Box::pin(async move {
            if s.state.cfg.mail.campaign_senders > 0 {
                run(s.state, s.stop).await
            }
        })
    },
};

/// Run the campaign loops until `stop`.
pub async fn run(state: AppState, stop: CancellationToken) {
    let node = ids::random_string(8);
    let n = state.cfg.mail.campaign_senders.max(1);
    let mut handles = Vec::new();
    for i in 0..n {
        let (state, stop) = (state.clone(), stop.clone());
        let worker = format!("cmp-{node}-{i}");
        handles.push(tokio::spawn(async move { run_loop(&state, &worker, i, &stop).await }));
    }
    for h in handles {
        let _ = h.await;
    }
}

async fn run_loop(state: &AppState, worker: &str, index: usize, stop: &CancellationToken) {
    loop {
        if stop.is_cancelled() {
            return;
        }
        let busy = match tick(state, worker, index).await {
            Ok(n) => n > 0,
            Err(e) => {
                tracing::warn!(error = %e, "campaign round failed; retrying");
                false
            }
        };
        if busy {
            continue;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = state.wake.of(crate::queues::Queue::Campaign).notified() => {}
            _ = tokio::time::sleep(state.cfg.mail.campaign_poll) => {}
        }
    }
}

/// One round: move campaigns along and work on the due rows. The number of rows worked on.
async fn tick(state: &AppState, worker: &str, index: usize) -> Result<usize, Error> {
    let now = state.clock.now_ms();
    if state.store.advance_campaigns(now).await? > 0 {
        // A completed campaign queued `campaign.completed` for the webhook senders.
        state.wake.queued(crate::queues::Queue::Webhook);
    }
    if index == 0 {
        let n = state.store.sweep_interrupted_sends(now - SEND_ABANDONED.as_millis() as i64, now).await?;
        if n > 0 {
            tracing::warn!(
                rows = n,
                "campaign mails interrupted mid-send were marked failed (send_interrupted), not re-sent"
            );
        }
    }
    let mut due = state.store.due_campaign_targets(now, BATCH).await?;
    // Loops of one node start at different rows; the store's fences keep each row to one.
    if index % 2 == 1 {
        due.reverse();
    }
    let mut worked = 0;
    for d in &due {
        if let Err(e) = process(state, worker, d).await {
            tracing::warn!(row = %d.target.id, error = %e, "working on a campaign row failed");
        } else {
            worked += 1;
        }
    }
    Ok(worked)
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

async fn process(state: &AppState, worker: &str, d: &DueTarget) -> Result<(), Error> {
    match (d.target.state.as_str(), d.target.audit_id.as_deref()) {
        ("pending", _) | ("auditing", None) => start_audit(state, d).await,
        ("auditing", Some(audit_id)) => check_audit(state, worker, d, audit_id).await,
        ("ready", _) => try_send(state, worker, d).await,
        _ => Ok(()),
    }
}

/// Claim the row and create its audit through the audits service (billed like any audit).
async fn start_audit(state: &AppState, d: &DueTarget) -> Result<(), Error> {
    let t = &d.target;
    let now = state.clock.now_ms();
    if !state.store.claim_target_for_audit(&t.id, now, now + ms(AUDIT_CLAIM)).await? {
        return Ok(());
    }
    // A suppressed address costs no audit.
    if state.store.suppression(&t.user_id, &t.email_key).await?.is_some() {
        state.store.target_end(&t.id, TargetState::Skipped, "suppressed", now).await?;
        return Ok(());
    }
    let Some(user) = state.store.user_by_id(&t.user_id).await? else {
        state.store.target_end(&t.id, TargetState::Failed, "account_deleted", now).await?;
        return Ok(());
    };
    let account = crate::auth::account_of_user(state, &user).await?;
    let report_type = AuditReportType::parse(&t.report_type).unwrap_or(AuditReportType::SinglePage);
    let max_pages = match report_type {
        AuditReportType::SinglePage => 1,
        AuditReportType::FullSite => capture_audit::crawl::DEFAULT_MAX_PAGES,
    };
    let opts = AuditOptions {
        url: t.website_url.clone(),
        report_type,
        max_pages,
        profile: None,
        proxy: None,
        proxy_sticky_key: None,
    };
    match crate::audits::service::create(state, &account, &opts, None).await {
        Ok(created) => {
            state.store.set_target_audit(&t.id, created.audit.id.as_str(), now + ms(AUDIT_POLL), now).await?;
        }
        Err(e) => {
            let (reason, wait) = match &e {
                Error::QuotaExceeded(_) => ("quota", Duration::from_secs(600)),
                Error::QueueFull(_) => ("audit_queue_full", Duration::from_secs(30)),
                _ => ("audit_error", Duration::from_secs(60)),
            };
            tracing::info!(row = %t.id, reason, error = %e, "a campaign row's audit could not start yet");
            state.store.target_wait(&t.id, TargetState::Pending, Some(reason), now + ms(wait), now).await?;
        }
    }
    Ok(())
}

/// Once the row's audit ended: the quality gates, then `ready` (and a first try to send).
async fn check_audit(state: &AppState, worker: &str, d: &DueTarget, audit_id: &str) -> Result<(), Error> {
    let t = &d.target;
    let now = state.clock.now_ms();
    let Some(audit) = state.store.audit(audit_id).await? else {
        state.store.target_end(&t.id, TargetState::Failed, "audit_missing", now).await?;
        return Ok(());
    };
    if !audit.status.is_final() {
        state.store.target_wait(&t.id, TargetState::Auditing, Some("audit"), now + ms(AUDIT_POLL), now).await?;
        return Ok(());
    }
    // The report's quality goes to `decide` with every other rule: a failed gate is its
    // `Skip`, as a suppression is.
    let quality = quality_of(state, &audit).await;
    if state.store.target_wait(&t.id, TargetState::Ready, None, now, now).await? {
        let mut ready = d.clone();
        ready.target.state = TargetState::Ready;
        ready.target.reason = None;
        send_with(state, worker, &ready, ReportStatus::Ready(quality)).await?;
    }
    Ok(())
}

/// What a finished audit's report is worth mailing: the four quality gates' inputs.
pub async fn quality_of(state: &AppState, audit: &AuditRow) -> ReportQuality {
    let report = audit.report.as_deref().and_then(|r| serde_json::from_str::<Report>(r).ok());
    let first = report.as_ref().and_then(|r| r.pages.first());
    let screenshot_blank = match first.and_then(|p| p.screenshots.desktop_url.as_deref()) {
        None => true,
        Some(url) => match screenshot_bytes(state, url).await {
            Some(bytes) => is_blank(&bytes),
            None => true,
        },
    };
    let has_scores = report.as_ref().is_some_and(|r| {
        let s = &r.scores;
        s.performance.is_some() && s.seo.is_some() && s.accessibility.is_some() && s.best_practices.is_some()
    });
    ReportQuality {
        audit_finished: audit.status == JobStatus::Done && report.is_some(),
        site_status: first.and_then(|p| p.status),
        site_blocked: first.is_some_and(|p| p.blocked.is_some()),
        screenshot_blank,
        has_scores,
    }
}

/// The bytes of a stored screenshot from its lasting URL (`…/files/NAME`).
async fn screenshot_bytes(state: &AppState, url: &str) -> Option<Vec<u8>> {
    let name = url.rsplit_once("/files/").map(|(_, n)| n)?;
    state.blobs.get(name).await.ok().flatten()
}

/// A screenshot is blank when (nearly) every pixel has the same colour: the luma of a 64×40
/// thumbnail varies by less than 3 levels, or it does not decode.
pub fn is_blank(bytes: &[u8]) -> bool {
    let Ok(img) = image::load_from_memory(bytes) else { return true };
    let thumb = img.thumbnail_exact(64, 40).to_luma8();
    let (min, max) = thumb.pixels().fold((u8::MAX, u8::MIN), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])));
    max.saturating_sub(min) < 3
}

/// A `ready` row again (a cap or a time rule made it wait): its report read afresh, then
/// [`send_with`].
async fn try_send(state: &AppState, worker: &str, d: &DueTarget) -> Result<(), Error> {
    let t = &d.target;
    let report = match t.audit_id.as_deref() {
        None => ReportStatus::Pending,
        Some(id) => match state.store.audit(id).await? {
            None => {
                state.store.target_end(&t.id, TargetState::Failed, "audit_missing", state.clock.now_ms()).await?;
                return Ok(());
            }
            Some(a) if a.status.is_final() => ReportStatus::Ready(quality_of(state, &a).await),
            Some(_) => ReportStatus::Pending,
        },
    };
    send_with(state, worker, d, report).await
}

/// The one gate ([`sending::decide`], given the row's real report), then the reservation
/// and the SMTP transaction.
async fn send_with(state: &AppState, worker: &str, d: &DueTarget, report: ReportStatus) -> Result<(), Error> {
    let t = &d.target;
    let now = state.clock.now();
    let now_ms = now.timestamp_millis();
    let Some(zone) = parse_zone(&d.timezone) else {
        state.store.target_end(&t.id, TargetState::Failed, "invalid_timezone", now_ms).await?;
        return Ok(());
    };
    let day = day_label(now);
    let sender = sender_address(state);
    let limits = state.store.sender_limits(&sender, default_warmup(), now_ms).await?;
    let (cap, _) = sender_cap(&limits, now);
    let sent = state.store.send_count("sender", &sender, &day).await?;
    let dcap = state.cfg.mail.campaign_domain_daily_cap;
    let dsent = state.store.send_count("domain", &t.recipient_domain, &day).await?;
    let suppressed = state.store.suppression(&t.user_id, &t.email_key).await?.is_some();
    let inputs = SendInputs {
        now,
        send_at: chrono::DateTime::from_timestamp_millis(d.send_at).unwrap_or_default(),
        zone,
        hours: campaigns::hours_of(&d.send_hours),
        suppressed,
        report,
        sender: Capacity { cap: clamp_u32(cap), sent: clamp_u32(sent) },
        domain: Capacity { cap: clamp_u32(dcap), sent: clamp_u32(dsent) },
    };
    match sending::decide(&inputs) {
        Decision::Skip { reason } => {
            state.store.target_end(&t.id, TargetState::Skipped, &reason.to_string(), now_ms).await?;
        }
        Decision::Wait { reason, until } => {
            // Time rules wait exactly until the instant they name (launch and resume look at
            // every row again); a spent cap looks again soon, as limits may be raised.
            let next = match (reason, until) {
                (WaitReason::SenderCap | WaitReason::DomainCap, u) => {
                    u.map_or(now_ms + ms(MAX_CAP_WAIT), |u| u.timestamp_millis().min(now_ms + ms(MAX_CAP_WAIT)))
                }
                (_, Some(u)) => u.timestamp_millis(),
                (_, None) => now_ms + ms(MAX_TIME_WAIT),
            };
            state
                .store
                .target_wait(&t.id, TargetState::Ready, Some(reason.as_str()), next.max(now_ms + 50), now_ms)
                .await?;
        }
        Decision::Send => {
            let Some(mailer) = state.mail.mailer.clone() else {
                let next = now_ms + ms(MAX_CAP_WAIT);
                state.store.target_wait(&t.id, TargetState::Ready, Some("smtp_not_configured"), next, now_ms).await?;
                return Ok(());
            };
            if d.campaign_status != CampaignStatus::Running {
                // sendAt has come; the campaign starts running on the next round.
                state.store.target_wait(&t.id, TargetState::Ready, Some("send_at"), now_ms + 200, now_ms).await?;
                return Ok(());
            }
            let outbox_id = ids::new_id("obx");
            let r = Reservation {
                outbox_id: &outbox_id,
                row_id: &t.id,
                worker,
                sender: &sender,
                sender_cap: cap,
                domain_cap: dcap,
                day: &day,
                now: now_ms,
            };
            match state.store.reserve_send(&r).await? {
                Reserved::Yes => deliver(state, mailer.as_ref(), d).await?,
                Reserved::Taken | Reserved::NotSendable | Reserved::Suppressed => {}
                Reserved::SenderCap => {
                    let next = now_ms + ms(MAX_CAP_WAIT);
                    state.store.target_wait(&t.id, TargetState::Ready, Some("sender_cap"), next, now_ms).await?;
                }
                Reserved::DomainCap => {
                    let next = now_ms + ms(MAX_CAP_WAIT);
                    state.store.target_wait(&t.id, TargetState::Ready, Some("domain_cap"), next, now_ms).await?;
                }
            }
        }
    }
    Ok(())
}

fn clamp_u32(n: i64) -> u32 {
    n.clamp(0, i64::from(u32::MAX)) as u32
}

/// Build and send the reserved mail, then record the outcome.
async fn deliver(state: &AppState, mailer: &dyn capture_mail::Mailer, d: &DueTarget) -> Result<(), Error> {
    let t = &d.target;
    let now = state.clock.now();
    let built = match compose(state, d).await {
        Ok(m) => m.build(now).map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    let mail = match built {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(row = %t.id, error = %e, "a campaign mail could not be built");
            let reason = "mail_build_failed";
            state.store.finish_send_rejected_no_suppress(&t.id, reason, &e, now.timestamp_millis()).await?;
            return Ok(());
        }
    };
    let result = mailer.send(&mail).await;
    let done = state.clock.now_ms();
    match result {
        Ok(accepted) => {
            state.store.finish_send_ok(&t.id, &accepted.message_id, &accepted.response, done).await?;
            tracing::info!(row = %t.id, message_id = %accepted.message_id, "campaign mail sent");
        }
        Err(SendError::Permanent { code, stage, message }) => {
            let detail = format!("{code} at {stage}: {message}");
            state.store.finish_send_rejected(&t.id, &format!("smtp_rejected:{code}"), &detail, done).await?;
            tracing::info!(row = %t.id, code, "campaign mail rejected permanently; the address is suppressed");
        }
        Err(e @ SendError::Transient { .. }) => {
            let next = done + ms(MAX_CAP_WAIT);
            state.store.finish_send_retry(&t.id, "smtp_transient", &e.to_string(), next, done).await?;
        }
        Err(e @ SendError::Config { .. }) => {
            tracing::warn!(error = %e, "campaign mail: the SMTP settings are refused; rows wait");
            let next = done + ms(MAX_CAP_WAIT);
            state.store.finish_send_retry(&t.id, "smtp_config", &e.to_string(), next, done).await?;
        }
    }
    Ok(())
}

/// The mail of a row: multipart text and HTML with the desktop screenshot inline, the scores,
/// the top findings, the report link and the unsubscribe links.
async fn compose(state: &AppState, d: &DueTarget) -> Result<CampaignMail, String> {
    let t = &d.target;
    let from = Sender::parse(&state.cfg.mail.from).map_err(|e| e.to_string())?;
    let audit_id = t.audit_id.as_deref().ok_or("the row has no audit")?;
    let audit = state.store.audit(audit_id).await.map_err(|e| e.to_string())?.ok_or("the audit is gone")?;
    let report: Report =
        serde_json::from_str(audit.report.as_deref().unwrap_or("")).map_err(|e| format!("the report: {e}"))?;
    let report_url = crate::audits::service::report_url(state, &audit.share_token);
    let unsubscribe_url = campaigns::unsubscribe_url(state, &t.unsubscribe_token);
    let host = url::Url::parse(&t.website_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| t.website_url.clone());
    let score = |s: Option<u8>| s.map_or_else(|| "–".to_string(), |v| v.to_string());
    let scores = [
        ("Performance", score(report.scores.performance)),
        ("SEO", score(report.scores.seo)),
        ("Accessibility", score(report.scores.accessibility)),
        ("Best practices", score(report.scores.best_practices)),
    ];
    let findings: Vec<(String, String, u32)> = report
        .summary
        .top_issues
        .iter()
        .take(TOP_FINDINGS)
        .map(|i| (format!("{:?}", i.severity).to_ascii_lowercase(), i.title.clone(), i.pages))
        .collect();
    let shot = match report.pages.first().and_then(|p| p.screenshots.desktop_url.as_deref()) {
        Some(url) => screenshot_bytes(state, url).await,
        None => None,
    };
    let cid = format!("screenshot.{}@{}", t.id.to_ascii_lowercase(), from.domain());

    let mut text = format!(
        "Hello,\n\nwe audited {} and wrote up what we found:\n{report_url}\n\nScores (0-100):\n",
        t.website_url
    );
    for (name, v) in &scores {
        text.push_str(&format!("  {name}: {v}\n"));
    }
    if !findings.is_empty() {
        text.push_str("\nTop findings:\n");
        for (sev, title, pages) in &findings {
            text.push_str(&format!("  - [{sev}] {title} ({pages} page{})\n", if *pages == 1 { "" } else { "s" }));
        }
    }
    text.push_str(&format!(
        "\nThe whole report, with every finding and how to fix it: {report_url}\n\n--\nYou received this one report about {host}. \
         To receive no more: {unsubscribe_url}\n"
    ));

    let html = ReportMail {
        website_url: &t.website_url,
        image_cid: shot.is_some().then_some(cid.as_str()),
        host: &host,
        scores: &scores,
        findings: &findings,
        report_url: &report_url,
        unsubscribe_url: &unsubscribe_url,
    };
    let html = askama::Template::render(&html).map_err(|e| format!("rendering the report mail: {e}"))?;
    Ok(CampaignMail {
        from: from.clone(),
        to: t.recipient_email.clone(),
        subject: format!("Website report for {host}"),
        text,
        html,
        inline_image: shot.map(|bytes| InlineImage { content_id: cid, content_type: "image/jpeg".into(), bytes }),
        unsubscribe_url,
        unsubscribe_mailto: format!("unsubscribe+{}@{}", t.unsubscribe_token, from.domain()),
        extra_headers: vec![
            ("X-Capture-Campaign".into(), t.campaign_id.clone()),
            ("X-Capture-Row".into(), t.id.clone()),
        ],
    })
}

/// `templates/public/report_mail.html`: the HTML part of a campaign's mail (escaped by the
/// template; the text part says the same).
#[derive(askama::Template)]
#[template(path = "public/report_mail.html")]
struct ReportMail<'a> {
    website_url: &'a str,
    /// The screenshot's `Content-ID`, when the mail carries it.
    image_cid: Option<&'a str>,
    host: &'a str,
    scores: &'a [(&'a str, String)],
    findings: &'a [(String, String, u32)],
    report_url: &'a str,
    unsubscribe_url: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_mail_escapes_every_field_quotes_included() {
        let hostile = "https://x.test/?q='\"><script>alert(1)</script>";
        let scores = [("Performance", "97".to_string())];
        let findings = vec![("high".to_string(), "<img src=x onerror=alert(1)>".to_string(), 2)];
        let mail = ReportMail {
            website_url: hostile,
            image_cid: Some("screenshot.row@mail.test"),
            host: "o'brien.test",
            scores: &scores,
            findings: &findings,
            report_url: "https://capture.test/r/tok",
            unsubscribe_url: "https://capture.test/unsubscribe/u",
        };
        let html = askama::Template::render(&mail).unwrap();
        assert!(!html.contains("<script>") && !html.contains("<img src=x"), "{html}");
        assert!(
            html.contains("<a href=\"https://x.test/?q=&#39;&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\">"),
            "{html}"
        );
        assert!(html.contains("alt=\"o&#39;brien.test on a desktop screen\""), "{html}");
        assert!(html.contains("<li>[high] &lt;img src=x onerror=alert(1)&gt; (2 pages)</li>"), "{html}");
        assert!(html.contains("<tr><td style=\"padding:2px 12px 2px 0\">Performance</td><td><b>97</b></td></tr>"));
    }

    fn png(f: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
        let img = image::RgbImage::from_fn(320, 200, |x, y| image::Rgb(f(x, y)));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn blank_screenshots_are_told_from_pages() {
        assert!(is_blank(&png(|_, _| [255, 255, 255])));
        assert!(is_blank(&png(|_, _| [20, 20, 20])));
        assert!(is_blank(b"not an image"));
        assert!(!is_blank(&png(|x, _| if x < 160 { [255, 255, 255] } else { [10, 60, 200] })));
        // A heading on a white page.
        assert!(!is_blank(&png(|x, y| if (20..60).contains(&y) && (20..200).contains(&x) {
            [0, 0, 0]
        } else {
            [255; 3]
        })));
    }
}
