//! The operations of a session, on the page its task owns.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::keys;
use super::{
    AxNode, Cookie, Device, FileUpload, Geolocation, Hooks, Image, MAX_UPLOAD_BYTES, Navigation, NavigationTiming,
    NetworkConditions, PdfSpec, Redirect, Screencast, ScreencastOptions, ScreenshotSpec, SessionOptions, SessionPage,
    ShotArea, Target, WaitFor,
};
use crate::page::{LC_LOAD, Stop, lost};
use crate::protocol::{self as p, session as s};
use crate::{CaptureError, ImageFormat, PageSource, WaitUntil, scripts};

/// Objects a session keeps for element operations; released on each navigation.
const GROUP: &str = "capture-session";
/// A pause after an input action, for the page to react (and to see whether it starts a
/// navigation).
const SETTLE: Duration = Duration::from_millis(100);

/// Scroll an element (or a text node's parent) into view; its centre, or null when it
/// has no box.
/// Where to aim an input at an element: scroll it into view, take the part of its box inside
/// the visual viewport (what the user sees: after a rotation or a zoom it is not the layout
/// viewport), check that the element itself is what a pointer there hits, and give the point
/// relative to the visual viewport (CSS pixels, not scaled by the zoom), the coordinates
/// `Input.dispatch*Event` takes. Answers `{x, y}` or `{error, by?}`.
const AIM: &str = "function() { const el = this.nodeType === 1 ? this : this.parentElement; if (!el) return { error: 'gone' }; el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); const r = el.getBoundingClientRect(); if (r.width <= 0 || r.height <= 0) return { error: 'hidden' }; const vv = window.visualViewport || { offsetLeft: 0, offsetTop: 0, width: innerWidth, height: innerHeight, scale: 1 }; const left = Math.max(r.left, vv.offsetLeft), right = Math.min(r.right, vv.offsetLeft + vv.width); const top = Math.max(r.top, vv.offsetTop), bottom = Math.min(r.bottom, vv.offsetTop + vv.height); if (right <= left || bottom <= top) return { error: 'offscreen' }; const cx = (left + right) / 2, cy = (top + bottom) / 2; const root = el.getRootNode(); const hit = (root.elementFromPoint ? root : document).elementFromPoint(cx, cy); const mine = (h) => !h || h === el || el.contains(h) || (el.labels && Array.from(el.labels).some((l) => l.contains(h))) || (el.tagName === 'LABEL' && el.control === h); if (!mine(hit)) { const id = hit.id ? '#' + hit.id : ''; const cls = typeof hit.className === 'string' && hit.className.trim() ? '.' + hit.className.trim().split(/\\s+/).join('.') : ''; return { error: 'covered', by: '<' + hit.tagName.toLowerCase() + id + cls + '>' }; } return { x: cx - vv.offsetLeft, y: cy - vv.offsetTop }; }";
/// Whether a pointer at a visual-viewport point (main frame) hits this element; `{by}` names
/// what it hits instead. Elements of other frames are not checked (their coordinates differ).
const HITS: &str = "function(x, y) { const el = this.nodeType === 1 ? this : this.parentElement; if (!el || window !== window.top) return { ok: true }; const vv = window.visualViewport || { offsetLeft: 0, offsetTop: 0, scale: 1 }; const cx = x + vv.offsetLeft, cy = y + vv.offsetTop; const root = el.getRootNode(); const hit = (root.elementFromPoint ? root : document).elementFromPoint(cx, cy); if (!hit || hit === el || el.contains(hit) || (el.labels && Array.from(el.labels).some((l) => l.contains(hit))) || (el.tagName === 'LABEL' && el.control === hit)) return { ok: true }; const id = hit.id ? '#' + hit.id : ''; return { ok: false, by: '<' + hit.tagName.toLowerCase() + id + '>' }; }";
/// Whether the focus is on this element (or inside it, or on the control of this label);
/// else a description of where it is.
const HAS_FOCUS: &str = "function() { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; const el = this.nodeType === 1 ? this : this.parentElement; if (a && el && (a === el || el.contains(a) || (el.tagName === 'LABEL' && el.control === a) || (el.shadowRoot && el.shadowRoot.contains(a)))) return { focused: true }; const d = !a ? 'nothing' : '<' + a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') + '>'; return { focused: false, on: d }; }";
/// What a field holds: an input's or textarea's value, an editable element's text, else the
/// value of the focused field inside it (or of a label's control).
const FIELD_VALUE: &str = "function() { const el = this.nodeType === 1 ? this : this.parentElement; if (!el) return null; let f = el; if (el.tagName === 'LABEL' && el.control) f = el.control; else if (!(el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.isContentEditable) && el.contains(document.activeElement)) f = document.activeElement; if (f.isContentEditable) return f.innerText; return ('value' in f) ? String(f.value) : null; }";
/// An element's box in document coordinates, scrolled into view.
const RECT: &str = "function() { const el = this.nodeType === 1 ? this : this.parentElement; el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); const r = el.getBoundingClientRect(); return { x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height }; }";
/// Focus a text field and select its content: true, `'notext'` when it is no text field,
/// `'nofocus'` when it cannot take the focus (disabled, hidden).
const FOCUS_SELECT: &str = "function() { const el = this; const text = (el.tagName === 'INPUT' && !['checkbox','radio','file','submit','button','image','reset','range','color'].includes(el.type)) || el.tagName === 'TEXTAREA'; if (!text && !el.isContentEditable) return 'notext'; el.focus(); if (document.activeElement !== el && !el.contains(document.activeElement)) return 'nofocus'; if (text) { el.select(); } else { const r = document.createRange(); r.selectNodeContents(el); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } return true; }";
/// Choose options of a select by value, else by label.
const SELECT: &str = "function(values) { if (this.tagName !== 'SELECT') return { error: 'not a <select> element' }; const opts = Array.from(this.options); const chosen = []; for (const v of values) { const o = opts.find((o) => o.value === v) || opts.find((o) => o.label === v || o.text.trim() === v); if (!o) return { error: 'no option ' + JSON.stringify(v) }; chosen.push(o); } if (!this.multiple && chosen.length > 1) return { error: 'the <select> takes one value' }; for (const o of opts) o.selected = chosen.includes(o); this.dispatchEvent(new Event('input', { bubbles: true })); this.dispatchEvent(new Event('change', { bubbles: true })); return { selected: chosen.map((o) => o.value) }; }";
/// Give files (base64) to a file input, as a user picking them would.
const FILES: &str = "function(files) { if (this.tagName !== 'INPUT' || this.type !== 'file') return 'not a file input'; if (files.length > 1 && !this.multiple) return 'the file input takes one file'; const dt = new DataTransfer(); for (const f of files) { const bin = atob(f.b64); const bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); dt.items.add(new File([bytes], f.name, { type: f.type })); } this.files = dt.files; this.dispatchEvent(new Event('input', { bubbles: true })); this.dispatchEvent(new Event('change', { bubbles: true })); return this.files.length; }";
/// A checkbox's or radio button's state, or null.
const CHECKED: &str = "function() { return (this.tagName === 'INPUT' && (this.type === 'checkbox' || this.type === 'radio')) ? this.checked : null; }";

