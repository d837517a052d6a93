//! The settings page: the account, its plan, the saved auth-test inbox (address, counts,
//! recent auth history; reveal and rotate in `web::inbox`), signing out everywhere.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::base::forms::{Signed, SignedForm};
use super::base::layout::{Chrome, Nav, WebResult, date, page, see_other};
use super::base::session;
use crate::state::AppState;
use capture_store::User;

/// `GET /settings`
pub async fn show(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    let u = &s.user;
    let plan_note = match (state.cfg.accounts.is_admin(&u.email), capture_core::Plan::parse(&u.plan)) {
        (true, _) => PlanNote::Admin,
        (false, Some(p)) => PlanNote::Monthly(state.cfg.accounts.plan_limits.limit(p)),
        (false, None) => PlanNote::Unknown,
    };
    let settings = SettingsPage {
        chrome: Chrome::signed("Settings", &s, Nav::Settings),
        user: u,
        plan_note,
        since: date(u.created_at),
        csrf: &s.csrf,
        inbox: super::inbox::panel(&state, &s).await?,
    };
    Ok(page(StatusCode::OK, &settings, None))
}

/// What the settings page says after the plan's name.
enum PlanNote {
    /// An administrator: no monthly cap.
    Admin,
    /// The plan's monthly actions.
    Monthly(i64),
    /// A plan this version does not know: nothing more.
    Unknown,
}

/// `templates/web/settings.html`
#[derive(Template)]
#[template(path = "web/settings.html")]
struct SettingsPage<'a> {
    chrome: Chrome<'a>,
    user: &'a User,
    plan_note: PlanNote,
    since: String,
    csrf: &'a str,
    inbox: super::inbox::InboxPanel,
}

/// `POST /settings/sign-out-everywhere`: end every website session of the account.
pub async fn sign_out_everywhere(
    State(state): State<AppState>,
    headers: HeaderMap,
    f: SignedForm,
) -> WebResult<Response> {
    state.store.delete_web_sessions_of(&f.session.user.id).await?;
    // Signing out everywhere also ends the CLI's and MCP clients' OAuth grants.
    state.store.revoke_user_oauth_tokens(&f.session.user.id, state.clock.now_ms()).await?;
    let cookie = session::end(&state, &headers).await?;
    Ok(see_other("/login", Some(cookie)))
}
