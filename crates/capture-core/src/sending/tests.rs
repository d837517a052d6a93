//! Tables of instants and inputs against the expected windows and decisions.

use super::*;
use chrono::{NaiveDate, Timelike, Weekday};
use chrono_tz::Tz;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn zone(name: &str) -> Tz {
    parse_zone(name).unwrap()
}

fn open(closes: &str) -> WindowState {
    WindowState::Open { closes_at: Some(at(closes)) }
}

fn closed(opens: &str) -> WindowState {
    WindowState::Closed { opens_at: at(opens) }
}

#[test]
fn the_2026_transitions_are_where_the_tables_assume() {
    // The tables below lean on these dates; check them against the zone database itself.
    let cases = [
        ("America/New_York", "2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z", -5, -4),
        ("America/New_York", "2026-11-01T05:59:59Z", "2026-11-01T06:00:00Z", -4, -5),
        ("Europe/Berlin", "2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z", 1, 2),
        ("Europe/Berlin", "2026-10-25T00:59:59Z", "2026-10-25T01:00:00Z", 2, 1),
        ("Pacific/Auckland", "2026-04-04T13:59:59Z", "2026-04-04T14:00:00Z", 13, 12),
        ("Pacific/Auckland", "2026-09-26T13:59:59Z", "2026-09-26T14:00:00Z", 12, 13),
    ];
    for (name, before, after, h1, h2) in cases {
        let z = zone(name);
        let off = |t: &str| at(t).with_timezone(&z).offset().fix().local_minus_utc() / 3600;
        assert_eq!((off(before), off(after)), (h1, h2), "{name} around {after}");
    }
}

