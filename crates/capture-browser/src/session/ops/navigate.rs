//! Going places and finding things: navigation and history, scripts, element lookups
//! (selectors, refs, points), waits, the accessibility tree.

use std::time::Duration;

use serde_json::Value;
use serde_json::json;
use tokio::time::Instant;

use super::{
    AxNode, CaptureError, GROUP, LC_LOAD, Navigation, NavigationTiming, PageSource, Redirect, SETTLE, SessionPage,
    Stop, Target, WaitFor, WaitUntil, lost, ms, p, s, scripts,
};
use crate::ElementFault::{BadSelector, NoSuchRef, NotFound};

impl SessionPage {
    pub(crate) async fn goto(&mut self, url: &str, wait: WaitUntil) -> Result<Navigation, CaptureError> {
        let start = Instant::now();
        let mut tags = Vec::new();
        let source = PageSource::Url(url.to_owned());
        self.page.arm_site_rules(self.consent_mode, url).await?;
        let timeout = self.remaining_ms();
        let loader = self.page.navigate(&source, wait, timeout, &mut tags).await?;
        self.release_objects();
        self.navigation(loader, start, tags).await
    }

    /// Wait for the navigation an action started: a new main-frame document, loaded.
    pub(super) async fn await_new_document(&mut self, prev: Option<String>) -> Result<String, CaptureError> {
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
    pub(super) async fn navigation(
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

    pub(super) fn release_objects(&mut self) {
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
            context_id: None,
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
    pub(super) async fn object(&mut self, t: &Target) -> Result<String, CaptureError> {
        match t {
            Target::Ref(id) => {
                let reply = self.page.send(&s::ResolveNode { backend_node_id: *id, object_group: GROUP });
                match self.page.reply_until(reply, self.page.deadline).await {
                    Ok(Ok(n)) => n
                        .object
                        .object_id
                        .ok_or_else(|| CaptureError::Element(NoSuchRef, format!("no such element ref {id}"))),
                    Ok(Err(crate::cdp::CdpError::Protocol(_))) => {
                        Err(CaptureError::Element(NoSuchRef, format!("no such element ref {id}")))
                    }
                    Ok(Err(e)) => Err(lost(&e, "DOM.resolveNode")),
                    Err(Stop::Elapsed) => Err(self.page.deadline_err()),
                    Err(Stop::Fail(e)) => Err(e),
                }
            }
            Target::Selector(sel) => {
                self.wait_selector(sel).await?;
                let expr = format!("document.querySelector({})", json!(sel));
                self.object_of(&expr)
                    .await?
                    .ok_or_else(|| CaptureError::Element(NotFound, format!("no element matches '{sel}'")))
            }
            Target::Point { x, y } => {
                let expr = format!("document.elementFromPoint({x}, {y})");
                self.object_of(&expr).await?.ok_or_else(|| CaptureError::Script(format!("no element at ({x}, {y})")))
            }
        }
    }

    /// The object an expression evaluates to (None for null).
    pub(super) async fn object_of(&mut self, expression: &str) -> Result<Option<String>, CaptureError> {
        let cmd = p::Evaluate {
            expression,
            await_promise: false,
            return_by_value: false,
            user_gesture: true,
            repl_mode: false,
            silent: true,
            object_group: Some(GROUP),
            context_id: None,
        };
        let r = self.page.call(&cmd).await?;
        if let Some(ex) = r.exception_details {
            return Err(CaptureError::Script(ex.message()));
        }
        Ok(r.result.object_id)
    }

    /// Call `function` with `this` = the object and `args`, returning its value.
    pub(super) async fn call_on(
        &mut self,
        object_id: &str,
        function: &str,
        args: Vec<Value>,
    ) -> Result<Value, CaptureError> {
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
    pub(super) async fn wait_selector(&mut self, sel: &str) -> Result<(), CaptureError> {
        let sel_json = json!(sel).to_string();
        loop {
            let left = self.remaining_ms();
            // The script gives up a little before the deadline, so its answer (no match)
            // is the one reported.
            let script = scripts::wait_selector(&sel_json, left.saturating_sub(50));
            match self.page.eval(&script, self.page.deadline, false).await {
                Ok(Ok(Value::Bool(true))) => return Ok(()),
                Ok(Ok(Value::String(s))) if s == "invalid" => {
                    return Err(CaptureError::Element(BadSelector, format!("'{sel}' is not a valid CSS selector")));
                }
                Ok(Ok(_)) => {
                    return Err(CaptureError::Element(
                        NotFound,
                        format!("no element matches '{sel}' ({})", self.page.deadline_err()),
                    ));
                }
                // The document was replaced while waiting: look again in the new one.
                Ok(Err(_)) if left > 0 => self.page.pump_for((Instant::now() + SETTLE).min(self.page.deadline)).await?,
                Ok(Err(m)) => return Err(CaptureError::Script(m)),
                Err(Stop::Elapsed) => return Err(self.page.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
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
    pub(super) async fn poll_pause(&mut self) -> Result<(), CaptureError> {
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
}
