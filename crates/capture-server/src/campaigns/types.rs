//! The wire types of audit campaigns, suppressions and sender limits, and the validation of
//! their requests (each refusal names its field). One definition behind the handlers, the
//! OpenAPI document and the MCP tool schemas.

use capture_core::options::validate_url;
use capture_core::sending::{EmailAddress, SendHours, WarmupSchedule, parse_zone, validate_email};
use capture_core::time::parse_iso;
use capture_core::{CampaignId, CampaignStatus, FieldError, TargetState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::audits::types::AuditReportType;
use crate::http::validated::Checked;
use crate::lists::list_type;

/// Most recipients one request may carry (create or add targets).
pub const MAX_RECIPIENTS_PER_REQUEST: usize = 500;
/// Most rows one campaign may hold.
pub const MAX_ROWS_PER_CAMPAIGN: i64 = 5000;
/// Longest campaign name.
pub const MAX_NAME: usize = 200;
/// Most rows `GET /v1/campaigns/{id}` shows.
pub const MAX_ROWS_SHOWN: i64 = 5000;

/// A recipient: a website to audit and the address its report is mailed to.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(deny_unknown_fields)]
pub struct RecipientIn {
    /// The website to audit (http or https).
    pub website_url: String,
    /// Where its report is mailed.
    pub recipient_email: String,
    /// Overrides the campaign's report type for this row.
    pub report_type: Option<AuditReportType>,
}

/// The body of `POST /v1/campaigns` (and the `create_campaign` tool's input).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(deny_unknown_fields)]
pub struct CampaignIn {
    /// 1–200 characters.
    pub name: String,
    /// ISO 8601 instant before which nothing is mailed (audits may run before).
    pub send_at: String,
    /// IANA time zone of the sending hours (`Europe/Berlin`).
    pub timezone: String,
    /// `single_page` (default) or `full_site`.
    pub report_type: Option<AuditReportType>,
    /// `office` (default: Monday–Friday 09:00–16:00 local) or `anytime`.
    #[schema(value_type = Option<String>)]
    #[schemars(with = "Option<String>")]
    pub send_hours: Option<String>,
    /// Up to 500 recipients (more with `POST /v1/campaigns/{id}/targets`).
    #[serde(default)]
    pub recipients: Vec<RecipientIn>,
}

/// The body of `POST /v1/campaigns/{id}/targets`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(deny_unknown_fields)]
pub struct TargetsIn {
    /// 1–500 recipients.
    pub recipients: Vec<RecipientIn>,
}

/// A validated recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    pub website_url: String,
    /// Its key (for duplicates and suppressions) and domain (for the per-domain cap) come
    /// from the address itself.
    pub email: EmailAddress,
    pub report_type: Option<AuditReportType>,
}

/// A validated campaign request.
#[derive(Debug, Clone)]
pub struct CampaignOptions {
    pub name: String,
    pub send_at: i64,
    pub timezone: String,
    pub report_type: AuditReportType,
    pub send_hours: SendHours,
    pub recipients: Vec<Recipient>,
}

/// A field that may be absent (`None`), null (`Some(None)`) or set (`Some(Some(_))`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Check recipients: 1 to [`MAX_RECIPIENTS_PER_REQUEST`] (none is fine where not `required`),
/// each with an http(s) `websiteUrl` and a valid `recipientEmail`, refusals naming
/// `recipients[i].field`.
pub fn check_recipients(list: Vec<RecipientIn>, required: bool) -> Result<Vec<Recipient>, FieldError> {
    if required && list.is_empty() {
        return Err(FieldError::new("recipients", "must hold at least one recipient"));
    }
    if list.len() > MAX_RECIPIENTS_PER_REQUEST {
        return Err(FieldError::new(
            "recipients",
            format!("must hold at most {MAX_RECIPIENTS_PER_REQUEST} recipients per request"),
        ));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let field = |name: &str| format!("recipients[{i}].{name}");
            let website_url =
                validate_url(&r.website_url).map_err(|e| FieldError::new(field("websiteUrl"), e.reason))?;
            let email = validate_email(&r.recipient_email)
                .map_err(|e| FieldError::new(field("recipientEmail"), e.to_string()))?;
            Ok(Recipient { website_url, email, report_type: r.report_type })
        })
        .collect()
}