/// Prefix an error's message with the operation's name (once).
pub(crate) fn name_error(name: &str, e: CaptureError) -> CaptureError {
    let prefix = |m: String| if m.starts_with(name) { m } else { format!("{name}: {m}") };
    match e {
        CaptureError::Navigation(m) => CaptureError::Navigation(prefix(m)),
        CaptureError::Timeout(m) => CaptureError::Timeout(prefix(m)),
        CaptureError::Script(m) => CaptureError::Script(prefix(m)),
        CaptureError::Browser(m) => CaptureError::Browser(prefix(m)),
        CaptureError::Refused(m) => CaptureError::Refused(prefix(m)),
        closed @ CaptureError::Closed(_) => closed,
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

fn format_name(f: ImageFormat) -> (&'static str, &'static str) {
    match f {
        ImageFormat::Png => ("png", "image/png"),
        ImageFormat::Jpeg => ("jpeg", "image/jpeg"),
        ImageFormat::Webp => ("webp", "image/webp"),
    }
}

impl SessionPage {
    pub(crate) fn hooks(&mut self) -> &mut Hooks {
        self.page.hooks.get_or_insert_with(Default::default)
    }

    /// Start operation `name`: its calls stop at `until` (or the session's deadline).
    pub(crate) fn begin(&mut self, name: &str, until: Instant) {
        let now = Instant::now();
        if until >= self.session_deadline {
            self.page.deadline = self.session_deadline;
            self.page.deadline_msg = self.session_deadline_msg.clone();
        } else {
            self.page.deadline = until;
            self.page.deadline_msg = format!("{name} timed out after {} ms", ms(until.saturating_duration_since(now)));
        }
    }

    /// An operation's error as the caller should see it (the memory guard's reason, a
    /// browser that exited).
    pub(crate) fn fail(&self, e: CaptureError) -> CaptureError {
        crate::pool::browser_error(e, &self.lease)
    }

    /// While a dialog is open (Manual policy), only reading and handling it work.
    pub(crate) fn check_dialog(&self, name: &str) -> Result<(), CaptureError> {
        let Some(d) = self.page.hooks.as_ref().and_then(|h| h.open_dialog.as_ref()) else {
            return Ok(());
        };
        let free =
            ["handle_dialog", "open_dialog", "dialogs", "console", "network", "counts", "device", "stop_screencast"];
        if free.contains(&name) {
            return Ok(());
        }
        Err(CaptureError::Script(format!(
            "a JavaScript {} dialog is open ({:?}): accept or dismiss it first",
            d.kind, d.message
        )))
    }

    /// Set the page up per the session's options, before anything loads.
    pub(crate) async fn setup(&mut self, opts: &SessionOptions) -> Result<(), CaptureError> {
        self.page.call(&s::RuntimeEnable {}).await?;
        let version = self.page.finish(self.page.conn.cmd(&p::GetVersion {}, None), "Browser.getVersion").await?;
        // Sites treat "HeadlessChrome" as a bot; a session stands for a person's browser.
        self.default_ua = version.user_agent.replace("HeadlessChrome", "Chrome");
        let device = opts.device.clone();
        self.apply_device(&device).await?;
        if let Some(locale) = &opts.locale {
            self.page
                .call(&s::SetLocaleOverride { locale: Some(locale) })
                .await
                .map_err(|e| CaptureError::Script(format!("locale '{locale}' was refused: {e}")))?;
        }
        self.apply_user_agent().await?;
        if let Some(tz) = &opts.timezone {
            self.page
                .call(&s::SetTimezoneOverride { timezone_id: tz })
                .await
                .map_err(|e| CaptureError::Script(format!("time zone '{tz}' was refused: {e}")))?;
        }
        if opts.geolocation.is_some() {
            self.set_geolocation(opts.geolocation).await?;
        }
        if let Some(scheme) = opts.color_scheme {
            let value = match scheme {
                super::ColorScheme::Light => "light",
                super::ColorScheme::Dark => "dark",
                super::ColorScheme::NoPreference => "no-preference",
            };
            let mut media = self.media.clone();
            media.features.insert("prefers-color-scheme".into(), value.into());
            self.apply_media(media).await?;
        }
        if !opts.extra_headers.is_empty() {
            self.set_extra_headers(&opts.extra_headers).await?;
        }
        for source in &opts.init_scripts {
            self.page.call(&s::AddScriptToEvaluateOnNewDocument { source }).await?;
        }
        Ok(())
    }

    async fn apply_device(&mut self, d: &Device) -> Result<(), CaptureError> {
        if d.width == 0 || d.height == 0 || d.width > 10_000 || d.height > 10_000 {
            return Err(CaptureError::Script(format!("a viewport of {}x{} is out of range", d.width, d.height)));
        }
        if !(0.25..=5.0).contains(&d.device_scale_factor) {
            return Err(CaptureError::Script(format!("a scale of {} is out of range (0.25-5)", d.device_scale_factor)));
        }
        let orientation = if d.landscape {
            p::ScreenOrientation { kind: "landscapePrimary", angle: 90 }
        } else {
            p::ScreenOrientation { kind: "portraitPrimary", angle: 0 }
        };
        let metrics = p::SetDeviceMetricsOverride {
            width: d.width,
            height: u64::from(d.height),
            device_scale_factor: d.device_scale_factor,
            mobile: d.mobile,
            screen_orientation: Some(orientation),
        };
        let touch = s::SetTouchEmulationEnabled { enabled: d.touch, max_touch_points: d.touch.then_some(5) };
        let r1 = self.page.send(&metrics);
        let r2 = self.page.send(&touch);
        self.page.finish(r1, "Emulation.setDeviceMetricsOverride").await?;
        self.page.finish(r2, "Emulation.setTouchEmulationEnabled").await?;
        self.page.prepared.view = crate::prepare::View {
            width: d.width,
            height: d.height,
            dsf: d.device_scale_factor,
            dark: self.page.prepared.view.dark,
        };
        Ok(())
    }

    pub(crate) async fn set_device(&mut self, d: Device) -> Result<(), CaptureError> {
        self.apply_device(&d).await?;
        let ua_changed = d.user_agent != self.device.user_agent;
        if ua_changed {
            self.user_agent = d.user_agent.clone();
        }
        self.device = d;
        if ua_changed {
            self.apply_user_agent().await?;
        }
        Ok(())
    }

    pub(crate) async fn apply_user_agent(&mut self) -> Result<(), CaptureError> {
        let ua = self.user_agent.clone().unwrap_or_else(|| self.default_ua.clone());
        if ua.is_empty() {
            return Ok(());
        }
        let cmd = s::SetUserAgentOverride { user_agent: &ua, accept_language: self.locale.as_deref() };
        let reply = self.page.send(&cmd);
        self.page.finish(reply, "Emulation.setUserAgentOverride").await.map(drop)
    }

    pub(crate) async fn set_geolocation(&mut self, at: Option<Geolocation>) -> Result<(), CaptureError> {
        if let Some(g) = at {
            if !(-90.0..=90.0).contains(&g.latitude) || !(-180.0..=180.0).contains(&g.longitude) || g.accuracy < 0.0 {
                return Err(CaptureError::Script(format!("({}, {}) is not a position", g.latitude, g.longitude)));
            }
            self.grant_permissions(&["geolocation".to_owned()], None).await?;
        }
        let cmd = s::SetGeolocationOverride {
            latitude: at.map(|g| g.latitude),
            longitude: at.map(|g| g.longitude),
            accuracy: at.map(|g| g.accuracy),
        };
        self.page.call(&cmd).await.map(drop)
    }

    pub(crate) async fn set_network(&mut self, c: NetworkConditions) -> Result<(), CaptureError> {
        let bps = |v: Option<u64>| v.map_or(-1.0, |b| b as f64);
        let cmd = s::EmulateNetworkConditions {
            offline: c.offline,
            latency: c.latency_ms as f64,
            download_throughput: bps(c.download_bps),
            upload_throughput: bps(c.upload_bps),
        };
        self.page.call(&cmd).await.map(drop)
    }

    pub(crate) async fn grant_permissions(
        &mut self,
        perms: &[String],
        origin: Option<&str>,
    ) -> Result<(), CaptureError> {
        // Chromium's clipboard is the whole browser's: its permissions stay denied (the
        // session's own clipboard needs none).
        let perms: Vec<String> =
            perms.iter().filter(|p| !super::clipboard::is_clipboard_permission(p)).cloned().collect();
        if perms.is_empty() {
            return Ok(());
        }
        let cmd = s::GrantPermissions { permissions: &perms, origin, browser_context_id: &self.context_id };
        let reply = self.page.conn.cmd(&cmd, None);
        self.page.finish(reply, "Browser.grantPermissions").await.map(drop)
    }

    pub(crate) async fn reset_permissions(&mut self) -> Result<(), CaptureError> {
        let reply = self.page.conn.cmd(&s::ResetPermissions { browser_context_id: &self.context_id }, None);
        self.page.finish(reply, "Browser.resetPermissions").await?;
        // A reset brings Chromium's defaults back (writing its clipboard allowed): deny again.
        for permission in super::clipboard::denied_permissions() {
            let p = json!({ "permission": permission, "setting": "denied", "browserContextId": self.context_id });
            let reply = self.page.conn.send("Browser.setPermission", &p, None);
            self.page.finish(reply, "Browser.setPermission").await?;
        }
        Ok(())
    }

    pub(crate) async fn set_extra_headers(&mut self, headers: &BTreeMap<String, String>) -> Result<(), CaptureError> {
        self.page.call(&s::SetExtraHttpHeaders { headers }).await.map(drop)
    }

    pub(crate) async fn cookies(&mut self) -> Result<Vec<Cookie>, CaptureError> {
        let reply = self.page.conn.cmd(&s::GetCookies { browser_context_id: &self.context_id }, None);
        Ok(self.page.finish(reply, "Storage.getCookies").await?.cookies)
    }

    pub(crate) async fn set_cookies(&mut self, cookies: &[Cookie]) -> Result<(), CaptureError> {
        for c in cookies {
            if c.url.is_none() && c.domain.is_empty() {
                return Err(CaptureError::Script(format!("cookie '{}' needs a url or a domain", c.name)));
            }
            if let Some(u) = &c.url {
                crate::page::navigate::check_scheme(u)?;
            }
        }
        let reply = self.page.conn.cmd(&s::SetCookies { cookies, browser_context_id: &self.context_id }, None);
        self.page.finish(reply, "Storage.setCookies").await.map(drop)
    }

    pub(crate) async fn clear_cookies(&mut self) -> Result<(), CaptureError> {
        let reply = self.page.conn.cmd(&s::ClearCookies { browser_context_id: &self.context_id }, None);
        self.page.finish(reply, "Storage.clearCookies").await.map(drop)
    }

    /// Our own script's value; a thrown exception is a script error.
    async fn script(&mut self, expression: &str) -> Result<Value, CaptureError> {
        self.page.eval_job(expression).await?.map_err(CaptureError::Script)
    }

    pub(crate) async fn local_storage(&mut self) -> Result<BTreeMap<String, String>, CaptureError> {
        let v = self
            .script("Object.fromEntries(Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]))")
            .await?;
        serde_json::from_value(v).map_err(|e| CaptureError::Browser(format!("unexpected localStorage: {e}")))
    }

    pub(crate) async fn set_local_storage(&mut self, key: &str, value: &str) -> Result<(), CaptureError> {
        let expr = format!("localStorage.setItem({}, {})", json!(key), json!(value));
        self.script(&expr).await.map(|_| ())
    }

    pub(crate) async fn clear_local_storage(&mut self) -> Result<(), CaptureError> {
        self.script("localStorage.clear(); sessionStorage.clear()").await.map(|_| ())
    }

    // ---- Navigation --------------------------------------------------------------------

    fn remaining_ms(&self) -> u64 {
        ms(self.page.deadline.saturating_duration_since(Instant::now()))
    }

    pub(crate) async fn goto(&mut self, url: &str, wait: WaitUntil) -> Result<Navigation, CaptureError> {
        let start = Instant::now();
        let mut tags = Vec::new();
        let source = PageSource::Url(url.to_owned());
        let timeout = self.remaining_ms();
        let loader = self.page.navigate(&source, wait, timeout, &mut tags).await?;
        self.release_objects();
        self.navigation(loader, start, tags).await
    }

    /// Wait for the navigation an action started: a new main-frame document, loaded.
    async fn await_new_document(&mut self, prev: Option<String>) -> Result<String, CaptureError> {
        loop {
            if let Some(l) = self.page.last_loader.clone()
                && Some(&l) != prev.as_ref()
                && self.page.lifecycle_has(&l, LC_LOAD)
            {
                return Ok(l);
            }
            match self.page.pump_until(self.page.deadline).await {
                Ok(()) => {}
                Err(Stop::Elapsed) => return Err(self.page.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
    }

    pub(crate) async fn history(&mut self, delta: i64) -> Result<Navigation, CaptureError> {
        let start = Instant::now();
        let h = self.page.call(&s::GetNavigationHistory {}).await?;
        let Some(entry) = usize::try_from(h.current_index + delta).ok().and_then(|i| h.entries.get(i)) else {
            let which = if delta < 0 { "back" } else { "forward" };
            return Err(CaptureError::Script(format!("there is no page to go {which} to")));
        };
        crate::page::navigate::check_scheme(&entry.url)?;
        let prev = self.page.last_loader.clone();
        self.page.call(&s::NavigateToHistoryEntry { entry_id: entry.id }).await?;
        let loader = self.await_new_document(prev).await?;
        self.release_objects();
        self.navigation(Some(loader), start, Vec::new()).await
    }

    pub(crate) async fn reload(&mut self) -> Result<Navigation, CaptureError> {
        let start = Instant::now();
        let prev = self.page.last_loader.clone();
        self.page.call(&s::Reload { ignore_cache: false }).await?;
        let loader = self.await_new_document(prev).await?;
        self.release_objects();
        self.navigation(Some(loader), start, Vec::new()).await
    }

    /// What the recorder saw of the document loaded by `loader`.
    async fn navigation(
        &mut self,
        loader: Option<String>,
        start: Instant,
        tags: Vec<String>,
    ) -> Result<Navigation, CaptureError> {
        let (title, final_url) = self.page.title_url().await?;
        let rec = &self.hooks().recorder;
        let since = |t: Instant| ms(t.saturating_duration_since(start));
        let mut nav = Navigation {
            status: None,
            final_url,
            title,
            redirects: Vec::new(),
            headers: Vec::new(),
            timing: NavigationTiming { total_ms: since(Instant::now()), ..Default::default() },
            tags,
        };
        let Some(loader) = loader else { return Ok(nav) };
        let main = rec.requests.iter().rev().find(|r| r.loader_id == loader && r.resource_type == "Document");
        if let Some(main) = main {
            let chain = rec.chain(&main.request_id.clone());
            if let Some((last, hops)) = chain.split_last() {
                nav.status = last.status;
                nav.headers = last.headers.clone();
                nav.timing.response_ms = last.response_at.map(since);
                nav.redirects =
                    hops.iter().map(|r| Redirect { url: r.url.clone(), status: r.status.unwrap_or(0) }).collect();
            }
        }
        nav.timing.dom_content_loaded_ms = rec.lifecycle(&loader, "DOMContentLoaded").map(since);
        nav.timing.load_ms = rec.lifecycle(&loader, "load").map(since);
        Ok(nav)
    }

    fn release_objects(&mut self) {
        self.page.conn.cmd_forget(&s::ReleaseObjectGroup { object_group: GROUP }, Some(&self.page.sid));
    }

    // ---- Scripts and elements ----------------------------------------------------------

    pub(crate) async fn evaluate(&mut self, expression: &str, await_promise: bool) -> Result<Value, CaptureError> {
        let cmd = p::Evaluate {
            expression,
            await_promise,
            return_by_value: true,
            user_gesture: true,
            // Not REPL mode: it would hand a promise back unawaited.
            repl_mode: false,
            silent: false,
            object_group: None,
        };
        let r = self.page.call(&cmd).await?;
        if let Some(ex) = r.exception_details {
            return Err(CaptureError::Script(format!("threw {}", ex.message())));
        }
        Ok(match (r.result.value, r.result.unserializable_value) {
            (Some(v), _) => v,
            (None, Some(u)) => Value::String(u),
            (None, None) => Value::Null,
        })
    }

    /// An element as a remote object id: a selector is waited for (until the operation's
    /// timeout), a ref must still exist, a point is the element there.
    async fn object(&mut self, t: &Target) -> Result<String, CaptureError> {
        match t {
            Target::Ref(id) => {
                let reply = self.page.send(&s::ResolveNode { backend_node_id: *id, object_group: GROUP });
                match self.page.reply_until(reply, self.page.deadline).await {
                    Ok(Ok(n)) => {
                        n.object.object_id.ok_or_else(|| CaptureError::Script(format!("no such element ref {id}")))
                    }
                    Ok(Err(crate::cdp::CdpError::Protocol(_))) => {
                        Err(CaptureError::Script(format!("no such element ref {id}")))
                    }
                    Ok(Err(e)) => Err(lost(&e, "DOM.resolveNode")),
                    Err(Stop::Elapsed) => Err(self.page.deadline_err()),
                    Err(Stop::Fail(e)) => Err(e),
                }
            }
            Target::Selector(sel) => {
                self.wait_selector(sel).await?;
                let expr = format!("document.querySelector({})", json!(sel));
                self.object_of(&expr).await?.ok_or_else(|| CaptureError::Script(format!("no element matches '{sel}'")))
            }
            Target::Point { x, y } => {
                let expr = format!("document.elementFromPoint({x}, {y})");
                self.object_of(&expr).await?.ok_or_else(|| CaptureError::Script(format!("no element at ({x}, {y})")))
            }
        }
    }

    /// The object an expression evaluates to (None for null).
    async fn object_of(&mut self, expression: &str) -> Result<Option<String>, CaptureError> {
        let cmd = p::Evaluate {
            expression,
            await_promise: false,
            return_by_value: false,
            user_gesture: true,
            repl_mode: false,
            silent: true,
            object_group: Some(GROUP),
        };
        let r = self.page.call(&cmd).await?;
        if let Some(ex) = r.exception_details {
            return Err(CaptureError::Script(ex.message()));
        }
        Ok(r.result.object_id)
    }

    /// Call `function` with `this` = the object and `args`, returning its value.
    async fn call_on(&mut self, object_id: &str, function: &str, args: Vec<Value>) -> Result<Value, CaptureError> {
        let cmd = s::CallFunctionOn {
            function_declaration: function,
            object_id,
            arguments: args.into_iter().map(|value| s::CallArgument { value }).collect(),
            return_by_value: true,
            await_promise: true,
            user_gesture: true,
        };
        let r = self.page.call(&cmd).await?;
        if let Some(ex) = r.exception_details {
            return Err(CaptureError::Script(ex.message()));
        }
        Ok(r.result.value.unwrap_or(Value::Null))
    }

    /// Wait (until the operation's timeout) for a selector to match.
    async fn wait_selector(&mut self, sel: &str) -> Result<(), CaptureError> {
        let sel_json = json!(sel).to_string();
        loop {
            let left = self.remaining_ms();
            // The script gives up a little before the deadline, so its answer (no match)
            // is the one reported.
            let script = scripts::wait_selector(&sel_json, left.saturating_sub(50));
            match self.page.eval(&script, self.page.deadline, false).await {
                Ok(Ok(Value::Bool(true))) => return Ok(()),
                Ok(Ok(Value::String(s))) if s == "invalid" => {
                    return Err(CaptureError::Script(format!("'{sel}' is not a valid CSS selector")));
                }
                Ok(Ok(_)) => {
                    return Err(CaptureError::Timeout(format!(
                        "no element matches '{sel}' ({})",
                        self.page.deadline_err()
                    )));
                }
                // The document was replaced while waiting: look again in the new one.
                Ok(Err(_)) if left > 0 => self.page.pump_for((Instant::now() + SETTLE).min(self.page.deadline)).await?,
                Ok(Err(m)) => return Err(CaptureError::Script(m)),
                Err(Stop::Elapsed) => return Err(self.page.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
    }

    /// Where to touch or click a target: its centre, scrolled into view.
    async fn point(&mut self, t: &Target) -> Result<(f64, f64), CaptureError> {
        if let Target::Point { x, y } = t {
            return Ok((*x, *y));
        }
        if let Target::Ref(id) = t {
            // Quads from the DOM (works for any node with a box, text included).
            let r = self.page.call(&s::ScrollIntoViewIfNeeded { backend_node_id: *id }).await;
            if r.is_ok()
                && let Ok(q) = self.page.call(&s::GetContentQuads { backend_node_id: *id }).await
                && let Some(quad) = q.quads.first().filter(|q| q.len() == 8)
            {
                // Quads are relative to the visual viewport already, as inputs are.
                let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
                let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
                let obj = self.object(t).await?;
                let hit = self.call_on(&obj, HITS, vec![json!(x), json!(y)]).await?;
                if hit.get("ok") == Some(&Value::Bool(false)) {
                    let by = hit.get("by").and_then(Value::as_str).unwrap_or("another element");
                    return Err(CaptureError::Script(format!(
                        "{t} is covered by {by}: an input there would not reach it"
                    )));
                }
                return Ok((x, y));
            }
        }
        let obj = self.object(t).await?;
        let v = self.call_on(&obj, AIM, Vec::new()).await?;
        match (v.get("x").and_then(Value::as_f64), v.get("y").and_then(Value::as_f64)) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(CaptureError::Script(match v.get("error").and_then(Value::as_str) {
                Some("covered") => format!(
                    "{t} is covered by {}: an input there would not reach it",
                    v.get("by").and_then(Value::as_str).unwrap_or("another element")
                ),
                Some("offscreen") => format!("{t} could not be scrolled into the visible part of the page"),
                _ => format!("{t} is not visible (it has no box)"),
            })),
        }
    }

    /// Let the page react to an input; if it started a navigation, wait for it to load.
    async fn settle(&mut self, loads_before: u32) -> Result<(), CaptureError> {
        let until = (Instant::now() + SETTLE).min(self.page.deadline);
        self.page.pump_for(until).await?;
        if self.page.started_loading != loads_before {
            while self.page.loading {
                match self.page.pump_until(self.page.deadline).await {
                    Ok(()) => {}
                    // The action happened; the page is just slow: the caller waits on.
                    Err(Stop::Elapsed) => break,
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
            self.release_objects();
        }
        Ok(())
    }

    /// Run an input command; a dialog it opens (Manual policy) counts as its effect.
    async fn input<C: p::Command>(&mut self, cmd: &C) -> Result<(), CaptureError> {
        match self.page.call(cmd).await {
            Ok(_) => Ok(()),
            Err(_) if self.page.hooks.as_ref().is_some_and(|h| h.open_dialog.is_some()) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn dialog_open(&self) -> bool {
        self.page.hooks.as_ref().is_some_and(|h| h.open_dialog.is_some())
    }

    pub(crate) async fn click(&mut self, t: &Target, clicks: u32) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        let before = self.page.started_loading;
        let ev = |kind: &'static str, button: &'static str, n: u32| p::DispatchMouseEvent {
            kind,
            x,
            y,
            button,
            click_count: n,
            ..Default::default()
        };
        self.input(&ev("mouseMoved", "none", 0)).await?;
        for n in 1..=clicks {
            self.input(&ev("mousePressed", "left", n)).await?;
            if self.dialog_open() {
                return Ok(());
            }
            self.input(&ev("mouseReleased", "left", n)).await?;
            if self.dialog_open() {
                return Ok(());
            }
        }
        self.settle(before).await
    }

    pub(crate) async fn hover(&mut self, t: &Target) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        self.input(&p::DispatchMouseEvent { kind: "mouseMoved", x, y, button: "none", ..Default::default() }).await?;
        let until = (Instant::now() + SETTLE).min(self.page.deadline);
        self.page.pump_for(until).await
    }

    fn finger(x: f64, y: f64, id: u32) -> s::TouchPoint {
        s::TouchPoint { x, y, id, radius_x: 1.0, radius_y: 1.0, force: 1.0 }
    }

    async fn touch(&mut self, kind: &'static str, points: Vec<s::TouchPoint>) -> Result<(), CaptureError> {
        self.input(&s::DispatchTouchEvent { kind, touch_points: points }).await
    }

    pub(crate) async fn tap(&mut self, t: &Target, taps: u32) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        let before = self.page.started_loading;
        for i in 0..taps {
            if i > 0 {
                // Apart enough to be two taps, close enough to be a double tap.
                let until = (Instant::now() + Duration::from_millis(60)).min(self.page.deadline);
                self.page.pump_for(until).await?;
            }
            self.touch("touchStart", vec![Self::finger(x, y, 0)]).await?;
            self.touch("touchEnd", Vec::new()).await?;
            if self.dialog_open() {
                return Ok(());
            }
        }
        self.settle(before).await
    }

    pub(crate) async fn long_press(&mut self, t: &Target, hold: Duration) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        let before = self.page.started_loading;
        self.touch("touchStart", vec![Self::finger(x, y, 0)]).await?;
        let until = Instant::now() + hold;
        if until > self.page.deadline {
            return Err(self.page.deadline_err());
        }
        self.page.pump_for(until).await?;
        self.touch("touchEnd", Vec::new()).await?;
        self.settle(before).await
    }

    pub(crate) async fn swipe(
        &mut self,
        from: &Target,
        dx: f64,
        dy: f64,
        duration: Duration,
    ) -> Result<(), CaptureError> {
        let (x, y) = self.point(from).await?;
        let before = self.page.started_loading;
        let steps = (ms(duration) / 16).clamp(5, 60) as u32;
        let start = Instant::now();
        if start + duration > self.page.deadline {
            return Err(self.page.deadline_err());
        }
        self.touch("touchStart", vec![Self::finger(x, y, 0)]).await?;
        for i in 1..=steps {
            let f = f64::from(i) / f64::from(steps);
            self.page.pump_for(start + duration.mul_f64(f)).await?;
            self.touch("touchMove", vec![Self::finger(x + dx * f, y + dy * f, 0)]).await?;
        }
        self.touch("touchEnd", Vec::new()).await?;
        self.settle(before).await
    }

    pub(crate) async fn pinch(&mut self, centre: &Target, scale: f64) -> Result<(), CaptureError> {
        if !(0.1..=10.0).contains(&scale) {
            return Err(CaptureError::Script(format!("a pinch scale of {scale} is out of range (0.1-10)")));
        }
        let (x, y) = self.point(centre).await?;
        // Two fingers on a horizontal line through the centre, moving apart or together.
        let d0 = 60.0;
        let d1 = d0 * scale;
        let steps = 12;
        let start = Instant::now();
        let duration = Duration::from_millis(300);
        let at = |d: f64| vec![Self::finger(x - d / 2.0, y, 0), Self::finger(x + d / 2.0, y, 1)];
        self.touch("touchStart", at(d0)).await?;
        for i in 1..=steps {
            let f = f64::from(i) / f64::from(steps);
            self.page.pump_for((start + duration.mul_f64(f)).min(self.page.deadline)).await?;
            self.touch("touchMove", at(d0 + (d1 - d0) * f)).await?;
        }
        self.touch("touchEnd", Vec::new()).await?;
        let until = (Instant::now() + SETTLE).min(self.page.deadline);
        self.page.pump_for(until).await
    }

    pub(crate) async fn scroll(&mut self, at: Option<&Target>, dx: f64, dy: f64) -> Result<(), CaptureError> {
        if dx == 0.0 && dy == 0.0 {
            if let Some(t) = at {
                self.point(t).await?;
            }
            return Ok(());
        }
        let (x, y) = match at {
            Some(t) => self.point(t).await?,
            None => (f64::from(self.device.width) / 2.0, f64::from(self.device.height) / 2.0),
        };
        let before = self.script("[scrollX, scrollY]").await?;
        let wheel = p::DispatchMouseEvent {
            kind: "mouseWheel",
            x,
            y,
            button: "none",
            delta_x: Some(dx),
            delta_y: Some(dy),
            ..Default::default()
        };
        self.input(&wheel).await?;
        // Wheel scrolling is asynchronous: wait (briefly) until the window has moved.
        let until = (Instant::now() + Duration::from_millis(500)).min(self.page.deadline);
        while Instant::now() < until {
            if self.script("[scrollX, scrollY]").await? != before {
                break;
            }
            self.page.pump_for((Instant::now() + Duration::from_millis(20)).min(until)).await?;
        }
        Ok(())
    }

    async fn key(
        &mut self,
        kind: &'static str,
        key: &keys::Key,
        modifiers: u32,
        with_text: bool,
    ) -> Result<(), CaptureError> {
        let text = if with_text { key.text.clone() } else { None };
        // A clipboard shortcut goes without its key code: Blink then runs no clipboard
        // command of its own, and the page's shim uses the session's clipboard.
        let key_code = match kind {
            "keyDown" | "rawKeyDown"
                if super::clipboard::shortcut(u64::from(key.key_code), u64::from(modifiers)).is_some() =>
            {
                0
            }
            _ => key.key_code,
        };
        let cmd = s::DispatchKeyEvent {
            kind,
            modifiers,
            unmodified_text: text.clone(),
            text,
            key: key.key.clone(),
            code: key.code.clone(),
            windows_virtual_key_code: key_code,
            native_virtual_key_code: key_code,
        };
        self.input(&cmd).await
    }

    pub(crate) async fn type_text(&mut self, text: &str) -> Result<(), CaptureError> {
        for c in text.chars() {
            let key = if c == '\n' { keys::named("Enter") } else { keys::char_key(c) };
            match key {
                Some(k) => {
                    self.key("keyDown", &k, 0, true).await?;
                    self.key("keyUp", &k, 0, false).await?;
                }
                None => {
                    let mut buf = [0u8; 4];
                    self.input(&s::InsertText { text: c.encode_utf8(&mut buf) }).await?;
                }
            }
            if self.dialog_open() {
                return Ok(());
            }
        }
        Ok(())
    }

    pub(crate) async fn press(&mut self, spec: &str) -> Result<(), CaptureError> {
        let (mods, key) = keys::chord(spec).map_err(CaptureError::Script)?;
        let before = self.page.started_loading;
        let held: Vec<(u32, &str)> =
            [(keys::CONTROL, "Control"), (keys::ALT, "Alt"), (keys::META, "Meta"), (keys::SHIFT, "Shift")]
                .into_iter()
                .filter(|(bit, _)| mods & bit != 0)
                .collect();
        let mut down = 0;
        for (bit, name) in &held {
            down |= bit;
            let k = keys::named(name).unwrap_or_else(|| key.clone());
            self.key("rawKeyDown", &k, down, false).await?;
        }
        // A chord with Control, Alt or Meta types nothing.
        let types = key.text.is_some() && mods & (keys::CONTROL | keys::ALT | keys::META) == 0;
        self.key(if types { "keyDown" } else { "rawKeyDown" }, &key, mods, types).await?;
        if !self.dialog_open() {
            self.key("keyUp", &key, mods, false).await?;
        }
        for (bit, name) in held.iter().rev() {
            down &= !bit;
            let k = keys::named(name).unwrap_or_else(|| key.clone());
            self.key("keyUp", &k, down, false).await?;
        }
        if self.dialog_open() {
            return Ok(());
        }
        self.settle(before).await
    }

    /// Replace a field's content; the field's value afterwards (a page may reformat it).
    /// Fails when the field did not take the focus or its content did not change.
    pub(crate) async fn fill(&mut self, t: &Target, text: &str) -> Result<String, CaptureError> {
        let obj = self.object(t).await?;
        let before = self.call_on(&obj, FIELD_VALUE, Vec::new()).await?;
        match self.call_on(&obj, FOCUS_SELECT, Vec::new()).await? {
            Value::Bool(true) => {}
            Value::String(s) if s == "nofocus" => {
                return Err(CaptureError::Script(format!("{t} cannot take the focus (disabled or hidden)")));
            }
            _ => return Err(CaptureError::Script(format!("{t} is not a text field"))),
        }
        if text.is_empty() {
            let del = keys::named("Delete").unwrap_or_else(unreachable_key);
            self.key("rawKeyDown", &del, 0, false).await?;
            self.key("keyUp", &del, 0, false).await?;
        } else {
            self.type_text(text).await?;
        }
        if self.dialog_open() {
            return Ok(text.to_owned());
        }
        let after = self.call_on(&obj, FIELD_VALUE, Vec::new()).await?;
        let after = after.as_str().unwrap_or_default().to_owned();
        if after != text && before.as_str() == Some(after.as_str()) {
            return Err(CaptureError::Script(format!(
                "{t} still holds {after:?}: the field did not accept the keys (read-only, or the page refused them)"
            )));
        }
        Ok(after)
    }

    /// Type into a field: aim a tap (`touch`) or click at it, check that it took the focus,
    /// type, and check that its content changed. The field's value afterwards.
    pub(crate) async fn type_into(&mut self, t: &Target, text: &str, touch: bool) -> Result<String, CaptureError> {
        let obj = self.object(t).await?;
        let before = self.call_on(&obj, FIELD_VALUE, Vec::new()).await?;
        if touch {
            self.tap(t, 1).await?;
        } else {
            self.click(t, 1).await?;
        }
        if self.dialog_open() {
            return Ok(String::new());
        }
        // A tap may have navigated (a link): the element is gone then.
        let obj = self.object(t).await?;
        let focus = self.call_on(&obj, HAS_FOCUS, Vec::new()).await?;
        if focus.get("focused") != Some(&Value::Bool(true)) {
            let on = focus.get("on").and_then(Value::as_str).unwrap_or("nothing");
            return Err(CaptureError::Script(format!("{t} did not take the focus (it is on {on}): nothing was typed")));
        }
        self.type_text(text).await?;
        if self.dialog_open() || text.is_empty() {
            return Ok(text.to_owned());
        }
        let after = match self.object(t).await {
            Ok(obj) => self.call_on(&obj, FIELD_VALUE, Vec::new()).await?,
            // Typing (an Enter in the text) left the page.
            Err(_) => return Ok(text.to_owned()),
        };
        if after == before && after.is_string() {
            return Err(CaptureError::Script(format!(
                "{t} still holds {after}: the field did not accept the keys (read-only, or the page refused them)"
            )));
        }
        Ok(after.as_str().unwrap_or_default().to_owned())
    }

    pub(crate) async fn select_option(&mut self, t: &Target, values: &[String]) -> Result<Vec<String>, CaptureError> {
        let obj = self.object(t).await?;
        let r = self.call_on(&obj, SELECT, vec![json!(values)]).await?;
        if let Some(e) = r.get("error").and_then(Value::as_str) {
            return Err(CaptureError::Script(format!("{t}: {e}")));
        }
        Ok(serde_json::from_value(r["selected"].clone()).unwrap_or_default())
    }

    pub(crate) async fn set_checked(&mut self, t: &Target, checked: bool) -> Result<(), CaptureError> {
        let obj = self.object(t).await?;
        match self.call_on(&obj, CHECKED, Vec::new()).await? {
            Value::Bool(now) if now == checked => return Ok(()),
            Value::Bool(_) => {}
            _ => return Err(CaptureError::Script(format!("{t} is not a checkbox or radio button"))),
        }
        self.click(t, 1).await?;
        let obj = self.object(t).await?;
        match self.call_on(&obj, CHECKED, Vec::new()).await? {
            Value::Bool(now) if now == checked => Ok(()),
            _ => Err(CaptureError::Script(format!(
                "{t} did not become {}",
                if checked { "checked" } else { "unchecked" }
            ))),
        }
    }

    pub(crate) async fn set_input_files(&mut self, t: &Target, files: &[FileUpload]) -> Result<(), CaptureError> {
        let total: usize = files.iter().map(|f| f.bytes.len()).sum();
        if total > MAX_UPLOAD_BYTES {
            return Err(CaptureError::Script(format!(
                "{total} bytes of files is more than the {MAX_UPLOAD_BYTES} allowed"
            )));
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let arg: Vec<Value> =
            files.iter().map(|f| json!({ "name": f.name, "type": f.mime_type, "b64": b64.encode(&f.bytes) })).collect();
        let obj = self.object(t).await?;
        match self.call_on(&obj, FILES, vec![Value::Array(arg)]).await? {
            Value::Number(n) if n.as_u64() == Some(files.len() as u64) => Ok(()),
            Value::String(e) => Err(CaptureError::Script(format!("{t}: {e}"))),
            other => Err(CaptureError::Script(format!("{t} took {other} files"))),
        }
    }

    pub(crate) async fn handle_dialog(
        &mut self,
        accept: bool,
        prompt_text: Option<String>,
    ) -> Result<super::Dialog, CaptureError> {
        let Some(d) = self.page.hooks.as_ref().and_then(|h| h.open_dialog.clone()) else {
            return Err(CaptureError::Script("no dialog is open".into()));
        };
        self.page.call(&p::HandleDialog { accept, prompt_text }).await?;
        self.hooks().open_dialog = None;
        Ok(d)
    }

    pub(crate) async fn wait_for(&mut self, what: &WaitFor) -> Result<(), CaptureError> {
        match what {
            WaitFor::Selector(sel) => self.wait_selector(sel).await,
            WaitFor::Text(text) => loop {
                let expr = format!(
                    "(() => {{ const t = {}; return !!document.body && (document.body.innerText || '').includes(t); }})()",
                    json!(text)
                );
                if self.page.eval_job(&expr).await? == Ok(Value::Bool(true)) {
                    return Ok(());
                }
                self.poll_pause().await?;
            },
            WaitFor::Url(want) => {
                let exact = url::Url::parse(want).ok().map(|u| u.to_string());
                loop {
                    if let Ok(Value::String(href)) = self.page.eval_job("location.href").await? {
                        let hit = match &exact {
                            Some(u) => &href == u || href == *want,
                            None => href.contains(want.as_str()),
                        };
                        if hit {
                            return Ok(());
                        }
                    }
                    self.poll_pause().await?;
                }
            }
            WaitFor::NetworkIdle => {
                if self.page.wait_idle(self.page.deadline, Duration::from_millis(500)).await? {
                    Ok(())
                } else {
                    Err(self.page.deadline_err())
                }
            }
        }
    }

    /// Handle events for a moment between two looks at the page (a poll that notices a
    /// crash, and ends at the deadline).
    async fn poll_pause(&mut self) -> Result<(), CaptureError> {
        if Instant::now() >= self.page.deadline {
            return Err(self.page.deadline_err());
        }
        self.page.pump_for((Instant::now() + SETTLE).min(self.page.deadline)).await
    }

    pub(crate) async fn element_string(&mut self, t: Option<&Target>, function: &str) -> Result<String, CaptureError> {
        let obj = match t {
            Some(t) => self.object(t).await?,
            None => self
                .object_of("document.body || document.documentElement")
                .await?
                .ok_or_else(|| CaptureError::Script("the page has no document".into()))?,
        };
        Ok(self.call_on(&obj, function, Vec::new()).await?.as_str().unwrap_or_default().to_owned())
    }

    pub(crate) async fn accessibility(&mut self) -> Result<Vec<AxNode>, CaptureError> {
        let tree = self.page.call(&s::GetFullAxTree {}).await?;
        let text = |v: Option<s::AxValue>| match v.and_then(|v| v.value) {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        Ok(tree
            .nodes
            .into_iter()
            .filter(|n| !n.ignored)
            .map(|n| AxNode {
                properties: n.properties.into_iter().map(|p| (p.name, p.value.value.unwrap_or(Value::Null))).collect(),
                node_id: n.node_id,
                parent_id: n.parent_id,
                child_ids: n.child_ids,
                role: text(n.role),
                name: text(n.name),
                value: n.value.and_then(|v| v.value),
                description: n.description.and_then(|d| d.value).and_then(|v| v.as_str().map(str::to_owned)),
                backend_node_id: n.backend_dom_node_id,
            })
            .collect())
    }

    // ---- Output ------------------------------------------------------------------------

    pub(crate) async fn screenshot(&mut self, spec: &ScreenshotSpec) -> Result<Image, CaptureError> {
        let (format, content_type) = format_name(spec.format);
        let dsf = self.device.device_scale_factor.max(0.1);
        let clip = match &spec.area {
            ShotArea::Viewport => None,
            ShotArea::FullPage => {
                let m = self.page.call(&s::GetLayoutMetrics {}).await?;
                let cap = crate::page::fullpage::MAX_OUTPUT_HEIGHT / dsf;
                let (w, h) = (m.css_content_size.width.max(1.0), m.css_content_size.height.clamp(1.0, cap));
                Some(p::Clip { x: 0.0, y: 0.0, width: w, height: h, scale: 1.0 })
            }
            ShotArea::Element(t) => {
                let obj = self.object(t).await?;
                let r = self.call_on(&obj, RECT, Vec::new()).await?;
                let num = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                if num("w") <= 0.0 || num("h") <= 0.0 {
                    return Err(CaptureError::Script(format!("{t} is not visible (it has no box)")));
                }
                Some(p::Clip { x: num("x"), y: num("y"), width: num("w"), height: num("h"), scale: 1.0 })
            }
            ShotArea::Clip { x, y, width, height } => {
                if *width <= 0.0 || *height <= 0.0 {
                    return Err(CaptureError::Script("an empty clip".into()));
                }
                Some(p::Clip { x: *x, y: *y, width: *width, height: *height, scale: 1.0 })
            }
        };
        let cmd = p::CaptureScreenshot {
            format,
            quality: (spec.format != ImageFormat::Png).then_some(spec.quality.unwrap_or(80).clamp(1, 100)),
            capture_beyond_viewport: clip.is_some(),
            clip,
            from_surface: true,
            optimize_for_speed: false,
        };
        let bytes = self.page.screenshot(&cmd).await?;
        let (width, height) = crate::encode::image_size(&bytes).unwrap_or((0, 0));
        Ok(Image { bytes, width, height, content_type })
    }

    pub(crate) async fn pdf(&mut self, spec: &PdfSpec) -> Result<Vec<u8>, CaptureError> {
        if !(0.1..=2.0).contains(&spec.scale.unwrap_or(1.0)) {
            return Err(CaptureError::Script("a PDF scale must be between 0.1 and 2".into()));
        }
        let cmd = p::PrintToPdf {
            print_background: spec.print_background,
            prefer_css_page_size: true,
            paper_width: spec.paper_width,
            paper_height: spec.paper_height,
            landscape: spec.landscape,
            scale: spec.scale,
        };
        let r = self.page.call(&cmd).await?;
        crate::encode::decode_base64(&r.data, "PDF")
    }

    pub(crate) async fn start_screencast(&mut self, o: ScreencastOptions) -> Result<Screencast, CaptureError> {
        let (tx, rx) = tokio::sync::mpsc::channel(super::SCREENCAST_BUFFER);
        let format = match o.format {
            ImageFormat::Png => "png",
            _ => "jpeg",
        };
        self.hooks().screencast = Some(tx);
        let cmd = s::StartScreencast {
            format,
            quality: o.quality.clamp(1, 100),
            max_width: o.max_width.max(16),
            max_height: o.max_height.max(16),
            every_nth_frame: o.every_nth_frame.max(1),
        };
        self.page.call(&cmd).await?;
        self.screencasting = true;
        Ok(Screencast { rx })
    }

    pub(crate) async fn stop_screencast(&mut self) -> Result<(), CaptureError> {
        self.hooks().screencast = None;
        if self.screencasting {
            self.screencasting = false;
            self.page.call(&s::StopScreencast {}).await?;
        }
        Ok(())
    }

    /// Send the whole emulated-media state and keep it (see [`super::EmulatedMedia`]).
    pub(crate) async fn apply_media(&mut self, media: super::EmulatedMedia) -> Result<(), CaptureError> {
        self.cdp("Emulation.setEmulatedMedia", media.params()).await.map(|_| ())
    }

    pub(crate) async fn cdp(&mut self, method: &str, mut params: Value) -> Result<Value, CaptureError> {
        super::filter::check_page_command(method, &params).map_err(CaptureError::Refused)?;
        let command =
            if method == "Input.dispatchKeyEvent" { super::clipboard::guard_key_event(&mut params) } else { None };
        let reply = self.page.conn.send(method, &params, Some(&self.page.sid));
        if let Some(op) = command {
            let expression = super::clipboard::command_expression(op);
            self.page.conn.send_forget("Runtime.evaluate", &json!({ "expression": expression }), Some(&self.page.sid));
        }
        match self.page.reply_until(reply, self.page.deadline).await {
            Ok(Ok(v)) => {
                // A raw call replaces the whole emulated media, as the tools' calls do.
                if method == "Emulation.setEmulatedMedia" {
                    self.media = super::EmulatedMedia::from_params(&params);
                }
                Ok(v)
            }
            Ok(Err(crate::cdp::CdpError::Protocol(m))) => Err(CaptureError::Script(m)),
            Ok(Err(e)) => Err(lost(&e, method)),
            Err(Stop::Elapsed) => Err(self.page.deadline_err()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }
}

/// The Delete key always exists; this keeps `fill` free of a panic path.
fn unreachable_key() -> keys::Key {
    keys::Key { key: "Delete".into(), code: "Delete".into(), key_code: 46, text: None }
}
