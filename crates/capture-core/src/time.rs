//! Calendar-month windows in UTC and timestamp helpers. Times are Unix milliseconds.

use chrono::{DateTime, Datelike, TimeZone, Utc};

/// Now as Unix milliseconds.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// RFC 3339 / ISO 8601 with milliseconds and `Z`.
pub fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Parse an ISO 8601 timestamp into Unix milliseconds.
pub fn parse_iso(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(s).ok().map(|d| d.timestamp_millis())
}

/// The monthly window containing `ms`: start, start of next month, and the `YYYY-MM` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonthWindow {
    pub start_ms: i64,
    pub reset_ms: i64,
    pub label: String,
}

impl MonthWindow {
    /// The UTC calendar month that contains `ms`.
    pub fn containing(ms: i64) -> Self {
        let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
        let start = Utc.with_ymd_and_hms(t.year(), t.month(), 1, 0, 0, 0).unwrap();
        let (ny, nm) = if t.month() == 12 { (t.year() + 1, 1) } else { (t.year(), t.month() + 1) };
        let reset = Utc.with_ymd_and_hms(ny, nm, 1, 0, 0, 0).unwrap();
        MonthWindow {
            start_ms: start.timestamp_millis(),
            reset_ms: reset.timestamp_millis(),
            label: format!("{:04}-{:02}", t.year(), t.month()),
        }
    }

    /// Unix seconds of the reset.
    pub fn reset_secs(&self) -> i64 {
        self.reset_ms / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn december_rolls_into_january() {
        let ms = parse_iso("2026-12-31T23:59:59.999Z").unwrap();
        let w = MonthWindow::containing(ms);
        assert_eq!(iso(w.start_ms), "2026-12-01T00:00:00.000Z");
        assert_eq!(iso(w.reset_ms), "2027-01-01T00:00:00.000Z");
        assert_eq!(w.label, "2026-12");
    }

    #[test]
    fn first_instant_of_month_belongs_to_it() {
        let ms = parse_iso("2026-11-01T00:00:00Z").unwrap();
        let w = MonthWindow::containing(ms);
        assert_eq!(w.start_ms, ms);
        assert_eq!(w.label, "2026-11");
        assert_eq!(w.reset_secs(), parse_iso("2026-12-01T00:00:00Z").unwrap() / 1000);
    }
}
