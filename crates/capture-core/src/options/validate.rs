//! The checks beyond the shape (`ScreenshotIn::into_options`): bounds, defaults and the
//! rules between options, with the field checks they use.

use super::capture::CaptureOptions;
use super::content::{ContentFormat, ContentSettings, MAX_CHARS_MAX};
use super::output::{ImageFormat, ScrollIn, ScrollSettings};
use super::page::{Clip, Geolocation};
use super::request::ScreenshotIn;
use super::storage::StorageTarget;
use super::{bounds, defaults};
use crate::credentials::Credentials;
use crate::error::FieldError;

impl ScreenshotIn {
    /// The checks beyond the shape, with the defaults filled in: the bounds of DESIGN.md, an
    /// http(s) URL (`require_url` is false for an uploaded HTML document), selectors and the
    /// script within their sizes (blank ones dropped).
    pub fn into_options(self, require_url: bool) -> Result<CaptureOptions, FieldError> {
        let url = match self.url {
            None if require_url => return Err(FieldError::new("url", "is required")),
            None => None,
            Some(s) => Some(validate_url(&s)?),
        };
        // A device gives the defaults of the view; explicit values win.
        let device = match self.device.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name) => Some((
                name.to_string(),
                crate::devices::preset(name).ok_or_else(|| {
                    FieldError::new("device", format!("'{name}' is not a device preset (GET /v1/devices lists them)"))
                })?,
            )),
        };
        let (dev_w, dev_h) =
            device.as_ref().map_or((defaults::WIDTH, defaults::HEIGHT), |(_, p)| (p.device.width, p.device.height));
        let width = within("width", self.width.unwrap_or(dev_w), bounds::WIDTH)?;
        let height = within("height", self.height.unwrap_or(dev_h), bounds::HEIGHT)?;
        let delay = within("delay", self.delay.unwrap_or(defaults::DELAY), (0, bounds::DELAY_MAX))?;
        let timeout_ms = within("timeoutMs", self.timeout_ms.unwrap_or(defaults::TIMEOUT_MS), bounds::TIMEOUT)?;
        let pre_screenshot_js = match self.pre_screenshot_js {
            Some(s) if s.len() > bounds::JS_MAX => {
                return Err(FieldError::new("preScreenshotJs", "must be at most 16384 bytes"));
            }
            Some(s) if s.trim().is_empty() => None,
            other => other,
        };
        // A preset's own pixel ratio may be beyond the bounds of an explicit one (4 on some phones).
        let device_scale_factor = match (self.device_scale_factor, &device) {
            (Some(d), _) if !(bounds::DSF.0..=bounds::DSF.1).contains(&d) => {
                return Err(FieldError::new("deviceScaleFactor", "must be between 0.5 and 3"));
            }
            (Some(d), _) => d,
            (None, Some((_, p))) => p.device.device_scale_factor,
            (None, None) => defaults::DEVICE_SCALE_FACTOR,
        };
        let user_agent = match self.user_agent {
            Some(ua) if ua.len() > bounds::USER_AGENT_MAX => {
                return Err(FieldError::new("userAgent", "must be at most 512 bytes"));
            }
            Some(ua) if ua.chars().any(char::is_control) => {
                return Err(FieldError::new("userAgent", "must not contain control characters"));
            }
            Some(ua) if !ua.trim().is_empty() => Some(ua.trim().to_string()),
            _ => device.as_ref().and_then(|(_, p)| p.device.user_agent.as_deref()).map(str::to_owned),
        };
        let mobile = device.as_ref().is_some_and(|(_, p)| p.device.mobile);
        let pdf = self.pdf.unwrap_or(false);
        let format = self.format.unwrap_or(defaults::FORMAT);
        let full_page = self.full_page.unwrap_or(false);
        let selector_opt = selector("selector", self.selector)?;
        if selector_opt.is_some() && self.clip.is_some() {
            return Err(FieldError::new("clip", "cannot be combined with selector"));
        }
        if pdf {
            for (set, field) in [
                (selector_opt.is_some(), "selector"),
                (self.clip.is_some(), "clip"),
                (self.image_width.is_some(), "imageWidth"),
                (self.quality.is_some(), "quality"),
                (self.omit_background == Some(true), "omitBackground"),
            ] {
                if set {
                    return Err(FieldError::new(field, "applies to images, not to a PDF"));
                }
            }
        }
        if let Some(c) = &self.clip {
            check_clip(c, full_page, width, height)?;
        }
        let hide_selectors = hide_selectors(self.hide_selectors)?;
        let quality = match self.quality {
            Some(_) if format == ImageFormat::Png => {
                return Err(FieldError::new("quality", "applies to jpeg and webp; a PNG is lossless"));
            }
            Some(q) => Some(within("quality", q, bounds::QUALITY)?),
            None => None,
        };
        let omit_background = self.omit_background.unwrap_or(false);
        if omit_background && format == ImageFormat::Jpeg {
            return Err(FieldError::new("omitBackground", "needs png or webp; a JPEG has no transparency"));
        }
        let image_width = match self.image_width {
            Some(w) => Some(within("imageWidth", w, bounds::IMAGE_WIDTH)?),
            None => None,
        };
        let pdf_options = match self.pdf_options {
            Some(_) if !pdf => return Err(FieldError::new("pdfOptions", "applies to a PDF (set pdf: true)")),
            Some(p) => Some(p.check()?),
            None => None,
        };
        let block_requests = self.block_requests.unwrap_or_default();
        if block_requests.len() > bounds::BLOCK_REQUESTS_MAX {
            return Err(FieldError::new("blockRequests", "must list at most 100 patterns"));
        }
        for (i, p) in block_requests.iter().enumerate() {
            if p.trim().is_empty() || p.len() > bounds::URL_MAX || p.chars().any(char::is_control) {
                return Err(FieldError::new(format!("blockRequests[{i}]"), "must be a URL pattern of 1 to 4096 bytes"));
            }
        }
        let mut block_resources = self.block_resources.unwrap_or_default();
        block_resources.dedup();
        let credentials = Credentials::check(self.headers, self.cookies, self.http_auth, url.as_deref())?;
        let profile = match self.profile.map(|p| p.trim().to_owned()) {
            Some(p) if p.is_empty() || p.chars().count() > crate::profile::NAME_MAX => {
                return Err(FieldError::new("profile", "must be a profile's id or name (1 to 100 characters)"));
            }
            Some(_) if url.is_none() => {
                return Err(FieldError::new("profile", "applies to a page at a URL, not to an upload"));
            }
            other => other,
        };
        let proxy = proxy_ref(self.proxy)?;
        if self.proxy_sticky_key.is_some() && proxy.is_none() {
            return Err(FieldError::new("proxyStickyKey", "applies with proxy (a pool with sticky rotation)"));
        }
        let proxy_sticky_key = proxy_sticky_key(self.proxy_sticky_key)?;
        let cache_ttl = match self.cache_ttl {
            Some(_) if url.is_none() => {
                return Err(FieldError::new("cacheTtl", "applies to a page at a URL, not to an upload"));
            }
            Some(t) => Some(within("cacheTtl", t, (1, bounds::CACHE_TTL_MAX))?),
            None => None,
        };
        let cache_key = match self.cache_key {
            Some(k) if k.is_empty() || k.len() > bounds::CACHE_KEY_MAX || k.chars().any(char::is_control) => {
                return Err(FieldError::new("cacheKey", "must be 1 to 256 bytes without control characters"));
            }
            other => other,
        };
        let scroll = match (format.is_video(), self.scroll) {
            (false, Some(_)) => return Err(FieldError::new("scroll", "applies to a video (format mp4, webm or gif)")),
            (false, None) => None,
            (true, s) => Some(check_scroll(s.unwrap_or_default())?),
        };
        let content = check_content(
            format,
            pdf,
            ContentIn {
                forms: self.content,
                main_content: self.main_content.unwrap_or(false),
                include: self.include_selectors,
                exclude: self.exclude_selectors,
                max_chars: self.max_chars,
                from: self.from,
            },
        )?;
        let extract = match self.extract {
            Some(_) if format.is_video() => {
                return Err(FieldError::new("extract", "applies to a page, not to a video"));
            }
            Some(e) => Some(e.check()?),
            None => None,
        };
        // What only an image has, refused on a video and on the page as text.
        let image_only = [
            (selector_opt.is_some(), "selector"),
            (self.clip.is_some(), "clip"),
            (self.image_width.is_some(), "imageWidth"),
            (self.quality.is_some(), "quality"),
            (omit_background, "omitBackground"),
        ];
        if format.content().is_some()
            && let Some((_, field)) = image_only.iter().find(|(set, _)| *set)
        {
            return Err(FieldError::new(*field, "applies to images, not to the page as text"));
        }
        if format.is_video() {
            for (set, field) in [(pdf, "pdf"), (full_page, "fullPage")].into_iter().chain(image_only) {
                if set {
                    return Err(FieldError::new(field, "applies to images, not to a video"));
                }
            }
            let side = f64::from(width.max(height)) * device_scale_factor;
            if side > bounds::VIDEO_SIDE_MAX {
                return Err(FieldError::new(
                    "width",
                    "a video is at most 1920 pixels on a side (width and height × deviceScaleFactor)",
                ));
            }
        }
        let geolocation = match self.geolocation {
            Some(g) => Some(check_geolocation(g)?),
            None => None,
        };
        Ok(CaptureOptions {
            url,
            width,
            height,
            full_page,
            format,
            pdf,
            delay,
            dark_mode: self.dark_mode.unwrap_or(false),
            cookie_consent: self.cookie_consent.unwrap_or_default(),
            wait_for: selector("waitFor", self.wait_for)?,
            wait_until: self.wait_until.unwrap_or(defaults::WAIT_UNTIL),
            timeout_ms,
            pre_screenshot_js,
            device_scale_factor,
            click_before: selector("clickBefore", self.click_before)?,
            selector: selector_opt,
            clip: self.clip,
            hide_selectors,
            mask_selectors: Vec::new(),
            omit_background,
            quality,
            image_width,
            timezone: self.timezone.map(|t| check_timezone(&t)).transpose()?,
            locale: self.locale.map(|l| check_locale(&l)).transpose()?,
            geolocation,
            reduced_motion: self.reduced_motion.unwrap_or(false),
            media_type: self.media_type.unwrap_or_default(),
            fail_on_http_error: self.fail_on_http_error.unwrap_or(false),
            fail_if_content_contains: content_matches("failIfContentContains", self.fail_if_content_contains)?,
            fail_if_content_missing: content_matches("failIfContentMissing", self.fail_if_content_missing)?,
            device: device.map(|(name, _)| name),
            mobile,
            touch: mobile,
            user_agent,
            pdf_options,
            block_requests,
            block_resources,
            block_ads: self.block_ads.unwrap_or(false),
            block_trackers: self.block_trackers.unwrap_or(false),
            block_chats: self.block_chats.unwrap_or(false),
            block_annoyances: self.block_annoyances.unwrap_or(false),
            hide_popups: self.hide_popups.unwrap_or(self.block_annoyances.unwrap_or(false)),
            credentials_set: credentials.as_ref().map(Credentials::summary),
            credentials,
            cache_ttl,
            cache_key,
            storage: self.storage.map(StorageTarget::check).transpose()?,
            content,
            extract,
            scroll,
            profile,
            proxy,
            proxy_sticky_key,
            proxy_member: None,
            state: None,
        })
    }
}

