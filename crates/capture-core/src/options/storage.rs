//! Where a capture's file is also written (`storage`): the destination and its key template.

use serde::{Deserialize, Serialize};

use super::bounds;
use crate::error::FieldError;

/// Where a capture's file is also written (`storage`): one of the account's storage
/// destinations, under a key made from a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageTarget {
    /// The destination's id (`sd_…`).
    pub destination: String,
    /// The object key under the destination's prefix, a template of `{id}` (the job's id),
    /// `{date}` (YYYY-MM-DD, UTC, when the capture finished), `{ext}` (png, jpeg, webp, pdf,
    /// mp4, webm, gif, md, txt, html) and `{host}` (the page's host name); default `{id}.{ext}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = bounds::STORAGE_KEY_MAX), extend("examples" = ["captures/{date}/{host}-{id}.{ext}"])))]
    pub key: Option<String>,
}

/// The placeholders a `storage.key` template may hold.
pub const STORAGE_KEY_PLACEHOLDERS: [&str; 4] = ["id", "date", "ext", "host"];

impl StorageTarget {
    /// The template in force.
    pub fn template(&self) -> &str {
        self.key.as_deref().unwrap_or("{id}.{ext}")
    }

    /// The destination names an `sd_` id and the template is a safe relative key: known
    /// placeholders only, no empty, `.` or `..` segment, no leading `/`, printable, at most
    /// 512 bytes.
    pub fn check(self) -> Result<StorageTarget, FieldError> {
        if !crate::ids::looks_like(crate::ids::STORAGE_DESTINATION, &self.destination) {
            return Err(FieldError::new("storage.destination", "must be a storage destination id (sd_…)"));
        }
        if let Some(k) = &self.key {
            check_storage_key(k).map_err(|why| FieldError::new("storage.key", why))?;
        }
        Ok(self)
    }

    /// The object key for a job: the template with its placeholders filled in.
    pub fn render_key(&self, id: &str, date: &str, ext: &str, host: &str) -> String {
        let mut out = String::new();
        let mut rest = self.template();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}') else { break };
            match &rest[open + 1..open + close] {
                "id" => out.push_str(id),
                "date" => out.push_str(date),
                "ext" => out.push_str(ext),
                "host" => out.push_str(host),
                other => {
                    out.push('{');
                    out.push_str(other);
                    out.push('}');
                }
            }
            rest = &rest[open + close + 1..];
        }
        out.push_str(rest);
        out
    }
}

fn check_storage_key(k: &str) -> Result<(), &'static str> {
    if k.is_empty() || k.len() > bounds::STORAGE_KEY_MAX {
        return Err("must be 1 to 512 bytes");
    }
    if k.chars().any(|c| c.is_control() || c == '\\') {
        return Err("must not hold control characters or backslashes");
    }
    if k.starts_with('/') || k.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..") {
        return Err("must be a relative key without empty, '.' or '..' segments");
    }
    let mut rest = k;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err("has a '}' without its '{'");
        }
        let Some(close) = rest[open..].find('}') else { return Err("has a '{' without its '}'") };
        let name = &rest[open + 1..open + close];
        if !STORAGE_KEY_PLACEHOLDERS.contains(&name) {
            return Err("may only use the placeholders {id}, {date}, {ext} and {host}");
        }
        rest = &rest[open + close + 1..];
    }
    Ok(())
}
