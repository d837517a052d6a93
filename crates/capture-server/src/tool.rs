//! The one MCP tool layer every group of tools shares — the resources' (`mcp/*_tools.rs`) and
//! the automation tools (`automation/`): one table per group ([`tool_group!`]) from which both
//! its catalogue and its dispatch are made; one [`Cx`] every handler receives; one way to read
//! arguments ([`valid`], [`query`], [`id_arg`], or a typed input with [`parse`]) with the REST
//! API's field errors; one error type (the service's [`Error`], whose [`ErrorCode`] holds the
//! automation codes too); and one way to turn results and errors into tool results
//! ([`structured`], [`Reply`], [`tool_error`]).

use base64::Engine;
use capture_core::{ErrorCode, FieldError, TypedId};
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken, Tool, ToolAnnotations};
use rmcp::service::{RequestContext, RoleServer};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::auth::Account;
use crate::error::{Error, Result};
use crate::http::validated::{Checked, shape, validate};
use crate::state::AppState;

/// Who calls a tool and over which request: what every handler receives.
pub struct Cx<'a> {
    pub state: &'a AppState,
    pub account: &'a Account,
    /// The MCP request (its progress token, its cancellation, the peer to notify); None for a
    /// call another node forwarded to the one holding its session.
    pub request: Option<&'a RequestContext<RoleServer>>,
}

impl Cx<'_> {
    /// The caller's progress token, when it asked to hear how a long call goes.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.request.and_then(|r| r.meta.get_progress_token())
    }

    /// Tell the caller how far the call is (a caller that stopped listening still gets the result).
    pub async fn notify_progress(&self, note: ProgressNotificationParam) {
        if let Some(r) = self.request {
            let _ = r.peer.notify_progress(note).await;
        }
    }

    /// Resolves when the caller cancels the call (never, for a call another node forwarded).
    pub async fn cancelled(&self) {
        match self.request {
            Some(r) => r.ct.cancelled().await,
            None => std::future::pending().await,
        }
    }
}

