//! Typed DevTools commands of a [`Session`]'s page, for callers that need a single command
//! rather than an operation (the MCP automation tools, the audit report's PDF): input
//! events, DOM and accessibility reads, remote objects, emulation setters, cookies, blocked
//! URLs, frames and performance metrics.
//!
//! Each runs exactly as [`Session::cdp`] runs the same raw command: one operation named
//! `cdp <method>`, through the [`filter`](super::filter), bounded by its timeout and the
//! session's deadline, its errors mapped the same way (a DevTools error is a
//! [`CaptureError::Script`]). They change none of the session's own state (its device, user
//! agent, locale or emulated media).

use std::time::Duration;

use serde_json::Value;

use super::{CaptureError, Session};
use crate::protocol::session::{
    CallArgument, ReleaseObjectGroup, ResolveNode, SetLocaleOverride, SetTimezoneOverride, SetUserAgentOverride,
};
use crate::protocol::tools::{
    CallFunctionByValue, CallOutcome, ClearDeviceOrientationOverride, DeleteCookies, DescribeNode, DeviceOrientation,
    DomNode, EvaluateToObject, FrameTree, GetDocument, GetFrameTree, GetFullAxTreeRaw, GetPerformanceMetrics,
    MouseEvent, PerformanceEnable, PerformanceMetric, QuerySelector, QuerySelectorAll, SetEmulatedVisionDeficiency,
    SetFocusEmulationEnabled, SetScriptExecutionDisabled, TouchEvent, VisionDeficiency,
};
use crate::protocol::{Command, SetBlockedUrls, SetDocumentContent};

impl Session {
    /// Run a typed command as [`cdp`](Self::cdp) runs a raw one, and read its reply.
    async fn command<C: Command>(&self, cmd: &C, timeout: Duration) -> Result<C::Response, CaptureError> {
        let method = C::METHOD;
        let params = serde_json::to_value(cmd).map_err(|e| CaptureError::Browser(format!("cdp {method}: {e}")))?;
        let reply = self
            .run(format!("cdp {method}"), timeout, move |sp| Box::pin(async move { sp.cdp(method, params).await }))
            .await?;
        serde_json::from_value(reply)
            .map_err(|e| CaptureError::Browser(format!("cdp {method}: unexpected reply ({e})")))
    }

    // ---- Input -------------------------------------------------------------------------