#[test]
fn office_windows_across_zones_and_dst_changes() {
    let table: &[(&str, &str, WindowState)] = &[
        // New York, spring forward on Sunday 8 March 2026: Friday evening waits for Monday 09:00
        // EDT, an hour earlier in UTC than the Friday before.
        ("America/New_York", "2026-03-06T13:59:59Z", closed("2026-03-06T14:00:00Z")),
        ("America/New_York", "2026-03-06T14:00:00Z", open("2026-03-06T21:00:00Z")),
        ("America/New_York", "2026-03-06T20:59:59Z", open("2026-03-06T21:00:00Z")),
        ("America/New_York", "2026-03-06T21:00:00Z", closed("2026-03-09T13:00:00Z")),
        ("America/New_York", "2026-03-08T07:30:00Z", closed("2026-03-09T13:00:00Z")),
        ("America/New_York", "2026-03-09T12:59:59Z", closed("2026-03-09T13:00:00Z")),
        ("America/New_York", "2026-03-09T13:00:00Z", open("2026-03-09T20:00:00Z")),
        // New York, fall back on Sunday 1 November 2026.
        ("America/New_York", "2026-10-30T19:59:59Z", open("2026-10-30T20:00:00Z")),
        ("America/New_York", "2026-10-30T20:00:00Z", closed("2026-11-02T14:00:00Z")),
        ("America/New_York", "2026-11-01T05:30:00Z", closed("2026-11-02T14:00:00Z")),
        ("America/New_York", "2026-11-01T06:30:00Z", closed("2026-11-02T14:00:00Z")),
        ("America/New_York", "2026-11-02T14:00:00Z", open("2026-11-02T21:00:00Z")),
        // Berlin, spring forward on Sunday 29 March 2026 (three weeks after New York).
        ("Europe/Berlin", "2026-03-23T08:00:00Z", open("2026-03-23T15:00:00Z")),
        ("Europe/Berlin", "2026-03-27T14:59:59Z", open("2026-03-27T15:00:00Z")),
        ("Europe/Berlin", "2026-03-27T15:00:00Z", closed("2026-03-30T07:00:00Z")),
        ("Europe/Berlin", "2026-03-29T01:30:00Z", closed("2026-03-30T07:00:00Z")),
        ("Europe/Berlin", "2026-03-30T06:59:59Z", closed("2026-03-30T07:00:00Z")),
        ("Europe/Berlin", "2026-03-30T07:00:00Z", open("2026-03-30T14:00:00Z")),
        // Berlin, fall back on Sunday 25 October 2026.
        ("Europe/Berlin", "2026-10-23T13:59:59Z", open("2026-10-23T14:00:00Z")),
        ("Europe/Berlin", "2026-10-23T14:00:00Z", closed("2026-10-26T08:00:00Z")),
        ("Europe/Berlin", "2026-10-25T00:30:00Z", closed("2026-10-26T08:00:00Z")),
        ("Europe/Berlin", "2026-10-26T08:00:00Z", open("2026-10-26T15:00:00Z")),
        // A plain Friday evening → Monday morning wait in winter.
        ("Europe/Berlin", "2026-01-09T16:30:00Z", closed("2026-01-12T08:00:00Z")),
        ("Europe/Berlin", "2026-01-10T12:00:00Z", closed("2026-01-12T08:00:00Z")),
        // Kolkata: +05:30 all year, no DST.
        ("Asia/Kolkata", "2026-01-05T03:29:59Z", closed("2026-01-05T03:30:00Z")),
        ("Asia/Kolkata", "2026-01-05T03:30:00Z", open("2026-01-05T10:30:00Z")),
        ("Asia/Kolkata", "2026-01-05T10:30:00Z", closed("2026-01-06T03:30:00Z")),
        ("Asia/Kolkata", "2026-01-09T10:30:00Z", closed("2026-01-12T03:30:00Z")),
        ("Asia/Kolkata", "2026-07-01T08:00:00Z", open("2026-07-01T10:30:00Z")),
        // Auckland: its Monday starts on Sunday in UTC; DST ends 5 April and starts 27 September.
        ("Pacific/Auckland", "2026-04-03T02:59:59Z", open("2026-04-03T03:00:00Z")),
        ("Pacific/Auckland", "2026-04-03T03:00:00Z", closed("2026-04-05T21:00:00Z")),
        ("Pacific/Auckland", "2026-04-05T20:59:59Z", closed("2026-04-05T21:00:00Z")),
        ("Pacific/Auckland", "2026-04-05T21:00:00Z", open("2026-04-06T04:00:00Z")),
        ("Pacific/Auckland", "2026-09-25T04:00:00Z", closed("2026-09-27T20:00:00Z")),
        ("Pacific/Auckland", "2026-09-27T20:00:00Z", open("2026-09-28T03:00:00Z")),
    ];
    for (name, now, expected) in table {
        assert_eq!(window(at(now), zone(name), SendHours::Office), *expected, "{name} at {now}");
    }
}

#[test]
fn anytime_is_always_open() {
    for now in ["2026-03-08T07:00:00Z", "2026-03-07T03:00:00Z", "2026-11-01T06:30:00Z"] {
        assert_eq!(
            window(at(now), zone("America/New_York"), SendHours::Anytime),
            WindowState::Open { closes_at: None }
        );
    }
}

#[test]
fn local_times_in_the_gap_and_the_fold_resolve_to_one_instant() {
    let table = [
        // Spring forward: 02:30 never happens; the window would start when clocks jump to 03:00.
        ("America/New_York", "2026-03-08T02:30:00", "2026-03-08T07:00:00Z"),
        ("Europe/Berlin", "2026-03-29T02:30:00", "2026-03-29T01:00:00Z"),
        ("Pacific/Auckland", "2026-09-27T02:15:00", "2026-09-26T14:00:00Z"),
        // Fall back: 01:30 in New York and 02:30 in Berlin happen twice; the first counts.
        ("America/New_York", "2026-11-01T01:30:00", "2026-11-01T05:30:00Z"),
        ("Europe/Berlin", "2026-10-25T02:30:00", "2026-10-25T00:30:00Z"),
        ("Pacific/Auckland", "2026-04-05T02:30:00", "2026-04-04T13:30:00Z"),
        // Ordinary times.
        ("Asia/Kolkata", "2026-06-01T09:00:00", "2026-06-01T03:30:00Z"),
        ("America/New_York", "2026-03-08T03:00:00", "2026-03-08T07:00:00Z"),
    ];
    for (name, local, expected) in table {
        let naive = NaiveDateTime::parse_from_str(local, "%Y-%m-%dT%H:%M:%S").unwrap();
        assert_eq!(resolve_local(zone(name), naive), at(expected), "{name} {local}");
    }
}

