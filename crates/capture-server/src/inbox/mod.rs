//! The saved test inbox and the auth-test helper: `/v1/inbox` (the address and password
//! for sites under test, rotation), its messages (list with a cursor, one with its links and
//! codes, a long-poll, delete), and `/v1/auth-test/check` and `/record`. The handlers are
//! thin: the operations live in [`service`] and [`auth_test`], shared by REST, the MCP tools
//! and the dashboard; mail arrives through the `inbound` role ([`inbound`]).

pub mod auth_test;
pub mod inbound;
pub mod service;
pub mod types;

use crate::http::Path;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use capture_core::FieldError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use self::types::{
    AuthAttempt, Check, CheckIn, CheckInbox, Deleted, Evidence, Inbox, InboxCounts, MailAddress, MailAttachment,
    MailCode, MailHeader, MailLink, Message, MessageList, MessageSummary, MessagesQuery, RecordIn, RotateIn,
    SmtpEndpoint, WaitQuery, WaitResult,
};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiError, ApiResult, Json, JsonObject, Query};
use crate::state::AppState;

/// The inbox and auth-test paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    Inbox,
    InboxCounts,
    SmtpEndpoint,
    RotateIn,
    MailAddress,
    MailLink,
    MailCode,
    MailHeader,
    MailAttachment,
    MessageSummary,
    Message,
    MessageList,
    WaitResult,
    Deleted,
    CheckIn,
    RecordIn,
    AuthAttempt,
    Evidence,
    CheckInbox,
    Check
)))]
pub struct ApiDoc;

/// A JSON object as `T`, refusing fields it does not have (by name).
fn body_as<T: DeserializeOwned>(body: Map<String, Value>, fields: &[&str]) -> Result<T, ApiError> {
    for k in body.keys() {
        if !fields.contains(&k.as_str()) {
            return Err(ApiError::validation(FieldError::new(
                k.clone(),
                format!("is not a field ({})", fields.join(", ")),
            )));
        }
    }
    serde_json::from_value(Value::Object(body)).map_err(|e| {
        let msg = e.to_string();
        let field = fields.iter().find(|f| msg.contains(&format!("`{f}`"))).copied().unwrap_or("body");
        ApiError::validation(FieldError::new(field, msg))
    })
}

