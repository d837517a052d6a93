//! The page as text (issue 41): which content a capture returns beside (or instead of) its
//! pixels, and how much of the page it keeps.

use serde::{Deserialize, Serialize};

/// A text form of the rendered page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ContentFormat {
    /// GitHub-flavoured Markdown with YAML front matter.
    Markdown,
    /// The visible text, block by block.
    Text,
    /// The rendered DOM: scripts, styles and hidden elements removed, URLs absolute.
    Html,
}

impl ContentFormat {
    /// Name on the wire and file extension.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentFormat::Markdown => "markdown",
            ContentFormat::Text => "text",
            ContentFormat::Html => "html",
        }
    }

    /// The file's extension.
    pub fn extension(self) -> &'static str {
        match self {
            ContentFormat::Markdown => "md",
            ContentFormat::Text => "txt",
            ContentFormat::Html => "html",
        }
    }
}

/// What the content of a capture keeps: the whole page, its main content (Readability), or
/// the elements some selectors name, less those others name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentSettings {
    /// The forms wanted (at least one).
    pub formats: Vec<ContentFormat>,
    /// Keep the article only (navigation, footers, sidebars and comments left out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub main_content: bool,
    /// Keep only the elements these CSS selectors match (all of the page when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_selectors: Vec<String>,
    /// Leave out the elements these CSS selectors match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_selectors: Vec<String>,
}
