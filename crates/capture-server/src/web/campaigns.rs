//! The account's audit campaigns on the website: each recent campaign with its counts and rows
//! (state, why a row waits or ended, report link, when it was sent), and today's sending
//! capacity — the same service functions as the API. Read only: no control here sends mail.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::base::forms::{Signed, account};
use super::base::layout::{Chrome, Nav, WebResult, page};
use crate::campaigns::service as campaigns;
use crate::campaigns::types::Campaign;
use crate::paging::ListQuery;
use crate::state::AppState;

/// Campaigns shown.
const RECENT_CAMPAIGNS: i64 = 10;

/// `GET /dashboard/campaigns`
pub async fn list(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let q = ListQuery { limit: Some(RECENT_CAMPAIGNS.to_string()), before: None };
    let mut views = Vec::new();
    for c in campaigns::list(&state, &acc, &q).await?.data {
        views.push(CampaignView::new(&campaigns::get(&state, &acc, &c.id).await?));
    }
    let cap = campaigns::capacity(&state, &acc).await?;
    let sender = cap.senders.first();
    let view = CampaignsPage {
        chrome: Chrome::signed("Campaigns", &s, Nav::Audits),
        campaigns: views,
        sender: sender.map(|x| x.sender.clone()).unwrap_or_default(),
        sent_today: sender.map_or(0, |x| x.sent_today),
        cap_today: sender.map_or(0, |x| x.cap_today),
        warmup_day: sender.map_or(0, |x| x.warmup_day),
        resets_at: sender.map(|x| x.resets_at.clone()).unwrap_or_default(),
        // A campaign needs mail and all four scores (its quality gate).
        unavailable: crate::features::unavailable(&state)
            .await
            .into_iter()
            .filter(|f| matches!(f.id, "mail" | "auditAccessibility"))
            .collect(),
    };
    Ok(page(StatusCode::OK, &view, None))
}

/// `templates/web/campaigns.html`
#[derive(Template)]
#[template(path = "web/campaigns.html")]
struct CampaignsPage<'a> {
    chrome: Chrome<'a>,
    campaigns: Vec<CampaignView>,
    sender: String,
    sent_today: i64,
    cap_today: i64,
    warmup_day: i64,
    resets_at: String,
    /// Why no mail can leave this server, when that is so.
    unavailable: Vec<crate::features::FeatureStatus>,
}

struct CampaignView {
    id: String,
    name: String,
    status: String,
    send_hours: String,
    timezone: String,
    send_at: String,
    counts: String,
    rows: Vec<RowView>,
}

struct RowView {
    website: String,
    email: String,
    state: String,
    why: String,
    report_url: Option<String>,
    sent: String,
}

impl CampaignView {
    fn new(c: &Campaign) -> Self {
        let n = &c.counts;
        CampaignView {
            id: c.id.to_string(),
            name: c.name.clone(),
            status: c.status.to_string(),
            send_hours: c.send_hours.clone(),
            timezone: c.timezone.clone(),
            send_at: c.send_at.clone(),
            counts: format!(
                "{} rows: {} pending, {} auditing, {} ready, {} sent, {} skipped, {} failed",
                n.total, n.pending, n.auditing, n.ready, n.sent, n.skipped, n.failed
            ),
            rows: c
                .rows
                .iter()
                .flatten()
                .map(|r| RowView {
                    website: r.website_url.clone(),
                    email: r.recipient_email.clone(),
                    state: r.state.to_string(),
                    why: r
                        .waiting
                        .as_ref()
                        .map(|w| format!("waiting: {w}"))
                        .or_else(|| r.reason.clone())
                        .unwrap_or_default(),
                    report_url: r.report_url.clone(),
                    sent: r.sent_at.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }
}
