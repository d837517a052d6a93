//! The campaign operations, scoped to the calling account: create, read, list, add targets,
//! launch, pause, resume, cancel; sender capacity and limits; suppressions; the public
//! one-click unsubscribe. None of them sends mail: only the campaign loop
//! ([`crate::jobs::campaign`]) does, through its one gate.

use capture_core::ids::{self, CAMPAIGN_ROW};
use capture_core::sending::{self, COUNTING_ZONE, SendHours, WarmupSchedule, validate_email};
use capture_core::time::iso;
use capture_core::{CampaignId, CampaignStatus, FieldError};
use capture_store::{
    AddRefused, CampaignRecord, NewCampaign, NewTarget, SenderLimits, Suppression, SuppressionReason, TargetRecord,
    Unsuppressed,
};

use super::types::*;
use crate::audits::types::AuditReportType;
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::{ListQuery, Window};
use crate::state::AppState;

/// The sender of campaign mail: the configured From's address, lower-cased.
pub fn sender_address(state: &AppState) -> String {
    capture_mail::outbound::Sender::parse(&state.cfg.mail.from)
        .map(|s| s.address().to_ascii_lowercase())
        .unwrap_or_else(|_| state.cfg.mail.from.to_ascii_lowercase())
}

/// The default warmup as the store keeps it.
pub fn default_warmup() -> (i64, i64, i64) {
    let w = WarmupSchedule::default();
    (i64::from(w.start_per_day), i64::from(w.growth_percent), i64::from(w.max_per_day))
}

/// A stored sender's warmup schedule.
pub fn warmup_of(l: &SenderLimits) -> WarmupSchedule {
    WarmupSchedule {
        start_per_day: l.warmup_start.clamp(1, i64::from(u32::MAX)) as u32,
        growth_percent: l.warmup_growth.clamp(0, 100) as u32,
        max_per_day: l.warmup_max.clamp(1, i64::from(u32::MAX)) as u32,
    }
}

/// Today's cap of a sender at `now` and its warmup day.
pub fn sender_cap(l: &SenderLimits, now: chrono::DateTime<chrono::Utc>) -> (i64, i64) {
    let today = sending::day_of(now);
    let first = l.first_day.as_deref().and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
    let day = sending::warmup_day_index(first, today);
    let manual = l.daily_limit.map(|n| n.clamp(0, i64::from(u32::MAX)) as u32);
    (i64::from(sending::daily_cap(manual, &warmup_of(l), day)), i64::from(day))
}

/// The counting day (`YYYY-MM-DD`, UTC) containing `now`.
pub fn day_label(now: chrono::DateTime<chrono::Utc>) -> String {
    sending::day_of(now).format("%Y-%m-%d").to_string()
}

/// `/readyz`'s mail check: `not-configured`, `ok` or `unavailable`.
pub async fn mail_check(state: &AppState) -> String {
    match &state.mail.mailer {
        None => "not-configured (campaign rows wait: smtp_not_configured)".into(),
        Some(m) => match tokio::time::timeout(std::time::Duration::from_secs(3), m.check()).await {
            Ok(Ok(())) => "ok".into(),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "readyz: mail check failed");
                "unavailable".into()
            }
            Err(_) => "timeout".into(),
        },
    }
}

fn targets(recipients: &[Recipient], default_type: AuditReportType) -> Vec<NewTarget> {
    recipients
        .iter()
        .map(|r| NewTarget {
            id: ids::new_id(CAMPAIGN_ROW),
            website_url: r.website_url.clone(),
            recipient_email: r.email.as_str().to_string(),
            email_key: r.email.key(),
            recipient_domain: r.email.domain().to_string(),
            report_type: r.report_type.unwrap_or(default_type).as_str().to_string(),
            unsubscribe_token: ids::random_string(32),
        })
        .collect()
}

/// Create a campaign (a draft) with its first recipients; duplicates are stored once.
pub async fn create(state: &AppState, account: &Account, opts: &CampaignOptions) -> Result<Campaign> {
    let id = CampaignId::new();
    let c = NewCampaign {
        id: id.to_string(),
        user_id: account.user.id.clone(),
        key_id: account.key_id.clone(),
        name: opts.name.clone(),
        send_at: opts.send_at,
        timezone: opts.timezone.clone(),
        report_type: opts.report_type.as_str().to_string(),
        send_hours: opts.send_hours.as_str().to_string(),
        now: state.clock.now_ms(),
    };
    let (rec, _) = state.store.create_campaign(&c, &targets(&opts.recipients, opts.report_type)).await?;
    view(state, &rec, true).await
}

