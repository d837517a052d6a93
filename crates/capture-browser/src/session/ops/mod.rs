//! The operations of a session, on the page its task owns: here its setup and state
//! (device, user agent, position, network, permissions, headers, cookies, storage, emulated
//! media, raw commands); going places in `navigate`, inputs in `input`, captures in
//! `capture`.

use std::collections::BTreeMap;
use std::time::Duration;

use capture_core::profile::{BrowserState, OriginState};
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

mod capture;
mod input;
mod navigate;

/// Objects a session keeps for element operations; released on each navigation.
const GROUP: &str = "capture-session";
/// A pause after an input action, for the page to react (and to see whether it starts a
/// navigation).
const SETTLE: Duration = Duration::from_millis(100);

/// Scroll an element (or a text node's parent) into view; its centre, or null when it
/// has no box.
/// Where to aim an input at an element: scroll it into view, take the part of its box inside
/// the visual viewport (what the user sees: after a rotation or a zoom it is not the layout
/// viewport), and give that part's centre relative to the visual viewport (CSS pixels, not
/// scaled by the zoom), the coordinates `Input.dispatch*Event` takes. Answers `{x, y}` or
/// `{error}`; [`HITS`] then checks that the element is what a pointer there hits.
const AIM: &str = "function() { const el = this.nodeType === 1 ? this : this.parentElement; if (!el) return { error: 'gone' }; el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); const r = el.getBoundingClientRect(); if (r.width <= 0 || r.height <= 0) return { error: 'hidden' }; const vv = window.visualViewport || { offsetLeft: 0, offsetTop: 0, width: innerWidth, height: innerHeight }; const left = Math.max(r.left, vv.offsetLeft), right = Math.min(r.right, vv.offsetLeft + vv.width); const top = Math.max(r.top, vv.offsetTop), bottom = Math.min(r.bottom, vv.offsetTop + vv.height); if (right <= left || bottom <= top) return { error: 'offscreen' }; return { x: (left + right) / 2 - vv.offsetLeft, y: (top + bottom) / 2 - vv.offsetTop }; }";
/// Whether a pointer at a point relative to the visual viewport (main frame) hits this
/// element (itself, inside it, one of its labels, or a label's control); else `{by}` names
/// what it hits instead. Elements of other frames are not checked (their coordinates differ).
const HITS: &str = "function(x, y) { const el = this.nodeType === 1 ? this : this.parentElement; if (!el || window !== window.top) return { ok: true }; const vv = window.visualViewport || { offsetLeft: 0, offsetTop: 0 }; const cx = x + vv.offsetLeft, cy = y + vv.offsetTop; const root = el.getRootNode(); const hit = (root.elementFromPoint ? root : document).elementFromPoint(cx, cy); if (!hit || hit === el || el.contains(hit) || (el.labels && Array.from(el.labels).some((l) => l.contains(hit))) || (el.tagName === 'LABEL' && el.control === hit)) return { ok: true }; const id = hit.id ? '#' + hit.id : ''; const cls = typeof hit.className === 'string' && hit.className.trim() ? '.' + hit.className.trim().split(/\\s+/).join('.') : ''; return { ok: false, by: '<' + hit.tagName.toLowerCase() + id + cls + '>' }; }";
/// Whether the focus is on this element (or inside it, or on the control of this label);
/// else a description of where it is.
const HAS_FOCUS: &str = "function() { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; const el = this.nodeType === 1 ? this : this.parentElement; if (a && el && (a === el || el.contains(a) || (el.tagName === 'LABEL' && el.control === a) || (el.shadowRoot && el.shadowRoot.contains(a)))) return { focused: true }; const d = !a ? 'nothing' : '<' + a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') + '>'; return { focused: false, on: d }; }";
/// Focus the element itself (a label's control; a text node's parent), scrolled into view,
/// and put the caret at the end of what it holds (typing appends), as a tap at the end of a
/// field would. The focus is checked afterwards with [`HAS_FOCUS`].
const FOCUS: &str = "function() { let el = this.nodeType === 1 ? this : this.parentElement; if (!el) return false; if (el.tagName === 'LABEL' && el.control) el = el.control; el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); el.focus({ preventScroll: true }); if (document.activeElement !== el) return false; try { if (typeof el.value === 'string' && el.setSelectionRange) el.setSelectionRange(el.value.length, el.value.length); } catch (e) {} if (el.isContentEditable) { const r = document.createRange(); r.selectNodeContents(el); r.collapse(false); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } return true; }";
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
        CaptureError::Deadline(m) => CaptureError::Deadline(prefix(m)),
        CaptureError::Script(m) => CaptureError::Script(prefix(m)),
        CaptureError::Browser(m) => CaptureError::Browser(prefix(m)),
        CaptureError::Refused(m) => CaptureError::Refused(prefix(m)),
        CaptureError::Rejected(m) => CaptureError::Rejected(prefix(m)),
        CaptureError::NotFound(m) => CaptureError::NotFound(prefix(m)),
        CaptureError::Unavailable(m) => CaptureError::Unavailable(prefix(m)),
        CaptureError::SignedOut(m) => CaptureError::SignedOut(prefix(m)),
        CaptureError::Element(fault, m) => CaptureError::Element(fault, prefix(m)),
        CaptureError::DialogOpen(m) => CaptureError::DialogOpen(prefix(m)),
        // `blocked: <vendor>` and `proxy_failed: <name>` stay first.
        blocked @ CaptureError::Blocked(_) => blocked,
        failed @ CaptureError::ProxyFailed(_) => failed,
        closed @ CaptureError::Closed(_) => closed,
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

