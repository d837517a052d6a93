//! Checking one page: reachability first (an error page gets one finding and nothing else),
//! then each family of checks.

use super::accessibility::check_axe;
use super::ctx::{Ctx, finish};
use super::defs::Thresholds;
use super::facts::PageFacts;
use super::findings::{Checked, Evidence, Severity};
use super::performance::{check_performance, check_redirects};
use super::requests::{check_console_and_requests, check_links};
use super::security::{check_headers, check_page_security};
use super::seo::check_seo;

/// Check one page.
pub fn check_page(facts: &PageFacts, t: &Thresholds) -> Checked {
    let url = if facts.final_url.is_empty() { facts.url.as_str() } else { facts.final_url.as_str() };
    let mut cx = Ctx { url, out: Checked::default() };

    // Reachability first: an error page's content is not the page's.
    match (facts.status, &facts.error) {
        (None, err) => {
            let why = err.clone().unwrap_or_else(|| "no response".into());
            cx.fail(
                "http-status",
                Severity::Critical,
                "The page could not be loaded".into(),
                "Visitors and search engines cannot open this page. Check that the server is up and the address is right.".into(),
                vec![Evidence { url: facts.url.clone(), value: Some(why), expected: Some("HTTP 200".into()), ..Evidence::default() }],
                1,
            );
            return finish(cx);
        }
        (Some(s), _) if s >= 400 => {
            let (title, explanation) = if s >= 500 {
                (
                    format!("The page fails with a server error (HTTP {s})"),
                    "The server crashed or refused to build this page, so visitors see an error and search engines drop it. Check the server's logs.",
                )
            } else {
                (
                    format!("The page answers HTTP {s}"),
                    "Visitors get an error page instead of content and search engines will not index it. Restore the page or redirect the address to its replacement.",
                )
            };
            cx.fail(
                "http-status",
                Severity::Critical,
                title,
                explanation.into(),
                vec![Evidence {
                    url: url.to_owned(),
                    value: Some(format!("HTTP {s}")),
                    expected: Some("HTTP 200".into()),
                    ..Evidence::default()
                }],
                1,
            );
            return finish(cx);
        }
        _ => cx.pass("http-status"),
    }

    check_redirects(&mut cx, facts, t);
    check_headers(&mut cx, facts);
    if let Some(c) = &facts.collection {
        check_seo(&mut cx, facts, c, t);
        check_performance(&mut cx, c, t);
        check_page_security(&mut cx, c);
    }
    check_console_and_requests(&mut cx, facts);
    if let Some(l) = &facts.links {
        check_links(&mut cx, l);
    }
    check_axe(&mut cx, facts.axe.as_ref());
    finish(cx)
}
