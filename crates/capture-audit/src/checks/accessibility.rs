//! Accessibility: axe-core's violations as findings, weighted by impact.

use super::ctx::{Ctx, MAX_EVIDENCE};
use super::findings::{Category, CheckOutcome, Evidence, Finding, Severity};
use crate::collect::AxeResults;

/// Weight of an axe rule by impact (Lighthouse's accessibility weights).
pub fn axe_weight(impact: Option<&str>) -> u32 {
    match impact {
        Some("critical") => 10,
        Some("serious") => 7,
        Some("moderate") => 3,
        Some("minor") => 1,
        _ => 3,
    }
}

pub(super) fn check_axe(cx: &mut Ctx<'_>, axe: Option<&AxeResults>) {
    let Some(axe) = axe else { return };
    if let Some(e) = &axe.error {
        cx.fail(
            "axe-not-run",
            Severity::Info,
            "The accessibility check could not run".into(),
            "axe-core could not check this page, so accessibility is not scored for it.".into(),
            vec![Evidence { url: cx.url.to_owned(), value: Some(e.clone()), ..Evidence::default() }],
            1,
        );
        return;
    }
    let url = cx.url.to_owned();
    for v in &axe.violations {
        let severity = match v.impact.as_deref() {
            Some("critical") => Severity::Critical,
            Some("serious") | Some("moderate") => Severity::Warning,
            _ => Severity::Info,
        };
        let evidence: Vec<Evidence> = v
            .nodes
            .iter()
            .map(|n| Evidence {
                url: url.clone(),
                selector: Some(n.target.join(" ")).filter(|s| !s.is_empty()),
                value: Some(n.html.clone()).filter(|s| !s.is_empty()),
                expected: None,
            })
            .collect();
        let id = format!("axe-{}", v.id);
        cx.out.outcomes.push(CheckOutcome {
            id: id.clone(),
            category: Category::Accessibility,
            weight: axe_weight(v.impact.as_deref()),
            passed: false,
        });
        let mut evidence =
            if evidence.is_empty() { vec![Evidence { url: url.clone(), ..Evidence::default() }] } else { evidence };
        evidence.truncate(MAX_EVIDENCE);
        let first = evidence.remove(0);
        let explanation = match v.nodes.first().map(|n| n.failure_summary.trim()).filter(|s| !s.is_empty()) {
            Some(fix) => format!("{} {}", ensure_period(&v.description), clip_words(fix, 300)),
            None => ensure_period(&v.description),
        };
        cx.out.findings.push(Finding {
            id,
            category: Category::Accessibility,
            severity,
            title: v.help.clone(),
            explanation,
            evidence: first,
            more_evidence: evidence,
            occurrences: v.node_count.max(1),
        });
    }
}

fn ensure_period(s: &str) -> String {
    let s = s.trim();
    if s.ends_with(['.', '!', '?']) { s.to_owned() } else { format!("{s}.") }
}

fn clip_words(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::collect::clip(&s, max)
}