fn format_name(f: ImageFormat) -> (&'static str, &'static str) {
    match f {
        ImageFormat::Jpeg => ("jpeg", "image/jpeg"),
        ImageFormat::Webp => ("webp", "image/webp"),
        // A session's screenshot is an image: videos are captures' own.
        _ => ("png", "image/png"),
    }
}

impl SessionPage {
    pub(crate) fn hooks(&mut self) -> &mut Hooks {
        let h = self.page.hooks.get_or_insert_with(|| Box::new(Hooks::default()));
        if !(h.as_mut() as &mut dyn std::any::Any).is::<Hooks>() {
            *h = Box::new(Hooks::default());
        }
        (h.as_mut() as &mut dyn std::any::Any).downcast_mut::<Hooks>().expect("a session page's hooks are a session's")
    }

    /// The session's hooks, if set.
    pub(crate) fn hooks_ref(&self) -> Option<&Hooks> {
        self.page.hooks.as_deref().and_then(|h| (h as &dyn std::any::Any).downcast_ref::<Hooks>())
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
        let Some(d) = self.hooks_ref().and_then(|h| h.open_dialog.as_ref()) else {
            return Ok(());
        };
        let free =
            ["handle_dialog", "open_dialog", "dialogs", "console", "network", "counts", "device", "stop_screencast"];
        if free.contains(&name) {
            return Ok(());
        }
        Err(CaptureError::DialogOpen(format!(
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
        self.page.arm_consent(opts.cookie_consent).await?;
        if let Some(state) = &opts.state {
            self.page.restore(state).await?;
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
            mobile: d.mobile,
            ..self.page.prepared.view
        };
        Ok(())
    }

    pub(crate) async fn set_device(&mut self, d: Device) -> Result<(), CaptureError> {
        self.apply_device(&d).await?;
        let ua_changed = d.user_agent != self.device.user_agent;
        if ua_changed {
            self.user_agent = d.user_agent.as_deref().map(str::to_string);
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

    /// What the session would keep as a profile: every cookie of its context, the
    /// localStorage of each origin its pages loaded a document from, and the IndexedDB
    /// databases of the origin its page shows now.
    pub(crate) async fn storage_state(&mut self) -> Result<BrowserState, CaptureError> {
        let cookies = self.cookies().await?.into_iter().map(crate::state::state_cookie).collect();
        let here = self.script("location.href").await.ok().and_then(|v| v.as_str().map(str::to_owned));
        let documents = self
            .hooks()
            .recorder
            .requests
            .iter()
            .filter(|r| r.resource_type == "Document" && r.status.is_some())
            .map(|r| r.url.clone());
        let origins = crate::state::origins_of(documents.chain(here.clone()));
        let here_origin = here.as_deref().and_then(crate::state::origin_of);
        let mut out = Vec::with_capacity(origins.len());
        for origin in origins {
            let local_storage = if Some(&origin) == here_origin.as_ref() {
                // The page's own, read in the page.
                self.local_storage().await.ok().map(crate::state::items)
            } else {
                let p = json!({ "storageId": { "securityOrigin": origin, "isLocalStorage": true } });
                let reply = self.page.conn.send("DOMStorage.getDOMStorageItems", &p, Some(&self.page.sid));
                match self.page.reply_until(reply, self.page.deadline).await {
                    Ok(Ok(v)) => Some(crate::state::dom_storage_items(&v)),
                    _ => None,
                }
            }
            .unwrap_or_default();
            let indexed_db = match Some(&origin) == here_origin.as_ref() {
                true => match self.page.eval_job(capture_core::profile::SAVE_IDB_JS).await? {
                    Ok(v) => serde_json::from_value(v).unwrap_or_default(),
                    Err(_) => Vec::new(),
                },
                false => Vec::new(),
            };
            if !local_storage.is_empty() || !indexed_db.is_empty() {
                out.push(OriginState { origin, local_storage, indexed_db });
            }
        }
        Ok(BrowserState { cookies, origins: out })
    }

    // ---- Navigation --------------------------------------------------------------------

    fn remaining_ms(&self) -> u64 {
        ms(self.page.deadline.saturating_duration_since(Instant::now()))
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
