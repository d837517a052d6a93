//! The auth-test helper: for a site, recommend signing in, signing up or expecting a
//! verification, from (1) the auth history the agent recorded for the site's normalized
//! origin, (2) the mail the inbox received from the site, and (3) when those do not settle
//! it, a look at the page in the browser pool (password fields, sign-up and sign-in
//! wording, OAuth buttons, magic-link and one-time-code wording). Every reason is listed in
//! `evidence`. `record` appends an attempt to the history.

use std::time::Duration;

use capture_browser::WaitUntil;
use capture_browser::session::{Device, SessionOptions};
use capture_core::FieldError;
use capture_core::ids::new_id;
use capture_core::time::iso;
use capture_store::{AuthAttemptRow, InboxMessageRow};
use serde::Deserialize;

use super::types::{AuthAttempt, Check, CheckIn, CheckInbox, Evidence, RecordIn};
use crate::auth::Account;
use crate::error::Result;
use crate::state::AppState;

/// The actions an attempt may record.
pub const ACTIONS: &[&str] = &["sign_up", "sign_in", "verify", "reset_password"];
/// The outcomes an attempt may record.
pub const OUTCOMES: &[&str] = &[
    "success",
    "failure",
    "verification_sent",
    "account_exists",
    "no_account",
    "invalid_credentials",
    "blocked",
    "error",
];
/// The methods an attempt may name.
pub const METHODS: &[&str] = &["password", "magic_link", "email_code", "oauth", "passkey", "unknown"];
/// Prefix of recorded attempt ids.
pub const ATTEMPT_ID: &str = "ath";

/// The normalized origin of a URL: lower-case scheme and host, the default port dropped, a
/// leading `www.` dropped, path, query and fragment ignored (`https://WWW.Example.com:443/x`
/// → `https://example.com`).
pub fn normalize_origin(raw: &str) -> std::result::Result<String, FieldError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(FieldError::new("url", "is required"));
    }
    if raw.len() > 2048 {
        return Err(FieldError::new("url", "must be at most 2048 characters"));
    }
    let u = url::Url::parse(raw).map_err(|e| FieldError::new("url", format!("is not a URL: {e}")))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(FieldError::new("url", "must be an http or https URL"));
    }
    let host = match u.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d.strip_prefix("www.").filter(|r| !r.is_empty()).map(str::to_string).unwrap_or(d)
        }
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        None => return Err(FieldError::new("url", "must have a host")),
    };
    Ok(match u.port() {
        Some(p) => format!("{}://{host}:{p}", u.scheme()),
        None => format!("{}://{host}", u.scheme()),
    })
}

/// The host of a normalized origin (without the port and brackets).
fn origin_host(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    if let Some(v6) = rest.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    rest.rsplit_once(':').map_or(rest, |(h, _)| h)
}

fn attempt_view(r: &AuthAttemptRow) -> AuthAttempt {
    AuthAttempt {
        id: r.id.clone(),
        origin: r.origin.clone(),
        action: r.action.clone(),
        outcome: r.outcome.clone(),
        method: r.method.clone(),
        note: r.note.clone(),
        at: iso(r.created_at),
    }
}

fn one_of(field: &str, v: &str, allowed: &[&str]) -> std::result::Result<String, FieldError> {
    let v = v.trim();
    if allowed.contains(&v) {
        Ok(v.to_string())
    } else {
        Err(FieldError::new(field, format!("must be one of {}", allowed.join(", "))))
    }
}

