//! The sign-in helper: open the site's sign-in (or sign-up) page in a fresh browser, type
//! the account's test-inbox address and password (real key and mouse events), submit, then,
//! as the site asks, type the one-time code it mailed or follow the verification link it
//! mailed, until the page no longer asks for anything; then save the browser's state as a
//! profile. Every step is reported; a site that does not end signed in is `LOGIN_FAILED`
//! with the steps and where the browser ended.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use capture_browser::session::{Session, SessionOptions, Target};
use capture_browser::{CaptureError, WaitUntil};
use capture_core::time::iso;
use serde::Deserialize;

use super::service::{self, FROM_LOGIN};
use super::types::{LoginOut, ValidLogin};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::inbox::types::WaitQuery;
use crate::state::AppState;

/// The whole helper's time in the browser.
const BUDGET: Duration = Duration::from_secs(180);
/// One browser operation.
const STEP: Duration = Duration::from_secs(20);
/// Rounds of "what does the page ask for now".
const ROUNDS: usize = 6;

/// What the page asks for; the fields found are marked `data-capture-login` (`email`,
/// `password`, `code`, `submit`) for the steps to aim at.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Ask {
    url: String,
    title: String,
    email: bool,
    passwords: u32,
    code: bool,
    submit: bool,
    /// The page says a mail was sent (check your inbox, verify your address…).
    check_mail: bool,
    /// A visible error message near the form (`role=alert`, `.error`).
    error: Option<String>,
}

/// Finds and marks the form's fields. Visible inputs only; the e-mail field by type, then
/// autocomplete, name or id; a one-time-code field by autocomplete, name, id or a short
/// numeric input.
const ASK_JS: &str = r#"(() => {
  const seen = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el); return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' && !el.disabled; };
  document.querySelectorAll('[data-capture-login]').forEach((el) => el.removeAttribute('data-capture-login'));
  const inputs = Array.from(document.querySelectorAll('input')).filter(seen);
  const attrs = (el) => [el.name, el.id, el.getAttribute('autocomplete'), el.getAttribute('placeholder'), el.getAttribute('aria-label')].join(' ').toLowerCase();
  const email = inputs.find((el) => el.type === 'email') || inputs.find((el) => ['text', ''].includes(el.type) && /e-?mail|user|login/.test(attrs(el)));
  const passwords = inputs.filter((el) => el.type === 'password');
  const code = inputs.find((el) => el !== email && (el.getAttribute('autocomplete') === 'one-time-code' || /\b(otp|code|token|pin)\b|one-time|verification/.test(attrs(el)) || (el.inputMode === 'numeric' && el.maxLength >= 4 && el.maxLength <= 8)));
  const field = email || passwords[0] || code;
  const form = field && field.form;
  const scope = form || document;
  const submit = Array.from(scope.querySelectorAll('button, input[type=submit]')).filter(seen).find((b) => (b.type || 'submit') === 'submit');
  if (email) email.setAttribute('data-capture-login', 'email');
  passwords.forEach((p, i) => p.setAttribute('data-capture-login', 'password' + i));
  if (code) code.setAttribute('data-capture-login', 'code');
  if (submit) submit.setAttribute('data-capture-login', 'submit');
  const text = (document.body ? document.body.innerText : '').toLowerCase();
  const checkMail = /check your (e-?mail|inbox)|we('ve| have)? (sent|e-?mailed)|verify your (e-?mail|address|account)|confirm your (e-?mail|address)|sent you (a|an) (link|e-?mail|code)/.test(text);
  const err = Array.from(document.querySelectorAll('[role=alert], .error, .errors, .alert-danger, .form-error')).filter(seen).map((e) => e.innerText.trim()).filter(Boolean)[0] || null;
  return { url: location.href, title: document.title, email: !!email, passwords: passwords.length, code: !!code, submit: !!submit, checkMail, error: err };
})()"#;

fn marked(what: &str) -> Target {
    Target::Selector(format!("[data-capture-login=\"{what}\"]"))
}

fn failed(message: String, steps: Vec<String>, final_url: String) -> Error {
    Error::LoginFailed { message, steps, final_url }
}

/// Where a node without a browser forwards a sign-in.
pub const INTERNAL_PATH: &str = "/internal/v1/profiles/login";

/// A forwarded sign-in: whose, and what.
#[derive(Debug, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Forwarded {
    user_id: String,
    login: ValidLogin,
}

/// Where a sign-in ran and what it answered.
pub enum Answer {
    /// On this node.
    Here(LoginOut),
    /// On a node with a browser (this one has none): its status and JSON body, whole.
    Forwarded(StatusCode, Bytes),
}

/// Sign in on this node when it runs a browser, else on a node that does (503 when none is
/// up): the one place that decides, for the API and the MCP tool alike.
pub async fn anywhere(state: &AppState, account: &Account, v: ValidLogin) -> Result<Answer> {
    if state.browser.pool.is_some() {
        return Ok(Answer::Here(login(state, account, v).await?));
    }
    let body =
        serde_json::to_vec(&Forwarded { user_id: account.user.id.clone(), login: v }).map_err(Error::internal)?;
    let unavailable = |why: String| Error::Refused(capture_core::ErrorCode::ServiceUnavailable, why);
    match crate::cluster::to_browser_node(state, INTERNAL_PATH, &body).await {
        Ok(Some((status, bytes))) => {
            Ok(Answer::Forwarded(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY), bytes.into()))
        }
        Ok(None) => Err(unavailable("no node with a browser is up (the worker role); retry shortly".into())),
        Err(e) => Err(unavailable(e.0)),
    }
}

