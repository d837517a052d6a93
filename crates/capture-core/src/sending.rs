//! The sending rules of audit campaigns, as pure functions: sending hours in the campaign's IANA
//! zone, warmup and daily caps, and the one decision every delivery channel passes through.
//!
//! Nothing here does I/O or reads a clock: the caller passes `now` (the service's injectable
//! clock) and the counters it read, and gets back what may happen and why.
//!
//! # Sending hours
//! `office` is Monday to Friday, 09:00 (inclusive) to 16:00 (exclusive) local wall-clock time in
//! the campaign's zone; `anytime` is always open. Boundaries are turned into instants with
//! [`resolve_local`]: a wall-clock time that happens twice (the autumn fold) means its first
//! occurrence, one that never happens (the spring gap) means the instant the clocks jump past
//! it. A day whose window is empty after that (a calendar day a zone skipped) is no office day.
//!
//! # Caps
//! Counting days are UTC calendar days ([`COUNTING_ZONE`]): one day for every sender and every
//! campaign whatever their zones, so "sent today" means the same to every worker and resets at
//! 00:00 UTC ([`day_bounds`], [`resets_at`]). The day's cap of a sender is the smaller of its
//! manual daily limit and its warmup cap ([`daily_cap`]); the warmup day is the number of UTC
//! calendar days since the sender's first sending day ([`warmup_day_index`]).
//!
//! # The decision
//! [`decide`] checks, in this order, and returns the first rule that holds the row back:
//! 1. `suppressed` → skip. A person's wish not to be mailed overrides everything, and a suppressed
//!    row should say so rather than "waiting".
//! 2. the report: still being made → wait (`audit`); made but failing a quality gate → skip
//!    (`quality_gate:<name>`, gates in the order of [`QualityGate::ALL`]). Final outcomes come
//!    before time rules so a row that will never be mailed is settled at once instead of showing
//!    "waiting: sending_hours" for days.
//! 3. `send_at` → wait until the first open instant at or after `sendAt`.
//! 4. `sending_hours` → wait until the window opens.
//! 5. `sender_cap`, then 6. `domain_cap` → wait until the counting day resets (and the window is
//!    open then). Caps come last because they are the only shared, contended state: the caller
//!    reserves one unit of both caps atomically after a `Send`, so rows outside their time window
//!    never touch the counters, and a row blocked by both the clock and a cap reports the clock,
//!    which is what will still hold it back after midnight UTC. The sender's cap comes before the
//!    domain's because it is the wider one: nothing of this sender goes out today.

use std::fmt;

use chrono::{DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// An IANA time zone (re-exported so callers need not depend on `chrono-tz` themselves).
pub use chrono_tz::Tz;

/// The zone whose calendar days the caps count in (UTC, for every sender and campaign).
pub const COUNTING_ZONE: Tz = Tz::UTC;

/// When an office window opens, local wall-clock time (09:00).
pub const OFFICE_OPENS: NaiveTime = match NaiveTime::from_hms_opt(9, 0, 0) {
    Some(t) => t,
    None => panic!("09:00 is a time"),
};

/// When an office window closes, local wall-clock time (16:00, exclusive).
pub const OFFICE_CLOSES: NaiveTime = match NaiveTime::from_hms_opt(16, 0, 0) {
    Some(t) => t,
    None => panic!("16:00 is a time"),
};

/// A campaign's sending hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendHours {
    /// Monday to Friday, 09:00–16:00 local time in the campaign's zone.
    Office,
    /// Every day around the clock.
    Anytime,
}

impl SendHours {
    /// Parse `office` or `anytime`.
    pub fn parse(s: &str) -> Option<SendHours> {
        match s {
            "office" => Some(SendHours::Office),
            "anytime" => Some(SendHours::Anytime),
            _ => None,
        }
    }

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SendHours::Office => "office",
            SendHours::Anytime => "anytime",
        }
    }
}

/// Parse an IANA zone name (`Europe/Berlin`); `None` for anything the zone database lacks.
pub fn parse_zone(name: &str) -> Option<Tz> {
    name.parse::<Tz>().ok()
}

/// Whether mail may go out now, and until or from when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowState {
    /// Open now; closes at `closes_at` (`None`: never, for `anytime`).
    Open { closes_at: Option<DateTime<Utc>> },
    /// Closed now; opens at `opens_at`.
    Closed { opens_at: DateTime<Utc> },
}

impl WindowState {
    /// Whether the window is open.
    pub fn is_open(&self) -> bool {
        matches!(self, WindowState::Open { .. })
    }
}

