//! The MCP tools of the auth-test helper and the saved test inbox: `auth_test_check`,
//! `auth_test_record`, `inbox_messages`, `inbox_wait`. They call the same service functions
//! as the REST API.

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::inbox::types::{CheckIn, MessagesQuery, RecordIn, WaitArgs, WaitQuery};
use crate::inbox::{auth_test, service};
use crate::tool::{Cx, annotations, args, query, tool_group, with_text};

tool_group! {
    "auth_test_check": CheckIn, annotations("Check a site's sign-in or sign-up", true, false, true),
        "Before testing sign-up or sign-in on a site: recommends sign_in, sign_up or expect_verification for \
             the account's saved test inbox, with accountExistsConfidence (0-1), likelyAuthMethod (password, \
             magic_link, email_code, oauth), expectedFollowUp (none, email_verification, email_code, magic_link), \
             the recorded history for the site's normalized origin and every reason in evidence (history, mail \
             the inbox got from the site, and a look at the page in a browser: password fields, sign-up/sign-in \
             wording, OAuth buttons, magic-link wording). Use inbox.address and the password from the inbox \
             (inbox_messages returns it) on the site, then record the outcome with auth_test_record."
        => check;
    "auth_test_record": RecordIn, annotations("Record a sign-in or sign-up attempt", false, false, false),
        "Record what happened on a site so the next auth_test_check knows: action sign_up, sign_in, verify or \
             reset_password; outcome success, failure, verification_sent, account_exists, no_account, \
             invalid_credentials, blocked or error; optional method and note."
        => record;
    "inbox_messages": MessagesQuery, annotations("Read the test inbox", true, true, false),
        "The saved test inbox: its address and password (for sites under test) and its messages, newest \
             first, each with the best verification link and one-time code found in it. Filter with from (an \
             address or a domain) and since (ISO time); page with before (nextCursor)."
        => messages;
    "inbox_wait": WaitArgs, annotations("Wait for a mail in the test inbox", false, false, false),
        "Wait (up to timeoutMs, at most 60000) for the next mail in the saved test inbox — the oldest unseen \
             one, or the first after since; from narrows it to a sender address or domain — and return it whole: \
             headers, text, links (verification links scored) and codes. message is null when none came in time."
        => wait;
}

async fn check(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let (state, account) = (cx.state, cx.account);
    let input: CheckIn = args(a)?;
    let c = auth_test::check(state, account, &input).await?;
    let password = service::password(state, &service::ensure(state, account).await?)?;
    let text = format!(
        "{}: {} (account exists: {:.0}%), method {}, then {}. Use {} with password {}. {} recorded attempt(s).",
        c.origin,
        c.recommendation,
        c.account_exists_confidence * 100.0,
        c.likely_auth_method,
        c.expected_follow_up,
        c.inbox.address,
        password,
        c.history.len()
    );
    let mut v = serde_json::to_value(&c).map_err(Error::internal)?;
    v["inbox"]["password"] = Value::String(password);
    with_text(text, &v)
}

async fn record(cx: &Cx<'_>, a: &JsonObject) -> Result<CallToolResult> {
    let input: RecordIn = args(a)?;
    let a = auth_test::record(cx.state, cx.account, &input).await?;
    with_text(format!("Recorded {} → {} on {}.", a.action, a.outcome, a.origin), &a)
}

async fn messages(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let (state, account) = (cx.state, cx.account);
    let q: MessagesQuery = query(args)?;
    let inbox = service::get(state, account).await?;
    let list = service::list(state, account, &q).await?;
    let text = format!(
        "Inbox {} (password {}): {} message(s), {} unseen; this page has {}.",
        inbox.address,
        inbox.password,
        inbox.counts.messages,
        inbox.counts.unseen,
        list.data.len()
    );
    with_text(text, &serde_json::json!({"inbox": inbox, "messages": list}))
}

async fn wait(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let (state, account) = (cx.state, cx.account);
    let a: WaitArgs = query(args)?;
    let q = WaitQuery { since: a.since, from: a.from, timeout_ms: a.timeout_ms };
    let r = service::wait(state, account, &q, service::TOOL_DEFAULT_WAIT_MS, service::TOOL_MAX_WAIT_MS).await?;
    let text = match &r.message {
        None => format!("No mail arrived within {} ms.", r.waited_ms),
        Some(m) => format!(
            "Mail from {}: \"{}\". Verification link: {}. Code: {}.",
            m.summary.from.as_ref().map_or(m.summary.mail_from.as_str(), |f| f.address.as_str()),
            m.summary.subject.as_deref().unwrap_or(""),
            m.summary.verification_link.as_deref().unwrap_or("none"),
            m.summary.code.as_deref().unwrap_or("none")
        ),
    };
    // Attachments an agent can give to a file input (`upload_file` with `inboxAttachment`).
    let text = match r.message.as_ref().filter(|m| m.attachments.iter().any(|a| a.downloadable)) {
        None => text,
        Some(m) => {
            let list: Vec<String> = m
                .attachments
                .iter()
                .filter(|a| a.downloadable)
                .map(|a| {
                    format!(
                        "#{} {} ({}, {} bytes)",
                        a.index,
                        a.name.as_deref().unwrap_or("unnamed"),
                        a.content_type,
                        a.size
                    )
                })
                .collect();
            format!(
                "{text} Attachments of {}: {} (upload_file takes inboxAttachment {{messageId, index}}).",
                m.summary.id,
                list.join(", ")
            )
        }
    };
    with_text(text, &r)
}
