//! robots.txt (RFC 9309): parsing, group selection and path matching.
//!
//! - Lines are `field: value`, `#` starts a comment, field names are case-insensitive; an
//!   unknown field is ignored. A group is one or more `User-agent` lines followed by rules;
//!   rules before any `User-agent` line belong to no group and are ignored.
//! - The crawler's product token ([`PRODUCT_TOKEN`]) is matched case-insensitively against
//!   each group's agents (an agent line's value is cut at the first `/` or space, so
//!   `CaptureAudit/1.0` matches too). Every group naming us applies, merged; only when none
//!   does, every `*` group applies, merged; with neither, everything is allowed. So the
//!   most specific agent wins.
//! - `Allow`/`Disallow` paths match the URL's path and query from the start, `*` matches any
//!   sequence and a final `$` anchors the end. The longest matching rule (in octets of its
//!   pattern) decides; on a tie `Allow` wins. An empty `Disallow:` is no rule.
//!   `/robots.txt` itself is always allowed.
//! - Only the first [`MAX_ROBOTS_BYTES`] are parsed (the RFC's minimum).
//!
//! How the fetch status maps to rules ([`RobotsTxt::from_status`]):
//! 2xx parsed; 4xx ("unavailable") allows everything, except 429, which is treated like 5xx;
//! 5xx and network failures ("unreachable") disallow everything, as RFC 9309 §2.3.1.4 says.
//! For an audit this means the crawler audits only the start URL (which the person asked for)
//! and the report says why the crawl stopped.

use url::Url;

/// The crawler's product token, matched against `User-agent` lines.
pub const PRODUCT_TOKEN: &str = "CaptureAudit";

/// The full `User-Agent` header of the audit crawler for a service at `base_url`.
pub fn user_agent(base_url: &str) -> String {
    format!("{PRODUCT_TOKEN}/1.0 (+{}/docs/audits)", base_url.trim_end_matches('/'))
}

/// How much of a robots.txt is parsed (RFC 9309 asks for at least 500 KiB).
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;

/// One Allow/Disallow rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `true` for Allow.
    pub allow: bool,
    /// The path pattern, percent-encoding normalised.
    pub pattern: String,
}

#[derive(Debug, Clone, Default)]
struct Group {
    agents: Vec<String>,
    rules: Vec<Rule>,
}

/// How the robots.txt was obtained, and so what it permits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsSource {
    /// A 2xx response, parsed.
    Parsed,
    /// A 4xx response (not 429): no robots.txt, everything allowed.
    Unavailable(u16),
    /// 5xx, 429 or a network failure: everything disallowed.
    Unreachable(String),
}

/// A parsed robots.txt, or the policy that stands for a missing one.
#[derive(Debug, Clone)]
pub struct RobotsTxt {
    groups: Vec<Group>,
    sitemaps: Vec<String>,
    source: RobotsSource,
}

impl RobotsTxt {
    /// Parse a robots.txt body (a 2xx response).
    pub fn parse(body: &str) -> RobotsTxt {
        let body = if body.len() > MAX_ROBOTS_BYTES {
            let mut end = MAX_ROBOTS_BYTES;
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            &body[..end]
        } else {
            body
        };
        let body = body.strip_prefix('\u{feff}').unwrap_or(body);
        let mut groups: Vec<Group> = Vec::new();
        let mut sitemaps = Vec::new();
        // Whether the current group has seen a rule: a user-agent line after rules opens a
        // new group, consecutive user-agent lines share one.
        let mut in_rules = true;
        for raw in body.lines() {
            let line = raw.split('#').next().unwrap_or_default().trim();
            let Some((field, value)) = line.split_once(':') else { continue };
            let field = field.trim().to_ascii_lowercase();
            let value = value.trim();
            match field.as_str() {
                "user-agent" | "useragent" | "user agent" => {
                    if in_rules || groups.is_empty() {
                        groups.push(Group::default());
                        in_rules = false;
                    }
                    let token = value.split(['/', ' ', '\t']).next().unwrap_or_default().to_ascii_lowercase();
                    if let Some(g) = groups.last_mut() {
                        g.agents.push(token);
                    }
                }
                "allow" | "disallow" => {
                    in_rules = true;
                    let Some(g) = groups.last_mut() else { continue };
                    if value.is_empty() {
                        continue;
                    }
                    g.rules.push(Rule { allow: field == "allow", pattern: normalize_pattern(value) });
                }
                "sitemap" | "site-map" if !value.is_empty() => sitemaps.push(value.to_owned()),
                _ => {}
            }
        }
        RobotsTxt { groups, sitemaps, source: RobotsSource::Parsed }
    }

