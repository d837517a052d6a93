//! Accounts: the administrators, the plans' monthly caps and the website's sign-up limit.

use capture_core::PlanLimits;

use super::parse::{ConfigError, Reader, err};

/// Who may do what.
#[derive(Debug, Clone)]
pub struct AccountSettings {
    /// `CAPTURE_ADMIN_EMAILS`: accounts with these addresses are administrators (unlimited).
    pub admin_emails: Vec<String>,
    /// `CAPTURE_PLAN_LIMITS`: each plan's monthly actions.
    pub plan_limits: PlanLimits,
    /// Most accounts one client address may create on the website in an hour
    /// (`CAPTURE_SIGNUPS_PER_HOUR`; 0 = no limit).
    pub signups_per_hour: i64,
    /// `CAPTURE_PLAN_MONITORS`: how many monitors an account of each plan may keep.
    pub plan_monitors: PlanLimits,
    /// `CAPTURE_MONITOR_MIN_INTERVAL`: the shortest time between two checks of a monitor.
    pub monitor_min_interval: std::time::Duration,
}

impl AccountSettings {
    pub(super) fn read(r: &Reader) -> Result<AccountSettings, ConfigError> {
        let admin_emails = r
            .get("CAPTURE_ADMIN_EMAILS")
            .unwrap_or_default()
            .split(',')
            .map(|e| e.trim().to_lowercase())
            .filter(|e| !e.is_empty())
            .collect::<Vec<_>>();
        if let Some(bad) = admin_emails.iter().find(|e| !e.contains('@')) {
            return Err(err("CAPTURE_ADMIN_EMAILS", format!("'{bad}' is not an e-mail address")));
        }
        let plan_limits = match r.get("CAPTURE_PLAN_LIMITS") {
            None => PlanLimits::default(),
            Some(v) => PlanLimits::parse(&v).map_err(|e| err("CAPTURE_PLAN_LIMITS", e))?,
        };
        let signups_per_hour = r.num("CAPTURE_SIGNUPS_PER_HOUR", 5, 0, 1_000_000)? as i64;
        let plan_monitors = match r.get("CAPTURE_PLAN_MONITORS") {
            None => PlanLimits::MONITORS_DEFAULT,
            Some(v) => {
                PlanLimits::parse_over(&v, PlanLimits::MONITORS_DEFAULT).map_err(|e| err("CAPTURE_PLAN_MONITORS", e))?
            }
        };
        let monitor_min_interval = r.dur_in(
            "CAPTURE_MONITOR_MIN_INTERVAL",
            "5m",
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(24 * 3600),
            "must be from 1s to 24h",
        )?;
        Ok(AccountSettings { admin_emails, plan_limits, signups_per_hour, plan_monitors, monitor_min_interval })
    }

    /// Is this e-mail an administrator (unlimited)?
    pub fn is_admin(&self, email: &str) -> bool {
        self.admin_emails.iter().any(|a| a.eq_ignore_ascii_case(email))
    }
}
