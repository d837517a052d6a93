//! `blockAds`, `blockTrackers`, `blockChats`: filter lists in EasyList syntax, matched by
//! Brave's adblock engine (the one in the Brave browser).
//!
//! - Ads: EasyList; trackers: EasyPrivacy. Both are read from Debian's uBlock Origin package
//!   (`webext-ublock-origin-chromium`, which `scripts/setup.sh` installs), or from
//!   `CAPTURE_BLOCKLISTS_DIR` (a folder with `easylist.txt` and `easyprivacy.txt`). They are
//!   GPL-3+ or CC-BY-SA-3.0+ (The EasyList authors): read where the system keeps them, never
//!   copied into this repository or its binary.
//! - Chats: no maintained chat-widget list ships with Debian, so `blocklists/chat-widgets.txt`
//!   is this project's own (the vendors' widget hosts and launcher elements), in the same
//!   syntax and through the same engine.
//!
//! The lists are parsed once per process, on the first job that asks (about a second of
//! CPU, off the async threads), and shared by every page.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use adblock::Engine;
use adblock::lists::{FilterSet, ParseOptions};
use adblock::request::Request;
use tokio::sync::OnceCell;

/// Where Debian's uBlock Origin package keeps EasyList and EasyPrivacy.
pub const DEBIAN_LISTS_DIR: &str = "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist";

/// Our chat-widget list (built in).
const CHAT_WIDGETS: &str = include_str!("../blocklists/chat-widgets.txt");
/// Our annoyances list (built in): pop-ups, app banners, notification prompts, floating video
/// players, back-to-top buttons.
const ANNOYANCES: &str = include_str!("../blocklists/annoyances.txt");

/// A folder set by [`use_dir`], before the lists were first read.
static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Read the lists from `dir` in this process (as `CAPTURE_BLOCKLISTS_DIR` does), if they were
/// not read yet and no folder was set before; whether it was taken.
pub fn use_dir(dir: PathBuf) -> bool {
    DIR.set(dir).is_ok()
}

/// The folder the lists are read from: [`use_dir`]'s, `CAPTURE_BLOCKLISTS_DIR`, else Debian's.
pub fn lists_dir() -> PathBuf {
    if let Some(d) = DIR.get() {
        return d.clone();
    }
    std::env::var_os("CAPTURE_BLOCKLISTS_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from(DEBIAN_LISTS_DIR), PathBuf::from)
}

/// uBlock Origin's own lists beside EasyList in Debian's package (`assets/ublock`): its filters
/// hold the scriptlet rules (`##+js(...)`) that EasyList leaves to it. With
/// `CAPTURE_BLOCKLISTS_DIR`, the same files are looked for in that folder.
fn ublock_lists(dir: &Path) -> Vec<PathBuf> {
    let names = ["filters.min.txt", "quick-fixes.min.txt", "unbreak.min.txt"];
    let beside = dir.parent().and_then(Path::parent).map(|a| a.join("ublock"));
    names
        .iter()
        .flat_map(|n| [Some(dir.join(n)), beside.as_ref().map(|b| b.join(n))])
        .flatten()
        .filter(|p| p.is_file())
        .collect()
}

/// The list files of `dir` that are missing (none on a default install).
pub fn missing_lists(dir: &Path) -> Vec<PathBuf> {
    ["easylist.txt", "easyprivacy.txt"].iter().map(|f| dir.join(f)).filter(|p| !p.is_file()).collect()
}

/// Which lists a job uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Which {
    pub ads: bool,
    pub trackers: bool,
    pub chats: bool,
    /// `blockAnnoyances` (its own list, and the chat list's launchers).
    pub annoyances: bool,
}

impl Which {
    pub fn of(o: &capture_core::options::CaptureOptions) -> Which {
        Which {
            ads: o.block_ads,
            trackers: o.block_trackers,
            chats: o.block_chats || o.block_annoyances,
            annoyances: o.block_annoyances,
        }
    }

    pub fn any(self) -> bool {
        self.ads || self.trackers || self.chats || self.annoyances
    }
}