/// A `proxy` named by id or name (captures, runs, audits, sign-ins): trimmed, 1 to 100
/// characters.
pub fn proxy_ref(v: Option<String>) -> Result<Option<String>, FieldError> {
    match v.map(|p| p.trim().to_owned()) {
        Some(p) if p.is_empty() || p.chars().count() > 100 || p.chars().any(char::is_control) => {
            Err(FieldError::new("proxy", "must be a proxy's id or name (1 to 100 characters)"))
        }
        other => Ok(other),
    }
}

/// A sticky pool's `proxyStickyKey`: 1 to 200 characters.
pub fn proxy_sticky_key(v: Option<String>) -> Result<Option<String>, FieldError> {
    match v {
        Some(k) if k.is_empty() || k.chars().count() > 200 || k.chars().any(char::is_control) => {
            Err(FieldError::new("proxyStickyKey", "must be 1 to 200 characters"))
        }
        other => Ok(other),
    }
}

/// Accept only absolute http(s) URLs with a host.
pub fn validate_url(s: &str) -> Result<String, FieldError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(FieldError::new("url", "is required"));
    }
    if s.len() > bounds::URL_MAX {
        return Err(FieldError::new("url", "must be at most 4096 characters"));
    }
    let u = url::Url::parse(s).map_err(|e| FieldError::new("url", format!("is not a valid URL ({e})")))?;
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(FieldError::new("url", "must use http or https"));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(FieldError::new("url", "must have a host"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(FieldError::new("url", "must not contain credentials"));
    }
    Ok(u.to_string())
}