/// The campaign as every channel shows it, with its rows when `with_rows`.
pub async fn view(state: &AppState, c: &CampaignRecord, with_rows: bool) -> Result<Campaign> {
    let mut counts = RowCounts::default();
    for (st, n) in state.store.campaign_counts(&c.id).await? {
        match st.as_str() {
            "pending" => counts.pending = n,
            "auditing" => counts.auditing = n,
            "ready" => counts.ready = n,
            "sent" => counts.sent = n,
            "skipped" => counts.skipped = n,
            "failed" => counts.failed = n,
            _ => {}
        }
        counts.total += n;
    }
    let rows = if with_rows {
        let held = paused_or_draft(c.status);
        Some(
            state
                .store
                .campaign_targets(&c.id, MAX_ROWS_SHOWN)
                .await?
                .iter()
                .map(|(t, token)| row_view(state, t, token.as_deref(), held))
                .collect(),
        )
    } else {
        None
    };
    Ok(Campaign {
        id: CampaignId::from_stored(c.id.clone()),
        name: c.name.clone(),
        status: c.status,
        send_at: iso(c.send_at),
        timezone: c.timezone.clone(),
        report_type: AuditReportType::parse(&c.report_type).unwrap_or(AuditReportType::SinglePage),
        send_hours: c.send_hours.clone(),
        counts,
        created_at: iso(c.created_at),
        launched_at: c.launched_at.map(iso),
        completed_at: c.completed_at.map(iso),
        rows,
    })
}

/// What holds every open row of a campaign in `status` back, if the campaign itself does.
fn paused_or_draft(status: CampaignStatus) -> Option<&'static str> {
    match status {
        CampaignStatus::Paused => Some("paused"),
        CampaignStatus::Draft => Some("launch"),
        _ => None,
    }
}

fn row_view(state: &AppState, t: &TargetRecord, token: Option<&str>, held: Option<&str>) -> CampaignRow {
    let is_final = t.state.is_final();
    let waiting = match (is_final, held) {
        (true, _) => None,
        (false, Some(h)) => Some(h.to_string()),
        (false, None) => Some(t.reason.clone().unwrap_or_else(|| "queued".into())),
    };
    CampaignRow {
        id: t.id.clone(),
        website_url: t.website_url.clone(),
        recipient_email: t.recipient_email.clone(),
        report_type: AuditReportType::parse(&t.report_type).unwrap_or(AuditReportType::SinglePage),
        state: t.state,
        waiting,
        reason: if is_final { t.reason.clone() } else { None },
        next_check_at: (!is_final && t.next_check_at > 0).then(|| iso(t.next_check_at)),
        audit_id: t.audit_id.clone(),
        report_url: token.map(|tk| crate::audits::service::report_url(state, tk)),
        message_id: t.message_id.clone(),
        sent_at: t.sent_at.map(iso),
        created_at: iso(t.created_at),
    }
}

/// A campaign of the caller, or `NotFound`.
pub async fn find(state: &AppState, account: &Account, id: &CampaignId) -> Result<CampaignRecord> {
    state.store.campaign_of(&account.user.id, id.as_str()).await?.ok_or_else(|| Error::not_found(CampaignId::NOUN))
}

/// A campaign of the caller with its counts and rows.
pub async fn get(state: &AppState, account: &Account, id: &CampaignId) -> Result<Campaign> {
    let c = find(state, account, id).await?;
    view(state, &c, true).await
}

/// The caller's campaigns, newest first (with counts, without rows).
pub async fn list(state: &AppState, account: &Account, q: &ListQuery) -> Result<CampaignList> {
    let w = Window::of(q, |id| ids::looks_like(ids::CAMPAIGN, id))?;
    let rows = state.store.list_campaigns(&account.user.id, w.before.clone(), w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.id.as_str()));
    let mut data = Vec::with_capacity(page.rows.len());
    for r in &page.rows {
        data.push(view(state, r, false).await?);
    }
    Ok(CampaignList { data, next_cursor: page.next_cursor })
}

/// Add recipients to a campaign that has not completed; duplicates are not stored again.
pub async fn add_targets(
    state: &AppState,
    account: &Account,
    id: &CampaignId,
    recipients: &[Recipient],
) -> Result<TargetsAdded> {
    let c = find(state, account, id).await?;
    let default_type = AuditReportType::parse(&c.report_type).unwrap_or(AuditReportType::SinglePage);
    let rows = targets(recipients, default_type);
    let now = state.clock.now_ms();
    match state.store.add_campaign_targets(&account.user.id, id.as_str(), &rows, MAX_ROWS_PER_CAMPAIGN, now).await? {
        Ok(added) => {
            state.wake.queued(crate::queues::Queue::Campaign);
            let c = find(state, account, id).await?;
            Ok(TargetsAdded { added, duplicates: rows.len() as i64 - added, campaign: view(state, &c, true).await? })
        }
        Err(AddRefused::NotFound) => Err(Error::not_found(CampaignId::NOUN)),
        Err(AddRefused::Closed(status)) => {
            Err(FieldError::new("status", format!("the campaign is {status}; targets can no longer be added")).into())
        }
        Err(AddRefused::TooMany { existing, max }) => {
            Err(FieldError::new("recipients", format!("a campaign holds at most {max} rows; this one has {existing}"))
                .into())
        }
    }
}

