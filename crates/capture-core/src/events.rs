//! Webhook event types. Adding one is a one-line change here.

/// Every event type an endpoint can subscribe to (besides `*`).
pub const WEBHOOK_EVENTS: &[&str] = &[
    "screenshot.completed",
    "screenshot.failed",
    "quota.warning",
    "test.ping",
    "run.completed",
    "run.failed",
    "audit.completed",
    "audit.failed",
    "adshot.completed",
    "adshot.failed",
    "campaign.completed",
    "batch.completed",
    "screenshot.stored",
    "monitor.changed",
    "monitor.failing",
    "session.human_requested",
];

/// Is `name` a known event type or `*`?
pub fn is_subscribable(name: &str) -> bool {
    name == "*" || WEBHOOK_EVENTS.contains(&name)
}