/// The parsed lists.
pub struct Blocklists {
    ads: Option<Engine>,
    trackers: Option<Engine>,
    chats: Engine,
    annoyances: Engine,
    /// uBlock Origin scriptlets the ads engine can run (0: Debian's `js/resources` missing).
    pub scriptlets: usize,
    /// Why ads or trackers have no engine (the list file is missing or unreadable).
    missing: Vec<String>,
    /// Rules (lines that are neither blank nor comments) of each list: ads, trackers, chats,
    /// annoyances.
    pub rules: [usize; 4],
}

impl std::fmt::Debug for Blocklists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocklists").field("rules", &self.rules).field("missing", &self.missing).finish()
    }
}

/// A request the lists refuse: which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ads,
    Trackers,
    Chats,
    Annoyances,
}

fn rule_count(text: &str) -> usize {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('!') && !l.starts_with('[')).count()
}

fn engine(text: &str) -> Engine {
    let mut set = FilterSet::new(false);
    set.add_filter_list(text.to_owned(), ParseOptions::default());
    Engine::new_with_filter_set(set)
}

/// EasyList with uBlock Origin's own filters, and the scriptlets their `+js()` rules run.
fn ads_engine(easylist: &str, ublock: &[String], resources: Vec<adblock::resources::Resource>) -> Engine {
    let mut set = FilterSet::new(false);
    set.add_filter_list(easylist.to_owned(), ParseOptions::default());
    for l in ublock {
        set.add_filter_list(l.clone(), ParseOptions::default());
    }
    let mut e = Engine::new_with_filter_set(set);
    e.use_resources(resources);
    e
}

impl Blocklists {
    /// Parse the lists in `dir` (and the built-in chat list).
    pub fn load(dir: &Path) -> Blocklists {
        let mut missing = Vec::new();
        let mut read = |name: &str| match std::fs::read_to_string(dir.join(name)) {
            Ok(t) => Some(t),
            Err(e) => {
                missing.push(format!("{} ({e})", dir.join(name).display()));
                None
            }
        };
        let ads_text = read("easylist.txt");
        let trackers_text = read("easyprivacy.txt");
        let ublock: Vec<String> = ublock_lists(dir).iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
        let scriptlets = crate::scriptlets::load(&crate::scriptlets::resources_dir());
        let scriptlet_count = scriptlets.len();
        let rules = [
            ads_text.as_deref().map_or(0, rule_count) + ublock.iter().map(|l| rule_count(l)).sum::<usize>(),
            trackers_text.as_deref().map_or(0, rule_count),
            rule_count(CHAT_WIDGETS),
            rule_count(ANNOYANCES),
        ];
        Blocklists {
            ads: ads_text.as_deref().map(|t| ads_engine(t, &ublock, scriptlets)),
            scriptlets: scriptlet_count,
            trackers: trackers_text.as_deref().map(engine),
            chats: engine(CHAT_WIDGETS),
            annoyances: engine(ANNOYANCES),
            missing,
            rules,
        }
    }

    /// The lists of this process, parsed on first use.
    pub async fn shared() -> Arc<Blocklists> {
        static LISTS: OnceCell<Arc<Blocklists>> = OnceCell::const_new();
        LISTS
            .get_or_init(|| async {
                let dir = lists_dir();
                let t0 = std::time::Instant::now();
                let lists = tokio::task::spawn_blocking(move || Blocklists::load(&dir))
                    .await
                    .unwrap_or_else(|_| Blocklists::load(Path::new("/nonexistent")));
                tracing::info!(rules = ?lists.rules, missing = ?lists.missing, ms = t0.elapsed().as_millis() as u64,
                    "filter lists loaded");
                Arc::new(lists)
            })
            .await
            .clone()
    }

