//! Usage over time: actions per day for this month and the previous one, from the usage
//! ledger, split by product (screenshots, audits, ads, runs) or by API key. Each month is a
//! chart drawn on the server (SVG: a stacked bar a day, the running total and the monthly
//! allowance as a line) with the same numbers in a table for screen readers and anyone
//! who prefers text.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::time::{MonthWindow, iso};
use capture_store::UsageDay;
use serde::Deserialize;

use super::base::forms::{Signed, account};
use super::base::layout::{Chrome, Nav, WebError, WebResult, page};
use crate::state::AppState;

const DAY_MS: i64 = 86_400_000;
/// The products in the order they are stacked.
const PRODUCTS: &[(&str, &str)] = &[
    ("screenshots", "Screenshots"),
    ("audits", "Audits"),
    ("ads", "Ads"),
    ("runs", "Browser runs"),
    ("other", "Other"),
];
/// Fill colours of the series, in order (distinguishable, and with text labels everywhere).
const COLOURS: &[&str] = &["#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#65a30d", "#be185d"];

// The chart's geometry, in SVG user units.
const W: f64 = 720.0;
const H: f64 = 260.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 30.0;

#[derive(Debug, Default, Deserialize)]
pub struct UsageParams {
    by: Option<String>,
}

/// `GET /dashboard/usage?by=product|key`
pub async fn show(
    State(state): State<AppState>,
    Signed(s): Signed,
    Query(p): Query<UsageParams>,
) -> WebResult<Response> {
    let by_key = match p.by.as_deref().unwrap_or("product") {
        "product" | "" => false,
        "key" => true,
        _ => return Err(WebError::invalid("Split usage by product or by key.")),
    };
    let acc = account(&state, &s).await?;
    let now = state.clock.now_ms();
    let this = MonthWindow::containing(now);
    let previous = MonthWindow::containing(this.start_ms - 1);
    let keys: BTreeMap<String, String> =
        state.store.list_keys(&s.user.id).await?.into_iter().map(|k| (k.id, k.name)).collect();
    let limit = (!acc.is_admin).then_some(acc.plan_limit);
    let mut months = Vec::new();
    for (w, current) in [(&this, true), (&previous, false)] {
        let rows = state.store.usage_per_day(&s.user.id, &w.label).await?;
        months.push(Month::build(w, current.then_some(now), &rows, by_key, &keys, limit));
    }
    let view = UsagePage { chrome: Chrome::signed("Usage", &s, Nav::Usage), by_key, months, limit };
    Ok(page(StatusCode::OK, &view, None))
}

/// `templates/web/usage.html`
#[derive(Template)]
#[template(path = "web/usage.html")]
struct UsagePage<'a> {
    chrome: Chrome<'a>,
    by_key: bool,
    months: Vec<Month>,
    limit: Option<i64>,
}

/// A series of the chart (a product or a key).
struct Series {
    name: String,
    colour: &'static str,
    total: i64,
}

/// A day of the table.
struct DayRow {
    date: String,
    values: Vec<i64>,
    total: i64,
    running: i64,
}

/// A rectangle of the chart.
struct Bar {
    x: String,
    y: String,
    w: String,
    h: String,
    colour: &'static str,
    series: usize,
    label: String,
}

/// A label on an axis.
struct Tick {
    x: String,
    y: String,
    text: String,
}

