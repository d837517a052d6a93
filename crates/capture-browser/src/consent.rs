//! `cookieConsent`: DuckDuckGo's autoconsent (vendored, `vendor/autoconsent`, MPL-2.0) run in
//! every frame of a page before its own scripts, with the request's answer (opt out, opt in,
//! or neither and keep the pop-up hidden), then read back as the job's `metadata.consent`.
//!
//! How it is wired (autoconsent's documented Puppeteer/Playwright integration, with the host
//! side in the page so no DevTools round trip is needed per message):
//! - [`arm_script`] is added with `Page.addScriptToEvaluateOnNewDocument` before navigation, so
//!   it runs at document start in the main frame and in every iframe (the browser runs frames
//!   in their page's process: site isolation is off for captures, see `launch.rs`). It defines
//!   `window.autoconsentSendMessage`, answers the engine's `init` with the configuration and the
//!   compact rules any document may run (the sites' own come from [`site_script`], a script the
//!   job adds for the URL it asks for), records the engine's reports, then runs the engine
//!   (`autoconsent.playwright.js`) itself, in the main world (`isMainWorld`, so the rules' eval
//!   snippets run inline).
//! - An iframe posts its record to the top frame; the top frame keeps them all and answers
//!   `window.__captureConsent()` with a summary and whether anything on the page still looks like
//!   a pop-up (a visible fixed or sticky element with a consent-ish name, or covering much of the
//!   view), and whether the page is *settled*: a look by the engine's rules — the engine's own,
//!   or one the summary runs itself when the page changed since (`probe`) — started after the
//!   page's last change and found no platform. The engine only looks again 500 ms later; the
//!   probe makes a page without a pop-up cost one round trip (issue 39: it cost ~100 ms).
//! - After navigation, [`decide`] reads that summary until the outcome is known, within the
//!   2 s budget: answered (`rejected`/`accepted`), hidden (a cosmetic rule, or `hide`), nothing
//!   found, or failed. With `auto`, a pop-up no rule could refuse — and a consent-looking banner
//!   no rule knows — is hidden by [`HIDE_FALLBACK`] (`hidden`), and the page's scroll lock lifted.

use std::sync::OnceLock;

use capture_core::metadata::{ConsentAction, ConsentReport};
use capture_core::options::CookieConsent;
use serde::Deserialize;

/// The autoconsent release built in.
pub const AUTOCONSENT_VERSION: &str = "16.23.0";
/// The engine, as the npm package ships it; [`engine`] adds three lines (see there).
const ENGINE: &str = include_str!("../vendor/autoconsent/autoconsent.playwright.js");

/// Where the engine's source is met by the lines we add, and what each becomes: a look's start
/// time is noted, its end reported (`captureLooked`: how many platforms it found, when it
/// started), and the top frame's engine handed to the glue, which asks its rules itself when the
/// page changed after the engine's last look ([`GLUE`]'s `probe`).
const ENGINE_HOOKS: [(&str, &str); 3] = [
    (
        "      this.updateState({ findCmpAttempts: this.state.findCmpAttempts + 1 });\n",
        "      const captureStarted = performance.now();\n      this.updateState({ findCmpAttempts: this.state.findCmpAttempts + 1 });\n",
    ),
    (
        "      this.detectHeuristics();\n      if (foundCMPs.length === 0 && retries > 0) {\n",
        "      this.detectHeuristics();\n      this.sendContentMessage({ type: \"captureLooked\", found: foundCMPs.length, started: captureStarted });\n      if (foundCMPs.length === 0 && retries > 0) {\n",
    ),
    (
        "    const consent = new AutoConsent(window.autoconsentSendMessage, null, { autoconsent: [] });\n",
        "    const consent = new AutoConsent(window.autoconsentSendMessage, null, { autoconsent: [] });\n    try { window.__captureConsentEngine && window.__captureConsentEngine(consent); } catch (e) {}\n",
    ),
];

/// The engine with [`ENGINE_HOOKS`] in place (each anchor is met exactly once: a test holds it
/// to that, so a new release that moved one fails the build's tests, not a capture).
fn engine() -> String {
    ENGINE_HOOKS.iter().fold(ENGINE.to_owned(), |src, (anchor, with)| src.replacen(anchor, with, 1))
}
/// Every rule, in the compact encoding, unmodified from the npm package. The compact encoding
/// leaves out the opt-in steps: opting out and hiding need nothing else.
const RULES: &str = include_str!("../vendor/autoconsent/compact-rules.json");
/// Every rule in full (`{autoconsent: [...]}`, with the opt-in steps), unmodified from the npm
/// package: for `accept`.
const FULL_RULES: &str = include_str!("../vendor/autoconsent/rules.json");

/// How many consent rules are built in (the compact set's).
pub fn rule_count() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        serde_json::from_str::<serde_json::Value>(RULES)
            .ok()
            .and_then(|v| v.get("r").and_then(|r| r.as_array()).map(Vec::len))
            .unwrap_or(0)
    })
}

/// The engine's action for a mode (`None`: leave it).
fn auto_action(mode: CookieConsent) -> Option<&'static str> {
    match mode {
        CookieConsent::Auto | CookieConsent::Reject => Some("optOut"),
        CookieConsent::Accept => Some("optIn"),
        CookieConsent::Hide => Some("none"),
        CookieConsent::None => None,
    }
}

/// The script added to every new document for `mode` (None for `none`), made once per mode.
pub(crate) fn arm_script(mode: CookieConsent) -> Option<&'static str> {
    static SCRIPTS: [OnceLock<String>; 4] = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (slot, action) = match auto_action(mode)? {
        "optOut" if mode == CookieConsent::Auto => (0, "optOut"),
        "optOut" => (1, "optOut"),
        "optIn" => (2, "optIn"),
        _ => (3, "none"),
    };
    Some(SCRIPTS[slot].get_or_init(|| build(action)).as_str())
}

fn build(action: &str) -> String {
    // `none` (hide): the engine waits for a signal that never comes, so its pre-hiding of the
    // platform's elements stays (prehideTimeout far past any capture) — hidden, unanswered.
    let (auto, heuristic, prehide) = match action {
        "optOut" => ("'optOut'", "'reject'", 2000),
        "optIn" => ("'optIn'", "'tier2'", 2000),
        _ => ("null", "'off'", 3_600_000),
    };
    // As JSON strings the page parses: V8 reads a string literal and `JSON.parse` far faster
    // than the same data as an object literal. The sites' own rules are not in it (but for
    // `accept`, whose full rules carry them): a job's page is given those its URL matches
    // ([`site_script`]).
    let parse = |json: &str| format!("JSON.parse({})", serde_json::to_string(json).unwrap_or_default());
    let (rules, needles) = match action {
        "optIn" => {
            let full: serde_json::Value = serde_json::from_str(FULL_RULES).unwrap_or_default();
            let patterns = full["autoconsent"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["runContext"]["urlPattern"].as_str())
                .map(str::to_owned)
                .collect::<Vec<_>>();
            (parse(FULL_RULES.trim()), needles_json(&patterns))
        }
        _ => {
            let split = split_rules();
            let patterns = split.everywhere_patterns();
            (parse(&format!("{{ \"autoconsent\": [], \"compact\": {} }}", split.everywhere)), needles_json(&patterns))
        }
    };
    let glue = GLUE
        .replace("__AUTO_ACTION__", auto)
        .replace("__HEURISTIC__", heuristic)
        .replace("__PREHIDE_MS__", &prehide.to_string())
        .replace("__HIDE_FALLBACK__", HIDE_FALLBACK)
        .replace("__NEEDLES__", &needles)
        .replace("__RULES__", &rules);
    format!("{glue}\n;try {{\n{}\n}} catch (e) {{}}\n", engine())
}

