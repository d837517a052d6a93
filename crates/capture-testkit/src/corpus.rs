//! The real-web corpus: pages that reproduce what real platforms put in a page — consent
//! platforms' markup, ids, script objects and behaviour (OneTrust, Cookiebot, Didomi, Quantcast
//! Choice, Usercentrics in a shadow root, TrustArc, Sourcepoint's message in a cross-site iframe),
//! a home-made banner no rule knows, and an ordinary page that only talks about such things.
//! Served on 127.0.0.1; the cross-site frames come from `localhost` on the same port (another
//! site to the browser). Each page paints a 40 px marker in its top-left corner when its platform
//! records an answer: green for a refusal, orange for an acceptance, gray for none.
//!
//! The files are in `crates/capture-testkit/corpus/`; `{{COMMON}}` in a page stands for the shared
//! style and script.

use crate::common::Site;

/// The marker's colours.
pub const REJECTED: [u8; 3] = [0, 0xc0, 0];
pub const ACCEPTED: [u8; 3] = [0xff, 0x88, 0];
pub const UNANSWERED: [u8; 3] = [0x88, 0x88, 0x88];
/// The page's own content colour, behind any pop-up.
pub const CONTENT: [u8; 3] = [0x33, 0x66, 0xcc];

/// A consent page of the corpus and what `cookieConsent: auto` should make of it.
#[derive(Debug, Clone, Copy)]
pub struct ConsentPage {
    /// Served at this path.
    pub path: &'static str,
    /// The rule of DuckDuckGo's autoconsent that recognises its platform (None: no rule does).
    pub cmp: Option<&'static str>,
    /// What `auto` does: `rejected`, `hidden` or `none-found`.
    pub auto: &'static str,
    /// Whether the platform can be opted in (`accept`) by its rule.
    pub accepts: bool,
    /// Where the pop-up covers the page's content (x, y in CSS px of a 1280×800 view).
    pub covered: (u32, u32),
}

/// The consent pages.
pub const CONSENT_PAGES: &[ConsentPage] = &[
    ConsentPage { path: "/onetrust.html", cmp: Some("Onetrust"), auto: "rejected", accepts: true, covered: (640, 700) },
    ConsentPage {
        path: "/cookiebot.html",
        cmp: Some("Cybotcookiebot"),
        auto: "rejected",
        accepts: true,
        covered: (640, 400),
    },
    ConsentPage { path: "/didomi.html", cmp: Some("didomi"), auto: "rejected", accepts: true, covered: (640, 700) },
    ConsentPage {
        path: "/quantcast.html",
        cmp: Some("quantcast"),
        auto: "rejected",
        accepts: true,
        covered: (640, 650),
    },
    ConsentPage {
        path: "/usercentrics.html",
        cmp: Some("usercentrics-api"),
        auto: "rejected",
        accepts: true,
        covered: (640, 700),
    },
    ConsentPage {
        path: "/trustarc.html",
        cmp: Some("TrustArc-top"),
        auto: "rejected",
        accepts: true,
        covered: (640, 700),
    },
    ConsentPage {
        path: "/sourcepoint.html",
        cmp: Some("Sourcepoint-frame"),
        auto: "rejected",
        accepts: true,
        covered: (640, 400),
    },
    ConsentPage { path: "/generic-banner.html", cmp: None, auto: "hidden", accepts: false, covered: (640, 740) },
    ConsentPage { path: "/plain.html", cmp: None, auto: "none-found", accepts: false, covered: (640, 400) },
];

const COMMON_CSS: &str = include_str!("../corpus/_common.css");
const COMMON_JS: &str = include_str!("../corpus/_common.js");

fn page(file: &str) -> String {
    let common = format!("<style>{COMMON_CSS}</style><script>{COMMON_JS}</script>");
    file.replace("{{COMMON}}", &common)
}