/// One month: its series, days, totals and the chart's shapes.
struct Month {
    label: String,
    /// `this` or `previous` (element ids).
    slug: &'static str,
    heading: String,
    series: Vec<Series>,
    days: Vec<DayRow>,
    total: i64,
    bars: Vec<Bar>,
    /// `x,y x,y …` of the running total.
    running: String,
    /// The allowance line's height, when it applies.
    quota_y: Option<String>,
    y_ticks: Vec<Tick>,
    x_ticks: Vec<Tick>,
    /// The chart in words (`<desc>`).
    summary: String,
    // Geometry the template needs.
    left: String,
    right: String,
    bottom: String,
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

impl Month {
    fn build(
        w: &MonthWindow,
        today: Option<i64>,
        rows: &[UsageDay],
        by_key: bool,
        keys: &BTreeMap<String, String>,
        limit: Option<i64>,
    ) -> Month {
        let first_day = w.start_ms / DAY_MS;
        let n_days = ((w.reset_ms - w.start_ms) / DAY_MS).max(1) as usize;
        // The days shown in the table: up to today in the current month.
        let shown = match today {
            Some(t) => ((t / DAY_MS - first_day) as usize + 1).min(n_days),
            None => n_days,
        };
        // The series, in a stable order.
        let mut names: Vec<String> = Vec::new();
        let name_of = |r: &UsageDay| -> String {
            if by_key {
                match &r.key_id {
                    Some(k) => keys.get(k).map_or_else(|| format!("Key {k}"), |n| format!("Key “{n}”")),
                    None => "Website, CLI and MCP (no key)".to_string(),
                }
            } else {
                PRODUCTS.iter().find(|(p, _)| *p == r.product).map_or("Other", |(_, l)| l).to_string()
            }
        };
        if !by_key {
            for (p, l) in PRODUCTS {
                if *p != "other" || rows.iter().any(|r| r.product == "other") {
                    names.push(l.to_string());
                }
            }
        }
        for r in rows {
            let n = name_of(r);
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut grid = vec![vec![0i64; names.len()]; n_days];
        for r in rows {
            let d = (r.day - first_day).clamp(0, n_days as i64 - 1) as usize;
            let s = names.iter().position(|n| *n == name_of(r)).unwrap_or(0);
            grid[d][s] += r.actions;
        }
        let series: Vec<Series> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Series {
                name: n.clone(),
                colour: COLOURS[i % COLOURS.len()],
                total: grid.iter().map(|d| d[i]).sum(),
            })
            .collect();
        let mut running = 0;
        let mut days = Vec::with_capacity(shown);
        let mut cumulative = Vec::with_capacity(shown);
        for (d, values) in grid.iter().enumerate().take(shown) {
            let total: i64 = values.iter().sum();
            running += total;
            cumulative.push(running);
            days.push(DayRow {
                date: iso((first_day + d as i64) * DAY_MS)[..10].to_string(),
                values: values.clone(),
                total,
                running,
            });
        }
        let total = running;
        // The scale: the allowance, the highest running total or the tallest bar.
        let tallest = grid.iter().map(|d| d.iter().filter(|v| **v > 0).sum::<i64>()).max().unwrap_or(0);
        let top = cumulative.iter().copied().max().unwrap_or(0).max(tallest).max(limit.unwrap_or(0)).max(1);
        let ymax = nice(top);
        let plot_w = W - LEFT - RIGHT;
        let plot_h = H - TOP - BOTTOM;
        let y = |v: f64| TOP + plot_h - v / ymax as f64 * plot_h;
        let slot = plot_w / n_days as f64;
        let bar_w = (slot - 2.0).max(1.0);
        let mut bars = Vec::new();
        for (d, values) in grid.iter().enumerate() {
            let mut base = 0.0;
            for (s, v) in values.iter().enumerate() {
                if *v <= 0 {
                    continue;
                }
                let (y0, y1) = (y(base), y(base + *v as f64));
                base += *v as f64;
                bars.push(Bar {
                    x: f(LEFT + d as f64 * slot + 1.0),
                    y: f(y1),
                    w: f(bar_w),
                    h: f((y0 - y1).max(0.5)),
                    colour: series[s].colour,
                    series: s,
                    label: format!("{}: {v} {}", &iso((first_day + d as i64) * DAY_MS)[..10], series[s].name),
                });
            }
        }
        let running_pts = cumulative
            .iter()
            .enumerate()
            .map(|(d, v)| format!("{},{}", f(LEFT + (d as f64 + 0.5) * slot), f(y(*v as f64))))
            .collect::<Vec<_>>()
            .join(" ");
        let y_ticks = [0, ymax / 2, ymax]
            .iter()
            .map(|v| Tick { x: f(LEFT - 6.0), y: f(y(*v as f64) + 4.0), text: v.to_string() })
            .collect();
        let x_ticks = (0..n_days)
            .filter(|d| d % 5 == 0)
            .map(|d| Tick { x: f(LEFT + (d as f64 + 0.5) * slot), y: f(H - 10.0), text: (d + 1).to_string() })
            .collect();
        let heading =
            if today.is_some() { format!("This month ({})", w.label) } else { format!("Last month ({})", w.label) };
        let noun = if total == 1 { "action" } else { "actions" };
        let mut summary = format!("{total} {noun} in {}", w.label);
        if let Some(l) = limit {
            summary.push_str(&format!(" of an allowance of {l}"));
        }
        let parts: Vec<String> =
            series.iter().filter(|s| s.total != 0).map(|s| format!("{}: {}", s.name, s.total)).collect();
        if !parts.is_empty() {
            summary.push_str(&format!(" ({})", parts.join(", ")));
        }
        summary.push('.');
        Month {
            label: w.label.clone(),
            slug: if today.is_some() { "this" } else { "previous" },
            heading,
            series,
            days,
            total,
            bars,
            running: running_pts,
            quota_y: limit.map(|l| f(y(l as f64))),
            y_ticks,
            x_ticks,
            summary,
            left: f(LEFT),
            right: f(W - RIGHT),
            bottom: f(TOP + plot_h),
        }
    }
}

/// A round number at or above `v` for the top of the scale.
fn nice(v: i64) -> i64 {
    let mut step = 1;
    while step * 10 <= v {
        step *= 10;
    }
    for m in [1, 2, 5, 10] {
        if step * m >= v {
            return step * m;
        }
    }
    step * 10
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(month: &MonthWindow, d: i64, key: Option<&str>, product: &str, actions: i64) -> UsageDay {
        UsageDay { day: month.start_ms / DAY_MS + d, key_id: key.map(str::to_string), product: product.into(), actions }
    }

    #[test]
    fn the_scale_is_round() {
        assert_eq!((nice(1), nice(7), nice(100), nice(101), nice(240), nice(600)), (1, 10, 100, 200, 500, 1000));
    }

    #[test]
    fn a_month_adds_up_by_product_and_by_key_with_the_allowance() {
        let w = MonthWindow::containing(1_750_000_000_000); // June 2025
        let rows = vec![
            day(&w, 0, Some("key_a"), "screenshots", 3),
            day(&w, 0, None, "screenshots", 1),
            day(&w, 2, Some("key_a"), "runs", 4),
            day(&w, 2, Some("key_b"), "screenshots", -1),
            day(&w, 45, Some("key_b"), "audits", 2), // a late refund's day is kept in the month
        ];
        let keys = BTreeMap::from([("key_a".to_string(), "prod".to_string())]);
        let m = Month::build(&w, None, &rows, false, &keys, Some(100));
        assert_eq!(m.days.len(), 30);
        assert_eq!(m.total, 9);
        let names: Vec<&str> = m.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Screenshots", "Audits", "Ads", "Browser runs"]);
        assert_eq!(m.series.iter().map(|s| s.total).collect::<Vec<_>>(), [3, 2, 0, 4]);
        assert_eq!((m.days[0].total, m.days[2].total, m.days[2].running, m.days[29].total), (4, 3, 7, 2));
        assert!(m.quota_y.is_some());
        // Bars: day 0 screenshots (4), day 2 runs (4; the negative screenshots are not drawn), day 29 audits.
        assert_eq!(m.bars.len(), 3);
        assert!(m.summary.starts_with("9 actions in 2025-06 of an allowance of 100"), "{}", m.summary);

        let by_key = Month::build(&w, None, &rows, true, &keys, None);
        let names: Vec<&str> = by_key.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Key “prod”", "Website, CLI and MCP (no key)", "Key key_b"]);
        assert_eq!(by_key.series.iter().map(|s| s.total).collect::<Vec<_>>(), [7, 1, 1]);
        assert!(by_key.quota_y.is_none());
    }

    #[test]
    fn the_current_month_lists_days_up_to_today() {
        let w = MonthWindow::containing(1_750_000_000_000); // 2025-06-15
        let m = Month::build(&w, Some(1_750_000_000_000), &[], false, &BTreeMap::new(), Some(100));
        assert_eq!(m.days.len(), 15);
        assert_eq!(m.days.last().unwrap().date, "2025-06-15");
        assert_eq!(m.total, 0);
    }
}