/// The earliest instant at which the wall clock in `zone` shows `local` or later: the instant
/// itself when it exists once, its first occurrence in a fold, and the end of the gap (the
/// instant the clocks jump) when it falls in one.
pub fn resolve_local(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, b) => a.with_timezone(&Utc).min(b.with_timezone(&Utc)),
        LocalResult::None => gap_end(zone, local),
    }
}

/// The instant a forward transition skips past `local`. With the offsets a day either side (one
/// transition in between), `local - after` is before the jump and `local - before` after it; a
/// binary search over whole seconds finds the first instant whose wall clock reads ≥ `local`.
fn gap_end(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    let offset_at = |t: NaiveDateTime| zone.offset_from_utc_datetime(&t).fix().local_minus_utc() as i64;
    let before = offset_at(local - Duration::days(1));
    let after = offset_at(local + Duration::days(1));
    let as_utc = |secs_offset: i64| (local - Duration::seconds(secs_offset)).and_utc().timestamp();
    let reads_at_least = |ts: i64| {
        DateTime::<Utc>::from_timestamp(ts, 0).map(|t| t.with_timezone(&zone).naive_local() >= local).unwrap_or(true)
    };
    let (mut lo, mut hi) = (as_utc(after), as_utc(before));
    if lo >= hi || reads_at_least(lo) || !reads_at_least(hi) {
        // Not the single forward transition this search assumes; the later bound is never early.
        return DateTime::<Utc>::from_timestamp(hi.max(lo), 0).unwrap_or_default();
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reads_at_least(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    DateTime::<Utc>::from_timestamp(hi, 0).unwrap_or_default()
}

/// The office window of local calendar day `date` in `zone` as instants, or `None` on weekends
/// and on a day whose window is empty (a day the zone skipped).
pub fn office_window(zone: Tz, date: NaiveDate) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    if date.weekday().number_from_monday() > 5 {
        return None;
    }
    let opens = resolve_local(zone, date.and_time(OFFICE_OPENS));
    let closes = resolve_local(zone, date.and_time(OFFICE_CLOSES));
    // A window that resolved into another local day (the day was skipped) is no window.
    let opens_on_day = opens.with_timezone(&zone).date_naive() == date;
    (opens < closes && opens_on_day).then_some((opens, closes))
}

/// Whether the sending window is open at `now` for `hours` in `zone`, and when that changes.
pub fn window(now: DateTime<Utc>, zone: Tz, hours: SendHours) -> WindowState {
    if hours == SendHours::Anytime {
        return WindowState::Open { closes_at: None };
    }
    let today = now.with_timezone(&zone).date_naive();
    if let Some((opens, closes)) = office_window(zone, today) {
        if opens <= now && now < closes {
            return WindowState::Open { closes_at: Some(closes) };
        }
        if now < opens {
            return WindowState::Closed { opens_at: opens };
        }
    }
    // A week always holds five weekdays; two weeks cover any skipped day as well.
    let mut date = today;
    for _ in 0..14 {
        date = date.succ_opt().unwrap_or(date);
        if let Some((opens, _)) = office_window(zone, date).filter(|(opens, _)| *opens > now) {
            return WindowState::Closed { opens_at: opens };
        }
    }
    // Unreachable with a real zone database; stay closed and look again in a day.
    WindowState::Closed { opens_at: now + Duration::days(1) }
}

/// The first instant at or after `t` at which the window is open.
pub fn next_open(t: DateTime<Utc>, zone: Tz, hours: SendHours) -> DateTime<Utc> {
    match window(t, zone, hours) {
        WindowState::Open { .. } => t,
        WindowState::Closed { opens_at } => opens_at,
    }
}

/// A sender's warmup: the daily cap starts at `start_per_day` and grows by `growth_percent` a
/// day up to `max_per_day`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarmupSchedule {
    /// The cap on the sender's first sending day (day 0).
    pub start_per_day: u32,
    /// Growth per calendar day, in percent of the previous day's cap (at least one more mail).
    pub growth_percent: u32,
    /// The cap once warmed up.
    pub max_per_day: u32,
}

/// Bounds [`WarmupSchedule::validate`] enforces.
pub const WARMUP_MAX_PER_DAY: u32 = 100_000;
/// Largest allowed daily growth in percent (doubling every day).
pub const WARMUP_MAX_GROWTH_PERCENT: u32 = 100;

impl Default for WarmupSchedule {
    /// 20 mails on day 0, +20 % a day, up to 500 a day (reached on day 19): a gentle ramp for a
    /// new sending domain, the order of magnitude outreach tools recommend.
    fn default() -> Self {
        WarmupSchedule { start_per_day: 20, growth_percent: 20, max_per_day: 500 }
    }
}

