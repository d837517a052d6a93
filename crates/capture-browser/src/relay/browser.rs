//! What the relay answers at browser level: the session's context as the whole browser —
//! its targets only, discovery and auto-attach emulated, browser-wide commands refused or
//! scoped (the table in the module above).

use serde_json::{Value, json};

use super::{AutoAttach, Kind, Pending, Relay, asks_clipboard, filter_includes};
use crate::session::{clipboard, filter};

impl Relay {
    /// Targets the emulated auto-attach takes now: tabs and pages the filter includes.
    fn auto_attach_candidates(&self) -> Vec<Value> {
        let Some(auto) = &self.auto else { return Vec::new() };
        let mut v: Vec<Value> = self
            .targets
            .values()
            .filter(|t| {
                let kind = t["type"].as_str().unwrap_or("");
                matches!(kind, "tab" | "page")
                    && filter_includes(auto.filter.as_ref(), kind)
                    && !self.auto_attached.contains(t["targetId"].as_str().unwrap_or(""))
            })
            .cloned()
            .collect();
        // Tabs before pages, like Chromium.
        v.sort_by_key(|t| t["type"] != "tab");
        v
    }

    pub(super) async fn browser_command(&mut self, id: Value, method: &str, mut params: Value) -> bool {
        let plain = |id: Value| Pending { client_id: id, client_sid: None, kind: Kind::Plain };
        let target_id = params.get("targetId").and_then(Value::as_str).map(str::to_owned);
        match method {
            "Browser.getVersion" => self.forward(method, &params, None, plain(id)),
            "Browser.close" | "Browser.crash" | "Browser.crashGpuProcess" => {
                let why = format!("{method} is not allowed: this browser is shared; disconnect to end the session");
                return self.refuse(&id, None, &why).await;
            }
            // Answered, never applied: downloads stay denied in a session.
            "Browser.setDownloadBehavior" => return self.reply(&id, None, Ok(json!({}))).await,
            "Browser.grantPermissions" | "Browser.setPermission" if asks_clipboard(&params) => {
                let why = format!(
                    "{method}: clipboard permissions are not granted in a session (the browser's clipboard is shared; navigator.clipboard uses the session's own clipboard, which needs none)"
                );
                return self.refuse(&id, None, &why).await;
            }
            "Browser.resetPermissions" => {
                params["browserContextId"] = json!(self.ctx);
                self.forward(method, &params, None, plain(id));
                // Chromium's defaults allow writing its clipboard: denied again, in order.
                for permission in clipboard::denied_permissions() {
                    let p = json!({ "permission": permission, "setting": "denied", "browserContextId": self.ctx });
                    self.conn.send_forget("Browser.setPermission", &p, None);
                }
            }
            "Browser.grantPermissions"
            | "Browser.setPermission"
            | "Storage.getCookies"
            | "Storage.setCookies"
            | "Storage.clearCookies" => {
                params["browserContextId"] = json!(self.ctx);
                self.forward(method, &params, None, plain(id));
            }
            "Browser.getWindowForTarget" => {
                if !self.ours(target_id.as_deref()) {
                    return self.refuse(&id, None, "Browser.getWindowForTarget: no such target in this session").await;
                }
                self.forward(
                    method,
                    &params,
                    None,
                    Pending { client_id: id, client_sid: None, kind: Kind::WindowForTarget },
                );
            }
            "Browser.getWindowBounds" | "Browser.setWindowBounds" => {
                let window = params.get("windowId").and_then(Value::as_i64);
                if !window.is_some_and(|w| self.windows.contains(&w)) {
                    return self.refuse(&id, None, &format!("{method}: not a window of this session")).await;
                }
                self.forward(method, &params, None, plain(id));
            }
            "Target.getBrowserContexts" => {
                return self.reply(&id, None, Ok(json!({ "browserContextIds": [] }))).await;
            }
            "Target.setDiscoverTargets" => {
                let discover = params.get("discover").and_then(Value::as_bool).unwrap_or(false);
                let announce = discover && !self.discover;
                self.discover = discover;
                if announce {
                    let mut infos: Vec<Value> = self.targets.values().cloned().collect();
                    infos.sort_by_key(|t| t["type"] != "tab");
                    for info in infos {
                        if !self.event("Target.targetCreated", json!({ "targetInfo": info }), None).await {
                            return false;
                        }
                    }
                }
                return self.reply(&id, None, Ok(json!({}))).await;
            }
            "Target.setAutoAttach" => {
                if params.get("flatten").and_then(Value::as_bool) != Some(true) {
                    return self.refuse(&id, None, "Target.setAutoAttach: only flat mode is supported").await;
                }
                let on = params.get("autoAttach").and_then(Value::as_bool).unwrap_or(false);
                self.auto = on.then(|| AutoAttach { filter: params.get("filter").cloned() });
                let now = self.auto_attach_candidates();
                if now.is_empty() {
                    return self.reply(&id, None, Ok(json!({}))).await;
                }
                // Chromium reports the attachments before it answers: so do we.
                self.deferred = Some((id, now.len()));
                for info in now {
                    self.auto_attach(&info);
                }
            }
            "Target.getTargets" => {
                self.forward(method, &params, None, Pending { client_id: id, client_sid: None, kind: Kind::GetTargets })
            }
            "Target.getTargetInfo" => {
                if target_id.is_some() && !self.ours(target_id.as_deref()) {
                    return self.refuse(&id, None, "No target with given id found").await;
                }
                self.forward(method, &params, None, plain(id));
            }
            "Target.attachToTarget" => {
                let Some(t) = target_id.filter(|t| self.targets.contains_key(t)) else {
                    return self.refuse(&id, None, "No target with given id found").await;
                };
                if params.get("flatten").and_then(Value::as_bool) != Some(true) {
                    return self.refuse(&id, None, "Target.attachToTarget: only flat mode is supported").await;
                }
                self.forward(
                    method,
                    &params,
                    None,
                    Pending { client_id: id, client_sid: None, kind: Kind::AttachToTarget(t) },
                );
            }
            "Target.detachFromTarget" => {
                let real =
                    params.get("sessionId").and_then(Value::as_str).and_then(|c| self.client_to_real.get(c)).cloned();
                let Some(real) = real else {
                    return self.refuse(&id, None, "No session with given id").await;
                };
                self.forward(
                    method,
                    &json!({ "sessionId": real }),
                    None,
                    Pending { client_id: id, client_sid: None, kind: Kind::Detach(real.clone()) },
                );
            }
            "Target.activateTarget" | "Target.closeTarget" => {
                if !self.ours(target_id.as_deref()) {
                    return self.refuse(&id, None, "No target with given id found").await;
                }
                self.forward(method, &params, None, plain(id));
            }
            "Target.createTarget" => {
                let url = params.get("url").and_then(Value::as_str).unwrap_or("about:blank").to_owned();
                let url = if url.is_empty() { "about:blank".to_owned() } else { url };
                if let Err(why) = filter::check_url(&url) {
                    return self.refuse(&id, None, &format!("Target.createTarget: {why}")).await;
                }
                let ctx = params.get("browserContextId").and_then(Value::as_str);
                if ctx.is_some_and(|c| c != self.ctx) {
                    return self.refuse(&id, None, "Target.createTarget: this session has one browser context").await;
                }
                if self.pages() >= self.opts.max_pages {
                    let why = format!("Target.createTarget: a session may have {} pages open", self.opts.max_pages);
                    return self.refuse(&id, None, &why).await;
                }
                params["browserContextId"] = json!(self.ctx);
                params["url"] = json!(url);
                self.forward(
                    method,
                    &params,
                    None,
                    Pending { client_id: id, client_sid: None, kind: Kind::CreateTarget },
                );
            }
            "Target.createBrowserContext" | "Target.disposeBrowserContext" => {
                let why = format!("{method} is not allowed: a live session has exactly one browser context");
                return self.refuse(&id, None, &why).await;
            }
            m => return self.refuse(&id, None, &format!("{m} is not available through the live-session relay")).await,
        }
        true
    }

