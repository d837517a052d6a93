//! Security checks of a page: mixed content, password forms over http, and the security
//! headers (HSTS, CSP, nosniff, frame protection, referrer policy).

use super::ctx::{Ctx, Failure};
use super::facts::PageFacts;
use super::findings::{Evidence, Severity};
use crate::collect::PageCollection;

pub(super) fn check_page_security(cx: &mut Ctx<'_>, c: &PageCollection) {
    let url = cx.url.to_owned();
    if c.https {
        let mixed: Failure = (!c.mixed_content.is_empty()).then(|| {
            (
                Severity::Warning,
                format!("{} insecure (http:) resource{} on a secure page", c.mixed_content.len(), if c.mixed_content.len() == 1 { "" } else { "s" }),
                "Browsers block or flag http: files on an https page, which breaks images or scripts and shows a 'not secure' warning. Load them over https:.".into(),
                c.mixed_content
                    .iter()
                    .map(|m| Evidence { url: url.clone(), selector: m.selector.clone(), value: Some(format!("{} {}", m.kind, m.url)), expected: Some("https:".into()) })
                    .collect(),
                c.mixed_content.len() as u32,
            )
        });
        cx.check("mixed-content", mixed);
    }
    let pw: Failure = (!c.insecure_password_forms.is_empty()).then(|| {
        (
            Severity::Critical,
            "A password form is sent over an insecure connection".into(),
            "Passwords typed here travel unencrypted and can be read on the network; browsers warn visitors. Serve the page and the form's target over https.".into(),
            c.insecure_password_forms
                .iter()
                .map(|f| Evidence { url: url.clone(), selector: f.selector.clone(), value: Some(f.action.clone()), expected: Some("an https: page and action".into()) })
                .collect(),
            c.insecure_password_forms.len() as u32,
        )
    });
    cx.check("password-over-http", pw);
}

pub(super) fn check_headers(cx: &mut Ctx<'_>, facts: &PageFacts) {
    let url = cx.url.to_owned();
    let https = url.starts_with("https:");
    let hev = |name: &str, value: Option<String>, expected: &str| Evidence {
        url: url.clone(),
        selector: None,
        value: Some(match value {
            Some(v) => format!("{name}: {v}"),
            None => format!("no {name} header"),
        }),
        expected: Some(expected.to_owned()),
    };
    if https {
        let hsts = facts.header("strict-transport-security");
        let max_age = hsts.and_then(|h| {
            h.split(';').find_map(|p| {
                p.trim()
                    .to_ascii_lowercase()
                    .strip_prefix("max-age=")
                    .and_then(|v| v.trim_matches('"').parse::<u64>().ok())
            })
        });
        let f: Failure = max_age.is_none_or(|a| a == 0).then(|| {
            (
                Severity::Warning,
                "HTTPS is not enforced (no HSTS)".into(),
                "Without Strict-Transport-Security a visitor's first request can be downgraded to plain http. Send Strict-Transport-Security: max-age=31536000; includeSubDomains.".into(),
                vec![hev("Strict-Transport-Security", hsts.map(str::to_owned), "max-age=31536000")],
                1,
            )
        });
        cx.check("hsts-missing", f);
    }
    let csp = facts.header_all("content-security-policy");
    let f: Failure = csp.is_none().then(|| {
        (
            Severity::Info,
            "No Content-Security-Policy".into(),
            "A Content-Security-Policy limits where scripts may come from, which blunts cross-site scripting. Start with a report-only policy and tighten it.".into(),
            vec![hev("Content-Security-Policy", None, "a policy")],
            1,
        )
    });
    cx.check("csp-missing", f);
    let xcto = facts.header("x-content-type-options");
    let f: Failure = (!xcto.is_some_and(|v| v.trim().eq_ignore_ascii_case("nosniff"))).then(|| {
        (
            Severity::Info,
            "No X-Content-Type-Options: nosniff".into(),
            "Without it browsers may guess file types and run an upload as a script. Send X-Content-Type-Options: nosniff.".into(),
            vec![hev("X-Content-Type-Options", xcto.map(str::to_owned), "nosniff")],
            1,
        )
    });
    cx.check("x-content-type-options-missing", f);
    let xfo = facts.header("x-frame-options");
    let xfo_ok = xfo.is_some_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        v == "deny" || v == "sameorigin"
    });
    let fa_ok = csp.as_deref().is_some_and(|c| c.to_ascii_lowercase().contains("frame-ancestors"));
    let f: Failure = (!xfo_ok && !fa_ok).then(|| {
        (
            Severity::Warning,
            "Other sites can embed this page (clickjacking)".into(),
            "A hostile site can show this page in an invisible frame and trick visitors into clicking. Send X-Frame-Options: SAMEORIGIN or a Content-Security-Policy with frame-ancestors.".into(),
            vec![hev("X-Frame-Options", xfo.map(str::to_owned), "SAMEORIGIN, DENY, or CSP frame-ancestors")],
            1,
        )
    });
    cx.check("frame-protection-missing", f);
    let rp = facts.header("referrer-policy");
    let f: Failure = rp.is_none().then(|| {
        (
            Severity::Info,
            "No Referrer-Policy".into(),
            "Without a Referrer-Policy, full addresses (which may hold private data) can leak to other sites. Send Referrer-Policy: strict-origin-when-cross-origin.".into(),
            vec![hev("Referrer-Policy", None, "strict-origin-when-cross-origin")],
            1,
        )
    });
    cx.check("referrer-policy-missing", f);
}
