//! The account's website audits on the website: the most recent ones with their scores and
//! links to the public report and its PDF (the same service function as `GET /v1/audits`).

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::JobStatus;

use super::base::forms::{Signed, account};
use super::base::layout::{Chrome, Nav, WebResult, minute, page};
use crate::audits::service as audits;
use crate::audits::types::Audit;
use crate::paging::ListQuery;
use crate::state::AppState;

/// Audits listed.
const RECENT_AUDITS: i64 = 50;

/// `GET /dashboard/audits`
pub async fn list(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let q = ListQuery { limit: Some(RECENT_AUDITS.to_string()), before: None };
    let list = audits::list(&state, &acc, &q).await?;
    let view = AuditsPage {
        chrome: Chrome::signed("Audits", &s, Nav::Audits),
        audits: list.data.iter().map(AuditRow::new).collect(),
        recent: RECENT_AUDITS,
    };
    Ok(page(StatusCode::OK, &view, None))
}

/// `templates/web/audits.html`
#[derive(Template)]
#[template(path = "web/audits.html")]
struct AuditsPage<'a> {
    chrome: Chrome<'a>,
    audits: Vec<AuditRow>,
    recent: i64,
}

/// A row of the audits table.
struct AuditRow {
    url: String,
    report_type: &'static str,
    status: &'static str,
    error: Option<String>,
    pages: u32,
    performance: String,
    seo: String,
    accessibility: String,
    best_practices: String,
    created: String,
    created_iso: String,
    done: bool,
    report_url: String,
    pdf_url: String,
}

impl AuditRow {
    fn new(a: &Audit) -> Self {
        let score = |f: fn(&crate::audits::types::AuditScores) -> Option<u8>| {
            a.scores.as_ref().and_then(f).map_or_else(|| "—".to_string(), |v| v.to_string())
        };
        let created_ms = capture_core::time::parse_iso(&a.created_at).unwrap_or(0);
        AuditRow {
            url: a.url.clone(),
            report_type: a.report_type.as_str(),
            status: a.status.as_str(),
            error: a.error.clone(),
            pages: a.pages_audited,
            performance: score(|s| s.performance),
            seo: score(|s| s.seo),
            accessibility: score(|s| s.accessibility),
            best_practices: score(|s| s.best_practices),
            created: minute(created_ms),
            created_iso: a.created_at.clone(),
            done: a.status == JobStatus::Done,
            report_url: a.report_url.clone(),
            pdf_url: a.pdf_url.clone(),
        }
    }
}