    /// The policy for a fetch that ended with `status` (None: a network failure, `error`).
    pub fn from_status(status: Option<u16>, body: &str, error: Option<&str>) -> RobotsTxt {
        let empty = |source| RobotsTxt { groups: Vec::new(), sitemaps: Vec::new(), source };
        match status {
            Some(s) if (200..300).contains(&s) => RobotsTxt::parse(body),
            Some(429) => empty(RobotsSource::Unreachable("HTTP 429 Too Many Requests".into())),
            Some(s) if (400..500).contains(&s) => empty(RobotsSource::Unavailable(s)),
            Some(s) => empty(RobotsSource::Unreachable(format!("HTTP {s}"))),
            None => empty(RobotsSource::Unreachable(error.unwrap_or("network error").to_owned())),
        }
    }

    /// How this policy was obtained.
    pub fn source(&self) -> &RobotsSource {
        &self.source
    }

    /// The `Sitemap:` URLs, resolved against `robots_url` (absolute ones as they are).
    pub fn sitemaps(&self, robots_url: &Url) -> Vec<Url> {
        self.sitemaps.iter().filter_map(|s| robots_url.join(s).ok()).collect()
    }

    /// The rules that apply to `token`: the groups naming it, else the `*` groups.
    pub fn rules_for(&self, token: &str) -> Vec<&Rule> {
        let token = token.to_ascii_lowercase();
        let star = "*".to_owned();
        let pick = if self.groups.iter().any(|g| g.agents.contains(&token)) { &token } else { &star };
        self.groups.iter().filter(|g| g.agents.contains(pick)).flat_map(|g| &g.rules).collect()
    }

    /// Whether [`PRODUCT_TOKEN`] may fetch `url`.
    pub fn allowed(&self, url: &Url) -> bool {
        self.allowed_for(PRODUCT_TOKEN, url)
    }

    /// Whether the crawler named `token` may fetch `url`.
    pub fn allowed_for(&self, token: &str, url: &Url) -> bool {
        if url.path() == "/robots.txt" {
            return true;
        }
        if let RobotsSource::Unreachable(_) = self.source {
            return false;
        }
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        let target = normalize_pattern(&target);
        let mut best: Option<&Rule> = None;
        for rule in self.rules_for(token) {
            if !pattern_matches(&rule.pattern, &target) {
                continue;
            }
            best = match best {
                None => Some(rule),
                Some(b) if rule.pattern.len() > b.pattern.len() => Some(rule),
                Some(b) if rule.pattern.len() == b.pattern.len() && rule.allow && !b.allow => Some(rule),
                keep => keep,
            };
        }
        best.is_none_or(|r| r.allow)
    }
}

/// Percent-encode what is not ASCII and upper-case existing escapes, so a pattern written
/// with `é` and a URL path carrying `%c3%a9` compare equal.
fn normalize_pattern(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' && i + 2 < bytes.len() && bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit() {
            out.push('%');
            out.push(bytes[i + 1].to_ascii_uppercase() as char);
            out.push(bytes[i + 2].to_ascii_uppercase() as char);
            i += 3;
            continue;
        }
        if b.is_ascii() && !b.is_ascii_control() && b != b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        i += 1;
    }
    out
}