/// `value` when within `(min, max)`, refused naming `field` otherwise.
fn within<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    value: T,
    (min, max): (T, T),
) -> Result<T, FieldError> {
    if value < min || value > max {
        return Err(FieldError::new(field, format!("must be between {min} and {max}")));
    }
    Ok(value)
}

/// A selector within its size; a blank one is none.
fn selector(field: &str, value: Option<String>) -> Result<Option<String>, FieldError> {
    match value {
        Some(s) if s.len() > bounds::SELECTOR_MAX => Err(FieldError::new(field, "must be at most 1024 characters")),
        Some(s) if s.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

/// A clip within its bounds (and, without fullPage, within the viewport).
fn check_clip(c: &Clip, full_page: bool, width: u32, height: u32) -> Result<(), FieldError> {
    let finite = [c.x, c.y, c.width, c.height].iter().all(|v| v.is_finite());
    if !finite || c.x < 0.0 || c.y < 0.0 {
        return Err(FieldError::new("clip", "x and y must be 0 or more"));
    }
    if c.width < 1.0 || c.height < 1.0 || c.width > bounds::CLIP_MAX || c.height > bounds::CLIP_MAX {
        return Err(FieldError::new("clip", "width and height must be between 1 and 16384"));
    }
    if c.x + c.width > bounds::CLIP_MAX || c.y + c.height > bounds::CLIP_MAX {
        return Err(FieldError::new("clip", "must lie within 16384 CSS pixels of the top left"));
    }
    if !full_page && (c.x + c.width > f64::from(width) || c.y + c.height > f64::from(height)) {
        return Err(FieldError::new(
            "clip",
            format!("must lie within the {width}×{height} viewport (set fullPage to clip the whole page)"),
        ));
    }
    Ok(())
}

/// `hideSelectors`: at most 50, each within its size; blank ones dropped.
fn hide_selectors(list: Option<Vec<String>>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    if list.len() > bounds::HIDE_SELECTORS_MAX {
        return Err(FieldError::new("hideSelectors", "must list at most 50 selectors"));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.into_iter().enumerate() {
        if s.len() > bounds::SELECTOR_MAX {
            return Err(FieldError::new(format!("hideSelectors[{i}]"), "must be at most 1024 characters"));
        }
        if !s.trim().is_empty() {
            out.push(s);
        }
    }
    Ok(out)
}

/// The request's fields about the page as text.
struct ContentIn {
    forms: Option<Vec<ContentFormat>>,
    main_content: bool,
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
    max_chars: Option<u64>,
    from: Option<u64>,
}

/// The page as text: the forms asked for (`format`'s first, then `content`'s, each once) and
/// what they keep; None when no text is asked for (then the content options are refused).
fn check_content(format: ImageFormat, pdf: bool, c: ContentIn) -> Result<Option<ContentSettings>, FieldError> {
    if pdf && format.content().is_some() {
        return Err(FieldError::new("pdf", format!("cannot be combined with format {}", format.as_str())));
    }
    let include = content_selectors("includeSelectors", c.include)?;
    let exclude = content_selectors("excludeSelectors", c.exclude)?;
    let mut forms: Vec<ContentFormat> = format.content().into_iter().collect();
    if let Some(list) = c.forms {
        if format.is_video() {
            return Err(FieldError::new("content", "applies to a page, not to a video"));
        }
        if list.is_empty() {
            return Err(FieldError::new("content", "must list at least one of markdown, text, html"));
        }
        for f in list {
            if !forms.contains(&f) {
                forms.push(f);
            }
        }
    }
    if let Some(m) = c.max_chars
        && !(1..=MAX_CHARS_MAX).contains(&m)
    {
        return Err(FieldError::new("maxChars", "must be between 1 and 10000000"));
    }
    if c.from.is_some_and(|f| f > MAX_CHARS_MAX) {
        return Err(FieldError::new("from", "must be between 0 and 10000000"));
    }
    if forms.is_empty() {
        for (set, field) in [
            (c.main_content, "mainContent"),
            (!include.is_empty(), "includeSelectors"),
            (!exclude.is_empty(), "excludeSelectors"),
            (c.max_chars.is_some(), "maxChars"),
            (c.from.is_some(), "from"),
        ] {
            if set {
                return Err(FieldError::new(
                    field,
                    "applies to the page as text (format markdown, text or html, or content)",
                ));
            }
        }
        return Ok(None);
    }
    Ok(Some(ContentSettings {
        formats: forms,
        main_content: c.main_content,
        include_selectors: include,
        exclude_selectors: exclude,
        max_chars: c.max_chars,
        from: c.from.unwrap_or(0),
    }))
}

/// `includeSelectors` / `excludeSelectors`: at most 50 selectors of 1 to 1024 bytes.
fn content_selectors(field: &str, list: Option<Vec<String>>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    if list.len() > bounds::HIDE_SELECTORS_MAX {
        return Err(FieldError::new(field, "must list at most 50 selectors"));
    }
    for (i, s) in list.iter().enumerate() {
        if s.trim().is_empty() || s.len() > bounds::SELECTOR_MAX {
            return Err(FieldError::new(format!("{field}[{i}]"), "must be a CSS selector of 1 to 1024 bytes"));
        }
    }
    Ok(list)
}

/// `failIfContent…`: at most 10 non-empty strings within their size.
fn content_matches(field: &str, list: Option<Vec<String>>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    if list.len() > bounds::CONTENT_MATCHES_MAX {
        return Err(FieldError::new(field, "must list at most 10 strings"));
    }
    for (i, s) in list.iter().enumerate() {
        if s.is_empty() || s.len() > bounds::CONTENT_MATCH_MAX {
            return Err(FieldError::new(format!("{field}[{i}]"), "must be 1 to 1024 bytes"));
        }
    }
    Ok(list)
}

/// A position on the globe.
fn check_geolocation(g: Geolocation) -> Result<Geolocation, FieldError> {
    if !(-90.0..=90.0).contains(&g.latitude) {
        return Err(FieldError::new("geolocation.latitude", "must be between -90 and 90"));
    }
    if !(-180.0..=180.0).contains(&g.longitude) {
        return Err(FieldError::new("geolocation.longitude", "must be between -180 and 180"));
    }
    if g.accuracy.is_some_and(|a| !(0.0..=100_000.0).contains(&a)) {
        return Err(FieldError::new("geolocation.accuracy", "must be between 0 and 100000 metres"));
    }
    Ok(g)
}

/// An IANA time zone name the tz database knows (as Chromium's ICU does).
fn check_timezone(t: &str) -> Result<String, FieldError> {
    let t = t.trim();
    if t.len() > bounds::TIMEZONE_MAX || t.parse::<chrono_tz::Tz>().is_err() {
        return Err(FieldError::new("timezone", format!("'{t}' is not an IANA time zone (e.g. Europe/Berlin)")));
    }
    Ok(t.to_string())
}

/// A BCP 47 language tag: a 2-3 letter language, then subtags of 1-8 letters or digits
/// (`de`, `de-DE`, `zh-Hant-TW`, `sr-Latn`).
fn check_locale(l: &str) -> Result<String, FieldError> {
    let l = l.trim();
    let mut parts = l.split('-');
    let lang_ok =
        parts.next().is_some_and(|p| (2..=3).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphabetic()));
    let rest_ok = parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if l.len() > bounds::LOCALE_MAX || !lang_ok || !rest_ok {
        return Err(FieldError::new("locale", format!("'{l}' is not a BCP 47 language tag (e.g. de-DE)")));
    }
    Ok(l.to_string())
}

fn check_scroll(s: ScrollIn) -> Result<ScrollSettings, FieldError> {
    let duration_ms = s.duration_ms.unwrap_or(defaults::SCROLL_MS);
    if !(bounds::SCROLL_MS.0..=bounds::SCROLL_MS.1).contains(&duration_ms) {
        return Err(FieldError::new("scroll.durationMs", "must be between 1000 and 30000"));
    }
    Ok(ScrollSettings {
        duration_ms,
        easing: s.easing.unwrap_or_default(),
        until_selector: selector("scroll.untilSelector", s.until_selector)?,
        scroll_back: s.scroll_back.unwrap_or(false),
    })
}
