//! Best-practice checks of what happened while loading: console errors, failed requests and
//! broken links.

use super::ctx::{Ctx, Failure};
use super::facts::PageFacts;
use super::findings::{Evidence, Severity};
use crate::collect::ConsoleMessage;
use crate::fetch::{LinkReport, LinkVerdict};

pub(super) fn check_console_and_requests(cx: &mut Ctx<'_>, facts: &PageFacts) {
    let url = cx.url.to_owned();
    // Network errors logged to the console are the failed requests below: counted there.
    let errors: Vec<&ConsoleMessage> = facts.console_errors.iter().filter(|m| m.source != "network").collect();
    let f: Failure = (!errors.is_empty()).then(|| {
        (
            Severity::Warning,
            format!("{} error{} in the browser console", errors.len(), if errors.len() == 1 { "" } else { "s" }),
            "Script errors often mean a feature of the page is broken for visitors. Open the browser's developer console on this page and fix the errors listed.".into(),
            errors
                .iter()
                .map(|m| Evidence {
                    url: m.url.clone().filter(|u| !u.is_empty()).unwrap_or_else(|| url.clone()),
                    selector: None,
                    value: Some(match m.line {
                        Some(l) => format!("{} (line {l})", m.text),
                        None => m.text.clone(),
                    }),
                    expected: None,
                })
                .collect(),
            errors.len() as u32,
        )
    });
    cx.check("console-errors", f);
    let failed = &facts.failed_requests;
    let f: Failure = (!failed.is_empty()).then(|| {
        (
            Severity::Warning,
            format!("{} request{} failed while loading", failed.len(), if failed.len() == 1 { "" } else { "s" }),
            "Files the page asked for did not arrive (missing images, scripts or styles), so parts of it may look or work broken. Fix or remove the references.".into(),
            failed
                .iter()
                .map(|r| Evidence {
                    url: r.url.clone(),
                    selector: None,
                    value: Some(match (r.status, &r.error) {
                        (Some(s), _) => format!("HTTP {s}"),
                        (None, Some(e)) => e.clone(),
                        (None, None) => "failed".into(),
                    }),
                    expected: Some("HTTP 200".into()),
                })
                .collect(),
            failed.len() as u32,
        )
    });
    cx.check("failed-requests", f);
}

pub(super) fn check_links(cx: &mut Ctx<'_>, links: &LinkReport) {
    let url = cx.url.to_owned();
    let broken: Vec<_> = links.broken().collect();
    let f: Failure = (!broken.is_empty()).then(|| {
        (
            Severity::Warning,
            format!("{} broken link{}", broken.len(), if broken.len() == 1 { "" } else { "s" }),
            "Links that lead to errors frustrate visitors and waste search engines' attention. Update or remove them."
                .into(),
            broken
                .iter()
                .map(|l| Evidence {
                    url: url.clone(),
                    selector: None,
                    value: Some(format!(
                        "{} → {}",
                        l.url,
                        match (l.status, &l.error) {
                            (Some(s), _) if l.verdict == LinkVerdict::Broken => format!("HTTP {s}"),
                            (_, Some(e)) => e.clone(),
                            _ => "failed".into(),
                        }
                    )),
                    expected: Some("a working link".into()),
                })
                .collect(),
            broken.len() as u32,
        )
    });
    cx.check("broken-links", f);
}