impl WarmupSchedule {
    /// The warmup cap on day `day_index` (0 = the sender's first sending day). Each day adds
    /// `floor(cap × growth / 100)`, at least 1 when growth is positive, so the ramp is exact in
    /// integers and the same on every node.
    pub fn warmup_cap(&self, day_index: u32) -> u32 {
        let mut cap = self.start_per_day.min(self.max_per_day);
        if self.growth_percent == 0 {
            return cap;
        }
        // At least one more a day, so this stops within max_per_day steps.
        for _ in 0..day_index {
            if cap >= self.max_per_day {
                break;
            }
            let step = (u64::from(cap) * u64::from(self.growth_percent) / 100).max(1);
            cap = (u64::from(cap) + step).min(u64::from(self.max_per_day)) as u32;
        }
        cap
    }

    /// Check the bounds: 1 ≤ start ≤ max ≤ 100 000 and growth ≤ 100 %; the error names the field.
    pub fn validate(&self) -> Result<(), crate::FieldError> {
        let bad = |field: &str, reason: &str| Err(crate::FieldError::new(field, reason));
        if self.start_per_day == 0 {
            return bad("warmup.startPerDay", "must be at least 1");
        }
        if self.max_per_day > WARMUP_MAX_PER_DAY {
            return bad("warmup.maxPerDay", "must be at most 100000");
        }
        if self.max_per_day < self.start_per_day {
            return bad("warmup.maxPerDay", "must be at least startPerDay");
        }
        if self.growth_percent > WARMUP_MAX_GROWTH_PERCENT {
            return bad("warmup.growthPercent", "must be between 0 and 100");
        }
        Ok(())
    }
}

/// The day's cap of a sender: the smaller of its manual daily limit (if any) and its warmup cap.
pub fn daily_cap(manual_limit: Option<u32>, warmup: &WarmupSchedule, day_index: u32) -> u32 {
    let warm = warmup.warmup_cap(day_index);
    manual_limit.map_or(warm, |m| m.min(warm))
}

/// The counting day (a UTC calendar day) that contains `now`.
pub fn day_of(now: DateTime<Utc>) -> NaiveDate {
    now.with_timezone(&COUNTING_ZONE).date_naive()
}

/// The counting day containing `now` as `[start, end)`.
pub fn day_bounds(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let day = day_of(now);
    let start = resolve_local(COUNTING_ZONE, day.and_time(NaiveTime::MIN));
    let next = day.succ_opt().unwrap_or(day);
    (start, resolve_local(COUNTING_ZONE, next.and_time(NaiveTime::MIN)))
}

/// When the counters of the day containing `now` reset (the end of [`day_bounds`]).
pub fn resets_at(now: DateTime<Utc>) -> DateTime<Utc> {
    day_bounds(now).1
}

/// The warmup day of a sender whose first sending day was `first_day`: calendar days elapsed
/// (0 on the first day, and for a sender that has not sent yet).
pub fn warmup_day_index(first_day: Option<NaiveDate>, today: NaiveDate) -> u32 {
    first_day.map_or(0, |f| u32::try_from((today - f).num_days().max(0)).unwrap_or(u32::MAX))
}

/// A cap and what was counted against it today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    /// Today's cap.
    pub cap: u32,
    /// Sent (or reserved) today.
    pub sent: u32,
}

impl Capacity {
    /// What is left today.
    pub fn remaining(&self) -> u32 {
        self.cap.saturating_sub(self.sent)
    }
}

/// A report quality gate; each blocks the mail with `quality_gate:<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityGate {
    /// The audit finished (did not fail or time out).
    AuditFinished,
    /// The site answered with its page, not a bot wall (a challenge or block page): the gate
    /// is named for what it stops, `site_blocked`.
    SiteNotBlocked,
    /// The site answered with a 2xx status.
    SiteAnswered2xx,
    /// The desktop screenshot is not blank.
    ScreenshotNotBlank,
    /// The report has its scores.
    ReportHasScores,
}

impl QualityGate {
    /// Every gate, in the order they are checked.
    pub const ALL: [QualityGate; 5] = [
        QualityGate::AuditFinished,
        QualityGate::SiteNotBlocked,
        QualityGate::SiteAnswered2xx,
        QualityGate::ScreenshotNotBlank,
        QualityGate::ReportHasScores,
    ];

    /// The gate's name (`audit_finished`, `site_answered_2xx`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            QualityGate::AuditFinished => "audit_finished",
            QualityGate::SiteNotBlocked => "site_blocked",
            QualityGate::SiteAnswered2xx => "site_answered_2xx",
            QualityGate::ScreenshotNotBlank => "screenshot_not_blank",
            QualityGate::ReportHasScores => "report_has_scores",
        }
    }
}