impl Checked for CampaignIn {
    type Valid = CampaignOptions;

    fn check(self) -> Result<CampaignOptions, FieldError> {
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
            return Err(FieldError::new("name", "must be 1 to 200 characters without control characters"));
        }
        let send_at = parse_iso(&self.send_at)
            .ok_or_else(|| FieldError::new("sendAt", "must be an ISO 8601 instant such as 2026-03-02T09:00:00Z"))?;
        let zone = parse_zone(&self.timezone)
            .ok_or_else(|| FieldError::new("timezone", "must be an IANA time zone such as Europe/Berlin"))?;
        let send_hours = match self.send_hours.as_deref() {
            None => SendHours::Office,
            Some(s) => SendHours::parse(s).ok_or_else(|| FieldError::new("sendHours", "must be office or anytime"))?,
        };
        Ok(CampaignOptions {
            name: name.to_string(),
            send_at,
            timezone: zone.name().to_string(),
            report_type: self.report_type.unwrap_or(AuditReportType::SinglePage),
            send_hours,
            recipients: check_recipients(self.recipients, false)?,
        })
    }
}

impl Checked for TargetsIn {
    type Valid = Vec<Recipient>;

    fn check(self) -> Result<Vec<Recipient>, FieldError> {
        check_recipients(self.recipients, true)
    }
}

/// Rows of a campaign by state.
#[derive(Debug, Clone, Default, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RowCounts {
    pub pending: i64,
    pub auditing: i64,
    pub ready: i64,
    pub sent: i64,
    pub skipped: i64,
    pub failed: i64,
    pub total: i64,
}

/// A row of a campaign: a website, a recipient, and where its report and mail stand.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRow {
    pub id: String,
    pub website_url: String,
    pub recipient_email: String,
    pub report_type: AuditReportType,
    /// pending → auditing → ready → sent | skipped | failed.
    #[schema(value_type = String)]
    #[schemars(with = "String")]
    pub state: TargetState,
    /// Why an open row waits: `audit`, `send_at`, `sending_hours`, `sender_cap`,
    /// `domain_cap`, `smtp_not_configured`, `smtp_transient`, `quota`, `paused`, …
    pub waiting: Option<String>,
    /// Why a row ended skipped or failed: `suppressed`, `quality_gate:<gate>`, `cancelled`,
    /// `smtp_rejected:<code>`, `send_interrupted`, …
    pub reason: Option<String>,
    /// When the scheduler looks at an open row again.
    pub next_check_at: Option<String>,
    pub audit_id: Option<String>,
    /// The public report page, once the row has its audit.
    pub report_url: Option<String>,
    pub message_id: Option<String>,
    pub sent_at: Option<String>,
    pub created_at: String,
}

/// A campaign: one shape everywhere (responses, MCP tools).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    pub id: CampaignId,
    pub name: String,
    /// draft → scheduled → running → completed, plus paused and cancelled.
    #[schema(value_type = String)]
    #[schemars(with = "String")]
    pub status: CampaignStatus,
    pub send_at: String,
    pub timezone: String,
    pub report_type: AuditReportType,
    /// office or anytime.
    pub send_hours: String,
    pub counts: RowCounts,
    pub created_at: String,
    pub launched_at: Option<String>,
    pub completed_at: Option<String>,
    /// The rows, oldest first (`GET /v1/campaigns/{id}` and writes; not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<CampaignRow>>,
}

list_type! {
    /// A page of campaigns, newest first.
    pub type CampaignList = ListResponse<Campaign>;
    cursor
    ;
    schemas: both;
}

