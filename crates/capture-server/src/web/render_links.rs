//! Render-link keys on the website: list, create (the secret shown once), revoke. Every
//! operation is the REST API's service function (`render::service`).

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::RenderKeyId;
use serde_json::{Map, json};

use super::base::forms::{Signed, SignedForm, account, web_id};
use super::base::layout::{Chrome, Nav, SecretPage, WebResult, page, see_other, sentence};
use super::base::session::WebSession;
use crate::http::Path;
use crate::http::validated::validate;
use crate::render::service as render;
use crate::render::types::{RenderKey, RenderKeyIn};
use crate::state::AppState;

/// `templates/web/render_links.html`: the keys, the form to add one, how to sign a link.
#[derive(Template)]
#[template(path = "web/render_links.html")]
struct RenderLinksPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    keys: Vec<RenderKey>,
    error: Option<&'a str>,
    base: &'a str,
}

/// `GET /dashboard/render-links`
pub async fn list(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    render_list(&state, &s, StatusCode::OK, None).await
}

async fn render_list(state: &AppState, s: &WebSession, status: StatusCode, error: Option<&str>) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let p = RenderLinksPage {
        chrome: Chrome::signed("Render links", s, Nav::Dashboard),
        csrf: &s.csrf,
        keys: render::list_keys(state, &acc).await?.data,
        error,
        base: &state.base_url,
    };
    Ok(page(status, &p, None))
}

/// `POST /dashboard/render-links`: make a key and show its secret once.
pub async fn create(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let acc = account(&state, s).await?;
    let mut body = Map::new();
    body.insert("name".into(), json!(f.form.text("name")));
    let name = match validate::<RenderKeyIn>(&body) {
        Ok(n) => n,
        Err(e) => return render_list(&state, s, StatusCode::BAD_REQUEST, Some(&sentence(&e.to_string()))).await,
    };
    let key = render::create_key(&state, &acc, name).await?;
    let p = SecretPage {
        chrome: Chrome::signed("Render link key created", s, Nav::Dashboard),
        intro: "Sign links with this secret on your server (never in a page). Copy it now: it is shown only this once.",
        field_id: "rl-secret",
        field_label: &format!("Signing secret of {}", key.id),
        secret: &key.secret,
        back_href: "/dashboard/render-links",
        back_label: "Back to render links",
    };
    Ok(page(StatusCode::OK, &p, None))
}

/// `POST /dashboard/render-links/{id}/revoke`: every link the key signed stops working.
pub async fn revoke(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: RenderKeyId = web_id(&id)?;
    render::delete_key(&state, &acc, &id).await?;
    Ok(see_other("/dashboard/render-links", None))
}
