//! Monitors (issue 42): when a monitor checks its page. A schedule is an interval
//! (`{"every": "15m"}`) or a cron expression in a time zone (`{"cron": "0 9 * * 1-5",
//! "timezone": "Europe/Berlin"}`), never more often than the operator's minimum interval
//! (`CAPTURE_MONITOR_MIN_INTERVAL`, 5 minutes by default).
//!
//! Due times are computed from *now*, not from the last due time: after downtime a monitor runs
//! once, not once for every slot it missed.

use std::str::FromStr;

use chrono::{TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::FieldError;

/// The default shortest interval between two checks of a monitor, in milliseconds.
pub const MIN_INTERVAL_DEFAULT_MS: u64 = 5 * 60_000;
/// The longest interval: a year.
pub const MAX_INTERVAL_MS: u64 = 366 * 24 * 3_600_000;

/// A schedule as a request gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleIn {
    /// An interval: a whole number and a unit, s, m, h or d (`15m`, `1h`, `1d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// A cron expression of five fields (minute hour day-of-month month day-of-week), e.g.
    /// `0 9 * * 1-5`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// The IANA time zone the cron expression is read in (default UTC), e.g. `Europe/Berlin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// A checked schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Every so many milliseconds.
    Every(u64),
    /// A cron expression in a time zone.
    Cron { expr: String, tz: chrono_tz::Tz, cron: Box<croner::Cron> },
}

impl ScheduleIn {
    /// Check it against the shortest interval allowed (`min_ms`); errors name
    /// `schedule.every`, `schedule.cron` or `schedule.timezone`.
    pub fn check(&self, min_ms: u64) -> Result<Schedule, FieldError> {
        match (&self.every, &self.cron) {
            (Some(_), Some(_)) => Err(FieldError::new("schedule", "give every or cron, not both")),
            (None, None) => Err(FieldError::new("schedule", "needs every (e.g. \"15m\") or cron")),
            (Some(every), None) => {
                if self.timezone.is_some() {
                    return Err(FieldError::new("schedule.timezone", "applies to a cron schedule"));
                }
                let ms = parse_interval(every).ok_or_else(|| {
                    FieldError::new("schedule.every", "must be a whole number and a unit: s, m, h or d (e.g. 15m)")
                })?;
                if ms < min_ms {
                    return Err(FieldError::new("schedule.every", format!("must be at least {}", human(min_ms))));
                }
                if ms > MAX_INTERVAL_MS {
                    return Err(FieldError::new("schedule.every", "must be at most 366d"));
                }
                Ok(Schedule::Every(ms))
            }
            (None, Some(expr)) => {
                let tz = match &self.timezone {
                    None => chrono_tz::UTC,
                    Some(name) => chrono_tz::Tz::from_str(name).map_err(|_| {
                        FieldError::new(
                            "schedule.timezone",
                            format!("'{name}' is not an IANA time zone (e.g. Europe/Berlin)"),
                        )
                    })?,
                };
                if expr.split_whitespace().count() != 5 {
                    return Err(FieldError::new(
                        "schedule.cron",
                        "must have five fields: minute hour day-of-month month day-of-week",
                    ));
                }
                let cron = croner::Cron::from_str(expr)
                    .map_err(|e| FieldError::new("schedule.cron", format!("is not a cron expression: {e}")))?;
                let s = Schedule::Cron { expr: expr.trim().to_string(), tz, cron: Box::new(cron) };
                // The shortest gap between its next runs (over the next ones; a schedule
                // denser somewhere later in the year is rare and still bounded by the check).
                let mut t = Utc::now().timestamp_millis();
                let mut prev = None;
                for _ in 0..64 {
                    let Some(next) = s.next_after(t) else { break };
                    if let Some(p) = prev
                        && ((next - p) as u64) < min_ms
                    {
                        return Err(FieldError::new(
                            "schedule.cron",
                            format!("runs more often than every {}", human(min_ms)),
                        ));
                    }
                    prev = Some(next);
                    t = next;
                }
                if prev.is_none() {
                    return Err(FieldError::new("schedule.cron", "never runs"));
                }
                Ok(s)
            }
        }
    }
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Schedule) -> bool {
        match (self, other) {
            (Schedule::Every(a), Schedule::Every(b)) => a == b,
            (Schedule::Cron { expr: a, tz: ta, .. }, Schedule::Cron { expr: b, tz: tb, .. }) => a == b && ta == tb,
            _ => false,
        }
    }
}

impl Schedule {
    /// The first due time strictly after `after_ms` (ms since the epoch); None when there is
    /// none (a cron expression that never matches again).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(ms) => Some(after_ms + *ms as i64),
            Schedule::Cron { tz, cron, .. } => {
                let at = tz.timestamp_millis_opt(after_ms).single()?;
                cron.find_next_occurrence(&at, false).ok().map(|t| t.timestamp_millis())
            }
        }
    }

    /// The schedule as a request gives it.
    pub fn to_input(&self) -> ScheduleIn {
        match self {
            Schedule::Every(ms) => ScheduleIn { every: Some(human(*ms)), cron: None, timezone: None },
            Schedule::Cron { expr, tz, .. } => {
                ScheduleIn { every: None, cron: Some(expr.clone()), timezone: Some(tz.name().to_string()) }
            }
        }
    }
}