/// A state change the caller asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Launch,
    Pause,
    Resume,
    Cancel,
}

impl Transition {
    fn rule(self) -> (&'static [CampaignStatus], CampaignStatus, &'static [CampaignStatus]) {
        use CampaignStatus::*;
        // (from, to, states in which asking again changes nothing and is not an error)
        match self {
            Transition::Launch => (&[Draft], Scheduled, &[Scheduled, Running, Paused, Completed]),
            Transition::Pause => (&[Scheduled, Running], Paused, &[Paused]),
            Transition::Resume => (&[Paused], Scheduled, &[Scheduled, Running]),
            Transition::Cancel => (&[Draft, Scheduled, Running, Paused], Cancelled, &[Cancelled]),
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Transition::Launch => "launched",
            Transition::Pause => "paused",
            Transition::Resume => "resumed",
            Transition::Cancel => "cancelled",
        }
    }
}

/// Launch (only queues: the campaign loop does the rest within every rule), pause, resume or
/// cancel. Asking for a state the campaign is already in (or past, for launch) changes nothing.
pub async fn transition(state: &AppState, account: &Account, id: &CampaignId, t: Transition) -> Result<Campaign> {
    let (from, to, same) = t.rule();
    let now = state.clock.now_ms();
    let Some((c, changed)) = state.store.transition_campaign(&account.user.id, id.as_str(), from, to, now).await?
    else {
        return Err(Error::not_found(CampaignId::NOUN));
    };
    if !changed && !same.contains(&c.status) {
        return Err(FieldError::new("status", format!("a {} campaign cannot be {}", c.status, t.verb())).into());
    }
    if changed {
        state.wake.queued(crate::queues::Queue::Campaign);
    }
    view(state, &c, true).await
}

/// Today's capacity of the configured sender and of the caller's recipient domains.
pub async fn capacity(state: &AppState, account: &Account) -> Result<Capacity> {
    let now = state.clock.now();
    let day = day_label(now);
    let sender = sender_address(state);
    let limits = state.store.sender_limits(&sender, default_warmup(), state.clock.now_ms()).await?;
    let (cap, warmup_day) = sender_cap(&limits, now);
    let sent = state.store.send_count("sender", &sender, &day).await?;
    let senders = vec![SenderCapacity {
        sender: sender.clone(),
        cap_today: cap,
        sent_today: sent,
        remaining_today: (cap - sent).max(0),
        warmup_day,
        daily_limit: limits.daily_limit,
        warmup: warmup_of(&limits).into(),
        resets_at: iso(sending::resets_at(now).timestamp_millis()),
    }];
    let day_start = sending::day_bounds(now).0.timestamp_millis();
    let dcap = state.cfg.mail.campaign_domain_daily_cap;
    let mut domains = Vec::new();
    for d in state.store.campaign_domains(&account.user.id, day_start).await? {
        let sent = state.store.send_count("domain", &d, &day).await?;
        domains.push(DomainCapacity {
            domain: d,
            cap_today: dcap,
            sent_today: sent,
            remaining_today: (dcap - sent).max(0),
        });
    }
    Ok(Capacity { senders, domains, counting_zone: COUNTING_ZONE.name().to_string() })
}

/// Set the sender's manual daily limit and/or warmup (administrators only: the sender's
/// reputation is the whole service's).
pub async fn set_sender_limits(
    state: &AppState,
    account: &Account,
    opts: &SenderLimitsOptions,
) -> Result<SenderCapacity> {
    if !account.is_admin {
        return Err(Error::Refused(
            capture_core::ErrorCode::Forbidden,
            "only an administrator may change the sender's limits".into(),
        ));
    }
    let warmup =
        opts.warmup.map(|w| (i64::from(w.start_per_day), i64::from(w.growth_percent), i64::from(w.max_per_day)));
    let now_ms = state.clock.now_ms();
    let l = state.store.set_sender_limits(&opts.sender, default_warmup(), opts.daily_limit, warmup, now_ms).await?;
    let now = state.clock.now();
    let (cap, warmup_day) = sender_cap(&l, now);
    let sent = state.store.send_count("sender", &opts.sender, &day_label(now)).await?;
    state.wake.queued(crate::queues::Queue::Campaign);
    Ok(SenderCapacity {
        sender: l.sender.clone(),
        cap_today: cap,
        sent_today: sent,
        remaining_today: (cap - sent).max(0),
        warmup_day,
        daily_limit: l.daily_limit,
        warmup: warmup_of(&l).into(),
        resets_at: iso(sending::resets_at(now).timestamp_millis()),
    })
}

