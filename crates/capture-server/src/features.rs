//! What this install can and cannot do, said up front.
//!
//! Some products need more than the binary: campaign mail and e-mail verification need an
//! SMTP server (`CAPTURE_SMTP_URL`), run videos need `ffmpeg`, video ads `ffmpeg` and
//! `espeak-ng`, PDF upload thumbnails `pdftoppm`, `blockAds`/`blockTrackers` the EasyList and
//! EasyPrivacy files of Debian's uBlock Origin package. Accessibility scores need axe-core, which
//! ships inside the binary ([`capture_audit::axe`]) and is only missing when the operator's
//! override (`CAPTURE_AXE_PATH`) cannot be read. Without this module each job of such a
//! feature would fail (or wait) on its own; here every feature gets one status that `/readyz`
//! (`features`, `unavailableFeatures`) and the dashboard show, with what would fix it.
//!
//! Tools are looked for on every call (a `PATH` lookup, no process started), so installing
//! `ffmpeg` shows up without a restart. Mail is checked live by `/readyz` (a connection to the
//! SMTP server); the dashboard reuses a check at most [`MAIL_CHECK_TTL`] old.

use std::time::{Duration, Instant};

use capture_audit::axe::AxeSource;
use serde::Serialize;

use crate::state::AppState;

/// How long the dashboard reuses a mail check.
pub const MAIL_CHECK_TTL: Duration = Duration::from_secs(60);

pub use crate::state::Features;

/// Whether a feature works on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Availability {
    /// It works.
    Ok,
    /// It cannot work until the operator does what `fix` says.
    Unavailable,
    /// This node does not do that work (no worker role): ask a worker node.
    NotOnThisNode,
}

/// One feature's status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeatureStatus {
    /// Stable key (`mail`, `auditAccessibility`, `runVideos`, `videoAds`, `blockLists`, `pdfThumbnails`,
    /// `llmExtraction`).
    #[serde(skip)]
    pub id: &'static str,
    /// For people.
    #[serde(skip)]
    pub name: &'static str,
    /// ok, unavailable or not-on-this-node.
    pub status: Availability,
    /// What works or what does not, and what happens meanwhile.
    pub detail: String,
    /// What the operator can do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The status of every feature on this node, in a fixed order; `mail` is the result of
/// [`crate::campaigns::service::mail_check`] (live for `/readyz`, [`recent_mail_check`] for pages).
pub fn report(state: &AppState, mail: &str) -> Vec<FeatureStatus> {
    let worker = state.browser.pool.is_some();
    vec![
        mail_status(state.mail.mailer.is_some(), mail),
        accessibility(state.features.axe()),
        tools(
            "runVideos",
            "Videos of browser runs",
            worker,
            capture_media::tools::RECORDING_TOOLS,
            "runs end failed (the video cannot be encoded)",
        ),
        tools("videoAds", "Video ads", worker, capture_media::tools::AD_TOOLS, "ad renders fail (no voice or no film)"),
        tools(
            "scrollVideos",
            "Scrolling videos (format mp4, webm, gif)",
            worker,
            capture_media::tools::RECORDING_TOOLS,
            "video captures fail, uncharged",
        ),
        blocklists(worker),
        scriptlets(worker, {
            static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
            *N.get_or_init(|| capture_browser::scriptlets::load(&capture_browser::scriptlets::resources_dir()).len())
        }),
        consent(worker),
        llm(&state.cfg.llm),
        tools(
            "pdfThumbnails",
            "Thumbnails of uploaded PDFs",
            state.cfg.roles.api,
            &["pdftoppm"],
            "uploaded PDFs are stored without a thumbnail",
        ),
    ]
}

/// Check the SMTP server now, and remember the answer for [`recent_mail_check`].
pub async fn live_mail_check(state: &AppState) -> String {
    let result = crate::campaigns::service::mail_check(state).await;
    if let Ok(mut c) = state.features.mail_checked.lock() {
        *c = Some((Instant::now(), result.clone()));
    }
    result
}

