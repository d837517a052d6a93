//! Audit campaigns: create with recipients, read with counts and rows, list, add targets,
//! launch (only queues), pause, resume, cancel; the sender's capacity and limits; the
//! account's suppressions; the public one-click unsubscribe (`/unsubscribe/{token}`, RFC 8058).
//! The handlers are thin: the operations live in [`service`]; the only code that sends
//! campaign mail is the campaign loop ([`crate::jobs::campaign`]).

pub mod service;
pub mod types;

use crate::http::Path;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use capture_core::CampaignId;
use serde_json::Value;

use self::service::Transition;
use self::types::*;
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiError, ApiResult, Id, IdemCreate, Json, JsonObject, Query, ValidatedJson};
use crate::paging::ListQuery;
use crate::state::AppState;

/// The campaign and suppression paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    CampaignIn,
    RecipientIn,
    TargetsIn,
    Campaign,
    CampaignRow,
    RowCounts,
    CampaignList,
    TargetsAdded,
    Capacity,
    SenderCapacity,
    DomainCapacity,
    SenderLimitsIn,
    WarmupIn,
    SuppressionIn,
    SuppressionOut,
    SuppressionList
)))]
pub struct ApiDoc;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Api {
    Api::new()
        .op::<__path_create, _, _>(create)
        .op::<__path_list, _, _>(list)
        .op::<__path_sender_capacity, _, _>(sender_capacity)
        .op::<__path_sender_limits, _, _>(sender_limits)
        .op::<__path_get_one, _, _>(get_one)
        .op::<__path_add_targets, _, _>(add_targets)
        .op::<__path_launch, _, _>(launch)
        .op::<__path_pause, _, _>(pause)
        .op::<__path_resume, _, _>(resume)
        .op::<__path_cancel, _, _>(cancel)
        .op::<__path_list_suppressions, _, _>(list_suppressions)
        .op::<__path_add_suppression, _, _>(add_suppression)
        .op::<__path_delete_suppression, _, _>(delete_suppression)
}

/// Public routes: the one-click unsubscribe.
pub fn public_router() -> Router<AppState> {
    Router::new().route("/unsubscribe/{token}", get(unsubscribe_page).post(unsubscribe))
}

#[utoipa::path(post, path = "/v1/campaigns", tag = "campaigns", request_body = CampaignIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 201, body = Campaign, description = "Created as a draft; duplicates (same address and website) stored once"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 409, body = ErrorBody),
    (status = 422, body = ErrorBody)),
    security(("api_key" = [])))]
/// Create a campaign (a draft) with recipients.
pub async fn create(create: IdemCreate<CampaignIn>) -> Response {
    create
        .run(StatusCode::CREATED, |st, acc, opts, _claim| async move {
            let c = service::create(&st, &acc, &opts).await?;
            Ok((c, acc.used))
        })
        .await
}

