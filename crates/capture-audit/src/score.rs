//! Category scores, 0–100.
//!
//! **Performance** works like Lighthouse's: each metric becomes a 0–1 score on a log-normal
//! curve fixed by two control points — the value that scores 0.9 (`p10`, roughly the best 10 %
//! of real sites) and the value that scores 0.5 (`median`) — and the page's score is the
//! weighted mean of the metric scores. Lighthouse's desktop control points are used (the
//! audit loads the page unthrottled, like Lighthouse's desktop preset); Speed Index, which
//! needs a filmstrip, is replaced by TTFB with the thresholds web.dev gives for it:
//!
//! | metric | p10 (→ 90) | median (→ 50) | weight |
//! |---|---|---|---|
//! | First Contentful Paint | 934 ms | 1600 ms | 10 |
//! | Largest Contentful Paint | 1200 ms | 2400 ms | 25 |
//! | Total Blocking Time | 150 ms | 350 ms | 30 |
//! | Cumulative Layout Shift | 0.1 | 0.25 | 25 |
//! | Time to First Byte | 800 ms | 1800 ms | 10 |
//!
//! A metric the page did not yield (no LCP candidate, observers not installed) is left out and
//! the other weights are scaled up; with none at all the score is absent.
//!
//! **SEO, accessibility, best practices**: weighted pass/fail, `100 × Σ weight of passed
//! checks ÷ Σ weight of applicable checks`, rounded. The weights are in
//! [`crate::checks::CHECKS`]; security checks count in best practices; site checks
//! (robots.txt, sitemap, HTTPS) count in every page's scores. Accessibility weighs every axe
//! rule that ran on the page by its impact (critical 10, serious 7, moderate 3, minor 1), both
//! the passed and the violated ones. A category with no applicable check has no score.
//!
//! **A site** (full-site audit): the mean of the page scores per category, rounded; pages that
//! failed to load score 0 in SEO (their `http-status` check failed) and have no other scores.

use serde::{Deserialize, Serialize};

use crate::checks::{Category, CheckOutcome, axe_weight};
use crate::collect::{AxeResults, PageCollection};

/// The four scores (None: nothing to score).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    /// Performance.
    pub performance: Option<u8>,
    /// SEO.
    pub seo: Option<u8>,
    /// Accessibility.
    pub accessibility: Option<u8>,
    /// Best practices (security included).
    pub best_practices: Option<u8>,
}

/// A log-normal scoring curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Curve {
    /// The value scoring 0.9.
    pub p10: f64,
    /// The value scoring 0.5.
    pub median: f64,
}

/// One performance metric's curve and weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricDef {
    /// `fcp`, `lcp`, `tbt`, `cls`, `ttfb`.
    pub id: &'static str,
    /// Its curve.
    pub curve: Curve,
    /// Its weight.
    pub weight: f64,
}

/// The performance metrics, curves and weights (see the module docs).
pub const PERFORMANCE_METRICS: [MetricDef; 5] = [
    MetricDef { id: "fcp", curve: Curve { p10: 934.0, median: 1600.0 }, weight: 10.0 },
    MetricDef { id: "lcp", curve: Curve { p10: 1200.0, median: 2400.0 }, weight: 25.0 },
    MetricDef { id: "tbt", curve: Curve { p10: 150.0, median: 350.0 }, weight: 30.0 },
    MetricDef { id: "cls", curve: Curve { p10: 0.1, median: 0.25 }, weight: 25.0 },
    MetricDef { id: "ttfb", curve: Curve { p10: 800.0, median: 1800.0 }, weight: 10.0 },
];

/// Abramowitz–Stegun 7.1.26, the approximation Lighthouse uses (max error 1.5e-7).
fn erf(x: f64) -> f64 {
    let sign = x.signum();
    let x = x.abs();
    let (a1, a2, a3, a4, a5, p) = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, 0.3275911);
    let t = 1.0 / (1.0 + p * x);
    let y = t * (a1 + t * (a2 + t * (a3 + t * (a4 + t * a5))));
    sign * (1.0 - y * (-x * x).exp())
}

/// Lighthouse's `getLogNormalScore`: 1 at 0, 0.9 at `p10`, 0.5 at `median`, towards 0 above,
/// clamped so a value never lands in a better band than its control points allow.
pub fn log_normal_score(curve: Curve, value: f64) -> f64 {
    if !value.is_finite() {
        return 0.0;
    }
    if value <= 0.0 {
        return 1.0;
    }
    // erfc⁻¹(0.2): puts p10 at the 10th percentile.
    const INVERSE_ERFC_ONE_FIFTH: f64 = 0.906_193_802_436_823_2;
    let x_log_ratio = (value / curve.median).max(f64::MIN_POSITIVE).ln();
    let p10_log_ratio = -(curve.p10 / curve.median).max(f64::MIN_POSITIVE).ln();
    let standardized = x_log_ratio * INVERSE_ERFC_ONE_FIFTH / p10_log_ratio;
    let complementary = (1.0 - erf(standardized)) / 2.0;
    if value <= curve.p10 {
        complementary.clamp(0.9, 1.0)
    } else if value <= curve.median {
        complementary.clamp(0.5, 0.899_999_999_999_999_9)
    } else {
        complementary.clamp(0.0, 0.499_999_999_999_999_94)
    }
}