#[test]
fn a_skipped_calendar_day_is_no_office_day() {
    // Samoa skipped Friday 30 December 2011 when it crossed the date line; a Thursday-evening
    // wait goes to Monday 2 January 2012, not to a Saturday midnight after the gap.
    let apia = zone("Pacific/Apia");
    assert_eq!(office_window(apia, NaiveDate::from_ymd_opt(2011, 12, 30).unwrap()), None);
    assert_eq!(window(at("2011-12-30T02:30:00Z"), apia, SendHours::Office), closed("2012-01-01T19:00:00Z"));
}

#[test]
fn every_window_over_a_year_is_office_hours_on_weekdays() {
    // A sweep over 2026 in steps that drift across every minute of the day: whatever the window
    // says must agree with the local wall clock, and each opening must be a 09:00 on a weekday.
    for name in ["America/New_York", "Europe/Berlin", "Asia/Kolkata", "Pacific/Auckland"] {
        let z = zone(name);
        let mut now = at("2026-01-01T00:00:00Z");
        while now < at("2027-01-01T00:00:00Z") {
            let local = now.with_timezone(&z);
            let weekday = local.weekday().number_from_monday() <= 5;
            let office = weekday && local.time() >= OFFICE_OPENS && local.time() < OFFICE_CLOSES;
            match window(now, z, SendHours::Office) {
                WindowState::Open { closes_at } => {
                    assert!(office, "{name}: open at {now} ({local})");
                    let closes = closes_at.unwrap().with_timezone(&z);
                    assert_eq!((closes.date_naive(), closes.time()), (local.date_naive(), OFFICE_CLOSES));
                }
                WindowState::Closed { opens_at } => {
                    assert!(!office, "{name}: closed at {now} ({local})");
                    assert!(opens_at > now && opens_at - now <= Duration::days(3) + Duration::hours(17));
                    let opens = opens_at.with_timezone(&z);
                    assert_eq!(opens.time(), OFFICE_OPENS, "{name}: opens at {opens}");
                    assert!(opens.weekday().number_from_monday() <= 5);
                    assert!(!window(opens_at - Duration::seconds(1), z, SendHours::Office).is_open());
                    assert!(window(opens_at, z, SendHours::Office).is_open());
                }
            }
            now += Duration::minutes(53);
        }
    }
}

#[test]
fn warmup_ramps_in_integers_up_to_its_maximum() {
    let w = WarmupSchedule::default();
    assert_eq!((w.start_per_day, w.growth_percent, w.max_per_day), (20, 20, 500));
    let ramp: Vec<u32> = (0..21).map(|d| w.warmup_cap(d)).collect();
    assert_eq!(ramp, [20, 24, 28, 33, 39, 46, 55, 66, 79, 94, 112, 134, 160, 192, 230, 276, 331, 397, 476, 500, 500]);
    assert_eq!(w.warmup_cap(u32::MAX), 500);
    // Growth rounds down but always adds at least one.
    let slow = WarmupSchedule { start_per_day: 2, growth_percent: 10, max_per_day: 5 };
    assert_eq!((0..6).map(|d| slow.warmup_cap(d)).collect::<Vec<_>>(), [2, 3, 4, 5, 5, 5]);
    let flat = WarmupSchedule { start_per_day: 7, growth_percent: 0, max_per_day: 100 };
    assert_eq!(flat.warmup_cap(365), 7);
    let doubling = WarmupSchedule { start_per_day: 1, growth_percent: 100, max_per_day: 100_000 };
    assert_eq!((doubling.warmup_cap(10), doubling.warmup_cap(17), doubling.warmup_cap(40)), (1024, 100_000, 100_000));
}

