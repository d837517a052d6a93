//! How the page is loaded and shown: when navigation counts as finished, the region captured,
//! the position the page sees and the CSS media type.

use serde::{Deserialize, Serialize};

#[cfg(feature = "schema")]
use super::bounds;

/// When navigation counts as finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum WaitUntil {
    Networkidle,
    Load,
    Domcontentloaded,
    None,
}

/// A region of the page in CSS pixels (`clip`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Clip {
    /// Left edge, from the page's (or with fullPage the document's) left.
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = bounds::CLIP_MAX)))]
    pub x: f64,
    /// Top edge.
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = bounds::CLIP_MAX)))]
    pub y: f64,
    /// Width, at least 1.
    #[cfg_attr(feature = "schema", schemars(range(min = 1.0, max = bounds::CLIP_MAX)))]
    pub width: f64,
    /// Height, at least 1.
    #[cfg_attr(feature = "schema", schemars(range(min = 1.0, max = bounds::CLIP_MAX)))]
    pub height: f64,
}

/// A position the page's `navigator.geolocation` reports (`geolocation`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Geolocation {
    /// Degrees north, -90 to 90.
    #[cfg_attr(feature = "schema", schemars(range(min = -90.0, max = 90.0)))]
    pub latitude: f64,
    /// Degrees east, -180 to 180.
    #[cfg_attr(feature = "schema", schemars(range(min = -180.0, max = 180.0)))]
    pub longitude: f64,
    /// Accuracy in metres (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 100000.0)))]
    pub accuracy: Option<f64>,
}

/// The CSS media type the page is rendered for (`mediaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MediaType {
    #[default]
    Screen,
    Print,
}
