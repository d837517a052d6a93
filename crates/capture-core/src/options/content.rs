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
    /// Most characters of each form's text (front matter aside), cut after a whole line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<u64>,
    /// The character of the text the job's page starts at (a previous job's `nextFrom`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from: u64,
}

impl ContentSettings {
    /// The forms kept beside a job's own file, whose format is `own` (a text form itself, or
    /// None for an image): every form asked for but that one, in the request's order.
    pub fn beside(&self, own: Option<ContentFormat>) -> Vec<ContentFormat> {
        self.formats.iter().copied().filter(|f| Some(*f) != own).collect()
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Most characters `maxChars` may ask for, and where `from` may start.
pub const MAX_CHARS_MAX: u64 = 10_000_000;

/// A page of a text: the characters `from`.. within `max`, cut after the last line break that
/// fits, so a line (a table row, a list item, a heading) is never split across two pages. Only
/// a single line longer than `max` is cut inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPage<'a> {
    pub text: &'a str,
    /// Where this page starts, in characters (clamped to the text's length).
    pub from: u64,
    /// Where the next page starts; None when this one reaches the end.
    pub next_from: Option<u64>,
    /// Characters in the whole text.
    pub total_chars: u64,
}

/// The page of `whole` that starts at character `from` and holds at most `max` characters
/// (all the rest when `max` is None). See [`TextPage`].
pub fn page_text(whole: &str, from: u64, max: Option<u64>) -> TextPage<'_> {
    let total = whole.chars().count() as u64;
    let from = from.min(total);
    let start = whole.char_indices().nth(from as usize).map_or(whole.len(), |(i, _)| i);
    let rest = &whole[start..];
    let max = max.unwrap_or(u64::MAX);
    let end = match rest.char_indices().nth(usize::try_from(max).unwrap_or(usize::MAX)) {
        // All of the rest fits.
        None => rest.len(),
        Some((cut, _)) => match rest[..cut].rfind('\n') {
            Some(nl) => nl + 1,
            None => cut,
        },
    };
    let text = &rest[..end];
    let next = from + text.chars().count() as u64;
    TextPage { text, from, next_from: (next < total).then_some(next), total_chars: total }
}

/// `extract`: fields read from the page by rules (CSS selectors) or, with `prompt`, by the
/// operator's language model; `schema` (JSON Schema) validates what comes back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtractIn {
    /// The fields to read, each by a rule: `{"price": {"selector": ".price", "type": "number"}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<std::collections::BTreeMap<String, ExtractRule>>,
    /// JSON Schema (draft 2020-12 unless it says `$schema`) the data must match; a failure
    /// fails the job naming the JSON path. No remote or file references are loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Map<String, serde_json::Value>>"))]
    pub schema: Option<serde_json::Value>,
    /// Ask the operator's language model (`CAPTURE_LLM_URL`) to read the fields `schema`
    /// describes from the page's Markdown, following this instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// How one field is read: the first element (or, with `all`, every element) `selector`
/// matches, its text or `attr`, converted to `type`; `fallback` rules are tried in order when
/// it matches nothing. A field that matches nothing is null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtractRule {
    /// A CSS selector.
    pub selector: String,
    /// Read this attribute instead of the text (`href`, `content`, `datetime`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attr: Option<String>,
    /// string (the default), number, boolean, url (absolute), date (ISO 8601), html or markdown.
    #[serde(default, rename = "type", skip_serializing_if = "FieldType::is_string")]
    pub kind: FieldType,
    /// Every match, as a list (empty when none matches), instead of the first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// Rules tried in order when this one matches nothing (each a rule of its own, without
    /// fallbacks; at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>"))]
    pub fallback: Vec<ExtractRule>,
}

/// What an extracted value becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// The text, white space collapsed.
    #[default]
    String,
    /// The first number in the text (`$1,299.00` → 1299); null when there is none.
    Number,
    /// true for `true`, `yes`, `on`, `1` or an attribute present without a value; false for
    /// `false`, `no`, `off`, `0`; null otherwise.
    Boolean,
    /// An absolute URL, resolved against the page (null when it does not parse).
    Url,
    /// An ISO 8601 time (null when it does not parse).
    Date,
    /// The element's HTML (scripts removed).
    Html,
    /// The element as Markdown.
    Markdown,
}

impl FieldType {
    fn is_string(&self) -> bool {
        *self == FieldType::String
    }
}

/// Most fields of one `extract`, fallbacks of one rule, and characters of a prompt.
pub const EXTRACT_FIELDS_MAX: usize = 100;
pub const EXTRACT_FALLBACKS_MAX: usize = 10;
pub const EXTRACT_PROMPT_MAX: usize = 4_000;
/// Most bytes of a schema, as JSON.
pub const EXTRACT_SCHEMA_MAX: usize = 65_536;

