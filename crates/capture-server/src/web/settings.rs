//! The settings page: the account, its plan, signing out everywhere, and where the saved
//! auth-test inbox will be shown.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::base::forms::{Signed, SignedForm};
use super::base::layout::{Nav, WebResult, date, esc, html, layout, post_button, see_other};
use super::base::session;
use crate::state::AppState;

/// `GET /settings`
pub async fn show(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    let u = &s.user;
    let admin = state.cfg.is_admin(&u.email);
    let limit = capture_core::Plan::parse(&u.plan).map(|p| state.cfg.plan_limits.limit(p));
    let plan = match (admin, limit) {
        (true, _) => format!("{} (administrator: no monthly cap)", esc(&u.plan)),
        (false, Some(l)) => format!("{} ({l} actions a month)", esc(&u.plan)),
        (false, None) => esc(&u.plan),
    };
    let body = format!(
        "<h1>Settings</h1>\
         <section aria-labelledby=\"acct-h\"><h2 id=\"acct-h\">Account</h2><dl>\
         <dt>Email</dt><dd id=\"account-email\">{email}</dd><dt>Plan</dt><dd id=\"account-plan\">{plan}</dd>\
         <dt>Account id</dt><dd><code>{id}</code></dd><dt>Member since</dt><dd>{since}</dd></dl></section>\
         <section aria-labelledby=\"inbox-h\"><h2 id=\"inbox-h\">Auth-test inbox</h2>\
         <p>When you run <code>capture auth-test URL</code>, the test inbox and password it saves for signing up \
         on other sites will be shown here, with the sign-in history it remembers per site.</p>\
         <p class=\"hint\">No saved inbox credentials yet.</p></section>\
         <section aria-labelledby=\"sess-h\"><h2 id=\"sess-h\">Sessions</h2>\
         <p>Sign out here with the button at the top of the page, or end every session of this account \
         on every device (API keys and agent connections are not affected).</p>{everywhere}</section>",
        email = esc(&u.email),
        id = esc(&u.id),
        since = date(u.created_at),
        everywhere = post_button("/settings/sign-out-everywhere", &s.csrf, "Sign out everywhere", "danger"),
    );
    Ok(html(StatusCode::OK, layout("Settings", Some(&s), Nav::Settings, &body), None))
}

/// `POST /settings/sign-out-everywhere`: end every website session of the account.
pub async fn sign_out_everywhere(
    State(state): State<AppState>,
    headers: HeaderMap,
    f: SignedForm,
) -> WebResult<Response> {
    state.store.delete_web_sessions_of(&f.session.user.id).await?;
    // Signing out everywhere also ends the CLI's and MCP clients' OAuth grants.
    state.store.revoke_user_oauth_tokens(&f.session.user.id, capture_core::time::now_ms()).await?;
    let cookie = session::end(&state, &headers).await?;
    Ok(see_other("/login", Some(cookie)))
}