#[test]
fn warmup_bounds_name_the_field() {
    let ok = WarmupSchedule { start_per_day: 5, growth_percent: 100, max_per_day: 5 };
    assert!(ok.validate().is_ok());
    let cases = [
        (WarmupSchedule { start_per_day: 0, growth_percent: 10, max_per_day: 5 }, "warmup.startPerDay"),
        (WarmupSchedule { start_per_day: 10, growth_percent: 10, max_per_day: 5 }, "warmup.maxPerDay"),
        (WarmupSchedule { start_per_day: 1, growth_percent: 10, max_per_day: 100_001 }, "warmup.maxPerDay"),
        (WarmupSchedule { start_per_day: 1, growth_percent: 101, max_per_day: 5 }, "warmup.growthPercent"),
    ];
    for (w, field) in cases {
        assert_eq!(w.validate().unwrap_err().field, field, "{w:?}");
    }
}

#[test]
fn the_days_cap_is_the_smaller_of_limit_and_warmup() {
    let w = WarmupSchedule::default();
    assert_eq!(daily_cap(None, &w, 0), 20);
    assert_eq!(daily_cap(Some(10), &w, 0), 10);
    assert_eq!(daily_cap(Some(100), &w, 5), 46);
    assert_eq!(daily_cap(Some(100), &w, 30), 100);
    assert_eq!(daily_cap(Some(0), &w, 30), 0);
    assert_eq!(Capacity { cap: 10, sent: 12 }.remaining(), 0);
    assert_eq!(Capacity { cap: 10, sent: 3 }.remaining(), 7);
}

#[test]
fn counting_days_are_utc_calendar_days() {
    let (start, end) = day_bounds(at("2026-03-08T23:59:59.999Z"));
    assert_eq!((start, end), (at("2026-03-08T00:00:00Z"), at("2026-03-09T00:00:00Z")));
    assert_eq!(day_bounds(at("2026-03-09T00:00:00Z")).0, at("2026-03-09T00:00:00Z"));
    assert_eq!(resets_at(at("2026-12-31T12:00:00Z")), at("2027-01-01T00:00:00Z"));
    assert_eq!(day_of(at("2026-10-25T01:30:00+02:00")), NaiveDate::from_ymd_opt(2026, 10, 24).unwrap());
    let first = NaiveDate::from_ymd_opt(2026, 2, 27);
    assert_eq!(warmup_day_index(first, NaiveDate::from_ymd_opt(2026, 2, 27).unwrap()), 0);
    assert_eq!(warmup_day_index(first, NaiveDate::from_ymd_opt(2026, 3, 2).unwrap()), 3);
    assert_eq!(warmup_day_index(first, NaiveDate::from_ymd_opt(2026, 2, 1).unwrap()), 0);
    assert_eq!(warmup_day_index(None, NaiveDate::from_ymd_opt(2026, 2, 1).unwrap()), 0);
}

fn good_report() -> ReportQuality {
    ReportQuality {
        audit_finished: true,
        site_status: Some(200),
        site_blocked: false,
        screenshot_blank: false,
        has_scores: true,
    }
}

/// Monday 23 March 2026, 10:00 in Berlin (CET), every rule satisfied.
fn base() -> SendInputs {
    SendInputs {
        now: at("2026-03-23T09:00:00Z"),
        send_at: at("2026-03-20T00:00:00Z"),
        zone: zone("Europe/Berlin"),
        hours: SendHours::Office,
        suppressed: false,
        report: ReportStatus::Ready(good_report()),
        sender: Capacity { cap: 20, sent: 5 },
        domain: Capacity { cap: 10, sent: 2 },
    }
}

fn wait(reason: WaitReason, until: &str) -> Decision {
    Decision::Wait { reason, until: Some(at(until)) }
}

fn gate(g: QualityGate) -> Decision {
    Decision::Skip { reason: SkipReason::QualityGate(g) }
}

