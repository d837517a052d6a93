//! From a page's facts (and the site's) to findings with evidence.
//!
//! Every check has a stable id, a category and a weight ([`CHECKS`]); it either passes, fails
//! with one [`Finding`] (its first piece of evidence, up to nine more and the number of
//! occurrences), or does not apply (HSTS on an http page). The pass/fail outcomes feed the
//! SEO, accessibility and best-practices scores ([`crate::score`]); performance findings
//! explain the metric-based performance score and weigh nothing themselves. Security checks
//! count towards best practices, as in Lighthouse.
//!
//! A page that answered 4xx/5xx or could not be loaded gets the `http-status` finding and no
//! content checks: the error page's title says nothing about the page that should be there.

mod accessibility;
mod ctx;
mod defs;
mod facts;
mod findings;
mod page;
mod performance;
mod requests;
mod security;
mod seo;
mod site;

pub use accessibility::axe_weight;
pub use ctx::MAX_EVIDENCE;
pub use defs::{CHECKS, CheckDef, Thresholds, check_def};
pub use facts::{PageFacts, SiteFacts};
pub use findings::{Category, CheckOutcome, Checked, Evidence, Finding, Severity};
pub use page::check_page;
pub use site::check_site;

#[cfg(test)]
mod tests {
    use super::{CHECKS, Category, PageFacts, Severity, SiteFacts, Thresholds, check_page, check_site};
    use crate::collect::{
        AxeNode, AxeResults, AxeViolation, ConsoleMessage, FailedRequest, ImageFact, ImageFacts, InsecureForm,
        LayoutShift, MixedContent, NavigationTiming, PageCollection, ResourceSummary, SeoFacts, SizedResource, Vitals,
    };
    use crate::fetch::{Hop, LinkCheck, LinkReport, LinkVerdict};

