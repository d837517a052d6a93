//! What every page shares: the layout's [`Chrome`] (the template is
//! `templates/layout.html`), HTML responses with the website's security headers, and the
//! website's error type (rendered as an HTML page, never as the API's JSON body).

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use capture_core::time::iso;

use askama::Template;

use super::session::WebSession;
use crate::admin::AdminError;
use crate::http::ApiError;

/// The navigation entry a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Dashboard,
    Webhooks,
    Audits,
    Ads,
    Settings,
    Playground,
    Screenshots,
    Monitors,
    Usage,
    None,
}

/// What the shared layout (`templates/layout.html`) shows around a page: its title, the
/// signed-in visitor (navigation and "Sign out") and the current navigation entry.
#[derive(Debug, Clone, Copy)]
pub struct Chrome<'a> {
    pub title: &'a str,
    pub session: Option<&'a WebSession>,
    pub nav: Nav,
}

impl<'a> Chrome<'a> {
    /// A page for a signed-in visitor under `nav`.
    pub fn signed(title: &'a str, session: &'a WebSession, nav: Nav) -> Self {
        Chrome { title, session: Some(session), nav }
    }

    /// A page outside the signed-in part of the site.
    pub fn public(title: &'a str) -> Self {
        Chrome { title, session: None, nav: Nav::None }
    }
}

impl Nav {
    /// The entry's name, as the layout compares it.
    pub fn name(&self) -> &'static str {
        match self {
            Nav::Dashboard => "dashboard",
            Nav::Webhooks => "webhooks",
            Nav::Audits => "audits",
            Nav::Ads => "ads",
            Nav::Settings => "settings",
            Nav::Playground => "playground",
            Nav::Screenshots => "screenshots",
            Nav::Monitors => "monitors",
            Nav::Usage => "usage",
            Nav::None => "",
        }
    }
}

/// Render a page template as an HTML response with the website's headers (see [`html`]).
pub fn page(status: StatusCode, template: &impl Template, img_origin: Option<&str>) -> Response {
    match template.render() {
        Ok(doc) => html(status, doc, img_origin),
        Err(e) => {
            tracing::error!(error = %e, "rendering a page failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

/// A service message as a sentence: capital first letter, final full stop.
pub fn sentence(s: &str) -> String {
    let mut c = s.chars();
    let mut out: String = match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => return String::new(),
    };
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

pub use crate::html::origin;

/// `2026-05-01`
pub fn date(ms: i64) -> String {
    iso(ms)[..10].to_string()
}

/// The date and minute in UTC, as shown in a `<time>`: `2026-05-01 14:03 UTC`.
pub fn minute(ms: i64) -> String {
    let t = iso(ms);
    format!("{} {} UTC", &t[..10], &t[11..16])
}

/// An HTML response with the website's headers: never cached, never framed, scripts and
/// styles only from this server. `img_origin` adds the origin of thumbnails.
pub fn html(status: StatusCode, doc: String, img_origin: Option<&str>) -> Response {
    let mut r = (status, doc).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    let img = img_origin.map(|o| format!(" {o}")).unwrap_or_default();
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:{img}; \
         media-src 'self'{img}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}

/// 303 See Other to `to` (after a POST), optionally setting a cookie.
pub fn see_other(to: &str, cookie: Option<String>) -> Response {
    let mut r = Redirect::to(to).into_response();
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().append(header::SET_COOKIE, c);
    }
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// What went wrong in a website handler; answered as an HTML page (or a redirect to sign in).
#[derive(Debug)]
pub enum WebError {
    /// Not signed in: go to the sign-in page, coming back to `next` afterwards.
    SignIn { next: Option<String> },
    /// The form's CSRF token is missing or wrong.
    Csrf,
    /// Too many attempts (sign-in, sign-up): 429 with `Retry-After` and what to do.
    Throttled { retry_after_secs: i64, message: String },
    /// Any other failure: the status and a message safe to show.
    Page(StatusCode, String),
}

impl WebError {
    /// 404 that never reveals whether the thing exists for someone else.
    pub fn not_found() -> Self {
        WebError::Page(StatusCode::NOT_FOUND, "There is nothing here, or it belongs to another account.".into())
    }

    /// 400 with a message.
    pub fn invalid(msg: impl Into<String>) -> Self {
        WebError::Page(StatusCode::BAD_REQUEST, msg.into())
    }
}

impl From<ApiError> for WebError {
    fn from(e: ApiError) -> Self {
        let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status == StatusCode::NOT_FOUND {
            return WebError::not_found();
        }
        // ApiError::internal has already logged the cause and carries an opaque message.
        WebError::Page(status, e.message)
    }
}

impl From<crate::error::Error> for WebError {
    fn from(e: crate::error::Error) -> Self {
        ApiError::from(e).into()
    }
}

impl From<capture_store::StoreError> for WebError {
    fn from(e: capture_store::StoreError) -> Self {
        ApiError::from(e).into()
    }
}

impl From<AdminError> for WebError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Invalid(m) => WebError::invalid(m),
            AdminError::NoSuchUser(_) => WebError::not_found(),
            AdminError::Store(e) => e.into(),
        }
    }
}

/// Result alias for website handlers.
pub type WebResult<T> = Result<T, WebError>;

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let (status, title, text, extra): (StatusCode, &str, String, Option<(HeaderName, String)>) = match self {
            WebError::SignIn { next } => {
                let to = match next {
                    Some(n) => format!(
                        "/login?next={}",
                        url::form_urlencoded::byte_serialize(n.as_bytes()).collect::<String>()
                    ),
                    None => "/login".into(),
                };
                return see_other(&to, None);
            }
            WebError::Csrf => (
                StatusCode::FORBIDDEN,
                "Form expired",
                "This form has expired or did not come from this site. Go back, reload the page and try again.".into(),
                None,
            ),
            WebError::Throttled { retry_after_secs, message } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                message,
                Some((header::RETRY_AFTER, retry_after_secs.to_string())),
            ),
            WebError::Page(status, text) => {
                let title = match status.as_u16() {
                    404 => "Not found",
                    400 | 413 | 415 => "Something is wrong with the request",
                    429 => "Too many requests",
                    s if s >= 500 => "Something went wrong",
                    _ => "Cannot do that",
                };
                (status, title, text, None)
            }
        };
        let mut r = page(status, &ErrorPage { chrome: Chrome::public(title), text: &text }, None);
        if let Some((k, v)) = extra
            && let Ok(v) = HeaderValue::from_str(&v)
        {
            r.headers_mut().insert(k, v);
        }
        r
    }
}

/// The page of a [`WebError`].
#[derive(Template)]
#[template(path = "web/error.html")]
struct ErrorPage<'a> {
    chrome: Chrome<'a>,
    text: &'a str,
}

/// `templates/web/secret.html`: a secret shown once (a new API key, a webhook signing
/// secret), with the way back.
#[derive(Template)]
#[template(path = "web/secret.html")]
pub struct SecretPage<'a> {
    pub chrome: Chrome<'a>,
    pub intro: &'a str,
    pub field_id: &'a str,
    pub field_label: &'a str,
    pub secret: &'a str,
    pub back_href: &'a str,
    pub back_label: &'a str,
}
