//! The browser-profile tools: `profile_login` signs in to a site with the saved test inbox
//! and keeps the signed-in state as a profile, `profile_list` lists them, `profile_delete`
//! removes one. They call the profiles' service functions, as the REST API does.

use rmcp::model::{CallToolResult, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::profiles::types::LoginIn;
use crate::profiles::{login, service};
use crate::tool::{Cx, annotations, args, tool_group, valid, with_text};

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListIn {}

/// A profile by id or name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileArg {
    /// The profile's id (prf_…) or name.
    #[schemars(length(min = 1, max = 100))]
    pub profile: String,
}

tool_group! {
    "profile_login": LoginIn, annotations("Sign in to a site and save a profile", false, false, true),
        "Sign in (or up) to a site once and keep it: opens url (the sign-in or sign-up page) in a fresh browser, \
             types the saved test inbox's address and password, submits, then types the one-time code or follows \
             the verification link the site mails to the inbox, and saves the signed-in cookies, localStorage and \
             IndexedDB as a profile (profile: a name or id; default the site's host). Then pass profile to \
             take_screenshot, run_audit or session_start to work on the signed-in site. Fails with LOGIN_FAILED \
             and the steps it took when the site does not end signed in."
        => login_tool;
    "profile_list": ListIn, annotations("List browser profiles", true, true, false),
        "The account's browser profiles: id, name, status (empty, ready, or expired when a job found its \
             session signed out: run profile_login again), cookie domains and origins saved, and when."
        => list_tool;
    "profile_delete": ProfileArg, annotations("Delete a browser profile", false, true, false),
        "Delete a browser profile and its saved state (cookies, storage) for good."
        => delete_tool;
}

async fn login_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let input = valid::<LoginIn>(a)?;
    // Here or on a node with a browser, as the API's sign-in.
    let out = login::anywhere(cx.state, cx.account, input).await?.into_result()?;
    let text = format!(
        "Signed in to {} as {} and saved profile '{}' ({}): {} cookies for {}. Pass profile: \"{}\" to start signed in. Steps: {}.",
        out.final_url,
        out.email,
        out.profile.name,
        out.profile.id,
        out.profile.summary.cookies,
        out.profile.summary.domains.join(", "),
        out.profile.name,
        out.steps.join("; ")
    );
    with_text(text, &out)
}

async fn list_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let _: ListIn = args(a)?;
    let list = service::list(cx.state, cx.account).await?;
    let lines: Vec<String> = list
        .data
        .iter()
        .map(|p| {
            format!(
                "{} ({}): {}, {} cookies for {}",
                p.name,
                p.id,
                p.status,
                p.summary.cookies,
                p.summary.domains.join(", ")
            )
        })
        .collect();
    let text = if lines.is_empty() { "No profiles yet: profile_login makes one.".to_owned() } else { lines.join("\n") };
    with_text(text, &list)
}

async fn delete_tool(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let p: ProfileArg = args(a)?;
    service::delete(cx.state, cx.account, &p.profile).await?;
    with_text(format!("Deleted the profile {} and its state.", p.profile), &serde_json::json!({"deleted": p.profile}))
}