    /// Why a job asking for `which` cannot have it: a list it needs is not installed.
    pub fn unavailable(&self, which: Which) -> Option<String> {
        let lacks = (which.ads && self.ads.is_none()) || (which.trackers && self.trackers.is_none());
        lacks.then(|| {
            format!(
                "the filter lists blockAds/blockTrackers need are not installed: {} \
                 (apt-get install webext-ublock-origin-chromium, or set CAPTURE_BLOCKLISTS_DIR)",
                self.missing.join(", ")
            )
        })
    }

    fn engines(&self, which: Which) -> impl Iterator<Item = (Verdict, &Engine)> {
        [
            (which.ads, Verdict::Ads, self.ads.as_ref()),
            (which.trackers, Verdict::Trackers, self.trackers.as_ref()),
            (which.chats, Verdict::Chats, Some(&self.chats)),
            (which.annoyances, Verdict::Annoyances, Some(&self.annoyances)),
        ]
        .into_iter()
        .filter_map(|(on, v, e)| if on { e.map(|e| (v, e)) } else { None })
    }

    /// Whether a request of `kind` (the DevTools resource type) to `url`, made by a page at
    /// `source`, is refused by one of the lists `which` names.
    pub fn check(&self, which: Which, url: &str, source: &str, kind: &str, subframe: bool) -> Option<Verdict> {
        let kind = match kind {
            "Document" if subframe => "sub_frame",
            "Document" => return None,
            "Stylesheet" => "stylesheet",
            "Image" => "image",
            "Media" => "media",
            "Font" => "font",
            "Script" => "script",
            "XHR" | "Fetch" | "EventSource" => "xhr",
            "Ping" => "ping",
            "CSPViolationReport" => "csp_report",
            "WebSocket" => "websocket",
            _ => "other",
        };
        let req = Request::new(url, source, kind, "get").ok()?;
        self.engines(which).find(|(_, e)| e.check_network_request(&req).should_block()).map(|(v, _)| v)
    }

    /// The scriptlets (`##+js(...)` rules) the lists `which` run on a page at `url`, as a script
    /// to add before the page's own (None when there are none).
    pub fn scriptlets_for(&self, which: Which, url: &str) -> Option<String> {
        let injected: String = self
            .engines(which)
            .map(|(_, e)| e.url_cosmetic_resources(url).injected_script)
            .collect::<Vec<_>>()
            .join("\n");
        crate::scriptlets::wrap(&injected)
    }

    /// The element rules for a page at `url` with these classes and ids: its own (per-site)
    /// rules, the generic ones that do not name a class or id, and the generic ones naming a
    /// class or id the page has.
    pub fn hide_selectors(&self, which: Which, url: &str, classes: &[String], ids: &[String]) -> Vec<String> {
        self.element_rules(which, url, classes, ids).0
    }

    /// The page's element rules as [`Self::hide_selectors`] gives them, and beside them its
    /// procedural and action rules (`:has-text()`, `:upward()`, `:matches-css()`, `:xpath()`,
    /// `:remove()`, `:style()`…): adblock's JSON for the action rules it parses, and the
    /// selectors it keeps whole (written in uBO's syntax) as they are. One look per list.
    pub fn element_rules(
        &self,
        which: Which,
        url: &str,
        classes: &[String],
        ids: &[String],
    ) -> (Vec<String>, Vec<String>) {
        let mut hide: HashSet<String> = HashSet::new();
        let mut procedural: Vec<String> = Vec::new();
        for (_, e) in self.engines(which) {
            let r = e.url_cosmetic_resources(url);
            if !r.generichide {
                hide.extend(e.hidden_class_id_selectors(classes, ids, &r.exceptions));
            }
            procedural.extend(r.procedural_actions);
            procedural.extend(r.hide_selectors.iter().filter(|s| is_procedural(s)).cloned());
            hide.extend(r.hide_selectors);
        }
        let mut hide: Vec<String> = hide.into_iter().filter(|s| !is_procedural(s)).collect();
        hide.sort();
        procedural.sort();
        procedural.dedup();
        (hide, procedural)
    }
}

