//! What is kept off the page: cookie-consent pop-ups (`cookieConsent`) and the kinds of
//! requests refused (`blockResources`).

use serde::{Deserialize, Serialize};

/// `cookieConsent`: what to do with a cookie-consent pop-up, by DuckDuckGo's autoconsent rules
/// (200+ consent platforms) run in every frame before the page's own scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CookieConsent {
    /// Opt out where a rule knows how, else hide the banner (the default).
    #[default]
    Auto,
    /// Opt out only; a banner that cannot be refused stays (`action: failed`).
    Reject,
    /// Opt in (accept all).
    Accept,
    /// Neither: hide the banner without answering it.
    Hide,
    /// Leave banners as they are.
    None,
}

impl CookieConsent {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CookieConsent::Auto => "auto",
            CookieConsent::Reject => "reject",
            CookieConsent::Accept => "accept",
            CookieConsent::Hide => "hide",
            CookieConsent::None => "none",
        }
    }

    /// From the wire name.
    pub fn parse(s: &str) -> Option<CookieConsent> {
        [CookieConsent::Auto, CookieConsent::Reject, CookieConsent::Accept, CookieConsent::Hide, CookieConsent::None]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// A stored job's `cookieConsent`: the names, or `true`/`false` of jobs stored before the names
/// existed (`true` was `auto`).
pub(super) fn stored_consent<'de, D: serde::Deserializer<'de>>(d: D) -> Result<CookieConsent, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Old(bool),
        Name(CookieConsent),
    }
    Ok(match Stored::deserialize(d)? {
        Stored::Old(true) => CookieConsent::Auto,
        Stored::Old(false) => CookieConsent::None,
        Stored::Name(c) => c,
    })
}

/// A kind of request of `blockResources`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Image,
    Media,
    Font,
    Stylesheet,
    Script,
    Xhr,
    Fetch,
    Websocket,
    Other,
}

impl ResourceKind {
    /// The DevTools protocol's name of the kind (`Network.ResourceType`).
    pub fn cdp_name(self) -> &'static str {
        match self {
            ResourceKind::Image => "Image",
            ResourceKind::Media => "Media",
            ResourceKind::Font => "Font",
            ResourceKind::Stylesheet => "Stylesheet",
            ResourceKind::Script => "Script",
            ResourceKind::Xhr => "XHR",
            ResourceKind::Fetch => "Fetch",
            ResourceKind::Websocket => "WebSocket",
            ResourceKind::Other => "Other",
        }
    }
}
