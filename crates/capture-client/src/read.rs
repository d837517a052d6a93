//! `capture read URL`: the page as Markdown (or plain text) on stdout, its main content by
//! default. A capture job like `shot`'s (the same request type, flags, `--set`, `--options`,
//! Idempotency-Key, retries, waiting and exit codes), whose file is printed instead of saved.

use std::io::Write;

use capture_core::options::{ImageFormat, ScreenshotIn};
use serde_json::Value;

use crate::commands;
use crate::conn::Conn;
use crate::error::{ClientError, Result, exit};
use crate::shot::RequestArgs;

#[derive(clap::Args)]
pub struct ReadCmd {
    #[command(flatten)]
    conn: Conn,
    /// The page to read (http or https).
    url: String,
    /// Keep the whole page (navigation, footers, sidebars), not only its main content.
    #[arg(long)]
    whole_page: bool,
    /// Keep the article only, as Readability finds it (the default; --whole-page turns it off).
    #[arg(long, conflicts_with = "whole_page")]
    main_content: bool,
    /// Plain text (the visible text, a line per block) instead of Markdown.
    #[arg(long)]
    text: bool,
    /// At most this many characters (the front matter aside), cut after a whole line; stderr
    /// then says where the rest starts.
    #[arg(long, value_name = "N")]
    max_chars: Option<u64>,
    /// Start at this character (what the last read said to go on with).
    #[arg(long, value_name = "N")]
    from: Option<u64>,
    /// Leave out the YAML front matter (title, description, source…) before the Markdown.
    #[arg(long)]
    no_front_matter: bool,
    #[command(flatten)]
    request: RequestArgs,
    /// No progress or retry notices on stderr (the line saying there is more is still printed).
    #[arg(short, long)]
    quiet: bool,
}

impl ReadCmd {
    /// What `read` asks when nothing says otherwise: the main content (below the options file,
    /// so a file may turn it off).
    fn defaults() -> ScreenshotIn {
        ScreenshotIn { main_content: Some(true), ..ScreenshotIn::default() }
    }

    /// The request `read`'s own flags make.
    fn flags(&self) -> ScreenshotIn {
        ScreenshotIn {
            url: Some(self.url.clone()),
            format: Some(if self.text { ImageFormat::Text } else { ImageFormat::Markdown }),
            main_content: if self.whole_page { Some(false) } else { self.main_content.then_some(true) },
            max_chars: self.max_chars,
            from: self.from,
            ..ScreenshotIn::default()
        }
    }
}

/// `capture read URL`: build the request (refused before connecting when an option is wrong,
/// or when `--set format=…` asks for pixels), create the job, follow it, print its file.
pub async fn run(a: ReadCmd) -> Result<()> {
    let (options, idempotency_key) = a.request.request(&ReadCmd::defaults(), a.flags())?;
    let format = options.format.unwrap_or(ImageFormat::Markdown);
    if format.content().is_none() {
        return Err(ClientError::new(
            exit::INVALID,
            format!(
                "capture read prints the page as text: format '{}' is not markdown, text or html \
                 (capture shot saves images, videos and PDFs)",
                format.as_str()
            ),
        ));
    }
    let c = a.conn.connect(a.quiet).await?;
    let job = commands::capture(&c, &options, &idempotency_key, a.quiet).await?;
    let (_, bytes) = commands::job_file(&c, &job).await?;
    let body = if a.no_front_matter && format == ImageFormat::Markdown { without_front_matter(&bytes) } else { &bytes };
    let mut out = std::io::stdout().lock();
    match out.write_all(body).and_then(|()| out.flush()) {
        Ok(()) => {}
        // The reader stopped early (`| head`): what it wanted was printed.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(ClientError::new(exit::FAILURE, format!("writing to stdout: {e}"))),
    }
    drop(out);
    if let Some(line) = more_line(&job["metadata"]["content"]) {
        eprintln!("{line}");
    }
    Ok(())
}

/// The Markdown without its YAML front matter (`---\n…\n---\n` and the blank line after it);
/// a file without one as it is.
fn without_front_matter(md: &[u8]) -> &[u8] {
    let Some(rest) = md.strip_prefix(b"---\n") else { return md };
    // The closing line: at the very start (an empty block) or after a line break.
    let end =
        if rest.starts_with(b"---\n") { Some(4) } else { rest.windows(5).position(|w| w == b"\n---\n").map(|i| i + 5) };
    match end {
        Some(end) => {
            let body = &rest[end..];
            body.strip_prefix(b"\n").unwrap_or(body)
        }
        None => md,
    }
}

/// When the job holds only part of the text (`metadata.content.nextFrom`), the line that says
/// which part and how to read on: `[characters 0–120 of 950; read on with --from 120]`.
fn more_line(content: &Value) -> Option<String> {
    let next = content["nextFrom"].as_u64()?;
    let from = content["from"].as_u64().unwrap_or(0);
    let total = content["totalChars"].as_u64().map_or_else(|| "?".to_string(), |t| t.to_string());
    Some(format!("[characters {from}–{next} of {total}; read on with --from {next}]"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_front_matter_block_and_the_blank_line_after_it_are_left_out() {
        let md = b"---\ntitle: \"A\"\nsource: \"https://example.com/\"\n---\n\n# A\n\nText.\n";
        assert_eq!(without_front_matter(md), b"# A\n\nText.\n");
        assert_eq!(without_front_matter(b"---\n---\n\n# A\n"), b"# A\n", "an empty block");
        assert_eq!(without_front_matter(b"# A\n\n---\n\nB\n"), b"# A\n\n---\n\nB\n", "a rule is no front matter");
        assert_eq!(without_front_matter(b"---\ntitle: \"A\"\n"), b"---\ntitle: \"A\"\n", "never closed: kept");
    }

    #[test]
    fn the_more_line_names_the_part_and_where_to_go_on() {
        let c = json!({"chars": 200, "tokens": 50, "totalChars": 950, "from": 120, "nextFrom": 240});
        assert_eq!(more_line(&c).as_deref(), Some("[characters 120–240 of 950; read on with --from 240]"));
        let last = json!({"chars": 200, "tokens": 50, "totalChars": 950, "from": 840, "nextFrom": null});
        assert_eq!(more_line(&last), None);
        assert_eq!(more_line(&Value::Null), None);
    }

    #[test]
    fn read_asks_for_markdown_of_the_main_content_unless_told_otherwise() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            read: ReadCmd,
        }
        let request = |args: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("read").chain(args.iter().copied())).unwrap();
            let (options, _) = cli.read.request.request(&ReadCmd::defaults(), cli.read.flags()).unwrap();
            serde_json::to_value(options).unwrap()
        };
        assert_eq!(
            request(&["https://example.com/"]),
            json!({"url": "https://example.com/", "format": "markdown", "mainContent": true})
        );
        assert_eq!(
            request(&["https://example.com/", "--whole-page", "--text", "--max-chars", "500", "--from", "1000"]),
            json!({"url": "https://example.com/", "format": "text", "mainContent": false, "maxChars": 500, "from": 1000})
        );
        assert_eq!(
            request(&["https://example.com/", "--set", "mainContent=null", "--wait-for", "article"]),
            json!({"url": "https://example.com/", "format": "markdown", "waitFor": "article"})
        );
        assert!(Cli::try_parse_from(["read", "https://example.com/", "--whole-page", "--main-content"]).is_err());
    }
}
