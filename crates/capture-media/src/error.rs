//! The one error type of the media engine.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while probing, recording or rendering.
///
/// Variants for bad input (`is_input_error`) carry messages written for the API's users;
/// the others are operational (a tool missing, failing or too slow) and carry the tool's
/// stderr for the logs.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// A required program is not installed or not on `PATH`.
    #[error("`{tool}` could not be started ({reason}); install it with scripts/setup.sh")]
    ToolMissing {
        /// Program name.
        tool: &'static str,
        /// The operating system's reason.
        reason: String,
    },
    /// A subprocess ran past its time limit and was killed.
    #[error("`{tool}` did not finish within {:.1}s and was stopped{}", after.as_secs_f64(), tail(stderr))]
    Timeout {
        /// Program name.
        tool: &'static str,
        /// The limit that was hit.
        after: Duration,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// A subprocess exited unsuccessfully.
    #[error("`{tool}` failed ({status}){}", tail(stderr))]
    ToolFailed {
        /// Program name.
        tool: &'static str,
        /// Exit status as text.
        status: String,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// A tool answered with something this crate could not read.
    #[error("unexpected output from `{tool}`: {reason}")]
    BadToolOutput {
        /// Program name.
        tool: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The voice id is not one of [`crate::voices`].
    #[error("unknown voice `{id}`; allowed voices: {}", allowed.join(", "))]
    UnknownVoice {
        /// The id asked for.
        id: String,
        /// The allowed ids.
        allowed: Vec<String>,
    },
    /// The music id is not one of [`crate::music`].
    #[error("unknown music `{id}`; allowed music: {}", allowed.join(", "))]
    UnknownMusic {
        /// The id asked for.
        id: String,
        /// The allowed ids.
        allowed: Vec<String>,
    },
    /// A colour that is not `#RRGGBB`.
    #[error("bad colour `{0}`: expected #RRGGBB, e.g. #1A73E8")]
    BadColor(String),
    /// The storyboard has no scenes.
    #[error("the storyboard has no scenes")]
    EmptyStoryboard,
    /// More scenes than an ad of at most 30 s can show.
    #[error("the storyboard has {count} scenes; at most {max} fit in an ad")]
    TooManyScenes {
        /// Scenes given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A scene's image could not be decoded.
    #[error("scene {}: the image could not be decoded ({reason})", index + 1)]
    BadImage {
        /// Zero-based scene index.
        index: usize,
        /// The decoder's reason.
        reason: String,
    },
    /// An image (scene or screencast frame) larger than the limits.
    #[error("{what} is {width}×{height} px; the limit is {max_side} px a side and {max_pixels} pixels")]
    ImageTooLarge {
        /// Which image.
        what: String,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// Largest side allowed.
        max_side: u32,
        /// Largest area allowed.
        max_pixels: u64,
    },
    /// A text (caption, script) longer than allowed.
    #[error("{what} is {len} characters long; at most {max} are allowed")]
    TextTooLong {
        /// Which text.
        what: String,
        /// Its length in characters.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The spoken script lasts longer than an ad may.
    #[error(
        "the voice-over lasts {seconds:.1}s even spoken faster; an ad's voice-over may last at most {max:.1}s, so shorten the script"
    )]
    VoiceTooLong {
        /// Length of the voice-over.
        seconds: f64,
        /// The longest allowed.
        max: f64,
    },
    /// No usable caption font on this machine.
    #[error("no caption font found (looked for {}); install fonts-noto-core or fonts-liberation", searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoFont {
        /// The paths tried.
        searched: Vec<PathBuf>,
    },
    /// A screencast recording finished without a single frame.
    #[error("the recording has no frames")]
    NoFrames,
    /// A screencast frame that is not a JPEG or PNG image.
    #[error("frame {index}: {reason}")]
    BadFrame {
        /// Zero-based frame number.
        index: usize,
        /// What was wrong.
        reason: String,
    },
    /// A recording grew past one of its limits.
    #[error("the recording is over its limit: {0}")]
    RecordingLimit(String),
    /// Any other invalid argument.
    #[error("{0}")]
    Invalid(String),
    /// File-system trouble (temporary directory, output file).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl MediaError {
    /// True when the caller's input is at fault (an API answers 400), false when the
    /// machine or a tool is (an API answers 500 and may retry).
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            MediaError::UnknownVoice { .. }
                | MediaError::UnknownMusic { .. }
                | MediaError::BadColor(_)
                | MediaError::EmptyStoryboard
                | MediaError::TooManyScenes { .. }
                | MediaError::BadImage { .. }
                | MediaError::ImageTooLarge { .. }
                | MediaError::TextTooLong { .. }
                | MediaError::VoiceTooLong { .. }
                | MediaError::NoFrames
                | MediaError::BadFrame { .. }
                | MediaError::RecordingLimit(_)
                | MediaError::Invalid(_)
        )
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        MediaError::Io { context: context.into(), source }
    }
}

fn tail(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() { String::new() } else { format!(": {s}") }
}

/// The crate's result type.
pub type Result<T, E = MediaError> = std::result::Result<T, E>;
