//! Plans and their monthly action caps (configuration, seeded with the contract's values).

use serde::{Deserialize, Serialize};

/// A billing plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Starter,
    Pro,
}

impl Plan {
    /// Parse `free`, `starter` or `pro`.
    pub fn parse(s: &str) -> Option<Plan> {
        match s {
            "free" => Some(Plan::Free),
            "starter" => Some(Plan::Starter),
            "pro" => Some(Plan::Pro),
            _ => None,
        }
    }

    /// The plan's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Starter => "starter",
            Plan::Pro => "pro",
        }
    }
}

/// Monthly action caps per plan (`CAPTURE_PLAN_LIMITS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    pub free: i64,
    pub starter: i64,
    pub pro: i64,
}

impl Default for PlanLimits {
    fn default() -> Self {
        PlanLimits { free: 100, starter: 2000, pro: 10000 }
    }
}

impl PlanLimits {
    /// The cap of `plan`.
    pub fn limit(&self, plan: Plan) -> i64 {
        match plan {
            Plan::Free => self.free,
            Plan::Starter => self.starter,
            Plan::Pro => self.pro,
        }
    }

    /// Monitors one account may keep, by plan (`CAPTURE_PLAN_MONITORS`).
    pub const MONITORS_DEFAULT: PlanLimits = PlanLimits { free: 3, starter: 20, pro: 200 };

    /// Tasks one account may have running at once, by plan (`CAPTURE_MAX_RUNNING_PER_ACCOUNT`):
    /// below the worker count, so one tenant's slow or hanging pages never hold every worker.
    pub const RUNNING_DEFAULT: PlanLimits = PlanLimits { free: 2, starter: 4, pro: 8 };

    /// Parse `free=100,starter=2000,pro=10000` (any subset; the rest keep defaults).
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::parse_over(s, PlanLimits::default())
    }

    /// Parse `plan=number,…` over `defaults` (plans not named keep theirs).
    pub fn parse_over(s: &str, defaults: PlanLimits) -> Result<Self, String> {
        let mut out = defaults;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| format!("'{part}' is not plan=number"))?;
            let n: i64 = v.trim().parse().map_err(|_| format!("'{v}' is not a number"))?;
            if n < 0 {
                return Err(format!("limit of {k} must not be negative"));
            }
            match Plan::parse(k.trim()) {
                Some(Plan::Free) => out.free = n,
                Some(Plan::Starter) => out.starter = n,
                Some(Plan::Pro) => out.pro = n,
                None => return Err(format!("unknown plan '{k}'")),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_limits() {
        let l = PlanLimits::parse("free=5, pro=7").unwrap();
        assert_eq!((l.free, l.starter, l.pro), (5, 2000, 7));
        assert!(PlanLimits::parse("gold=5").is_err());
        assert!(PlanLimits::parse("free=x").is_err());
    }
}
