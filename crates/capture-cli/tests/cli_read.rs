//! `capture read URL` end to end against the real `capture serve` and a page of our own: the
//! page's main content as Markdown under front matter on stdout, without the front matter,
//! as plain text, the whole page, in parts (`--max-chars`, `--from`, the line on stderr saying
//! where to read on); a failed capture's exit code; and `capture shot --format markdown`.

#[allow(dead_code)]
mod cli_support;
#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use cli_support::client;
use helpers::*;

const TITLE: &str = "Reading web pages from a terminal";

/// An article between a navigation bar and a footer.
fn article() -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{TITLE}</title>
<meta name="description" content="How a page becomes Markdown on the command line.">
</head><body>
<nav><a href="/">Home</a> <a href="/blog">Blog</a> <a href="/about">About the team</a></nav>
<article>
<h1>{TITLE}</h1>
<p>A page in a browser is made for eyes: menus, banners, sidebars and the article somewhere in
between. A terminal, a script or a language model wants the article alone, as text that keeps
its headings, lists and links, and nothing of the furniture around it.</p>
<h2>Why Markdown</h2>
<p>Markdown keeps the structure of a page with almost no markup of its own. A heading stays a
heading, a list stays a list, and a link keeps its address, so the text can be read as it is or
handed to another program that understands the same conventions.</p>
<ul><li>Headings become lines that start with hashes.</li><li>Lists keep their markers.</li>
<li>Links keep their absolute addresses.</li></ul>
<h2>Reading long pages in parts</h2>
<p>A long page does not have to be read at once. Ask for a number of characters, and the
answer says where the next part starts, so the rest can be read when it is needed.</p>
</article>
<footer><p>Copyright 2026 The Example Blog. Privacy policy and terms of use.</p></footer>
</body></html>"#
    )
}

/// The server, a key, the page's site and a home folder for the client.
struct Setup {
    app: TestApp,
    key: String,
    site: Site,
    home: tempfile::TempDir,
}

