//! The wire types of live views (`POST /v1/runs/{id}/live-view`, the account's embedding
//! setting) and of the messages on a view's WebSocket.

use capture_core::FieldError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::validated::Checked;

/// Most seconds a link lives.
pub const TTL_MAX: u64 = 86_400;
/// A link's life unless the request says.
pub const TTL_DEFAULT: u64 = 900;
/// Most origins a live view may be embedded in.
pub const ANCESTORS_MAX: usize = 20;

/// What a link lets its holder do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Watch only: input from the page is refused.
    View,
    /// Watch and drive: pointer, wheel and keyboard reach the session's tab.
    Control,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::View => "view",
            Mode::Control => "control",
        }
    }
}

/// `POST /v1/runs/{id}/live-view`: a signed, expiring link to watch (or drive) the run's tab.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveViewIn {
    /// `view` (default) or `control`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Seconds the link works, 1 to 86400 (default 900).
    #[serde(default)]
    #[schemars(range(min = 1, max = 86_400))]
    pub ttl: Option<u64>,
}

/// A checked link request.
#[derive(Debug, Clone, Copy)]
pub struct ValidLiveView {
    pub mode: Mode,
    pub ttl: u64,
}

impl Checked for LiveViewIn {
    type Valid = ValidLiveView;

    fn check(self) -> Result<ValidLiveView, FieldError> {
        let ttl = self.ttl.unwrap_or(TTL_DEFAULT);
        if !(1..=TTL_MAX).contains(&ttl) {
            return Err(FieldError::new("ttl", "must be 1 to 86400 seconds"));
        }
        Ok(ValidLiveView { mode: self.mode.unwrap_or(Mode::View), ttl })
    }
}

/// A live view's link.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveView {
    /// A page of this service showing the session's current tab as it changes; in `control`
    /// mode it also forwards the person's pointer, wheel and keyboard. Anyone holding it can
    /// use it until it expires: share it like a password.
    pub url: String,
    pub expires_at: String,
    pub mode: Mode,
}

/// `PUT /v1/account/live-view`: where the account's live views may be embedded.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveViewSettings {
    /// Origins (`https://app.example.com`, `http://localhost:3000`) whose pages may show a
    /// live view in an iframe (the view page's CSP `frame-ancestors`); empty: none but this
    /// service's own pages.
    pub frame_ancestors: Vec<String>,
}

impl Checked for LiveViewSettings {
    type Valid = LiveViewSettings;

    fn check(self) -> Result<LiveViewSettings, FieldError> {
        if self.frame_ancestors.len() > ANCESTORS_MAX {
            return Err(FieldError::new("frameAncestors", "must list at most 20 origins"));
        }
        let mut out = Vec::with_capacity(self.frame_ancestors.len());
        for (i, o) in self.frame_ancestors.iter().enumerate() {
            let field = format!("frameAncestors[{i}]");
            out.push(origin(o).map_err(|why| FieldError::new(field, why))?);
        }
        out.dedup();
        Ok(LiveViewSettings { frame_ancestors: out })
    }
}

/// An origin as CSP writes it: `scheme://host[:port]`, nothing else.
fn origin(raw: &str) -> Result<String, &'static str> {
    let u = url::Url::parse(raw.trim()).map_err(|_| "must be an origin such as https://app.example.com")?;
    if !matches!(u.scheme(), "https" | "http") {
        return Err("must be an http or https origin");
    }
    if u.path() != "/" || u.query().is_some() || u.fragment().is_some() || !u.username().is_empty() {
        return Err("must be an origin only (scheme://host[:port], no path)");
    }
    let host = u.host_str().ok_or("must have a host")?;
    Ok(match u.port() {
        Some(p) => format!("{}://{host}:{p}", u.scheme()),
        None => format!("{}://{host}", u.scheme()),
    })
}

/// What the view page sends on its WebSocket (control mode; `done` ends a hand-off).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
pub enum ViewerMessage {
    Mouse {
        kind: String,
        x: f64,
        y: f64,
        #[serde(default)]
        button: Option<String>,
        #[serde(default)]
        clicks: Option<u32>,
        #[serde(default)]
        modifiers: Option<u32>,
    },
    Wheel {
        x: f64,
        y: f64,
        dx: f64,
        dy: f64,
    },
    Key {
        key: String,
        down: bool,
        #[serde(default)]
        modifiers: Option<u32>,
    },
    Done,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_checked_and_normalised() {
        let s = LiveViewSettings {
            frame_ancestors: vec!["https://app.example.com/".into(), "http://localhost:3000".into()],
        }
        .check()
        .unwrap();
        assert_eq!(s.frame_ancestors, ["https://app.example.com", "http://localhost:3000"]);
        for (bad, why) in [
            ("app.example.com", "must be an origin such as https://app.example.com"),
            ("ftp://x.example", "must be an http or https origin"),
            ("https://x.example/path", "must be an origin only (scheme://host[:port], no path)"),
        ] {
            let e = LiveViewSettings { frame_ancestors: vec![bad.into()] }.check().unwrap_err();
            assert_eq!((e.field.as_str(), e.reason.as_str()), ("frameAncestors[0]", why), "{bad}");
        }
    }

    #[test]
    fn ttl_is_bounded() {
        let v = LiveViewIn::default().check().unwrap();
        assert_eq!((v.mode, v.ttl), (Mode::View, 900));
        for ttl in [0, 86_401] {
            let e = LiveViewIn { mode: None, ttl: Some(ttl) }.check().unwrap_err();
            assert_eq!(e.field, "ttl");
        }
        assert_eq!(LiveViewIn { mode: Some(Mode::Control), ttl: Some(86_400) }.check().unwrap().ttl, 86_400);
    }
}
