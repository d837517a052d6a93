//! Ad generation: `POST /v1/adshot/draft` (a URL or screenshots → copy, colour, storyboard
//! and voice-over script), `POST /v1/adshot/render` (a draft → a narrated, branded MP4),
//! the allowed voices and music, one draft or render, and its event stream. The handlers
//! are thin: the operations live in [`service`], shared with the MCP tools; the work is
//! done by the `ad_draft` and `ad_render` queues (`jobs::ads`).

pub mod extract;
pub mod service;
mod stream;
pub mod types;

use crate::http::Path;
use crate::http::Query;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

pub use stream::stream;

use self::types::{Adshot, AdshotList, DraftIn, MusicList, Orientation, RenderIn, VoiceList};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiError, ApiResult, IdemCreate, Json};
use crate::state::AppState;

/// The ad paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(DraftIn, RenderIn, Orientation, Adshot, AdshotList, VoiceList, MusicList)))]
pub struct ApiDoc;

// The OpenAPI schemas of the request bodies are their JSON Schemas.
impl utoipa::PartialSchema for DraftIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<DraftIn>()
    }
}

impl utoipa::ToSchema for DraftIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "AdDraftRequest".into()
    }
}

impl utoipa::PartialSchema for RenderIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<RenderIn>()
    }
}

impl utoipa::ToSchema for RenderIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "AdRenderRequest".into()
    }
}

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Api {
    Api::new()
        .op::<__path_create_draft, _, _>(create_draft)
        .op::<__path_create_render, _, _>(create_render)
        .op::<__path_voices, _, _>(voices)
        .op::<__path_music, _, _>(music)
        .op::<__path_get_one, _, _>(get_one)
        .op::<stream::__path_stream, _, _>(stream)
        .op::<__path_list, _, _>(list)
}

#[utoipa::path(post, path = "/v1/adshot/draft", tag = "ads", request_body = DraftIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = Adshot, description = "the draft (drf_…), pending; 1 action"),
    (status = 400, body = ErrorBody, description = "VALIDATION_ERROR"), (status = 401, body = ErrorBody),
    (status = 409, body = ErrorBody), (status = 422, body = ErrorBody, description = "IDEMPOTENCY_KEY_REUSED"),
    (status = 429, body = ErrorBody)), security(("api_key" = [])))]
/// Draft an ad from a page or screenshots: copy, brand colour, storyboard, voice-over script.
pub async fn create_draft(create: IdemCreate<DraftIn>) -> Response {
    create
        .run(StatusCode::ACCEPTED, |st, acc, input, claim| async move {
            let created = service::create_draft(&st, &acc, &input, claim.as_ref()).await?;
            Ok((created.ad, created.used))
        })
        .await
}

#[utoipa::path(post, path = "/v1/adshot/render", tag = "ads", request_body = RenderIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = Adshot, description = "the render (ad_…), pending; 10 actions"),
    (status = 400, body = ErrorBody, description = "VALIDATION_ERROR naming the allowed voiceId, musicId, brandColor or orientation values"),
    (status = 404, body = ErrorBody, description = "no such draft"), (status = 409, body = ErrorBody),
    (status = 422, body = ErrorBody, description = "IDEMPOTENCY_KEY_REUSED"), (status = 429, body = ErrorBody)),
    security(("api_key" = [])))]
/// Render a finished draft to a narrated, branded MP4.
pub async fn create_render(create: IdemCreate<RenderIn>) -> Response {
    create
        .run(StatusCode::ACCEPTED, |st, acc, input, claim| async move {
            let created = service::create_render(&st, &acc, &input, claim.as_ref()).await?;
            Ok((created.ad, created.used))
        })
        .await
}

#[utoipa::path(get, path = "/v1/adshot/voices", tag = "ads", responses((status = 200, body = VoiceList)), security(("api_key" = [])))]
/// The voices a render may be spoken in (espeak-ng).
pub async fn voices() -> Json<VoiceList> {
    Json(service::voices())
}

#[utoipa::path(get, path = "/v1/adshot/music", tag = "ads", responses((status = 200, body = MusicList)), security(("api_key" = [])))]
/// The music tracks a render may use (synthesised by the service).
pub async fn music() -> Json<MusicList> {
    Json(service::music())
}

#[utoipa::path(get, path = "/v1/adshot/{id}", tag = "ads", params(("id" = String, Path, description = "drf_… or ad_…")),
    responses((status = 200, body = Adshot), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One draft or render.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Adshot>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

/// The query of `GET /v1/adshots`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
pub struct ListAdsQuery {
    /// How many to return (1–100, default 20).
    pub limit: Option<String>,
}

#[utoipa::path(get, path = "/v1/adshots", tag = "ads", params(ListAdsQuery), responses((status = 200, body = AdshotList)), security(("api_key" = [])))]
/// The caller's drafts and renders, newest first.
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListAdsQuery>,
) -> ApiResult<Json<AdshotList>> {
    let limit = match q.limit.as_deref() {
        None | Some("") => 20,
        Some(s) => s.parse::<i64>().ok().filter(|n| (1..=100).contains(n)).ok_or_else(|| {
            ApiError::validation(capture_core::FieldError::new("limit", "must be a whole number from 1 to 100"))
        })?,
    };
    Ok(Json(service::list(&state, &account, limit).await?))
}