/// A checked `extract`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtractSettings {
    /// The rules, by field (empty with a prompt).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub rules: std::collections::BTreeMap<String, ExtractRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl ExtractIn {
    /// Check it: rules or a prompt (not both), each rule's selector and attribute within their
    /// bounds, and a schema that is valid JSON Schema.
    pub fn check(self) -> Result<ExtractSettings, crate::FieldError> {
        use crate::FieldError;
        let rules = self.rules.unwrap_or_default();
        match (rules.is_empty(), &self.prompt) {
            (true, None) => return Err(FieldError::new("extract", "needs rules or a prompt")),
            (false, Some(_)) => {
                return Err(FieldError::new("extract.prompt", "cannot be combined with rules: give one or the other"));
            }
            _ => {}
        }
        if rules.len() > EXTRACT_FIELDS_MAX {
            return Err(FieldError::new("extract.rules", "must have at most 100 fields"));
        }
        for (name, rule) in &rules {
            let ok = !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(FieldError::new(
                    format!("extract.rules.{name}"),
                    "a field's name must be 1 to 64 of A-Z a-z 0-9 _ -",
                ));
            }
            check_rule(&format!("extract.rules.{name}"), rule, 0)?;
        }
        if let Some(p) = &self.prompt
            && (p.trim().is_empty() || p.chars().count() > EXTRACT_PROMPT_MAX)
        {
            return Err(FieldError::new("extract.prompt", "must be 1 to 4000 characters"));
        }
        if let Some(schema) = &self.schema {
            if serde_json::to_string(schema).map_or(0, |s| s.len()) > EXTRACT_SCHEMA_MAX {
                return Err(FieldError::new("extract.schema", "must be at most 65536 bytes of JSON"));
            }
            compile_schema(schema).map_err(|e| FieldError::new("extract.schema", e))?;
        }
        Ok(ExtractSettings { rules, schema: self.schema, prompt: self.prompt })
    }
}

fn check_rule(field: &str, rule: &ExtractRule, depth: usize) -> Result<(), crate::FieldError> {
    use crate::FieldError;
    if rule.selector.trim().is_empty() || rule.selector.len() > super::bounds::SELECTOR_MAX {
        return Err(FieldError::new(format!("{field}.selector"), "must be a CSS selector of 1 to 1024 bytes"));
    }
    if let Some(a) = &rule.attr {
        let ok = !a.is_empty()
            && a.len() <= 128
            && a.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'));
        if !ok {
            return Err(FieldError::new(
                format!("{field}.attr"),
                "must be an attribute name (1 to 128 of A-Z a-z 0-9 - _ : .)",
            ));
        }
    }
    if depth > 0 && !rule.fallback.is_empty() {
        return Err(FieldError::new(format!("{field}.fallback"), "a fallback rule has no fallbacks of its own"));
    }
    if rule.fallback.len() > EXTRACT_FALLBACKS_MAX {
        return Err(FieldError::new(format!("{field}.fallback"), "must list at most 10 rules"));
    }
    for (i, f) in rule.fallback.iter().enumerate() {
        check_rule(&format!("{field}.fallback[{i}]"), f, depth + 1)?;
    }
    Ok(())
}

/// A loader that loads nothing: a schema's `$ref` to a file or a URL is refused, never read.
struct NoLoader;

impl boon::UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
        Err(format!("references outside the schema are not loaded ({url})").into())
    }
}

/// The schema, compiled (meta-schema checked) with nothing loaded from outside it.
fn compile_schema(schema: &serde_json::Value) -> Result<(boon::Schemas, boon::SchemaIndex), String> {
    const LOC: &str = "urn:capture:extract-schema";
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    compiler.use_loader(Box::new(NoLoader));
    compiler.add_resource(LOC, schema.clone()).map_err(|e| format!("is not valid JSON Schema: {e}"))?;
    let index = compiler.compile(LOC, &mut schemas).map_err(|e| format!("is not valid JSON Schema: {e:#}"))?;
    Ok((schemas, index))
}

