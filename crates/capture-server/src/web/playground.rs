//! The playground: a form with the URL and the common options, and under "More options" an
//! input for every other option of the request (generated from its schema, see
//! `more_options`), that creates a real job with the account's quota (the same service
//! function as `POST /v1/screenshot`), then sends the visitor to the job's page, which follows
//! its progress and shows the file. The form's request is shown as `curl`, Python and Node
//! code.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value};

use super::base::forms::{Form, Signed, SignedForm, account};
use super::base::layout::{Chrome, Nav, WebResult, page, see_other, sentence};
use super::base::session::WebSession;
use super::more_options::{self, Input, Kind, Spec};
use super::snippets::{Snippet, request_body, snippets};
use crate::http::ApiError;
use crate::screenshots::service::{self as screenshots, NewJob};
use crate::state::AppState;
use capture_core::options::ScreenshotIn;

/// The request's options the hand-laid form shows, each with the name of its input there
/// (`pdf` is a choice of the format, `cookieConsent` the cookie-banners box); every other
/// option gets a generated input under "More options".
const SHOWN: &[(&str, &str)] = &[
    ("url", "url"),
    ("width", "width"),
    ("height", "height"),
    ("deviceScaleFactor", "deviceScaleFactor"),
    ("fullPage", "fullPage"),
    ("format", "format"),
    ("pdf", "format"),
    ("darkMode", "darkMode"),
    ("cookieConsent", "cookieBanners"),
    ("waitUntil", "waitUntil"),
    ("delay", "delay"),
];

/// The inputs of "More options", from the schema `form_to_json` reads.
fn more_specs() -> &'static [Spec] {
    static SPECS: std::sync::OnceLock<Vec<Spec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(|| {
        let shown: Vec<&str> = SHOWN.iter().map(|(option, _)| *option).collect();
        more_options::specs(&crate::schema::tool_input::<ScreenshotIn>(), &shown)
    })
}

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
    /// The inputs of "More options".
    more: Vec<Input>,
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
            more: more_options::fresh(more_specs()),
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
            more: more_options::from_form(more_specs(), f),
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
        fields.extend(more_options::fields(&self.more));
        crate::screenshots::types::form_to_json(&fields)
    }
}

/// A choice of a `<select>`.
struct Choice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

const FORMATS: &[(&str, &str)] = &[
    ("png", "PNG image"),
    ("jpeg", "JPEG image"),
    ("webp", "WebP image"),
    ("pdf", "PDF document"),
    ("mp4", "MP4 scrolling video (5 s)"),
    ("webm", "WebM scrolling video (5 s)"),
    ("gif", "GIF scrolling video (5 s)"),
    ("markdown", "Markdown (the page as text)"),
    ("text", "Plain text"),
    ("html", "Rendered HTML (a download)"),
];
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
    /// "More options" starts open when something in it is set.
    more_open: bool,
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
        more_open: !more_options::fields(&v.more).is_empty(),
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
            let msg = match field_label(&e.field) {
                Some(label) => sentence(&format!("{label} {}", e.reason)),
                // A "More options" input is labelled with the option's name: the API's words.
                None => sentence(&ApiError::validation(e).message),
            };
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

/// The main form's label of a contract field, for error messages (`None` for the others).
fn field_label(field: &str) -> Option<&'static str> {
    Some(match field {
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
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option of the request has an input: in the hand-laid form (which has an input by
    /// that name, and a label for its errors) or generated under "More options", never both,
    /// so an option added later cannot be missed.
    #[test]
    fn every_option_is_in_the_main_form_or_in_more_options() {
        let template = include_str!("../../templates/web/playground.html");
        let more: Vec<&str> = more_specs().iter().map(|s| s.name.as_str()).collect();
        for option in ScreenshotIn::field_names() {
            match SHOWN.iter().find(|(o, _)| o == option) {
                Some((_, input)) => {
                    assert!(template.contains(&format!("name=\"{input}\"")), "{option}: no input {input}");
                    assert!(field_label(option).is_some(), "{option}: no label for its errors");
                    assert!(!more.contains(option), "{option} is shown twice");
                }
                None => assert!(more.contains(option), "{option} has no input"),
            }
        }
        // Every kind of input is in use on the live page, each for the schema type it stands for.
        let kind = |name: &str| more_specs().iter().find(|s| s.name == name).map(|s| s.kind);
        for (name, k) in [
            ("waitFor", Kind::Text),
            ("timeoutMs", Kind::Number),
            ("quality", Kind::Number),
            ("omitBackground", Kind::Checkbox),
            ("mediaType", Kind::Select),
            ("hideSelectors", Kind::Json),
            ("clip", Kind::Json),
        ] {
            assert_eq!(kind(name), Some(k), "{name}");
        }
        assert!(more.windows(2).all(|w| w[0] < w[1]), "sorted by name: {more:?}");
    }

    #[test]
    fn more_options_go_into_the_request_and_survive_a_rerender() {
        let form = Form(vec![
            ("url".into(), "https://example.com/".into()),
            ("waitFor".into(), "body".into()),
            ("timeoutMs".into(), "5000".into()),
            ("clickBefore".into(), String::new()),
        ]);
        let v = Values::from_form(&form);
        let body = v.body();
        assert_eq!((&body["waitFor"], &body["timeoutMs"]), (&Value::from("body"), &Value::from(5000)));
        assert!(!body.contains_key("clickBefore") && !body.contains_key("preScreenshotJs"), "empty ones are left out");
        let typed: Vec<(&str, &str)> = v
            .more
            .iter()
            .map(|i| (i.spec.name.as_str(), i.value.as_str()))
            .filter(|(_, value)| !value.is_empty())
            .collect();
        assert_eq!(typed, [("timeoutMs", "5000"), ("waitFor", "body")]);
        assert_eq!(v.more.len(), more_specs().len(), "every generated input is there, empty or not");
    }
}