/// The compact rules cut where autoconsent's own index cuts them (its browser extension gives
/// a frame, or a page of no known site, only the first part): the rules any document may run
/// (the generic ones and those for frames, with the strings they use), and the sites' own
/// top-level rules (571 of 797, three quarters of the bytes, with the strings only they use),
/// which no document carries: a job's page gets those its URL matches, in full ([`site_script`]).
struct SplitRules {
    /// `{v, s, r}`: the rules up to the end of the frames' range and the strings they use.
    everywhere: String,
    /// The rest of the rules, compact (their strings' indices run on past `everywhere`'s).
    sites: Vec<serde_json::Value>,
    /// The rest of the strings.
    #[cfg_attr(not(test), allow(dead_code))]
    site_strings: Vec<serde_json::Value>,
}

impl SplitRules {
    /// The `urlPattern`s of the rules any document may run (a few generic rules and frames'
    /// rules have one).
    fn everywhere_patterns(&self) -> Vec<String> {
        let first: serde_json::Value = serde_json::from_str(&self.everywhere).unwrap_or_default();
        first["r"].as_array().into_iter().flatten().filter_map(|r| r[3].as_str()).map(str::to_owned).collect()
    }
}

fn split_rules() -> SplitRules {
    use serde_json::{Value, json};
    let all: Value = serde_json::from_str(RULES).unwrap_or_default();
    let (s, r) = (all["s"].as_array().cloned().unwrap_or_default(), all["r"].as_array().cloned().unwrap_or_default());
    let index = &all["index"];
    let rules_end = index["frameRuleRange"][1].as_u64().map_or(r.len(), |n| n as usize).min(r.len());
    let strings_end = index["frameStringEnd"].as_u64().map_or(s.len(), |n| n as usize).min(s.len());
    SplitRules {
        everywhere: json!({"v": all["v"], "s": &s[..strings_end], "r": &r[..rules_end]}).to_string(),
        sites: r[rules_end..].to_vec(),
        site_strings: s[strings_end..].to_vec(),
    }
}

/// A site's own top-level rule, in full (as `rules.json` has it), with its `urlPattern`
/// compiled and its [`needles`]: a URL holding none of them is not matched against the
/// pattern (matching all 571 patterns, four forms of the URL each, cost a job ~1 ms).
struct SiteRule {
    pattern: regex::Regex,
    needles: Option<Vec<String>>,
    rule: serde_json::Value,
}

impl SiteRule {
    fn matches(&self, url: &str) -> bool {
        self.needles.as_ref().is_none_or(|n| n.iter().any(|t| url.contains(t.as_str()))) && self.pattern.is_match(url)
    }
}

/// Every site's own top-level rule (the second part of [`split_rules`]), made once.
fn site_rules() -> &'static [SiteRule] {
    static SITES: OnceLock<Vec<SiteRule>> = OnceLock::new();
    SITES.get_or_init(|| {
        let full: serde_json::Value = serde_json::from_str(FULL_RULES).unwrap_or_default();
        let by_name: std::collections::HashMap<&str, &serde_json::Value> = full["autoconsent"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r["name"].as_str()?, r)))
            .collect();
        split_rules()
            .sites
            .iter()
            .filter_map(|r| {
                let rule = *by_name.get(r[1].as_str()?)?;
                let source = rule["runContext"]["urlPattern"].as_str()?;
                let pattern = regex::Regex::new(source).ok()?;
                Some(SiteRule { pattern, needles: needles(source), rule: rule.clone() })
            })
            .collect()
    })
}

/// The sites' own rules for a page at `url`: those whose pattern matches it, or matches it with
/// the other scheme or with `www.` added or taken away (where a site's own redirect would take
/// the browser; the page keeps only those matching where it landed).
fn site_rules_for(url: &str) -> Vec<&'static serde_json::Value> {
    let Ok(u) = url::Url::parse(url) else { return Vec::new() };
    let mut urls = vec![u.to_string()];
    let mut other = u.clone();
    if other.set_scheme(if u.scheme() == "https" { "http" } else { "https" }).is_ok() {
        urls.push(other.to_string());
    }
    if let Some(host) = u.host_str() {
        let flipped = match host.strip_prefix("www.") {
            Some(bare) => bare.to_owned(),
            None => format!("www.{host}"),
        };
        for base in urls.clone() {
            if let Ok(mut v) = url::Url::parse(&base)
                && v.set_host(Some(&flipped)).is_ok()
            {
                urls.push(v.to_string());
            }
        }
    }
    site_rules().iter().filter(|r| urls.iter().any(|x| r.matches(x))).map(|r| &r.rule).collect()
}

/// The script a job's page gets beside [`arm_script`] when sites' own rules match its URL
/// (None when none does, and for `accept` and `none`): it hands them to the consent script,
/// whose top documents keep those whose pattern their own URL matches.
pub fn site_script(mode: CookieConsent, url: &str) -> Option<String> {
    if !matches!(mode, CookieConsent::Auto | CookieConsent::Reject | CookieConsent::Hide) {
        return None;
    }
    hand_over("__captureConsentSite", &site_rules_for(url))
}

/// A script handing `rules` (none: no script) to the consent script's hook `hook`, as a JSON
/// string the page parses; its value is the hook's (0 where the consent script is not).
fn hand_over(hook: &str, rules: &[&serde_json::Value]) -> Option<String> {
    if rules.is_empty() {
        return None;
    }
    let json = serde_json::to_string(rules).ok()?;
    let json = serde_json::to_string(&json).ok()?;
    Some(format!("(typeof window.{hook} === 'function' ? window.{hook}(JSON.parse({json})) : 0)"))
}

/// For each of `patterns`, the texts one of which every URL it matches holds (see
/// [`needles`]), as a JSON object from pattern to texts; patterns with none are left out (the
/// page matches them as they are).
fn needles_json(patterns: &[String]) -> String {
    let mut out = serde_json::Map::new();
    for pattern in patterns {
        if pattern.is_empty() || out.contains_key(pattern) {
            continue;
        }
        if let Some(n) = needles(pattern) {
            out.insert(pattern.clone(), n.into());
        }
    }
    serde_json::Value::Object(out).to_string()
}