impl Answer {
    /// The HTTP answer: the forwarded one passed on whole.
    pub fn into_response(self) -> Response {
        match self {
            Answer::Here(out) => axum::Json(out).into_response(),
            Answer::Forwarded(status, bytes) => {
                (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
            }
        }
    }

    /// The sign-in's outcome as this node's own: a forwarded refusal becomes the error it was
    /// (its code, message and, for `LOGIN_FAILED`, its steps and final URL).
    pub fn into_result(self) -> Result<LoginOut> {
        let (status, bytes) = match self {
            Answer::Here(out) => return Ok(out),
            Answer::Forwarded(status, bytes) => (status, bytes),
        };
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(Error::internal);
        }
        let body: crate::http::error::ErrorBody = serde_json::from_slice(&bytes).map_err(Error::internal)?;
        let details = body.details.unwrap_or_default();
        Err(match body.code {
            capture_core::ErrorCode::LoginFailed => Error::LoginFailed {
                message: body.error,
                steps: serde_json::from_value(details["steps"].clone()).unwrap_or_default(),
                final_url: details["finalUrl"].as_str().unwrap_or_default().to_owned(),
            },
            code => Error::Refused(code, body.error),
        })
    }
}

/// The forwarded sign-in, run here as the account it names.
pub async fn internal_handler(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (f, account) =
        match crate::cluster::accept(&state, &headers, &body, |f: &Forwarded| (f.user_id.as_str(), None)).await {
            Ok(accepted) => accepted,
            Err(refused) => return refused,
        };
    match login(&state, &account, f.login).await {
        Ok(o) => axum::Json(o).into_response(),
        Err(e) => crate::http::ApiError::from(e).into_response(),
    }
}

/// Sign in with the account's inbox and save the result as a profile.
pub async fn login(state: &AppState, account: &Account, v: ValidLogin) -> Result<LoginOut> {
    let Some(pool) = state.browser.pool.clone() else {
        return Err(Error::Refused(
            capture_core::ErrorCode::ServiceUnavailable,
            "no browser on this node (no worker role)".into(),
        ));
    };
    let inbox = crate::inbox::service::ensure(state, account).await?;
    let email = v.email.clone().unwrap_or_else(|| inbox.address.clone());
    let password = match &v.password {
        Some(p) => p.clone(),
        None => crate::inbox::service::password(state, &inbox)?,
    };
    let profile_name = match &v.profile {
        Some(p) => p.clone(),
        None => {
            url::Url::parse(&v.url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| "site".into())
        }
    };
    let asked = capture_core::options::CaptureOptions {
        url: Some(v.url.clone()),
        proxy: v.proxy.clone(),
        ..Default::default()
    };
    let proxy = crate::proxies::service::for_request(state, account, &asked).await?;
    let session = pool
        .open_session(SessionOptions {
            deadline: BUDGET,
            slot_timeout: Duration::from_secs(30),
            proxy,
            ..SessionOptions::default()
        })
        .await
        .map_err(|e| failed(format!("the browser could not be opened: {e}"), vec![], v.url.clone()))?;
    let mut steps = Vec::new();
    let outcome = drive(state, account, &session, &v, &email, &password, &mut steps).await;
    let result = match outcome {
        Ok(ask) => match session.storage_state(STEP).await {
            Ok(s) => {
                service::save(state, &account.user.id, &profile_name, &s, FROM_LOGIN, "profile").await.map(|profile| {
                    steps.push(format!(
                        "saved {} cookies and {} origins' storage in the profile '{}'",
                        profile.summary.cookies,
                        profile.summary.origins.len(),
                        profile.name
                    ));
                    LoginOut {
                        profile,
                        email: email.clone(),
                        final_url: ask.url,
                        title: ask.title,
                        steps: steps.clone(),
                    }
                })
            }
            Err(e) => Err(failed(format!("the browser's state could not be read: {e}"), steps.clone(), ask.url)),
        },
        Err(e) => Err(e),
    };
    session.close().await;
    result
}