/// A mail check at most [`MAIL_CHECK_TTL`] old (the website's pages: no SMTP connection per view).
pub async fn recent_mail_check(state: &AppState) -> String {
    let cached = state.features.mail_checked.lock().ok().and_then(|c| c.clone());
    match cached {
        Some((at, r)) if at.elapsed() < MAIL_CHECK_TTL => r,
        _ => live_mail_check(state).await,
    }
}

/// The features that cannot work on this node, for the website's pages.
pub async fn unavailable(state: &AppState) -> Vec<FeatureStatus> {
    let mail = recent_mail_check(state).await;
    report(state, &mail).into_iter().filter(|f| f.status == Availability::Unavailable).collect()
}

fn mail_status(configured: bool, check: &str) -> FeatureStatus {
    let (status, detail, fix) = if !configured {
        (
            Availability::Unavailable,
            "No SMTP server is configured: campaign rows wait (smtp_not_configured) and nothing is mailed; new \
             website accounts are not asked to verify their e-mail address."
                .to_string(),
            Some("Set CAPTURE_SMTP_URL (smtp://host:port, smtps://user:pass@host); see docs/mail.md.".to_string()),
        )
    } else if check == "ok" {
        (Availability::Ok, "The SMTP server answers and accepts the service's sign-in.".to_string(), None)
    } else {
        (
            Availability::Unavailable,
            format!(
                "The SMTP server of CAPTURE_SMTP_URL does not answer or refuses the sign-in ({check}): campaign \
                 mails wait (smtp_transient) and are retried."
            ),
            Some("Check CAPTURE_SMTP_URL and that the server is reachable from this node.".to_string()),
        )
    };
    FeatureStatus { id: "mail", name: "E-mail (campaigns, verification)", status, detail, fix }
}

fn accessibility(axe: &AxeSource) -> FeatureStatus {
    let (status, detail, fix) = match axe.script() {
        Ok(_) => (Availability::Ok, axe.describe(), None),
        Err(why) => (
            Availability::Unavailable,
            format!(
                "{why}. Audits report accessibility as not checked, and campaign rows are skipped \
                 (quality_gate:report_has_scores)."
            ),
            Some("Fix or unset CAPTURE_AXE_PATH (unset, the axe-core built into the binary is used).".to_string()),
        ),
    };
    FeatureStatus { id: "auditAccessibility", name: "Accessibility scores of audits", status, detail, fix }
}

/// uBlock Origin's scriptlets, which `blockAds` runs for the lists' `##+js(...)` rules.
fn scriptlets(here: bool, found: usize) -> FeatureStatus {
    let (id, name) = ("adScriptlets", "Scriptlet rules of blockAds (uBlock Origin's scriptlets)");
    if !here {
        let detail = "This node has no worker role; the worker nodes' /readyz say.".into();
        return FeatureStatus { id, name, status: Availability::NotOnThisNode, detail, fix: None };
    }
    let dir = capture_browser::scriptlets::resources_dir();
    if found > 0 {
        let detail = format!("{found} scriptlets are read from {}.", dir.display());
        return FeatureStatus { id, name, status: Availability::Ok, detail, fix: None };
    }
    FeatureStatus {
        id,
        name,
        status: Availability::Unavailable,
        detail: format!(
            "No scriptlets in {}: blockAds still refuses requests and hides elements, but runs none of the \
             lists' ##+js(...) rules.",
            dir.display()
        ),
        fix: Some(
            "Install Debian's uBlock Origin package (scripts/setup.sh does: apt-get install \
             webext-ublock-origin-chromium), or set CAPTURE_SCRIPTLETS_DIR to its js/resources folder."
                .into(),
        ),
    }
}

