//! Webhook endpoints on the website: create (the secret shown once), rotate the secret,
//! send a test, list deliveries, delete. Every operation is the REST API's service function.

use crate::http::Path;
use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::EndpointId;
use capture_core::events::WEBHOOK_EVENTS;
use serde_json::{Map, json};

use super::base::forms::{Signed, SignedForm, account, web_id};
use super::base::layout::{Chrome, Nav, SecretPage, WebResult, page, see_other, sentence};
use super::base::session::WebSession;
use crate::error::Error;
use crate::state::AppState;
use crate::webhooks::service as webhooks;
use crate::webhooks::types::{Delivery, Endpoint};

/// `GET /dashboard/webhooks`
pub async fn list(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    render_list(&state, &s, StatusCode::OK, None, "", "").await
}

async fn render_list(
    state: &AppState,
    s: &WebSession,
    status: StatusCode,
    error: Option<&str>,
    url: &str,
    description: &str,
) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let list = WebhooksPage {
        chrome: Chrome::signed("Webhooks", s, Nav::Webhooks),
        csrf: &s.csrf,
        endpoints: webhooks::list_endpoints(state, &acc).await?.data,
        events: WEBHOOK_EVENTS,
        error,
        url,
        description,
    };
    Ok(page(status, &list, None))
}

/// `templates/web/webhooks.html`: the endpoints and the form to add one (refilled with
/// `url` and `description` after an error).
#[derive(Template)]
#[template(path = "web/webhooks.html")]
struct WebhooksPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    endpoints: Vec<Endpoint>,
    events: &'a [&'a str],
    error: Option<&'a str>,
    url: &'a str,
    description: &'a str,
}

/// `templates/web/webhook.html`: one endpoint, its actions and its deliveries.
#[derive(Template)]
#[template(path = "web/webhook.html")]
struct WebhookPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    endpoint: Endpoint,
    deliveries: Vec<Delivery>,
    /// A test was just queued.
    sent: bool,
    base: String,
    test_action: String,
    rotate_action: String,
    delete_action: String,
}

/// `POST /dashboard/webhooks`: create an endpoint and show its secret once.
pub async fn create(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let acc = account(&state, s).await?;
    let url = f.form.text("url");
    let description = f.form.text("description");
    let events = f.form.all("events");
    let mut body = Map::new();
    body.insert("url".into(), json!(url));
    // "*" covers everything; nothing ticked means the default, which is also "*".
    if !events.is_empty() && !events.contains(&"*") {
        body.insert("events".into(), json!(events));
    }
    if !description.is_empty() {
        body.insert("description".into(), json!(description));
    }
    let created = match webhooks::parse_endpoint(&state, &body) {
        Ok(input) => webhooks::create_endpoint(&state, &acc, input).await,
        Err(e) => Err(e.into()),
    };
    match created {
        Ok(ep) => {
            let intro = "The endpoint is created. Copy its signing secret now: it is shown only this once (you can rotate it later).";
            Ok(secret_page(s, "Endpoint created", intro, ep.endpoint.id.as_str(), &ep.secret))
        }
        Err(e) if is_client_error(&e) => {
            render_list(&state, s, StatusCode::BAD_REQUEST, Some(&sentence(&e.to_string())), url, description).await
        }
        Err(e) => Err(e.into()),
    }
}

fn is_client_error(e: &Error) -> bool {
    let status = e.code().status();
    (400..500).contains(&status) && status != 404
}

fn secret_page(s: &WebSession, title: &str, intro: &str, id: &str, secret: &str) -> Response {
    let back = format!("/dashboard/webhooks/{id}");
    let page_ = SecretPage {
        chrome: Chrome::signed(title, s, Nav::Webhooks),
        intro,
        field_id: "wh-secret",
        field_label: "Signing secret",
        secret,
        back_href: &back,
        back_label: "Back to the endpoint",
    };
    page(StatusCode::OK, &page_, None)
}

/// `GET /dashboard/webhooks/{id}`: the endpoint, its actions and its last 50 deliveries.
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
    Signed(s): Signed,
) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let id: EndpointId = web_id(&id)?;
    let deliveries = webhooks::list_deliveries(&state, &acc, &id).await?.data;
    let endpoint = webhooks::get_endpoint(&state, &acc, &id).await?;
    let base = format!("/dashboard/webhooks/{id}");
    let show = WebhookPage {
        chrome: Chrome::signed("Webhook endpoint", &s, Nav::Webhooks),
        csrf: &s.csrf,
        endpoint,
        deliveries,
        sent: q.as_deref() == Some("sent=1"),
        test_action: format!("{base}/test"),
        rotate_action: format!("{base}/rotate"),
        delete_action: format!("{base}/delete"),
        base,
    };
    Ok(page(StatusCode::OK, &show, None))
}

/// `POST /dashboard/webhooks/{id}/rotate`: a new secret, shown once; the old one stops signing.
pub async fn rotate(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let v = webhooks::rotate_secret(&state, &acc, &web_id(&id)?).await?;
    let intro = "The endpoint has a new signing secret; the old one no longer signs deliveries. Copy it now: it is shown only this once.";
    Ok(secret_page(&f.session, "New signing secret", intro, v.id.as_str(), &v.secret))
}

/// `POST /dashboard/webhooks/{id}/test`: queue a `test.ping`.
pub async fn test(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: EndpointId = web_id(&id)?;
    webhooks::send_test(&state, &acc, &id).await?;
    Ok(see_other(&format!("/dashboard/webhooks/{id}?sent=1"), None))
}

/// `POST /dashboard/webhooks/{id}/delete`
pub async fn delete(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    webhooks::delete_endpoint(&state, &acc, &web_id(&id)?).await?;
    Ok(see_other("/dashboard/webhooks", None))
}
