//! Sign-up (throttled per address; with outgoing mail configured, the e-mail is verified
//! before the account gets any quota), sign-in (throttled), sign-out, and the home page.
//!
//! Sign-in throttling backs off rather than locking anyone out. Every failed sign-in is
//! recorded under the pair of client address and e-mail (`pair:…`) and under the address
//! (`ip:…`). Once one address has failed [`FREE_FAILURES_PER_PAIR`] times at one account
//! (since its last success there, within 15 minutes), or [`FREE_FAILURES_PER_ADDRESS`]
//! times at any accounts, it must wait before its next try: 30 s after the latest failure,
//! doubling with each further failure up to 15 minutes. While it waits, sign-in answers 429
//! without checking the password, so guessing cannot go on and the answer tells nothing. The
//! account's owner, from any other address, signs in as usual: a stranger's failures never
//! lock the account.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use capture_core::clock::Clock;
use capture_store::Store;

use super::base::forms::{AnonForm, SignedForm, anon_csrf};
use super::base::layout::{Chrome, WebError, WebResult, page, see_other, sentence};
use super::base::session;
use crate::admin;
use crate::state::AppState;

/// The window of the sign-in throttle: failures older than this are forgotten.
const ATTEMPT_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Failed sign-ins from one address at one account before it backs off.
pub const FREE_FAILURES_PER_PAIR: i64 = 10;
/// Failed sign-ins from one address at any accounts before it backs off (higher: several
/// people may share one address).
pub const FREE_FAILURES_PER_ADDRESS: i64 = 30;
/// The first pause, in seconds; each further failure doubles it.
const FIRST_PAUSE_SECS: i64 = 30;
/// The longest pause, in seconds.
const MAX_PAUSE_SECS: i64 = 15 * 60;
/// The window of the sign-up throttle.
const SIGNUP_WINDOW_MS: i64 = 3600 * 1000;
/// Longest password accepted (argon2 hashes anything, but a huge one costs memory).
const MAX_PASSWORD: usize = 1024;
/// How long a verification link works.
const VERIFY_LINK_MS: i64 = 48 * 3600 * 1000;

/// The pause after `failures` failures, when they are past `free`: 30 s, doubled for each
/// failure beyond the first paused one, at most 15 minutes.
pub fn pause_secs(failures: i64, free: i64) -> Option<i64> {
    if failures < free {
        return None;
    }
    let doublings = (failures - free).min(20) as u32;
    Some((FIRST_PAUSE_SECS << doublings).min(MAX_PAUSE_SECS))
}

/// Seconds until `key` may try again (None: now), given its failures and the latest.
fn wait_for(failures: (i64, Option<i64>), free: i64, now: i64) -> Option<i64> {
    let (n, last) = failures;
    let pause = pause_secs(n, free)?;
    let until = last? + pause * 1000;
    (until > now).then(|| (until - now + 999) / 1000)
}

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
    Ok(page(StatusCode::OK, &super::front::FrontPage::new(&state), None))
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
    // Accounts one address may open in an hour (a sign-up is recorded as an attempt that
    // "failed", so it counts and nothing resets it).
    let now = state.clock.now_ms();
    let signup_key = format!("signup:{}", f.client);
    let limit = state.cfg.accounts.signups_per_hour;
    if limit > 0 {
        let (made, _) = state.store.login_failures(&signup_key, now - SIGNUP_WINDOW_MS).await?;
        if made >= limit {
            return Err(WebError::Throttled {
                retry_after_secs: SIGNUP_WINDOW_MS / 1000,
                message: "Too many accounts were created from your network. Try again later.".into(),
            });
        }
    }
    if state.store.user_by_email(&email).await?.is_some() {
        return fail("An account with this e-mail already exists. Sign in instead.");
    }
    let user = match admin::create_user(&state.store, &email, "free", Some(password), false, state.clock.now_ms()).await
    {
        Ok(u) => u,
        Err(admin::AdminError::Invalid(m)) => return fail(&sentence(&m)),
        Err(e) => return Err(e.into()),
    };
    state.store.record_login_attempt(&signup_key, false, now).await?;
    tracing::info!(client = %f.client, user = %user.id, "account created on the website");
    // With outgoing mail, the address is verified before the account gets any quota.
    if state.mail.mailer.is_some() {
        send_verification(&state, &user).await?;
    }
    let cookie = session::start(&state, &user.id).await?;
    Ok(see_other(next.as_deref().unwrap_or("/dashboard"), Some(cookie)))
}