#[test]
fn decisions_follow_the_documented_order() {
    let report = |f: fn(&mut ReportQuality)| {
        let mut q = good_report();
        f(&mut q);
        ReportStatus::Ready(q)
    };
    let everything_wrong = SendInputs {
        now: at("2026-03-21T12:00:00Z"),
        send_at: at("2026-03-28T00:00:00Z"),
        suppressed: true,
        report: report(|q| {
            *q = ReportQuality {
                audit_finished: false,
                site_status: None,
                site_blocked: true,
                screenshot_blank: true,
                has_scores: false,
            }
        }),
        sender: Capacity { cap: 0, sent: 0 },
        domain: Capacity { cap: 0, sent: 0 },
        ..base()
    };
    let table: Vec<(&str, SendInputs, Decision)> = vec![
        ("all rules hold", base(), Decision::Send),
        (
            "last unit of both caps",
            SendInputs { sender: Capacity { cap: 6, sent: 5 }, domain: Capacity { cap: 3, sent: 2 }, ..base() },
            Decision::Send,
        ),
        ("suppressed beats everything", everything_wrong, Decision::Skip { reason: SkipReason::Suppressed }),
        (
            "audit still running",
            SendInputs { report: ReportStatus::Pending, ..base() },
            Decision::Wait { reason: WaitReason::Audit, until: None },
        ),
        (
            "suppressed while auditing",
            SendInputs { report: ReportStatus::Pending, suppressed: true, ..base() },
            Decision::Skip { reason: SkipReason::Suppressed },
        ),
        (
            "audit failed",
            SendInputs { report: report(|q| q.audit_finished = false), ..base() },
            gate(QualityGate::AuditFinished),
        ),
        (
            "site answered 404",
            SendInputs { report: report(|q| q.site_status = Some(404)), ..base() },
            gate(QualityGate::SiteAnswered2xx),
        ),
        (
            "site answered 301",
            SendInputs { report: report(|q| q.site_status = Some(301)), ..base() },
            gate(QualityGate::SiteAnswered2xx),
        ),
        (
            "site never answered",
            SendInputs { report: report(|q| q.site_status = None), ..base() },
            gate(QualityGate::SiteAnswered2xx),
        ),
        (
            "a bot wall (answered 403) is site_blocked, not site_answered_2xx",
            SendInputs {
                report: report(|q| {
                    q.site_blocked = true;
                    q.site_status = Some(403);
                }),
                ..base()
            },
            gate(QualityGate::SiteNotBlocked),
        ),
        ("site answered 204", SendInputs { report: report(|q| q.site_status = Some(204)), ..base() }, Decision::Send),
        (
            "blank screenshot",
            SendInputs { report: report(|q| q.screenshot_blank = true), ..base() },
            gate(QualityGate::ScreenshotNotBlank),
        ),
        (
            "no scores",
            SendInputs { report: report(|q| q.has_scores = false), ..base() },
            gate(QualityGate::ReportHasScores),
        ),
        (
            "gates in order",
            SendInputs {
                report: report(|q| {
                    q.site_status = Some(500);
                    q.has_scores = false
                }),
                ..base()
            },
            gate(QualityGate::SiteAnswered2xx),
        ),
        (
            "gate beats the clock",
            SendInputs { report: report(|q| q.has_scores = false), now: at("2026-03-21T12:00:00Z"), ..base() },
            gate(QualityGate::ReportHasScores),
        ),
        // sendAt on a Saturday: the wait lasts until Monday's window opens.
        (
            "before sendAt",
            SendInputs { send_at: at("2026-03-28T10:00:00Z"), ..base() },
            wait(WaitReason::SendAt, "2026-03-30T07:00:00Z"),
        ),
        (
            "before sendAt inside hours",
            SendInputs { send_at: at("2026-03-23T11:15:00Z"), ..base() },
            wait(WaitReason::SendAt, "2026-03-23T11:15:00Z"),
        ),
        ("exactly sendAt", SendInputs { send_at: at("2026-03-23T09:00:00Z"), ..base() }, Decision::Send),
        (
            "sendAt beats closed hours and caps",
            SendInputs {
                send_at: at("2026-03-28T10:00:00Z"),
                now: at("2026-03-21T12:00:00Z"),
                sender: Capacity { cap: 1, sent: 1 },
                ..base()
            },
            wait(WaitReason::SendAt, "2026-03-30T07:00:00Z"),
        ),
        (
            "Saturday",
            SendInputs { now: at("2026-03-21T12:00:00Z"), ..base() },
            wait(WaitReason::SendingHours, "2026-03-23T08:00:00Z"),
        ),
        (
            "Monday 08:59 Berlin",
            SendInputs { now: at("2026-03-23T07:59:59Z"), ..base() },
            wait(WaitReason::SendingHours, "2026-03-23T08:00:00Z"),
        ),
        (
            "Monday 16:00 Berlin",
            SendInputs { now: at("2026-03-23T15:00:00Z"), ..base() },
            wait(WaitReason::SendingHours, "2026-03-24T08:00:00Z"),
        ),
        (
            "hours beat caps",
            SendInputs { now: at("2026-03-21T12:00:00Z"), sender: Capacity { cap: 1, sent: 1 }, ..base() },
            wait(WaitReason::SendingHours, "2026-03-23T08:00:00Z"),
        ),
        // Cap resets at 00:00 UTC Tuesday; the Berlin window opens at 09:00 CET that day.
        (
            "sender cap spent",
            SendInputs { sender: Capacity { cap: 20, sent: 20 }, ..base() },
            wait(WaitReason::SenderCap, "2026-03-24T08:00:00Z"),
        ),
        (
            "domain cap spent",
            SendInputs { domain: Capacity { cap: 10, sent: 10 }, ..base() },
            wait(WaitReason::DomainCap, "2026-03-24T08:00:00Z"),
        ),
        (
            "both caps spent",
            SendInputs { sender: Capacity { cap: 20, sent: 21 }, domain: Capacity { cap: 0, sent: 0 }, ..base() },
            wait(WaitReason::SenderCap, "2026-03-24T08:00:00Z"),
        ),
        (
            "anytime cap resets at midnight UTC",
            SendInputs {
                hours: SendHours::Anytime,
                now: at("2026-03-21T12:00:00Z"),
                sender: Capacity { cap: 3, sent: 3 },
                ..base()
            },
            wait(WaitReason::SenderCap, "2026-03-22T00:00:00Z"),
        ),
        (
            "anytime on a Sunday",
            SendInputs { hours: SendHours::Anytime, now: at("2026-03-22T03:00:00Z"), ..base() },
            Decision::Send,
        ),
        // Friday after hours with the cap spent: Monday morning, not Saturday midnight.
        (
            "Friday cap spent",
            SendInputs { now: at("2026-03-27T14:59:00Z"), sender: Capacity { cap: 5, sent: 5 }, ..base() },
            wait(WaitReason::SenderCap, "2026-03-30T07:00:00Z"),
        ),
        // Kolkata's window opens before midnight UTC has passed for Europe.
        (
            "Kolkata cap",
            SendInputs {
                zone: zone("Asia/Kolkata"),
                now: at("2026-03-23T05:00:00Z"),
                domain: Capacity { cap: 2, sent: 2 },
                ..base()
            },
            wait(WaitReason::DomainCap, "2026-03-24T03:30:00Z"),
        ),
    ];
    for (name, inputs, expected) in table {
        assert_eq!(decide(&inputs), expected, "{name}");
    }
}

