//! The dashboard: this month's usage, API keys (create, reveal, revoke), recent
//! screenshots (share, unshare, PDF download).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::ids;
use capture_core::time::now_ms;
use capture_store::{ApiKeyRow, ScreenshotRow};

use super::base::forms::{Signed, SignedForm, account, web_id};
use super::base::layout::{
    Nav, WebError, WebResult, csrf_field, date, datetime, esc, html, layout, notice, origin, post_button, secret_field,
    see_other, sentence,
};
use super::base::session::WebSession;
use crate::account::types::Balance;
use crate::admin::{self, AdminError};
use crate::screenshots::pdf_response;
use crate::screenshots::service as screenshots;
use crate::state::AppState;

/// Most live keys one account may hold.
const MAX_LIVE_KEYS: usize = 50;
/// Screenshots listed on the dashboard.
const RECENT_SCREENSHOTS: i64 = 20;

/// `GET /dashboard`
pub async fn show(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    render(&state, &s, StatusCode::OK, None).await
}

/// The dashboard page, with an error above the key form when `error` is set.
async fn render(state: &AppState, s: &WebSession, status: StatusCode, error: Option<&str>) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let balance = crate::account::service::balance_of(&acc);
    let keys = state.store.list_keys(&s.user.id).await?;
    let usage = state.store.usage_by_key(&s.user.id, &acc.window.label).await?;
    let shots = state.store.list_screenshots(&s.user.id, None, RECENT_SCREENSHOTS).await?;
    let body = format!(
        "<h1>Dashboard</h1>{}{}{}",
        usage_section(&balance),
        keys_section(s, &keys, &usage, error),
        screenshots_section(state, s, &shots).await
    );
    Ok(html(status, layout("Dashboard", Some(s), Nav::Dashboard, &body), origin(&state.base_url).as_deref()))
}

/// Usage against the plan, from the same object `GET /v1/account/balance` returns.
fn usage_section(b: &Balance) -> String {
    let u = &b.usage;
    let used = u.used;
    let reset = b.window.reset_at.as_str();
    let reset_text = format!(
        "<p>The allowance resets on <time id=\"usage-reset\" datetime=\"{r}\">{d}</time> (00:00 UTC).</p>",
        r = esc(reset),
        d = esc(reset.get(..10).unwrap_or(reset))
    );
    let plan = esc(&b.plan);
    let main = if u.unlimited {
        format!(
            "<p id=\"usage-summary\"><strong>{used}</strong> actions used this month. \
             This is an administrator account: no monthly cap applies ({plan} plan).</p>"
        )
    } else {
        let limit = u.limit.unwrap_or(0);
        let remaining = u.remaining.unwrap_or(0);
        let pct = u.percent_used.unwrap_or(0.0);
        format!(
            "<p id=\"usage-summary\"><strong>{used}</strong> of <strong>{limit}</strong> actions used \
             on the <strong>{plan}</strong> plan ({pct}%), <strong>{remaining}</strong> left.</p>\
             <meter id=\"usage-meter\" aria-label=\"Monthly usage\" min=\"0\" max=\"{limit}\" value=\"{used}\" \
             low=\"{low}\" high=\"{high}\" optimum=\"0\">{used} of {limit}</meter>",
            low = limit * 80 / 100,
            high = limit * 95 / 100,
        )
    };
    format!("<section aria-labelledby=\"usage-h\"><h2 id=\"usage-h\">Usage this month</h2>{main}{reset_text}</section>")
}

