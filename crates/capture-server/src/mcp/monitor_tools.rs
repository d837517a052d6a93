//! The monitor tools: `monitor_create` watches a page on a schedule, `monitor_list` lists the
//! account's monitors with their last status, `monitor_checks` reads a monitor's history (what
//! changed, the diff's picture and text), `monitor_check_now` checks one at once. They call the
//! monitors' service functions, as the REST API does.

use capture_core::MonitorId;
use rmcp::model::{CallToolResult, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::monitors::service;
use crate::monitors::types::{MonitorCheck, MonitorIn};
use crate::paging::ListQuery;
use crate::tool::{Cx, annotations, args, tool_group, valid, with_text};

/// A page of monitors.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListIn {
    /// How many (1 to 100, default 20).
    #[serde(default)]
    pub limit: Option<u32>,
    /// A nextCursor from the previous page.
    #[serde(default)]
    pub before: Option<String>,
}

/// A monitor, and optionally a page of its checks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChecksIn {
    /// The monitor's id (mon_…).
    pub id: String,
    /// How many checks (1 to 100, default 20), newest first.
    #[serde(default)]
    pub limit: Option<u32>,
    /// A nextCursor from the previous page.
    #[serde(default)]
    pub before: Option<String>,
}

/// A monitor.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorArg {
    /// The monitor's id (mon_…).
    pub id: String,
}

tool_group! {
    "monitor_create": MonitorIn, annotations("Monitor a page for changes", false, false, true),
        "Watch a page: capture url on a schedule ({every: \"1h\"} or {cron: \"0 9 * * 1-5\", timezone: \
             \"Europe/Berlin\"}; at most as often as the service allows, 5 minutes by default) and compare each \
             capture with the baseline (compare: pixels, text or both; threshold: the share of pixels that must \
             change, default 0.001; ignoreSelectors: elements left out, like a clock). The first good check is the \
             baseline. Failed, blocked or cut-off captures are failed checks, never 'unchanged'. Each check is \
             charged as one capture. Changes fire monitor.changed, three failures in a row monitor.failing."
        => create_tool;
    "monitor_list": ListIn, annotations("List monitors", true, true, false),
        "The account's monitors, newest first: name, url, status (active or paused), the last check's status \
             and when the next check is due."
        => list_tool;
    "monitor_checks": ChecksIn, annotations("A monitor's checks", true, true, false),
        "A monitor's checks, newest first: status (baseline, unchanged, changed, failed, pending), the share of \
             pixels changed and where, the diff picture's URL, the text's unified diff, and why a check failed."
        => checks_tool;
    "monitor_check_now": MonitorArg, annotations("Check a monitor now", false, false, true),
        "Check a monitor at once, outside its schedule (charged as one capture). Answers the pending check; \
             monitor_checks shows its result when the capture and comparison end (seconds)."
        => check_now_tool;
}

fn monitor_id(raw: &str) -> Result<MonitorId> {
    MonitorId::parse(raw.trim()).ok_or_else(|| crate::error::Error::not_found(MonitorId::NOUN))
}

fn check_line(c: &MonitorCheck) -> String {
    let mut line = format!("{} {} at {}", c.id, c.status, c.created_at);
    if let Some(r) = c.diff_ratio {
        line.push_str(&format!(", {:.3} % of pixels changed in {} regions", r * 100.0, c.changed_regions.len()));
    }
    if let Some(d) = &c.diff_url {
        line.push_str(&format!(", diff {d}"));
    }
    if let Some(e) = &c.error {
        line.push_str(&format!(": {e}"));
    }
    if let Some(t) = c.text_diff.as_deref().filter(|t| !t.is_empty()) {
        let t: String = t.chars().take(2_000).collect();
        line.push_str(&format!("\n  text changes:\n{t}"));
    }
    line
}

async fn create_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let input = valid::<MonitorIn>(a)?;
    let m = service::create(cx.state, cx.account, input).await?;
    let text = format!(
        "Monitoring {} as '{}' ({}), {}; the first check (the baseline) is due {}.",
        m.url,
        m.name,
        m.id,
        match (&m.schedule.every, &m.schedule.cron) {
            (Some(e), _) => format!("every {e}"),
            (None, Some(c)) => format!("on cron '{c}' ({})", m.schedule.timezone.as_deref().unwrap_or("UTC")),
            _ => "on its schedule".into(),
        },
        m.next_run_at.as_deref().unwrap_or("when resumed")
    );
    with_text(text, &m)
}

async fn list_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let input: ListIn = args(a)?;
    let q = ListQuery { limit: input.limit.map(|n| n.to_string()), before: input.before };
    let list = service::list(cx.state, cx.account, &q).await?;
    let lines: Vec<String> = list
        .data
        .iter()
        .map(|m| {
            format!(
                "{} ({}) {}: {}, last check {}, next {}",
                m.name,
                m.id,
                m.url,
                m.status,
                m.last_check.as_ref().map_or("none yet", |c| c.status.as_str()),
                m.next_run_at.as_deref().unwrap_or("-")
            )
        })
        .collect();
    let text =
        if lines.is_empty() { "No monitors yet: monitor_create makes one.".to_owned() } else { lines.join("\n") };
    with_text(text, &list)
}

async fn checks_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let input: ChecksIn = args(a)?;
    let id = monitor_id(&input.id)?;
    let q = ListQuery { limit: input.limit.map(|n| n.to_string()), before: input.before };
    let list = service::checks(cx.state, cx.account, &id, &q).await?;
    let text = if list.data.is_empty() {
        "No checks yet: the first one is due at the monitor's nextRunAt (or monitor_check_now).".to_owned()
    } else {
        list.data.iter().map(check_line).collect::<Vec<_>>().join("\n")
    };
    with_text(text, &list)
}

async fn check_now_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let input: MonitorArg = args(a)?;
    let id = monitor_id(&input.id)?;
    let c = service::check_now(cx.state, cx.account, &id).await?;
    let text = match c.status.as_str() {
        "pending" => format!("Checking now ({}): monitor_checks shows the result in a few seconds.", c.id),
        _ => check_line(&c),
    };
    with_text(text, &c)
}