/// What `POST /v1/campaigns/{id}/targets` did.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetsAdded {
    /// Rows stored.
    pub added: i64,
    /// Recipients already in the campaign (same address and website), not stored again.
    pub duplicates: i64,
    pub campaign: Campaign,
}

/// A sender's capacity today.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SenderCapacity {
    pub sender: String,
    pub cap_today: i64,
    pub sent_today: i64,
    pub remaining_today: i64,
    /// Days since the sender's first sending day (0 on that day and before it).
    pub warmup_day: i64,
    /// The manual daily limit (null: none; the warmup alone caps).
    pub daily_limit: Option<i64>,
    pub warmup: WarmupIn,
    /// When today's counters reset (00:00 UTC).
    pub resets_at: String,
}

/// A recipient domain's capacity today.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainCapacity {
    pub domain: String,
    pub cap_today: i64,
    pub sent_today: i64,
    pub remaining_today: i64,
}

/// `GET /v1/campaigns/sender-capacity`.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    pub senders: Vec<SenderCapacity>,
    /// The recipient domains of the caller's open rows and of today's mail.
    pub domains: Vec<DomainCapacity>,
    /// The zone whose calendar days the caps count in.
    pub counting_zone: String,
}

/// A warmup schedule.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(deny_unknown_fields)]
pub struct WarmupIn {
    /// The cap on the first sending day (≥ 1).
    pub start_per_day: u32,
    /// Daily growth in percent (0–100; at least one more mail a day when positive).
    pub growth_percent: u32,
    /// The cap once warmed up (≥ startPerDay, ≤ 100000).
    pub max_per_day: u32,
}

impl From<WarmupSchedule> for WarmupIn {
    fn from(w: WarmupSchedule) -> Self {
        WarmupIn { start_per_day: w.start_per_day, growth_percent: w.growth_percent, max_per_day: w.max_per_day }
    }
}

/// The body of `POST /v1/campaigns/sender-limits`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(deny_unknown_fields)]
pub struct SenderLimitsIn {
    /// The sender's address (the configured From).
    pub sender: String,
    /// A manual daily limit (null removes it; absent leaves it).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<u32>")]
    #[schema(value_type = Option<u32>)]
    pub daily_limit: Option<Option<u32>>,
    pub warmup: Option<WarmupIn>,
}

/// A validated sender-limits request.
#[derive(Debug, Clone)]
pub struct SenderLimitsOptions {
    pub sender: String,
    /// `Some(None)`: remove the manual limit.
    pub daily_limit: Option<Option<i64>>,
    pub warmup: Option<WarmupSchedule>,
}

impl Checked for SenderLimitsIn {
    type Valid = SenderLimitsOptions;

    fn check(self) -> Result<SenderLimitsOptions, FieldError> {
        let sender = validate_email(&self.sender).map_err(|e| FieldError::new("sender", e.to_string()))?.key();
        let daily_limit = match self.daily_limit {
            Some(Some(n)) if n > 100_000 => {
                return Err(FieldError::new("dailyLimit", "must be a whole number from 0 to 100000, or null"));
            }
            d => d.map(|n| n.map(i64::from)),
        };
        let warmup = match self.warmup {
            None => None,
            Some(w) => {
                let w = WarmupSchedule {
                    start_per_day: w.start_per_day,
                    growth_percent: w.growth_percent,
                    max_per_day: w.max_per_day,
                };
                w.validate()?;
                Some(w)
            }
        };
        Ok(SenderLimitsOptions { sender, daily_limit, warmup })
    }
}

/// The body of `POST /v1/suppressions`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct SuppressionIn {
    /// The address never to mail again.
    pub email: String,
}

/// A suppressed address.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuppressionOut {
    pub email: String,
    /// `unsubscribed` (the unsubscribe link), `bounced` (a 5xx SMTP rejection) or `manual`
    /// (added by the account).
    pub reason: String,
    /// Who made it: `tenant` (this account: it may lift it), `recipient` (an unsubscribe or a
    /// complaint) or `mail_system` (a hard bounce). Only `tenant` suppressions can be deleted.
    pub source: String,
    pub detail: Option<String>,
    pub created_at: String,
}