/// Record an attempt on the URL's origin.
pub async fn record(state: &AppState, account: &Account, r: &RecordIn) -> Result<AuthAttempt> {
    let origin = normalize_origin(&r.url)?;
    let action = one_of("action", &r.action, ACTIONS)?;
    let outcome = one_of("outcome", &r.outcome, OUTCOMES)?;
    let method = match r.method.as_deref() {
        None => None,
        Some(m) => Some(one_of("method", m, METHODS)?),
    };
    let note = match r.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) if n.chars().count() > 1000 => {
            return Err(FieldError::new("note", "must be at most 1000 characters").into());
        }
        Some(n) => Some(n.chars().filter(|c| !c.is_control() || *c == '\n').collect::<String>()),
        None => None,
    };
    let row = AuthAttemptRow {
        id: new_id(ATTEMPT_ID),
        user_id: account.user.id.clone(),
        origin,
        action,
        outcome,
        method,
        note,
        created_at: state.clock.now_ms(),
    };
    state.store.insert_auth_attempt(&row).await?;
    Ok(attempt_view(&row))
}

/// What the page showed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageFacts {
    pub final_url: String,
    pub title: String,
    /// The visible text, lower-case (at most 20 000 characters).
    pub text: String,
    pub password_fields: u32,
    pub new_password_fields: u32,
    pub current_password_fields: u32,
    pub email_fields: u32,
    pub otp_fields: u32,
    /// Texts of buttons, submit inputs and links, lower-case.
    pub controls: Vec<String>,
    /// Link targets and form actions, lower-case.
    pub targets: Vec<String>,
}

/// What the page suggests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeReading {
    pub sign_up_form: bool,
    pub sign_in_form: bool,
    pub sign_up_wording: bool,
    pub sign_in_wording: bool,
    pub oauth: Vec<String>,
    pub magic_link: bool,
    pub email_code: bool,
    pub verification_wording: bool,
    pub evidence: Vec<String>,
}

const SIGN_UP_WORDS: &[&str] = &[
    "sign up",
    "signup",
    "sign-up",
    "register",
    "create account",
    "create an account",
    "create your account",
    "join now",
];
const SIGN_IN_WORDS: &[&str] =
    &["sign in", "signin", "sign-in", "log in", "login", "log-in", "welcome back", "forgot password"];
const MAGIC_WORDS: &[&str] = &[
    "magic link",
    "sign-in link",
    "sign in link",
    "login link",
    "log-in link",
    "email me a link",
    "email you a link",
    "send me a link",
    "send you a link",
    "passwordless",
];
const CODE_WORDS: &[&str] = &[
    "one-time code",
    "one time code",
    "email you a code",
    "send you a code",
    "email me a code",
    "send me a code",
    "enter the code",
    "login code",
    "sign-in code",
];
const VERIFY_WORDS: &[&str] = &[
    "verify your email",
    "verify your e-mail",
    "confirm your email",
    "confirm your e-mail",
    "verification email",
    "verification link",
    "confirmation email",
    "confirmation link",
    "activate your account",
];
const PROVIDERS: &[(&str, &[&str])] = &[
    ("google", &["accounts.google.com", "/auth/google", "oauth/google"]),
    ("github", &["github.com/login/oauth", "/auth/github", "oauth/github"]),
    ("apple", &["appleid.apple.com", "/auth/apple"]),
    ("microsoft", &["login.microsoftonline.com", "login.live.com", "/auth/microsoft"]),
    ("facebook", &["facebook.com/dialog/oauth", "/auth/facebook"]),
    ("gitlab", &["gitlab.com/oauth", "/auth/gitlab"]),
    ("linkedin", &["linkedin.com/oauth", "/auth/linkedin"]),
];

fn first_match<'a>(hay: &str, words: &[&'a str]) -> Option<&'a str> {
    words.iter().copied().find(|w| hay.contains(w))
}