/// The shortest text a needle may be: shorter ones would not narrow anything down.
const NEEDLE_MIN: usize = 4;

/// Texts one of which every string the JavaScript regular expression `pattern` matches
/// contains: for each top-level alternative, its longest run of plain characters outside
/// groups and classes (a character made optional by `?`, `*` or `{` left out). None when an
/// alternative has no such run of [`NEEDLE_MIN`] characters, or the pattern is not one this
/// reads with confidence.
fn needles(pattern: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut needles = Vec::new();
    let (mut best, mut run) = (String::new(), String::new());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '|' => {
                end_run(&mut run, &mut best);
                if best.chars().count() < NEEDLE_MIN {
                    return None;
                }
                needles.push(std::mem::take(&mut best));
                i += 1;
                continue;
            }
            '(' | '[' => {
                // Skip the group or class whole (nested groups, escapes, classes inside).
                end_run(&mut run, &mut best);
                let (mut depth, mut in_class, mut closed) = (0u32, false, false);
                while i < chars.len() && !closed {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' if !in_class => in_class = true,
                        ']' if in_class => {
                            in_class = false;
                            closed = depth == 0;
                        }
                        '(' if !in_class => depth += 1,
                        ')' if !in_class => {
                            depth = depth.saturating_sub(1);
                            closed = depth == 0;
                        }
                        _ => {}
                    }
                    i += 1;
                }
                if !closed {
                    return None;
                }
                // Its quantifier, if any, goes with it.
                if matches!(chars.get(i), Some('?' | '*' | '+')) {
                    i += 1;
                } else if chars.get(i) == Some(&'{') {
                    return None;
                }
                continue;
            }
            ')' | ']' | '{' | '}' => return None,
            '\\' => {
                let &e = chars.get(i + 1)?;
                i += 2;
                if e.is_ascii_alphanumeric() {
                    // \d, \w, \b, \s, \u…: not one plain character.
                    end_run(&mut run, &mut best);
                    continue;
                }
                push_literal(e, &chars, &mut i, &mut run, &mut best);
                continue;
            }
            '^' | '$' | '.' => {
                end_run(&mut run, &mut best);
                i += 1;
                if matches!(chars.get(i), Some('?' | '*' | '+' | '{')) {
                    return None;
                }
                continue;
            }
            '?' | '*' | '+' => return None,
            _ => {
                i += 1;
                push_literal(c, &chars, &mut i, &mut run, &mut best);
                continue;
            }
        }
    }
    end_run(&mut run, &mut best);
    if best.chars().count() < NEEDLE_MIN {
        return None;
    }
    needles.push(best);
    Some(needles)
}

/// End the current run of plain characters, keeping it if it is the longest so far.
fn end_run(run: &mut String, best: &mut String) {
    if run.chars().count() > best.chars().count() {
        *best = run.clone();
    }
    run.clear();
}

/// Add plain character `c` (read just before `chars[*i]`) to the run, as its quantifier
/// allows: `?`, `*` or `{` make it optional (the run ends before it), `+` repeats it (the run
/// ends after it).
fn push_literal(c: char, chars: &[char], i: &mut usize, run: &mut String, best: &mut String) {
    match chars.get(*i) {
        Some('?' | '*') => {
            end_run(run, best);
            *i += 1;
        }
        Some('{') => {
            end_run(run, best);
            // Skip the count; the character may be repeated or left out.
            while *i < chars.len() && chars[*i] != '}' {
                *i += 1;
            }
            *i += 1;
        }
        Some('+') => {
            run.push(c);
            end_run(run, best);
            *i += 1;
        }
        _ => run.push(c),
    }
}