/// uBO's procedural operators, which are not CSS (`:has()` and `:not()` are, in Chromium).
const PROCEDURAL: [&str; 13] = [
    ":has-text(",
    ":upward(",
    ":matches-css(",
    ":matches-css-before(",
    ":matches-css-after(",
    ":min-text-length(",
    ":matches-attr(",
    ":matches-path(",
    ":xpath(",
    ":remove()",
    ":style(",
    ":remove-attr(",
    ":remove-class(",
];

/// A selector written with procedural operators.
pub fn is_procedural(selector: &str) -> bool {
    PROCEDURAL.iter().any(|op| selector.contains(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Which = Which { ads: true, trackers: true, chats: true, annoyances: true };
    const CHATS: Which = Which { ads: false, trackers: false, chats: true, annoyances: false };
    const ANNOY: Which = Which { ads: false, trackers: false, chats: true, annoyances: true };

    #[test]
    fn procedural_selectors_are_told_from_css() {
        assert!(is_procedural("div.card:has-text(Sponsored)"));
        assert!(is_procedural(".promo:upward(2)"));
        assert!(is_procedural(".teaser:remove()"));
        // Chromium's own :has() and :not() are CSS.
        assert!(!is_procedural("div:has(> img.ad)"));
        assert!(!is_procedural(".ad:not(.keep)"));
    }

    #[test]
    fn the_annoyances_list_refuses_pop_up_tools_and_hides_what_they_leave() {
        let l = Blocklists::load(Path::new("/nonexistent"));
        assert_eq!(l.rules[3], 74, "annoyance rules");
        let page = "https://news.example/article";
        for url in [
            "https://static.klaviyo.com/onsite/js/klaviyo.js?company_id=AbC123",
            "https://a.omappapi.com/app/js/api.min.js",
            "https://widget.privy.com/assets/widget.js",
        ] {
            assert_eq!(l.check(ANNOY, url, page, "Script", false), Some(Verdict::Annoyances), "{url}");
        }
        assert_eq!(l.check(ANNOY, "https://news.example/app.js", page, "Script", false), None);
        let hidden = l.hide_selectors(ANNOY, page, &["smartbanner".into()], &["onesignal-slidedown-container".into()]);
        for want in [".smartbanner", "#onesignal-slidedown-container", r#"div[role="dialog"][aria-label="POPUP Form"]"#]
        {
            assert!(hidden.contains(&want.to_string()), "{want}: {hidden:?}");
        }
        // Chat launchers come with it.
        let hidden = l.hide_selectors(ANNOY, page, &[], &["intercom-container".into()]);
        assert!(hidden.contains(&"#intercom-container".to_string()), "{hidden:?}");
    }

    #[test]
    fn the_chat_list_refuses_widget_hosts_and_hides_launchers() {
        let l = Blocklists::load(Path::new("/nonexistent"));
        assert!(l.rules[2] >= 100, "chat rules: {}", l.rules[2]);
        let page = "https://shop.example/";
        for url in [
            "https://widget.intercom.io/widget/abc123",
            "https://js.driftt.com/include/1700000000000/abc.js",
            "https://static.zdassets.com/ekr/snippet.js?key=abc",
            "https://client.crisp.chat/l.js",
            "https://embed.tawk.to/5f0000000000000000000000/default",
            "https://cdn.livechatinc.com/tracking.js",
        ] {
            assert_eq!(l.check(CHATS, url, page, "Script", false), Some(Verdict::Chats), "{url}");
        }
        assert_eq!(l.check(CHATS, "https://shop.example/app.js", page, "Script", false), None);
        // The page itself always loads.
        assert_eq!(l.check(CHATS, "https://widget.intercom.io/", page, "Document", false), None);
        let hidden = l.hide_selectors(CHATS, page, &[], &["intercom-container".into()]);
        assert!(hidden.contains(&"#intercom-container".to_string()), "{hidden:?}");
        // Ads and trackers without their lists are reported, never silently skipped.
        let why = l.unavailable(ALL).expect("lists are missing");
        assert!(why.contains("/nonexistent/easylist.txt"), "{why}");
        assert_eq!(l.unavailable(CHATS), None);
    }
}