#[test]
fn reasons_are_stable_strings() {
    let names: Vec<String> = [
        Decision::Wait { reason: WaitReason::SendAt, until: None },
        Decision::Wait { reason: WaitReason::SendingHours, until: None },
        Decision::Wait { reason: WaitReason::SenderCap, until: None },
        Decision::Wait { reason: WaitReason::DomainCap, until: None },
        Decision::Wait { reason: WaitReason::Audit, until: None },
        Decision::Skip { reason: SkipReason::Suppressed },
    ]
    .iter()
    .chain(QualityGate::ALL.map(gate).iter())
    .map(|d| d.reason().unwrap())
    .collect();
    assert_eq!(
        names,
        [
            "send_at",
            "sending_hours",
            "sender_cap",
            "domain_cap",
            "audit",
            "suppressed",
            "quality_gate:audit_finished",
            "quality_gate:site_blocked",
            "quality_gate:site_answered_2xx",
            "quality_gate:screenshot_not_blank",
            "quality_gate:report_has_scores",
        ]
    );
    assert_eq!(Decision::Send.reason(), None);
    assert_eq!(SendHours::parse("office"), Some(SendHours::Office));
    assert_eq!(SendHours::parse("Office"), None);
    assert_eq!(SendHours::Anytime.as_str(), "anytime");
}