/// Mail `user` a link that verifies the address (a new link replaces the last). A mail that
/// cannot be sent is logged; the dashboard offers to send it again.
pub async fn send_verification(state: &AppState, user: &capture_store::User) -> WebResult<()> {
    let Some(mailer) = &state.mail.mailer else { return Ok(()) };
    let token = capture_core::ids::random_string(43);
    let now = state.clock.now_ms();
    let hash = crate::crypto::sha256_hex(token.as_bytes());
    state.store.start_email_verification(&user.id, &hash, now, now + VERIFY_LINK_MS).await?;
    let link = format!("{}/verify-email?token={token}", state.base_url);
    let from = capture_mail::outbound::Sender::parse(&state.cfg.mail.from)
        .map_err(|e| WebError::Page(StatusCode::INTERNAL_SERVER_ERROR, format!("CAPTURE_MAIL_FROM: {e}")))?;
    let mail = capture_mail::outbound::NoticeMail {
        from,
        to: user.email.clone(),
        subject: "Verify your e-mail address for Capture".into(),
        text: format!(
            "Welcome to Capture.\n\nOpen this link to verify your e-mail address and start capturing:\n{link}\n\n\
             The link works for 48 hours. If you did not sign up, ignore this mail.\n"
        ),
        html: format!(
            "<p>Welcome to Capture.</p><p><a href=\"{link}\">Verify your e-mail address</a> to start capturing.</p>\
             <p>The link works for 48 hours. If you did not sign up, ignore this mail.</p>"
        ),
        images: Vec::new(),
    };
    let sent = match mail.build(chrono::Utc::now()) {
        Ok(m) => tokio::time::timeout(std::time::Duration::from_secs(30), mailer.send(&m))
            .await
            .map_err(|_| "timed out".to_string())
            .and_then(|r| r.map(|_| ()).map_err(|e| e.to_string())),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = sent {
        tracing::warn!(user = %user.id, error = %e, "the verification mail was not sent");
    }
    Ok(())
}

/// `GET /verify-email?token=…`: the link of the verification mail. Verifies the address
/// (once) and goes to the dashboard, which says so.
pub async fn verify_email(
    State(store): State<Store>,
    State(clock): State<Clock>,
    RawQuery(q): RawQuery,
) -> WebResult<Response> {
    let token = q
        .as_deref()
        .and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned())
        })
        .filter(|t| capture_core::ids::is_token(t, 20, 128));
    let verified = match token {
        Some(t) => store.verify_email(&crate::crypto::sha256_hex(t.as_bytes()), clock.now_ms()).await?,
        None => None,
    };
    match verified {
        Some(_) => Ok(see_other("/dashboard?verified=1", None)),
        None => Err(WebError::Page(
            StatusCode::NOT_FOUND,
            "This verification link is unknown, used or expired. Sign in and ask for a new one.".into(),
        )),
    }
}

/// `POST /verify-email/resend`: mail the signed-in account a new verification link.
pub async fn resend_verification(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    if state.store.email_unverified(&f.session.user.id).await? {
        send_verification(&state, &f.session.user).await?;
    }
    Ok(see_other("/dashboard?sent=1", None))
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
    let now = state.clock.now_ms();
    let since = now - ATTEMPT_WINDOW_MS;
    let pair_key = format!("pair:{}|{email}", f.client);
    let addr_key = format!("ip:{}", f.client);
    let pair = state.store.login_failures_since_success(&pair_key, since).await?;
    let addr = state.store.login_failures(&addr_key, since).await?;
    let wait = [wait_for(pair, FREE_FAILURES_PER_PAIR, now), wait_for(addr, FREE_FAILURES_PER_ADDRESS, now)]
        .into_iter()
        .flatten()
        .max();
    if let Some(secs) = wait {
        tracing::info!(client = %f.client, retry_after_secs = secs, "sign-in refused: backing off this client");
        return Err(WebError::Throttled {
            retry_after_secs: secs,
            message: format!(
                "Too many failed sign-in attempts from your network. For your security, sign-in from here is \
                 paused; try again in {}.",
                human_secs(secs)
            ),
        });
    }
    let user = state.store.user_by_email(&email).await?;
    let hash = user.as_ref().and_then(|u| u.password_hash.clone());
    let ok = verify_password(hash, password).await;
    state.store.record_login_attempt(&pair_key, ok, now).await?;
    state.store.record_login_attempt(&addr_key, ok, now).await?;
    // The sign-in trail: which client address tried, and whether it got in.
    tracing::info!(client = %f.client, ok, "sign-in attempt");
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

/// "45 seconds", "3 minutes".
fn human_secs(secs: i64) -> String {
    if secs < 90 { format!("{secs} seconds") } else { format!("{} minutes", (secs + 59) / 60) }
}

/// Check `password` against an argon2 hash off the async threads. Without a hash (unknown
/// e-mail) a hash is still computed, so the answer takes as long either way.
async fn verify_password(hash: Option<String>, password: String) -> bool {
    tokio::task::spawn_blocking(move || {
        use argon2::password_hash::PasswordVerifier;
        use argon2::password_hash::phc::PasswordHash;
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
    use super::{pause_secs, safe_next, wait_for};

    #[test]
    fn the_pause_doubles_with_each_failure_up_to_fifteen_minutes() {
        assert_eq!(pause_secs(9, 10), None);
        let pauses: Vec<i64> = (10..17).map(|n| pause_secs(n, 10).unwrap()).collect();
        assert_eq!(pauses, [30, 60, 120, 240, 480, 900, 900]);
        assert_eq!(pause_secs(1000, 10), Some(900));
        // Counted from the latest failure.
        assert_eq!(wait_for((10, Some(1_000_000)), 10, 1_000_000), Some(30));
        assert_eq!(wait_for((10, Some(1_000_000)), 10, 1_029_500), Some(1));
        assert_eq!(wait_for((10, Some(1_000_000)), 10, 1_030_000), None);
        assert_eq!(wait_for((9, Some(1_000_000)), 10, 1_000_000), None);
    }

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