fn keys_section(s: &WebSession, keys: &[ApiKeyRow], usage: &[(String, i64)], error: Option<&str>) -> String {
    let form = format!(
        "<form method=\"post\" action=\"/dashboard/keys\" class=\"row\">{}\
         <label for=\"key-name\">Key name</label>\
         <input id=\"key-name\" name=\"name\" required maxlength=\"100\" placeholder=\"e.g. production\">\
         <button type=\"submit\">Create key</button></form>",
        csrf_field(&s.csrf)
    );
    let rows: String = keys
        .iter()
        .map(|k| {
            let used = usage.iter().find(|(id, _)| *id == k.id).map_or(0, |(_, n)| *n);
            let (status, actions) = match k.revoked_at {
                Some(t) => (format!("Revoked {}", date(t)), String::new()),
                None => (
                    "Active".to_string(),
                    format!(
                        "{}{}",
                        post_button(&format!("/dashboard/keys/{}/reveal", k.id), &s.csrf, "Reveal", ""),
                        post_button(&format!("/dashboard/keys/{}/revoke", k.id), &s.csrf, "Revoke", "danger")
                    ),
                ),
            };
            format!(
                "<tr><th scope=\"row\">{name}</th><td><code>{prefix}…</code></td><td>{created}</td>\
                 <td class=\"num\">{used}</td><td>{status}</td><td class=\"actions\">{actions}</td></tr>",
                name = esc(&k.name),
                prefix = esc(&k.prefix),
                created = date(k.created_at),
            )
        })
        .collect();
    let table = if keys.is_empty() {
        "<p>No keys yet. Create one to call the API.</p>".to_string()
    } else {
        format!(
            "<table><caption>Your API keys</caption><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Key</th>\
             <th scope=\"col\">Created</th><th scope=\"col\">Used this month</th><th scope=\"col\">Status</th>\
             <th scope=\"col\">Actions</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    };
    format!(
        "<section id=\"keys\" aria-labelledby=\"keys-h\"><h2 id=\"keys-h\">API keys</h2>\
         <p>Send a key as <code>Authorization: Bearer …</code>. Revoking a key takes effect on the next call.</p>\
         {}{form}{table}</section>",
        error.map(|e| notice("error", e)).unwrap_or_default()
    )
}

async fn screenshots_section(state: &AppState, s: &WebSession, shots: &[ScreenshotRow]) -> String {
    let mut jobs = Vec::with_capacity(shots.len());
    for r in shots {
        jobs.push(screenshots::view(state, r).await);
    }
    let rows: String = shots
        .iter()
        .zip(&jobs)
        .map(|(r, v)| {
            let public = v.public_url.as_deref();
            let thumb = match v.thumbnail_url.as_deref() {
                Some(t) => format!("<img src=\"{}\" alt=\"Thumbnail of {}\" width=\"160\" loading=\"lazy\">", esc(t), esc(&r.url)),
                None => "<span class=\"hint\">no preview</span>".into(),
            };
            let title = r.page_title.as_deref().filter(|t| !t.is_empty()).unwrap_or(&r.url);
            let status = match &r.error {
                Some(e) if r.status == "failed" => format!("failed<div class=\"hint\">{}</div>", esc(e)),
                _ => esc(&r.status),
            };
            let share = match &r.share_token {
                Some(t) => {
                    let url = screenshots::share_url(state, t);
                    format!(
                        "<a class=\"share-link\" href=\"{u}\">{u}</a>{}",
                        post_button(&format!("/dashboard/screenshots/{}/unshare", r.id), &s.csrf, "Unshare", ""),
                        u = esc(&url)
                    )
                }
                None => post_button(&format!("/dashboard/screenshots/{}/share", r.id), &s.csrf, "Share", ""),
            };
            let file = match (r.format.as_str(), public) {
                ("pdf", Some(_)) => format!("<a href=\"/dashboard/screenshots/{}/pdf\" download>Download PDF</a>", esc(&r.id)),
                (_, Some(p)) => format!("<a href=\"{}\">Open image</a>", esc(p)),
                _ => String::new(),
            };
            format!(
                "<tr><td>{thumb}</td><th scope=\"row\">{title}<div class=\"hint\"><code>{url}</code></div></th>\
                 <td>{status}</td><td>{format}</td><td>{created}</td><td class=\"actions\">{share}</td><td>{file}</td></tr>",
                title = esc(title),
                url = esc(&r.url),
                format = esc(&r.format),
                created = datetime(r.created_at),
            )
        })
        .collect();
    let table = if shots.is_empty() {
        "<p>No screenshots yet. Create one with <code>POST /v1/screenshot</code> or <code>capture shot URL</code>.</p>"
            .to_string()
    } else {
        format!(
            "<table><caption>Your {RECENT_SCREENSHOTS} most recent screenshots</caption><thead><tr>\
             <th scope=\"col\">Preview</th><th scope=\"col\">Page</th><th scope=\"col\">Status</th>\
             <th scope=\"col\">Format</th><th scope=\"col\">Created</th><th scope=\"col\">Sharing</th>\
             <th scope=\"col\">File</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    };
    format!(
        "<section id=\"screenshots\" aria-labelledby=\"shots-h\"><h2 id=\"shots-h\">Recent screenshots</h2>{table}</section>"
    )
}

/// `POST /dashboard/keys`: create a key and show it in full.
pub async fn create_key(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let live = state.store.list_keys(&s.user.id).await?.iter().filter(|k| k.revoked_at.is_none()).count();
    if live >= MAX_LIVE_KEYS {
        let msg = format!("An account may hold at most {MAX_LIVE_KEYS} live keys. Revoke one first.");
        return render(&state, s, StatusCode::BAD_REQUEST, Some(&msg)).await;
    }
    match admin::create_key(&state.store, &state.master, &s.user.id, f.form.text("name")).await {
        Ok((row, key)) => Ok(key_page(s, &row, &key, true)),
        Err(AdminError::Invalid(m)) => render(&state, s, StatusCode::BAD_REQUEST, Some(&sentence(&m))).await,
        Err(e) => Err(e.into()),
    }
}

fn key_page(s: &WebSession, row: &ApiKeyRow, key: &str, new: bool) -> Response {
    let (title, intro) = if new {
        (
            format!("New API key “{}”", row.name),
            "Your new key is below. Copy it now and keep it secret; you can reveal it again from the dashboard.",
        )
    } else {
        (format!("API key “{}”", row.name), "Keep this key secret. If it leaked, revoke it and create a new one.")
    };
    let body = format!(
        "<h1>{}</h1>{}{}<p><a href=\"/dashboard#keys\">Back to the dashboard</a></p>",
        esc(&title),
        notice("ok", intro),
        secret_field("api-key", "API key", key)
    );
    html(StatusCode::OK, layout(&title, Some(s), Nav::Dashboard, &body), None)
}

async fn own_key(state: &AppState, s: &WebSession, id: &str) -> WebResult<ApiKeyRow> {
    if !ids::looks_like(ids::KEY, id) {
        return Err(WebError::not_found());
    }
    state.store.key_of(&s.user.id, id).await?.ok_or_else(WebError::not_found)
}

/// `POST /dashboard/keys/{id}/reveal`: show the stored key to its owner.
pub async fn reveal_key(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let row = own_key(&state, &f.session, &id).await?;
    if row.revoked_at.is_some() {
        return Err(WebError::Page(StatusCode::CONFLICT, "This key is revoked; it cannot be revealed or used.".into()));
    }
    let key = state
        .master
        .decrypt(&row.key_enc)
        .ok_or_else(|| WebError::from(crate::http::ApiError::internal(format!("key {} does not decrypt", row.id))))?;
    Ok(key_page(&f.session, &row, &key, false))
}

/// `POST /dashboard/keys/{id}/revoke`: the REST API rejects the key from the next call on.
pub async fn revoke_key(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    own_key(&state, &f.session, &id).await?;
    state.store.revoke_key(&id, Some(&f.session.user.id), now_ms()).await?;
    Ok(see_other("/dashboard#keys", None))
}

/// `POST /dashboard/screenshots/{id}/share`: mint the public link (or keep the one in force).
pub async fn share(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    screenshots::share(&state, &acc, &web_id(&id)?).await?;
    Ok(see_other("/dashboard#screenshots", None))
}

/// `POST /dashboard/screenshots/{id}/unshare`: the public link stops working.
pub async fn unshare(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    screenshots::unshare(&state, &acc, &web_id(&id)?).await?;
    Ok(see_other("/dashboard#screenshots", None))
}

/// `GET /dashboard/screenshots/{id}/pdf`: the PDF as an attachment, for the signed-in owner
/// (the same operation as `GET /api/pdf/download/{id}`, which needs an API key).
pub async fn pdf(State(state): State<AppState>, Path(id): Path<String>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    Ok(pdf_response(screenshots::pdf(&state, &acc, &web_id(&id)?).await?))
}
