//! Fresh browser contexts with one attached page, set up ahead of jobs ("spare pages"),
//! so context creation is off a job's critical path.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cdp::lost;
use crate::cdp::{CdpError, Conn, Event};
use crate::protocol::{self as p, Command, PageEvent};
use crate::{CaptureError, CaptureRequest, scripts};
use capture_core::options::CookieConsent;

/// Disposes a browser context however its job ends (also when cancelled).
pub(crate) struct ContextGuard {
    pub(crate) conn: Arc<Conn>,
    pub(crate) id: String,
    /// The context's own route of the egress proxy (its `proxyServer`), open as long as it.
    pub(crate) route: Option<crate::egress::EgressRoute>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        self.conn.cmd_forget(&p::DisposeBrowserContext { browser_context_id: &self.id }, None);
    }
}

/// The emulation a page is set up with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct View {
    pub width: u32,
    pub height: u32,
    pub dsf: f64,
    pub dark: bool,
    /// `prefers-reduced-motion: reduce`.
    pub reduced: bool,
    /// The `print` media type.
    pub print: bool,
    /// Mobile viewport semantics.
    pub mobile: bool,
    /// The consent engine armed for the page's next document (its script is large: added
    /// while the page is spare, it is off the job's critical path).
    pub consent: CookieConsent,
}

impl View {
    /// The emulation a request needs.
    pub(crate) fn of(req: &CaptureRequest) -> View {
        View {
            width: req.options.width,
            height: req.options.height,
            dsf: req.options.device_scale_factor,
            dark: req.options.dark_mode,
            reduced: req.options.reduced_motion,
            print: req.options.media_type == capture_core::options::MediaType::Print,
            mobile: req.options.mobile,
            consent: req.options.cookie_consent,
        }
    }

    pub(crate) fn metrics(&self, height: u64) -> p::SetDeviceMetricsOverride {
        p::SetDeviceMetricsOverride {
            width: self.width,
            height,
            device_scale_factor: self.dsf,
            mobile: self.mobile,
            screen_orientation: None,
        }
    }

    pub(crate) fn media(&self) -> p::SetEmulatedMedia {
        let mut features = Vec::new();
        if self.dark {
            features.push(p::MediaFeature { name: "prefers-color-scheme", value: "dark" });
        }
        if self.reduced {
            features.push(p::MediaFeature { name: "prefers-reduced-motion", value: "reduce" });
        }
        p::SetEmulatedMedia { media: if self.print { "print" } else { "" }, features }
    }
}

impl Default for View {
    fn default() -> View {
        View {
            width: 1280,
            height: 800,
            dsf: 1.0,
            dark: false,
            reduced: false,
            print: false,
            mobile: false,
            consent: CookieConsent::default(),
        }
    }
}

