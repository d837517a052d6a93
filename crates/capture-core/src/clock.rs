//! The service's clock: the system clock shifted by a fixed offset (`CAPTURE_CLOCK_OFFSET`).
//!
//! For tests and demos only: a black-box test starts the service "at" a chosen instant (a
//! Monday 08:59 in Berlin, the night before a DST change) by giving the offset from now. Every
//! "now" of the service reads this clock (the application state holds one); only what a peer
//! checks against its own clock (a webhook signature's timestamp, the signatures between
//! nodes) reads the system clock.
//! Offset `0` (the default) is the system clock.

use chrono::{DateTime, Utc};

/// A clock: the system clock plus `offset_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clock {
    offset_ms: i64,
}

impl Clock {
    /// The system clock shifted by `offset_ms`.
    pub fn with_offset_ms(offset_ms: i64) -> Clock {
        Clock { offset_ms }
    }

    /// The offset from the system clock.
    pub fn offset_ms(&self) -> i64 {
        self.offset_ms
    }

    /// Now, as Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        Utc::now().timestamp_millis().saturating_add(self.offset_ms)
    }

    /// Now.
    pub fn now(&self) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp_millis(self.now_ms()).unwrap_or_default()
    }
}

/// Parse a signed duration such as `-3d4h`, `+90m`, `1h30m15s`, `250ms` or `0` into
/// milliseconds. Units: `d`, `h`, `m`, `s`, `ms`; a missing sign means `+`. At most ten years.
pub fn parse_offset(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'-') => (-1i64, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err("is empty (use e.g. -3d4h, +90m or 0)".into());
    }
    let bytes = rest.as_bytes();
    let (mut i, mut total) = (0usize, 0i64);
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(format!("'{s}': expected a number at '{}'", &rest[start..]));
        }
        let n: i64 = rest[start..i].parse().map_err(|_| format!("'{s}': number too large"))?;
        let ustart = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = match &rest[ustart..i] {
            "d" => 86_400_000,
            "h" => 3_600_000,
            "m" => 60_000,
            "s" => 1_000,
            "ms" => 1,
            "" => return Err(format!("'{s}': a number needs a unit (d, h, m, s, ms)")),
            u => return Err(format!("'{s}': unknown unit '{u}' (d, h, m, s, ms)")),
        };
        total = n.checked_mul(unit).and_then(|v| total.checked_add(v)).ok_or_else(|| format!("'{s}': too large"))?;
    }
    if total > 10 * 366 * 86_400_000 {
        return Err(format!("'{s}': at most ten years"));
    }
    Ok(sign * total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_parse_with_sign_and_units() {
        assert_eq!(parse_offset("0"), Ok(0));
        assert_eq!(parse_offset("+90m"), Ok(90 * 60_000));
        assert_eq!(parse_offset("-3d4h"), Ok(-(3 * 86_400_000 + 4 * 3_600_000)));
        assert_eq!(parse_offset("1h30m15s250ms"), Ok(5_415_250));
        for bad in ["", "+", "3", "3x", "h", "1h-2m", "99999999999999999999d", "4000d"] {
            assert!(parse_offset(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_clock_is_shifted_by_its_offset() {
        let c = Clock::with_offset_ms(-86_400_000);
        let diff = Utc::now().timestamp_millis() - c.now_ms();
        assert!((86_399_000..=86_401_000).contains(&diff), "{diff}");
        assert_eq!(Clock::default().offset_ms(), 0);
    }
}