/// One metric's value and score, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricScore {
    /// `fcp`, `lcp`, `tbt`, `cls`, `ttfb`.
    pub id: String,
    /// Measured value (ms, or unitless for CLS).
    pub value: f64,
    /// 0–100.
    pub score: u8,
    /// Its weight.
    pub weight: f64,
}

/// The metric values the performance score uses, from a page's collection.
pub fn metric_values(c: &PageCollection) -> Vec<(&'static str, f64)> {
    let v = &c.vitals;
    let mut out = Vec::new();
    let mut push = |id, val: Option<f64>| {
        if let Some(x) = val.filter(|x| x.is_finite() && *x >= 0.0) {
            out.push((id, x));
        }
    };
    push("fcp", v.fcp_ms);
    push("lcp", v.lcp_ms);
    push("tbt", if v.observers_installed { v.tbt_ms } else { None });
    push("cls", if v.observers_installed { v.cls } else { None });
    push("ttfb", c.navigation.as_ref().map(|n| n.ttfb_ms));
    out
}

/// The performance score and each metric's share of it.
pub fn performance(c: &PageCollection) -> (Option<u8>, Vec<MetricScore>) {
    let values = metric_values(c);
    let mut parts = Vec::new();
    let (mut sum, mut weights) = (0.0, 0.0);
    for def in PERFORMANCE_METRICS {
        let Some(&(_, value)) = values.iter().find(|(id, _)| *id == def.id) else { continue };
        let s = log_normal_score(def.curve, value);
        sum += s * def.weight;
        weights += def.weight;
        parts.push(MetricScore { id: def.id.to_owned(), value, score: (s * 100.0).round() as u8, weight: def.weight });
    }
    if weights == 0.0 {
        return (None, parts);
    }
    (Some((sum / weights * 100.0).round() as u8), parts)
}

fn weighted(outcomes: &[&CheckOutcome]) -> Option<u8> {
    let total: u32 = outcomes.iter().map(|o| o.weight).sum();
    if total == 0 {
        return None;
    }
    let passed: u32 = outcomes.iter().filter(|o| o.passed).map(|o| o.weight).sum();
    Some((100.0 * passed as f64 / total as f64).round() as u8)
}

/// A page's scores from its check outcomes (site outcomes included), axe results and collection.
pub fn page_scores(outcomes: &[CheckOutcome], axe: Option<&AxeResults>, collection: Option<&PageCollection>) -> Scores {
    let of =
        |cats: &[Category]| -> Vec<&CheckOutcome> { outcomes.iter().filter(|o| cats.contains(&o.category)).collect() };
    let accessibility = axe.filter(|a| a.error.is_none()).and_then(|a| {
        let p = a.passed_impacts;
        let passed_from_impacts = p.critical * 10 + p.serious * 7 + p.moderate * 3 + p.minor;
        // Older runners report only a count of passes: weigh them as moderate.
        let counted = p.critical + p.serious + p.moderate + p.minor;
        let passed = passed_from_impacts + a.passes.saturating_sub(counted) * 3;
        let failed: u32 = a.violations.iter().map(|v| axe_weight(v.impact.as_deref())).sum();
        (passed + failed > 0).then(|| (100.0 * passed as f64 / (passed + failed) as f64).round() as u8)
    });
    Scores {
        performance: collection.and_then(|c| performance(c).0),
        seo: weighted(&of(&[Category::Seo])),
        accessibility,
        best_practices: weighted(&of(&[Category::BestPractices, Category::Security])),
    }
}