/// Read the page's facts (pure; unit-tested).
pub fn read_page(f: &PageFacts) -> ProbeReading {
    let mut r = ProbeReading::default();
    let controls = f.controls.join(" | ");
    let all = format!("{} | {} | {}", f.title.to_lowercase(), f.text, controls);
    if f.new_password_fields > 0 || f.password_fields >= 2 {
        r.sign_up_form = true;
        r.evidence.push(format!(
            "a form with {} password field(s){} — a sign-up form",
            f.password_fields,
            if f.new_password_fields > 0 { " marked new-password" } else { "" }
        ));
    } else if f.password_fields == 1 {
        // One password field: the wording of the buttons says which form it is.
        let up = first_match(&controls, SIGN_UP_WORDS);
        let inn = first_match(&controls, SIGN_IN_WORDS);
        if f.current_password_fields > 0 || (inn.is_some() && up.is_none()) {
            r.sign_in_form = true;
            r.evidence.push("a form with one password field and sign-in wording — a sign-in form".into());
        } else if up.is_some() {
            r.sign_up_form = true;
            r.evidence
                .push(format!("a form with one password field and a \"{}\" button — a sign-up form", up.unwrap_or("")));
        } else {
            r.sign_in_form = true;
            r.evidence.push("a form with one password field — most likely a sign-in form".into());
        }
    }
    if let Some(w) = first_match(&all, SIGN_UP_WORDS) {
        r.sign_up_wording = true;
        r.evidence.push(format!("sign-up wording on the page (\"{w}\")"));
    }
    if let Some(w) = first_match(&all, SIGN_IN_WORDS) {
        r.sign_in_wording = true;
        r.evidence.push(format!("sign-in wording on the page (\"{w}\")"));
    }
    for (name, hosts) in PROVIDERS {
        let by_text = f.controls.iter().any(|c| {
            c.contains(name)
                && (c.contains("continue with")
                    || c.contains("sign in with")
                    || c.contains("log in with")
                    || c.contains("sign up with"))
        });
        let by_target = f.targets.iter().any(|t| hosts.iter().any(|h| t.contains(h)));
        if by_text || by_target {
            r.oauth.push((*name).to_string());
        }
    }
    if !r.oauth.is_empty() {
        r.evidence.push(format!("OAuth sign-in offered ({})", r.oauth.join(", ")));
    }
    if let Some(w) = first_match(&all, MAGIC_WORDS) {
        r.magic_link = true;
        r.evidence.push(format!("magic-link wording (\"{w}\")"));
    }
    if f.otp_fields > 0 {
        r.email_code = true;
        r.evidence.push("a one-time-code field".into());
    } else if let Some(w) = first_match(&all, CODE_WORDS) {
        r.email_code = true;
        r.evidence.push(format!("one-time-code wording (\"{w}\")"));
    }
    if let Some(w) = first_match(&all, VERIFY_WORDS) {
        r.verification_wording = true;
        r.evidence.push(format!("e-mail verification wording (\"{w}\")"));
    }
    if f.password_fields == 0 && f.email_fields > 0 && !r.magic_link && !r.email_code {
        r.evidence.push("an e-mail field without a password field".into());
    }
    r
}

impl ProbeReading {
    /// The likely method: a password form wins (the inbox password works there), then a
    /// magic link, a code, OAuth alone.
    pub fn method(&self, facts: &PageFacts) -> &'static str {
        if facts.password_fields > 0 {
            "password"
        } else if self.magic_link {
            "magic_link"
        } else if self.email_code {
            "email_code"
        } else if !self.oauth.is_empty() {
            "oauth"
        } else {
            "unknown"
        }
    }
}

