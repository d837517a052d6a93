//! The validated capture options stored with a job, their defaults, output format and
//! charge.

use serde::{Deserialize, Serialize};

use super::blocking::{CookieConsent, ResourceKind, stored_consent};
use super::defaults;
use super::output::{ImageFormat, ScrollSettings};
use super::page::{Clip, Geolocation, MediaType, WaitUntil};
use super::pdf::PdfSettings;
use super::storage::StorageTarget;
use crate::credentials::{Credentials, CredentialsSet};
use crate::states::OutputFormat;

/// Validated capture options, stored with the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureOptions {
    /// The requested page (`None` for an uploaded HTML document).
    pub url: Option<String>,
    pub width: u32,
    pub height: u32,
    pub full_page: bool,
    pub format: ImageFormat,
    pub pdf: bool,
    pub delay: u64,
    pub dark_mode: bool,
    /// What to do with cookie-consent pop-ups.
    #[serde(deserialize_with = "stored_consent")]
    pub cookie_consent: CookieConsent,
    pub wait_for: Option<String>,
    pub wait_until: WaitUntil,
    pub timeout_ms: u64,
    pub pre_screenshot_js: Option<String>,
    pub device_scale_factor: f64,
    pub click_before: Option<String>,
    // The options below came later: a job stored before them reads their defaults.
    /// Capture just this element's box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Capture just this region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip: Option<Clip>,
    /// Hidden (`visibility: hidden`) before the capture.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hide_selectors: Vec<String>,
    /// A transparent background (PNG and WebP).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub omit_background: bool,
    /// JPEG and WebP quality (None: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    /// The returned image's width in pixels (the height keeps the aspect ratio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_width: Option<u32>,
    /// The IANA time zone the page sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The BCP 47 locale the page sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// The position the page sees, with the permission granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Geolocation>,
    /// `prefers-reduced-motion: reduce`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reduced_motion: bool,
    /// The CSS media type.
    #[serde(default, skip_serializing_if = "is_screen")]
    pub media_type: MediaType,
    /// Fail when the main document answers 4xx or 5xx.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_on_http_error: bool,
    /// Fail when the page's text contains one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_if_content_contains: Vec<String>,
    /// Fail when the page's text lacks one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_if_content_missing: Vec<String>,
    /// The device preset asked for (its values are in the fields here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Mobile viewport semantics (meta viewport, overlay scrollbars).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mobile: bool,
    /// Touch events and `navigator.maxTouchPoints`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub touch: bool,
    /// The User-Agent (None: the browser's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// How a PDF is printed (None: A4, backgrounds, no margins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf_options: Option<PdfSettings>,
    /// URL patterns (`*` wildcards) whose requests are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_requests: Vec<String>,
    /// Kinds of requests refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_resources: Vec<ResourceKind>,
    /// Refuse requests EasyList names (ads) and hide what they leave.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_ads: bool,
    /// Refuse requests EasyPrivacy names (trackers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_trackers: bool,
    /// Refuse chat-widget requests and hide their launchers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_chats: bool,
    /// Refuse pop-up tools' requests and hide newsletter/app/notification pop-ups, floating
    /// video players, back-to-top buttons and chat launchers (Capture's annoyances list).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_annoyances: bool,
    /// Elements whose boxes the capture reports (`metadata.masked`) for a monitor's
    /// comparison to leave out; set by monitors (`ignoreSelectors`), not a request field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mask_selectors: Vec<String>,
    /// Hide what still covers the page once the rest ran: any fixed or sticky element over
    /// more than a quarter of the viewport (a newsletter modal, an app banner), and give the
    /// page back the scrolling it locked (tag `popups-hidden`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hide_popups: bool,
    /// The request's headers, cookies and HTTP credentials, in the clear: never serialised.
    /// The service stores them sealed with its master key beside the options, and opens
    /// them for the browser.
    #[serde(skip)]
    pub credentials: Option<Credentials>,
    /// Which credentials were set (names only): what the job shows of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_set: Option<CredentialsSet>,
    /// Seconds a done capture of this request answers an identical one (`cacheTtl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<u64>,
    /// Separates otherwise identical requests in the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// Also write the file to the account's own bucket (`storage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageTarget>,
    /// The page as text, read from the same load after the capture (issue 41).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<super::ContentSettings>,
    /// Structured data read from the page (`extract`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<super::ExtractSettings>,
    /// How a video scrolls (set exactly when `format` is a video).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scroll: Option<ScrollSettings>,
    /// The browser profile the page starts from: as asked (an id or a name), then the
    /// profile's id once the service found it among the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The customer's proxy the page leaves through: as asked (an id or a name), then the
    /// proxy's id once the service found it among the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// What picks a sticky pool's member (`proxyStickyKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_sticky_key: Option<String>,
    /// The pool member chosen for the job when it was created (set by the service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_member: Option<u32>,
    /// That profile's cookies and site storage, opened for the browser: never serialised.
    #[serde(skip)]
    pub state: Option<crate::profile::BrowserState>,
}