/// `cookieConsent`: the engine and its rules are part of the binary, so nothing can be missing
/// but a rule set that does not parse (a broken build), which is reported, never a crash.
/// The language model of `extract.prompt` (`CAPTURE_LLM_*`): optional, off by default.
fn llm(cfg: &crate::config::LlmSettings) -> FeatureStatus {
    let (id, name) = ("llmExtraction", "Extraction by a language model (extract.prompt)");
    match &cfg.url {
        Some(url) => FeatureStatus {
            id,
            name,
            status: Availability::Ok,
            detail: format!("Model {} at {url}.", cfg.model),
            fix: None,
        },
        None => FeatureStatus {
            id,
            name,
            status: Availability::Unavailable,
            detail: "No language model is configured: a capture with extract.prompt is refused with \
                     FEATURE_UNAVAILABLE (extract.rules work)."
                .into(),
            fix: Some(
                "Set CAPTURE_LLM_URL to an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1 for Ollama, or vLLM) \
                 and CAPTURE_LLM_MODEL to its model; CAPTURE_LLM_API_KEY if it needs one."
                    .into(),
            ),
        },
    }
}

fn consent(here: bool) -> FeatureStatus {
    let (id, name) = ("cookieConsent", "Cookie-consent pop-ups (cookieConsent)");
    if !here {
        let detail = "This node has no worker role; the worker nodes' /readyz say.".into();
        return FeatureStatus { id, name, status: Availability::NotOnThisNode, detail, fix: None };
    }
    match capture_browser::consent::rule_count() {
        0 => FeatureStatus {
            id,
            name,
            status: Availability::Unavailable,
            detail: "The consent rules built into this binary did not load: captures cannot answer consent \
                     pop-ups."
                .into(),
            fix: Some("Rebuild from a clean checkout (crates/capture-browser/vendor/autoconsent).".into()),
        },
        n => FeatureStatus {
            id,
            name,
            status: Availability::Ok,
            detail: format!(
                "DuckDuckGo's autoconsent {} is built in: {n} rules, refusing by default.",
                capture_browser::consent::AUTOCONSENT_VERSION
            ),
            fix: None,
        },
    }
}

fn blocklists(here: bool) -> FeatureStatus {
    let (id, name) = ("blockLists", "Ad and tracker blocking (blockAds, blockTrackers)");
    if !here {
        let detail = "This node has no worker role; the worker nodes' /readyz say.".into();
        return FeatureStatus { id, name, status: Availability::NotOnThisNode, detail, fix: None };
    }
    let dir = capture_browser::blocklists::lists_dir();
    let missing = capture_browser::blocklists::missing_lists(&dir);
    if missing.is_empty() {
        let detail = format!("EasyList and EasyPrivacy are read from {}.", dir.display());
        return FeatureStatus { id, name, status: Availability::Ok, detail, fix: None };
    }
    let files: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
    FeatureStatus {
        id,
        name,
        status: Availability::Unavailable,
        detail: format!(
            "{} not found: captures with blockAds or blockTrackers fail, uncharged (blockChats and blockAnnoyances \
             work: their lists are built in).",
            files.join(" and ")
        ),
        fix: Some(
            "Install Debian's uBlock Origin package (scripts/setup.sh does: apt-get install \
             webext-ublock-origin-chromium), or set CAPTURE_BLOCKLISTS_DIR to a folder with easylist.txt and \
             easyprivacy.txt."
                .into(),
        ),
    }
}