/// The page's visible facts, gathered in the page.
const PROBE_JS: &str = r#"(() => {
  const low = s => (s || '').replace(/\s+/g, ' ').trim().toLowerCase();
  const vis = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const q = s => [...document.querySelectorAll(s)].filter(vis);
  const pw = q('input[type=password]');
  return {
    finalUrl: location.href,
    title: document.title || '',
    text: low(document.body ? document.body.innerText : '').slice(0, 20000),
    passwordFields: pw.length,
    newPasswordFields: pw.filter(e => (e.getAttribute('autocomplete') || '').includes('new-password')).length,
    currentPasswordFields: pw.filter(e => (e.getAttribute('autocomplete') || '').includes('current-password')).length,
    emailFields: q('input[type=email], input[name*=email i], input[autocomplete=email], input[autocomplete=username]').length,
    otpFields: q('input[autocomplete=one-time-code]').length,
    controls: q('button, input[type=submit], input[type=button], a, [role=button]')
      .map(e => low(e.innerText || e.value || e.getAttribute('aria-label') || ''))
      .filter(Boolean).slice(0, 400).map(s => s.slice(0, 200)),
    targets: [...document.querySelectorAll('a[href], form[action]')]
      .map(e => low(e.getAttribute('href') || e.getAttribute('action') || '')).slice(0, 400).map(s => s.slice(0, 300)),
  };
})()"#;

