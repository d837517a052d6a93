//! Live views of runs and automation sessions: `POST /v1/runs/{id}/live-view` makes a signed,
//! expiring link; `GET /live/{id}?t=…` is the page a person opens (or an iframe of the
//! customer's app shows); `GET /live/{id}/ws?t=…` is its WebSocket, served by the node that
//! holds the session and relayed there by any other. [`service`] holds the operations.

pub mod service;
pub mod types;

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use capture_core::{ErrorCode, RunId};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

use self::service::Refusal;
use self::types::{LiveView, LiveViewIn, LiveViewSettings, Mode};
use crate::auth::Account;
use crate::error::Error;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiError, ApiResult, Json, OptionalJson, Path, Query, ValidatedJson};
use crate::runs::live;
use crate::state::AppState;

/// The view page (its inline style and script are allowed by their hashes).
const PAGE: &str = include_str!("page.html");
/// Marks a WebSocket relayed from another node: it is served here or refused, never relayed again.
const HOP_HEADER: &str = "x-capture-live-hop";

/// The live view paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(LiveViewIn, LiveView, LiveViewSettings, Mode)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Api {
    Api::new()
        .op::<__path_create_handler, _, _>(create_handler)
        .op::<__path_settings_handler, _, _>(settings_handler)
        .op::<__path_set_settings_handler, _, _>(set_settings_handler)
}

/// The page and its WebSocket: the link's token is their only credential.
pub fn public_router() -> Router<AppState> {
    Router::new().route("/live/{id}", get(page)).route("/live/{id}/ws", get(socket))
}

#[utoipa::path(post, path = "/v1/runs/{id}/live-view", tag = "runs", params(("id" = String, Path)),
    request_body(content = Option<LiveViewIn>, description = "optional: mode and ttl"),
    responses((status = 201, body = LiveView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "SESSION_EXPIRED: the run has ended")),
    security(("api_key" = [])))]
/// A signed link (`ttl` seconds, default 900) to a page that shows the run's current tab as
/// it changes; in `control` mode the person can also click, scroll and type in it.
async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    crate::http::Id(id): crate::http::Id<RunId>,
    OptionalJson(v): OptionalJson<LiveViewIn>,
) -> ApiResult<(StatusCode, Json<LiveView>)> {
    Ok((StatusCode::CREATED, Json(service::create(&state, &account, &id, v, None).await?)))
}

#[utoipa::path(get, path = "/v1/account/live-view", tag = "account",
    responses((status = 200, body = LiveViewSettings)), security(("api_key" = [])))]
/// Where the account's live views may be embedded.
async fn settings_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<LiveViewSettings>> {
    Ok(Json(service::settings(&state, &account).await?))
}

#[utoipa::path(put, path = "/v1/account/live-view", tag = "account", request_body = LiveViewSettings,
    responses((status = 200, body = LiveViewSettings), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// Let pages of these origins show the account's live views in an iframe (CSP
/// `frame-ancestors`); an empty list allows none.
async fn set_settings_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid, .. }: ValidatedJson<LiveViewSettings>,
) -> ApiResult<Json<LiveViewSettings>> {
    Ok(Json(service::set_settings(&state, &account, valid).await?))
}

/// `sha256-…` of an inline block of the page.
fn hash_of(tag: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let body = PAGE.split_once(&open).and_then(|(_, r)| r.split_once(&close)).map_or("", |(b, _)| b);
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(body.as_bytes())))
}

/// A plain page for a person whose link does not work.
fn refused_page(status: StatusCode, message: &str) -> Response {
    let doc = format!(
        "<!doctype html><meta charset=utf-8><title>Capture live view</title><body style=\"font-family:sans-serif;margin:3rem\"><h1>This live view cannot be opened</h1><p>{}</p>",
        message
    );
    let mut r = (status, Html(doc)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r.headers_mut().insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

fn refusal_message(r: &Refusal) -> &'static str {
    match r {
        Refusal::Invalid => "the live view link is not valid (altered, or not for this session)",
        Refusal::Expired => "the live view link has expired: ask for a new one",
    }
}

/// `GET /live/{id}?t=…`: the view page; embeddable by the account's origins only.
async fn page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let token = q.get("t").map(String::as_str).unwrap_or("");
    let claims = match service::verify(&state, token, &id) {
        Ok(c) => c,
        Err(r) => return refused_page(StatusCode::FORBIDDEN, refusal_message(&r)),
    };
    let ancestors = match state.store.live_view_frame_ancestors(&claims.u).await {
        Ok(v) => v.and_then(|j| serde_json::from_str::<Vec<String>>(&j).ok()).unwrap_or_default(),
        Err(e) => return ApiError::from(Error::from(e)).into_response(),
    };
    let csp = format!(
        "default-src 'none'; img-src blob:; style-src {}; script-src {}; connect-src 'self'; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'self'{}",
        hash_of("style"),
        hash_of("script"),
        ancestors.iter().map(|a| format!(" {a}")).collect::<String>()
    );
    let mut r = Html(PAGE).into_response();
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}

