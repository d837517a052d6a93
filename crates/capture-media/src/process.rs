//! Running the media tools as bounded subprocesses.
//!
//! Every child is killed when its time limit passes or when the future running it is
//! dropped (`kill_on_drop`), its stderr is kept (the end of it) for the error, and its
//! stdout is either collected or read line by line (ffmpeg's `-progress pipe:1`).

use std::ffi::OsStr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Command;

use crate::error::{MediaError, Result};

/// How much of a child's stderr is kept for the error message.
const STDERR_KEEP: usize = 4 * 1024;
/// The most stdout collected from one child (a decoded frame, ffprobe's JSON).
const STDOUT_MAX: usize = 128 * 1024 * 1024;

/// What a finished child left behind.
pub(crate) struct Output {
    pub stdout: Vec<u8>,
    /// All of stderr up to `STDERR_KEEP` bytes from the end.
    pub stderr: String,
}

/// How stdout is consumed.
pub(crate) enum Stdout<'a> {
    /// Collected into `Output::stdout`.
    Collect,
    /// Handed to the callback line by line; `Output::stdout` stays empty.
    Lines(&'a mut (dyn FnMut(&str) + Send)),
}

/// Runs `tool args…` to completion within `limit`.
pub(crate) async fn run<I, S>(tool: &'static str, args: I, limit: Duration, stdout: Stdout<'_>) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_in(None, tool, args, limit, stdout).await
}

/// [`run`] with the child's working directory set to `dir` (so file names in arguments
/// and filter scripts can be short relative names with nothing to escape).
pub(crate) async fn run_in<I, S>(
    dir: Option<&std::path::Path>,
    tool: &'static str,
    args: I,
    limit: Duration,
    stdout: Stdout<'_>,
) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(tool);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| MediaError::ToolMissing { tool, reason: e.to_string() })?;
    let out = child.stdout.take().expect("stdout is piped");
    let err = child.stderr.take().expect("stderr is piped");

    // stderr is read by its own task so what ffmpeg said before a timeout is still there.
    let err_task = tokio::spawn(read_tail(err));
    let work = async { tokio::join!(read_stdout(out, stdout), child.wait()) };
    let started = std::time::Instant::now();
    let finished = tokio::time::timeout(limit, work).await;
    match finished {
        Err(_) => {
            tracing::warn!(tool, limit_ms = limit.as_millis() as u64, "media tool timed out; killing it");
            // Stop the child and reap it so no zombie outlives the call.
            let _ = child.start_kill();
            let _ = child.wait().await;
            let stderr = tokio::time::timeout(Duration::from_secs(2), err_task)
                .await
                .ok()
                .and_then(|r| r.ok())
                .unwrap_or_default();
            Err(MediaError::Timeout { tool, after: limit, stderr })
        }
        Ok((stdout, status)) => {
            let stderr = err_task.await.unwrap_or_default();
            tracing::debug!(tool, elapsed_ms = started.elapsed().as_millis() as u64, ok = ?status.as_ref().map(|s| s.success()), "media tool finished");
            let status = status.map_err(|e| MediaError::io(format!("waiting for {tool}"), e))?;
            let stdout = stdout.map_err(|e| MediaError::io(format!("reading {tool}'s output"), e))?;
            if !status.success() {
                return Err(MediaError::ToolFailed { tool, status: status.to_string(), stderr });
            }
            Ok(Output { stdout, stderr })
        }
    }
}

async fn read_stdout(out: impl AsyncRead + Unpin, mode: Stdout<'_>) -> std::io::Result<Vec<u8>> {
    match mode {
        Stdout::Collect => {
            let mut buf = Vec::new();
            out.take(STDOUT_MAX as u64).read_to_end(&mut buf).await?;
            Ok(buf)
        }
        Stdout::Lines(f) => {
            let mut lines = BufReader::new(out).lines();
            while let Some(line) = lines.next_line().await? {
                f(&line);
            }
            Ok(Vec::new())
        }
    }
}

/// Reads all of stderr, keeping the last `STDERR_KEEP` bytes.
async fn read_tail(mut err: impl AsyncRead + Unpin) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match err.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > 2 * STDERR_KEEP {
                    kept.drain(..kept.len() - STDERR_KEEP);
                }
            }
        }
    }
    if kept.len() > STDERR_KEEP {
        kept.drain(..kept.len() - STDERR_KEEP);
    }
    String::from_utf8_lossy(&kept).trim().to_string()
}

/// Moves a finished file into place: a rename, or a copy when the destination is on
/// another file system.
pub(crate) async fn move_file(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    if tokio::fs::rename(from, to).await.is_ok() {
        return Ok(());
    }
    tokio::fs::copy(from, to).await.map_err(|e| MediaError::io(format!("writing {}", to.display()), e))?;
    let _ = tokio::fs::remove_file(from).await;
    Ok(())
}