/// Load the page in a fresh browser session and gather its facts.
async fn probe(state: &AppState, url: &str) -> std::result::Result<PageFacts, String> {
    let pool = state.browser.pool.clone().ok_or_else(|| "no browser on this node (no worker role)".to_string())?;
    let session = pool
        .open_session(SessionOptions {
            device: Device::desktop(1280, 800),
            deadline: Duration::from_secs(30),
            slot_timeout: Duration::from_secs(15),
            ..SessionOptions::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let r = async {
        let nav = session.goto(url, WaitUntil::Load, Duration::from_secs(20)).await.map_err(|e| match e {
            e if e.is_timeout() => "the page did not load within 20 s".to_string(),
            e => e.to_string(),
        })?;
        if let Some(status) = nav.status.filter(|s| *s >= 400) {
            return Err(format!("the page answered HTTP {status}"));
        }
        // Give scripts that render the form a moment.
        let _ = session.evaluate("new Promise(r => setTimeout(r, 300))", true, Duration::from_secs(2)).await;
        let v = session.evaluate(PROBE_JS, false, Duration::from_secs(10)).await.map_err(|e| e.to_string())?;
        serde_json::from_value::<PageFacts>(v).map_err(|e| e.to_string())
    }
    .await;
    session.close().await;
    r
}

/// What the history says.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryReading {
    pub account_known: bool,
    pub pending_verification: bool,
    pub last_failed_sign_in: bool,
    pub no_account: bool,
    pub successes: usize,
    pub method: Option<String>,
    pub evidence: Vec<String>,
}

/// Read the history, newest first (pure; unit-tested).
pub fn read_history(h: &[AuthAttemptRow]) -> HistoryReading {
    let mut r = HistoryReading {
        account_known: false,
        pending_verification: false,
        last_failed_sign_in: false,
        no_account: false,
        successes: 0,
        method: h.iter().find_map(|a| a.method.clone()).filter(|m| m != "unknown"),
        evidence: Vec::new(),
    };
    let exists =
        |a: &AuthAttemptRow| (a.outcome == "success" && a.action != "reset_password") || a.outcome == "account_exists";
    r.successes = h.iter().filter(|&a| exists(a)).count();
    r.account_known = r.successes > 0;
    // The newest attempt that says something about the account.
    if let Some(latest) = h.first() {
        r.evidence.push(format!("last recorded: {} → {} at {}", latest.action, latest.outcome, iso(latest.created_at)));
    }
    let newest_sign_up_pending = h.iter().position(|a| a.action == "sign_up" && a.outcome == "verification_sent");
    let newest_confirmed =
        h.iter().position(|a| (a.action == "verify" || a.action == "sign_in") && a.outcome == "success");
    if let Some(p) = newest_sign_up_pending
        && newest_confirmed.is_none_or(|c| c > p)
    {
        r.pending_verification = true;
        r.evidence.push("a sign-up got a verification mail and no verification or sign-in succeeded since".into());
    }
    if let Some(a) = h.iter().find(|a| a.action == "sign_in") {
        if a.outcome == "no_account" {
            r.no_account = true;
            r.evidence.push("the last sign-in found no account".into());
        } else if a.outcome != "success" {
            r.last_failed_sign_in = true;
            r.evidence.push(format!("the last sign-in failed ({})", a.outcome));
        }
    }
    if r.account_known {
        r.evidence.push(format!("{} recorded attempt(s) show the account exists", r.successes));
    }
    r
}

/// Check a site: see the module docs.
pub async fn check(state: &AppState, account: &Account, input: &CheckIn) -> Result<Check> {
    let origin = normalize_origin(&input.url)?;
    let url = capture_core::options::validate_url(input.url.trim())?;
    let probe_mode = match input.probe.as_deref().map(str::trim) {
        None | Some("") | Some("auto") => "auto",
        Some("always") => "always",
        Some("never") => "never",
        Some(_) => return Err(FieldError::new("probe", "must be auto, always or never").into()),
    };
    let inbox = super::service::ensure(state, account).await?;
    let rows = state.store.auth_history(&account.user.id, &origin, 20).await?;
    let hist = read_history(&rows);
    let mut evidence: Vec<Evidence> =
        hist.evidence.iter().map(|d| Evidence { source: "history".into(), detail: d.clone() }).collect();

    // Mail from the site: its domain (or a subdomain) sent it, or it links to the origin.
    let host = origin_host(&origin).to_string();
    let mails = state.store.inbox_messages_about(&account.user.id, &host, &origin, 10).await?;
    let mail_reading = read_mail(&mails, rows.first().map(|a| a.created_at));
    for m in &mails {
        let s = super::service::summary(m);
        let what = match (&s.verification_link, &s.code) {
            (Some(_), Some(c)) => format!(" with a verification link and the code {c}"),
            (Some(_), None) => " with a verification link".to_string(),
            (None, Some(c)) => format!(" with the code {c}"),
            (None, None) => String::new(),
        };
        evidence.push(Evidence {
            source: "inbox".into(),
            detail: format!(
                "mail from {} at {}: \"{}\"{what} ({})",
                m.from_address.as_deref().unwrap_or(&m.mail_from),
                iso(m.received_at),
                m.subject.as_deref().unwrap_or(""),
                m.id
            ),
        });
    }

    let settled = hist.account_known || hist.pending_verification || hist.no_account;
    let want_probe = match probe_mode {
        "always" => true,
        "never" => false,
        _ => !settled || hist.method.is_none(),
    };
    let mut probed = false;
    let mut page: Option<(PageFacts, ProbeReading)> = None;
    if want_probe {
        match probe(state, &url).await {
            Ok(f) => {
                probed = true;
                let r = read_page(&f);
                for d in &r.evidence {
                    evidence.push(Evidence { source: "probe".into(), detail: d.clone() });
                }
                if r.evidence.is_empty() {
                    evidence.push(Evidence {
                        source: "probe".into(),
                        detail: "no sign-in or sign-up form on the page".into(),
                    });
                }
                page = Some((f, r));
            }
            Err(e) => {
                evidence.push(Evidence { source: "probe".into(), detail: format!("the page could not be probed: {e}") })
            }
        }
    }
    let d = decide(&hist, &mail_reading, page.as_ref().map(|(f, r)| (f, r)));
    evidence.extend(d.reasons.iter().map(|r| Evidence { source: "decision".into(), detail: r.clone() }));
    Ok(Check {
        origin,
        recommendation: d.recommendation.into(),
        account_exists_confidence: d.confidence,
        likely_auth_method: d.method,
        expected_follow_up: d.follow_up.into(),
        history: rows.iter().map(attempt_view).collect(),
        inbox: CheckInbox { address: inbox.address },
        evidence,
        probed,
    })
}

/// What the inbox says about a site.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MailReading {
    pub messages: usize,
    /// A verification link or code arrived after the newest recorded attempt (or with no history).
    pub fresh_verification: bool,
    pub any_verification: bool,
    pub magic_link: bool,
    pub code: bool,
}

