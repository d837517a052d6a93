//! Generated video ads on the website: the account's drafts and renders, newest first,
//! each finished render with a player. Every row is the REST API's view of it.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::base::forms::{Signed, account};
use super::base::layout::{Chrome, Nav, WebResult, origin, page};
use crate::ads::service as ads;
use crate::ads::types::Adshot;
use crate::state::AppState;

/// Ads listed.
const RECENT_ADS: i64 = 30;

/// `GET /dashboard/ads`
pub async fn list(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let list = ads::list(&state, &acc, RECENT_ADS).await?;
    let unavailable = crate::features::unavailable(&state).await.into_iter().filter(|f| f.id == "videoAds").collect();
    let p = AdsPage { chrome: Chrome::signed("Ads", &s, Nav::Ads), ads: list.data, unavailable };
    Ok(page(StatusCode::OK, &p, origin(&state.base_url).as_deref()))
}

/// `templates/web/ads.html`
#[derive(Template)]
#[template(path = "web/ads.html")]
struct AdsPage<'a> {
    chrome: Chrome<'a>,
    ads: Vec<Adshot>,
    /// Why renders cannot work on this server, when that is so.
    unavailable: Vec<crate::features::FeatureStatus>,
}