#[utoipa::path(get, path = "/v1/inbox", tag = "inbox",
    responses((status = 200, body = Inbox, description = "Made on first use"), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// The saved test inbox: its address, the password to use on sites under test, counts.
pub async fn inbox(State(state): State<AppState>, Extension(account): Extension<Account>) -> ApiResult<Json<Inbox>> {
    Ok(Json(service::get(&state, &account).await?))
}

#[utoipa::path(post, path = "/v1/inbox/rotate", tag = "inbox", request_body = RotateIn,
    responses((status = 200, body = Inbox, description = "Mail to a rotated-away address is refused (550) from now on"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// Replace the inbox's password, address or both.
pub async fn rotate(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _raw): JsonObject,
) -> ApiResult<Json<Inbox>> {
    let r: RotateIn = body_as(body, &["rotate"])?;
    Ok(Json(service::rotate(&state, &account, &r.rotate).await?))
}

#[utoipa::path(get, path = "/v1/inbox/messages", tag = "inbox", params(MessagesQuery),
    responses((status = 200, body = MessageList), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// The inbox's messages, newest first.
pub async fn messages(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<MessagesQuery>,
) -> ApiResult<Json<MessageList>> {
    Ok(Json(service::list(&state, &account, &q).await?))
}

#[utoipa::path(delete, path = "/v1/inbox/messages", tag = "inbox",
    responses((status = 200, body = Deleted)), security(("api_key" = [])))]
/// Delete every message of the inbox.
pub async fn delete_messages(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<Deleted>> {
    Ok(Json(service::delete_all(&state, &account).await?))
}

#[utoipa::path(get, path = "/v1/inbox/messages/wait", tag = "inbox", params(WaitQuery),
    responses((status = 200, body = WaitResult, description = "The message (marked seen), or `message: null` after timeoutMs (at most 8 s: call again to wait longer)"),
    (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// Long-poll: the oldest unseen message (or the first after `since`), waiting for it to arrive.
pub async fn wait(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<WaitQuery>,
) -> ApiResult<Json<WaitResult>> {
    let max = service::REST_MAX_WAIT_MS;
    Ok(Json(service::wait(&state, &account, &q, max, max).await?))
}

#[utoipa::path(get, path = "/v1/inbox/messages/{id}", tag = "inbox", params(("id" = String, Path)),
    responses((status = 200, body = Message, description = "Marked seen"), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// One message: headers, text, HTML, links and codes.
pub async fn message(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Message>> {
    Ok(Json(service::get_message(&state, &account, &id).await?))
}

#[utoipa::path(delete, path = "/v1/inbox/messages/{id}", tag = "inbox", params(("id" = String, Path)),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Delete one message.
pub async fn delete_message(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> Response {
    match service::delete_message(&state, &account, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(post, path = "/v1/auth-test/check", tag = "auth-test", request_body = CheckIn,
    responses((status = 200, body = Check, description = "The recommendation with every reason in `evidence`"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// Recommend signing in, signing up or expecting a verification on a site.
pub async fn check(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _raw): JsonObject,
) -> ApiResult<Json<Check>> {
    let c: CheckIn = body_as(body, &["url", "probe"])?;
    Ok(Json(auth_test::check(&state, &account, &c).await?))
}

#[utoipa::path(post, path = "/v1/auth-test/record", tag = "auth-test", request_body = RecordIn,
    responses((status = 201, body = AuthAttempt), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// Record the outcome of an attempt on a site.
pub async fn record(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _raw): JsonObject,
) -> Response {
    let r: RecordIn = match body_as(body, &["url", "action", "outcome", "method", "note"]) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    match auth_test::record(&state, &account, &r).await {
        Ok(a) => (StatusCode::CREATED, Json(a)).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/v1/inbox/messages/{id}/attachments/{index}", tag = "inbox",
    params(("id" = String, Path), ("index" = u32, Path, description = "The attachment's `index` in the message")),
    responses((status = 200, content_type = "application/octet-stream",
        description = "The attachment's decoded bytes, as a download (`Content-Disposition: attachment`; its declared type is the message's `attachments[].contentType`)"),
    (status = 404, body = ErrorBody, description = "No such message of the caller, no such index, or content not kept")),
    security(("api_key" = [])))]
/// Download one attachment of a message (does not mark the message seen).
pub async fn attachment(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path((id, index)): Path<(String, String)>,
) -> Response {
    use axum::http::{HeaderValue, header};
    match service::attachment(&state, &account, &id, &index).await {
        Ok((a, bytes)) => {
            let mut r = (StatusCode::OK, bytes).into_response();
            let h = r.headers_mut();
            // Never rendered on our origin, whatever the sender declared.
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
            h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
            let name = a.name.as_deref().unwrap_or("attachment");
            let ascii: String =
                name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' { c } else { '_' }).collect();
            let encoded = url::form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>().replace('+', "%20");
            if let Ok(v) =
                HeaderValue::from_str(&format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"))
            {
                h.insert(header::CONTENT_DISPOSITION, v);
            }
            r
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

// Last in the file: the docs' route walk reads everything after a `.route(` as its handlers.
/// Routes (authenticated by the caller's router: an API key or an OAuth session).
pub fn router() -> Api {
    Api::new()
        .op::<__path_inbox, _, _>(inbox)
        .op::<__path_rotate, _, _>(rotate)
        .op::<__path_messages, _, _>(messages)
        .op::<__path_delete_messages, _, _>(delete_messages)
        .op::<__path_wait, _, _>(wait)
        .op::<__path_message, _, _>(message)
        .op::<__path_delete_message, _, _>(delete_message)
        .op::<__path_attachment, _, _>(attachment)
        .op::<__path_check, _, _>(check)
        .op::<__path_record, _, _>(record)
}
