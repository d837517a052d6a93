//! The wire types of render-link keys (`/v1/render-keys`).

use capture_core::{FieldError, RenderKeyId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

/// `POST /v1/render-keys`.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenderKeyIn {
    /// What the key is for (`blog images`), 1 to 100 characters.
    pub name: String,
}

impl Checked for RenderKeyIn {
    type Valid = String;
    fn check(self) -> Result<String, FieldError> {
        let name = self.name.trim().to_string();
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(FieldError::new("name", "must be 1 to 100 characters"));
        }
        Ok(name)
    }
}

/// A render-link key as listed (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenderKey {
    /// The id a link names in `key`.
    pub id: RenderKeyId,
    pub name: String,
    pub created_at: String,
}

/// A new key, with its signing secret: shown this once.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenderKeyCreated {
    pub id: RenderKeyId,
    pub name: String,
    /// The HMAC-SHA256 key that signs links (`rks_…`). Keep it on your server; it is not
    /// shown again.
    pub secret: String,
    pub created_at: String,
}

list_type! {
    /// The caller's keys in force.
    pub type RenderKeyList = Collection<RenderKey>;
    schemas: both;
}

/// A render link's capture that did not finish within the link's wait: follow the job.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenderPending {
    /// The job (`scr_…`); `GET /v1/screenshot/{id}` with an API key follows it, and the same
    /// link answers the file once it is done.
    pub id: String,
    pub status: capture_core::JobStatus,
}
