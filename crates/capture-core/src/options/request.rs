//! The request's shape (`ScreenshotIn`, the body of `POST /v1/screenshot`) as clients send it,
//! and the names of its fields.

use serde::{Deserialize, Serialize};

use super::blocking::{CookieConsent, ResourceKind};
use super::output::{ImageFormat, ScrollIn};
use super::page::{Clip, Geolocation, MediaType, WaitUntil};
use super::pdf::PdfOptionsIn;
use super::storage::StorageTarget;
#[cfg(feature = "schema")]
use super::{bounds, defaults};
use crate::credentials::{CookieIn, HttpAuth};

// This one type is the request's shape everywhere: the server deserialises and checks it
// (`ScreenshotIn::into_options`), derives the OpenAPI document and the MCP tool schema from it
// (feature `schema`), and the CLI builds its requests with it. Its doc comment below is the
// schema's published description.
/// What to capture and how: the body of `POST /v1/screenshot` (also the fields of an HTML
/// upload, and the `take_screenshot` tool's input).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "schema", schemars(rename = "ScreenshotRequest"))]
pub struct ScreenshotIn {
    /// The page to capture (http or https).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String", required, url, length(max = bounds::URL_MAX), extend("examples" = ["https://example.com"])))]
    pub url: Option<String>,
    /// Viewport width in CSS pixels.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::WIDTH.0, max = bounds::WIDTH.1), extend("default" = defaults::WIDTH)))]
    pub width: Option<u32>,
    /// Viewport height in CSS pixels.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::HEIGHT.0, max = bounds::HEIGHT.1), extend("default" = defaults::HEIGHT)))]
    pub height: Option<u32>,
    /// Capture the whole scrollable page (scrolls first so lazy content loads), up to the
    /// service's full-page height.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub full_page: Option<bool>,
    /// Image format (png, jpeg, webp), a video of the page scrolling (mp4, webm, gif; see
    /// scroll), or the page as text: markdown (GFM with YAML front matter), text or html (the
    /// rendered DOM, scripts removed, URLs absolute).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = defaults::FORMAT)))]
    pub format: Option<ImageFormat>,
    /// The page as text (`format` markdown, text or html): keep the article only (Mozilla's Readability), without navigation, footers,
    /// sidebars and comments; the front matter's title is the article's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub main_content: Option<bool>,
    /// The page as text: keep only the elements these CSS selectors match (at most 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_selectors: Option<Vec<String>>,
    /// The page as text: leave out the elements these CSS selectors match (at most 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_selectors: Option<Vec<String>>,
    /// The page as text beside the job's file, from the same page load (charged once): each
    /// form's file is linked from the job's contentUrls (markdown, text, html).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<super::ContentFormat>>,
    /// The page as text: at most this many characters of each form (the front matter aside),
    /// cut after the last whole line that fits; metadata.content.nextFrom says where the rest
    /// starts.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = super::content::MAX_CHARS_MAX)))]
    pub max_chars: Option<u64>,
    /// The page as text: start at this character (a previous job's metadata.content.nextFrom).
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = super::content::MAX_CHARS_MAX)))]
    pub from: Option<u64>,
    /// Structured data read from the page into the job's data: rules by CSS selector
    /// (`{"rules": {"price": {"selector": ".price", "type": "number"}}}`), or a prompt for the
    /// operator's language model; schema (JSON Schema) validates the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extract: Option<super::ExtractIn>,
    /// Produce a PDF instead of an image (the result is a link).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub pdf: Option<bool>,
    /// Milliseconds to wait after the page loads.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = bounds::DELAY_MAX), extend("default" = defaults::DELAY)))]
    pub delay: Option<u64>,
    /// Send prefers-color-scheme: dark.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub dark_mode: Option<bool>,
    /// What to do with a cookie-consent pop-up: `auto` opts out where a rule of DuckDuckGo's
    /// autoconsent knows how (200+ consent platforms) and hides the banner otherwise; `reject`
    /// only opts out; `accept` opts in; `hide` hides it unanswered; `none` leaves it. What
    /// happened is the job's `metadata.consent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = CookieConsent::Auto)))]
    pub cookie_consent: Option<CookieConsent>,
    /// CSS selector to wait for before capturing (best effort).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub wait_for: Option<String>,
    /// When navigation counts as finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = defaults::WAIT_UNTIL)))]
    pub wait_until: Option<WaitUntil>,
    /// Timeout for navigation, waitFor and clickBefore, in milliseconds.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::TIMEOUT.0, max = bounds::TIMEOUT.1), extend("default" = defaults::TIMEOUT_MS)))]
    pub timeout_ms: Option<u64>,
    /// JavaScript evaluated in the page right before the capture (its length in bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::JS_MAX)))]
    pub pre_screenshot_js: Option<String>,
    /// Device pixel ratio (2 for retina-sharp images).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::DSF.0, max = bounds::DSF.1), extend("default" = defaults::DEVICE_SCALE_FACTOR)))]
    pub device_scale_factor: Option<f64>,
    /// CSS selector to click before waiting and capturing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub click_before: Option<String>,
    /// CSS selector of the one element to capture: its box, scrolled into view, waited for up
    /// to timeoutMs. The image is the element's size × deviceScaleFactor. A missing element
    /// fails the job, and its action is given back. Not with clip or pdf.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub selector: Option<String>,
    /// A region to capture, in CSS pixels: of the viewport, or with fullPage of the whole
    /// page. The image is its size × deviceScaleFactor. Not with selector or pdf.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip: Option<Clip>,
    /// CSS selectors of elements hidden (visibility: hidden) before the capture: cookie
    /// banners, chat widgets, ads. Up to 50.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::HIDE_SELECTORS_MAX), inner(length(min = 1, max = bounds::SELECTOR_MAX))))]
    pub hide_selectors: Option<Vec<String>>,
    /// A transparent background where the page paints none (PNG and WebP).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub omit_background: Option<bool>,
    /// Image quality of a JPEG or WebP, 1-100.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::QUALITY.0, max = bounds::QUALITY.1), extend("default" = defaults::QUALITY)))]
    pub quality: Option<u8>,
    /// Width of the returned image in pixels; the height keeps the aspect ratio. The page is
    /// rendered at that size (sharp, not resampled). Not with pdf.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::IMAGE_WIDTH.0, max = bounds::IMAGE_WIDTH.1)))]
    pub image_width: Option<u32>,
    /// The IANA time zone the page sees (Date, Intl), e.g. Europe/Berlin.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["Europe/Berlin"])))]
    pub timezone: Option<String>,
    /// The BCP 47 locale the page sees: navigator.language, Intl and the Accept-Language
    /// header, e.g. de-DE.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["de-DE"])))]
    pub locale: Option<String>,
    /// The position navigator.geolocation reports, with the permission granted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Geolocation>,
    /// Send prefers-reduced-motion: reduce (pages that honour it stop their animations).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub reduced_motion: Option<bool>,
    /// The CSS media type the page is rendered for: screen, or print (its print styles).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = MediaType::Screen)))]
    pub media_type: Option<MediaType>,
    /// Fail the job when the main document answers 4xx or 5xx (its status is in the error).
    /// The page ran, so the action is charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub fail_on_http_error: Option<bool>,
    /// Fail the job when the page's visible text contains any of these strings (exact,
    /// case-sensitive; up to 10). The action is charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::CONTENT_MATCHES_MAX), inner(length(min = 1, max = bounds::CONTENT_MATCH_MAX))))]
    pub fail_if_content_contains: Option<Vec<String>>,
    /// Fail the job when the page's visible text lacks any of these strings (exact,
    /// case-sensitive; up to 10). The action is charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::CONTENT_MATCHES_MAX), inner(length(min = 1, max = bounds::CONTENT_MATCH_MAX))))]
    pub fail_if_content_missing: Option<Vec<String>>,
    /// A device preset (iphone-15, pixel-8, ipad-mini, desktop-1280, …; GET /v1/devices
    /// lists them): viewport, pixel ratio, mobile, touch and user agent in one word. An
    /// explicit width, height, deviceScaleFactor or userAgent overrides its value.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["iphone-15"])))]
    pub device: Option<String>,
    /// The User-Agent the page and its requests see (default: the browser's, or the device's).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::USER_AGENT_MAX)))]
    pub user_agent: Option<String>,
    /// How the PDF is printed (with pdf: true): paper, margins, scale, pages, header and
    /// footer, backgrounds, or the whole page on one sheet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdf_options: Option<PdfOptionsIn>,
    /// URL patterns whose requests are refused, `*` matching anything (`*://*.doubleclick.net/*`,
    /// `*/ads/*`, `*.mp4`). Up to 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::BLOCK_REQUESTS_MAX), inner(length(min = 1, max = bounds::URL_MAX))))]
    pub block_requests: Option<Vec<String>>,
    /// Kinds of requests refused: image, media, font, stylesheet, script, xhr, fetch,
    /// websocket, other. The page itself always loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_resources: Option<Vec<ResourceKind>>,
    /// Refuse requests to ad servers (EasyList, matched by Brave's adblock engine) and hide
    /// the containers they leave (EasyList's element rules for the page).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_ads: Option<bool>,
    /// Refuse requests to trackers and analytics (EasyPrivacy, matched by the same engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_trackers: Option<bool>,
    /// Refuse requests to chat widgets (Intercom, Drift, Zendesk, Crisp, tawk.to, …) and hide
    /// their launchers and frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_chats: Option<bool>,
    /// Remove newsletter, app and notification pop-ups, floating video players, back-to-top
    /// buttons and chat launchers (Capture's annoyances list, in EasyList syntax); turns
    /// `hidePopups` on unless it is set to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_annoyances: Option<bool>,
    /// Hide any fixed or sticky element still covering more than a quarter of the viewport
    /// (newsletter and app pop-ups, their backdrops) and undo the page's scroll lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub hide_popups: Option<bool>,
    /// Extra HTTP request headers (up to 50; no Host or hop-by-hop headers), sent with every
    /// request the page makes. Credentials: kept encrypted until the job runs and never
    /// shown again; the job lists their names under credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = [{"X-Api-Key": "…"}])))]
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// Cookies set before the page loads (up to 50; the page's own host unless a domain is
    /// given). Credentials, like headers: the job lists their names, never their values.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::credentials::bounds::COOKIES_MAX)))]
    pub cookies: Option<Vec<CookieIn>>,
    /// HTTP Basic credentials, answered only to the page's own origin when it asks.
    /// Kept encrypted until the job runs and never shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_auth: Option<HttpAuth>,
    /// Seconds (up to 30 days) this capture answers identical requests of the account: one
    /// made within them (same URL and options) is a new job, done at once, cached: true,
    /// charging nothing. Render links cache for a day unless they set it.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = bounds::CACHE_TTL_MAX)))]
    pub cache_ttl: Option<u64>,
    /// Separates otherwise identical requests in the cache (up to 256 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = bounds::CACHE_KEY_MAX)))]
    pub cache_key: Option<String>,
    /// Also write the file to one of the account's storage destinations (its own
    /// S3-compatible bucket, `POST /v1/storage-destinations`); the job then carries
    /// storageUrl, or storageError when the upload failed after its retries (the service
    /// keeps its own copy either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageTarget>,
    /// How the page scrolls in a video (`format: mp4`, `webm` or `gif`): from the top to the
    /// end of the page (or to `untilSelector`) in `durationMs`, recorded at the viewport's
    /// size at 25 frames a second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scroll: Option<ScrollIn>,
    /// Start the page from one of your browser profiles (`POST /v1/profiles`), by id or
    /// name: its cookies and site storage are in place before the page loads, so it sees
    /// the signed-in site. When the page is sent to a sign-in form instead, the job fails
    /// with an error starting `profile_expired:` (and the profile shows `expired`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::profile::NAME_MAX)))]
    pub profile: Option<String>,
    /// Leave through one of your proxies (`POST /v1/proxies`), by id or name: the page and
    /// everything it loads connect through it, after the service's egress checks. A proxy
    /// that refuses or fails fails the job with `proxy_failed: <name>: <why>`, not charged.
    /// The job shows which proxy (and pool member) served it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 100)))]
    pub proxy: Option<String>,
    /// For a pool with `rotation: "sticky"`: the key that picks its member (the same key,
    /// the same member). Without one, the page's host is the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 200)))]
    pub proxy_sticky_key: Option<String>,
}

/// A whole number, also when a client wrote it as `800.0`.
fn whole<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    use serde::de::Error;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else { return Ok(None) };
    let v = match (n.as_u64(), n.as_f64()) {
        (Some(v), _) => Some(v),
        (None, Some(x)) if x.fract() == 0.0 && (0.0..1e15).contains(&x) => Some(x as u64),
        _ => None,
    };
    v.and_then(|v| T::try_from(v).ok()).map(Some).ok_or_else(|| D::Error::custom("must be a whole number, 0 or more"))
}

impl ScreenshotIn {
    /// The names of every option, as the type declares them (an upload form's fields).
    pub fn field_names() -> &'static [&'static str] {
        static NAMES: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
        NAMES.get_or_init(struct_fields::<ScreenshotIn>)
    }
}

/// The field names serde gives a struct, read from its `Deserialize` impl.
fn struct_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Names<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Names<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only structs"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("names read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Names(&mut names));
    names
}
