//! The website: sign-up, sign-in, the dashboard (usage, API keys, screenshots, monitors,
//! webhook endpoints) and settings. Server-rendered HTML with no framework and no external
//! assets; every form works without JavaScript (one small script only adds "Copy" buttons).
//!
//! Handlers are thin: they authenticate through the [`base::forms::Signed`] / [`base::forms::SignedForm`]
//! extractors (session cookie, and the session's CSRF token on every POST) and call the same
//! service functions as the REST API, scoped to the signed-in account.

mod ads;
mod audits;
mod auth;
pub mod base;
mod campaigns;
mod dashboard;
pub mod front;
mod hooks;
mod inbox;
mod monitors;
mod more_options;
mod playground;
mod render_links;
mod settings;
mod shots;
mod snippets;
mod start;
mod storage;
mod usage;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::state::AppState;

/// Routes of the website.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(auth::home))
        .route("/signup", get(auth::signup_form).post(auth::signup))
        .route("/login", get(auth::login_form).post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/verify-email", get(auth::verify_email))
        .route("/verify-email/resend", post(auth::resend_verification))
        .route("/dashboard", get(dashboard::show))
        .route("/dashboard/audits", get(audits::list))
        .route("/dashboard/campaigns", get(campaigns::list))
        .route("/dashboard/keys", post(dashboard::create_key))
        .route("/dashboard/keys/{id}/reveal", post(dashboard::reveal_key))
        .route("/dashboard/keys/{id}/revoke", post(dashboard::revoke_key))
        .route("/dashboard/screenshots/{id}/share", post(dashboard::share))
        .route("/dashboard/screenshots/{id}/unshare", post(dashboard::unshare))
        .route("/dashboard/screenshots/{id}/pdf", get(dashboard::pdf))
        .route("/dashboard/ads", get(ads::list))
        .route("/dashboard/render-links", get(render_links::list).post(render_links::create))
        .route("/dashboard/render-links/{id}/revoke", post(render_links::revoke))
        .route("/dashboard/storage", get(storage::list).post(storage::create))
        .route("/dashboard/storage/{id}/delete", post(storage::delete))
        .route("/dashboard/monitors", get(monitors::list).post(monitors::create))
        .route("/dashboard/monitors/{id}", get(monitors::show))
        .route("/dashboard/monitors/{id}/check", post(monitors::check_now))
        .route("/dashboard/monitors/{id}/pause", post(monitors::pause))
        .route("/dashboard/monitors/{id}/resume", post(monitors::resume))
        .route("/dashboard/monitors/{id}/delete", post(monitors::delete))
        .route("/dashboard/monitors/{id}/baseline", post(monitors::baseline))
        .route("/dashboard/webhooks", get(hooks::list).post(hooks::create))
        .route("/dashboard/webhooks/{id}", get(hooks::show))
        .route("/dashboard/webhooks/{id}/rotate", post(hooks::rotate))
        .route("/dashboard/webhooks/{id}/test", post(hooks::test))
        .route("/dashboard/webhooks/{id}/delete", post(hooks::delete))
        .route("/settings", get(settings::show))
        .route("/settings/sign-out-everywhere", post(settings::sign_out_everywhere))
        .route("/settings/inbox/reveal", post(inbox::reveal))
        .route("/settings/inbox/rotate", post(inbox::rotate))
        .route("/assets/web.css", get(css))
        .route("/assets/web.js", get(js))
        .route("/dashboard/playground", get(playground::show).post(playground::create))
        .route("/dashboard/screenshots", get(shots::list))
        .route("/dashboard/screenshots/{id}", get(shots::show))
        .route("/dashboard/screenshots/{id}/events", get(shots::events))
        .route("/dashboard/usage", get(usage::show))
        .route("/assets/work.js", get(work_js))
        .route("/assets/example.png", get(front::example_png))
}

async fn work_js() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("assets/work.js"))
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/web.css"))
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("assets/web.js"))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    r
}
