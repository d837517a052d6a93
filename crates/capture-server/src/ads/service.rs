//! The ad operations, scoped to the calling account: create a draft, render a draft, find,
//! view and list drafts and renders, and the allowed voices and music. Plain async fns
//! returning typed results and the domain [`Error`], shared by the REST handlers and the
//! MCP tools.

use capture_core::time::iso;
use capture_core::{FieldError, JobStatus, ids};
use capture_media::Rgb;
use capture_store::{AdshotRow, IdemClaim, IdemResponse, KIND_DRAFT, KIND_RENDER, NewAdshot};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{
    Adshot, AdshotList, DRAFT_ACTIONS, DRAFT_PREFIX, DraftContent, DraftIn, MAX_SCREENSHOT_URLS, MusicList,
    RENDER_ACTIONS, RENDER_PREFIX, RenderIn, SceneOut, TrackOut, VoiceList, VoiceOut,
};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::http::validated::Checked;
use crate::state::AppState;

/// Drafts one account may have waiting or in progress; more are refused with `QUEUE_FULL`.
pub const MAX_ACTIVE_DRAFTS: i64 = 10;
/// Renders one account may have waiting or in progress.
pub const MAX_ACTIVE_RENDERS: i64 = 3;

/// What an `ad_draft` / `ad_render` task carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskPayload {
    pub id: String,
}

/// A scene of a stored draft: its picture is a blob.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredScene {
    pub file: String,
    pub source: String,
    pub caption: String,
    pub duration_ms: i64,
    pub motion: capture_media::Motion,
}

/// The draft as stored (`adshots.draft`): scene pictures and the logo are blob names.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredDraft {
    pub name: String,
    pub headline: String,
    pub lines: Vec<String>,
    pub cta: String,
    pub brand_color: String,
    pub brand_color_source: String,
    pub logo_file: Option<String>,
    pub scenes: Vec<StoredScene>,
    pub script: String,
    pub estimated_duration_ms: i64,
}

/// A job just accepted, and the caller's usage after it.
#[derive(Debug, Clone)]
pub struct Created {
    pub ad: Adshot,
    pub used: i64,
}

impl Checked for DraftIn {
    type Valid = DraftIn;

    /// Each URL absolute http(s), at most [`MAX_SCREENSHOT_URLS`] screenshots, and at least
    /// one of the two fields.
    fn check(self) -> Result<DraftIn, FieldError> {
        let url = self.url.as_deref().map(|u| check_url("url", u)).transpose()?;
        let screenshot_urls = match self.screenshot_urls {
            None => None,
            Some(list) => {
                if list.len() > MAX_SCREENSHOT_URLS {
                    return Err(FieldError::new(
                        "screenshotUrls",
                        format!("may hold at most {MAX_SCREENSHOT_URLS} URLs"),
                    ));
                }
                let list = list.iter().map(|u| check_url("screenshotUrls", u)).collect::<Result<Vec<_>, _>>()?;
                Some(list).filter(|v| !v.is_empty())
            }
        };
        if url.is_none() && screenshot_urls.is_none() {
            return Err(FieldError::new("url", "url or screenshotUrls is required"));
        }
        Ok(DraftIn { url, screenshot_urls })
    }
}

fn check_url(field: &str, s: &str) -> Result<String, FieldError> {
    if s.len() > 2048 {
        return Err(FieldError::new(field, "must be at most 2048 characters"));
    }
    match url::Url::parse(s) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(u.to_string()),
        _ => Err(FieldError::new(field, "must be an absolute http or https URL")),
    }
}

/// The allowed voice ids, for messages.
fn voice_ids() -> String {
    capture_media::voices().iter().map(|v| v.id).collect::<Vec<_>>().join(", ")
}

/// The allowed music ids, for messages.
fn music_ids() -> String {
    capture_media::music().iter().map(|t| t.id).collect::<Vec<_>>().join(", ")
}

impl Checked for RenderIn {
    type Valid = RenderIn;