fn suppression_view(s: &Suppression) -> SuppressionOut {
    SuppressionOut {
        email: s.email.clone(),
        reason: s.reason.as_str().to_string(),
        source: s.reason.source().as_str().to_string(),
        detail: s.detail.clone(),
        created_at: iso(s.created_at),
    }
}

/// The caller's suppressed addresses, newest first.
pub async fn suppressions(state: &AppState, account: &Account, q: &ListQuery) -> Result<SuppressionList> {
    let w = Window::of(q, |k| validate_email(k).is_ok())?;
    let rows = state.store.list_suppressions(&account.user.id, w.before.clone(), w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.email_key.as_str()));
    Ok(SuppressionList::of(page, |r| suppression_view(&r)))
}

fn parse_email(raw: &str, field: &str) -> Result<capture_core::sending::EmailAddress> {
    validate_email(raw).map_err(|e| FieldError::new(field, e.to_string()).into())
}

/// Suppress an address for the caller (`manual`); its open rows are skipped at once.
/// Returns the suppression and whether it is new.
pub async fn suppress(state: &AppState, account: &Account, email: &str) -> Result<(SuppressionOut, bool)> {
    let a = parse_email(email, "email")?;
    let now = state.clock.now_ms();
    let new =
        state.store.suppress(&account.user.id, &a.key(), a.as_str(), SuppressionReason::Manual, None, now).await?;
    let s = state.store.suppression(&account.user.id, &a.key()).await?.ok_or(Error::Internal)?;
    Ok((suppression_view(&s), new))
}

/// Lift a suppression the caller added. One the recipient (unsubscribe, complaint) or the
/// mail system (a hard bounce) made is refused: the sender cannot undo the recipient's choice.
pub async fn unsuppress(state: &AppState, account: &Account, email: &str) -> Result<()> {
    let a = parse_email(email, "email")?;
    match state.store.unsuppress(&account.user.id, &a.key()).await? {
        Unsuppressed::Lifted => Ok(()),
        Unsuppressed::NotSuppressed => Err(Error::not_found("suppression")),
        Unsuppressed::Permanent(s) => {
            Err(Error::PermanentSuppression { email: s.email, by: s.reason.source(), reason: s.reason })
        }
    }
}

/// What the unsubscribe link's page shows before anything is done (a GET never suppresses:
/// mail scanners follow links): the address and whether the recipient (or the mail system)
/// already suppressed it for good, or None for an unknown token. A suppression the account
/// added is not the recipient's word (the account may lift it), so the page still offers the
/// button.
pub async fn unsubscribe_preview(state: &AppState, token: &str) -> Result<Option<(String, bool)>> {
    if !ids::is_token(token, 16, 64) {
        return Ok(None);
    }
    let Some((user_id, email, key)) = state.store.target_by_unsubscribe_token(token).await? else {
        return Ok(None);
    };
    let done = state.store.suppression(&user_id, &key).await?.is_some_and(|s| !s.reason.source().liftable());
    Ok(Some((email, done)))
}

/// The unsubscribe (RFC 8058's one-click POST, or the button of the link's page): suppress
/// the row's address for its account (no sign-in; the token is the credential). The
/// address, or None for an unknown token.
pub async fn unsubscribe(state: &AppState, token: &str) -> Result<Option<String>> {
    if !ids::is_token(token, 16, 64) {
        return Ok(None);
    }
    let Some((user_id, email, key)) = state.store.target_by_unsubscribe_token(token).await? else {
        return Ok(None);
    };
    let now = state.clock.now_ms();
    state
        .store
        .suppress(&user_id, &key, &email, SuppressionReason::Unsubscribed, Some("unsubscribe link"), now)
        .await?;
    Ok(Some(email))
}

/// The one-click unsubscribe URL of a row.
pub fn unsubscribe_url(state: &AppState, token: &str) -> String {
    format!("{}/unsubscribe/{token}", state.base_url)
}

/// Whether `hours` is `office`.
pub fn hours_of(s: &str) -> SendHours {
    SendHours::parse(s).unwrap_or(SendHours::Office)
}