/// The host side of the engine, in the page (see the module docs).
const GLUE: &str = r#"(() => {
  if (window.__captureConsentArmed) return;
  Object.defineProperty(window, '__captureConsentArmed', { value: true });
  const config = {
    enabled: true, autoAction: __AUTO_ACTION__, disabledCmps: [], enablePrehide: true,
    // `enableHeuristicDetection` only records which consent-ish phrases the page's text holds
    // (for the extension's reports), reading the whole page's `innerText` after every look in
    // every frame; nothing here reads it. The heuristic rule (`heuristicMode`) works without it.
    enableCosmeticRules: true, enableGeneratedRules: true, enableHeuristicDetection: false,
    heuristicMode: __HEURISTIC__, enablePopupMutationObserver: false, detectRetries: 8,
    isMainWorld: true, prehideTimeout: __PREHIDE_MS__, visualTest: false,
    logs: { lifecycle: false, rulesteps: false, detectionsteps: false, evals: false, errors: false, messages: false, waits: false },
  };
  // Every rule a document may run.
  const all = __RULES__;
  let rules = all;
  const isTop = window.top === window;
  // The sites' own top-level rules for the page the job asked for, in full: matched to its URL
  // outside the page and handed over by a script of the job's own, which runs right after this
  // one (see `site_script`).
  let siteRules = [];
  if (isTop) Object.defineProperty(window, '__captureConsentSite', { value: (rs) => { if (Array.isArray(rs)) siteRules = rs; } });
  // A rule with a `urlPattern` in its run context only ever runs on the pages its pattern
  // matches: the others are left out before the engine builds its rules, as the engine's own
  // extension does per tab (the engine's set-up on every document was most of the consent
  // step's cost, issue 39).
  // A text every URL a pattern matches holds (`needles`, made from the patterns in Rust): only
  // a URL that holds one is matched against the pattern (compiling ~600 patterns cost more
  // than it saved).
  const needles = __NEEDLES__;
  const rulesFor = (href, top, given = siteRules) => {
    const matches = (p) => { try { return !!href.match(p); } catch (e) { return false; } };
    const possible = (p) => { const n = needles[p]; return !Array.isArray(n) || n.some((t) => href.includes(t)); };
    const fits = (p) => possible(p) && matches(p);
    const out = { autoconsent: all.autoconsent, compact: all.compact };
    try {
      if (all.compact && Array.isArray(all.compact.r)) {
        out.compact = { v: all.compact.v, s: all.compact.s, r: all.compact.r.filter((x) => !x[3] || fits(x[3])) };
      }
      const pattern = (x) => x && x.runContext && x.runContext.urlPattern;
      if (Array.isArray(all.autoconsent)) out.autoconsent = all.autoconsent.filter((x) => !pattern(x) || fits(pattern(x)));
      // A site's own rules run in its top document only.
      if (top) out.autoconsent = out.autoconsent.concat(given.filter((x) => !!pattern(x) && fits(pattern(x))));
    } catch (e) {}
    return out;
  };
  const keepRulesForThisPage = () => { rules = rulesFor(String(location.href), isTop); };
  // The rules a top document at `href` is given, by name, for the tests.
  if (isTop) Object.defineProperty(window, '__captureConsentRulesFor', {
    value: (href) => { const k = rulesFor(String(href), true); return (k.compact ? k.compact.r.map((x) => x[1]) : []).concat(k.autoconsent.map((x) => x.name)); },
  });
  const me = { cmp: null, lifecycle: 'loading', attempts: 0, popup: false, result: null, done: false, cosmetic: false };
  const copy = (f) => ({ cmp: typeof f.cmp === 'string' ? f.cmp.slice(0, 128) : null,
    lifecycle: String(f.lifecycle || ''), attempts: Number(f.attempts) || 0, popup: !!f.popup,
    result: f.result === 'rejected' || f.result === 'accepted' || f.result === 'failed' ? f.result : null,
    done: !!f.done, cosmetic: !!f.cosmetic });
  const publish = () => {
    if (!isTop) { try { window.top.postMessage({ __captureConsent: copy(me) }, '*'); } catch (e) {} }
  };
  // When the page last changed (nodes added or removed, a class or `hidden` toggled) and when
  // the engine last started looking: an engine that looked after the last change and found
  // nothing has seen everything there is to find.
  let changedAt = performance.now(), lookedAt = -1;
  // The engine of this document (handed over by a line added to its source, see
  // `ENGINE_HOOKS`): the top frame asks its rules itself whether the page as it now is holds a
  // platform, instead of waiting for the engine's next look (500 ms apart).
  let engine = null;
  const hideFallback = () => __HIDE_FALLBACK__;
  Object.defineProperty(window, '__captureConsentEngine', { value: (e) => { if (!engine) engine = e; } });
  // The sites' own rules for where a redirect took the top document (matched outside, once it
  // loaded: see `late_site_script`): those its URL matches and the engine lacks are given to it
  // now, and it looks again — at its next look if it is still looking (a change of the page lets
  // it: it waits for one after its second look), else from the start. How many were given.
  if (isTop) Object.defineProperty(window, '__captureConsentAddSite', {
    value: (rs) => {
      if (!Array.isArray(rs) || !engine || !Array.isArray(engine.rules) || typeof engine.parseDeclarativeRules !== 'function') return 0;
      const have = new Set(engine.rules.map((r) => r.name));
      const fresh = rulesFor(String(location.href), true, rs).autoconsent.filter((x) => !have.has(x.name));
      if (!fresh.length) return 0;
      try {
        engine.parseDeclarativeRules({ autoconsent: fresh });
        const st = engine.state && engine.state.lifecycle;
        if (st === 'nothingDetected') engine.start();
        else { const h = document.documentElement; h.toggleAttribute('data-capture-consent'); h.toggleAttribute('data-capture-consent'); }
      } catch (e) { return 0; }
      changedAt = performance.now();
      return fresh.length;
    },
  });
  // Every bracket, parenthesis and quote of a selector closed: the engine queries each
  // selector alone, where the browser closes what is left open at its end; in a list, one left
  // open would spoil the rest.
  const closed = (sel) => {
    let quote = '', depth = 0;
    for (let i = 0; i < sel.length; i++) {
      const c = sel[i];
      if (c === '\\') { i++; continue; }
      if (quote) { if (c === quote) quote = ''; continue; }
      if (c === '"' || c === "'") quote = c;
      else if (c === '[' || c === '(') depth++;
      else if (c === ']' || c === ')') { if (--depth < 0) return false; }
    }
    return !quote && depth === 0;
  };
  // The rules whose detection begins by requiring one CSS selector to match (nine in ten): one
  // query for all their selectors tells whether any of them can be on the page; when none is,
  // each of them answers "not here" without its own query. Every look (the engine's own, in
  // every frame, and the probe's) calls all the rules' `detectCmp` in one synchronous run, so
  // the query's answer is kept until that run ends (a query per rule was most of a look's
  // cost, issue 39).
  let simple = null, noneThere = null;
  const quicken = () => {
    if (simple !== null || !engine || !Array.isArray(engine.rules)) return;
    simple = new Set();
    const sels = [];
    for (const r of engine.rules) {
      const first = r.rule && Array.isArray(r.rule.detectCmp) ? r.rule.detectCmp[0] : null;
      if (!first || first.optional || Object.keys(first).length !== 1 || typeof first.exists !== 'string') continue;
      if (/^(aria|xpath|text|pierce)\//.test(first.exists) || !closed(first.exists)) continue;
      simple.add(r);
      sels.push(first.exists);
    }
    const query = sels.join(',');
    if (!query) return;
    let answer = null;
    noneThere = () => {
      if (answer === null) {
        try { answer = document.querySelector(query) === null; } catch (e) { answer = false; }
        queueMicrotask(() => { answer = null; });
      }
      return answer;
    };
    for (const r of simple) {
      const own = r.detectCmp;
      if (typeof own !== 'function') continue;
      r.detectCmp = function () { return noneThere() ? Promise.resolve(false) : own.apply(this, arguments); };
    }
  };
  const probe = async () => {
    const st = engine && engine.state && engine.state.lifecycle;
    if (!st || st === 'loading' || st === 'waitingForInitResponse' || !Array.isArray(engine.rules)) return;
    const started = performance.now();
    let found = false;
    quicken();
    const skipped = noneThere && noneThere() ? simple.size : 0;
    await Promise.all(engine.rules.map(async (r) => {
      try {
        if (!r.checkFrameContext(true) || (r.runContext && r.runContext.urlPattern && !r.hasMatchingUrlPattern())) return;
        if (await r.detectCmp()) found = true;
      } catch (e) {}
    }));
    if (!found && started > lookedAt) lookedAt = started;
    return { rules: engine.rules.length, skipped, found };
  };
  // The look as the step takes it, for the tests: how many rules, how many one query left out,
  // and whether one found its platform.
  if (isTop) Object.defineProperty(window, '__captureConsentProbe', { value: async () => (await probe()) || null });
  if (isTop) {
    try {
      // The engine's own pre-hiding style (added, filled, taken away when it found nothing) is
      // not a change of the page: counted, it made the summary look again after every look.
      const ours = (n) => !!n && n.nodeType === 1 && n.id === 'autoconsent-prehide';
      const foreign = (r) => !(ours(r.target) || (r.type === 'childList' && r.addedNodes.length + r.removedNodes.length > 0
        && [...r.addedNodes, ...r.removedNodes].every(ours)));
      new MutationObserver((rs) => { if (rs.some(foreign)) changedAt = performance.now(); })
        .observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['class', 'hidden', 'open'] });
    } catch (e) {}
  }
  if (isTop) {
    const frames = new Map([[window, me]]);
    window.addEventListener('message', (e) => {
      const d = e.data && e.data.__captureConsent;
      if (d && typeof d === 'object' && e.source && e.source !== window) frames.set(e.source, copy(d));
    }, true);
    const visible = (el) => {
      if (!el || !el.isConnected) return false;
      const r = el.getBoundingClientRect();
      if (r.width < 2 || r.height < 2 || r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) return false;
      const s = getComputedStyle(el);
      return s.display !== 'none' && s.visibility !== 'hidden' && Number(s.opacity) > 0.05;
    };
    const fixed = (el) => { const p = getComputedStyle(el).position; return p === 'fixed' || p === 'sticky'; };
    const named = /cookie|consent|gdpr|privacy|cmp|didomi|onetrust|truste|usercentrics|sp_message|qc-cmp/i;
    // Something on the page still looks like a consent pop-up.
    const looksOpen = () => {
      const cands = document.querySelectorAll('[id*=cookie i],[class*=cookie i],[id*=consent i],[class*=consent i],[id*=gdpr i],[class*=gdpr i],[id*=cmp i],[class*=cmp i],iframe,dialog[open],[aria-modal=true],[role=dialog]');
      for (const el of cands) {
        if (!visible(el)) continue;
        let p = el;
        for (let i = 0; p && p.nodeType === 1 && i < 6; i++, p = p.parentElement) {
          const text = (p.id || '') + ' ' + (typeof p.className === 'string' ? p.className : '') + ' ' + (p.getAttribute('title') || '') + ' ' + (p.getAttribute('src') || '');
          if (fixed(p) && (named.test(text) || named.test(el.id + ' ' + (el.getAttribute('title') || '') + ' ' + (el.getAttribute('src') || '')))) return true;
        }
      }
      return false;
    };
    // A consent platform's script is on the page (its global, the IAB frameworks' API stubs every
    // large platform defines at once, or its loader): its pop-up may still be on its way.
    const platformGlobals = ['__tcfapi', '__gpp', '__uspapi', '__cmp', 'OneTrust', 'OneTrustStub', 'Optanon',
      'OptanonWrapper', 'Cookiebot', 'CookieConsent', 'CookieControl', 'Didomi', 'didomiOnReady', 'UC_UI',
      'usercentrics', 'truste', '_sp_', '_sp_queue', 'klaro', 'tarteaucitron', '_iub', 'CookieScript', 'Osano',
      'cookieyes', 'Termly', '__cmpapi'];
    const platformScripts = /cookielaw\.org|onetrust|cookiebot\.com|consensu\.org|privacy-mgmt\.com|usercentrics\.eu|trustarc\.com|truste\.com|didomi\.io|consentmanager\.net|cookieyes\.com|termly\.io|iubenda\.com|osano\.com|quantcast/i;
    const platformPresent = () => {
      for (const g of platformGlobals) { try { if (window[g] !== undefined) return true; } catch (e) {} }
      for (const sc of document.scripts) { if (sc.src && platformScripts.test(sc.src)) return true; }
      return false;
    };
    Object.defineProperty(window, '__captureConsent', {
      value: async (fallback) => {
        if (lookedAt <= changedAt) await probe();
        const fs = Array.from(frames.values()).map(copy);
        const open = looksOpen(), settled = lookedAt > changedAt;
        // Nothing found anywhere and nothing looks open: `auto`'s fallback runs now, in this
        // call, rather than in a second round trip.
        const platform = platformPresent();
        const quiet = settled && !open && !platform && fs.every((f) => !f.cmp && !f.popup && !f.result && !f.done);
        return { frames: fs, open, settled, platform, hid: fallback && quiet ? hideFallback() : null };
      },
    });
  }
  window.autoconsentSendMessage = async (m) => {
    if (!m || typeof m !== 'object') return;
    switch (m.type) {
      case 'init':
        setTimeout(() => {
          if (!window.autoconsentReceiveMessage) return;
          // Here, not at once: the sites' own rules come in a script that runs after this one.
          keepRulesForThisPage();
          // The engine sets its rules up in this call, before its first look.
          window.autoconsentReceiveMessage({ type: 'initResp', config, rules });
          quicken();
        }, 0);
        return;
      case 'report':
        if (m.state) {
          me.lifecycle = m.state.lifecycle;
          me.attempts = m.state.findCmpAttempts;
          if (!me.cmp && m.state.detectedCmps && m.state.detectedCmps.length) me.cmp = m.state.detectedCmps[0];
        }
        break;
      case 'captureLooked': if (!m.found && m.started > lookedAt) lookedAt = m.started; return;
      case 'cmpDetected': if (!me.cmp) me.cmp = m.cmp; break;
      case 'popupFound': me.popup = true; me.cmp = m.cmp; break;
      case 'optOutResult': me.result = m.result ? 'rejected' : 'failed'; if (m.cmp && m.cmp !== 'none') me.cmp = m.cmp; break;
      case 'optInResult': me.result = m.result ? 'accepted' : 'failed'; if (m.cmp && m.cmp !== 'none') me.cmp = m.cmp; break;
      case 'autoconsentDone': me.done = true; me.cosmetic = !!m.isCosmetic; if (m.cmp) me.cmp = m.cmp; break;
      default: return;
    }
    publish();
  };
})();"#;

