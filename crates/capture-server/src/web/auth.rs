//! Sign-up, sign-in (throttled), sign-out, and the home page.
//!
//! Throttling: every failed sign-in is recorded under the e-mail (`email:…`) and under the
//! client address (`ip:…`). While an e-mail has 10, or an address 30, failures in the last
//! 15 minutes, sign-in answers 429 without checking the password (so guessing cannot go on,
//! and the answer does not tell whether the guess was right). The window slides: the pause
//! ends 15 minutes after the failures.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use capture_core::time::now_ms;

use super::base::forms::{AnonForm, SignedForm, anon_csrf};
use super::base::layout::{Chrome, WebError, WebResult, page, see_other, sentence};
use super::base::session;
use crate::admin;
use crate::state::AppState;

/// The window of the sign-in throttle.
const ATTEMPT_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Failed sign-ins per e-mail within the window before sign-in pauses.
const MAX_FAILED_PER_EMAIL: i64 = 10;
/// Failed sign-ins per client address within the window before sign-in pauses (higher than
/// per e-mail: several people may share one address).
const MAX_FAILED_PER_ADDRESS: i64 = 30;
/// Longest password accepted (argon2 hashes anything, but a huge one costs memory).
const MAX_PASSWORD: usize = 1024;

/// `next` when it is a same-site relative path: one leading `/` (never `//`, a scheme or a
/// backslash, which browsers may read as another host) and only visible ASCII (browsers drop
/// tabs and newlines, which could turn `/\t/evil` into `//evil`).
pub fn safe_next(next: &str) -> Option<String> {
    let ok = next.len() <= 4096
        && next.starts_with('/')
        && !next.starts_with("//")
        && next.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'\\');
    ok.then(|| next.to_string())
}

fn next_from_query(q: Option<&str>) -> Option<String> {
    let q = q?;
    url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "next").and_then(|(_, v)| safe_next(&v))
}

/// `GET /`: the dashboard for a signed-in visitor, else a short welcome.
pub async fn home(State(state): State<AppState>, headers: HeaderMap) -> WebResult<Response> {
    if session::current(&state, &headers).await?.is_some() {
        return Ok(see_other("/dashboard", None));
    }
    Ok(page(StatusCode::OK, &HomePage { chrome: Chrome::public("Welcome") }, None))
}

/// `templates/web/home.html`
#[derive(Template)]
#[template(path = "web/home.html")]
struct HomePage<'a> {
    chrome: Chrome<'a>,
}

/// `templates/web/auth_form.html`: the sign-in or sign-up form.
#[derive(Template)]
#[template(path = "web/auth_form.html")]
struct AuthForm<'a> {
    chrome: Chrome<'a>,
    sign_up: bool,
    csrf: &'a str,
    email: &'a str,
    next: Option<&'a str>,
    /// `?next=…` for the link to the other form (or nothing).
    next_query: String,
    error: Option<&'a str>,
    max_password: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    SignIn,
    SignUp,
}

/// The sign-in or sign-up page; sets the double-submit cookie when the visitor has none.
fn auth_page(
    state: &AppState,
    headers: &HeaderMap,
    kind: Kind,
    status: StatusCode,
    email: &str,
    next: Option<&str>,
    error: Option<&str>,
) -> Response {
    let (csrf, cookie) = anon_csrf(state, headers);
    let next_query = next
        .map(|n| format!("?next={}", url::form_urlencoded::byte_serialize(n.as_bytes()).collect::<String>()))
        .unwrap_or_default();
    let form = AuthForm {
        chrome: Chrome::public(if kind == Kind::SignUp { "Create account" } else { "Sign in" }),
        sign_up: kind == Kind::SignUp,
        csrf: &csrf,
        email,
        next,
        next_query,
        error,
        max_password: MAX_PASSWORD,
    };
    let mut r = page(status, &form, None);
    if let Some(c) = cookie.and_then(|c| axum::http::HeaderValue::from_str(&c).ok()) {
        r.headers_mut().append(axum::http::header::SET_COOKIE, c);
    }
    r
}

/// `GET /signup`
pub async fn signup_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> WebResult<Response> {
    form_page(&state, &headers, q.as_deref(), Kind::SignUp).await
}

/// The sign-up or sign-in form; a visitor who is already signed in goes straight to `next`.
async fn form_page(state: &AppState, headers: &HeaderMap, query: Option<&str>, kind: Kind) -> WebResult<Response> {
    let next = next_from_query(query);
    if session::current(state, headers).await?.is_some() {
        return Ok(see_other(next.as_deref().unwrap_or("/dashboard"), None));
    }
    Ok(auth_page(state, headers, kind, StatusCode::OK, "", next.as_deref(), None))
}