    /// A browser-level event: the context's targets coming and going; our sessions ending.
    pub(super) async fn on_browser_event(&mut self, method: &str, mut params: Value) -> bool {
        match method {
            "Target.targetCreated" | "Target.targetInfoChanged" => {
                let info = params["targetInfo"].clone();
                if info["browserContextId"] != self.ctx.as_str() {
                    return true;
                }
                let Some(id) = info["targetId"].as_str().map(str::to_owned) else { return true };
                let created = !self.targets.contains_key(&id);
                self.targets.insert(id, info.clone());
                if self.discover && !self.event(method, params, None).await {
                    return false;
                }
                if created && self.auto.is_some() {
                    let kind = info["type"].as_str().unwrap_or("");
                    let wanted = self.auto.as_ref().is_some_and(|a| filter_includes(a.filter.as_ref(), kind));
                    if matches!(kind, "tab" | "page") && wanted {
                        self.auto_attach(&info);
                    }
                }
                true
            }
            "Target.targetDestroyed" | "Target.targetCrashed" => {
                let Some(id) = params["targetId"].as_str().map(str::to_owned) else { return true };
                if self.targets.remove(&id).is_none() {
                    return true;
                }
                self.auto_attached.remove(&id);
                self.attach_reported.remove(&id);
                !self.discover || self.event(method, params, None).await
            }
            "Target.detachedFromTarget" => {
                let Some(real) = params["sessionId"].as_str().map(str::to_owned) else { return true };
                let Some(c) = self.unmap_session(&real) else { return true };
                params["sessionId"] = json!(c);
                self.event(method, params, None).await
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_filters_follow_chromium() {
        assert!(filter_includes(None, "page"));
        assert!(!filter_includes(None, "tab"));
        assert!(!filter_includes(None, "browser"));
        let puppeteer = json!([{ "type": "page", "exclude": true }, {}]);
        assert!(filter_includes(Some(&puppeteer), "tab"));
        assert!(!filter_includes(Some(&puppeteer), "page"));
        assert!(!filter_includes(Some(&json!([])), "page"));
        assert!(filter_includes(Some(&json!([{ "type": "page" }])), "page"));
    }
}