/// The script that gives a page the sites' own rules for `now`, where a redirect took it from
/// `given` (the URL its job's [`site_script`] was made for), that `given`'s did not hold; None
/// when there are none (the same site, or one without rules of its own), and for `accept`
/// (whose script holds every site's rules) and `none`. The page's top document keeps those
/// its URL matches and has its engine look again.
pub(crate) fn late_site_script(mode: CookieConsent, given: &str, now: &str) -> Option<String> {
    if given == now || !matches!(mode, CookieConsent::Auto | CookieConsent::Reject | CookieConsent::Hide) {
        return None;
    }
    let had = site_rules_for(given);
    let rules: Vec<_> = site_rules_for(now).into_iter().filter(|r| !had.iter().any(|h| std::ptr::eq(*h, *r))).collect();
    hand_over("__captureConsentAddSite", &rules)
}

/// Reads the top frame's summary (null when the script did not run there); with `fallback`
/// (`auto`), a page where nothing was found has [`HIDE_FALLBACK`] run in the same call.
pub(crate) fn summary(fallback: bool) -> &'static str {
    match fallback {
        true => "window.__captureConsent ? window.__captureConsent(true) : null",
        false => "window.__captureConsent ? window.__captureConsent(false) : null",
    }
}

/// Hides what still looks like a consent pop-up (known platforms' containers, fixed or sticky
/// elements with a consent-ish name) and lifts the page's scroll lock; returns how many it hid.
pub(crate) const HIDE_FALLBACK: &str = r#"(() => {
  // The engine's pre-hiding (opacity 0 on the elements of every platform it knows, for up to
  // 2 s or until its looks find nothing) is not the page: seen through it, a banner it covers
  // would pass for gone here and come back when the engine takes it away.
  // Lifted only once an element is looked at: a page with no candidate pays nothing.
  const pre = document.getElementById('autoconsent-prehide');
  const sheet = pre && pre.sheet;
  let lifted = false;
  const lift = () => { if (!lifted && sheet && !sheet.disabled) { sheet.disabled = true; lifted = true; } };
  try {
  const visible = (el) => {
    if (!el || !el.isConnected) return false;
    lift();
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    const s = getComputedStyle(el);
    return s.display !== 'none' && s.visibility !== 'hidden' && s.opacity !== '0';
  };
  let hidden = 0;
  const hide = (el) => { if (el && visible(el)) { el.style.setProperty('display', 'none', 'important'); hidden++; } };
  const known = ['#onetrust-consent-sdk', '#onetrust-banner-sdk', '.onetrust-pc-dark-filter', '#CybotCookiebotDialog', '#CybotCookiebotDialogBodyUnderlay', '#didomi-host', '.didomi-popup-backdrop', '.qc-cmp2-container', '#qc-cmp2-container', '#usercentrics-root', '#usercentrics-cmp-ui', '#truste-consent-track', '.truste_overlay', '.truste_box_overlay', '[id^=sp_message_container]', '#sp_message_container', '.cmp-root', '#cmpbox', '#cmpbox2'];
  for (const s of known) { try { document.querySelectorAll(s).forEach(hide); } catch (e) {} }
  const named = /cookie|consent|gdpr|cmp/i;
  const generic = document.querySelectorAll('[id*=cookie i],[class*=cookie i],[id*=consent i],[class*=consent i],[id*=gdpr i],[class*=gdpr i],iframe[src*=consent i],iframe[src*=cookie i],iframe[title*=consent i],iframe[title*=cookie i],iframe[title*=privacy i]');
  for (const el of generic) {
    let p = el;
    for (let i = 0; p && p.nodeType === 1 && i < 6 && p !== document.body && p !== document.documentElement; i++, p = p.parentElement) {
      lift();
      const pos = getComputedStyle(p).position;
      if (pos === 'fixed' || pos === 'sticky') { hide(p); break; }
    }
  }
  if (hidden) {
    for (const el of [document.documentElement, document.body]) {
      if (!el) continue;
      const s = getComputedStyle(el);
      if (s.overflow === 'hidden' || s.overflowY === 'hidden') el.style.setProperty('overflow', 'visible', 'important');
      if (s.position === 'fixed') el.style.setProperty('position', 'static', 'important');
    }
  }
  void named;
  return hidden;
  } finally { if (lifted) sheet.disabled = false; }
})()"#;

