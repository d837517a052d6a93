//! Webhook endpoints on the website: create (the secret shown once), rotate the secret,
//! send a test, list deliveries, delete. Every operation is the REST API's service function.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::EndpointId;
use capture_core::events::WEBHOOK_EVENTS;
use serde_json::{Map, json};

use super::base::forms::{Signed, SignedForm, account, web_id};
use super::base::layout::{
    Nav, WebResult, csrf_field, esc, html, layout, notice, post_button, secret_field, see_other, sentence,
};
use super::base::session::WebSession;
use crate::error::Error;
use crate::state::AppState;
use crate::webhooks::service as webhooks;

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
    let eps = webhooks::list_endpoints(state, &acc).await?.data;
    let rows: String = eps
        .iter()
        .map(|e| {
            format!(
                "<tr><th scope=\"row\"><a href=\"/dashboard/webhooks/{id}\">{url}</a></th><td>{events}</td>\
                 <td>{desc}</td><td>{created}</td></tr>",
                id = esc(e.id.as_str()),
                url = esc(&e.url),
                events = esc(&e.events.join(", ")),
                desc = esc(e.description.as_deref().unwrap_or("")),
                created = esc(e.created_at.get(..10).unwrap_or("")),
            )
        })
        .collect();
    let table = if eps.is_empty() {
        "<p>No endpoints yet.</p>".to_string()
    } else {
        format!(
            "<table><caption>Your webhook endpoints</caption><thead><tr><th scope=\"col\">URL</th>\
             <th scope=\"col\">Events</th><th scope=\"col\">Description</th><th scope=\"col\">Created</th></tr>\
             </thead><tbody>{rows}</tbody></table>"
        )
    };
    let boxes: String = WEBHOOK_EVENTS
        .iter()
        .map(|e| {
            format!(
                "<label class=\"check\"><input type=\"checkbox\" name=\"events\" value=\"{e}\"> <code>{e}</code></label>"
            )
        })
        .collect();
    let form = format!(
        "<form method=\"post\" action=\"/dashboard/webhooks\" class=\"stack\">{csrf}{err}\
         <label for=\"wh-url\">Endpoint URL</label>\
         <input id=\"wh-url\" name=\"url\" type=\"url\" required maxlength=\"2048\" placeholder=\"https://example.com/webhooks/capture\" value=\"{url}\">\
         <fieldset><legend>Events</legend>\
         <label class=\"check\"><input type=\"checkbox\" name=\"events\" value=\"*\" checked> All events (<code>*</code>, including future ones)</label>\
         {boxes}</fieldset>\
         <label for=\"wh-desc\">Description (optional)</label>\
         <input id=\"wh-desc\" name=\"description\" maxlength=\"500\" value=\"{desc}\">\
         <button type=\"submit\">Create endpoint</button></form>",
        csrf = csrf_field(&s.csrf),
        err = error.map(|e| notice("error", e)).unwrap_or_default(),
        url = esc(url),
        desc = esc(description),
    );
    let body = format!(
        "<h1>Webhooks</h1><p>Signed deliveries of <code>screenshot.completed</code>, <code>screenshot.failed</code>, \
         <code>quota.warning</code> and more. Verify the <code>Webhook-Signature</code> header with the endpoint's secret.</p>\
         <section aria-labelledby=\"eps-h\"><h2 id=\"eps-h\">Endpoints</h2>{table}</section>\
         <section aria-labelledby=\"new-h\"><h2 id=\"new-h\">Add an endpoint</h2>{form}</section>"
    );
    Ok(html(status, layout("Webhooks", Some(s), Nav::Webhooks, &body), None))
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
    let body = format!(
        "<h1>{}</h1>{}{}<p><a href=\"/dashboard/webhooks/{}\">Back to the endpoint</a></p>",
        esc(title),
        notice("ok", intro),
        secret_field("wh-secret", "Signing secret", secret),
        esc(id)
    );
    html(StatusCode::OK, layout(title, Some(s), Nav::Webhooks, &body), None)
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
    let ep = webhooks::get_endpoint(&state, &acc, &id).await?;
    let sent = q.as_deref() == Some("sent=1");
    let rows: String = deliveries
        .iter()
        .map(|d| {
            format!(
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                esc(&d.event_type),
                esc(d.status.as_str()),
                d.attempts,
                d.response_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into()),
                esc(d.error_message.as_deref().unwrap_or("")),
                esc(&d.created_at),
                esc(d.last_attempt_at.as_deref().unwrap_or("")),
                esc(d.id.as_str()),
            )
        })
        .collect();
    let table = if rows.is_empty() {
        "<p>No deliveries yet. Send a test to try the endpoint.</p>".to_string()
    } else {
        format!(
            "<table><caption>Last 50 deliveries, newest first</caption><thead><tr><th scope=\"col\">Event</th>\
             <th scope=\"col\">Status</th><th scope=\"col\">Attempts</th><th scope=\"col\">Response code</th>\
             <th scope=\"col\">Error</th><th scope=\"col\">Created</th><th scope=\"col\">Last attempt</th>\
             <th scope=\"col\">Delivery id (Webhook-Id)</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    };
    let base = format!("/dashboard/webhooks/{}", ep.id);
    let body = format!(
        "<h1>Webhook endpoint</h1>{sent}<dl><dt>URL</dt><dd><code>{url}</code></dd><dt>Events</dt><dd>{events}</dd>\
         <dt>Description</dt><dd>{desc}</dd><dt>Id</dt><dd><code>{id}</code></dd></dl>\
         <div class=\"actions\">{test}{rotate}{delete}</div>\
         <section aria-labelledby=\"del-h\"><h2 id=\"del-h\">Deliveries</h2>\
         <p><a href=\"{base}\">Refresh</a> (deliveries are sent in the background)</p>{table}</section>\
         <p><a href=\"/dashboard/webhooks\">All endpoints</a></p>",
        sent = if sent { notice("ok", "A test.ping delivery is queued.") } else { String::new() },
        url = esc(&ep.url),
        events = esc(&ep.events.join(", ")),
        desc = esc(ep.description.as_deref().unwrap_or("—")),
        id = esc(ep.id.as_str()),
        base = esc(&base),
        test = post_button(&format!("{base}/test"), &s.csrf, "Send test", ""),
        rotate = post_button(&format!("{base}/rotate"), &s.csrf, "Rotate secret", ""),
        delete = post_button(&format!("{base}/delete"), &s.csrf, "Delete endpoint", "danger"),
    );
    Ok(html(StatusCode::OK, layout("Webhook endpoint", Some(&s), Nav::Webhooks, &body), None))
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
