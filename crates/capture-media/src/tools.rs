//! Which of the programs this engine runs are installed, so a server can say up front that a
//! feature cannot work on this machine (`/readyz`, the dashboard) instead of failing each job.
//!
//! The programs are started by name (`Command::new("ffmpeg")`), so "installed" means what
//! the operating system would find: an executable file of that name in a `PATH` directory.

use std::path::{Path, PathBuf};

/// What recording a browser run to MP4 runs ([`crate::ScreencastRecorder::finish`]).
pub const RECORDING_TOOLS: &[&str] = &["ffmpeg"];
/// What rendering a narrated video ad runs ([`crate::render_ad`]: the voice, then the film).
pub const AD_TOOLS: &[&str] = &["ffmpeg", "espeak-ng"];

/// The executable `name` would start as, searching `PATH`; None when it is not installed.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

/// Those of `tools` that are not installed, in order.
pub fn missing_tools<'a>(tools: &[&'a str]) -> Vec<&'a str> {
    tools.iter().copied().filter(|t| find_tool(t).is_none()).collect()
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_found_on_path_and_missing_ones_named() {
        assert!(find_tool("sh").is_some(), "every Debian has /bin/sh");
        assert_eq!(missing_tools(&["sh", "capture-no-such-tool", "sh"]), ["capture-no-such-tool"]);
        assert!(find_tool("capture-no-such-tool").is_none());
    }
}
