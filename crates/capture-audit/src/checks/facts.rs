//! What the checks read: the facts of one audited page, and of the site.

use serde::{Deserialize, Serialize};

use crate::collect::{AxeResults, ConsoleMessage, FailedRequest, PageCollection};
use crate::fetch::{Hop, LinkReport};

/// Everything known about one audited page.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageFacts {
    /// The URL audited.
    pub url: String,
    /// The URL after redirects.
    pub final_url: String,
    /// The document's status (None: no response).
    pub status: Option<u16>,
    /// Why the page could not be loaded.
    pub error: Option<String>,
    /// The bot wall's vendor when the site answered with a challenge or block page instead of
    /// the page (`cloudflare`, `datadome`, …): reported, not scored.
    #[serde(default)]
    pub blocked: Option<String>,
    /// Redirect hops before the document.
    #[serde(default)]
    pub redirects: Vec<Hop>,
    /// The document's response headers (any case; repeated names allowed).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// [`crate::collect::COLLECT_JS`]'s result.
    pub collection: Option<PageCollection>,
    /// [`crate::collect::AXE_RUN_JS`]'s result.
    pub axe: Option<AxeResults>,
    /// Console errors (DevTools events).
    #[serde(default)]
    pub console_errors: Vec<ConsoleMessage>,
    /// Failed sub-requests (DevTools events).
    #[serde(default)]
    pub failed_requests: Vec<FailedRequest>,
    /// Link checks ([`crate::fetch::check_links`]).
    pub links: Option<LinkReport>,
}

impl PageFacts {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every header named `name`, joined with `, `.
    pub fn header_all(&self, name: &str) -> Option<String> {
        let v: Vec<&str> =
            self.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect();
        (!v.is_empty()).then(|| v.join(", "))
    }
}

/// Site-level facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteFacts {
    /// The start URL.
    pub start_url: String,
    /// The start page's URL after redirects (decides HTTPS).
    pub final_url: String,
    /// The robots.txt URL.
    pub robots_url: String,
    /// robots.txt status (None: network failure).
    pub robots_status: Option<u16>,
    /// robots.txt network failure.
    pub robots_error: Option<String>,
    /// A sitemap was read.
    pub sitemap_found: bool,
    /// The sitemap URLs tried.
    #[serde(default)]
    pub sitemap_urls: Vec<String>,
}