/// `POST /signup`: create a free-plan account with an argon2id password hash, sign in.
pub async fn signup(State(state): State<AppState>, headers: HeaderMap, f: AnonForm) -> WebResult<Response> {
    let email = f.form.text("email").to_lowercase();
    let password = f.form.get("password").unwrap_or("");
    let next = f.form.get("next").and_then(safe_next);
    let fail = |msg: &str| {
        Ok(auth_page(&state, &headers, Kind::SignUp, StatusCode::BAD_REQUEST, &email, next.as_deref(), Some(msg)))
    };
    if password.chars().count() < 8 {
        return fail("Choose a password of at least 8 characters.");
    }
    if password.len() > MAX_PASSWORD {
        return fail("That password is too long.");
    }
    if state.store.user_by_email(&email).await?.is_some() {
        return fail("An account with this e-mail already exists. Sign in instead.");
    }
    let user = match admin::create_user(&state.store, &email, "free", Some(password), false).await {
        Ok(u) => u,
        Err(admin::AdminError::Invalid(m)) => return fail(&sentence(&m)),
        Err(e) => return Err(e.into()),
    };
    let cookie = session::start(&state, &user.id).await?;
    Ok(see_other(next.as_deref().unwrap_or("/dashboard"), Some(cookie)))
}

/// `GET /login?next=/path`
pub async fn login_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> WebResult<Response> {
    form_page(&state, &headers, q.as_deref(), Kind::SignIn).await
}

/// `POST /login`: check the throttle, then the password; start a session and go to `next`.
pub async fn login(State(state): State<AppState>, headers: HeaderMap, f: AnonForm) -> WebResult<Response> {
    let email = f.form.text("email").to_lowercase();
    let password = f.form.get("password").unwrap_or("").to_string();
    let next = f.form.get("next").and_then(safe_next);
    if email.is_empty() || password.is_empty() || password.len() > MAX_PASSWORD {
        return Ok(auth_page(
            &state,
            &headers,
            Kind::SignIn,
            StatusCode::BAD_REQUEST,
            &email,
            next.as_deref(),
            Some("Enter your e-mail and password."),
        ));
    }
    let now = now_ms();
    let since = now - ATTEMPT_WINDOW_MS;
    let email_key = format!("email:{email}");
    let addr_key = format!("ip:{}", f.client);
    if state.store.failed_login_attempts(&email_key, since).await? >= MAX_FAILED_PER_EMAIL
        || state.store.failed_login_attempts(&addr_key, since).await? >= MAX_FAILED_PER_ADDRESS
    {
        return Err(WebError::Throttled { retry_after_secs: ATTEMPT_WINDOW_MS / 1000 });
    }
    let user = state.store.user_by_email(&email).await?;
    let hash = user.as_ref().and_then(|u| u.password_hash.clone());
    let ok = verify_password(hash, password).await;
    state.store.record_login_attempt(&email_key, ok, now).await?;
    state.store.record_login_attempt(&addr_key, ok, now).await?;
    match user.filter(|_| ok) {
        Some(user) => {
            let cookie = session::start(&state, &user.id).await?;
            Ok(see_other(next.as_deref().unwrap_or("/dashboard"), Some(cookie)))
        }
        None => Ok(auth_page(
            &state,
            &headers,
            Kind::SignIn,
            StatusCode::BAD_REQUEST,
            &email,
            next.as_deref(),
            Some("Wrong e-mail or password."),
        )),
    }
}

/// Check `password` against an argon2 hash off the async threads. Without a hash (unknown
/// e-mail) a hash is still computed, so the answer takes as long either way.
async fn verify_password(hash: Option<String>, password: String) -> bool {
    tokio::task::spawn_blocking(move || {
        use argon2::password_hash::{PasswordHash, PasswordVerifier};
        match hash {
            Some(h) => PasswordHash::new(&h)
                .is_ok_and(|parsed| argon2::Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok()),
            None => {
                let _ = admin::hash_password("timing-equaliser");
                false
            }
        }
    })
    .await
    .unwrap_or(false)
}

/// `POST /logout`: end the session and clear its cookie.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap, _f: SignedForm) -> WebResult<Response> {
    let cookie = session::end(&state, &headers).await?;
    Ok(see_other("/login", Some(cookie)))
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_accepts_only_same_site_relative_paths() {
        assert_eq!(safe_next("/dashboard").as_deref(), Some("/dashboard"));
        assert!(safe_next("/oauth/authorize?client_id=a&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb").is_some());
        for bad in [
            "",
            "dashboard",
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "https://evil.example/",
            "/\t/evil.example",
            "/ok\n",
            "javascript:alert(1)",
            "/caf\u{e9}",
        ] {
            assert_eq!(safe_next(bad), None, "{bad:?} must be refused");
        }
    }
}