    /// Dispatch one mouse event (`Input.dispatchMouseEvent`), waiting for nothing it starts.
    pub async fn dispatch_mouse(&self, event: MouseEvent, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&event, timeout).await.map(drop)
    }

    /// Dispatch one touch event (`Input.dispatchTouchEvent`), waiting for nothing it starts.
    pub async fn dispatch_touch(&self, event: TouchEvent, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&event, timeout).await.map(drop)
    }

    // ---- Accessibility and DOM ---------------------------------------------------------

    /// Every node of the full accessibility tree (`Accessibility.getFullAXTree`), as DevTools
    /// describes it (ignored nodes included).
    pub async fn accessibility_tree(&self, timeout: Duration) -> Result<Vec<Value>, CaptureError> {
        Ok(self.command(&GetFullAxTreeRaw {}, timeout).await?.nodes)
    }

    /// The document's root node, without its children (`DOM.getDocument`, depth 0).
    pub async fn dom_document(&self, timeout: Duration) -> Result<DomNode, CaptureError> {
        Ok(self.command(&GetDocument { depth: 0 }, timeout).await?.root)
    }

    /// The first node under `node_id` matching a CSS selector (`DOM.querySelector`); None when
    /// none does. An invalid selector is a [`CaptureError::Script`].
    pub async fn query_selector(
        &self,
        node_id: i64,
        selector: &str,
        timeout: Duration,
    ) -> Result<Option<i64>, CaptureError> {
        let found = self.command(&QuerySelector { node_id, selector }, timeout).await?;
        Ok(Some(found.node_id).filter(|id| *id != 0))
    }

    /// Every node under `node_id` matching a CSS selector (`DOM.querySelectorAll`), in
    /// document order. An invalid selector is a [`CaptureError::Script`].
    pub async fn query_selector_all(
        &self,
        node_id: i64,
        selector: &str,
        timeout: Duration,
    ) -> Result<Vec<i64>, CaptureError> {
        Ok(self.command(&QuerySelectorAll { node_id, selector }, timeout).await?.node_ids)
    }

    /// A node by its id (`DOM.describeNode`): its backend id, names.
    pub async fn describe_node(&self, node_id: i64, timeout: Duration) -> Result<DomNode, CaptureError> {
        Ok(self.command(&DescribeNode { node_id }, timeout).await?.node)
    }

    /// A remote object for a backend node, kept in `object_group` (`DOM.resolveNode`): its
    /// object id. A node that is gone is a [`CaptureError::Script`].
    pub async fn resolve_node(
        &self,
        backend_node_id: i64,
        object_group: &str,
        timeout: Duration,
    ) -> Result<Option<String>, CaptureError> {
        let resolved = self.command(&ResolveNode { backend_node_id, object_group }, timeout).await?;
        Ok(resolved.object.object_id)
    }

    /// Evaluate an expression to a remote object kept in `object_group` (`Runtime.evaluate`):
    /// its object id (None for a primitive value, `null` or `undefined`).
    pub async fn evaluate_to_object(
        &self,
        expression: &str,
        object_group: &str,
        timeout: Duration,
    ) -> Result<Option<String>, CaptureError> {
        let r = self.command(&EvaluateToObject { expression, object_group }, timeout).await?;
        Ok(r.result.object_id)
    }

    /// Call a JavaScript function declaration with `this` = a remote object and `args` as
    /// its arguments (`Runtime.callFunctionOn`, by value, a promise awaited): its value, or
    /// what it threw.
    pub async fn call_function_on(
        &self,
        object_id: &str,
        function_declaration: &str,
        args: Vec<Value>,
        timeout: Duration,
    ) -> Result<CallOutcome, CaptureError> {
        let cmd = CallFunctionByValue {
            object_id,
            function_declaration,
            arguments: args.into_iter().map(|value| CallArgument { value }).collect(),
            return_by_value: true,
            await_promise: true,
        };
        Ok(self.command(&cmd, timeout).await?.into())
    }

    /// Release the remote objects of a group (`Runtime.releaseObjectGroup`).
    pub async fn release_object_group(&self, object_group: &str, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&ReleaseObjectGroup { object_group }, timeout).await.map(drop)
    }

    /// The page's DevTools performance metrics (`Performance.enable`, then
    /// `Performance.getMetrics`, each within `timeout`).
    pub async fn performance_metrics(&self, timeout: Duration) -> Result<Vec<PerformanceMetric>, CaptureError> {
        self.command(&PerformanceEnable {}, timeout).await?;
        Ok(self.command(&GetPerformanceMetrics {}, timeout).await?.metrics)
    }

    // ---- Emulation ---------------------------------------------------------------------

    /// Emulate a focused page, or stop (`Emulation.setFocusEmulationEnabled`).
    pub async fn set_focus_emulation(&self, enabled: bool, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&SetFocusEmulationEnabled { enabled }, timeout).await.map(drop)
    }

    /// Override the locale, or clear the override (None) (`Emulation.setLocaleOverride`;
    /// DevTools refuses a second override while one is in effect).
    pub async fn set_locale(&self, locale: Option<&str>, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&SetLocaleOverride { locale }, timeout).await.map(drop)
    }

    /// Override the time zone (an IANA name), or clear the override (None)
    /// (`Emulation.setTimezoneOverride`; an unknown zone is a [`CaptureError::Script`]).
    pub async fn set_timezone(&self, timezone: Option<&str>, timeout: Duration) -> Result<(), CaptureError> {
        let timezone_id = timezone.unwrap_or("");
        self.command(&SetTimezoneOverride { timezone_id }, timeout).await.map(drop)
    }

    /// Send a user agent and an `Accept-Language` as they are (`Emulation.setUserAgentOverride`),
    /// unlike [`set_user_agent`](Self::set_user_agent) leaving the session's own user agent be.
    pub async fn set_user_agent_override(
        &self,
        user_agent: &str,
        accept_language: Option<&str>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.command(&SetUserAgentOverride { user_agent, accept_language }, timeout).await.map(drop)
    }

    /// Turn the page's JavaScript off (true) or back on, from its next document
    /// (`Emulation.setScriptExecutionDisabled`).
    pub async fn set_script_execution_disabled(&self, disabled: bool, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&SetScriptExecutionDisabled { value: disabled }, timeout).await.map(drop)
    }

    /// Simulate a vision deficiency, or normal vision (None)
    /// (`Emulation.setEmulatedVisionDeficiency`).
    pub async fn set_vision_deficiency(
        &self,
        deficiency: Option<VisionDeficiency>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        let kind = deficiency.map_or("none", VisionDeficiency::as_str);
        self.command(&SetEmulatedVisionDeficiency { kind }, timeout).await.map(drop)
    }

    /// Emulate how the device is held, or clear it (None)
    /// (`DeviceOrientation.setDeviceOrientationOverride` / `clearDeviceOrientationOverride`).
    pub async fn set_device_orientation(
        &self,
        orientation: Option<DeviceOrientation>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        match orientation {
            Some(o) => self.command(&o, timeout).await.map(drop),
            None => self.command(&ClearDeviceOrientationOverride {}, timeout).await.map(drop),
        }
    }

    // ---- Network -----------------------------------------------------------------------

    /// Delete cookies by name, for a URL or a domain and path (`Network.deleteCookies`).
    pub async fn delete_cookies(&self, which: DeleteCookies, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&which, timeout).await.map(drop)
    }

    /// Make the page's requests matching any of these patterns (`*` wildcards) fail as
    /// blocked; an empty list stops blocking (`Network.setBlockedURLs`).
    pub async fn set_blocked_urls(&self, patterns: Vec<String>, timeout: Duration) -> Result<(), CaptureError> {
        self.command(&SetBlockedUrls { urls: patterns }, timeout).await.map(drop)
    }

    // ---- Page --------------------------------------------------------------------------

    /// The page's frames, the main frame at the root (`Page.getFrameTree`).
    pub async fn frame_tree(&self, timeout: Duration) -> Result<FrameTree, CaptureError> {
        Ok(self.command(&GetFrameTree {}, timeout).await?.frame_tree)
    }

    /// Replace a frame's document with `html` (`Page.setDocumentContent`).
    pub async fn set_document_content(
        &self,
        frame_id: &str,
        html: &str,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.command(&SetDocumentContent { frame_id, html }, timeout).await.map(drop)
    }
}
