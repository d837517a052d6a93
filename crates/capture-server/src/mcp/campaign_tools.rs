//! The campaign tools: list, create, add targets, launch and read campaigns, the sender's
//! capacity, and the account's suppressions (list, add, lift its own). They call the campaigns' service functions. No tool sends mail or offers a way to
//! send now: launching only queues, and the campaign loop sends within every rule.

use capture_core::FieldError;
use rmcp::model::{CallToolResult, JsonObject};

use crate::account::types::NoArgs;
use crate::campaigns::service::{self as campaigns, Transition};
use crate::campaigns::types::{AddTargetsArgs, CampaignIdArgs, CampaignIn, SuppressionIn, TargetsIn};
use crate::error::Result;
use crate::paging::ListQuery;
use crate::tool::{Cx, annotations, id_arg, query, reply, string_arg, structured, tool_group, valid};

tool_group! {
    "list_campaigns": ListQuery, annotations("List campaigns", true, true, false),
        "List this account's audit campaigns, newest first, with their status (draft, scheduled, running, \
             paused, completed, cancelled) and row counts by state (pending, auditing, ready, sent, skipped, failed)."
        => list;
    "create_campaign": CampaignIn, annotations("Create a campaign", false, false, false),
        "Create an audit campaign (a draft): each recipient is a website and an e-mail address; once launched, \
             every website is audited (1 action per single_page audit) and its report is e-mailed to the recipient \
             within the sending hours (office: Monday-Friday 09:00-16:00 in the campaign's IANA timezone; anytime), \
             the sender's daily cap and warmup, the recipient domain's cap, suppressions and the report quality \
             gates. sendAt: ISO 8601 instant before which nothing is mailed. Up to 500 recipients per call."
        => create;
    "add_campaign_targets": AddTargetsArgs, annotations("Add campaign recipients", false, false, false),
        "Add recipients (website and e-mail) to a campaign that has not completed; duplicates of the campaign \
             (same address and website) are not added again. A launched campaign mails them in its next window."
        => add_targets;
    "launch_campaign": CampaignIdArgs, annotations("Launch a campaign", false, true, false),
        "Launch a draft campaign (cmp_…): this only queues it. Audits start, and mail goes out only when every \
             sending rule holds; launching again changes nothing. There is no way to send immediately."
        => launch;
    "get_campaign": CampaignIdArgs, annotations("Get a campaign", true, true, false),
        "Get a campaign (cmp_…) with its counts and rows: each row's state, why it waits (sending_hours, \
             send_at, sender_cap, domain_cap, audit, …) or why it was skipped or failed (suppressed, \
             quality_gate:<gate>, smtp_rejected:<code>), its audit id, report URL and when it was sent."
        => get;
    "sender_capacity": NoArgs, annotations("Sender capacity", true, true, false),
        "Show today's sending capacity: the sender's cap (the smaller of its manual daily limit and its warmup \
             cap), sent and remaining today, warmup day and when the counters reset (00:00 UTC), and the same for \
             the recipient domains of this account's open rows."
        => capacity;
    "list_suppressions": ListQuery, annotations("List suppressions", true, true, false),
        "List the addresses this account's campaigns never mail, newest first, as {data, nextCursor}: each with \
             its reason (manual, unsubscribed, bounced) and source (tenant: added by this account; recipient: the \
             recipient unsubscribed or complained; mail_system: the receiving server refused it for good)."
        => suppressions;
    "add_suppression": SuppressionIn, annotations("Suppress an address", false, true, false),
        "Suppress an address for this account: no campaign mails it again, and its open rows are skipped."
        => suppress;
    "remove_suppression": SuppressionIn, annotations("Lift a suppression", false, true, false),
        "Lift a suppression this account added (source tenant). One made by the recipient (an unsubscribe or a \
             complaint) or by the mail system (a hard bounce) is permanent: refused with FORBIDDEN."
        => unsuppress;
}

async fn list(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::list(cx.state, cx.account, &query::<ListQuery>(args)?).await)
}

async fn create(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::create(cx.state, cx.account, &valid::<CampaignIn>(args)?).await)
}

async fn add_targets(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    if let Some(k) = args.keys().find(|k| !["id", "recipients"].contains(&k.as_str())) {
        return Err(FieldError::new(k.clone(), "is not a field (id, recipients)").into());
    }
    let id = id_arg(args)?;
    let mut body = args.clone();
    body.remove("id");
    let recipients = valid::<TargetsIn>(&body)?;
    reply(campaigns::add_targets(cx.state, cx.account, &id, &recipients).await)
}

async fn launch(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::transition(cx.state, cx.account, &id_arg(args)?, Transition::Launch).await)
}

async fn get(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::get(cx.state, cx.account, &id_arg(args)?).await)
}

async fn capacity(cx: &Cx<'_>, _args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::capacity(cx.state, cx.account).await)
}

async fn suppressions(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::suppressions(cx.state, cx.account, &query::<ListQuery>(args)?).await)
}

async fn suppress(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(campaigns::suppress(cx.state, cx.account, &email_arg(args)?).await.map(|(s, _)| s))
}

async fn unsuppress(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let email = email_arg(args)?;
    campaigns::unsuppress(cx.state, cx.account, &email).await?;
    Ok(structured(&serde_json::json!({"email": email, "lifted": true})))
}

/// The `email` argument of the suppression tools (the only one).
fn email_arg(args: &JsonObject) -> Result<String> {
    if let Some(k) = args.keys().find(|k| k.as_str() != "email") {
        return Err(FieldError::new(k.clone(), "is not a field (email)").into());
    }
    string_arg(args, "email")
}
