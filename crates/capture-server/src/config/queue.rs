//! The durable queue: leases, how often idle workers look, the scheduler leader's retry, the
//! bounds on waiting captures, each account's fair share of browser work and the shutdown's
//! grace.

use std::time::Duration;

use capture_core::PlanLimits;

use super::parse::{ConfigError, Reader, err};

/// How the queue behaves.
#[derive(Debug, Clone)]
pub struct QueueSettings {
    /// `CAPTURE_QUEUE_LEASE`: how long a claimed task is held without its worker extending it.
    pub lease: Duration,
    /// How often idle workers, webhook senders and event streams look at the database
    /// without a wake-up (on PostgreSQL, notifications from other nodes wake them sooner).
    pub poll: Duration,
    /// How often a node that is not the scheduler leader tries to become it (PostgreSQL).
    pub leader_retry: Duration,
    /// Bounds on pending + processing screenshot jobs (None = unbounded).
    pub max_pending: Option<i64>,
    pub max_pending_per_account: Option<i64>,
    /// Capture tasks one account may have running at once, by plan (fair share).
    pub max_running_per_account: PlanLimits,
    /// `CAPTURE_SHUTDOWN_GRACE`: how long in-flight work may finish at shutdown.
    pub shutdown_grace: Duration,
}

impl QueueSettings {
    pub(super) fn read(r: &Reader) -> Result<QueueSettings, ConfigError> {
        let lease = r.dur("CAPTURE_QUEUE_LEASE", "60s")?;
        if lease < Duration::from_secs(1) {
            return Err(err("CAPTURE_QUEUE_LEASE", "must be at least 1s"));
        }
        let hour = Duration::from_secs(3600);
        let poll =
            r.dur_in("CAPTURE_QUEUE_POLL", "1s", Duration::from_millis(10), hour, "must be between 10ms and 1h")?;
        let leader_retry =
            r.dur_in("CAPTURE_LEADER_RETRY", "5s", Duration::from_millis(100), hour, "must be between 100ms and 1h")?;
        let max_pending = r.bound("CAPTURE_QUEUE_MAX_PENDING", 10_000)?;
        let max_pending_per_account = r.bound("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", 500)?;
        let max_running_per_account = {
            const VAR: &str = "CAPTURE_MAX_RUNNING_PER_ACCOUNT";
            let l = match r.get(VAR) {
                None => PlanLimits::RUNNING_DEFAULT,
                Some(v) => PlanLimits::parse_over(&v, PlanLimits::RUNNING_DEFAULT).map_err(|e| err(VAR, e))?,
            };
            if l.free < 1 || l.starter < 1 || l.pro < 1 {
                return Err(err(VAR, "every plan needs at least 1 running task"));
            }
            l
        };
        let shutdown_grace = r.dur("CAPTURE_SHUTDOWN_GRACE", "25s")?;
        Ok(QueueSettings {
            lease,
            poll,
            leader_retry,
            max_pending,
            max_pending_per_account,
            max_running_per_account,
            shutdown_grace,
        })
    }

    /// The queue bounds as the store checks them.
    pub fn limits(&self) -> capture_store::QueueLimits {
        capture_store::QueueLimits { per_account: self.max_pending_per_account, global: self.max_pending }
    }

    /// The fair share of browser work: running tasks per account by plan.
    pub fn fair_share(&self) -> capture_store::FairShare {
        let l = self.max_running_per_account;
        capture_store::FairShare {
            per_plan: vec![("free".into(), l.free), ("starter".into(), l.starter), ("pro".into(), l.pro)],
            default: Some(l.free),
        }
    }
}