    /// The ids and the colour (the draft itself is checked by [`create_render`]).
    fn check(self) -> Result<RenderIn, FieldError> {
        if !ids::looks_like(DRAFT_PREFIX, &self.draft_id) {
            return Err(FieldError::new("draftId", "must be an ad draft id (drf_…)"));
        }
        if capture_media::find_voice(&self.voice_id).is_err() {
            return Err(FieldError::new("voiceId", format!("must be one of: {}", voice_ids())));
        }
        if capture_media::find_track(&self.music_id).is_err() {
            return Err(FieldError::new("musicId", format!("must be one of: {}", music_ids())));
        }
        let brand_color = match self.brand_color {
            None => None,
            Some(c) => {
                let ok = c.len() == 7 && c.starts_with('#') && c[1..].bytes().all(|b| b.is_ascii_hexdigit());
                if !ok || Rgb::parse_hex(&c).is_err() {
                    return Err(FieldError::new("brandColor", "must be a colour #RRGGBB (e.g. #1A73E8)"));
                }
                Some(c.to_ascii_uppercase())
            }
        };
        Ok(RenderIn { brand_color, ..self })
    }
}

/// Create a draft for [`DRAFT_ACTIONS`]: the actions are reserved, the task queued and,
/// with `idem`, the response stored — one transaction.
pub async fn create_draft(
    state: &AppState,
    account: &Account,
    input: &DraftIn,
    idem: Option<&IdemClaim>,
) -> Result<Created> {
    let id = ids::new_id(DRAFT_PREFIX);
    let input = serde_json::to_string(input).map_err(Error::internal)?;
    create(state, account, id, KIND_DRAFT, None, input, DRAFT_ACTIONS, idem).await
}

/// Create a render of a finished draft of the caller for [`RENDER_ACTIONS`].
pub async fn create_render(
    state: &AppState,
    account: &Account,
    input: &RenderIn,
    idem: Option<&IdemClaim>,
) -> Result<Created> {
    let draft = state
        .store
        .adshot_of(&account.user.id, &input.draft_id)
        .await?
        .filter(|r| r.kind == KIND_DRAFT)
        .ok_or_else(|| Error::not_found("ad draft"))?;
    match draft.status {
        JobStatus::Done => {}
        JobStatus::Failed => return Err(FieldError::new("draftId", "the draft failed; make a new one").into()),
        _ => {
            return Err(FieldError::new("draftId", "the draft is not finished yet; follow its stream and retry").into());
        }
    }
    let id = ids::new_id(RENDER_PREFIX);
    let input = serde_json::to_string(input).map_err(Error::internal)?;
    create(state, account, id, KIND_RENDER, Some(draft.id), input, RENDER_ACTIONS, idem).await
}

#[allow(clippy::too_many_arguments)]
async fn create(
    state: &AppState,
    account: &Account,
    id: String,
    kind: &str,
    draft_id: Option<String>,
    input: String,
    actions: i64,
    idem: Option<&IdemClaim>,
) -> Result<Created> {
    let n = NewAdshot {
        task_payload: serde_json::to_string(&TaskPayload { id: id.clone() }).map_err(Error::internal)?,
        id,
        user_id: account.user.id.clone(),
        key_id: account.key_id.clone(),
        kind: kind.to_string(),
        draft_id,
        input,
        actions,
        month: account.window.label.clone(),
        limit: account.limit(),
        reset_at: iso(account.window.reset_ms),
        now: state.clock.now_ms(),
        max_active: Some(if kind == KIND_RENDER { MAX_ACTIVE_RENDERS } else { MAX_ACTIVE_DRAFTS }),
    };
    let render = |r: &AdshotRow| {
        let ad = view_with(r, None, None, None);
        (202u16, serde_json::to_value(&ad).map(|v| v.to_string()).unwrap_or_default())
    };
    let idem = idem.map(|claim| IdemResponse { claim, render: &render });
    match state.store.create_adshot_with(&n, idem).await? {
        Ok((row, used)) => {
            state.wake.queued(crate::queues::Queue::Ad);
            state.job_changed(&row.id);
            Ok(Created { ad: view_with(&row, None, None, None), used })
        }
        Err(refused) => Err(account.refused(state, refused, None)),
    }
}