/// What the finished audit tells about the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportQuality {
    /// The audit completed (false: it failed or timed out).
    pub audit_finished: bool,
    /// The HTTP status the site answered with (`None`: no answer).
    pub site_status: Option<u16>,
    /// The site answered with a bot wall (its vendor) instead of its page.
    #[serde(default)]
    pub site_blocked: bool,
    /// The desktop screenshot is blank (or missing).
    pub screenshot_blank: bool,
    /// The report carries its scores.
    pub has_scores: bool,
}

impl ReportQuality {
    /// The first gate this report fails, in [`QualityGate::ALL`] order.
    pub fn failed_gate(&self) -> Option<QualityGate> {
        QualityGate::ALL.into_iter().find(|g| !self.passes(*g))
    }

    /// Whether the report passes `gate`.
    pub fn passes(&self, gate: QualityGate) -> bool {
        match gate {
            QualityGate::AuditFinished => self.audit_finished,
            QualityGate::SiteNotBlocked => !self.site_blocked,
            QualityGate::SiteAnswered2xx => self.site_status.is_some_and(|s| (200..300).contains(&s)),
            QualityGate::ScreenshotNotBlank => !self.screenshot_blank,
            QualityGate::ReportHasScores => self.has_scores,
        }
    }
}

/// Where the row's report stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportStatus {
    /// The audit has not ended yet.
    Pending,
    /// The audit ended; its quality.
    Ready(ReportQuality),
}

/// Everything [`decide`] looks at for one recipient row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendInputs {
    /// The service's now.
    pub now: DateTime<Utc>,
    /// The campaign's `sendAt`.
    pub send_at: DateTime<Utc>,
    /// The campaign's zone.
    pub zone: Tz,
    /// The campaign's sending hours.
    pub hours: SendHours,
    /// The recipient's address is suppressed for this account.
    pub suppressed: bool,
    /// The row's report.
    pub report: ReportStatus,
    /// The sender's cap and count today.
    pub sender: Capacity,
    /// The recipient domain's cap and count today.
    pub domain: Capacity,
}

/// Why a row waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitReason {
    /// The audit has not ended.
    Audit,
    /// Before the campaign's `sendAt`.
    SendAt,
    /// Outside the sending hours.
    SendingHours,
    /// The sender's cap for the day is spent.
    SenderCap,
    /// The recipient domain's cap for the day is spent.
    DomainCap,
}

impl WaitReason {
    /// The stable reason string (`send_at`, `sending_hours`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::Audit => "audit",
            WaitReason::SendAt => "send_at",
            WaitReason::SendingHours => "sending_hours",
            WaitReason::SenderCap => "sender_cap",
            WaitReason::DomainCap => "domain_cap",
        }
    }
}

/// Why a row is skipped for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// The address is suppressed.
    Suppressed,
    /// The report failed a quality gate.
    QualityGate(QualityGate),
}

impl fmt::Display for SkipReason {
    /// `suppressed` or `quality_gate:<name>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Suppressed => f.write_str("suppressed"),
            SkipReason::QualityGate(g) => write!(f, "quality_gate:{}", g.as_str()),
        }
    }
}

/// What may happen to a row now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send now (after reserving one unit of the sender's and the domain's cap atomically).
    Send,
    /// Not now; look again at `until` (`None`: when the awaited event happens).
    Wait { reason: WaitReason, until: Option<DateTime<Utc>> },
    /// Never: the row is skipped.
    Skip { reason: SkipReason },
}

impl Decision {
    /// The stable reason string, `None` for `Send`.
    pub fn reason(&self) -> Option<String> {
        match self {
            Decision::Send => None,
            Decision::Wait { reason, .. } => Some(reason.as_str().to_string()),
            Decision::Skip { reason } => Some(reason.to_string()),
        }
    }
}

/// The sending rule: whether the row may be mailed now (see the module docs for the order).
pub fn decide(inputs: &SendInputs) -> Decision {
    let SendInputs { now, send_at, zone, hours, suppressed, report, sender, domain } = *inputs;
    if suppressed {
        return Decision::Skip { reason: SkipReason::Suppressed };
    }
    let quality = match report {
        ReportStatus::Pending => return Decision::Wait { reason: WaitReason::Audit, until: None },
        ReportStatus::Ready(q) => q,
    };
    if let Some(gate) = quality.failed_gate() {
        return Decision::Skip { reason: SkipReason::QualityGate(gate) };
    }
    if now < send_at {
        return Decision::Wait { reason: WaitReason::SendAt, until: Some(next_open(send_at, zone, hours)) };
    }
    if let WindowState::Closed { opens_at } = window(now, zone, hours) {
        return Decision::Wait { reason: WaitReason::SendingHours, until: Some(opens_at) };
    }
    let after_reset = || Some(next_open(resets_at(now), zone, hours));
    if sender.remaining() == 0 {
        return Decision::Wait { reason: WaitReason::SenderCap, until: after_reset() };
    }
    if domain.remaining() == 0 {
        return Decision::Wait { reason: WaitReason::DomainCap, until: after_reset() };
    }
    Decision::Send
}