fn tools(id: &'static str, name: &'static str, here: bool, needed: &[&'static str], meanwhile: &str) -> FeatureStatus {
    if !here {
        return FeatureStatus {
            id,
            name,
            status: Availability::NotOnThisNode,
            detail: "This node has no worker role; the worker nodes' /readyz say.".into(),
            fix: None,
        };
    }
    let missing = capture_media::tools::missing_tools(needed);
    if missing.is_empty() {
        let found = needed.join(", ");
        return FeatureStatus { id, name, status: Availability::Ok, detail: format!("{found} installed."), fix: None };
    }
    let list = missing.join(" and ");
    FeatureStatus {
        id,
        name,
        status: Availability::Unavailable,
        detail: format!("{list} not found on PATH: {meanwhile}."),
        fix: Some(format!("Install {list} (scripts/setup.sh does: apt-get install {}).", debian_packages(&missing))),
    }
}

/// The Debian packages that provide `tools`.
fn debian_packages(tools: &[&str]) -> String {
    let mut pkgs: Vec<&str> = tools
        .iter()
        .map(|t| match *t {
            "ffmpeg" | "ffprobe" => "ffmpeg",
            "pdftoppm" => "poppler-utils",
            other => other,
        })
        .collect();
    pkgs.dedup();
    pkgs.join(" ")
}

/// The `features` object of `/readyz` (by id) and the ids of those that cannot work.
pub fn readiness_json(list: &[FeatureStatus]) -> (serde_json::Value, Vec<&'static str>) {
    let mut map = serde_json::Map::new();
    for f in list {
        map.insert(f.id.to_string(), serde_json::to_value(f).unwrap_or_default());
    }
    let down = list.iter().filter(|f| f.status == Availability::Unavailable).map(|f| f.id).collect();
    (serde_json::Value::Object(map), down)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_names_its_package_and_what_happens_meanwhile() {
        let f = tools("videoAds", "Video ads", true, &["ffmpeg", "capture-no-such-voice"], "ad renders fail");
        assert_eq!(f.status, Availability::Unavailable);
        assert_eq!(f.detail, "capture-no-such-voice not found on PATH: ad renders fail.");
        assert!(f.fix.as_deref().unwrap().contains("apt-get install capture-no-such-voice"), "{f:?}");
        let here = tools("runVideos", "Videos", true, &["sh"], "x");
        assert_eq!((here.status, here.detail.as_str()), (Availability::Ok, "sh installed."));
        assert_eq!(tools("runVideos", "Videos", false, &["sh"], "x").status, Availability::NotOnThisNode);
        assert_eq!(debian_packages(&["ffmpeg", "ffprobe", "pdftoppm"]), "ffmpeg poppler-utils");
    }

    #[test]
    fn missing_scriptlets_say_what_blockads_still_does() {
        let s = scriptlets(true, 0);
        assert_eq!(s.status, Availability::Unavailable);
        assert!(s.detail.ends_with("runs none of the lists' ##+js(...) rules."), "{}", s.detail);
        assert!(s.fix.unwrap().contains("CAPTURE_SCRIPTLETS_DIR"));
        assert_eq!(scriptlets(true, 91).status, Availability::Ok);
    }

    #[test]
    fn the_consent_rules_are_built_in() {
        let c = consent(true);
        assert_eq!(
            (c.status, c.detail.as_str()),
            (Availability::Ok, "DuckDuckGo's autoconsent 16.23.0 is built in: 797 rules, refusing by default.")
        );
        assert_eq!(consent(false).status, Availability::NotOnThisNode);
    }

    #[test]
    fn mail_and_axe_say_what_stops_and_how_to_fix_it() {
        let none = mail_status(false, "not-configured");
        assert_eq!(none.status, Availability::Unavailable);
        assert!(none.detail.contains("smtp_not_configured") && none.fix.unwrap().contains("CAPTURE_SMTP_URL"));
        assert_eq!(mail_status(true, "ok").status, Availability::Ok);
        assert!(mail_status(true, "timeout").detail.contains("(timeout)"));
        let bundled = accessibility(&AxeSource::Bundled);
        assert_eq!(
            (bundled.status, bundled.detail.as_str()),
            (Availability::Ok, format!("axe-core {}, bundled", capture_audit::axe::AXE_VERSION).as_str())
        );
        let broken = accessibility(&AxeSource::Unavailable { reason: "gone".into() });
        assert!(broken.detail.starts_with("gone. ") && broken.detail.contains("report_has_scores"), "{broken:?}");
        let (json, down) = readiness_json(&[none_like(), bundled]);
        assert_eq!(down, ["mail"]);
        assert_eq!(json["auditAccessibility"]["status"], "ok");
        assert_eq!(json["mail"]["status"], "unavailable");
        assert!(json["auditAccessibility"].get("fix").is_none());
    }

    fn none_like() -> FeatureStatus {
        mail_status(false, "not-configured")
    }
}
