//! The MCP tools of runs (`start_run`, `get_run`, `stop_run`): schemas, descriptions and
//! the calls, on the same service functions as the REST API.

use std::time::Duration;

use capture_core::{RunId, RunStatus};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value};

use crate::auth::Account;
use crate::error::{Error, Result};
use crate::runs::service;
use crate::runs::types::{RunArgs, RunIn};
use crate::schema::tool_input;
use crate::state::AppState;

/// How long `start_run` waits for a scripted run beyond its own timeout.
const WAIT_MARGIN: Duration = Duration::from_secs(60);

fn annotations(title: &str, read_only: bool, destructive: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(read_only)
        .open_world(!read_only)
}

/// The run tools.
pub fn catalogue() -> Vec<Tool> {
    vec![
        Tool::new(
            "start_run",
            "Run a browser session: either scripted steps (goto, click, type, press, select, hover, scroll, waitFor, \
             wait, screenshot, evaluate, assertText, assertUrl — each with its own timeoutMs) on a device (a preset \
             such as iphone-15, pixel-8, ipad, desktop-1280, or an explicit viewport), or live: true for a session \
             that puppeteer or Playwright connect to at the returned connectUrl. Records a video. A scripted run is \
             waited for and returned finished: step results, finalUrl, pageTitle, videoUrl, console and network \
             errors. Costs 1 action per started minute (reserved for timeoutMs, the unused rest given back).",
            tool_input::<RunIn>(),
        )
        .annotate(annotations("Start a browser run", false, false)),
        Tool::new(
            "get_run",
            "Get one browser session run by id: status (pending, running, completed, failed, stopped), step results, \
             finalUrl, pageTitle, videoUrl, console and network errors, error and finalizationError.",
            tool_input::<RunArgs>(),
        )
        .annotate(annotations("Get a browser run", true, false)),
        Tool::new(
            "stop_run",
            "Stop a browser session run: a pending one ends at once, a running one within about a second and is \
             finalised (video, counts) as usual. Returns the run.",
            tool_input::<RunArgs>(),
        )
        .annotate(annotations("Stop a browser run", false, true)),
    ]
}

fn structured(run: &crate::runs::types::Run) -> Result<CallToolResult> {
    let v = serde_json::to_value(run).map_err(Error::internal)?;
    let mut r = CallToolResult::structured(v.clone());
    r.content = vec![ContentBlock::text(v.to_string())];
    Ok(r)
}

fn id_arg(args: &Map<String, Value>) -> Result<RunId> {
    let raw = args.get("id").and_then(Value::as_str).unwrap_or_default();
    RunId::parse(raw.trim()).ok_or_else(|| Error::not_found(RunId::NOUN))
}

/// `start_run`.
pub async fn start_run(state: &AppState, account: &Account, args: JsonObject) -> Result<CallToolResult> {
    let spec = crate::http::validated::validate::<RunIn>(&args)?;
    let created = service::create(state, account, &spec, None).await?;
    if spec.live {
        return structured(&created.run);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(spec.timeout_ms) + WAIT_MARGIN;
    loop {
        let run = service::get(state, account, &created.run.id).await?;
        if RunStatus::parse(&run.status).is_none_or(RunStatus::is_final) || tokio::time::Instant::now() > deadline {
            return structured(&run);
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            _ = state.shutdown.cancelled() => return structured(&run),
        }
    }
}

/// `get_run`.
pub async fn get_run(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    structured(&service::get(state, account, &id_arg(args)?).await?)
}

/// `stop_run`.
pub async fn stop_run(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    structured(&service::stop(state, account, &id_arg(args)?).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools take the REST request's schema: every step kind, the device, live.
    #[test]
    fn the_run_tools_describe_the_request() {
        let tools = catalogue();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["start_run", "get_run", "stop_run"]);
        let schema = serde_json::to_value(&*tools[0].input_schema).unwrap();
        for p in ["startUrl", "device", "recordVideo", "timeoutMs", "steps", "live"] {
            assert!(schema["properties"][p].is_object(), "{p}: {schema}");
        }
        let text = schema["properties"]["steps"].to_string();
        for action in [
            "goto",
            "click",
            "type",
            "press",
            "select",
            "hover",
            "scroll",
            "waitFor",
            "wait",
            "screenshot",
            "evaluate",
            "assertText",
            "assertUrl",
        ] {
            assert!(text.contains(&format!("\"{action}\"")), "{action} is in the steps schema");
        }
        assert!(text.contains("\"timeoutMs\"") && !text.contains("timeout_ms"), "camelCase fields: {text}");
        assert!(text.contains("\"fullPage\"") && !text.contains("full_page"), "{text}");
        assert_eq!(tools[1].input_schema["required"], serde_json::json!(["id"]));
    }
}