list_type! {
    /// A page of suppressions, newest first.
    pub type SuppressionList = ListResponse<SuppressionOut>;
    cursor
    ;
    schemas: both;
}

/// The input of the `get_campaign` tool (and the id of the other campaign tools).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct CampaignIdArgs {
    /// The campaign id (cmp_…).
    pub id: String,
}

/// The input of the `add_campaign_targets` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct AddTargetsArgs {
    /// The campaign id (cmp_…).
    pub id: String,
    /// 1–500 recipients.
    pub recipients: Vec<RecipientIn>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::validated::validate;
    use serde_json::Value;

    fn parse(v: Value) -> Result<CampaignOptions, FieldError> {
        validate::<CampaignIn>(v.as_object().unwrap())
    }

    #[test]
    fn campaign_requests_are_validated_naming_the_field() {
        let ok = parse(serde_json::json!({"name": "Q1", "sendAt": "2026-03-02T09:00:00+01:00",
            "timezone": "Europe/Berlin", "recipients": [
                {"websiteUrl": "https://a.example", "recipientEmail": "Owner@A.Example"}]}))
        .unwrap();
        assert_eq!(ok.send_hours, SendHours::Office);
        assert_eq!(ok.recipients[0].email.key(), "owner@a.example");
        assert_eq!(ok.recipients[0].email.domain(), "a.example");
        let base = serde_json::json!({"name": "Q1", "sendAt": "2026-03-02T09:00:00Z", "timezone": "UTC"});
        for (patch, field) in [
            (serde_json::json!({"timezone": "Mars/Olympus"}), "timezone"),
            (serde_json::json!({"sendAt": "tomorrow"}), "sendAt"),
            (serde_json::json!({"name": ""}), "name"),
            (serde_json::json!({"sendHours": "night"}), "sendHours"),
            (serde_json::json!({"reportType": "deep"}), "reportType"),
            (serde_json::json!({"color": "red"}), "color"),
            (
                serde_json::json!({"recipients": [{"websiteUrl": "ftp://x.example", "recipientEmail": "a@b.example"}]}),
                "recipients[0].websiteUrl",
            ),
            (
                serde_json::json!({"recipients": [{"websiteUrl": "https://x.example", "recipientEmail": "not-mail"}]}),
                "recipients[0].recipientEmail",
            ),
        ] {
            let mut body = base.as_object().unwrap().clone();
            body.extend(patch.as_object().unwrap().clone());
            assert_eq!(validate::<CampaignIn>(&body).unwrap_err().field, field, "{patch}");
        }
        let many: Vec<Value> = (0..501)
            .map(
                |i| serde_json::json!({"websiteUrl": "https://x.example", "recipientEmail": format!("a{i}@b.example")}),
            )
            .collect();
        let mut body = base.as_object().unwrap().clone();
        body.insert("recipients".into(), Value::Array(many));
        assert_eq!(validate::<CampaignIn>(&body).unwrap_err().field, "recipients");
    }

    #[test]
    fn sender_limits_are_validated() {
        let o = validate::<SenderLimitsIn>(
            serde_json::json!({"sender": "Reports@Capture.Example", "dailyLimit": null,
                "warmup": {"startPerDay": 5, "growthPercent": 50, "maxPerDay": 100}})
            .as_object()
            .unwrap(),
        )
        .unwrap();
        assert_eq!(o.sender, "reports@capture.example");
        assert_eq!(o.daily_limit, Some(None));
        assert_eq!(o.warmup.unwrap().max_per_day, 100);
        let bad = serde_json::json!({"sender": "a@b.example", "warmup": {"startPerDay": 0, "growthPercent": 5, "maxPerDay": 9}});
        assert_eq!(validate::<SenderLimitsIn>(bad.as_object().unwrap()).unwrap_err().field, "warmup.startPerDay");
    }
}