/// A fresh browser context with one attached page, not yet used by any job.
pub(crate) struct Prepared {
    pub(crate) view: View,
    pub(crate) guard: ContextGuard,
    pub(crate) target_id: String,
    pub(crate) sid: String,
    pub(crate) events: mpsc::UnboundedReceiver<Event>,
    /// Events received before the job started (see `still_usable`).
    pub(crate) backlog: Vec<Event>,
    /// The consent engine's script added to every new document of the page, and its
    /// identifier (see [`crate::page::Page::arm_consent`]).
    pub(crate) consent: Option<(&'static str, String)>,
}

/// A reply waited for while the page is set up, named for errors.
type Step = (&'static str, std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), CdpError>> + Send>>);

fn step<C: Command>(conn: &Arc<Conn>, cmd: &C, sid: &str) -> Step
where
    C::Response: Send + 'static,
{
    let reply = conn.cmd(cmd, Some(sid));
    (C::METHOD, Box::pin(async move { reply.await.map(|_| ()) }))
}

impl Prepared {
    /// Wait for each reply in turn, keeping the page's events aside; a page that crashes
    /// or is closed meanwhile fails at once (a dead renderer never answers), and the
    /// deadline gives a [`CaptureError::Timeout`] like every other step of `prepare`.
    async fn await_all(&mut self, replies: Vec<Step>, deadline: Instant) -> Result<(), CaptureError> {
        for (method, mut reply) in replies {
            loop {
                tokio::select! {
                    biased;
                    r = &mut reply => match r {
                        Ok(()) => break,
                        Err(e) => return Err(lost(&e, method)),
                    },
                    ev = self.events.recv() => match ev {
                        Some(ev) if PageEvent::is_gone(&ev.method) => {
                            return Err(CaptureError::Browser("the page crashed while it was being set up".into()));
                        }
                        Some(ev) => self.backlog.push(ev),
                        None => return Err(CaptureError::Browser("the browser connection was lost".into())),
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        return Err(CaptureError::Timeout(format!("{method}: the browser did not answer in time")));
                    }
                }
            }
        }
        Ok(())
    }

    /// Move queued events aside; false if the page crashed or was detached meanwhile.
    pub(crate) fn still_usable(&mut self) -> bool {
        while let Ok(ev) = self.events.try_recv() {
            if PageEvent::is_gone(&ev.method) {
                return false;
            }
            self.backlog.push(ev);
        }
        !self.events.is_closed()
    }
}

impl Prepared {
    /// Send every connection of the context through `upstream` (before its first request).
    pub(crate) fn route_through(&self, upstream: capture_core::egress::UpstreamProxy) -> Result<(), CaptureError> {
        match &self.guard.route {
            Some(r) => {
                r.set_upstream(upstream);
                Ok(())
            }
            None => Err(CaptureError::Browser("this page has no egress route of its own".into())),
        }
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        self.guard.conn.unregister_session(&self.sid);
    }
}

/// Create a fresh browser context with a page in its own window, attach to it and enable
/// the domains the pipeline needs. Done ahead of jobs so it is off their critical path.
/// With `routes`, the context gets a route of the egress proxy of its own (its
/// `proxyServer`), which a job may then point at a customer's proxy.
pub(crate) async fn prepare(
    conn: &Arc<Conn>,
    routes: Option<&crate::egress::Routes>,
    deadline: Instant,
    view: View,
) -> Result<Prepared, CaptureError> {
    async fn browser_call<C: Command>(
        conn: &Arc<Conn>,
        cmd: &C,
        deadline: Instant,
    ) -> Result<C::Response, CaptureError> {
        match tokio::time::timeout_at(deadline, conn.cmd(cmd, None)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(lost(&e, C::METHOD)),
            Err(_) => Err(CaptureError::Timeout("preparing a browser context timed out".into())),
        }
    }
    let route = match routes {
        Some(r) => {
            Some(r.open().await.map_err(|e| CaptureError::Browser(format!("cannot open an egress route: {e}")))?)
        }
        None => None,
    };
    let create = p::CreateBrowserContext {
        dispose_on_detach: true,
        proxy_server: route.as_ref().map(|r| format!("http://{}", r.addr())),
        // Loopback too goes through the route (Chromium bypasses it by default).
        proxy_bypass_list: route.as_ref().map(|_| "<-loopback>"),
    };
    let ctx = browser_call(conn, &create, deadline).await?;
    let ctx_id = ctx.browser_context_id;
    let guard = ContextGuard { conn: conn.clone(), id: ctx_id.clone(), route };
    conn.cmd_forget(&p::SetDownloadBehavior { behavior: "deny", browser_context_id: &ctx_id }, None);
    let target = p::CreateTarget {
        url: "about:blank",
        browser_context_id: Some(&ctx_id),
        new_window: true,
        width: Some(view.width),
        height: Some(view.height),
    };
    let target_id = browser_call(conn, &target, deadline).await?.target_id;
    let attach = p::AttachToTarget { target_id: &target_id, flatten: true };
    let sid = browser_call(conn, &attach, deadline).await?.session_id;
    let events = conn.register_session(&sid);
    let mut prepared = Prepared { view, guard, target_id, sid, events, backlog: Vec::new(), consent: None };
    // Pipelined: one round trip.
    let sid = prepared.sid.clone();
    let replies = vec![
        step(conn, &p::PageEnable {}, &sid),
        step(conn, &p::SetLifecycleEventsEnabled { enabled: true }, &sid),
        step(conn, &p::NetworkEnable { max_total_buffer_size: 0, max_resource_buffer_size: 0 }, &sid),
        step(conn, &p::InspectorEnable {}, &sid),
        step(conn, &view.metrics(u64::from(view.height)), &sid),
        step(conn, &view.media(), &sid),
    ];
    prepared.await_all(replies, deadline).await?;
    // Warm the new renderer up (fonts, layout, the compositor's first frame) so the
    // job's first paint is cheap. Our own content; the context stays fresh.
    let warm = vec![
        step(conn, &p::SetDocumentContent { frame_id: &prepared.target_id, html: scripts::WARM_UP_HTML }, &sid),
        step(
            conn,
            &p::CaptureScreenshot {
                format: "jpeg",
                quality: Some(1),
                clip: Some(p::Clip { x: 0.0, y: 0.0, width: 8.0, height: 8.0, scale: 1.0 }),
                from_surface: true,
                optimize_for_speed: false,
                capture_beyond_viewport: false,
            },
            &sid,
        ),
    ];
    prepared.await_all(warm, deadline).await?;
    // The consent engine for the next job's documents, added after the warm-up so it never
    // runs on our own content.
    if let Some(source) = crate::consent::arm_script(view.consent) {
        let id = Arc::new(std::sync::Mutex::new(String::new()));
        let reply = conn.cmd(&p::session::AddScriptToEvaluateOnNewDocument { source }, Some(&sid));
        let slot = id.clone();
        let add: Step = (
            "Page.addScriptToEvaluateOnNewDocument",
            Box::pin(async move {
                *slot.lock().unwrap() = reply.await?.identifier;
                Ok(())
            }),
        );
        prepared.await_all(vec![add], deadline).await?;
        prepared.consent = Some((source, std::mem::take(&mut *id.lock().unwrap())));
    }
    Ok(prepared)
}