/// One frame's record, as the top frame keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct FrameState {
    pub cmp: Option<String>,
    #[serde(default)]
    pub lifecycle: String,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub popup: bool,
    pub result: Option<String>,
    #[serde(default)]
    pub done: bool,
    #[serde(default)]
    pub cosmetic: bool,
}

/// The top frame's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct Summary {
    #[serde(default)]
    pub frames: Vec<FrameState>,
    /// Something still looks like a consent pop-up.
    #[serde(default)]
    pub open: bool,
    /// A look by the rules at the top document, started after its last change, finished and
    /// found no platform: nothing more will be found unless the page changes again.
    #[serde(default)]
    pub settled: bool,
    /// A consent platform's script is on the page (its global, an IAB framework's API stub or
    /// its loader), whether or not a rule recognised its pop-up yet.
    #[serde(default)]
    pub platform: bool,
    /// How many consent-looking elements [`HIDE_FALLBACK`] hid, when the summary ran it (a page
    /// where nothing was found, with `auto`).
    #[serde(default)]
    pub hid: Option<u64>,
}

/// What the summary says so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The outcome (a fallback may still hide what is left, with `auto`).
    Known(ConsentReport),
    /// Not yet: read again.
    Wait,
}

/// How long a recognised platform may take to show its pop-up before "none" is believed, when
/// nothing on the page looks like one (a platform whose consent was given before shows none).
pub(crate) const QUIET_PLATFORM: std::time::Duration = std::time::Duration::from_millis(600);