fn refuse(code: ErrorCode, msg: &str) -> Response {
    ApiError::from(Error::Refused(code, msg.to_string())).into_response()
}

/// How long a socket waits for a session this node claimed but is still opening.
const OPENING_WAIT: Duration = Duration::from_secs(15);

/// `GET /live/{id}/ws?t=…`: the view's frames and input, served where the session lives.
async fn socket(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    mut req: Request,
) -> Response {
    let token = q.get("t").map(String::as_str).unwrap_or("");
    let claims = match service::verify(&state, token, &id) {
        Ok(c) => c,
        Err(r) => return refuse(ErrorCode::Unauthorized, refusal_message(&r)),
    };
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let key = req.headers().get("sec-websocket-key").cloned();
    let (Some(key), true) = (key, is_ws) else {
        return refuse(ErrorCode::ValidationError, "open the live view's WebSocket from its page");
    };
    let row = match state.store.run(&id).await {
        Ok(Some(r)) if r.user_id == claims.u => r,
        Ok(_) => return ApiError::from(Error::not_found(RunId::NOUN)).into_response(),
        Err(e) => return ApiError::from(Error::from(e)).into_response(),
    };
    if row.status.is_final() {
        return refuse(ErrorCode::SessionExpired, "the session has ended");
    }
    let Some(on_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return refuse(ErrorCode::ValidationError, "this connection cannot be upgraded to a WebSocket");
    };
    let mut session = service::local_session(&state, &id);
    if session.is_none() && service::holder_node(&row).as_deref() == Some(state.cluster.node_id()) {
        // Claimed here, its browser still opening (the run is `running` from its claim): a
        // person who opened the link at once waits for it a little instead of being refused.
        let until = tokio::time::Instant::now() + OPENING_WAIT;
        while session.is_none() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
            session = service::local_session(&state, &id);
        }
    }
    if let Some(session) = session {
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else { return };
            let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            service::serve(state, session, claims, ws).await;
        });
        return live::switching_protocols(key.as_bytes());
    }
    // Another node holds it: relay there (once).
    if req.headers().contains_key(HOP_HEADER) {
        return refuse(ErrorCode::SessionUnreachable, "the node that holds this session does not have it any more");
    }
    let internal = match service::holder_node(&row) {
        Some(node) => state.store.node_url(&node).await.ok().flatten(),
        None => None,
    };
    let Some(rest) = internal.as_deref().and_then(|u| u.strip_prefix("http://")) else {
        return refuse(
            ErrorCode::SessionUnreachable,
            "the session is not running on a node that can be reached yet; retry shortly",
        );
    };
    let url = format!("ws://{}/live/{id}/ws?t={}", rest.trim_end_matches('/'), urlencode(token));
    relay(url, key.as_bytes(), on_upgrade).await
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Connect to the holder's WebSocket and pass frames both ways until either side closes.
async fn relay(url: String, key: &[u8], on_upgrade: hyper::upgrade::OnUpgrade) -> Response {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let Ok(mut up_req) = url.as_str().into_client_request() else {
        return refuse(ErrorCode::SessionUnreachable, "the session's node has no usable address");
    };
    up_req.headers_mut().insert(HOP_HEADER, HeaderValue::from_static("1"));
    let upstream = match tokio::time::timeout(Duration::from_secs(10), tokio_tungstenite::connect_async(up_req)).await {
        Ok(Ok((ws, _))) => ws,
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(r))) => return live::upstream_refusal(*r),
        _ => return refuse(ErrorCode::SessionUnreachable, "the node that holds the session did not answer"),
    };
    tokio::spawn(live::splice(on_upgrade, upstream));
    live::switching_protocols(key)
}
