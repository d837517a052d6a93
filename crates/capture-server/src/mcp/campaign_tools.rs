//! The campaign tools: list, create, add targets, launch and read campaigns, the sender's
//! capacity, and the account's suppressions (list, add, lift its own). They call the campaigns' service functions. No tool sends mail or offers a way to
//! send now: launching only queues, and the campaign loop sends within every rule.

use capture_core::FieldError;
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::{Map, Value};

use super::common::{annotations, id_arg, string_arg, structured};
use crate::account::types::NoArgs;
use crate::auth::Account;
use crate::campaigns::service::{self as campaigns, Transition};
use crate::campaigns::types::{AddTargetsArgs, CampaignIdArgs, CampaignIn, SuppressionIn, TargetsIn};
use crate::error::Result;
use crate::paging::ListQuery;
use crate::schema::tool_input;
use crate::state::AppState;

/// The campaign tools, with their schemas and descriptions.
pub fn catalogue() -> Vec<Tool> {
    vec![
        Tool::new(
            "list_campaigns",
            "List this account's audit campaigns, newest first, with their status (draft, scheduled, running, \
             paused, completed, cancelled) and row counts by state (pending, auditing, ready, sent, skipped, failed).",
            tool_input::<ListQuery>(),
        )
        .annotate(annotations("List campaigns", true, true, false)),
        Tool::new(
            "create_campaign",
            "Create an audit campaign (a draft): each recipient is a website and an e-mail address; once launched, \
             every website is audited (1 action per single_page audit) and its report is e-mailed to the recipient \
             within the sending hours (office: Monday-Friday 09:00-16:00 in the campaign's IANA timezone; anytime), \
             the sender's daily cap and warmup, the recipient domain's cap, suppressions and the report quality \
             gates. sendAt: ISO 8601 instant before which nothing is mailed. Up to 500 recipients per call.",
            tool_input::<CampaignIn>(),
        )
        .annotate(annotations("Create a campaign", false, false, false)),
        Tool::new(
            "add_campaign_targets",
            "Add recipients (website and e-mail) to a campaign that has not completed; duplicates of the campaign \
             (same address and website) are not added again. A launched campaign mails them in its next window.",
            tool_input::<AddTargetsArgs>(),
        )
        .annotate(annotations("Add campaign recipients", false, false, false)),
        Tool::new(
            "launch_campaign",
            "Launch a draft campaign (cmp_…): this only queues it. Audits start, and mail goes out only when every \
             sending rule holds; launching again changes nothing. There is no way to send immediately.",
            tool_input::<CampaignIdArgs>(),
        )
        .annotate(annotations("Launch a campaign", false, true, false)),
        Tool::new(
            "get_campaign",
            "Get a campaign (cmp_…) with its counts and rows: each row's state, why it waits (sending_hours, \
             send_at, sender_cap, domain_cap, audit, …) or why it was skipped or failed (suppressed, \
             quality_gate:<gate>, smtp_rejected:<code>), its audit id, report URL and when it was sent.",
            tool_input::<CampaignIdArgs>(),
        )
        .annotate(annotations("Get a campaign", true, true, false)),
        Tool::new(
            "sender_capacity",
            "Show today's sending capacity: the sender's cap (the smaller of its manual daily limit and its warmup \
             cap), sent and remaining today, warmup day and when the counters reset (00:00 UTC), and the same for \
             the recipient domains of this account's open rows.",
            tool_input::<NoArgs>(),
        )
        .annotate(annotations("Sender capacity", true, true, false)),
        Tool::new(
            "list_suppressions",
            "List the addresses this account's campaigns never mail, newest first, as {data, nextCursor}: each with \
             its reason (manual, unsubscribed, bounced) and source (tenant: added by this account; recipient: the \
             recipient unsubscribed or complained; mail_system: the receiving server refused it for good).",
            tool_input::<ListQuery>(),
        )
        .annotate(annotations("List suppressions", true, true, false)),
        Tool::new(
            "add_suppression",
            "Suppress an address for this account: no campaign mails it again, and its open rows are skipped.",
            tool_input::<SuppressionIn>(),
        )
        .annotate(annotations("Suppress an address", false, true, false)),
        Tool::new(
            "remove_suppression",
            "Lift a suppression this account added (source tenant). One made by the recipient (an unsubscribe or a \
             complaint) or by the mail system (a hard bounce) is permanent: refused with FORBIDDEN.",
            tool_input::<SuppressionIn>(),
        )
        .annotate(annotations("Lift a suppression", false, true, false)),
    ]
}

/// Run a campaign tool, or None when `name` is not one.
pub async fn call(
    state: &AppState,
    account: &Account,
    name: &str,
    args: &JsonObject,
) -> Option<Result<CallToolResult>> {
    Some(match name {
        "list_campaigns" => list(state, account, args).await,
        "create_campaign" => match crate::http::validated::validate::<CampaignIn>(args) {
            Ok(opts) => campaigns::create(state, account, &opts).await.map(|c| structured(&c)),
            Err(e) => Err(e.into()),
        },
        "add_campaign_targets" => add_targets(state, account, args).await,
        "launch_campaign" => match id_arg(args) {
            Ok(id) => campaigns::transition(state, account, &id, Transition::Launch).await.map(|c| structured(&c)),
            Err(e) => Err(e),
        },
        "get_campaign" => match id_arg(args) {
            Ok(id) => campaigns::get(state, account, &id).await.map(|c| structured(&c)),
            Err(e) => Err(e),
        },
        "sender_capacity" => campaigns::capacity(state, account).await.map(|c| structured(&c)),
        "list_suppressions" => match list_query(args) {
            Ok(q) => campaigns::suppressions(state, account, &q).await.map(|l| structured(&l)),
            Err(e) => Err(e),
        },
        "add_suppression" => match email_arg(args) {
            Ok(email) => campaigns::suppress(state, account, &email).await.map(|(s, _)| structured(&s)),
            Err(e) => Err(e),
        },
        "remove_suppression" => match email_arg(args) {
            Ok(email) => campaigns::unsuppress(state, account, &email)
                .await
                .map(|()| structured(&serde_json::json!({"email": email, "lifted": true}))),
            Err(e) => Err(e),
        },
        _ => return None,
    })
}

async fn list(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let q = list_query(args)?;
    campaigns::list(state, account, &q).await.map(|l| structured(&l))
}

/// The `email` argument of the suppression tools (the only one).
fn email_arg(args: &Map<String, Value>) -> Result<String> {
    if let Some(k) = args.keys().find(|k| k.as_str() != "email") {
        return Err(FieldError::new(k.clone(), "is not a field (email)").into());
    }
    string_arg(args, "email")
}

/// `limit` and `before` of a list tool.
fn list_query(args: &Map<String, Value>) -> Result<ListQuery> {
    let limit = match args.get("limit") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(FieldError::new("limit", "must be a whole number from 1 to 100").into()),
    };
    let before = match args.get("before") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(FieldError::new("before", "must be a string").into()),
    };
    Ok(ListQuery { limit, before })
}

async fn add_targets(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    if let Some(k) = args.keys().find(|k| !["id", "recipients"].contains(&k.as_str())) {
        return Err(FieldError::new(k.clone(), "is not a field (id, recipients)").into());
    }
    let id = id_arg(args)?;
    let mut body = args.clone();
    body.remove("id");
    let recipients = crate::http::validated::validate::<TargetsIn>(&body)?;
    campaigns::add_targets(state, account, &id, &recipients).await.map(|r| structured(&r))
}
