//! The value parsers every settings section shares, and the error that names the variable.

use std::time::Duration;

/// A configuration error naming the variable.
#[derive(Debug, thiserror::Error)]
#[error("invalid {var}: {reason}")]
pub struct ConfigError {
    pub var: String,
    pub reason: String,
}

pub(super) fn err(var: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError { var: var.into(), reason: reason.into() }
}

/// Parse a duration with humantime: `500ms`, `15s`, `5m`, `2h`, `1d`, `1h30m`, `2 days`;
/// a bare whole number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration like 15s, 5m or 1h30m ({e})"))
}

pub(super) fn parse_bool(var: &str, s: &str) -> Result<bool, ConfigError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(err(var, format!("'{s}' is not true or false"))),
    }
}

/// Parse a memory size: `2GB`, `512MB`, `1.5GiB`, `800M`, a bare number of bytes. Units are
/// binary (`1MB` = 1024 × 1024 bytes), as for most memory limits. `0` or `off`: None.
pub fn parse_size(s: &str) -> Result<Option<u64>, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("off") || s == "0" {
        return Ok(None);
    }
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    };
    let n: f64 = num.parse().map_err(|_| format!("'{s}' is not a size like 2GB or 512MB"))?;
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("'{s}' has an unknown unit (use KB, MB, GB)")),
    };
    let bytes = n * scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("'{s}' is not a valid size"));
    }
    Ok(if bytes == 0.0 { None } else { Some(bytes as u64) })
}

/// The settings as one section reads them: environment over the TOML file, trimmed, an empty
/// value the same as an unset one; and the readers of the value shapes sections share.
pub(super) struct Reader<'a>(pub &'a std::collections::BTreeMap<String, String>);

impl Reader<'_> {
    /// The value of `k` (None: unset or empty).
    pub fn get(&self, k: &str) -> Option<String> {
        self.0.get(k).map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    }

    /// A duration (`def` when unset).
    pub fn dur(&self, k: &str, def: &str) -> Result<Duration, ConfigError> {
        parse_duration(&self.get(k).unwrap_or_else(|| def.to_string())).map_err(|e| err(k, e))
    }

    /// A duration that must lie in `min..=max`; `rule` says so when it does not.
    pub fn dur_in(
        &self,
        k: &str,
        def: &str,
        min: Duration,
        max: Duration,
        rule: &str,
    ) -> Result<Duration, ConfigError> {
        let d = self.dur(k, def)?;
        if d < min || d > max {
            return Err(err(k, rule));
        }
        Ok(d)
    }

    /// A whole number in `min..=max` (`def` when unset).
    pub fn num(&self, k: &str, def: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
        match self.get(k) {
            None => Ok(def),
            Some(v) => {
                let n: u64 = v.parse().map_err(|_| err(k, format!("'{v}' is not a whole number")))?;
                if n < min || n > max {
                    return Err(err(k, format!("{n} is outside {min}..={max}")));
                }
                Ok(n)
            }
        }
    }

    /// A bound that may be off: `0` or `off` is None (unbounded).
    pub fn bound(&self, k: &str, def: u64) -> Result<Option<i64>, ConfigError> {
        let n = match self.get(k) {
            Some(v) if v.eq_ignore_ascii_case("off") => 0,
            _ => self.num(k, def, 0, 100_000_000)?,
        };
        Ok((n > 0).then_some(n as i64))
    }
}
