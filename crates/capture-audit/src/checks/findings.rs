//! What the checks produce: categories, severities, findings with their evidence, and the
//! pass/fail outcomes the scores are made from.

use serde::{Deserialize, Serialize};

/// Report categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Speed and stability.
    Performance,
    /// Search engines and sharing.
    Seo,
    /// axe-core's rules.
    Accessibility,
    /// Errors, requests, redirects.
    BestPractices,
    /// HTTPS and security headers (scored with best practices).
    Security,
}

impl Category {
    /// A heading for the report.
    pub fn label(self) -> &'static str {
        match self {
            Category::Performance => "Performance",
            Category::Seo => "SEO",
            Category::Accessibility => "Accessibility",
            Category::BestPractices => "Best practices",
            Category::Security => "Security",
        }
    }
}

/// How urgent a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Broken for visitors or search engines; fix first.
    Critical,
    /// Costs visitors, rankings or safety.
    Warning,
    /// Worth knowing; often a quick win.
    Info,
}

impl Severity {
    /// A heading for the report.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Critical => "Critical",
            Severity::Warning => "Warning",
            Severity::Info => "Info",
        }
    }
}

/// Where and what was measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The page (or resource) the evidence is about.
    pub url: String,
    /// The element, as a CSS selector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// What was measured or found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What a good page has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
}

/// One problem, with evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Stable check id (`title-missing`, `axe-color-contrast`, …).
    pub id: String,
    /// Category.
    pub category: Category,
    /// Severity.
    pub severity: Severity,
    /// One line.
    pub title: String,
    /// One or two sentences a site owner understands, with how to fix it.
    pub explanation: String,
    /// The first piece of evidence.
    pub evidence: Evidence,
    /// Up to nine more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_evidence: Vec<Evidence>,
    /// How many times it occurs on the page (≥ 1).
    pub occurrences: u32,
}

/// A check's pass/fail result, for the scores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    /// Check id.
    pub id: String,
    /// Category it scores in.
    pub category: Category,
    /// Weight in its category.
    pub weight: u32,
    /// Passed.
    pub passed: bool,
}

/// Findings and outcomes of one page (or of the site).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// Pass/fail of each check that applied.
    pub outcomes: Vec<CheckOutcome>,
}