fn read_mail(mails: &[InboxMessageRow], newest_attempt: Option<i64>) -> MailReading {
    let mut r = MailReading { messages: mails.len(), ..MailReading::default() };
    for m in mails {
        let s = super::service::summary(m);
        let subject = m.subject.as_deref().unwrap_or("").to_lowercase();
        let verifying = s.verification_link.is_some() || s.code.is_some();
        if verifying {
            r.any_verification = true;
            if newest_attempt.is_none_or(|t| m.received_at >= t) {
                r.fresh_verification = true;
            }
        }
        if subject.contains("magic link") || subject.contains("sign-in link") || subject.contains("login link") {
            r.magic_link = true;
        }
        if s.code.is_some() && s.verification_link.is_none() {
            r.code = true;
        }
    }
    r
}

/// The check's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub recommendation: &'static str,
    pub confidence: f64,
    pub method: String,
    pub follow_up: &'static str,
    pub reasons: Vec<String>,
}

/// Decide from the history, the mail and the page (pure; unit-tested).
pub fn decide(h: &HistoryReading, m: &MailReading, page: Option<(&PageFacts, &ProbeReading)>) -> Decision {
    let mut reasons = Vec::new();
    let method: String = match (&h.method, page) {
        (Some(mm), _) => mm.clone(),
        (None, Some((f, r))) => r.method(f).to_string(),
        (None, None) if m.magic_link => "magic_link".into(),
        (None, None) if m.code => "email_code".into(),
        _ => "unknown".into(),
    };
    let verification_expected = page.is_some_and(|(_, r)| r.verification_wording) || m.any_verification;
    let (recommendation, confidence) = if h.pending_verification {
        reasons.push("a sign-up is waiting for its verification: open the mail's link or enter its code".into());
        ("expect_verification", if m.fresh_verification { 0.8 } else { 0.7 })
    } else if h.account_known && !h.no_account {
        let mut c = (0.9 + 0.03 * (h.successes.saturating_sub(1).min(2) as f64)).min(0.97);
        if h.last_failed_sign_in {
            c = 0.6;
            reasons.push("the account exists but the last sign-in failed: check the password or reset it".into());
        } else {
            reasons.push("the history shows an account on this site for the inbox address".into());
        }
        ("sign_in", c)
    } else if h.no_account {
        reasons.push("the last sign-in found no account: sign up".into());
        ("sign_up", 0.1)
    } else if m.fresh_verification {
        reasons.push("the inbox has a verification mail from this site that no recorded attempt explains".into());
        ("expect_verification", 0.6)
    } else if m.messages > 0 {
        reasons.push("the inbox has mail from this site, so the address is probably known there".into());
        ("sign_in", 0.55)
    } else {
        reasons.push("nothing recorded and no mail from this site: no account yet".into());
        ("sign_up", 0.05)
    };
    let follow_up = match method.as_str() {
        "magic_link" => "magic_link",
        "email_code" => "email_code",
        _ if recommendation == "expect_verification" => "email_verification",
        _ if recommendation == "sign_up" && verification_expected => "email_verification",
        "password" | "oauth" | "passkey" if recommendation == "sign_in" => "none",
        _ if recommendation == "sign_up" => "email_verification",
        _ => "none",
    };
    Decision { recommendation, confidence, method, follow_up, reasons }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn att(action: &str, outcome: &str, at: i64) -> AuthAttemptRow {
        AuthAttemptRow {
            id: format!("ath_{at}"),
            user_id: "usr_1".into(),
            origin: "https://example.com".into(),
            action: action.into(),
            outcome: outcome.into(),
            method: None,
            note: None,
            created_at: at,
        }
    }

    #[test]
    fn origins_are_normalized() {
        assert_eq!(normalize_origin("https://WWW.Example.COM:443/sign-up?x=1#y").unwrap(), "https://example.com");
        assert_eq!(normalize_origin("http://example.com:80").unwrap(), "http://example.com");
        assert_eq!(normalize_origin("http://www.example.com:8080/a").unwrap(), "http://example.com:8080");
        assert_eq!(normalize_origin("https://app.example.com./").unwrap(), "https://app.example.com");
        assert_eq!(normalize_origin("http://127.0.0.1:5000/signup").unwrap(), "http://127.0.0.1:5000");
        assert_eq!(normalize_origin("http://[::1]:9/").unwrap(), "http://[::1]:9");
        assert!(normalize_origin("ftp://example.com").is_err());
        assert!(normalize_origin("not a url").is_err());
        assert_eq!(origin_host("http://127.0.0.1:5000"), "127.0.0.1");
        assert_eq!(origin_host("https://example.com"), "example.com");
        assert_eq!(origin_host("http://[::1]:9"), "::1");
    }

    #[test]
    fn history_decides() {
        let none = MailReading::default();
        let d = decide(&read_history(&[]), &none, None);
        assert_eq!((d.recommendation, d.follow_up), ("sign_up", "email_verification"));
        assert!(d.confidence < 0.1);

        let h = [att("sign_up", "verification_sent", 10)];
        let d = decide(&read_history(&h), &none, None);
        assert_eq!((d.recommendation, d.follow_up), ("expect_verification", "email_verification"));

        let h = [att("verify", "success", 20), att("sign_up", "verification_sent", 10)];
        let d = decide(&read_history(&h), &none, None);
        assert_eq!(d.recommendation, "sign_in");
        assert!(d.confidence >= 0.9, "{d:?}");

        let h = [att("sign_in", "invalid_credentials", 30), att("sign_in", "success", 20)];
        let d = decide(&read_history(&h), &none, None);
        assert_eq!(d.recommendation, "sign_in");
        assert!(d.confidence < 0.7);

        let h = [att("sign_in", "no_account", 30)];
        assert_eq!(decide(&read_history(&h), &none, None).recommendation, "sign_up");

        let mail =
            MailReading { messages: 1, fresh_verification: true, any_verification: true, ..MailReading::default() };
        assert_eq!(decide(&read_history(&[]), &mail, None).recommendation, "expect_verification");
    }

    #[test]
    fn pages_are_read() {
        let sign_up = PageFacts {
            password_fields: 2,
            email_fields: 1,
            text: "create your account. we'll send you a verification link to confirm your email.".into(),
            controls: vec!["create account".into(), "already have an account? sign in".into()],
            ..PageFacts::default()
        };
        let r = read_page(&sign_up);
        assert!(r.sign_up_form && r.sign_up_wording && r.sign_in_wording && r.verification_wording, "{r:?}");
        assert_eq!(r.method(&sign_up), "password");

        let magic = PageFacts {
            email_fields: 1,
            text: "sign in without a password: we'll email you a magic link.".into(),
            controls: vec!["email me a link".into(), "continue with google".into()],
            ..PageFacts::default()
        };
        let r = read_page(&magic);
        assert!(r.magic_link && !r.sign_up_form && !r.sign_in_form);
        assert_eq!(r.oauth, vec!["google".to_string()]);
        assert_eq!(r.method(&magic), "magic_link");
        let d = decide(&read_history(&[]), &MailReading::default(), Some((&magic, &r)));
        assert_eq!((d.method.as_str(), d.follow_up), ("magic_link", "magic_link"));

        let sign_in = PageFacts {
            password_fields: 1,
            current_password_fields: 1,
            controls: vec!["log in".into()],
            ..PageFacts::default()
        };
        assert!(read_page(&sign_in).sign_in_form);
        let oauth_only =
            PageFacts { targets: vec!["https://github.com/login/oauth/authorize?x".into()], ..PageFacts::default() };
        let r = read_page(&oauth_only);
        assert_eq!(r.method(&oauth_only), "oauth");
    }
}
