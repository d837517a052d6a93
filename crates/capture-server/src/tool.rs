//! What every group of MCP tools shares: one table per group ([`tool_group!`]: name, input
//! type, hints, description, handler) from which both its catalogue and its dispatch are made;
//! one way to read arguments ([`valid`], [`query`], [`id_arg`]) with the REST API's field
//! errors; and one way to turn typed results and domain errors into tool results.

use capture_core::{FieldError, TypedId};
use rmcp::model::{CallToolResult, ContentBlock, ToolAnnotations};
use rmcp::service::{RequestContext, RoleServer};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::auth::Account;
use crate::error::{Error, Result};
use crate::http::validated::{Checked, shape, validate};
use crate::state::AppState;

/// Who calls a tool and over which request: what every handler receives.
pub(super) struct Cx<'a> {
    pub state: &'a AppState,
    pub account: &'a Account,
    /// The MCP request (its progress token, its cancellation, the peer to notify).
    pub request: &'a RequestContext<RoleServer>,
}

/// One group of tools, one line each: `name: Input, hints, description => handler;`.
/// It makes the group's `catalogue()` (the schema from `Input`) and its `call()`, so a tool
/// is declared once. A handler is `async fn(&Cx<'_>, &JsonObject) -> Result<CallToolResult>`.
macro_rules! tool_group {
    ($( $name:literal : $input:ty, $hints:expr, $desc:expr => $handler:path; )*) => {
        /// This group's tools, with their schemas and descriptions.
        pub fn catalogue() -> Vec<rmcp::model::Tool> {
            vec![$( rmcp::model::Tool::new($name, $desc, crate::schema::tool_input::<$input>()).annotate($hints) ),*]
        }

        /// Run tool `name` of this group, or None when it is not one.
        pub(super) async fn call(
            cx: &super::common::Cx<'_>,
            name: &str,
            args: &rmcp::model::JsonObject,
        ) -> Option<crate::error::Result<rmcp::model::CallToolResult>> {
            Some(match name {
                $( $name => $handler(cx, args).await, )*
                _ => return None,
            })
        }
    };
}
pub(super) use tool_group;

/// A tool's arguments as a checked request (the same checks and field paths as REST).
pub(super) fn valid<T: Checked>(args: &Map<String, Value>) -> Result<T::Valid> {
    Ok(validate::<T>(args)?)
}

/// A tool's arguments as its input type (no checks beyond the shape).
pub(super) fn args<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T> {
    Ok(shape::<T>(args)?)
}

/// Query-shaped arguments (a list's `limit`, a wait's `timeoutMs`): numbers become the text a
/// query string would carry, then the REST query type reads them.
pub(super) fn query<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T> {
    let args: Map<String, Value> = args
        .iter()
        .map(|(k, v)| match v {
            Value::Number(n) => (k.clone(), Value::String(n.to_string())),
            v => (k.clone(), v.clone()),
        })
        .collect();
    Ok(shape::<T>(&args)?)
}

/// A typed result as a tool result (see [`structured`]).
pub(super) fn reply<T: Serialize>(r: Result<T>) -> Result<CallToolResult> {
    r.map(|v| structured(&v))
}

/// A tool's hints for clients (none of our tools destroys anything).
pub(super) fn annotations(title: &str, read_only: bool, idempotent: bool, open_world: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(read_only)
        .destructive(false)
        .idempotent(idempotent)
        .open_world(open_world)
}

/// A typed result as structured content (keys sorted, as over REST).
pub(super) fn structured<T: Serialize>(v: &T) -> CallToolResult {
    match serde_json::to_value(v) {
        Ok(v) => CallToolResult::structured(v),
        Err(e) => tool_error(Error::internal(e)),
    }
}

/// A readable summary first, and the typed result as structured content.
pub(super) fn with_text<T: Serialize>(text: String, v: &T) -> Result<CallToolResult> {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(serde_json::to_value(v).map_err(Error::internal)?);
    Ok(r)
}

/// A tool error carrying our error code.
pub(super) fn tool_error(e: Error) -> CallToolResult {
    let code = e.code().as_str();
    let message = e.to_string();
    let mut body = json!({"code": code, "error": message});
    if let Some(d) = e.details() {
        body["details"] = d;
    }
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))]);
    r.structured_content = Some(body);
    r
}

/// A required, non-blank string argument (trimmed).
pub(super) fn string_arg(args: &Map<String, Value>, field: &str) -> Result<String> {
    match args.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        None | Some(Value::Null) => Err(FieldError::new(field, "is required").into()),
        Some(_) => Err(FieldError::new(field, "must be a string").into()),
    }
}

/// The id in `args` as a typed id; anything else is the same 404 as an id of another account.
pub(super) fn id_arg<T: TypedId>(args: &Map<String, Value>) -> Result<T> {
    let raw = string_arg(args, "id")?;
    T::parse_id(&raw).ok_or_else(|| Error::not_found(T::NOUN))
}