/// Every page of the corpus: (path, content type, body).
pub fn pages() -> Vec<(&'static str, &'static str, String)> {
    let html = "text/html; charset=utf-8";
    vec![
        ("/onetrust.html", html, page(include_str!("../corpus/onetrust.html"))),
        ("/cookiebot.html", html, page(include_str!("../corpus/cookiebot.html"))),
        ("/didomi.html", html, page(include_str!("../corpus/didomi.html"))),
        ("/quantcast.html", html, page(include_str!("../corpus/quantcast.html"))),
        ("/usercentrics.html", html, page(include_str!("../corpus/usercentrics.html"))),
        ("/trustarc.html", html, page(include_str!("../corpus/trustarc.html"))),
        ("/trustarc-manager.html", html, page(include_str!("../corpus/trustarc-manager.html"))),
        ("/sourcepoint.html", html, page(include_str!("../corpus/sourcepoint.html"))),
        // Sourcepoint's message, at the path its rule knows it by.
        ("/index.html", html, page(include_str!("../corpus/sourcepoint-message.html"))),
        ("/generic-banner.html", html, page(include_str!("../corpus/generic-banner.html"))),
        ("/plain.html", html, page(include_str!("../corpus/plain.html"))),
        ("/contact-captcha.html", html, page(include_str!("../corpus/contact-captcha.html"))),
        ("/newsletter.html", html, page(include_str!("../corpus/newsletter.html"))),
        ("/annoyances.html", html, page(include_str!("../corpus/annoyances.html"))),
        ("/ad-article.html", html, page(include_str!("../corpus/ad-article.html"))),
        ("/cf-challenge.html", html, include_str!("../corpus/cf-challenge.html").to_owned()),
        ("/cf-block.html", html, include_str!("../corpus/cf-block.html").to_owned()),
        ("/datadome.html", html, include_str!("../corpus/datadome.html").to_owned()),
        ("/perimeterx.html", html, include_str!("../corpus/perimeterx.html").to_owned()),
        // Not a page at all: data a browser shows as text (no text to read as a page).
        ("/data.json", "application/json", "{\"prices\": [1, 2, 3]}".to_owned()),
    ]
}

/// A bot wall of the corpus: the vendor's own challenge or block page, served with the status
/// and headers the vendor answers with.
#[derive(Debug, Clone, Copy)]
pub struct WallPage {
    pub path: &'static str,
    /// What `blocked: <vendor>` names.
    pub vendor: &'static str,
    pub status: u16,
    pub headers: &'static [(&'static str, &'static str)],
}

/// The bot walls: Cloudflare's managed challenge ("Just a moment…") and block page (error 1020),
/// DataDome's interstitial, HUMAN/PerimeterX's "Press & Hold" page.
pub const WALL_PAGES: &[WallPage] = &[
    WallPage {
        path: "/cf-challenge.html",
        vendor: "cloudflare",
        status: 403,
        headers: &[("cf-mitigated", "challenge"), ("server", "cloudflare"), ("cf-ray", "8f1e2d3c4b5a6978-FRA")],
    },
    WallPage {
        path: "/cf-block.html",
        vendor: "cloudflare",
        status: 403,
        headers: &[("server", "cloudflare"), ("cf-ray", "8f1e2d3c4b5a6979-FRA")],
    },
    WallPage {
        path: "/datadome.html",
        vendor: "datadome",
        status: 403,
        headers: &[("x-datadome", "protected"), ("x-dd-b", "1")],
    },
    WallPage { path: "/perimeterx.html", vendor: "perimeterx", status: 403, headers: &[] },
];

/// The cookie-consent step of the release before this corpus (a script that clicked "accept" on
/// six platforms and hid what looked like a banner), kept only to measure against.
pub const PREVIOUS_CONSENT: &str = include_str!("../corpus/previous-consent.js");

/// Rules for `/ad-article.html` in EasyList/uBO syntax, for the page's host: a scriptlet-only
/// ad (`set-constant`), an interstitial stopped by `abort-on-property-read`, a sponsored card
/// found by its text, a partner offer whose box is two levels up, and a teaser removed.
pub fn ad_article_rules(host: &str) -> String {
    format!(
        "{host}##+js(set, adsEnabled, false)\n{host}##+js(aopr, showInterstitial)\n\
         {host}#?#div.card:has-text(Sponsored)\n{host}##.promo:has-text(/partner offer/i):upward(2)\n\
         {host}##.teaser:remove()\n"
    )
}

/// Pages that talk about captchas, or carry a captcha widget among their own content: not walls.
pub const NOT_WALLS: &[&str] = &["/plain.html", "/contact-captcha.html"];

/// Serve the corpus on 127.0.0.1 (and, for its cross-site frames, as `localhost`); the walls
/// with their vendors' statuses and headers, everything else 200.
pub async fn serve() -> Site {
    use axum::http::{HeaderName, HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::get;
    let mut router = axum::Router::new();
    for (path, ct, body) in pages() {
        let wall = WALL_PAGES.iter().find(|w| w.path == path).copied();
        router = router.route(
            path,
            get(move || {
                let body = body.clone();
                async move {
                    let mut r = ([(header::CONTENT_TYPE, ct)], body).into_response();
                    if let Some(w) = wall {
                        *r.status_mut() = StatusCode::from_u16(w.status).unwrap();
                        for (k, v) in w.headers {
                            r.headers_mut().insert(HeaderName::from_static(k), HeaderValue::from_static(v));
                        }
                    }
                    r
                }
            }),
        );
    }
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let h = tokio::spawn(async move {
        let _ = axum::serve(l, router).await;
    });
    Site::from_parts(base, h)
}