fn is_screen(m: &MediaType) -> bool {
    *m == MediaType::Screen
}

impl Default for CaptureOptions {
    /// What a request that sets nothing but its page gets (no page here).
    fn default() -> Self {
        CaptureOptions {
            url: None,
            width: defaults::WIDTH,
            height: defaults::HEIGHT,
            full_page: false,
            format: defaults::FORMAT,
            pdf: false,
            delay: defaults::DELAY,
            dark_mode: false,
            cookie_consent: CookieConsent::Auto,
            wait_for: None,
            wait_until: defaults::WAIT_UNTIL,
            timeout_ms: defaults::TIMEOUT_MS,
            pre_screenshot_js: None,
            device_scale_factor: defaults::DEVICE_SCALE_FACTOR,
            click_before: None,
            selector: None,
            clip: None,
            hide_selectors: Vec::new(),
            mask_selectors: Vec::new(),
            omit_background: false,
            quality: None,
            image_width: None,
            timezone: None,
            locale: None,
            geolocation: None,
            reduced_motion: false,
            media_type: MediaType::Screen,
            fail_on_http_error: false,
            fail_if_content_contains: Vec::new(),
            fail_if_content_missing: Vec::new(),
            device: None,
            mobile: false,
            touch: false,
            user_agent: None,
            pdf_options: None,
            block_requests: Vec::new(),
            block_resources: Vec::new(),
            block_ads: false,
            block_trackers: false,
            block_chats: false,
            block_annoyances: false,
            hide_popups: false,
            credentials: None,
            credentials_set: None,
            cache_ttl: None,
            cache_key: None,
            storage: None,
            content: None,
            extract: None,
            scroll: None,
            profile: None,
            proxy: None,
            proxy_sticky_key: None,
            proxy_member: None,
            state: None,
        }
    }
}

impl CaptureOptions {
    /// The result's format: `pdf` or the image format.
    pub fn output_format(&self) -> OutputFormat {
        match (self.pdf, self.format) {
            (true, _) => OutputFormat::Pdf,
            (false, ImageFormat::Png) => OutputFormat::Png,
            (false, ImageFormat::Jpeg) => OutputFormat::Jpeg,
            (false, ImageFormat::Webp) => OutputFormat::Webp,
            (false, ImageFormat::Mp4) => OutputFormat::Mp4,
            (false, ImageFormat::Webm) => OutputFormat::Webm,
            (false, ImageFormat::Gif) => OutputFormat::Gif,
            (false, ImageFormat::Markdown) => OutputFormat::Markdown,
            (false, ImageFormat::Text) => OutputFormat::Text,
            (false, ImageFormat::Html) => OutputFormat::Html,
        }
    }

    /// Actions a capture with these options is charged: one, or for a video one per
    /// started 10 seconds; one more for the language model's extraction (`extract.prompt`),
    /// given back when its answer is not valid.
    pub fn actions(&self) -> i64 {
        self.scroll.as_ref().map_or(1, ScrollSettings::actions) + self.model_actions()
    }

    /// The actions of the language model's extraction (`extract.prompt`): 1, or 0 without one.
    pub fn model_actions(&self) -> i64 {
        i64::from(self.extract.as_ref().is_some_and(|e| e.prompt.is_some()))
    }
}