/// RFC 9309 matching: `*` is any sequence, a trailing `$` anchors the end, otherwise a
/// prefix match.
fn pattern_matches(pattern: &str, target: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut pos = 0;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            if !target.starts_with(part) {
                return false;
            }
            pos = part.len();
            continue;
        }
        let is_last = i == parts.len() - 1;
        if is_last && anchored {
            // The last piece must end the target, after `pos`.
            return target.len() >= pos + part.len() && target.ends_with(part);
        }
        match target[pos..].find(part) {
            Some(at) => pos += at + part.len(),
            None => return false,
        }
    }
    !anchored || pos == target.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(path: &str) -> Url {
        Url::parse(&format!("https://example.com{path}")).unwrap()
    }

    #[test]
    fn the_most_specific_agent_group_applies_and_groups_merge() {
        let txt = "User-agent: *\nDisallow: /\n\nUser-agent: CaptureAudit\nDisallow: /private/\n\nuser-agent: captureaudit/2.0\nDisallow: /tmp\n";
        let r = RobotsTxt::parse(txt);
        assert!(r.allowed(&u("/")));
        assert!(!r.allowed(&u("/private/x")));
        assert!(!r.allowed(&u("/tmp/y")));
        assert!(!r.allowed_for("OtherBot", &u("/")));
    }

    #[test]
    fn star_groups_apply_when_no_group_names_us_and_nothing_means_allowed() {
        let r = RobotsTxt::parse("User-agent: Googlebot\nDisallow: /\n\nUser-agent: *\nDisallow: /admin\n");
        assert!(r.allowed(&u("/")));
        assert!(!r.allowed(&u("/admin/users")));
        let r = RobotsTxt::parse("User-agent: Googlebot\nDisallow: /\n");
        assert!(r.allowed(&u("/anything")));
        assert!(RobotsTxt::parse("").allowed(&u("/x")));
    }

    #[test]
    fn consecutive_agents_share_a_group_and_rules_before_agents_are_ignored() {
        let r = RobotsTxt::parse("Disallow: /orphan\nUser-agent: a\nUser-agent: captureaudit\nDisallow: /shared\n");
        assert!(r.allowed(&u("/orphan")));
        assert!(!r.allowed(&u("/shared")));
    }

    #[test]
    fn longest_match_wins_and_allow_wins_ties() {
        let r = RobotsTxt::parse("User-agent: *\nDisallow: /shop\nAllow: /shop/public\nAllow: /tie\nDisallow: /tie\n");
        assert!(!r.allowed(&u("/shop/cart")));
        assert!(r.allowed(&u("/shop/public/item")));
        assert!(r.allowed(&u("/tie")));
        let r = RobotsTxt::parse("User-agent: *\nAllow: /p\nDisallow: /p/\n");
        assert!(!r.allowed(&u("/p/x")));
        assert!(r.allowed(&u("/px")));
    }

    #[test]
    fn wildcards_and_end_anchors_match_path_and_query() {
        let r = RobotsTxt::parse(
            "User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?sessionid=\nDisallow: /a*/c\nDisallow: /exact$\n",
        );
        assert!(!r.allowed(&u("/docs/x.pdf")));
        assert!(r.allowed(&u("/docs/x.pdf?download=1")));
        assert!(!r.allowed(&u("/cart?sessionid=42")));
        assert!(!r.allowed(&u("/abbb/c/d")));
        assert!(r.allowed(&u("/abbb/d")));
        assert!(!r.allowed(&u("/exact")));
        assert!(r.allowed(&u("/exactly")));
        assert!(pattern_matches("/*$", "/"));
        assert!(pattern_matches("/a*b*$", "/axxbyy"));
        assert!(!pattern_matches("/a*b$", "/axxbyy"));
        assert!(pattern_matches("*", "/anything"));
    }

    #[test]
    fn empty_disallow_is_no_rule_and_robots_txt_is_always_allowed() {
        let r = RobotsTxt::parse("User-agent: *\nDisallow:\n");
        assert!(r.allowed(&u("/x")));
        let r = RobotsTxt::parse("User-agent: *\nDisallow: /\n");
        assert!(r.allowed(&u("/robots.txt")));
        assert!(!r.allowed(&u("/")));
    }

    #[test]
    fn comments_case_and_non_ascii_paths_are_handled() {
        let r = RobotsTxt::parse(
            "\u{feff}USER-AGENT: * # everyone\nDISALLOW: /caf\u{e9} # accents\nsitemap: /sm.xml\nSitemap: https://cdn.example.com/s.xml\n",
        );
        assert!(!r.allowed(&Url::parse("https://example.com/caf%C3%A9/menu").unwrap()));
        assert!(!r.allowed(&Url::parse("https://example.com/caf\u{e9}/menu").unwrap()));
        let sm = r.sitemaps(&u("/robots.txt"));
        assert_eq!(
            sm.iter().map(Url::as_str).collect::<Vec<_>>(),
            ["https://example.com/sm.xml", "https://cdn.example.com/s.xml"]
        );
    }

    #[test]
    fn fetch_status_decides_the_policy() {
        let all = RobotsTxt::from_status(Some(404), "", None);
        assert!(all.allowed(&u("/x")));
        assert_eq!(all.source(), &RobotsSource::Unavailable(404));
        for (status, err) in [(Some(503), None), (Some(429), None), (None, Some("connection refused"))] {
            let none = RobotsTxt::from_status(status, "", err);
            assert!(!none.allowed(&u("/x")), "{status:?}");
            assert!(matches!(none.source(), RobotsSource::Unreachable(_)));
        }
        let ok = RobotsTxt::from_status(Some(200), "User-agent: *\nDisallow: /x", None);
        assert!(!ok.allowed(&u("/x")));
    }

    #[test]
    fn user_agent_names_the_docs() {
        assert_eq!(user_agent("https://capture.example/"), "CaptureAudit/1.0 (+https://capture.example/docs/audits)");
    }
}