/// A draft or render as every channel shows it, with fresh file URLs.
pub async fn view(state: &AppState, r: &AdshotRow) -> Adshot {
    let done = r.status == JobStatus::Done;
    let draft = match (&r.draft, done) {
        (Some(d), true) => match serde_json::from_str::<StoredDraft>(d) {
            Ok(d) => Some(draft_content(state, &d).await),
            Err(e) => {
                tracing::error!(ad = %r.id, error = %e, "a stored draft does not parse");
                None
            }
        },
        _ => None,
    };
    let video = match r.video_key.as_ref().filter(|_| done) {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    let thumb = match r.thumb_key.as_ref().filter(|_| done) {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    view_with(r, draft, video, thumb)
}

/// The stored draft with its files as URLs.
pub async fn draft_content(state: &AppState, d: &StoredDraft) -> DraftContent {
    let mut scenes = Vec::with_capacity(d.scenes.len());
    for s in &d.scenes {
        scenes.push(SceneOut {
            image_url: state.file_url(&s.file).await,
            source: s.source.clone(),
            caption: s.caption.clone(),
            duration_ms: s.duration_ms,
            motion: serde_json::to_value(s.motion)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        });
    }
    let logo_url = match &d.logo_file {
        Some(f) => Some(state.file_url(f).await),
        None => None,
    };
    DraftContent {
        name: d.name.clone(),
        headline: d.headline.clone(),
        lines: d.lines.clone(),
        cta: d.cta.clone(),
        brand_color: d.brand_color.clone(),
        brand_color_source: d.brand_color_source.clone(),
        logo_url,
        scenes,
        script: d.script.clone(),
        estimated_duration_ms: d.estimated_duration_ms,
    }
}

/// The row with its content and file URLs already made.
pub fn view_with(
    r: &AdshotRow,
    draft: Option<DraftContent>,
    video_url: Option<String>,
    thumbnail_url: Option<String>,
) -> Adshot {
    let status = r.status;
    let input: Value = serde_json::from_str(&r.input).unwrap_or(Value::Null);
    let text = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_string);
    let render = r.kind == KIND_RENDER;
    Adshot {
        id: r.id.clone(),
        object: if render { "ad_render" } else { "ad_draft" }.into(),
        status,
        stage: r.stage.clone(),
        progress: r.progress,
        url: if render { None } else { text("url") },
        screenshot_urls: if render {
            None
        } else {
            input.get("screenshotUrls").and_then(|v| serde_json::from_value(v.clone()).ok())
        },
        draft,
        draft_id: r.draft_id.clone(),
        voice_id: if render { text("voiceId") } else { None },
        music_id: if render { text("musicId") } else { None },
        brand_color: if render { text("brandColor") } else { None },
        orientation: if render {
            Some(input.get("orientation").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default())
        } else {
            None
        },
        video_url,
        thumbnail_url,
        duration_ms: r.duration_ms,
        width: r.width,
        height: r.height,
        voice_span_ms: r
            .meta
            .as_deref()
            .and_then(|m| serde_json::from_str::<Value>(m).ok())
            .and_then(|m| serde_json::from_value(m["voiceSpanMs"].clone()).ok()),
        error: r.error.clone(),
        actions: r.actions,
        created_at: iso(r.created_at),
        completed_at: r.completed_at.map(iso),
    }
}

/// A draft or render of the caller (its stored row), or `NotFound`.
pub async fn find(state: &AppState, account: &Account, id: &str) -> Result<AdshotRow> {
    if !ids::looks_like(DRAFT_PREFIX, id) && !ids::looks_like(RENDER_PREFIX, id) {
        return Err(Error::not_found("ad"));
    }
    state.store.adshot_of(&account.user.id, id).await?.ok_or_else(|| Error::not_found("ad"))
}

/// A draft or render of the caller, as shown.
pub async fn get(state: &AppState, account: &Account, id: &str) -> Result<Adshot> {
    let row = find(state, account, id).await?;
    Ok(view(state, &row).await)
}

/// The caller's newest drafts and renders.
pub async fn list(state: &AppState, account: &Account, limit: i64) -> Result<AdshotList> {
    let rows = state.store.list_adshots(&account.user.id, None, limit.clamp(1, 100)).await?;
    let mut data = Vec::with_capacity(rows.len());
    for r in &rows {
        data.push(view(state, r).await);
    }
    Ok(AdshotList { data })
}

/// The voices a render may use.
pub fn voices() -> VoiceList {
    VoiceList {
        data: capture_media::voices()
            .into_iter()
            .map(|v| VoiceOut {
                id: v.id.into(),
                name: v.name.into(),
                language: v.language.into(),
                gender: v.gender.map(str::to_string),
            })
            .collect(),
    }
}

/// The music tracks a render may use.
pub fn music() -> MusicList {
    MusicList {
        data: capture_media::music()
            .into_iter()
            .map(|t| TrackOut { id: t.id.into(), name: t.name.into(), mood: t.mood.into(), bpm: t.bpm })
            .collect(),
    }
}