impl ExtractSettings {
    /// Whether `data` matches the schema (true without one); the error names the JSON path
    /// (`/price`) of the first place it does not, and why.
    pub fn validate(&self, data: &serde_json::Value) -> Result<(), String> {
        let Some(schema) = &self.schema else { return Ok(()) };
        let (schemas, index) = compile_schema(schema)?;
        match schemas.validate(data, index) {
            Ok(()) => Ok(()),
            Err(e) => {
                // The deepest first cause says where and why.
                let mut leaf = &e;
                while let Some(c) = leaf.causes.first() {
                    leaf = c;
                }
                let at = leaf.instance_location.to_string();
                Err(format!("{}: {}", if at.is_empty() { "/" } else { at.as_str() }, leaf.kind))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_page_of_text_ends_after_a_whole_line_and_says_where_the_rest_starts() {
        let whole = "| a | b |\n| 1 | 2 |\n| 3 | 4 |\n";
        let p = page_text(whole, 0, Some(15));
        assert_eq!(p, TextPage { text: "| a | b |\n", from: 0, next_from: Some(10), total_chars: 30 });
        let p = page_text(whole, 10, Some(25));
        assert_eq!(p, TextPage { text: "| 1 | 2 |\n| 3 | 4 |\n", from: 10, next_from: None, total_chars: 30 });
        // A single line longer than the page is cut inside; characters, not bytes.
        let p = page_text("ééééé", 1, Some(2));
        assert_eq!(p, TextPage { text: "éé", from: 1, next_from: Some(3), total_chars: 5 });
        // Past the end: nothing, and no next page.
        assert_eq!(page_text("abc", 9, Some(2)), TextPage { text: "", from: 3, next_from: None, total_chars: 3 });
        assert_eq!(page_text("abc", 0, None).text, "abc");
        // Read page by page, the pages add up to the whole.
        let long: String = (0..200).map(|i| format!("| row {i} | {} |\n", "x".repeat(i % 7))).collect();
        let (mut from, mut joined) = (Some(0), String::new());
        while let Some(f) = from {
            let p = page_text(&long, f, Some(100));
            assert!(p.text.chars().count() <= 100);
            assert!(p.text.ends_with('\n'), "{:?}", p.text);
            joined.push_str(p.text);
            from = p.next_from;
        }
        assert_eq!(joined, long);
    }

    fn extract(v: serde_json::Value) -> Result<ExtractSettings, crate::FieldError> {
        serde_json::from_value::<ExtractIn>(v).unwrap().check()
    }

    #[test]
    fn extract_names_the_field_it_refuses() {
        let e = extract(json!({})).unwrap_err();
        assert_eq!((e.field.as_str(), e.reason.as_str()), ("extract", "needs rules or a prompt"));
        let e = extract(json!({"rules": {"price": {"selector": " "}}})).unwrap_err();
        assert_eq!(e.field, "extract.rules.price.selector");
        let e =
            extract(json!({"rules": {"price": {"selector": ".p", "fallback": [{"selector": ".q", "attr": "a b"}]}}}))
                .unwrap_err();
        assert_eq!(e.field, "extract.rules.price.fallback[0].attr");
        let e = extract(json!({"rules": {"bad name": {"selector": ".p"}}})).unwrap_err();
        assert_eq!(e.field, "extract.rules.bad name");
        let e = extract(json!({"rules": {"p": {"selector": ".p"}}, "prompt": "price"})).unwrap_err();
        assert_eq!(e.field, "extract.prompt");
        // A schema that is not valid JSON Schema.
        let e = extract(json!({"rules": {"p": {"selector": ".p"}}, "schema": {"type": "money"}})).unwrap_err();
        assert_eq!(e.field, "extract.schema");
        assert!(e.reason.starts_with("is not valid JSON Schema"), "{}", e.reason);
        let e = extract(json!({"rules": {"p": {"selector": ".p"}}, "schema": {"minimum": "ten"}})).unwrap_err();
        assert_eq!(e.field, "extract.schema");
        // An unknown type is refused by the wire type.
        assert!(
            serde_json::from_value::<ExtractIn>(json!({"rules": {"p": {"selector": ".p", "type": "money"}}})).is_err()
        );
    }

    #[test]
    fn a_schema_reference_outside_it_is_never_loaded() {
        for r in ["file:///etc/passwd", "http://127.0.0.1:1/schema.json", "https://example.com/s.json"] {
            let e = extract(json!({"rules": {"p": {"selector": ".p"}}, "schema": {"$ref": r}})).unwrap_err();
            assert_eq!(e.field, "extract.schema", "{r}");
            assert!(e.reason.contains("references outside the schema are not loaded"), "{r}: {}", e.reason);
        }
        // The drafts' own meta-schemas are built in, not loaded.
        let d7 = extract(json!({"rules": {"p": {"selector": ".p"}}, "schema": {
            "$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}}));
        assert!(d7.is_ok(), "{d7:?}");
        // A reference inside it works.
        let ok = extract(json!({"rules": {"p": {"selector": ".p"}}, "schema": {
            "$defs": {"price": {"type": "number"}}, "type": "object", "properties": {"p": {"$ref": "#/$defs/price"}}}}));
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn data_that_does_not_match_names_its_json_path() {
        let x = extract(json!({"rules": {"p": {"selector": ".p"}}, "schema": {
            "type": "object", "required": ["price"],
            "properties": {"price": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}}}}))
        .unwrap();
        assert_eq!(x.validate(&json!({"price": 12.5, "tags": ["a"]})), Ok(()));
        let e = x.validate(&json!({"price": "12", "tags": ["a"]})).unwrap_err();
        assert!(e.starts_with("/price: "), "{e}");
        let e = x.validate(&json!({"price": 1, "tags": ["a", 2]})).unwrap_err();
        assert!(e.starts_with("/tags/1: "), "{e}");
        let e = x.validate(&json!({"tags": []})).unwrap_err();
        assert!(e.starts_with("/: ") && e.contains("price"), "{e}");
        // Without a schema anything goes.
        assert_eq!(ExtractSettings::default().validate(&json!(null)), Ok(()));
    }
}
