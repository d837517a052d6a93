//! The context a run of checks records its passes and findings in.

use super::defs::check_def;
use super::findings::{Category, CheckOutcome, Checked, Evidence, Finding, Severity};

pub(super) struct Ctx<'a> {
    pub(super) url: &'a str,
    pub(super) out: Checked,
}

/// At most this many pieces of evidence per finding.
pub const MAX_EVIDENCE: usize = 10;

impl Ctx<'_> {
    fn ev(&self) -> Evidence {
        Evidence { url: self.url.to_owned(), ..Evidence::default() }
    }

    fn outcome(&mut self, id: &str, passed: bool) {
        if let Some(d) = check_def(id) {
            self.out.outcomes.push(CheckOutcome { id: id.to_owned(), category: d.category, weight: d.weight, passed });
        }
    }

    pub(super) fn pass(&mut self, id: &str) {
        self.outcome(id, true);
    }

    /// Pass when `failed` is None, else record the finding.
    pub(super) fn check(&mut self, id: &str, failed: Option<(Severity, String, String, Vec<Evidence>, u32)>) {
        match failed {
            None => self.pass(id),
            Some((severity, title, explanation, evidence, occurrences)) => {
                self.fail(id, severity, title, explanation, evidence, occurrences)
            }
        }
    }

    pub(super) fn fail(
        &mut self,
        id: &str,
        severity: Severity,
        title: String,
        explanation: String,
        mut evidence: Vec<Evidence>,
        occurrences: u32,
    ) {
        let category = check_def(id).map(|d| d.category).unwrap_or(Category::BestPractices);
        self.outcome(id, false);
        if evidence.is_empty() {
            evidence.push(self.ev());
        }
        evidence.truncate(MAX_EVIDENCE);
        let first = evidence.remove(0);
        self.out.findings.push(Finding {
            id: id.to_owned(),
            category,
            severity,
            title,
            explanation,
            evidence: first,
            more_evidence: evidence,
            occurrences: occurrences.max(1),
        });
    }
}

pub(super) type Failure = Option<(Severity, String, String, Vec<Evidence>, u32)>;

pub(super) fn finish(mut cx: Ctx<'_>) -> Checked {
    cx.out.findings.sort_by_key(|f| f.severity);
    cx.out
}
