//! The saved test inbox on the settings page: the address and counts are shown; the
//! password is revealed on request (a POSTed form with the CSRF token, like an API key), and
//! rotating the password or the address needs a ticked confirmation too.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::base::forms::{SignedForm, account};
use super::base::layout::{Chrome, Nav, SecretPage, WebError, WebResult, minute, page};
use crate::inbox::service;
use crate::state::AppState;

/// What the settings page shows of the inbox.
pub struct InboxPanel {
    pub address: String,
    pub messages: i64,
    pub unseen: i64,
    pub last_received: Option<String>,
    pub retention_days: u64,
    pub password_rotated: String,
    /// Recent attempts on any site: (when, origin, action, outcome, note).
    pub history: Vec<(String, String, String, String, String)>,
}

/// The inbox panel of the account (the inbox is made on first view).
pub async fn panel(state: &AppState, s: &super::base::session::WebSession) -> WebResult<InboxPanel> {
    let acc = account(state, s).await?;
    let row = service::ensure(state, &acc).await?;
    let (messages, unseen, newest) = state.store.inbox_counts(&acc.user.id).await?;
    let history = state
        .store
        .recent_auth_attempts(&acc.user.id, 10)
        .await?
        .into_iter()
        .map(|a| (minute(a.created_at), a.origin, a.action, a.outcome, a.note.unwrap_or_default()))
        .collect();
    Ok(InboxPanel {
        address: row.address,
        messages,
        unseen,
        last_received: newest.map(minute),
        retention_days: state.cfg.inbox.retention.as_secs().div_ceil(86_400),
        password_rotated: minute(row.password_rotated_at),
        history,
    })
}

fn secret(s: &super::base::session::WebSession, title: &str, intro: &str, password: &str) -> Response {
    let p = SecretPage {
        chrome: Chrome::signed(title, s, Nav::Settings),
        intro,
        field_id: "inbox-password",
        field_label: "Inbox password",
        secret: password,
        back_href: "/settings#inbox-h",
        back_label: "Back to the settings",
    };
    page(StatusCode::OK, &p, None)
}

/// `POST /settings/inbox/reveal`: show the inbox's password to its owner.
pub async fn reveal(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let row = service::ensure(&state, &acc).await?;
    let password = service::password(&state, &row)?;
    let intro = format!(
        "The password the auth-test helper uses with {} on sites under test. It is not a password of this service.",
        row.address
    );
    Ok(secret(&f.session, "Auth-test inbox password", &intro, &password))
}

/// `POST /settings/inbox/rotate` (`rotate` = password, address or both; `confirm` = yes).
pub async fn rotate(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    if f.form.get("confirm") != Some("yes") {
        return Err(WebError::Page(
            StatusCode::BAD_REQUEST,
            "Tick the box to confirm: accounts made on sites with the old credentials keep them.".into(),
        ));
    }
    let what = f.form.get("rotate").unwrap_or("password");
    if !["password", "address", "both"].contains(&what) {
        return Err(WebError::Page(StatusCode::BAD_REQUEST, "Choose the password, the address or both.".into()));
    }
    let acc = account(&state, &f.session).await?;
    let inbox = service::rotate(&state, &acc, what).await?;
    let intro = format!(
        "Rotated. The inbox address is now {}{}; its password is below. Sites where you signed up before still know the old credentials.",
        inbox.address,
        if what == "password" { "" } else { " (mail to the old address is refused)" }
    );
    Ok(secret(&f.session, "New auth-test inbox credentials", &intro, &inbox.password))
}
