//! The MCP tools of runs (`start_run`, `get_run`, `stop_run`): schemas, descriptions and
//! the calls, on the same service functions as the REST API.

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};

use crate::error::{Error, Result};
use crate::runs::service;
use crate::runs::types::{Run, RunArgs, RunIn};
use crate::tool::{Cx, annotations, id_arg, tool_group, valid};

/// How long `start_run` waits for a scripted run beyond its own timeout.
const WAIT_MARGIN: Duration = Duration::from_secs(60);

tool_group! {
    "start_run": RunIn, annotations("Start a browser run", false, false, true),
        "Run a browser session: either scripted steps (goto, click, type, press, select, hover, scroll, waitFor, \
             wait, screenshot, evaluate, assertText, assertUrl — each with its own timeoutMs) on a device (a preset \
             such as iphone-15, pixel-8, ipad, desktop-1280, or an explicit viewport), or live: true for a session \
             that puppeteer or Playwright connect to at the returned connectUrl. Records a video. A scripted run is \
             waited for and returned finished: step results, finalUrl, pageTitle, videoUrl, console and network \
             errors. Costs 1 action per started minute (reserved for timeoutMs, the unused rest given back)."
        => start_run;
    "get_run": RunArgs, annotations("Get a browser run", true, true, false),
        "Get one browser session run by id: status (pending, running, completed, failed, stopped), step results, \
             finalUrl, pageTitle, videoUrl, console and network errors, error and finalizationError."
        => get_run;
    "stop_run": RunArgs, annotations("Stop a browser run", false, false, true).destructive(true),
        "Stop a browser session run: a pending one ends at once, a running one within about a second and is \
             finalised (video, counts) as usual. Returns the run."
        => stop_run;
}

/// A run as a tool result: structured, and its JSON as the text.
fn run_result(run: &Run) -> Result<CallToolResult> {
    let v = serde_json::to_value(run).map_err(Error::internal)?;
    let mut r = CallToolResult::structured(v.clone());
    r.content = vec![ContentBlock::text(v.to_string())];
    Ok(r)
}

/// `start_run`.
async fn start_run(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let (state, account) = (cx.state, cx.account);
    let spec = valid::<RunIn>(args)?;
    let created = service::create(state, account, &spec, None).await?;
    if spec.live {
        return run_result(&created.run);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(spec.timeout_ms) + WAIT_MARGIN;
    loop {
        let run = service::get(state, account, &created.run.id).await?;
        if run.status.is_final() || tokio::time::Instant::now() > deadline {
            return run_result(&run);
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            _ = state.shutdown.cancelled() => return run_result(&run),
        }
    }
}

/// `get_run`.
async fn get_run(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    run_result(&service::get(cx.state, cx.account, &id_arg(args)?).await?)
}

/// `stop_run`.
async fn stop_run(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    run_result(&service::stop(cx.state, cx.account, &id_arg(args)?).await?)
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