/// Decide from `s` for `mode`, `elapsed` into the step; `out_of_time` when the budget is spent
/// (then it says what is known, never waits).
pub(crate) fn decide(mode: CookieConsent, s: &Summary, elapsed: std::time::Duration, out_of_time: bool) -> Verdict {
    let report = |cmp: Option<&String>, action| Verdict::Known(ConsentReport { cmp: cmp.cloned(), action });
    // An answer in any frame.
    if let Some(f) = s.frames.iter().find(|f| matches!(f.result.as_deref(), Some("rejected" | "accepted"))) {
        let action =
            if f.result.as_deref() == Some("accepted") { ConsentAction::Accepted } else { ConsentAction::Rejected };
        // A cosmetic rule's "opt-out" hides: say so.
        let action = if f.cosmetic { ConsentAction::Hidden } else { action };
        return report(f.cmp.as_ref(), action);
    }
    if let Some(f) = s.frames.iter().find(|f| f.done) {
        return report(f.cmp.as_ref(), if f.cosmetic { ConsentAction::Hidden } else { ConsentAction::Rejected });
    }
    if mode == CookieConsent::Hide
        && let Some(f) = s.frames.iter().find(|f| f.popup)
    {
        return report(f.cmp.as_ref(), ConsentAction::Hidden);
    }
    if let Some(f) = s.frames.iter().find(|f| f.result.as_deref() == Some("failed")) {
        return report(f.cmp.as_ref(), ConsentAction::Failed);
    }
    let answering = s.frames.iter().find(|f| f.popup);
    let detected = s.frames.iter().find(|f| f.cmp.is_some());
    if out_of_time {
        return match (answering, detected) {
            // A pop-up found but not answered in time.
            (Some(f), _) => report(f.cmp.as_ref(), ConsentAction::Failed),
            // A platform present without a pop-up (consent given before, or none shown).
            (None, Some(f)) => report(f.cmp.as_ref(), ConsentAction::NoneFound),
            (None, None) => report(None, ConsentAction::NoneFound),
        };
    }
    if answering.is_some() {
        return Verdict::Wait;
    }
    if let Some(f) = detected {
        return match !s.open && elapsed >= QUIET_PLATFORM {
            true => report(f.cmp.as_ref(), ConsentAction::NoneFound),
            false => Verdict::Wait,
        };
    }
    // Nothing recognised: done once the rules looked at the page as it now is and nothing
    // looks like a pop-up — at once on a page without a platform's script, after
    // [`QUIET_PLATFORM`] on one with (its SDK injects the pop-up after the page loaded; the
    // change makes the next summary look again).
    if s.settled && !s.open && (!s.platform || elapsed >= QUIET_PLATFORM) {
        report(None, ConsentAction::NoneFound)
    } else {
        Verdict::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patterns_needles_are_texts_every_url_it_matches_holds() {
        let n = |p: &str| needles(p);
        let v = |a: &[&str]| Some(a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            n(r"^https?://(www\.)?galaxus\.de/|^https?://(www\.)?galaxus\.fr/"),
            v(&["galaxus.de/", "galaxus.fr/"])
        );
        assert_eq!(n(r"^https://(m|mbasic)\.facebook\.com/"), v(&[".facebook.com/"]));
        assert_eq!(n(r"^https://([a-z0-9-]+\.)?bandcamp\.com"), v(&["bandcamp.com"]));
        assert_eq!(n(r"^https://(www\.)?(aa|envoyair|psaairlines)\.com/"), v(&["https://"]));
        assert_eq!(n(r"^https://www\.ecosia\.org/"), v(&["https://www.ecosia.org/"]));
        // Optional and repeated characters, classes, escapes that are not one character.
        assert_eq!(n(r"^https?://shop\.examples?\.com"), v(&["://shop.example"]));
        assert_eq!(n(r"^https?://ab+cdef"), v(&["://ab"]));
        assert_eq!(n(r"x[abc]longword\dzz"), v(&["longword"]));
        // Nothing long enough, or nothing this reads with confidence: the page matches it.
        assert_eq!(n(r"^https?://a\.b/"), v(&["://a.b/"]));
        assert_eq!(n(r"^.*$"), None);
        assert_eq!(n(r"^https?://(www\.)?ab\.nl|x"), None);
        assert_eq!(n(r"a{2}"), None);
        assert_eq!(n(r"(unclosed"), None);
    }

    #[test]
    fn every_site_rules_pattern_matches_only_urls_holding_one_of_its_needles() {
        // Checked against the rules as shipped: each pattern, turned into a Rust regex, and a
        // URL made to match it; the needles must be in that URL.
        let rules: serde_json::Value = serde_json::from_str(RULES).unwrap();
        let patterns: Vec<&str> =
            rules["r"].as_array().unwrap().iter().filter_map(|r| r[3].as_str()).filter(|p| !p.is_empty()).collect();
        assert!(patterns.len() > 500, "{}", patterns.len());
        let with = patterns.iter().filter(|p| needles(p).is_some()).count();
        // Nearly every one gets needles (so nearly none is compiled in the page).
        assert!(with * 100 >= patterns.len() * 95, "{with} of {}", patterns.len());
        for p in patterns {
            let Some(ns) = needles(p) else { continue };
            for n in &ns {
                assert!(!n.is_empty() && n.chars().count() >= NEEDLE_MIN, "{p}: {n:?}");
            }
        }
    }

    fn frame(cmp: Option<&str>, lifecycle: &str, popup: bool, result: Option<&str>) -> FrameState {
        FrameState {
            cmp: cmp.map(str::to_string),
            lifecycle: lifecycle.into(),
            attempts: 1,
            popup,
            result: result.map(str::to_string),
            done: false,
            cosmetic: false,
        }
    }

    fn ms(n: u64) -> std::time::Duration {
        std::time::Duration::from_millis(n)
    }

    fn known(v: Verdict) -> (Option<String>, ConsentAction) {
        match v {
            Verdict::Known(r) => (r.cmp, r.action),
            Verdict::Wait => panic!("expected an outcome"),
        }
    }

    #[test]
    fn every_mode_reads_the_engines_reports() {
        use CookieConsent::{Accept, Auto, Hide, Reject};
        let s =
            |frames: Vec<FrameState>, open: bool| Summary { frames, open, settled: true, platform: false, hid: None };
        // An iframe's platform refused: the page's outcome.
        let refused = s(
            vec![
                frame(None, "nothingDetected", false, None),
                frame(Some("TrustArc-frame"), "done", true, Some("rejected")),
            ],
            true,
        );
        assert_eq!(
            known(decide(Auto, &refused, ms(0), false)),
            (Some("TrustArc-frame".into()), ConsentAction::Rejected)
        );
        let accepted = s(vec![frame(Some("Onetrust"), "done", true, Some("accepted"))], false);
        assert_eq!(known(decide(Accept, &accepted, ms(0), false)), (Some("Onetrust".into()), ConsentAction::Accepted));
        // Hide: a pop-up found is hidden, unanswered.
        let found = s(vec![frame(Some("Cookiebot"), "openPopupDetected", true, None)], true);
        assert_eq!(known(decide(Hide, &found, ms(0), false)), (Some("Cookiebot".into()), ConsentAction::Hidden));
        assert_eq!(decide(Auto, &found, ms(0), false), Verdict::Wait, "still answering");
        assert_eq!(known(decide(Auto, &found, ms(2000), true)), (Some("Cookiebot".into()), ConsentAction::Failed));
        let failed = s(vec![frame(Some("Didomi"), "optOutFailed", true, Some("failed"))], true);
        assert_eq!(known(decide(Reject, &failed, ms(0), false)), (Some("Didomi".into()), ConsentAction::Failed));
        // Nothing: known once the engine looked and nothing looks open; otherwise wait.
        let nothing = s(vec![frame(None, "started", false, None)], false);
        assert_eq!(known(decide(Auto, &nothing, ms(0), false)), (None, ConsentAction::NoneFound));
        let unknown_banner = s(vec![frame(None, "started", false, None)], true);
        assert_eq!(decide(Auto, &unknown_banner, ms(0), false), Verdict::Wait);
        assert_eq!(known(decide(Auto, &unknown_banner, ms(2000), true)), (None, ConsentAction::NoneFound));
        let not_yet = Summary { settled: false, ..nothing.clone() };
        assert_eq!(decide(Auto, &not_yet, ms(0), false), Verdict::Wait);
        // A platform's script on the page, its pop-up not shown yet: the same moment as a
        // recognised platform's.
        let loading = Summary { platform: true, ..nothing.clone() };
        assert_eq!(decide(Auto, &loading, ms(100), false), Verdict::Wait);
        assert_eq!(known(decide(Auto, &loading, ms(700), false)), (None, ConsentAction::NoneFound));
        // A platform without a pop-up: believed after a moment when nothing looks open.
        let quiet = s(vec![frame(Some("Onetrust"), "cmpDetected", false, None)], false);
        assert_eq!(decide(Auto, &quiet, ms(100), false), Verdict::Wait);
        assert_eq!(known(decide(Auto, &quiet, ms(700), false)), (Some("Onetrust".into()), ConsentAction::NoneFound));
        // A cosmetic rule's done is a hide.
        let mut cosmetic = frame(Some("generic-cosmetic"), "done", true, None);
        cosmetic.done = true;
        cosmetic.cosmetic = true;
        assert_eq!(
            known(decide(Auto, &s(vec![cosmetic], false), ms(0), false)),
            (Some("generic-cosmetic".into()), ConsentAction::Hidden)
        );
    }

    #[test]
    fn each_hook_meets_the_engine_once() {
        for (anchor, with) in ENGINE_HOOKS {
            assert_eq!(ENGINE.matches(anchor).count(), 1, "{anchor}");
            assert_eq!(engine().matches(with).count(), 1, "{with}");
        }
    }

    #[test]
    fn the_script_carries_the_rules_and_the_answer_of_its_mode() {
        let auto = arm_script(CookieConsent::Auto).unwrap();
        assert!(auto.contains("autoAction: 'optOut'") && auto.contains("heuristicMode: 'reject'"));
        // The rules travel as a JSON string the page parses; the sites' own are not in it (a
        // job's page is given those its URL matches).
        assert!(auto.contains(r#"const all = JSON.parse("{ \"autoconsent\": [], \"compact\": {\"r\":[[1,"#));
        assert!(!auto.contains("hetzner.com") && !auto.contains("envoyair"));
        assert!(auto.len() < 300_000, "{}", auto.len());
        assert!(auto.contains("autoconsentReceiveMessage"));
        let accept = arm_script(CookieConsent::Accept).unwrap();
        // The opt-in steps are only in the full rules.
        assert!(
            accept.contains("autoAction: 'optIn'")
                && accept.contains(r##"\"optIn\":[{\"waitForThenClick\":\"#didomi-notice-agree-button\"}]"##)
        );
        let hide = arm_script(CookieConsent::Hide).unwrap();
        assert!(hide.contains("autoAction: null") && hide.contains("prehideTimeout: 3600000"));
        assert!(arm_script(CookieConsent::None).is_none());
        assert!(!auto.contains("__RULES__") && !auto.contains("__AUTO_ACTION__") && !auto.contains("__SITE_"));
        // `accept`'s full rules carry the sites' own.
        assert!(accept.contains("hetzner.com"));
    }

    /// The strings a compact rule uses: its pre-hiding selectors' and its steps'.
    fn strings_used(rule: &serde_json::Value, out: &mut Vec<u64>) {
        fn step(v: &serde_json::Value, out: &mut Vec<u64>) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|x| step(x, out)),
                serde_json::Value::Object(m) => {
                    for (k, x) in m {
                        match (k.as_str(), x.as_u64()) {
                            ("e" | "v" | "c" | "k" | "w" | "wv" | "h" | "cc", Some(n)) => out.push(n),
                            _ => step(x, out),
                        }
                    }
                }
                _ => {}
            }
        }
        out.extend(rule[5].as_array().into_iter().flatten().filter_map(|x| x.as_u64()));
        for part in 6..=9 {
            step(&rule[part], out);
        }
    }

    #[test]
    fn the_rules_split_where_any_document_needs_only_the_first_part() {
        let all: serde_json::Value = serde_json::from_str(RULES).unwrap();
        let split = split_rules();
        let first: serde_json::Value = serde_json::from_str(&split.everywhere).unwrap();
        // Nothing lost, nothing reordered: the two parts are the whole.
        let joined =
            |a: &serde_json::Value, b: &[serde_json::Value]| [a.as_array().unwrap().clone(), b.to_vec()].concat();
        assert_eq!(joined(&first["r"], &split.sites), *all["r"].as_array().unwrap());
        assert_eq!(joined(&first["s"], &split.site_strings), *all["s"].as_array().unwrap());
        assert_eq!(first["v"], all["v"]);
        // autoconsent 16.23.0: 226 rules any document may run, 571 of sites' own.
        assert_eq!((first["r"].as_array().unwrap().len(), split.sites.len()), (226, 571));
        // The first part's rules use only its own strings.
        let own = first["s"].as_array().unwrap().len() as u64;
        for rule in first["r"].as_array().unwrap() {
            let mut used = Vec::new();
            strings_used(rule, &mut used);
            assert!(used.iter().all(|&i| i < own), "{}: {used:?} (of {own})", rule[1]);
        }
        // Each of the second part's rules is a site's own, for its top document only (run
        // context 10 or 22: not in frames), with a pattern.
        for rule in &split.sites {
            assert!(rule[3].as_str().is_some_and(|p| !p.is_empty()), "{}", rule[1]);
            assert!(matches!(rule[4].as_u64(), Some(10 | 22)), "{}: {}", rule[1], rule[4]);
        }
    }

    /// Every site's own rule is there in full, its pattern compiled (a JavaScript pattern Rust
    /// could not read would leave its site without its rule); a URL gets its site's rule, also
    /// by the other scheme and with or without `www.`, and no other.
    #[test]
    fn a_url_gets_its_sites_own_rules_and_no_others() {
        let sites = site_rules();
        assert_eq!(sites.len(), split_rules().sites.len());
        let names =
            |url: &str| site_rules_for(url).iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
        assert_eq!(names("https://www.hetzner.com/"), ["hetzner.com"]);
        assert_eq!(names("http://hetzner.com/cloud"), ["hetzner.com"]);
        assert_eq!(names("https://old.reddit.com/r/x"), ["reddit.com"]);
        assert_eq!(names("https://news.example/a"), Vec::<String>::new());
        assert_eq!(names("not a url"), Vec::<String>::new());
        // The rule in full: its opt-out steps are there.
        let hetzner = site_rules_for("https://www.hetzner.com/");
        assert!(hetzner[0]["optOut"].as_array().is_some_and(|a| !a.is_empty()), "{}", hetzner[0]);
        let script = site_script(CookieConsent::Auto, "https://www.hetzner.com/").unwrap();
        assert!(script.contains("__captureConsentSite") && script.contains("hetzner.com"), "{script}");
        assert!(site_script(CookieConsent::Reject, "https://news.example/").is_none());
        // `accept`'s script carries every site's rules already; `none` runs nothing.
        assert!(site_script(CookieConsent::Accept, "https://www.hetzner.com/").is_none());
        assert!(site_script(CookieConsent::None, "https://www.hetzner.com/").is_none());
    }

    /// A redirect to another site gives the page that site's own rules, and only what it lacks.
    #[test]
    fn a_redirect_to_another_site_gives_that_sites_rules() {
        let late =
            late_site_script(CookieConsent::Reject, "https://www.hetzner.com/", "https://old.reddit.com/r/x").unwrap();
        assert!(late.contains("__captureConsentAddSite") && late.contains("reddit.com"), "{late}");
        assert!(!late.contains("hetzner.com"), "{late}");
        // The same site by another form (the job was already given its rules), or a site of no
        // rule of its own: nothing.
        assert!(late_site_script(CookieConsent::Auto, "http://hetzner.com/", "https://www.hetzner.com/").is_none());
        assert!(late_site_script(CookieConsent::Auto, "https://www.hetzner.com/", "https://news.example/").is_none());
        assert!(late_site_script(CookieConsent::Auto, "https://a.example/", "https://a.example/").is_none());
        assert!(late_site_script(CookieConsent::Accept, "https://news.example/", "https://www.hetzner.com/").is_none());
        assert!(late_site_script(CookieConsent::Auto, "https://news.example/", "https://www.hetzner.com/").is_some());
    }
}
