//! What every group of MCP tools shares: annotations, reading arguments, and turning typed
//! results and domain errors into tool results.

use capture_core::{FieldError, TypedId};
use rmcp::model::{CallToolResult, ContentBlock, ToolAnnotations};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

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
