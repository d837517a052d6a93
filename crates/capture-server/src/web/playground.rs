//! The playground: a form with the URL and the common options that creates a real job with
//! the account's quota (the same service function as `POST /v1/screenshot`), then sends
//! the visitor to the job's page, which follows its progress and shows the file. The form's
//! request is shown as `curl`, Python and Node code.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value};

use super::base::forms::{Form, Signed, SignedForm, account};
use super::base::layout::{Chrome, Nav, WebResult, page, see_other, sentence};
use super::base::session::WebSession;
use super::snippets::{Snippet, request_body, snippets};
use crate::http::ApiError;
use crate::screenshots::service::{self as screenshots, NewJob};
use crate::state::AppState;
use capture_core::options::ScreenshotIn;

/// The form's fields as typed (shown again after an error).
#[derive(Debug, Clone)]
struct Values {
    url: String,
    width: String,
    height: String,
    full_page: bool,
    /// `png`, `jpeg`, `webp` or `pdf`.
    format: String,
    dark_mode: bool,
    cookie_banners: bool,
    wait_until: String,
    delay: String,
    scale: String,
}

impl Default for Values {
    fn default() -> Self {
        Values {
            url: String::new(),
            width: "1280".into(),
            height: "800".into(),
            full_page: false,
            format: "png".into(),
            dark_mode: false,
            cookie_banners: true,
            wait_until: "networkidle".into(),
            delay: "0".into(),
            scale: "1".into(),
        }
    }
}

impl Values {
    fn from_form(f: &Form) -> Self {
        let on = |k: &str| matches!(f.text(k), "on" | "true" | "1");
        Values {
            url: f.text("url").to_string(),
            width: f.text("width").to_string(),
            height: f.text("height").to_string(),
            full_page: on("fullPage"),
            format: f.text("format").to_string(),
            dark_mode: on("darkMode"),
            cookie_banners: on("cookieBanners"),
            wait_until: f.text("waitUntil").to_string(),
            delay: f.text("delay").to_string(),
            scale: f.text("deviceScaleFactor").to_string(),
        }
    }

    /// The `POST /v1/screenshot` body these fields stand for (empty fields left out).
    fn body(&self) -> Map<String, Value> {
        let mut fields: Vec<(String, String)> = vec![("url".into(), self.url.clone())];
        for (k, v) in [
            ("width", &self.width),
            ("height", &self.height),
            ("waitUntil", &self.wait_until),
            ("delay", &self.delay),
            ("deviceScaleFactor", &self.scale),
        ] {
            if !v.is_empty() {
                fields.push((k.into(), v.clone()));
            }
        }
        match self.format.as_str() {
            "pdf" => fields.push(("pdf".into(), "true".into())),
            "" => {}
            f => fields.push(("format".into(), f.into())),
        }
        fields.push(("fullPage".into(), self.full_page.to_string()));
        fields.push(("darkMode".into(), self.dark_mode.to_string()));
        fields.push(("cookieConsent".into(), if self.cookie_banners { "auto" } else { "none" }.into()));
        crate::screenshots::types::form_to_json(&fields)
    }
}

/// A choice of a `<select>`.
struct Choice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

const FORMATS: &[(&str, &str)] =
    &[("png", "PNG image"), ("jpeg", "JPEG image"), ("webp", "WebP image"), ("pdf", "PDF document")];
const WAITS: &[(&str, &str)] = &[
    ("networkidle", "The network is idle"),
    ("load", "The load event"),
    ("domcontentloaded", "The DOM is ready"),
    ("none", "Nothing (capture at once)"),
];

fn choices(all: &[(&'static str, &'static str)], current: &str) -> Vec<Choice> {
    all.iter().map(|(value, label)| Choice { value, label, selected: *value == current }).collect()
}

/// `templates/web/playground.html`
#[derive(Template)]
#[template(path = "web/playground.html")]
struct PlaygroundPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    v: Values,
    formats: Vec<Choice>,
    waits: Vec<Choice>,
    error: Option<String>,
    /// The request as code (for the example URL when the form is empty).
    snippets: Vec<Snippet>,
    remaining: Option<i64>,
}

async fn render(
    state: &AppState,
    s: &WebSession,
    status: StatusCode,
    v: Values,
    error: Option<String>,
) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let balance = crate::account::service::balance_of(&acc);
    let mut example = v.clone();
    if example.url.is_empty() {
        example.url = "https://example.com/".into();
    }
    let code = match crate::http::validated::validate::<ScreenshotIn>(&example.body()) {
        Ok(o) => snippets(&state.base_url, &request_body(&o)),
        Err(_) => snippets(&state.base_url, &example.body()),
    };
    let p = PlaygroundPage {
        chrome: Chrome::signed("Playground", s, Nav::Playground),
        csrf: &s.csrf,
        formats: choices(FORMATS, &v.format),
        waits: choices(WAITS, &v.wait_until),
        v,
        error,
        snippets: code,
        remaining: (!balance.usage.unlimited).then(|| balance.usage.remaining.unwrap_or(0)),
    };
    Ok(page(status, &p, None))
}

/// `GET /dashboard/playground`
pub async fn show(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    render(&state, &s, StatusCode::OK, Values::default(), None).await
}

/// `POST /dashboard/playground`: create the job, then go to its page (303).
pub async fn create(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let v = Values::from_form(&f.form);
    let opts = match crate::http::validated::validate::<ScreenshotIn>(&v.body()) {
        Ok(o) => o,
        Err(e) => {
            let msg = sentence(&format!("{} {}", field_label(&e.field), e.reason));
            return render(&state, s, StatusCode::BAD_REQUEST, v, Some(msg)).await;
        }
    };
    let acc = account(&state, s).await?;
    match screenshots::create(&state, &acc, NewJob::Capture { opts: &opts, label: None, html_blob: None }, None).await {
        Ok(created) => Ok(see_other(&format!("/dashboard/screenshots/{}", created.job.id), None)),
        Err(e) => {
            let e = ApiError::from(e);
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            if status.is_server_error() {
                return Err(e.into());
            }
            render(&state, s, status, v, Some(sentence(&e.message))).await
        }
    }
}

/// The form's label of a contract field, for error messages.
fn field_label(field: &str) -> &str {
    match field {
        "url" => "The URL",
        "width" => "The width",
        "height" => "The height",
        "format" | "pdf" => "The format",
        "waitUntil" => "Wait until",
        "delay" => "The delay",
        "deviceScaleFactor" => "The device scale",
        "fullPage" => "Full page",
        "darkMode" => "Dark mode",
        "cookieConsent" => "Cookie banners",
        other => other,
    }
}
