//! What a capture asks of the page beyond loading it: who and where the page thinks it is
//! (time zone, locale, position), what is hidden, which region is captured (an element or a
//! clip) and a transparent background.

use std::time::Duration;

use capture_core::metadata::{OpenGraph, PageMetadata, TwitterCard};
use capture_core::options::{CaptureOptions, ResourceKind};
use serde_json::Value;
use tokio::time::Instant;

use super::filter::RequestFilter;
use super::{Page, Stop};
use crate::blocklists::{Blocklists, Which};
use crate::protocol::{self as p, session as s};
use crate::{CaptureError, PageSource, scripts};

/// Accuracy of a position whose request gives none, in metres.
const DEFAULT_ACCURACY: f64 = 10.0;

/// An element's box in document coordinates (CSS pixels).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BoxCss {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl Page {
    /// Time zone, locale (with `navigator.language` and `Accept-Language`), user agent, touch
    /// and position, before anything loads; only what the request sets is sent. Each is this
    /// job's own browser context's, never another's.
    pub(crate) async fn emulate(&mut self, o: &CaptureOptions) -> Result<(), CaptureError> {
        if let Some(tz) = &o.timezone {
            self.call(&s::SetTimezoneOverride { timezone_id: tz })
                .await
                .map_err(|e| CaptureError::Script(format!("timezone '{tz}' was refused by the browser: {e}")))?;
        }
        if let Some(locale) = &o.locale {
            self.call(&s::SetLocaleOverride { locale: Some(locale) })
                .await
                .map_err(|e| CaptureError::Script(format!("locale '{locale}' was refused by the browser: {e}")))?;
        }
        // navigator.language and Accept-Language come with the user agent override.
        if o.locale.is_some() || o.user_agent.is_some() {
            let ua = match &o.user_agent {
                Some(ua) => ua.clone(),
                None => self.finish(self.conn.cmd(&p::GetVersion {}, None), "Browser.getVersion").await?.user_agent,
            };
            let accept = o.locale.as_deref().map(accept_language);
            self.call(&s::SetUserAgentOverride { user_agent: &ua, accept_language: accept.as_deref() }).await?;
        }
        if o.touch {
            self.call(&s::SetTouchEmulationEnabled { enabled: true, max_touch_points: Some(5) }).await?;
        }
        if let Some(g) = o.geolocation {
            let context = self.prepared.guard.id.clone();
            let permissions = ["geolocation".to_owned()];
            let grant = s::GrantPermissions { permissions: &permissions, origin: None, browser_context_id: &context };
            self.finish(self.conn.cmd(&grant, None), "Browser.grantPermissions").await?;
            self.call(&s::SetGeolocationOverride {
                latitude: Some(g.latitude),
                longitude: Some(g.longitude),
                accuracy: Some(g.accuracy.unwrap_or(DEFAULT_ACCURACY)),
            })
            .await?;
        }
        Ok(())
    }

    /// The request's credentials before anything loads: extra headers (on every request of
    /// the page), cookies (the page's own host unless they name a domain). `httpAuth` is
    /// answered by [`block`](Self::block)'s interception, to the page's origin only.
    pub(crate) async fn identify(&mut self, o: &CaptureOptions) -> Result<(), CaptureError> {
        if let Some(state) = &o.state {
            self.restore(state).await?;
        }
        let Some(c) = &o.credentials else { return Ok(()) };
        if !c.headers.is_empty() {
            self.call(&p::SetExtraHttpHeaders { headers: &c.headers })
                .await
                .map_err(|e| CaptureError::Script(format!("headers were refused by the browser: {e}")))?;
        }
        if !c.cookies.is_empty() {
            let page = o.url.as_deref();
            let cookies = c
                .cookies
                .iter()
                .map(|k| p::CookieParam {
                    name: &k.name,
                    value: &k.value,
                    url: if k.domain.is_none() { page } else { None },
                    domain: k.domain.as_deref(),
                    path: Some(k.path.as_deref().unwrap_or("/")),
                    secure: k.secure,
                    http_only: k.http_only,
                    same_site: k.same_site.map(|s| s.cdp_name()),
                })
                .collect();
            self.call(&p::SetCookies { cookies })
                .await
                .map_err(|e| CaptureError::Script(format!("cookies were refused by the browser: {e}")))?;
        }
        Ok(())
    }

    /// A profile's state in this page's context before anything loads (a capture's, a
    /// session's): its live cookies, and its origins' storage restored by a script in each
    /// new document.
    pub(crate) async fn restore(&mut self, state: &capture_core::profile::BrowserState) -> Result<(), CaptureError> {
        let cookies = crate::state::cookies_of(state);
        if !cookies.is_empty() {
            let context = self.prepared.guard.id.clone();
            let reply = self.conn.cmd(&s::SetCookies { cookies: &cookies, browser_context_id: &context }, None);
            self.finish(reply, "Storage.setCookies")
                .await
                .map_err(|e| CaptureError::Script(format!("the profile's cookies were refused by the browser: {e}")))?;
        }
        if let Some(source) = state.restore_script() {
            self.call(&s::AddScriptToEvaluateOnNewDocument { source: &source }).await?;
        }
        Ok(())
    }

    /// A page started from a profile that was sent to a sign-in form instead of the page
    /// asked for: the profile's session expired ([`CaptureError::SignedOut`]).
    pub(crate) async fn check_signed_in(
        &mut self,
        o: &CaptureOptions,
        source: &PageSource,
    ) -> Result<(), CaptureError> {
        let (Some(_), PageSource::Url(requested)) = (&o.state, source) else { return Ok(()) };
        let Ok(v) = self.eval_job(capture_core::profile::SIGNED_OUT_JS).await? else { return Ok(()) };
        match capture_core::profile::signed_out(requested, &v) {
            Some(m) => Err(CaptureError::SignedOut(m)),
            None => Ok(()),
        }
    }

    /// A bot wall instead of the page ([`crate::walls`]): a challenge gets a moment to clear
    /// itself (its check passes and loads the page), then the capture fails as
    /// [`CaptureError::Blocked`]. Pages given as HTML are the caller's own: not checked.
    pub(crate) async fn check_wall(&mut self, source: &PageSource) -> Result<(), CaptureError> {
        use crate::walls::{DETECT_JS, Wall};
        /// How long a challenge may take to clear itself.
        const GRACE: std::time::Duration = std::time::Duration::from_secs(3);
        if !matches!(source, PageSource::Url(_)) {
            return Ok(());
        }
        let Ok(v) = self.eval_job(DETECT_JS).await? else { return Ok(()) };
        let Some(wall) = Wall::read(&v) else { return Ok(()) };
        if wall.may_clear() {
            let until = (tokio::time::Instant::now() + GRACE).min(self.deadline);
            while tokio::time::Instant::now() < until {
                let _ = self
                    .pump_until((tokio::time::Instant::now() + std::time::Duration::from_millis(250)).min(until))
                    .await;
                match self.eval(DETECT_JS, until, false).await {
                    // Cleared: let the page it loaded settle.
                    Ok(Ok(v)) if Wall::read(&v).is_none() => {
                        let settle =
                            (tokio::time::Instant::now() + std::time::Duration::from_secs(5)).min(self.deadline);
                        self.wait_idle(settle, std::time::Duration::from_millis(300)).await?;
                        return Ok(());
                    }
                    Ok(_) => {}
                    Err(super::Stop::Elapsed) => break,
                    Err(super::Stop::Fail(e)) => return Err(e),
                }
            }
        }
        tracing::debug!(target: "capture_browser::timing", vendor = %wall.vendor, marker = %wall.marker, "bot wall");
        Err(CaptureError::Blocked(wall.message()))
    }

    /// Refuse the requests `blockRequests` (URL patterns), `blockResources` (kinds) and the
    /// filter lists of `blockAds`/`blockTrackers`/`blockChats` name, from the first request
    /// the page's document makes on (the document's own request pauses only when `httpAuth`
    /// must answer its challenge), and answer the page origin's challenge. A WebSocket
    /// is refused in the page (its constructor throws), since the browser does not pause
    /// socket handshakes for interception. Nothing is intercepted unless asked for.
    pub(crate) async fn block(&mut self, o: &CaptureOptions, source: &PageSource) -> Result<(), CaptureError> {
        if !o.block_requests.is_empty() {
            self.call(&p::SetBlockedUrls { urls: o.block_requests.clone() }).await?;
        }
        let kinds: Vec<&'static str> =
            o.block_resources.iter().filter(|k| **k != ResourceKind::Websocket).map(|k| k.cdp_name()).collect();
        let which = Which::of(o);
        let lists = match which.any() {
            true => {
                let lists = Blocklists::shared().await;
                if let Some(why) = lists.unavailable(which) {
                    return Err(CaptureError::Unavailable(why));
                }
                Some((lists, which))
            }
            false => None,
        };
        let auth = match (&o.credentials, o.url.as_deref().and_then(|u| url::Url::parse(u).ok())) {
            (Some(c), Some(u)) => c.http_auth.clone().map(|a| (u.origin().ascii_serialization(), a)),
            _ => None,
        };
        let request = |url_pattern: Option<String>, resource_type: Option<&'static str>| p::RequestPattern {
            url_pattern,
            resource_type,
            request_stage: "Request",
        };
        // The lists see every request; otherwise only the kinds refused and the page's origin.
        let patterns: Vec<p::RequestPattern> = match (&lists, &auth) {
            (Some(_), _) => vec![request(Some("*".into()), None)],
            (None, auth) => kinds
                .iter()
                .map(|k| request(None, Some(*k)))
                .chain(auth.as_ref().map(|(origin, _)| request(Some(format!("{origin}/*")), None)))
                .collect(),
        };
        // Turned on for the job, never on the spare page ahead of it: `Fetch.enable` takes
        // about 1–2 ms, while a spare page set up for the lists cost the next job without them
        // ~20 ms of `Fetch.disable` (measured, issue 39). Without credentials to answer, it
        // is sent right behind `Page.navigate` (see [`Self::navigate`]): the page's own
        // document, which nothing here refuses, then loads unpaused.
        if !patterns.is_empty() {
            let handle_auth_requests = auth.is_some();
            let late = !handle_auth_requests && matches!(source, PageSource::Url(_));
            self.filter = Some(RequestFilter::new(kinds, lists, auth));
            let enable = p::FetchEnable { patterns, handle_auth_requests };
            match late {
                true => self.fetch_on_navigate = Some(enable),
                false => {
                    self.call(&enable).await?;
                }
            }
        }
        if o.block_resources.contains(&ResourceKind::Websocket) {
            self.call(&s::AddScriptToEvaluateOnNewDocument { source: scripts::NO_WEBSOCKETS }).await?;
        }
        Ok(())
    }

    /// The lists' scriptlets (`##+js(...)`) for the page asked for, added before its own
    /// scripts run (after [`Self::block`], which loads the lists).
    pub(crate) async fn arm_scriptlets(&mut self, source: &PageSource) -> Result<(), CaptureError> {
        let PageSource::Url(url) = source else { return Ok(()) };
        if let Some((lists, which)) = self.filter.as_ref().and_then(|f| f.lists.clone())
            && let Some(script) = lists.scriptlets_for(which, url)
        {
            self.call(&s::AddScriptToEvaluateOnNewDocument { source: &script }).await?;
        }
        Ok(())
    }

    /// Hide what the filter lists name on this page (their element rules for its host, and
    /// the generic ones for the classes and ids it has), and collapse the frames and images
    /// whose requests they refused; tags `ads-blocked`, `trackers-blocked`, `chats-blocked`
    /// for each list that refused something. Nothing without the lists.
    ///
    /// `then`: a script of ours to run in the same call right after (the pop-up pass of
    /// `hidePopups`): its value, None when it was not run.
    pub(crate) async fn hide_blocked(
        &mut self,
        tags: &mut Vec<String>,
        then: Option<&str>,
    ) -> Result<Option<Value>, CaptureError> {
        let Some((lists, which, counts, urls)) = self
            .filter
            .as_ref()
            .and_then(|f| f.lists.as_ref().map(|(l, w)| (l.clone(), *w, f.counts, f.blocked_urls.clone())))
        else {
            return Ok(None);
        };
        let found = match self.eval_job(scripts::CLASSES_AND_IDS).await? {
            Ok(v) => v,
            Err(m) => return Err(CaptureError::Script(format!("reading the page's classes failed: {m}"))),
        };
        let strings = |k: &str| -> Vec<String> {
            found[k]
                .as_array()
                .map_or_else(Vec::new, |a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        };
        let page_url = self.document_chain.last().cloned().unwrap_or_default();
        let (selectors, procedural) = lists.element_rules(which, &page_url, &strings("classes"), &strings("ids"));
        let hide = scripts::hide_blocked(
            &serde_json::to_string(&selectors).unwrap_or_else(|_| "[]".into()),
            &serde_json::to_string(&urls).unwrap_or_else(|_| "[]".into()),
        );
        // The procedural and action rules for this page in the same call (a rule the page
        // defeats is skipped; one that throws leaves the element rules applied).
        let procedural = match procedural.is_empty() {
            true => "0".to_owned(),
            false => crate::procedural::script(&procedural),
        };
        let then_js = then.unwrap_or("null");
        let js = format!(
            "(() => {{ const hid = {hide}; let applied = 0; try {{ applied = {procedural}; }} catch (e) {{}} let then = null; try {{ then = {then_js}; }} catch (e) {{}} return [hid, applied, then]; }})()"
        );
        let (applied, then_value) = match self.eval_job(&js).await? {
            Ok(mut v) => (v[1].as_u64().unwrap_or(0), then.map(|_| v[2].take())),
            Err(m) => return Err(CaptureError::Script(format!("hiding blocked elements failed: {m}"))),
        };
        if applied > 0 && !tags.iter().any(|t| t == "procedural-applied") {
            tags.push("procedural-applied".into());
        }
        for (n, tag) in [
            (counts.ads, "ads-blocked"),
            (counts.trackers, "trackers-blocked"),
            (counts.chats, "chats-blocked"),
            (counts.annoyances, "annoyances-blocked"),
        ] {
            if n > 0 && !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_owned());
            }
        }
        Ok(then_value)
    }

    /// Hide every element matching one of `selectors` (`visibility: hidden`, so the layout
    /// does not move). A selector the browser cannot parse fails the job, naming it. No
    /// selectors: nothing is sent.
    pub(crate) async fn hide(&mut self, selectors: &[String]) -> Result<(), CaptureError> {
        if selectors.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(selectors).unwrap_or_else(|_| "[]".into());
        match self.eval_job(&scripts::hide_selectors(&list)).await? {
            Ok(Value::Number(n)) if n.as_i64() == Some(-1) => Ok(()),
            Ok(Value::Number(n)) => {
                let i = n.as_u64().unwrap_or(0) as usize;
                let sel = selectors.get(i).map_or("", String::as_str);
                Err(CaptureError::Script(format!("hideSelectors[{i}]: '{sel}' is not a valid CSS selector")))
            }
            Ok(other) => Err(CaptureError::Script(format!("hideSelectors: unexpected answer {other}"))),
            Err(m) => Err(CaptureError::Script(format!("hideSelectors failed: {m}"))),
        }
    }

    /// The boxes of the elements `selectors` match, in the captured image's CSS pixels
    /// relative to `origin` (the document's top left for a full page or a region, the
    /// viewport's for a screenful): what a monitor leaves out of its comparison. A selector
    /// the browser cannot parse fails the job, naming it.
    pub(crate) async fn mask_boxes(
        &mut self,
        selectors: &[String],
        viewport: bool,
    ) -> Result<Vec<[f64; 4]>, CaptureError> {
        if selectors.is_empty() {
            return Ok(Vec::new());
        }
        let list = serde_json::to_string(selectors).unwrap_or_else(|_| "[]".into());
        let js = format!(
            r#"((list, viewport) => {{
  const out = [];
  for (let i = 0; i < list.length; i++) {{
    let els;
    try {{ els = document.querySelectorAll(list[i]); }} catch (e) {{ return i; }}
    for (const el of els) {{
      const r = el.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) continue;
      const dx = viewport ? 0 : window.scrollX, dy = viewport ? 0 : window.scrollY;
      out.push([r.left + dx, r.top + dy, r.width, r.height]);
      if (out.length >= 500) return out;
    }}
  }}
  return out;
}})({list}, {viewport})"#
        );
        match self.eval_job(&js).await? {
            Ok(Value::Array(items)) => Ok(items
                .iter()
                .filter_map(|b| {
                    let a = b.as_array()?;
                    let n = |i: usize| a.get(i).and_then(Value::as_f64);
                    Some([n(0)?, n(1)?, n(2)?, n(3)?])
                })
                .collect()),
            Ok(Value::Number(n)) => {
                let i = n.as_u64().unwrap_or(0) as usize;
                let sel = selectors.get(i).map_or("", String::as_str);
                Err(CaptureError::Script(format!("ignoreSelectors[{i}]: '{sel}' is not a valid CSS selector")))
            }
            Ok(other) => Err(CaptureError::Script(format!("ignoreSelectors: unexpected answer {other}"))),
            Err(m) => Err(CaptureError::Script(format!("ignoreSelectors failed: {m}"))),
        }
    }

    /// The box of the element `sel` names, waited for up to `timeout_ms` and scrolled into
    /// view. An element that never appears (or has no size) is [`CaptureError::NotFound`].
    pub(crate) async fn element_box(&mut self, sel: &str, timeout_ms: u64) -> Result<BoxCss, CaptureError> {
        let sel_json = serde_json::to_string(sel).unwrap_or_default();
        let until = (Instant::now() + Duration::from_millis(timeout_ms + 500)).min(self.deadline);
        let missing = || CaptureError::NotFound(format!("selector: no element matches '{sel}' after {timeout_ms} ms"));
        match self.eval(&scripts::wait_selector(&sel_json, timeout_ms), until, false).await {
            Ok(Ok(Value::Bool(true))) => {}
            Ok(Ok(Value::String(s))) if s == "invalid" => {
                return Err(CaptureError::NotFound(format!("selector: '{sel}' is not a valid CSS selector")));
            }
            Ok(Ok(_)) => return Err(missing()),
            Ok(Err(m)) => return Err(CaptureError::Script(format!("selector failed: {m}"))),
            Err(Stop::Elapsed) => return Err(self.timeout_err(until, missing())),
            Err(Stop::Fail(e)) => return Err(e),
        }
        let v = match self.eval_job(&scripts::element_box(&sel_json)).await? {
            Ok(v) => v,
            Err(m) => return Err(CaptureError::Script(format!("selector failed: {m}"))),
        };
        let num = |k: &str| v.get(k).and_then(Value::as_f64);
        match (num("x"), num("y"), num("width"), num("height")) {
            (Some(x), Some(y), Some(width), Some(height)) if width >= 1.0 && height >= 1.0 => {
                Ok(BoxCss { x, y, width, height })
            }
            (Some(_), Some(_), Some(_), Some(_)) => {
                Err(CaptureError::NotFound(format!("selector: the element '{sel}' matches has no visible size")))
            }
            _ => Err(missing()),
        }
    }

    /// The request's conditions on the page it got: its HTTP status and its text.
    pub(crate) async fn check_conditions(&mut self, o: &CaptureOptions) -> Result<(), CaptureError> {
        if o.fail_on_http_error
            && let Some(status) = self.document_status.filter(|s| *s >= 400)
        {
            return Err(CaptureError::Rejected(format!("failOnHttpError: the page answered HTTP {status}")));
        }
        if o.fail_if_content_contains.is_empty() && o.fail_if_content_missing.is_empty() {
            return Ok(());
        }
        let text = match self.eval_job(scripts::PAGE_TEXT).await? {
            Ok(Value::String(s)) => s,
            Ok(_) => String::new(),
            Err(m) => return Err(CaptureError::Script(format!("reading the page's text failed: {m}"))),
        };
        if let Some(s) = o.fail_if_content_contains.iter().find(|s| text.contains(s.as_str())) {
            return Err(CaptureError::Rejected(format!("failIfContentContains: the page's text contains '{s}'")));
        }
        if let Some(s) = o.fail_if_content_missing.iter().find(|s| !text.contains(s.as_str())) {
            return Err(CaptureError::Rejected(format!("failIfContentMissing: the page's text lacks '{s}'")));
        }
        Ok(())
    }

    /// What the page says of itself (title, description, canonical, icons, Open Graph and
    /// Twitter tags), with the HTTP status and the redirects its document went through. The
    /// title also comes back as the page set it (cut only in the page, at 2048 characters):
    /// the job's `pageTitle`, which the service cuts itself, and which the ad pipeline uses to
    /// carry what its script read.
    pub(crate) async fn metadata(&mut self) -> Result<(String, PageMetadata), CaptureError> {
        let v = match self.eval_job(scripts::METADATA).await? {
            Ok(v) => v,
            Err(_) => Value::Null,
        };
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let (og, tw) = (&v["og"], &v["twitter"]);
        let chain = &self.document_chain;
        let title = s(&v, "title").unwrap_or_default();
        let metadata = PageMetadata {
            http_status: self.document_status,
            final_url: s(&v, "url").unwrap_or_default(),
            redirects: chain.iter().take(chain.len().saturating_sub(1)).cloned().collect(),
            title: s(&v, "title"),
            description: s(&v, "description"),
            canonical: s(&v, "canonical"),
            lang: s(&v, "lang"),
            favicon: s(&v, "favicon"),
            open_graph: OpenGraph {
                title: s(og, "title"),
                description: s(og, "description"),
                image: s(og, "image"),
                url: s(og, "url"),
                kind: s(og, "type"),
                site_name: s(og, "site_name"),
            },
            twitter: TwitterCard {
                card: s(tw, "card"),
                title: s(tw, "title"),
                description: s(tw, "description"),
                image: s(tw, "image"),
                site: s(tw, "site"),
                creator: s(tw, "creator"),
            },
            consent: self.consent_report.clone(),
            overlay: self.overlay_report.clone(),
            content: None,
            extract: None,
            masked: Vec::new(),
        }
        .capped();
        Ok((title, metadata))
    }

    /// `Page.printToPDF` as the request's `pdfOptions` ask (A4, backgrounds, no margins and
    /// the page's own CSS size when it sets none). `fitOnePage` measures the page: the
    /// sheet is as wide as the paper and as tall as the content at that width.
    pub(crate) async fn print_params(&mut self, o: &CaptureOptions) -> Result<p::PrintToPdf, CaptureError> {
        let asked = o.pdf_options.is_some();
        let s = o.pdf_options.clone().unwrap_or_default();
        let (mut w, mut h) = s.paper.unwrap_or((8.27, 11.69));
        let mut css_size = s.paper.is_none();
        if s.fit_one_page {
            // One sheet: the page's own page breaks would start new ones.
            if let Err(m) = self.eval_job(scripts::NO_PAGE_BREAKS).await? {
                return Err(CaptureError::Script(format!("fitOnePage failed: {m}")));
            }
            let width_in = if s.landscape { h } else { w };
            let content_w = (width_in - s.margin[1] - s.margin[3]).max(0.5) * 96.0 / s.scale;
            let height_px = match self.eval_job(&scripts::content_height(content_w)).await? {
                Ok(v) => v.as_f64().unwrap_or(1000.0),
                Err(m) => return Err(CaptureError::Script(format!("fitOnePage: measuring the page failed: {m}"))),
            };
            // Chromium prints at most 200 inches to a sheet; a little more than the content
            // keeps a rounding from spilling one line onto a second page.
            let sheet = (height_px * s.scale / 96.0 + s.margin[0] + s.margin[2] + 0.05).clamp(0.5, 200.0);
            (w, h) = if s.landscape { (sheet, width_in) } else { (width_in, sheet) };
            css_size = false;
        }
        const EMPTY: &str = "<span></span>";
        let banners = s.header_template.is_some() || s.footer_template.is_some();
        Ok(p::PrintToPdf {
            print_background: s.print_background,
            prefer_css_page_size: css_size,
            paper_width: w,
            paper_height: h,
            landscape: s.landscape && !s.fit_one_page,
            scale: (s.scale != 1.0).then_some(s.scale),
            // Without pdfOptions, Chromium's own margins (as before pdfOptions existed).
            margin_top: asked.then_some(s.margin[0]),
            margin_right: asked.then_some(s.margin[1]),
            margin_bottom: asked.then_some(s.margin[2]),
            margin_left: asked.then_some(s.margin[3]),
            page_ranges: s.page_ranges.clone(),
            display_header_footer: banners,
            // With one template, an empty other one hides Chromium's default (date, title, URL).
            header_template: banners.then(|| s.header_template.clone().unwrap_or_else(|| EMPTY.into())),
            footer_template: banners.then(|| s.footer_template.clone().unwrap_or_else(|| EMPTY.into())),
        })
    }

    /// Paint no default background: where the page sets none, the capture is transparent.
    pub(crate) async fn transparent_background(&mut self) -> Result<(), CaptureError> {
        let clear = p::Rgba { r: 0, g: 0, b: 0, a: 0.0 };
        self.call(&p::SetDefaultBackgroundColorOverride { color: Some(clear) }).await.map(drop)
    }
}

/// The language list of a locale (`navigator.languages`; Chromium writes the
/// `Accept-Language` header from it, adding the q-values): `de-DE` → `de-DE,de`.
pub(crate) fn accept_language(locale: &str) -> String {
    match locale.split_once('-') {
        Some((lang, _)) => format!("{locale},{lang}"),
        None => locale.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn accept_language_adds_the_bare_language() {
        assert_eq!(super::accept_language("de-DE"), "de-DE,de");
        assert_eq!(super::accept_language("fr"), "fr");
        assert_eq!(super::accept_language("zh-Hant-TW"), "zh-Hant-TW,zh");
    }
}