#[test]
fn zones_come_from_the_iana_database() {
    assert!(parse_zone("Europe/Berlin").is_some());
    assert!(parse_zone("Asia/Kolkata").is_some());
    assert!(parse_zone("UTC").is_some());
    for bad in ["", "Europe/Atlantis", "CET+1", "europe/berlin ", "../etc/passwd"] {
        assert!(parse_zone(bad).is_none(), "{bad}");
    }
}

#[test]
fn email_syntax() {
    let ok = [
        ("ada@example.com", "ada@example.com", "example.com"),
        ("  Ada.Lovelace+news@Example.COM ", "Ada.Lovelace+news@example.com", "example.com"),
        ("o'brien@mail.example.co.uk", "o'brien@mail.example.co.uk", "mail.example.co.uk"),
        ("x@a-b.io", "x@a-b.io", "a-b.io"),
        ("user@bücher.de", "user@xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("u@example.com.", "u@example.com", "example.com"),
        ("#!$%&'*+/=?^_`{}|~-@example.org", "#!$%&'*+/=?^_`{}|~-@example.org", "example.org"),
    ];
    for (input, address, domain) in ok {
        let a = validate_email(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!((a.as_str(), a.domain()), (address, domain), "{input}");
        assert_eq!(recipient_domain(input).unwrap(), domain);
    }
    assert_eq!(validate_email("Ada@Example.com").unwrap().key(), "ada@example.com");
    assert_eq!(validate_email("Ada@Example.com").unwrap().local(), "Ada");
    let long_local = format!("{}@example.com", "a".repeat(65));
    let long_total = format!("{}@{}.com", "a".repeat(60), vec!["b".repeat(60); 4].join("."));
    let bad: Vec<(&str, EmailError)> = vec![
        ("", EmailError::Empty),
        ("   ", EmailError::Empty),
        ("ada", EmailError::Shape),
        ("ada@", EmailError::Shape),
        ("@example.com", EmailError::Shape),
        ("a..b@example.com", EmailError::LocalPart),
        (".ab@example.com", EmailError::LocalPart),
        ("ab.@example.com", EmailError::LocalPart),
        ("a b@example.com", EmailError::LocalPart),
        ("\"a b\"@example.com", EmailError::LocalPart),
        ("ü@example.com", EmailError::LocalPart),
        ("a@b@example.com", EmailError::LocalPart),
        ("a\r\nbcc:x@example.com", EmailError::LocalPart),
        (long_local.as_str(), EmailError::LocalPart),
        ("ada@localhost", EmailError::Domain),
        ("ada@[127.0.0.1]", EmailError::Domain),
        ("ada@127.0.0.1", EmailError::Domain),
        ("ada@-x.com", EmailError::Domain),
        ("ada@x-.com", EmailError::Domain),
        ("ada@exa_mple.com", EmailError::Domain),
        ("ada@example..com", EmailError::Domain),
        ("ada@example.c", EmailError::Domain),
        ("ada@example.com\r\nBcc: x@y.z", EmailError::LocalPart),
        ("ada@exam\r\nple.com", EmailError::Domain),
        (long_total.as_str(), EmailError::TooLong),
    ];
    for (input, err) in bad {
        assert_eq!(validate_email(input), Err(err), "{input:?}");
    }
}

#[test]
fn weekday_helpers_agree_with_chrono() {
    // Guards the `number_from_monday() <= 5` test used above for Monday–Friday.
    assert_eq!(Weekday::Fri.number_from_monday(), 5);
    assert_eq!(Weekday::Sat.number_from_monday(), 6);
    assert_eq!(OFFICE_OPENS.hour(), 9);
    assert_eq!(OFFICE_CLOSES.hour(), 16);
}
