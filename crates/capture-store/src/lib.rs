//! Persistence for Capture: one [`Store`] API with SQLite (WAL) and PostgreSQL backends,
//! their migrations, the durable task queue (leases), the usage ledger, idempotency records
//! and the event log that feeds streams and (later) the webhook outbox.
//!
//! Both backends run the same statements through sqlx's `Any` driver; the few places where
//! the dialects differ (auto-increment keys, row locking in the queue, write-transaction
//! start) are chosen by [`Backend`]. On PostgreSQL, changes also notify other nodes
//! (`LISTEN/NOTIFY`) and one node at a time holds the scheduler's advisory lock (`notify`).
//! Times are Unix milliseconds in `BIGINT` columns.

/// `format!` for SQL built only from our own constants (never from input).
macro_rules! sqlf {
    ($($t:tt)*) => {
        sqlx::AssertSqlSafe(format!($($t)*))
    };
}

mod admission;
mod adshots;
mod audits;
mod authver;
mod campaigns;
mod db;
mod events;
mod gate;
mod idempotency;
mod inbox;
mod json;
mod ledger;
mod migrations;
mod monitors;
mod notify;
mod oauth;
mod paid;
mod profiles;
mod proxies;
mod queue;
mod render_keys;
mod runs;
mod screenshots;
mod sessions;
mod shape;
mod storage_destinations;
mod users;
mod web_store;
mod webhooks;
mod website;

pub use admission::{QueueFull, QueueLimits, QueueScope};
pub use adshots::{AdshotDone, AdshotRow, KIND_DRAFT, KIND_RENDER, NewAdshot, queue_kind};
pub use audits::{AUDIT_EVENT, AUDIT_PROGRESS_EVENT, AuditDone, AuditRow, NewAudit};
pub use authver::AuthVersion;
pub use campaigns::{
    AddRefused, CampaignRecord, DueTarget, NewCampaign, NewTarget, Reservation, Reserved, SenderLimits, Suppression,
    SuppressionReason, SuppressionSource, TargetRecord, Unsuppressed,
};
pub use db::{Backend, MAX_GATE_SLOTS, Store, StoreError, redact as redact_url};
pub use idempotency::{IdemBegin, IdemClaim};
pub use inbox::{AuthAttemptRow, InboxMessageRow, InboxRow, MessageFilter, RemovedMessages};
pub use json::Json;
pub use ledger::QuotaExceeded;
pub use monitors::{CheckEvents, CheckOutcome, MonitorCheckRow, MonitorRow};
pub use notify::{AUTH_CHANNEL, JOB_CHANNEL, LeaderLock, Listener, SCHEDULER_LOCK, WORK_CHANNEL, Wakeup};
pub use oauth::{
    AccessRecord, CodeRedemption, NewToken, OAuthClient, OAuthCode, RefreshOutcome, TokenGrant, TokenKind,
};
pub use paid::Refused;
pub use profiles::ProfileRow;
pub use proxies::ProxyRow;
pub use queue::{FairShare, Task};
pub use render_keys::RenderKey;
pub use runs::{NewRun, RunEnd, RunRow};
pub use screenshots::{BatchRefused, NewScreenshot, ScreenshotDone, ScreenshotRow};
pub use sessions::WebSessionRow;
pub use shape::IdemResponse;
pub use storage_destinations::StorageDestination;
pub use users::{ApiKeyRow, AuthRecord, User};
pub use webhooks::{AttemptOutcome, Delivery, DeliveryJob, Endpoint, MAX_ATTEMPTS, subscribed};
pub use website::{ScreenshotFilter, UsageDay};
