//! Which raw DevTools commands reach a session's page ([`Session::cdp`](super::Session::cdp)
//! and the live relay's page sessions).
//!
//! A page session's commands act on that page, so most domains are safe: they cannot
//! reach another context. Refused are the domains that act on the whole browser or the
//! machine, and the few page commands that read local files or escape the egress rules:
//!
//! | refused | why |
//! |---|---|
//! | `Browser.*`, `Target.*` | the whole browser, other contexts (the relay answers its own `Target.*`) |
//! | `SystemInfo.*` | the machine's GPU and process list |
//! | `Tracing.*` | browser-wide traces, written to disk |
//! | `Network.loadNetworkResource` | loads any URL, `file:` included, outside the page |
//! | `Input.dispatchDragEvent` with files, `Fetch.continueRequest`/`Network.continueInterceptedRequest` to a non-http(s) URL | local files |
//! | `Storage.*` | takes any origin or context (the session's cookie calls use its own context) |
//! | `Memory.*` | browser-wide memory pressure and sampling |
//! | `Security.setIgnoreCertificateErrors` | browser-wide |
//! | `BackgroundService.*`, `Cast.*`, `Extensions.*`, `PWA.*`, `DeviceAccess.*`, `BluetoothEmulation.*` | browser-level or the machine's devices |
//! | `DOM.setFileInputFiles` | gives the page any local file by path (use `set_input_files`, from bytes) |
//! | `Page.setDownloadBehavior` | downloads to a folder on disk (downloads are denied) |
//! | `Page.navigate` to anything but `http(s)` or `about:blank` | `file:`, `chrome:`, `javascript:`… |
//! | `Page.close` | closes the session's page (end the session instead) |
//! | `Network.setAcceptedEncodings` | browser-wide |
//! | `Input.dispatchMouseEvent`/`emulateTouchFromMouseEvent` with the middle button | on Linux a middle click pastes the selection buffer, which every tenant's selections write ([`super::clipboard`]) |
//!
//! Clipboard shortcuts and `commands` of `Input.dispatchKeyEvent` are rewritten rather
//! than refused: [`super::clipboard::guard_key_event`].
//!
//! Allowed, for example: `Runtime.*`, `DOM.*` (but the one above), `Input.*`, `IO.read`
//! (the streams a page's own `Page.printToPDF` returns),
//! `Emulation.*`, `Network.*` (requests still go through the egress guard), `Fetch.*`,
//! `Page.crash` (the session's own renderer), `Accessibility.*`, `Performance.*`.

use serde_json::Value;

/// Domains refused as a whole.
const DENIED_DOMAINS: &[&str] = &[
    "Browser",
    "Target",
    "SystemInfo",
    "Tracing",
    "Storage",
    "Memory",
    "BackgroundService",
    "Cast",
    "Extensions",
    "PWA",
    "DeviceAccess",
    "BluetoothEmulation",
];

/// Single commands refused.
const DENIED_METHODS: &[&str] = &[
    "DOM.setFileInputFiles",
    "Network.loadNetworkResource",
    "IO.resolveBlob",
    "Page.setDownloadBehavior",
    "Page.close",
    "Security.setIgnoreCertificateErrors",
    "Network.setAcceptedEncodings",
];

/// Why a page command is refused, or Ok.
pub fn check_page_command(method: &str, params: &Value) -> Result<(), String> {
    let Some((domain, _)) = method.split_once('.') else {
        return Err(format!("'{method}' is not a DevTools method"));
    };
    if DENIED_DOMAINS.contains(&domain) || DENIED_METHODS.contains(&method) {
        return Err(format!("{method} is not allowed in a session"));
    }
    match method {
        "Page.navigate" => {
            let url = params.get("url").and_then(Value::as_str).unwrap_or("");
            check_url(url).map_err(|e| format!("{method}: {e}"))?;
        }
        "Fetch.continueRequest" | "Network.continueInterceptedRequest" => {
            if let Some(url) = params.get("url").and_then(Value::as_str) {
                check_url(url).map_err(|e| format!("{method}: {e}"))?;
            }
        }
        "Input.dispatchMouseEvent" | "Input.emulateTouchFromMouseEvent"
            if params.get("button").and_then(Value::as_str) == Some("middle") =>
        {
            return Err(format!(
                "{method} with the middle button is not allowed in a session: on Linux it pastes the browser's shared selection buffer"
            ));
        }
        "Input.dispatchDragEvent" => {
            let files = params.pointer("/data/files").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
            if files {
                return Err(format!("{method} with local files is not allowed in a session"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Only `http(s)` pages (and `about:blank`) may be navigated to.
pub fn check_url(url: &str) -> Result<(), String> {
    if url == "about:blank" {
        return Ok(());
    }
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        Ok(u) => Err(format!("{}: URLs are refused (http and https only)", u.scheme())),
        Err(e) => Err(format!("'{url}' is not a valid URL ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn browser_level_and_file_reaching_commands_are_refused() {
        for m in [
            "Browser.close",
            "Browser.setDownloadBehavior",
            "Target.createBrowserContext",
            "Target.attachToTarget",
            "SystemInfo.getProcessInfo",
            "Tracing.start",
            "IO.resolveBlob",
            "Network.loadNetworkResource",
            "Storage.getCookies",
            "Memory.simulatePressureNotification",
            "DOM.setFileInputFiles",
            "Page.setDownloadBehavior",
            "Page.close",
            "Security.setIgnoreCertificateErrors",
            "nodots",
        ] {
            assert!(check_page_command(m, &json!({})).is_err(), "{m}");
        }
        for m in [
            "Runtime.evaluate",
            "Input.dispatchMouseEvent",
            "Network.getCookies",
            "DOM.getDocument",
            "Page.crash",
            "Emulation.setDeviceMetricsOverride",
        ] {
            assert!(check_page_command(m, &json!({})).is_ok(), "{m}");
        }
        assert!(check_page_command("Page.navigate", &json!({ "url": "https://example.com/" })).is_ok());
        assert!(check_page_command("IO.read", &json!({ "handle": "1" })).is_ok());
        assert!(
            check_page_command("Fetch.continueRequest", &json!({ "requestId": "1", "url": "file:///etc/passwd" }))
                .is_err()
        );
        assert!(check_page_command("Fetch.continueRequest", &json!({ "requestId": "1" })).is_ok());
        let middle = json!({ "type": "mouseReleased", "x": 1, "y": 1, "button": "middle" });
        assert!(check_page_command("Input.dispatchMouseEvent", &middle).is_err());
        let left = json!({ "type": "mouseReleased", "x": 1, "y": 1, "button": "left" });
        assert!(check_page_command("Input.dispatchMouseEvent", &left).is_ok());
        let drag = json!({ "type": "drop", "x": 1, "y": 1, "data": { "items": [], "files": ["/etc/passwd"], "dragOperationsMask": 1 } });
        assert!(check_page_command("Input.dispatchDragEvent", &drag).is_err());
        assert!(check_page_command("Page.navigate", &json!({ "url": "about:blank" })).is_ok());
        for url in [
            "file:///etc/passwd",
            "FILE:///etc/passwd",
            "chrome://settings",
            "javascript:alert(1)",
            "data:text/html,x",
            "",
        ] {
            let e = check_page_command("Page.navigate", &json!({ "url": url })).unwrap_err();
            assert!(e.starts_with("Page.navigate: "), "{url}: {e}");
        }
    }
}