/// One group of tools, one line each, from which the group's `catalogue()` and its dispatch
/// are made, so a tool is declared once. Two kinds of line:
///
/// - `name: Input, hints, description => handler;` — a handler
///   `async fn(&Cx<'_>, &JsonObject) -> Result<CallToolResult>` that reads its arguments with
///   the REST checks ([`valid`], [`query`], [`id_arg`]); it makes `call()`.
/// - in `typed { … }`: `name, title, read-only, destructive, Input => handler;` — the
///   description is `Input`'s doc comment and the handler is
///   `async fn(&Cx<'_>, Input) -> Result<Reply>` (the arguments parsed into `Input`, unknown
///   fields refused; the answer bounded by [`MAX_ANSWER_CHARS`]); it makes `call_here()` and
///   `NAMES`.
macro_rules! tool_group {
    (typed { $( $name:literal, $title:literal, $ro:literal, $destructive:literal, $input:ty => $handler:path; )* }) => {
        /// This group's tools, with their schemas and descriptions.
        pub fn catalogue() -> Vec<rmcp::model::Tool> {
            vec![$( $crate::tool::typed_tool::<$input>($name, $title, $ro, $destructive) ),*]
        }

        /// Run tool `name` of this group on this node, or None when it is not one.
        pub async fn call_here(
            cx: &$crate::tool::Cx<'_>,
            name: &str,
            args: &rmcp::model::JsonObject,
        ) -> Option<$crate::error::Result<rmcp::model::CallToolResult>> {
            Some(match name {
                $( $name => match $crate::tool::parse::<$input>(args) {
                    Ok(input) => $crate::tool::answer(cx.state, $handler(cx, input).await).await,
                    Err(e) => Err(e),
                }, )*
                _ => return None,
            })
        }

        /// The tool names, in catalogue order.
        pub const NAMES: &[&str] = &[$($name),*];
    };
    ($( $name:literal : $input:ty, $hints:expr, $desc:expr => $handler:path; )*) => {
        /// This group's tools, with their schemas and descriptions.
        pub fn catalogue() -> Vec<rmcp::model::Tool> {
            vec![$( rmcp::model::Tool::new($name, $desc, crate::schema::tool_input::<$input>()).annotate($hints) ),*]
        }

        /// Run tool `name` of this group, or None when it is not one.
        pub(super) async fn call(
            cx: &$crate::tool::Cx<'_>,
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
pub(crate) use tool_group;

/// A tool's arguments as a checked request (the same checks and field paths as REST).
pub(crate) fn valid<T: Checked>(args: &Map<String, Value>) -> Result<T::Valid> {
    Ok(validate::<T>(args)?)
}

/// A tool's arguments as its input type (no checks beyond the shape).
pub(crate) fn args<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T> {
    Ok(shape::<T>(args)?)
}

/// Query-shaped arguments (a list's `limit`, a wait's `timeoutMs`): numbers become the text a
/// query string would carry, then the REST query type reads them.
pub(crate) fn query<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T> {
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
pub(crate) fn reply<T: Serialize>(r: Result<T>) -> Result<CallToolResult> {
    r.map(|v| structured(&v))
}

/// A tool's hints for clients (none of our tools destroys anything).
pub(crate) fn annotations(title: &str, read_only: bool, idempotent: bool, open_world: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(read_only)
        .destructive(false)
        .idempotent(idempotent)
        .open_world(open_world)
}

/// A typed result as structured content (keys sorted, as over REST).
pub(crate) fn structured<T: Serialize>(v: &T) -> CallToolResult {
    match serde_json::to_value(v) {
        Ok(v) => CallToolResult::structured(v),
        Err(e) => tool_error(Error::internal(e)),
    }
}

/// A readable summary first, and the typed result as structured content.
pub(crate) fn with_text<T: Serialize>(text: String, v: &T) -> Result<CallToolResult> {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(serde_json::to_value(v).map_err(Error::internal)?);
    Ok(r)
}

/// A tool error carrying our error code.
pub(crate) fn tool_error(e: Error) -> CallToolResult {
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
pub(crate) fn string_arg(args: &Map<String, Value>, field: &str) -> Result<String> {
    match args.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        None | Some(Value::Null) => Err(FieldError::new(field, "is required").into()),
        Some(_) => Err(FieldError::new(field, "must be a string").into()),
    }
}

/// The id in `args` as a typed id; anything else is the same 404 as an id of another account.
pub(crate) fn id_arg<T: TypedId>(args: &Map<String, Value>) -> Result<T> {
    let raw = string_arg(args, "id")?;
    T::parse_id(&raw).ok_or_else(|| Error::not_found(T::NOUN))
}

/// A typed tool's answer: structured data, a line for people (else the data as text), an image.
#[derive(Debug, Default)]
pub struct Reply {
    pub data: Value,
    pub text: Option<String>,
    pub image: Option<(Vec<u8>, &'static str)>,
}

impl Reply {
    pub fn data(data: Value) -> Reply {
        Reply { data, ..Default::default() }
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        self.text = Some(text.into());
        self
    }

    fn into_result(self) -> CallToolResult {
        let mut content = Vec::new();
        if let Some((bytes, mime)) = self.image {
            content.push(ContentBlock::image(base64::engine::general_purpose::STANDARD.encode(bytes), mime));
        }
        content.push(ContentBlock::text(self.text.unwrap_or_else(|| self.data.to_string())));
        let mut r = CallToolResult::success(content);
        r.structured_content = Some(self.data);
        r
    }
}

/// A typed tool's definition from its input type: the schema, and the description from the
/// type's doc comment.
pub fn typed_tool<I: JsonSchema>(name: &'static str, title: &'static str, read_only: bool, destructive: bool) -> Tool {
    let mut schema = (*crate::schema::tool_input::<I>()).clone();
    let mut parts = Vec::new();
    for k in ["title", "description"] {
        if let Some(Value::String(s)) = schema.remove(k) {
            parts.push(s);
        }
    }
    let description = parts.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    Tool::new(name, description, std::sync::Arc::new(schema)).annotate(
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(read_only)
            .open_world(!read_only),
    )
}

/// A typed tool's arguments as its input (unknown fields refused; the error names the field).
pub fn parse<I: DeserializeOwned>(args: &Map<String, Value>) -> Result<I> {
    serde_json::from_value(Value::Object(args.clone()))
        .map_err(|e| FieldError::new(arg_field(&e.to_string()), e.to_string()).into())
}

/// A typed tool's result as a tool result, its answer bounded by [`MAX_ANSWER_CHARS`].
pub async fn answer(state: &AppState, r: Result<Reply>) -> Result<CallToolResult> {
    Ok(within_bounds(state, r?).await.into_result())
}

/// A refusal with this code and message (the automation tools' failures).
pub fn refused(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::Refused(code, message.into())
}

/// An invalid argument `field`.
pub fn invalid(field: &str, reason: impl Into<String>) -> Error {
    FieldError::new(field, reason).into()
}

/// Most characters one tool answer carries: its text and its structured content together (an
/// image rides beside them, bounded on its own). The tools keep their answers well below it
/// (`maxChars`, paging); one that would pass it anyway (`evaluate` of a huge value, say) is
/// stored whole as a JSON file, and the answer gives its beginning and where the rest is.
pub const MAX_ANSWER_CHARS: usize = 48_000;

/// `r`, or its stand-in when it is over [`MAX_ANSWER_CHARS`].
async fn within_bounds(state: &AppState, mut r: Reply) -> Reply {
    let data = r.data.to_string();
    let text_chars = r.text.as_ref().map_or(data.len(), String::len);
    if data.len() + text_chars <= MAX_ANSWER_CHARS {
        // A reply without text is answered with its data as text: serialised once, here.
        r.text.get_or_insert(data);
        return r;
    }
    let whole = json!({"text": r.text, "structuredContent": r.data}).to_string();
    let name = crate::blob::new_name("json");
    let url = match state.blobs.put(&name, whole.clone().into_bytes(), "application/json").await {
        Ok(()) => Some(state.file_url(&name).await),
        Err(e) => {
            tracing::warn!(error = %e, "storing an oversized tool answer");
            None
        }
    };
    let shown = r.text.unwrap_or(data);
    let mut end = (MAX_ANSWER_CHARS / 4).min(shown.len());
    while !shown.is_char_boundary(end) {
        end -= 1;
    }
    let beginning = &shown[..end];
    let whereabouts = url.as_deref().map_or("it could not be stored".to_string(), |u| format!("it is at {u}"));
    let text = format!(
        "{beginning}…\n[The whole answer is {} characters, more than the {MAX_ANSWER_CHARS} a tool answer may \
         carry; {whereabouts}. Ask for less: most tools take maxChars, from, ref or selector.]",
        whole.len()
    );
    let data = json!({"cut": true, "answerChars": whole.len(), "answerUrl": url, "beginning": beginning});
    Reply { data, text: Some(text), image: r.image }
}

/// The field a serde error names (`missing field `sessionId``), else `arguments`.
fn arg_field(msg: &str) -> String {
    for lead in ["missing field `", "unknown field `"] {
        if let Some(rest) = msg.split(lead).nth(1)
            && let Some(f) = rest.split('`').next()
        {
            return f.to_string();
        }
    }
    "arguments".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_tools_bad_argument_is_named_by_its_field() {
        assert_eq!(arg_field("missing field `sessionId`"), "sessionId");
        assert_eq!(arg_field("unknown field `colour`, expected one of `a`"), "colour");
        assert_eq!(arg_field("invalid type: string, expected u64"), "arguments");
    }
}