/// Longest address accepted (RFC 5321's path limit less the angle brackets).
pub const EMAIL_MAX_LEN: usize = 254;

/// A syntactically valid e-mail address: an ASCII dot-atom local part and a domain name
/// (internationalised domains are stored in their ASCII `xn--` form, lower-cased).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmailAddress {
    address: String,
    at: usize,
}

impl EmailAddress {
    /// The whole address (`local@domain`, domain lower-cased).
    pub fn as_str(&self) -> &str {
        &self.address
    }

    /// The local part, as given (local parts may be case-sensitive).
    pub fn local(&self) -> &str {
        &self.address[..self.at]
    }

    /// The domain, lower-cased ASCII.
    pub fn domain(&self) -> &str {
        &self.address[self.at + 1..]
    }

    /// The address lower-cased whole: the key suppressions and duplicates compare on.
    pub fn key(&self) -> String {
        self.address.to_ascii_lowercase()
    }
}

impl fmt::Display for EmailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.address)
    }
}

/// Why an address was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    /// Nothing given.
    #[error("is empty")]
    Empty,
    /// Longer than [`EMAIL_MAX_LEN`].
    #[error("is longer than 254 characters")]
    TooLong,
    /// No `@`, or nothing on one side of it.
    #[error("must look like name@example.com")]
    Shape,
    /// The local part is not an ASCII dot-atom of at most 64 characters.
    #[error("has an invalid part before the @")]
    LocalPart,
    /// The domain is not a valid host name with a top-level domain.
    #[error("has an invalid domain")]
    Domain,
}

/// Validate an e-mail address (surrounding whitespace is ignored). Accepted: a dot-atom local
/// part of printable ASCII (RFC 5322 `atext`, no leading, trailing or double dots, ≤ 64
/// characters) and a host name of at least two labels (letters, digits, hyphens; ≤ 63 each;
/// a top-level label that is not numeric); Unicode domains are converted to `xn--`. Refused on
/// purpose: quoted local parts, comments, IP literals and non-ASCII local parts, which real
/// recipients of campaign mail do not use and many relays reject.
pub fn validate_email(input: &str) -> Result<EmailAddress, EmailError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(EmailError::Empty);
    }
    if s.len() > EMAIL_MAX_LEN * 4 {
        return Err(EmailError::TooLong);
    }
    let (local, domain) = s.rsplit_once('@').ok_or(EmailError::Shape)?;
    if local.is_empty() || domain.is_empty() {
        return Err(EmailError::Shape);
    }
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    if local.len() > 64 || local.split('.').any(|atom| atom.is_empty() || !atom.chars().all(atext)) {
        return Err(EmailError::LocalPart);
    }
    let domain = ascii_domain(domain).ok_or(EmailError::Domain)?;
    let address = format!("{local}@{domain}");
    if address.len() > EMAIL_MAX_LEN {
        return Err(EmailError::TooLong);
    }
    Ok(EmailAddress { at: local.len(), address })
}

/// A host name as lower-case ASCII (IDNA for Unicode), or `None` when it is not a valid one.
fn ascii_domain(domain: &str) -> Option<String> {
    let domain = domain.strip_suffix('.').unwrap_or(domain);
    if domain.starts_with('[') {
        return None;
    }
    let ascii = if domain.is_ascii() {
        domain.to_ascii_lowercase()
    } else {
        match url::Host::parse(domain).ok()? {
            url::Host::Domain(d) => d,
            _ => return None,
        }
    };
    let labels: Vec<&str> = ascii.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    let tld = labels.last()?;
    let tld_ok = tld.len() >= 2 && !tld.bytes().all(|b| b.is_ascii_digit());
    (ascii.len() <= 253 && labels.len() >= 2 && labels.iter().all(label_ok) && tld_ok).then_some(ascii)
}

/// The recipient domain of an address (lower-cased ASCII), the key of the per-domain cap.
pub fn recipient_domain(address: &str) -> Result<String, EmailError> {
    validate_email(address).map(|a| a.domain().to_string())
}

#[cfg(test)]
mod tests;