    /// Facts of a page that passes every check (https, all headers).
    fn good() -> PageFacts {
        let og = [("og:title", "T"), ("og:description", "D"), ("og:image", "/i.png")];
        PageFacts {
            url: "https://example.com/".into(),
            final_url: "https://example.com/".into(),
            status: Some(200),
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("Strict-Transport-Security".into(), "max-age=31536000".into()),
                ("Content-Security-Policy".into(), "default-src 'self'".into()),
                ("X-Content-Type-Options".into(), "nosniff".into()),
                ("X-Frame-Options".into(), "SAMEORIGIN".into()),
                ("Referrer-Policy".into(), "no-referrer".into()),
            ],
            collection: Some(PageCollection {
                url: "https://example.com/".into(),
                https: true,
                navigation: Some(NavigationTiming { ttfb_ms: 120.0, ..NavigationTiming::default() }),
                vitals: Vitals {
                    observers_installed: true,
                    lcp_ms: Some(900.0),
                    cls: Some(0.01),
                    fcp_ms: Some(500.0),
                    tbt_ms: Some(0.0),
                    ..Vitals::default()
                },
                resources: ResourceSummary { total_bytes: 300_000, total_requests: 20, ..ResourceSummary::default() },
                seo: SeoFacts {
                    title: Some("Example shop — handmade shoes".into()),
                    meta_description: Some(
                        "Handmade leather shoes from our workshop, shipped across Europe within three days.".into(),
                    ),
                    h1_count: 1,
                    h1: vec!["Handmade shoes".into()],
                    canonical: vec!["https://example.com/".into()],
                    lang: Some("en".into()),
                    viewport: Some("width=device-width, initial-scale=1".into()),
                    open_graph: og.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                    ..SeoFacts::default()
                },
                images: ImageFacts { total: 3, ..ImageFacts::default() },
                ..PageCollection::default()
            }),
            axe: Some(AxeResults { passes: 20, ..AxeResults::default() }),
            links: Some(LinkReport::default()),
            ..PageFacts::default()
        }
    }

    fn ids(facts: &PageFacts) -> Vec<String> {
        check_page(facts, &Thresholds::default()).findings.into_iter().map(|f| f.id).collect()
    }

    fn col(f: &mut PageFacts) -> &mut PageCollection {
        f.collection.as_mut().unwrap()
    }

    #[test]
    fn a_good_page_has_no_finding_and_passes_every_applicable_check() {
        let c = check_page(&good(), &Thresholds::default());
        assert!(c.findings.is_empty(), "{:#?}", c.findings);
        assert!(c.outcomes.iter().all(|o| o.passed));
        assert!(c.outcomes.iter().any(|o| o.id == "hsts-missing"), "HSTS applies on https");
    }

    #[test]
    fn title_and_description_lengths_have_bounds() {
        let mut f = good();
        col(&mut f).seo.title = Some("Shoes".into());
        col(&mut f).seo.meta_description = Some("Short.".into());
        assert_eq!(ids(&f), ["title-too-short", "meta-description-too-short"]);
        col(&mut f).seo.title = Some("x".repeat(61));
        col(&mut f).seo.meta_description = Some("y".repeat(161));
        assert_eq!(ids(&f), ["title-too-long", "meta-description-too-long"]);
        col(&mut f).seo.title = Some("   ".into());
        col(&mut f).seo.meta_description = None;
        let c = check_page(&f, &Thresholds::default());
        assert_eq!(c.findings[0].id, "title-missing");
        assert_eq!(c.findings[0].severity, Severity::Critical);
        assert!(c.findings.iter().any(|x| x.id == "meta-description-missing"));
    }

    #[test]
    fn headings_canonical_lang_viewport_og_and_alt() {
        let mut f = good();
        let c = col(&mut f);
        c.seo.h1_count = 0;
        c.seo.h1.clear();
        c.seo.canonical.clear();
        c.seo.lang = Some(String::new());
        c.seo.viewport = Some("initial-scale=1".into());
        c.seo.open_graph.remove("og:image");
        c.images = ImageFacts {
            total: 4,
            without_alt_count: 2,
            without_alt: vec![ImageFact {
                selector: Some("#a".into()),
                src: "https://example.com/a.png".into(),
                html: "<img id=a>".into(),
            }],
        };
        let got = ids(&f);
        for id in [
            "h1-missing",
            "canonical-missing",
            "html-lang-missing",
            "viewport-missing",
            "og-tags-missing",
            "image-alt-missing",
        ] {
            assert!(got.iter().any(|g| g == id), "{id} in {got:?}");
        }
        let checked = check_page(&f, &Thresholds::default());
        let alt = checked.findings.iter().find(|x| x.id == "image-alt-missing").unwrap();
        assert_eq!((alt.occurrences, alt.evidence.selector.as_deref()), (2, Some("#a")));

        let mut f = good();
        col(&mut f).seo.h1_count = 3;
        col(&mut f).seo.h1 = vec!["a".into(), "b".into(), "c".into()];
        col(&mut f).seo.canonical = vec!["https://example.com/".into(), "https://example.com/other".into()];
        assert_eq!(ids(&f), ["h1-multiple", "canonical-conflict"]);
    }

    #[test]
    fn noindex_comes_from_the_robots_meta_or_the_header() {
        let mut f = good();
        col(&mut f).seo.noindex = true;
        col(&mut f).seo.robots_meta = vec!["noindex, follow".into()];
        assert_eq!(ids(&f), ["noindex"]);
        let mut f = good();
        f.headers.push(("x-robots-tag".into(), "googlebot: noindex".into()));
        assert_eq!(ids(&f), ["noindex"]);
        let mut f = good();
        f.headers.push(("X-Robots-Tag".into(), "none".into()));
        assert_eq!(ids(&f), ["noindex"]);
        let mut f = good();
        f.headers.push(("X-Robots-Tag".into(), "noarchive".into()));
        assert!(ids(&f).is_empty());
    }

    #[test]
    fn error_pages_get_one_critical_finding_and_no_content_checks() {
        for (status, error, title) in [
            (Some(503), None, "server error"),
            (Some(404), None, "HTTP 404"),
            (None, Some("net::ERR_CONNECTION_REFUSED"), "could not be loaded"),
        ] {
            let mut f = good();
            f.status = status;
            f.error = error.map(str::to_owned);
            col(&mut f).seo.title = None;
            let c = check_page(&f, &Thresholds::default());
            assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
            assert_eq!((c.findings[0].id.as_str(), c.findings[0].severity), ("http-status", Severity::Critical));
            assert!(c.findings[0].title.contains(title), "{}", c.findings[0].title);
            assert_eq!(c.outcomes.len(), 1);
        }
    }

    #[test]
    fn performance_findings_grade_by_threshold() {
        let mut f = good();
        let c = col(&mut f);
        c.navigation.as_mut().unwrap().ttfb_ms = 900.0;
        c.vitals.lcp_ms = Some(4500.0);
        c.vitals.cls = Some(0.3);
        c.vitals.layout_shifts = vec![LayoutShift { start_time: 800.0, value: 0.3, sources: vec!["#banner".into()] }];
        c.vitals.tbt_ms = Some(250.0);
        c.vitals.long_tasks = Some(2);
        c.resources.total_bytes = 4 * 1024 * 1024;
        c.resources.total_requests = 150;
        c.resources.largest =
            vec![SizedResource { url: "https://example.com/hero.jpg".into(), kind: "image".into(), bytes: 3_000_000 }];
        f.redirects = vec![
            Hop { url: "http://example.com/".into(), status: 301 },
            Hop { url: "https://example.com".into(), status: 301 },
        ];
        let got = check_page(&f, &Thresholds::default()).findings;
        let sev = |id: &str| got.iter().find(|x| x.id == id).map(|x| x.severity);
        assert_eq!(sev("slow-ttfb"), Some(Severity::Warning));
        assert_eq!(sev("slow-lcp"), Some(Severity::Critical));
        assert_eq!(sev("high-cls"), Some(Severity::Critical));
        assert_eq!(sev("high-tbt"), Some(Severity::Warning));
        assert_eq!(sev("heavy-page"), Some(Severity::Warning));
        assert_eq!(sev("many-requests"), Some(Severity::Warning));
        assert_eq!(sev("redirect-chain"), Some(Severity::Warning));
        let cls = got.iter().find(|x| x.id == "high-cls").unwrap();
        assert_eq!(cls.more_evidence[0].selector.as_deref(), Some("#banner"));
        // Performance checks do not weigh in the pass/fail scores.
        let checked = check_page(&f, &Thresholds::default());
        assert!(checked.outcomes.iter().filter(|o| o.category == Category::Performance).all(|o| o.weight == 0));
        // One redirect (http → https) is normal.
        let mut f = good();
        f.redirects.truncate(0);
        f.redirects.push(Hop { url: "http://example.com/".into(), status: 301 });
        assert!(ids(&f).is_empty());
    }

    #[test]
    fn security_headers_mixed_content_and_passwords() {
        let mut f = good();
        f.headers.retain(|(k, _)| k == "Content-Type");
        let got = ids(&f);
        for id in [
            "hsts-missing",
            "csp-missing",
            "x-content-type-options-missing",
            "frame-protection-missing",
            "referrer-policy-missing",
        ] {
            assert!(got.iter().any(|g| g == id), "{id} in {got:?}");
        }
        // frame-ancestors in a CSP protects too; HSTS with max-age=0 is none.
        let mut f = good();
        f.headers.retain(|(k, _)| k != "X-Frame-Options");
        f.headers.push(("content-security-policy".into(), "frame-ancestors 'self'".into()));
        f.headers.retain(|(k, _)| k != "Strict-Transport-Security");
        f.headers.push(("strict-transport-security".into(), "max-age=0".into()));
        assert_eq!(ids(&f), ["hsts-missing"]);
        // Plain http: no HSTS check, a password form is critical.
        let mut f = good();
        f.url = "http://example.com/login".into();
        f.final_url = f.url.clone();
        f.headers.retain(|(k, _)| k != "Strict-Transport-Security");
        col(&mut f).https = false;
        col(&mut f).insecure_password_forms =
            vec![InsecureForm { selector: Some("#login".into()), action: "http://example.com/login".into() }];
        let c = check_page(&f, &Thresholds::default());
        assert_eq!(c.findings.iter().map(|x| x.id.as_str()).collect::<Vec<_>>(), ["password-over-http"]);
        assert!(!c.outcomes.iter().any(|o| o.id == "hsts-missing"));
        let mut f = good();
        col(&mut f).mixed_content = vec![MixedContent {
            url: "http://cdn.example.com/a.js".into(),
            kind: "script".into(),
            selector: Some("script:nth-of-type(2)".into()),
        }];
        assert_eq!(ids(&f), ["mixed-content"]);
    }

    #[test]
    fn console_errors_failed_requests_and_broken_links() {
        let mut f = good();
        f.console_errors = vec![
            ConsoleMessage {
                source: "network".into(),
                text: "Failed to load resource: 404".into(),
                url: None,
                line: None,
            },
            ConsoleMessage {
                source: "exception".into(),
                text: "TypeError: x is undefined".into(),
                url: Some("https://example.com/app.js".into()),
                line: Some(3),
            },
        ];
        f.failed_requests = vec![FailedRequest {
            url: "https://example.com/a.png".into(),
            resource_type: Some("Image".into()),
            status: Some(404),
            error: None,
        }];
        f.links = Some(LinkReport {
            links: vec![
                LinkCheck {
                    url: "https://example.com/gone".into(),
                    same_site: true,
                    status: Some(404),
                    final_url: None,
                    redirects: 0,
                    method: "GET".into(),
                    verdict: LinkVerdict::Broken,
                    error: Some("HTTP 404".into()),
                    elapsed_ms: 5,
                },
                LinkCheck {
                    url: "https://x.example/".into(),
                    same_site: false,
                    status: Some(403),
                    final_url: None,
                    redirects: 0,
                    method: "GET".into(),
                    verdict: LinkVerdict::Restricted,
                    error: Some("HTTP 403".into()),
                    elapsed_ms: 5,
                },
            ],
            found: 2,
            over_limit: 0,
        });
        let c = check_page(&f, &Thresholds::default());
        let find = |id: &str| c.findings.iter().find(|x| x.id == id).unwrap();
        assert_eq!(find("console-errors").occurrences, 1, "network errors count as failed requests");
        assert_eq!(find("console-errors").evidence.value.as_deref(), Some("TypeError: x is undefined (line 3)"));
        assert_eq!(find("failed-requests").evidence.url, "https://example.com/a.png");
        assert_eq!(find("broken-links").occurrences, 1, "a 403 is restricted, not broken");
        assert!(find("broken-links").evidence.value.as_deref().unwrap().contains("/gone → HTTP 404"));
    }

    #[test]
    fn axe_violations_become_findings_by_impact() {
        let v = |id: &str, impact: &str, nodes: u32| AxeViolation {
            id: id.into(),
            impact: Some(impact.into()),
            help: format!("{id} help"),
            description: format!("{id} description"),
            help_url: String::new(),
            tags: vec![],
            node_count: nodes,
            nodes: (0..nodes.min(10))
                .map(|i| AxeNode {
                    target: vec![format!("#n{i}")],
                    html: "<img>".into(),
                    failure_summary: "Fix this".into(),
                })
                .collect(),
        };
        let mut f = good();
        f.axe = Some(AxeResults {
            passes: 10,
            violations: vec![
                v("image-alt", "critical", 12),
                v("color-contrast", "serious", 1),
                v("region", "moderate", 1),
                v("x", "minor", 1),
            ],
            ..AxeResults::default()
        });
        let c = check_page(&f, &Thresholds::default());
        let sev: Vec<(&str, Severity)> = c.findings.iter().map(|x| (x.id.as_str(), x.severity)).collect();
        assert_eq!(
            sev,
            [
                ("axe-image-alt", Severity::Critical),
                ("axe-color-contrast", Severity::Warning),
                ("axe-region", Severity::Warning),
                ("axe-x", Severity::Info)
            ]
        );
        let alt = &c.findings[0];
        assert_eq!((alt.occurrences, alt.more_evidence.len()), (12, 9));
        assert_eq!(alt.evidence.selector.as_deref(), Some("#n0"));
        assert_eq!(alt.explanation, "image-alt description. Fix this");
        f.axe = Some(AxeResults { error: Some("axe-core is not loaded in the page".into()), ..AxeResults::default() });
        assert_eq!(ids(&f), ["axe-not-run"]);
    }

    #[test]
    fn site_checks_cover_robots_sitemap_and_https() {
        let base = SiteFacts {
            start_url: "https://example.com/".into(),
            final_url: "https://example.com/".into(),
            robots_url: "https://example.com/robots.txt".into(),
            robots_status: Some(200),
            sitemap_found: true,
            ..SiteFacts::default()
        };
        assert!(check_site(&base).findings.is_empty());
        let site_ids =
            |s: &SiteFacts| check_site(s).findings.into_iter().map(|f| (f.id, f.severity)).collect::<Vec<_>>();
        let s = SiteFacts { robots_status: Some(404), sitemap_found: false, ..base.clone() };
        assert_eq!(
            site_ids(&s),
            [("robots-txt-missing".to_owned(), Severity::Info), ("sitemap-missing".to_owned(), Severity::Info)]
        );
        let s = SiteFacts { robots_status: Some(503), ..base.clone() };
        assert_eq!(site_ids(&s), [("robots-txt-unreachable".to_owned(), Severity::Warning)]);
        let s = SiteFacts { robots_status: None, robots_error: Some("timed out".into()), ..base.clone() };
        assert_eq!(site_ids(&s), [("robots-txt-unreachable".to_owned(), Severity::Warning)]);
        // http → https redirect of the start page counts as https.
        let s = SiteFacts { start_url: "http://example.com/".into(), ..base.clone() };
        assert!(check_site(&s).findings.is_empty());
        let s = SiteFacts { final_url: "http://example.com/".into(), ..base };
        assert_eq!(site_ids(&s), [("no-https".to_owned(), Severity::Critical)]);
    }

    #[test]
    fn every_check_id_is_defined_once() {
        let mut seen = std::collections::HashSet::new();
        for c in CHECKS {
            assert!(seen.insert(c.id), "{} twice", c.id);
        }
    }
}