#[utoipa::path(get, path = "/v1/campaigns", tag = "campaigns", params(ListQuery),
    responses((status = 200, body = CampaignList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// List campaigns, newest first (with counts, without rows).
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<CampaignList>> {
    Ok(Json(service::list(&state, &account, &q).await?))
}

#[utoipa::path(get, path = "/v1/campaigns/{id}", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = Campaign, description = "With counts by row state and the rows"),
    (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One campaign with its counts and rows.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<CampaignId>,
) -> ApiResult<Json<Campaign>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(post, path = "/v1/campaigns/{id}/targets", tag = "campaigns", params(("id" = String, Path)),
    request_body = TargetsIn,
    responses((status = 200, body = TargetsAdded, description = "Rows added (until the campaign completes)"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Add recipients to a campaign (a launched one sends them in its next window).
pub async fn add_targets(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<CampaignId>,
    ValidatedJson { valid: recipients, .. }: ValidatedJson<TargetsIn>,
) -> ApiResult<Json<TargetsAdded>> {
    Ok(Json(service::add_targets(&state, &account, &id, &recipients).await?))
}

async fn change(state: &AppState, account: &Account, id: &CampaignId, t: Transition) -> ApiResult<Json<Campaign>> {
    Ok(Json(service::transition(state, account, id, t).await?))
}

#[utoipa::path(post, path = "/v1/campaigns/{id}/launch", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = Campaign, description = "draft → scheduled; launching again changes nothing. Only queues: sending hours, caps, suppressions and quality gates still hold"),
    (status = 400, body = ErrorBody, description = "VALIDATION_ERROR (field status): a cancelled campaign"),
    (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Launch a campaign for scheduled processing.
pub async fn launch(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<CampaignId>,
) -> ApiResult<Json<Campaign>> {
    change(&state, &account, &id, Transition::Launch).await
}

#[utoipa::path(post, path = "/v1/campaigns/{id}/pause", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = Campaign, description = "scheduled or running → paused: no audit starts, no mail goes out"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Pause a campaign.
pub async fn pause(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<CampaignId>,
) -> ApiResult<Json<Campaign>> {
    change(&state, &account, &id, Transition::Pause).await
}

#[utoipa::path(post, path = "/v1/campaigns/{id}/resume", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = Campaign, description = "paused → scheduled (running again once sendAt has come)"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Resume a paused campaign.
pub async fn resume(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<CampaignId>,
) -> ApiResult<Json<Campaign>> {
    change(&state, &account, &id, Transition::Resume).await
}

#[utoipa::path(post, path = "/v1/campaigns/{id}/cancel", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = Campaign, description = "→ cancelled; open rows are skipped (reason cancelled)"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Cancel a campaign.
pub async fn cancel(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<CampaignId>,
) -> ApiResult<Json<Campaign>> {
    change(&state, &account, &id, Transition::Cancel).await
}

#[utoipa::path(get, path = "/v1/campaigns/sender-capacity", tag = "campaigns",
    responses((status = 200, body = Capacity), (status = 401, body = ErrorBody)), security(("api_key" = [])))]
/// The sender's and the recipient domains' capacity today.
pub async fn sender_capacity(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<Capacity>> {
    Ok(Json(service::capacity(&state, &account).await?))
}

#[utoipa::path(post, path = "/v1/campaigns/sender-limits", tag = "campaigns", request_body = SenderLimitsIn,
    responses((status = 200, body = SenderCapacity, description = "The sender's capacity with the new limits"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody, description = "FORBIDDEN: administrators only")),
    security(("api_key" = [])))]
/// Set the sender's manual daily limit and warmup schedule (administrators).
pub async fn sender_limits(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid: opts, .. }: ValidatedJson<SenderLimitsIn>,
) -> ApiResult<Json<SenderCapacity>> {
    Ok(Json(service::set_sender_limits(&state, &account, &opts).await?))
}

/// `?email=` of `DELETE /v1/suppressions`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EmailQuery {
    /// The address.
    pub email: Option<String>,
}

#[utoipa::path(get, path = "/v1/suppressions", tag = "campaigns", params(ListQuery),
    responses((status = 200, body = SuppressionList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// The account's suppressed addresses, newest first.
pub async fn list_suppressions(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<SuppressionList>> {
    Ok(Json(service::suppressions(&state, &account, &q).await?))
}

#[utoipa::path(post, path = "/v1/suppressions", tag = "campaigns", request_body = SuppressionIn,
    responses((status = 201, body = SuppressionOut, description = "Suppressed; open rows for it are skipped"),
    (status = 200, body = SuppressionOut, description = "Already suppressed"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)), security(("api_key" = [])))]
/// Suppress an address: no campaign of this account mails it again.
pub async fn add_suppression(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _raw): JsonObject,
) -> Response {
    if let Some(k) = body.keys().find(|k| k.as_str() != "email") {
        return ApiError::validation(capture_core::FieldError::new(k.clone(), "is not a field (email)"))
            .into_response();
    }
    let email = match body.get("email") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return ApiError::validation(capture_core::FieldError::new("email", "is required, a string"))
                .into_response();
        }
    };
    match service::suppress(&state, &account, &email).await {
        Ok((s, new)) => (if new { StatusCode::CREATED } else { StatusCode::OK }, Json(s)).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(delete, path = "/v1/suppressions", tag = "campaigns", params(EmailQuery),
    responses((status = 204, description = "Lifted"), (status = 400, body = ErrorBody),
    (status = 401, body = ErrorBody),
    (status = 403, body = ErrorBody, description = "The suppression came from the recipient (unsubscribe, complaint) or the mail system (a hard bounce): `FORBIDDEN`, `details: {reason: \"permanent_suppression\", source, suppressionReason}`; only `source: tenant` suppressions can be lifted"),
    (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Lift a suppression the account added (`?email=`).
pub async fn delete_suppression(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<EmailQuery>,
) -> Response {
    let Some(email) = q.email.filter(|e| !e.is_empty()) else {
        return ApiError::validation(capture_core::FieldError::new("email", "is required")).into_response();
    };
    match service::unsuppress(&state, &account, &email).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// `GET /unsubscribe/{token}`: a page with one button that unsubscribes. Opening the link
/// changes nothing, so a mail scanner or a link preview that follows it does not unsubscribe
/// anyone; the button POSTs to the same address.
pub async fn unsubscribe_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    match service::unsubscribe_preview(&state, &token).await {
        Ok(Some((email, false))) => {
            unsubscribe_doc(StatusCode::OK, &UnsubscribePage { title: "Unsubscribe", email: Some(&email), ask: true })
        }
        Ok(Some((email, true))) => {
            unsubscribe_doc(StatusCode::OK, &UnsubscribePage { title: "Unsubscribed", email: Some(&email), ask: false })
        }
        Ok(None) => not_found_doc(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// `POST /unsubscribe/{token}`: suppress the address at once, without sign-in (a mail
/// client's RFC 8058 one-click POST, or the button of the link's page).
pub async fn unsubscribe(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    match service::unsubscribe(&state, &token).await {
        Ok(Some(email)) => {
            unsubscribe_doc(StatusCode::OK, &UnsubscribePage { title: "Unsubscribed", email: Some(&email), ask: false })
        }
        Ok(None) => not_found_doc(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// `templates/public/unsubscribe.html`: the question with its button (`ask`), the answer, or
/// (no address) a link that names nobody.
#[derive(askama::Template)]
#[template(path = "public/unsubscribe.html")]
struct UnsubscribePage<'a> {
    title: &'a str,
    email: Option<&'a str>,
    ask: bool,
}

fn not_found_doc() -> Response {
    unsubscribe_doc(StatusCode::NOT_FOUND, &UnsubscribePage { title: "Link not found", email: None, ask: false })
}

/// A small page of its own, never cached or indexed.
fn unsubscribe_doc(status: StatusCode, page: &UnsubscribePage<'_>) -> Response {
    let doc = match askama::Template::render(page) {
        Ok(d) => d,
        Err(e) => {
            tracing::error!(error = %e, "rendering the unsubscribe page failed");
            return (StatusCode::INTERNAL_SERVER_ERROR, "the page could not be rendered").into_response();
        }
    };
    let mut r = (status, doc).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-robots-tag", HeaderValue::from_static("noindex, nofollow"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}
