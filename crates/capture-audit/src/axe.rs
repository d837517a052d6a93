//! axe-core, shipped inside the binary so website audits score accessibility on a default
//! install with nothing to set up.
//!
//! [`AXE_JS`] is the unmodified `axe.min.js` of the npm package `axe-core` ([`AXE_VERSION`]),
//! vendored under `vendor/axe-core/` beside its licence (MPL-2.0) and the notices of the code it
//! bundles; `vendor/axe-core/README.md` records where it came from and how to update it. The
//! server may replace it with another copy (`CAPTURE_AXE_PATH`); [`AxeSource`] says which one
//! is in use, for the logs, `/readyz` and the dashboard.

use std::path::{Path, PathBuf};

/// The vendored axe-core's version.
pub const AXE_VERSION: &str = "4.14.1";

/// The vendored `axe.min.js` (≈ 650 KB), evaluated in each audited page before [`crate::collect::AXE_RUN_JS`].
pub const AXE_JS: &str = include_str!("../vendor/axe-core/axe.min.js");

/// axe-core's licence (Mozilla Public License 2.0), shipped with it.
pub const AXE_LICENSE: &str = include_str!("../vendor/axe-core/LICENSE");

/// Which axe-core an audit runs, or why none can run.
#[derive(Debug, Clone)]
pub enum AxeSource {
    /// The copy compiled into the binary.
    Bundled,
    /// A file named by the operator (`CAPTURE_AXE_PATH`), read once.
    Override {
        /// Where it was read from.
        path: PathBuf,
        /// Its contents.
        source: String,
    },
    /// The override could not be read: accessibility is not checked (and every report says why).
    Unavailable {
        /// Why, in words.
        reason: String,
    },
}

impl AxeSource {
    /// The bundled copy, or the file at `path` when one is given. A file that cannot be read
    /// (or does not look like axe-core) makes the source unavailable rather than silently
    /// falling back: the operator asked for that file.
    pub fn load(path: Option<&Path>) -> AxeSource {
        let Some(path) = path else { return AxeSource::Bundled };
        match std::fs::read_to_string(path) {
            Ok(s) if s.contains("axe") => AxeSource::Override { path: path.to_owned(), source: s },
            Ok(_) => AxeSource::Unavailable {
                reason: format!("{} does not look like axe-core's axe.min.js (CAPTURE_AXE_PATH)", path.display()),
            },
            Err(e) => AxeSource::Unavailable {
                reason: format!("axe-core could not be read from {} (CAPTURE_AXE_PATH): {e}", path.display()),
            },
        }
    }

    /// The script to evaluate in a page, or why there is none.
    pub fn script(&self) -> Result<&str, &str> {
        match self {
            AxeSource::Bundled => Ok(AXE_JS),
            AxeSource::Override { source, .. } => Ok(source),
            AxeSource::Unavailable { reason } => Err(reason),
        }
    }

    /// One line for people: which axe-core runs (`axe-core 4.14.1, bundled`).
    pub fn describe(&self) -> String {
        match self {
            AxeSource::Bundled => format!("axe-core {AXE_VERSION}, bundled"),
            AxeSource::Override { path, .. } => format!("axe-core from {} (CAPTURE_AXE_PATH)", path.display()),
            AxeSource::Unavailable { reason } => reason.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_copy_is_the_pinned_version_with_its_notice() {
        assert!(AXE_JS.starts_with(&format!("/*! axe v{AXE_VERSION}")), "{}", &AXE_JS[..80]);
        assert!(AXE_JS.contains("Mozilla Public"), "the file keeps its licence header");
        assert!(AXE_LICENSE.starts_with("Mozilla Public License, version 2.0"));
        assert!(AXE_JS.len() > 500_000);
    }

    #[test]
    fn an_override_is_read_and_a_bad_one_is_reported_not_replaced() {
        assert!(matches!(AxeSource::load(None), AxeSource::Bundled));
        assert_eq!(AxeSource::load(None).script().unwrap().len(), AXE_JS.len());
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("axe.min.js");
        std::fs::write(&good, "window.axe = {version: 'x'};").unwrap();
        let s = AxeSource::load(Some(&good));
        assert_eq!(s.script(), Ok("window.axe = {version: 'x'};"));
        assert!(s.describe().contains("CAPTURE_AXE_PATH"), "{}", s.describe());
        let missing = AxeSource::load(Some(&dir.path().join("nope.js")));
        assert!(missing.script().unwrap_err().contains("could not be read"), "{missing:?}");
        let junk = dir.path().join("junk.js");
        std::fs::write(&junk, "hello").unwrap();
        assert!(AxeSource::load(Some(&junk)).script().unwrap_err().contains("does not look like"));
    }
}