/// A site's scores: the rounded mean of its pages' scores, per category.
pub fn site_scores(pages: &[Scores]) -> Scores {
    let mean = |f: &dyn Fn(&Scores) -> Option<u8>| {
        let v: Vec<f64> = pages.iter().filter_map(f).map(f64::from).collect();
        (!v.is_empty()).then(|| (v.iter().sum::<f64>() / v.len() as f64).round() as u8)
    };
    Scores {
        performance: mean(&|s| s.performance),
        seo: mean(&|s| s.seo),
        accessibility: mean(&|s| s.accessibility),
        best_practices: mean(&|s| s.best_practices),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{ImpactCounts, NavigationTiming, Vitals};

    #[test]
    fn the_curve_passes_through_its_control_points() {
        let c = Curve { p10: 1200.0, median: 2400.0 };
        assert!((log_normal_score(c, 1200.0) - 0.9).abs() < 1e-3);
        assert!((log_normal_score(c, 2400.0) - 0.5).abs() < 1e-6);
        assert_eq!(log_normal_score(c, 0.0), 1.0);
        assert!(log_normal_score(c, 100.0) > 0.99);
        assert!(log_normal_score(c, 10_000.0) < 0.05);
        // Monotone.
        let mut last = 1.0;
        for v in (0..100).map(|i| i as f64 * 100.0) {
            let s = log_normal_score(c, v);
            assert!(s <= last + 1e-12, "{v}");
            last = s;
        }
        assert_eq!(log_normal_score(c, f64::NAN), 0.0);
    }

    #[test]
    fn matches_lighthouse_for_known_values() {
        // Reference values printed by Lighthouse 13.5's own shared/statistics.js
        // (getLogNormalScore) for its desktop LCP and CLS curves.
        let lcp = Curve { p10: 1200.0, median: 2400.0 };
        assert!((log_normal_score(lcp, 1800.0) - 0.702_599_604_029_262_8).abs() < 1e-6);
        assert!((log_normal_score(lcp, 3500.0) - 0.242_721_501_039_666_94).abs() < 1e-6);
        let cls = Curve { p10: 0.1, median: 0.25 };
        assert!((log_normal_score(cls, 0.05) - 0.987_807_520_059_756_7).abs() < 1e-6);
        assert!((log_normal_score(cls, 0.2) - 0.622_515_855_651_008_6).abs() < 1e-6);
        assert!((log_normal_score(cls, 0.3) - 0.399_361_463_468_034_8).abs() < 1e-6);
    }

    fn collection(fcp: f64, lcp: f64, tbt: f64, cls: f64, ttfb: f64) -> PageCollection {
        PageCollection {
            navigation: Some(NavigationTiming { ttfb_ms: ttfb, ..NavigationTiming::default() }),
            vitals: Vitals {
                observers_installed: true,
                fcp_ms: Some(fcp),
                lcp_ms: Some(lcp),
                tbt_ms: Some(tbt),
                cls: Some(cls),
                ..Vitals::default()
            },
            ..PageCollection::default()
        }
    }

    #[test]
    fn a_fast_page_scores_high_and_a_slow_one_low() {
        assert_eq!(performance(&collection(300.0, 400.0, 0.0, 0.0, 50.0)).0, Some(100));
        let (s, parts) = performance(&collection(5000.0, 9000.0, 2000.0, 0.6, 3000.0));
        assert!(s.unwrap() < 10, "{s:?}");
        assert_eq!(parts.len(), 5);
        // Missing metrics are left out, not counted as zero.
        let mut c = collection(300.0, 400.0, 0.0, 0.0, 50.0);
        c.vitals.lcp_ms = None;
        assert_eq!(performance(&c).0, Some(100));
        assert_eq!(performance(&PageCollection::default()).0, None);
    }

    #[test]
    fn pass_fail_scores_are_weighted() {
        let o = |id: &str, category, weight, passed| CheckOutcome { id: id.into(), category, weight, passed };
        let outcomes = vec![
            o("a", Category::Seo, 10, true),
            o("b", Category::Seo, 10, false),
            o("c", Category::Security, 3, false),
            o("d", Category::BestPractices, 1, true),
        ];
        let s = page_scores(&outcomes, None, None);
        assert_eq!(s.seo, Some(50));
        assert_eq!(s.best_practices, Some(25));
        assert_eq!(s.accessibility, None);
        assert_eq!(s.performance, None);
    }

    #[test]
    fn accessibility_weighs_rules_by_impact() {
        let axe = AxeResults {
            passes: 10,
            passed_impacts: ImpactCounts { critical: 2, serious: 3, moderate: 4, minor: 1 },
            violations: vec![crate::collect::AxeViolation {
                id: "image-alt".into(),
                impact: Some("critical".into()),
                help: String::new(),
                description: String::new(),
                help_url: String::new(),
                tags: vec![],
                node_count: 1,
                nodes: vec![],
            }],
            ..AxeResults::default()
        };
        // passed 20+21+12+1 = 54, failed 10.
        assert_eq!(page_scores(&[], Some(&axe), None).accessibility, Some(84));
        let broken = AxeResults { error: Some("x".into()), ..AxeResults::default() };
        assert_eq!(page_scores(&[], Some(&broken), None).accessibility, None);
    }

    #[test]
    fn the_site_score_is_the_mean_of_pages() {
        let a = Scores { performance: Some(90), seo: Some(100), accessibility: None, best_practices: Some(50) };
        let b = Scores { performance: Some(71), seo: Some(0), accessibility: None, best_practices: None };
        let s = site_scores(&[a, b]);
        assert_eq!(s, Scores { performance: Some(81), seo: Some(50), accessibility: None, best_practices: Some(50) });
    }
}
