//! What a [`Session`] handle offers: each operation is queued to the session's task, which
//! runs it on the page with its own timeout (bounded by the session's deadline).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{
    AxNode, CaptureError, ConsoleEntry, Cookie, Device, Dialog, FileUpload, Geolocation, Image, LiveInput, LogCounts,
    Navigation, NetworkConditions, Op, PdfSpec, RequestRecord, Screencast, ScreencastOptions, ScreenshotSpec, Session,
    SessionPage, Target, WaitFor, WaitUntil, closed_err, ops,
};

impl Session {
    /// Run `f` on the session's page as operation `name`, bounded by `timeout` and the
    /// session's deadline.
    pub(super) async fn run<T, F>(&self, name: String, timeout: Duration, f: F) -> Result<T, CaptureError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut SessionPage) -> BoxFuture<'a, Result<T, CaptureError>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let op: Op = Box::new(move |sp: &mut SessionPage| {
            Box::pin(async move {
                let until = Instant::now() + timeout;
                sp.begin(&name, until);
                let r = match sp.check_dialog(&name) {
                    Err(e) => Err(e),
                    Ok(()) => f(sp).await,
                };
                let r = r.map_err(|e| sp.fail(e)).map_err(|e| ops::name_error(&name, e));
                let _ = tx.send(r);
            })
        });
        self.ops.send(op).await.map_err(|_| closed_err(&self.shared))?;
        rx.await.map_err(|_| closed_err(&self.shared))?
    }

    /// The browser context of this session (the relay restricts clients to it).
    pub fn context_id(&self) -> &str {
        &self.shared.context_id
    }

    /// The DevTools target id of the session's page.
    pub fn target_id(&self) -> &str {
        &self.shared.target_id
    }

    /// The browser connection the session's page lives on (the relay forwards to it).
    pub(crate) fn conn(&self) -> &Arc<crate::cdp::Conn> {
        &self.shared.conn
    }

    /// Resolves once the session has ended.
    pub async fn ended(&self) {
        let mut done = self.shared.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }

    /// True once the session has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.ended.lock().unwrap().is_some() || self.ops.is_closed()
    }

    /// Why the session ended (None while it runs).
    pub fn end_reason(&self) -> Option<String> {
        self.shared.ended.lock().unwrap().clone()
    }

    /// End the session and dispose of its context; waits until it is gone. Idempotent.
    pub async fn close(&self) {
        {
            let mut ended = self.shared.ended.lock().unwrap();
            if ended.is_none() {
                // Seen by the task after its current operation.
                *ended = Some(String::new());
            }
        }
        // Wake the task if it is idle.
        let _ = self.ops.try_send(Box::new(|_sp: &mut SessionPage| Box::pin(async {})));
        let mut done = self.shared.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }

    /// Load `url` (http/https only) and wait per `wait_until`; an HTTP error status is a
    /// result (`status`, tag `http-404`), not an error.
    pub async fn goto(&self, url: &str, wait_until: WaitUntil, timeout: Duration) -> Result<Navigation, CaptureError> {
        let url = url.to_owned();
        self.run(format!("goto {url}"), timeout, move |sp| Box::pin(async move { sp.goto(&url, wait_until).await }))
            .await
    }

    /// What the session's consent engine did with the current page's consent pop-up (within
    /// the engine's 2 s bound; with `auto`, a pop-up no rule refused is hidden now). `None` when
    /// the session runs without it (`cookieConsent: none`).
    pub async fn consent(
        &self,
        timeout: Duration,
    ) -> Result<Option<capture_core::metadata::ConsentReport>, CaptureError> {
        self.run("consent".into(), timeout, |sp| {
            Box::pin(async move {
                let mode = sp.consent_mode;
                let mut tags = Vec::new();
                sp.page.consent_report = None;
                sp.page.consent(mode, &mut tags).await?;
                Ok(sp.page.consent_report.clone())
            })
        })
        .await
    }

    /// Go back one history entry and wait for its load.
    pub async fn back(&self, timeout: Duration) -> Result<Navigation, CaptureError> {
        self.run("back".into(), timeout, |sp| Box::pin(async move { sp.history(-1).await })).await
    }

    /// Go forward one history entry and wait for its load.
    pub async fn forward(&self, timeout: Duration) -> Result<Navigation, CaptureError> {
        self.run("forward".into(), timeout, |sp| Box::pin(async move { sp.history(1).await })).await
    }

    /// Reload and wait for the load.
    pub async fn reload(&self, timeout: Duration) -> Result<Navigation, CaptureError> {
        self.run("reload".into(), timeout, |sp| Box::pin(async move { sp.reload().await })).await
    }

    /// Evaluate a JavaScript expression and return its value as JSON (a promise is
    /// awaited when `await_promise`; for `await` inside, use an async function:
    /// `(async () => { … })()`); a thrown exception is a [`CaptureError::Script`].
    pub async fn evaluate(
        &self,
        expression: &str,
        await_promise: bool,
        timeout: Duration,
    ) -> Result<Value, CaptureError> {
        let expr = expression.to_owned();
        self.run("evaluate".into(), timeout, move |sp| Box::pin(async move { sp.evaluate(&expr, await_promise).await }))
            .await
    }

    /// A screenshot of the viewport, the whole page, an element or a rectangle.
    pub async fn screenshot(&self, spec: ScreenshotSpec, timeout: Duration) -> Result<Image, CaptureError> {
        self.run("screenshot".into(), timeout, move |sp| Box::pin(async move { sp.screenshot(&spec).await })).await
    }

    /// The page as a PDF.
    pub async fn pdf(&self, spec: PdfSpec, timeout: Duration) -> Result<Vec<u8>, CaptureError> {
        self.run("pdf".into(), timeout, move |sp| Box::pin(async move { sp.pdf(&spec).await })).await
    }

    /// Emulate another device (viewport, scale, mobile, touch, orientation, user agent).
    pub async fn set_device(&self, device: Device, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_device".into(), timeout, move |sp| Box::pin(async move { sp.set_device(device).await })).await
    }

    /// Resize the viewport, keeping the rest of the device.
    pub async fn set_viewport(&self, width: u32, height: u32, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_viewport".into(), timeout, move |sp| {
            Box::pin(async move {
                let device = Device { width, height, landscape: width > height, ..sp.device.clone() };
                sp.set_device(device).await
            })
        })
        .await
    }

    /// Turn the device by 90° (width and height swap; `screen.orientation` changes).
    pub async fn rotate(&self, timeout: Duration) -> Result<Device, CaptureError> {
        self.run("rotate".into(), timeout, |sp| {
            Box::pin(async move {
                let device = sp.device.rotated();
                sp.set_device(device.clone()).await?;
                Ok(device)
            })
        })
        .await
    }

    /// The emulated device.
    pub async fn device(&self) -> Result<Device, CaptureError> {
        self.run("device".into(), Duration::from_secs(5), |sp| Box::pin(async move { Ok(sp.device.clone()) })).await
    }

    /// Emulate a position (and grant the geolocation permission), or none (None).
    pub async fn set_geolocation(&self, at: Option<Geolocation>, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_geolocation".into(), timeout, move |sp| Box::pin(async move { sp.set_geolocation(at).await }))
            .await
    }

    /// Emulate network conditions (offline, latency, throughput).
    pub async fn set_network(&self, conditions: NetworkConditions, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_network".into(), timeout, move |sp| Box::pin(async move { sp.set_network(conditions).await }))
            .await
    }

    /// Grant permissions (`geolocation`, `notifications`…), for one origin or all. Clipboard
    /// permissions are left out: Chromium's clipboard is the whole browser's, and the
    /// session's own clipboard needs none.
    pub async fn grant_permissions(
        &self,
        permissions: Vec<String>,
        origin: Option<String>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run("grant_permissions".into(), timeout, move |sp| {
            Box::pin(async move { sp.grant_permissions(&permissions, origin.as_deref()).await })
        })
        .await
    }

    /// The session's clipboard: what its pages copied or [`set_clipboard`](Self::set_clipboard)
    /// put there ("" at first). Never Chromium's own clipboard, which every tenant of the
    /// browser shares.
    pub fn clipboard(&self) -> String {
        self.shared.clipboard.get()
    }

    /// Put text on the session's clipboard (what its pages' `navigator.clipboard` and
    /// paste shortcuts get); at most [`clipboard::MAX_CLIPBOARD_BYTES`].
    pub fn set_clipboard(&self, text: &str) -> Result<(), CaptureError> {
        if self.is_closed() {
            return Err(closed_err(&self.shared));
        }
        self.shared.clipboard.set(text).map_err(CaptureError::Script)
    }

    /// Take back every granted permission.
    pub async fn reset_permissions(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("reset_permissions".into(), timeout, |sp| Box::pin(async move { sp.reset_permissions().await })).await
    }

    /// Replace the extra headers sent with every request.
    pub async fn set_extra_headers(
        &self,
        headers: BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run("set_extra_headers".into(), timeout, move |sp| {
            Box::pin(async move { sp.set_extra_headers(&headers).await })
        })
        .await
    }

    /// Override the user agent (None: the device's, else the browser's own).
    pub async fn set_user_agent(&self, user_agent: Option<String>, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_user_agent".into(), timeout, move |sp| {
            Box::pin(async move {
                sp.user_agent = user_agent.or_else(|| sp.device.user_agent.as_deref().map(str::to_string));
                sp.apply_user_agent().await
            })
        })
        .await
    }

    /// Emulate one CSS media feature (`prefers-color-scheme`, `prefers-reduced-motion`…;
    /// an empty value drops it), keeping the rest of the session's emulated media.
    pub async fn set_media_feature(&self, name: &str, value: &str, timeout: Duration) -> Result<(), CaptureError> {
        let (name, value) = (name.to_owned(), value.to_owned());
        self.run(format!("set_media_feature {name}"), timeout, move |sp| {
            Box::pin(async move {
                let mut media = sp.media.clone();
                if value.is_empty() {
                    media.features.remove(&name);
                } else {
                    media.features.insert(name, value);
                }
                sp.apply_media(media).await
            })
        })
        .await
    }

    /// Emulate a media type (`screen`, `print`; empty: the page's own), keeping the
    /// session's emulated media features.
    pub async fn set_media_type(&self, media: &str, timeout: Duration) -> Result<(), CaptureError> {
        let kind = media.to_owned();
        self.run(format!("set_media_type {kind}"), timeout, move |sp| {
            Box::pin(async move {
                let mut media = sp.media.clone();
                media.media = kind;
                sp.apply_media(media).await
            })
        })
        .await
    }

    /// Every cookie of the session's context.
    pub async fn cookies(&self, timeout: Duration) -> Result<Vec<Cookie>, CaptureError> {
        self.run("cookies".into(), timeout, |sp| Box::pin(async move { sp.cookies().await })).await
    }

    /// Set cookies in the session's context.
    pub async fn set_cookies(&self, cookies: Vec<Cookie>, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_cookies".into(), timeout, move |sp| Box::pin(async move { sp.set_cookies(&cookies).await })).await
    }

    /// What the session would keep as a profile (see [`BrowserState`]).
    pub async fn storage_state(&self, timeout: Duration) -> Result<capture_core::profile::BrowserState, CaptureError> {
        self.run("storage_state".into(), timeout, |sp| Box::pin(async move { sp.storage_state().await })).await
    }

    /// Delete every cookie of the session's context.
    pub async fn clear_cookies(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("clear_cookies".into(), timeout, |sp| Box::pin(async move { sp.clear_cookies().await })).await
    }

    /// The current origin's `localStorage`.
    pub async fn local_storage(&self, timeout: Duration) -> Result<BTreeMap<String, String>, CaptureError> {
        self.run("local_storage".into(), timeout, |sp| Box::pin(async move { sp.local_storage().await })).await
    }

    /// Set one `localStorage` item of the current origin.
    pub async fn set_local_storage(&self, key: &str, value: &str, timeout: Duration) -> Result<(), CaptureError> {
        let (k, v) = (key.to_owned(), value.to_owned());
        self.run("set_local_storage".into(), timeout, move |sp| {
            Box::pin(async move { sp.set_local_storage(&k, &v).await })
        })
        .await
    }

    /// Clear the current origin's `localStorage` and `sessionStorage`.
    pub async fn clear_local_storage(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("clear_local_storage".into(), timeout, |sp| Box::pin(async move { sp.clear_local_storage().await }))
            .await
    }

    /// A mouse click (move, press, release); waits for a navigation it starts.
    pub async fn click(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("click {target}"), timeout, move |sp| Box::pin(async move { sp.click(&target, 1).await }))
            .await
    }

    /// A double click.
    pub async fn double_click(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("double_click {target}"), timeout, move |sp| {
            Box::pin(async move { sp.click(&target, 2).await })
        })
        .await
    }

    /// Move the mouse over a target.
    pub async fn hover(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("hover {target}"), timeout, move |sp| Box::pin(async move { sp.hover(&target).await })).await
    }

    /// A tap (touch start and end); waits for a navigation it starts.
    pub async fn tap(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("tap {target}"), timeout, move |sp| Box::pin(async move { sp.tap(&target, 1).await })).await
    }

    /// Two taps in quick succession.
    pub async fn double_tap(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("double_tap {target}"), timeout, move |sp| Box::pin(async move { sp.tap(&target, 2).await }))
            .await
    }

    /// A touch held for `hold` (default-ish 800 ms), then released.
    pub async fn long_press(&self, target: Target, hold: Duration, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("long_press {target}"), timeout, move |sp| {
            Box::pin(async move { sp.long_press(&target, hold).await })
        })
        .await
    }

    /// A one-finger swipe from `from` by (`dx`, `dy`) CSS pixels over `duration`.
    pub async fn swipe(
        &self,
        from: Target,
        dx: f64,
        dy: f64,
        duration: Duration,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run(format!("swipe {from}"), timeout, move |sp| {
            Box::pin(async move { sp.swipe(&from, dx, dy, duration).await })
        })
        .await
    }

    /// A two-finger pinch around `centre`: `scale` > 1 spreads the fingers (zoom in).
    pub async fn pinch(&self, centre: Target, scale: f64, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("pinch {centre}"), timeout, move |sp| Box::pin(async move { sp.pinch(&centre, scale).await }))
            .await
    }

    /// Scroll with the mouse wheel at `at` (the viewport's centre by default), or bring a
    /// target into view when `dx` and `dy` are 0.
    pub async fn scroll(&self, at: Option<Target>, dx: f64, dy: f64, timeout: Duration) -> Result<(), CaptureError> {
        self.run("scroll".into(), timeout, move |sp| Box::pin(async move { sp.scroll(at.as_ref(), dx, dy).await }))
            .await
    }

    /// Type text into the focused element, key by key.
    pub async fn type_text(&self, text: &str, timeout: Duration) -> Result<(), CaptureError> {
        let text = text.to_owned();
        self.run("type".into(), timeout, move |sp| Box::pin(async move { sp.type_text(&text).await })).await
    }

    /// Press a key or chord (`Enter`, `Tab`, `Control+a`…); waits for a navigation it starts.
    pub async fn press(&self, key: &str, timeout: Duration) -> Result<(), CaptureError> {
        let key = key.to_owned();
        self.run(format!("press {key}"), timeout, move |sp| Box::pin(async move { sp.press(&key).await })).await
    }

    /// Focus a field, replace its content with `text` (typed key by key); the field's value
    /// afterwards. Fails when the field cannot take the focus or its content did not change.
    pub async fn fill(&self, target: Target, text: &str, timeout: Duration) -> Result<String, CaptureError> {
        let text = text.to_owned();
        self.run(format!("fill {target}"), timeout, move |sp| Box::pin(async move { sp.fill(&target, &text).await }))
            .await
    }

    /// Tap (`touch`) or click a field, then type `text` into it key by key, appending; the
    /// field's value afterwards. Fails, typing nothing, when the input did not reach the
    /// field (it is covered, or the focus landed elsewhere), and fails when the field's
    /// content did not change.
    pub async fn type_into(
        &self,
        target: Target,
        text: &str,
        touch: bool,
        timeout: Duration,
    ) -> Result<String, CaptureError> {
        let text = text.to_owned();
        self.run(format!("type into {target}"), timeout, move |sp| {
            Box::pin(async move { sp.type_into(&target, &text, touch).await })
        })
        .await
    }

    /// Select options of a `<select>` by value (or by label); returns the selected values.
    pub async fn select_option(
        &self,
        target: Target,
        values: Vec<String>,
        timeout: Duration,
    ) -> Result<Vec<String>, CaptureError> {
        self.run(format!("select_option {target}"), timeout, move |sp| {
            Box::pin(async move { sp.select_option(&target, &values).await })
        })
        .await
    }

    /// Check or uncheck a checkbox or radio button (by clicking it when it must change).
    pub async fn set_checked(&self, target: Target, checked: bool, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("check {target}"), timeout, move |sp| {
            Box::pin(async move { sp.set_checked(&target, checked).await })
        })
        .await
    }

    /// Give files (from bytes, at most [`MAX_UPLOAD_BYTES`] together) to a file input.
    pub async fn set_input_files(
        &self,
        target: Target,
        files: Vec<FileUpload>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run(format!("set_input_files {target}"), timeout, move |sp| {
            Box::pin(async move { sp.set_input_files(&target, &files).await })
        })
        .await
    }

    /// The dialog left open ([`DialogPolicy::Manual`]), if any.
    pub async fn open_dialog(&self) -> Result<Option<Dialog>, CaptureError> {
        self.run("open_dialog".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks_ref().and_then(|h| h.open_dialog.clone())) })
        })
        .await
    }

    /// Accept or dismiss the open dialog (`prompt_text` answers a `prompt`).
    pub async fn handle_dialog(
        &self,
        accept: bool,
        prompt_text: Option<String>,
        timeout: Duration,
    ) -> Result<Dialog, CaptureError> {
        self.run("handle_dialog".into(), timeout, move |sp| {
            Box::pin(async move { sp.handle_dialog(accept, prompt_text).await })
        })
        .await
    }

    /// Wait for a selector, a text, a URL or network idle.
    pub async fn wait_for(&self, what: WaitFor, timeout: Duration) -> Result<(), CaptureError> {
        let name = match &what {
            WaitFor::Selector(s) => format!("wait_for selector '{s}'"),
            WaitFor::Text(t) => format!("wait_for text '{t}'"),
            WaitFor::Url(u) => format!("wait_for url '{u}'"),
            WaitFor::NetworkIdle => "wait_for network idle".to_owned(),
        };
        self.run(name, timeout, move |sp| Box::pin(async move { sp.wait_for(&what).await })).await
    }

    /// Wait `ms`, handling the page's events meanwhile.
    pub async fn wait(&self, duration: Duration) -> Result<(), CaptureError> {
        self.run("wait".into(), duration + Duration::from_secs(1), move |sp| {
            Box::pin(async move {
                let until = (Instant::now() + duration).min(sp.page.deadline);
                sp.page.pump_for(until).await
            })
        })
        .await
    }

    /// `document.title` and `location.href`.
    pub async fn title_url(&self, timeout: Duration) -> Result<(String, String), CaptureError> {
        self.run("title_url".into(), timeout, |sp| Box::pin(async move { sp.page.title_url().await })).await
    }

    /// The visible text of the page or of one element.
    pub async fn text(&self, target: Option<Target>, timeout: Duration) -> Result<String, CaptureError> {
        self.run("text".into(), timeout, move |sp| {
            Box::pin(async move {
                sp.element_string(target.as_ref(), "function() { return this.innerText || this.textContent || ''; }")
                    .await
            })
        })
        .await
    }

    /// The page as Markdown and text (see [`crate::content`]): the whole page, or only its
    /// main content (Readability).
    pub async fn markdown(
        &self,
        main_content: bool,
        timeout: Duration,
    ) -> Result<crate::content::PageContent, CaptureError> {
        self.run("markdown".into(), timeout, move |sp| {
            Box::pin(async move {
                let settings = capture_core::options::ContentSettings {
                    formats: vec![capture_core::options::ContentFormat::Markdown],
                    main_content,
                    ..Default::default()
                };
                let (content, _) = sp.page.read_text(Some(&settings), None).await?;
                content.ok_or_else(|| CaptureError::Script("the page gave no content".into()))
            })
        })
        .await
    }

    /// The HTML of the page or of one element.
    pub async fn html(&self, target: Option<Target>, timeout: Duration) -> Result<String, CaptureError> {
        self.run("html".into(), timeout, move |sp| {
            Box::pin(
                async move { sp.element_string(target.as_ref(), "function() { return this.outerHTML || ''; }").await },
            )
        })
        .await
    }

    /// The accessibility tree (ignored nodes left out); `backend_node_id`s are usable as
    /// [`Target::Ref`].
    pub async fn accessibility_snapshot(&self, timeout: Duration) -> Result<Vec<AxNode>, CaptureError> {
        self.run("accessibility_snapshot".into(), timeout, |sp| Box::pin(async move { sp.accessibility().await })).await
    }

    /// The console log so far (bounded).
    pub async fn console(&self) -> Result<Vec<ConsoleEntry>, CaptureError> {
        self.run("console".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks().recorder.console.iter().cloned().collect()) })
        })
        .await
    }

    /// The network log so far (bounded).
    pub async fn network(&self) -> Result<Vec<RequestRecord>, CaptureError> {
        self.run("network".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks().recorder.requests.iter().cloned().collect()) })
        })
        .await
    }

    /// The dialogs the page opened.
    pub async fn dialogs(&self) -> Result<Vec<Dialog>, CaptureError> {
        self.run("dialogs".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks().recorder.dialogs.clone()) })
        })
        .await
    }

    /// Console errors, failed requests and requests, over the whole session.
    pub async fn counts(&self) -> Result<LogCounts, CaptureError> {
        self.run("counts".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move {
                let r = &sp.hooks().recorder;
                Ok(LogCounts {
                    console_errors: r.console_errors,
                    failed_requests: r.failed_requests,
                    requests: r.total_requests(),
                })
            })
        })
        .await
    }

    /// Start a screencast: frames as Chromium paints them (none while nothing changes).
    /// A second start replaces the first.
    pub async fn start_screencast(
        &self,
        opts: ScreencastOptions,
        timeout: Duration,
    ) -> Result<Screencast, CaptureError> {
        self.run("start_screencast".into(), timeout, move |sp| Box::pin(async move { sp.start_screencast(opts).await }))
            .await
    }

    /// Mark this moment on the session's timeline (a recording shows it as a chapter).
    pub fn mark(&self, label: &str) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        self.shared.marks.lock().unwrap().push((now, label.to_owned()));
    }

    /// The marks set so far, in order.
    pub fn marks(&self) -> Vec<(f64, String)> {
        self.shared.marks.lock().unwrap().clone()
    }

    /// Watch the page live: its look now at once, then every frame it paints (a recording's
    /// screencast is shared). Ends when the receiver is dropped or the session ends.
    pub async fn watch(&self, timeout: Duration) -> Result<Screencast, CaptureError> {
        self.run("watch".into(), timeout, |sp| Box::pin(async move { sp.watch().await })).await
    }

    /// A person's input from a live view (pointer, wheel, keys), dispatched as it came.
    pub async fn live_input(&self, ev: LiveInput, timeout: Duration) -> Result<(), CaptureError> {
        self.run("live_input".into(), timeout, move |sp| Box::pin(async move { sp.live_input(ev).await })).await
    }

    /// Stop the screencast (its stream ends).
    pub async fn stop_screencast(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("stop_screencast".into(), timeout, |sp| Box::pin(async move { sp.stop_screencast().await })).await
    }

    /// A raw DevTools command of the page's session (see [`filter`] for what is refused).
    pub async fn cdp(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CaptureError> {
        let method = method.to_owned();
        self.run(format!("cdp {method}"), timeout, move |sp| Box::pin(async move { sp.cdp(&method, params).await }))
            .await
    }
}