/// `15m`, `2h`, `30s`, `1d` in milliseconds.
pub fn parse_interval(s: &str) -> Option<u64> {
    let s = s.trim();
    let unit = s.chars().last()?;
    let n: u64 = s[..s.len() - unit.len_utf8()].parse().ok().filter(|n| *n > 0)?;
    let ms = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        _ => return None,
    };
    n.checked_mul(ms)
}

/// An interval as its largest whole unit (`300000` → `5m`, `90000` → `90s`).
pub fn human(ms: u64) -> String {
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{}s", ms.div_ceil(1_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every(s: &str) -> ScheduleIn {
        ScheduleIn { every: Some(s.into()), cron: None, timezone: None }
    }

    fn cron(s: &str, tz: Option<&str>) -> ScheduleIn {
        ScheduleIn { every: None, cron: Some(s.into()), timezone: tz.map(str::to_string) }
    }

    #[test]
    fn intervals_are_read_and_bounded() {
        assert_eq!(every("15m").check(MIN_INTERVAL_DEFAULT_MS), Ok(Schedule::Every(900_000)));
        assert_eq!(every("1d").check(MIN_INTERVAL_DEFAULT_MS), Ok(Schedule::Every(86_400_000)));
        for bad in ["15", "m", "0m", "1.5h", "15 minutes", "-5m", ""] {
            let e = every(bad).check(MIN_INTERVAL_DEFAULT_MS).unwrap_err();
            assert_eq!(e.field, "schedule.every", "{bad}");
        }
        let e = every("4m").check(MIN_INTERVAL_DEFAULT_MS).unwrap_err();
        assert_eq!((e.field.as_str(), e.reason.as_str()), ("schedule.every", "must be at least 5m"));
        assert_eq!(every("30s").check(30_000), Ok(Schedule::Every(30_000)));
        assert_eq!(human(300_000), "5m");
        assert_eq!(human(90_000), "90s");
        assert_eq!(Schedule::Every(3_600_000).to_input(), every("1h"));
    }

    #[test]
    fn cron_reads_in_its_time_zone() {
        let s = cron("0 9 * * 1-5", Some("Europe/Berlin")).check(MIN_INTERVAL_DEFAULT_MS).unwrap();
        // Friday 2026-12-04 12:00 UTC → Monday 2026-12-07 09:00 in Berlin (08:00 UTC, winter).
        let fri_noon = Utc.with_ymd_and_hms(2026, 12, 4, 12, 0, 0).unwrap().timestamp_millis();
        let next = s.next_after(fri_noon).unwrap();
        assert_eq!(next, Utc.with_ymd_and_hms(2026, 12, 7, 8, 0, 0).unwrap().timestamp_millis());
        // In summer Berlin is UTC+2.
        let july = Utc.with_ymd_and_hms(2026, 7, 6, 12, 0, 0).unwrap().timestamp_millis();
        assert_eq!(s.next_after(july).unwrap(), Utc.with_ymd_and_hms(2026, 7, 7, 7, 0, 0).unwrap().timestamp_millis());
        // From the due time itself, the next one (never the same again).
        assert!(s.next_after(next).unwrap() > next);
        assert_eq!(s.to_input(), cron("0 9 * * 1-5", Some("Europe/Berlin")));
    }

    #[test]
    fn bad_cron_and_zones_are_named() {
        let field = |s: ScheduleIn| s.check(MIN_INTERVAL_DEFAULT_MS).unwrap_err().field;
        assert_eq!(field(cron("0 9 * *", None)), "schedule.cron");
        assert_eq!(field(cron("61 9 * * *", None)), "schedule.cron");
        assert_eq!(field(cron("0 9 * * *", Some("Mars/Olympus"))), "schedule.timezone");
        // Every minute is under the 5-minute floor; every 5 minutes is not.
        let e = cron("* * * * *", None).check(MIN_INTERVAL_DEFAULT_MS).unwrap_err();
        assert_eq!((e.field.as_str(), e.reason.as_str()), ("schedule.cron", "runs more often than every 5m"));
        assert!(cron("*/5 * * * *", None).check(MIN_INTERVAL_DEFAULT_MS).is_ok());
        assert_eq!(
            field(ScheduleIn { every: Some("1h".into()), cron: Some("0 * * * *".into()), timezone: None }),
            "schedule"
        );
        assert_eq!(field(ScheduleIn { every: None, cron: None, timezone: None }), "schedule");
        assert_eq!(
            field(ScheduleIn { every: Some("1h".into()), cron: None, timezone: Some("UTC".into()) }),
            "schedule.timezone"
        );
    }
}