impl Setup {
    async fn start() -> Setup {
        let site = Site::start(vec![
            ("/article", "text/html; charset=utf-8", article()),
            ("/data.json", "application/json", r#"{"not": "a page"}"#.to_string()),
        ])
        .await;
        let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
        let (_, key) = app.user_with_key("free").await;
        Setup { app, key, site, home: tempfile::tempdir().unwrap() }
    }

    async fn run(&self, args: &[&str]) -> cli_support::Run {
        let run = client(self.home.path(), &self.app.base, &self.key, args).await;
        println!("capture {args:?} → {:?}\n--- stdout:\n{}--- stderr:\n{}", run.code, run.stdout, run.stderr);
        run
    }
}

/// The Markdown's front matter lines (`---` to `---`) and the text after the blank line that
/// follows them.
fn split_front_matter(md: &str) -> (Vec<&str>, &str) {
    let (front, body) = md.split_once("\n---\n\n").unwrap_or_else(|| panic!("no front matter:\n{md}"));
    (front.lines().chain(["---"]).collect(), body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_prints_the_main_content_as_markdown_text_and_in_parts() {
    let s = Setup::start().await;
    let url = s.site.url("/article");

    // Markdown of the main content under front matter; progress on stderr only.
    let run = s.run(&["read", &url, "--wait-until", "load"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let (front, body) = split_front_matter(&run.stdout);
    assert_eq!(
        front[..5],
        [
            "---",
            &format!("title: \"{TITLE}\""),
            "description: \"How a page becomes Markdown on the command line.\"",
            "lang: \"en\"",
            &format!("source: \"{url}\"")
        ]
    );
    assert!(front[5].starts_with("captured_at: \"20"), "{}", run.stdout);
    assert_eq!(front[6..], ["---"]);
    let lines: Vec<&str> = body.lines().collect();
    assert!(lines[0].starts_with("A page in a browser is made for eyes: menus, banners,"), "{body}");
    assert!(lines.contains(&"## Why Markdown") && lines.contains(&"## Reading long pages in parts"), "{body}");
    assert!(lines.contains(&"- Lists keep their markers."), "{body}");
    // Readability leaves out the navigation and the footer, and the heading that repeats the
    // title (the front matter has it).
    assert!(!body.contains("About the team") && !body.contains("Copyright 2026"), "{body}");
    assert!(!lines.contains(&format!("# {TITLE}").as_str()), "{body}");
    assert!(run.stderr.contains(": done"), "progress on stderr: {}", run.stderr);
    assert!(!run.stderr.contains("[characters"), "all of it, so no line about the rest: {}", run.stderr);

    // Without the front matter: the same text, and nothing on stderr with -q.
    let run = s.run(&["read", &url, "-q", "--wait-until", "load", "--no-front-matter"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, body);
    assert_eq!(run.stderr, "");
    // The whole page (less what --set excludes): it starts with the article's heading.
    let run = s
        .run(&[
            "read",
            &url,
            "-q",
            "--wait-until",
            "load",
            "--whole-page",
            "--no-front-matter",
            "--set",
            r#"excludeSelectors=["nav"]"#,
        ])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with(&format!("# {TITLE}\n\nA page in a browser is made for eyes:")), "{}", run.stdout);
    assert!(
        run.stdout.trim_end().ends_with("Copyright 2026 The Example Blog. Privacy policy and terms of use."),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("About the team"), "{}", run.stdout);

    // Plain text: a line per block, no Markdown and no front matter.
    let run = s.run(&["read", &url, "-q", "--wait-until", "load", "--text"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("A page in a browser is made for eyes: menus, banners,"), "{}", run.stdout);
    assert_eq!(lines[1], "Why Markdown", "{}", run.stdout);
    assert!(lines.contains(&"Lists keep their markers."), "{}", run.stdout);
    assert!(!run.stdout.contains('#') && !run.stdout.contains("---") && !run.stdout.contains("- "), "{}", run.stdout);

    // In parts: the first 300 characters of the text (cut after the last whole line that
    // fits), then stderr says which and where the rest starts; --from reads on from there.
    let whole = body.strip_suffix('\n').unwrap();
    let total = whole.chars().count() as u64;
    let first = capture_core::options::page_text(whole, 0, Some(300));
    let next = first.next_from.expect("the text is longer than 300 characters");
    let run = s.run(&["read", &url, "-q", "--wait-until", "load", "--max-chars", "300", "--no-front-matter"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stderr, format!("[characters 0–{next} of {total}; read on with --from {next}]\n"));
    assert!(!first.text.is_empty() && first.text.chars().count() <= 300 && first.text.ends_with('\n'));
    assert_eq!(run.stdout.trim_end(), first.text.trim_end());
    let run =
        s.run(&["read", &url, "-q", "--wait-until", "load", "--from", &next.to_string(), "--no-front-matter"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stderr, "", "the rest reaches the end");
    assert_eq!(run.stdout, format!("{}\n", whole.chars().skip(next as usize).collect::<String>()));
}

/// A failed capture exits with `shot`'s capture-failed code; `--set format=png` is refused
/// before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_exits_like_shot_when_the_capture_fails_or_pixels_are_asked_for() {
    let s = Setup::start().await;
    let run = s.run(&["read", &s.site.url("/data.json"), "--wait-until", "load"]).await;
    assert_eq!(run.code, Some(5), "{}", run.stderr);
    assert!(
        run.stderr
            .ends_with("error: the capture failed: the page is application/json, not HTML: it has no text to read\n"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");

    let fresh = cli_support::Scripted::start().await;
    let run =
        client(s.home.path(), &fresh.base, &s.key, &["read", "https://example.com/", "--set", "format=png"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "error: capture read prints the page as text: format 'png' is not markdown, text or html \
         (capture shot saves images, videos and PDFs)\n"
    );
    let run =
        client(s.home.path(), &fresh.base, &s.key, &["read", "https://example.com/", "--set", "maxChars=many"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert_eq!(fresh.requests(), 0, "refused before connecting");
}

/// `capture shot --format markdown|text|html` saves the page as text: to `-o`, or by default
/// to `<job id>.md`, `.txt` and `.html`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shot_saves_the_page_as_markdown_text_and_html() {
    let s = Setup::start().await;
    let url = s.site.url("/article");
    let out = s.home.path().join("out.md");
    let run = s
        .run(&[
            "shot",
            &url,
            "--format",
            "markdown",
            "--main-content",
            "--wait-until",
            "load",
            "-o",
            out.to_str().unwrap(),
        ])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, format!("{}\n", out.display()));
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.starts_with(&format!("---\ntitle: \"{TITLE}\"\n")), "{md}");
    assert!(md.lines().any(|l| l == "## Why Markdown"), "{md}");
    assert!(!md.contains("About the team"), "--main-content left the navigation out:\n{md}");

    // The default names, in the folder the command runs in.
    let dir = tempfile::tempdir().unwrap();
    for (format, ext, start) in [
        ("markdown", "md", "---\n"),
        ("text", "txt", "Home Blog About the team\nReading web pages"),
        ("html", "html", "<!doctype html>"),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_capture"))
            .args(["shot", &url, "--format", format, "--wait-until", "load", "-q"])
            .current_dir(dir.path())
            .env("CAPTURE_CONFIG_DIR", s.home.path().join("cfg"))
            .env("CAPTURE_SERVER", &s.app.base)
            .env("CAPTURE_API_KEY", &s.key)
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        let name = stdout.trim();
        assert!(name.starts_with("scr_") && name.ends_with(&format!(".{ext}")), "{format}: {name}");
        let saved = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(saved.starts_with(start), "{format}: {saved}");
    }
}
