//! The MCP tools: every group's catalogue in one list, and dispatch to the group that owns a
//! name. Each group (`capture_tools`, `audit_tools`, `run_tools`, `inbox_tools`,
//! `campaign_tools`, and the automation tools) declares its tools once, in one table. Failures
//! come back as tool errors (`isError: true`) whose text starts with our stable error code and
//! whose structured content is `{code, error, details?}`.

use rmcp::model::{CallToolResult, JsonObject, Tool};
use rmcp::service::{RequestContext, RoleServer};

use super::{audit_tools, campaign_tools, capture_tools, inbox_tools, monitor_tools, profile_tools, run_tools};
use crate::auth::Account;
use crate::state::AppState;
use crate::tool::{Cx, tool_error};

/// Every tool, with its schema and description.
pub fn catalogue() -> Vec<Tool> {
    let mut all = capture_tools::catalogue();
    all.extend(audit_tools::catalogue());
    all.extend(run_tools::catalogue());
    all.extend(inbox_tools::catalogue());
    all.extend(profile_tools::catalogue());
    all.extend(crate::automation::catalogue());
    all.extend(campaign_tools::catalogue());
    all.extend(monitor_tools::catalogue());
    all
}

/// Run tool `name`. Unknown tools are protocol errors; everything else is a tool result.
pub async fn call(
    state: &AppState,
    account: &Account,
    name: &str,
    args: JsonObject,
    request: &RequestContext<RoleServer>,
) -> std::result::Result<CallToolResult, rmcp::ErrorData> {
    let cx = Cx { state, account, request: Some(request) };
    let out = if let Some(out) = capture_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = audit_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = run_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = inbox_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = profile_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = campaign_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = monitor_tools::call(&cx, name, &args).await {
        out
    } else if let Some(out) = crate::automation::call(&cx, name, &args).await {
        out
    } else {
        return Err(rmcp::ErrorData::invalid_params(format!("unknown tool '{name}'"), None));
    };
    Ok(out.unwrap_or_else(tool_error))
}

#[cfg(test)]
mod tests {
    /// The ad tools are listed with their input schemas.
    #[test]
    fn the_ad_tools_are_in_the_catalogue() {
        let tools = super::catalogue();
        for (name, field) in [("create_ad_draft", "screenshotUrls"), ("render_ad", "voiceId"), ("get_ad", "id")] {
            let t = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"));
            assert!(t.input_schema["properties"].get(field).is_some(), "{name}: {:?}", t.input_schema);
        }
    }

    #[test]
    fn the_campaign_tools_are_in_the_catalogue_and_none_sends() {
        let tools = super::catalogue();
        for (name, field) in [
            ("list_campaigns", "limit"),
            ("create_campaign", "recipients"),
            ("add_campaign_targets", "recipients"),
            ("launch_campaign", "id"),
            ("get_campaign", "id"),
        ] {
            let t = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"));
            assert!(t.input_schema["properties"].get(field).is_some(), "{name}: {:?}", t.input_schema);
        }
        assert!(tools.iter().any(|t| t.name == "sender_capacity"));
        let create = tools.iter().find(|t| t.name == "create_campaign").unwrap();
        for field in ["name", "sendAt", "timezone", "reportType", "sendHours"] {
            assert!(create.input_schema["properties"].get(field).is_some(), "{field}");
        }
        // No tool offers to send now: campaign mail leaves only through the campaign loop.
        for t in super::super::campaign_tools::catalogue() {
            let text = format!("{} {}", t.name, t.description.as_deref().unwrap_or_default()).to_lowercase();
            assert!(!t.name.contains("send") || t.name == "sender_capacity", "{}", t.name);
            assert!(!text.contains("send now") && !text.contains("send_now"), "{text}");
        }
    }
}