async fn ask(session: &Session) -> std::result::Result<Ask, CaptureError> {
    let v = session.evaluate(ASK_JS, false, STEP).await?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// Let the page react (a navigation, a script) before looking again.
async fn settle(session: &Session) {
    let _ = session.wait(Duration::from_millis(400)).await;
    let _ = session.evaluate("new Promise((r) => { if (document.readyState === 'complete') r(); else addEventListener('load', () => r(), { once: true }); setTimeout(r, 5000); })", true, STEP).await;
}

async fn submit(
    session: &Session,
    a: &Ask,
    last: &str,
    steps: &mut Vec<String>,
) -> std::result::Result<(), CaptureError> {
    match a.submit {
        true => {
            session.click(marked("submit"), STEP).await?;
            steps.push("clicked the form's submit button".into());
        }
        false => {
            session.click(marked(last), STEP).await?;
            session.press("Enter", STEP).await?;
            steps.push("pressed Enter in the form".into());
        }
    }
    settle(session).await;
    Ok(())
}

async fn mail(
    state: &AppState,
    account: &Account,
    since: i64,
    v: &ValidLogin,
) -> Result<Option<crate::inbox::types::MessageSummary>> {
    let ms = v.mail_timeout.as_millis() as u64;
    let q = WaitQuery { since: Some(iso(since)), from: None, timeout_ms: Some(ms.to_string()) };
    let got = crate::inbox::service::wait(state, account, &q, ms, ms).await?;
    Ok(got.message.map(|m| m.summary))
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    state: &AppState,
    account: &Account,
    session: &Session,
    v: &ValidLogin,
    email: &str,
    password: &str,
    steps: &mut Vec<String>,
) -> Result<Ask> {
    let browser_err = |e: CaptureError, steps: &Vec<String>, at: &str| {
        failed(format!("the browser failed: {e}"), steps.clone(), at.to_owned())
    };
    let nav = session
        .goto(&v.url, WaitUntil::Load, STEP)
        .await
        .map_err(|e| failed(format!("the page could not be opened: {e}"), vec![], v.url.clone()))?;
    steps.push(format!("opened {}", nav.final_url));
    // Mail the site sends from now on answers this attempt (a second earlier: clocks).
    let since = state.clock.now_ms() - 1000;
    let mut mailed_from = since;
    let mut typed_credentials = false;
    let mut a = ask(session).await.map_err(|e| browser_err(e, steps, &v.url))?;
    for _ in 0..ROUNDS {
        let at = a.url.clone();
        if a.code {
            let Some(m) = mail(state, account, mailed_from, v).await? else {
                return Err(failed(
                    format!(
                        "the page asks for a code, and no mail reached {email} within {} s",
                        v.mail_timeout.as_secs()
                    ),
                    steps.clone(),
                    at,
                ));
            };
            mailed_from = state.clock.now_ms() - 1000;
            let Some(code) = m.code else {
                return Err(failed(
                    format!("the page asks for a code, and the mail '{}' holds none", m.subject.unwrap_or_default()),
                    steps.clone(),
                    at,
                ));
            };
            session.fill(marked("code"), &code, STEP).await.map_err(|e| browser_err(e, steps, &at))?;
            steps.push(format!("typed the one-time code from the mail '{}'", m.subject.unwrap_or_default()));
            submit(session, &a, "code", steps).await.map_err(|e| browser_err(e, steps, &at))?;
        } else if a.email || a.passwords > 0 {
            if typed_credentials {
                let why = a.error.clone().map(|e| format!(": the page says '{e}'")).unwrap_or_default();
                return Err(failed(
                    format!("the site still shows its sign-in form after the credentials were submitted{why}"),
                    steps.clone(),
                    at,
                ));
            }
            if a.email {
                session.fill(marked("email"), email, STEP).await.map_err(|e| browser_err(e, steps, &at))?;
                steps.push(format!("typed {email} in the e-mail field"));
            }
            for i in 0..a.passwords.min(3) {
                session
                    .fill(marked(&format!("password{i}")), password, STEP)
                    .await
                    .map_err(|e| browser_err(e, steps, &at))?;
            }
            if a.passwords > 0 {
                steps.push(format!("typed the password in {} password field(s)", a.passwords.min(3)));
            }
            typed_credentials = true;
            let last = if a.passwords > 0 { "password0".to_owned() } else { "email".to_owned() };
            submit(session, &a, &last, steps).await.map_err(|e| browser_err(e, steps, &at))?;
        } else if a.check_mail {
            let Some(m) = mail(state, account, mailed_from, v).await? else {
                return Err(failed(
                    format!(
                        "the page says a mail was sent, and none reached {email} within {} s",
                        v.mail_timeout.as_secs()
                    ),
                    steps.clone(),
                    at,
                ));
            };
            mailed_from = state.clock.now_ms() - 1000;
            let Some(link) = m.verification_link else {
                return Err(failed(
                    format!("the mail '{}' holds no verification link", m.subject.unwrap_or_default()),
                    steps.clone(),
                    at,
                ));
            };
            session.goto(&link, WaitUntil::Load, STEP).await.map_err(|e| browser_err(e, steps, &at))?;
            steps.push(format!("followed the verification link from the mail '{}'", m.subject.unwrap_or_default()));
            settle(session).await;
        } else {
            if !typed_credentials {
                return Err(failed(
                    "the page shows no sign-in form (no e-mail, password or code field)".into(),
                    steps.clone(),
                    at,
                ));
            }
            steps.push(format!("signed in: {} ({})", a.url, a.title));
            return Ok(a);
        }
        a = ask(session).await.map_err(|e| browser_err(e, steps, &at))?;
    }
    Err(failed(format!("the site still asked for something after {ROUNDS} rounds"), steps.clone(), a.url))
}
