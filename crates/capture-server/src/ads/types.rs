//! The wire types of ad generation: the bodies of `POST /v1/adshot/draft` and
//! `POST /v1/adshot/render` (also the `create_ad_draft` and `render_ad` tools' inputs), a
//! draft or render as every channel shows it, the voice and music lists, the stream's
//! events and the `adshot.*` webhook data. One definition behind the handlers, the OpenAPI
//! document and the MCP tool schemas.

use capture_core::JobStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lists::list_type;

/// Prefix of ad draft ids.
pub const DRAFT_PREFIX: &str = "drf";
/// Prefix of ad render ids.
pub const RENDER_PREFIX: &str = "ad";
/// Actions a draft costs (DESIGN).
pub const DRAFT_ACTIONS: i64 = 1;
/// Actions a render costs (DESIGN).
pub const RENDER_ACTIONS: i64 = 10;
/// Most screenshot URLs a draft may be given.
pub const MAX_SCREENSHOT_URLS: usize = 8;
/// Largest image fetched from a screenshot URL, in bytes.
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// What to make an ad of: the body of `POST /v1/adshot/draft` (at least one field).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "AdDraftRequest")]
pub struct DraftIn {
    /// The page to advertise (http or https): captured on desktop and mobile, and read for
    /// the name, headline, supporting lines, call to action, logo and brand colour.
    #[schemars(url, length(max = 2048), extend("examples" = ["https://example.com"]))]
    pub url: Option<String>,
    /// Screenshots to use (PNG, JPEG or WebP, at most 10 MB each, up to 8), fetched by the
    /// service through its egress guard.
    #[schemars(length(max = MAX_SCREENSHOT_URLS))]
    pub screenshot_urls: Option<Vec<String>>,
}

/// Frame orientation of a render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Orientation {
    /// 1080×1920 (stories, short-video feeds).
    #[default]
    Portrait,
    /// 1920×1080.
    Landscape,
}

/// How to render a draft: the body of `POST /v1/adshot/render`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "AdRenderRequest")]
pub struct RenderIn {
    /// A finished draft of the caller (drf_…).
    pub draft_id: String,
    /// One of `GET /v1/adshot/voices` (espeak-ng voices, e.g. en-us, en-us+f3).
    pub voice_id: String,
    /// One of `GET /v1/adshot/music` (upbeat, calm, corporate, none).
    pub music_id: String,
    /// Caption colour `#RRGGBB`; the draft's brand colour by default.
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"))]
    pub brand_color: Option<String>,
    /// portrait (1080×1920, the default) or landscape (1920×1080).
    pub orientation: Option<Orientation>,
}

/// One scene of a draft's storyboard.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SceneOut {
    /// The picture.
    pub image_url: String,
    /// What the scene shows (`hero`, `mobile`, `section`, `screenshot`).
    pub source: String,
    /// Caption drawn over it in the brand colour.
    pub caption: String,
    /// How long it lasts (a hint: scenes are scaled together to fit the voice-over).
    pub duration_ms: i64,
    /// Camera move: zoomIn, zoomOut, panDown, panUp, panLeft, panRight.
    pub motion: String,
}

/// What the draft job found and wrote: the ad's copy, colour and storyboard.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraftContent {
    /// Product or site name.
    pub name: String,
    pub headline: String,
    /// Supporting lines (up to 3).
    pub lines: Vec<String>,
    /// Call to action.
    pub cta: String,
    /// `#RRGGBB`.
    pub brand_color: String,
    /// Where the colour came from: theme-color, css, screenshot or default.
    pub brand_color_source: String,
    pub logo_url: Option<String>,
    pub scenes: Vec<SceneOut>,
    /// The voice-over text.
    pub script: String,
    /// The ad's expected length with this script (15–30 s).
    pub estimated_duration_ms: i64,
}

/// An ad draft (`drf_…`) or render (`ad_…`): one shape everywhere.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Adshot {
    pub id: String,
    /// `ad_draft` or `ad_render`.
    pub object: String,
    pub status: JobStatus,
    /// What the worker is doing: capturing, extracting, writing (drafts); voice, music,
    /// scenes, mux, thumbnail, storing (renders).
    pub stage: Option<String>,
    /// 0–100.
    pub progress: i64,
    /// The draft's page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshot_urls: Option<Vec<String>>,
    /// A finished draft's content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<DraftContent>,
    /// A render's draft.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voice_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub music_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brand_color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orientation: Option<Orientation>,
    /// A finished render's MP4 (H.264 + AAC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<i64>,
    /// When the voice-over starts and ends in a finished render, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voice_span_ms: Option<[i64; 2]>,
    pub error: Option<String>,
    /// Actions charged (given back when the job fails for a reason of the service's).
    pub actions: i64,
    pub created_at: String,
    pub completed_at: Option<String>,
}

list_type! {
    /// The caller's drafts and renders, newest first.
    pub type AdshotList = Collection<Adshot>;
    schemas: both;
}

/// A voice a render may be spoken in.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
pub struct VoiceOut {
    /// The `voiceId` to send.
    pub id: String,
    pub name: String,
    /// BCP 47 tag.
    pub language: String,
    pub gender: Option<String>,
}

list_type! {
    /// The allowed voices.
    pub type VoiceList = Collection<VoiceOut>;
    schemas: both;
}

/// A music track (synthesised by the service).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
pub struct TrackOut {
    /// The `musicId` to send.
    pub id: String,
    pub name: String,
    pub mood: String,
    pub bpm: u32,
}

list_type! {
    /// The allowed music tracks.
    pub type MusicList = Collection<TrackOut>;
    schemas: both;
}

/// The input of the `get_ad` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GetAdArgs {
    /// A draft (drf_…) or render (ad_…) id.
    pub id: String,
}

/// Events of `GET /v1/adshot/{id}/stream`: each is the data of the event named in
/// [`StreamEvent::name`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum StreamEvent {
    /// `status`: the state or stage changed.
    Status { status: JobStatus, stage: Option<String>, progress: i64 },
    /// `done` of a render: its files.
    #[serde(rename_all = "camelCase")]
    RenderDone {
        status: JobStatus,
        id: String,
        video_url: Option<String>,
        thumbnail_url: Option<String>,
        duration_ms: Option<i64>,
        width: Option<i64>,
        height: Option<i64>,
        ad: Box<Adshot>,
    },
    /// `done` of a draft: the draft.
    #[serde(rename_all = "camelCase")]
    DraftDone { status: JobStatus, id: String, draft: Option<DraftContent>, ad: Box<Adshot> },
    /// `failed`: why.
    Failed { status: JobStatus, id: String, error: Option<String> },
    /// `timeout`: the stream's time is up; the job goes on.
    Timeout { status: &'static str, id: String },
}

impl StreamEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Status { .. } => "status",
            StreamEvent::RenderDone { .. } | StreamEvent::DraftDone { .. } => "done",
            StreamEvent::Failed { .. } => "failed",
            StreamEvent::Timeout { .. } => "timeout",
        }
    }
}
