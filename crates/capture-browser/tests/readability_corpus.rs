//! The page as text (issue 41) measured against Mozilla Readability's test corpus
//! (`test/test-pages/` of github.com/mozilla/readability: each page's `source.html` and the
//! `expected.html` Readability makes of it). Ignored unless asked for, and skipped when
//! `CAPTURE_READABILITY_CORPUS` does not name the corpus's `test-pages` folder:
//!
//! ```text
//! CAPTURE_READABILITY_CORPUS=/var/tmp/readability-corpus/test/test-pages \
//!   cargo test -p capture-browser --test readability_corpus -- --ignored --nocapture
//! ```
//!
//! Each page's `source.html` is served from 127.0.0.1 as `text/html; charset=utf-8` (the
//! corpus's files are UTF-8; Readability's own harness reads them so) at `/<page>/source.html`,
//! so its relative URLs answer 404, and is captured as `format: text` with `mainContent`.
//! Every subresource is refused (`blockResources`: the pages' images, styles and scripts are
//! remote and there is no network here, or relative and absent); the page's inline scripts
//! run, as they would in a capture. The expected text is `expected.html` served and captured
//! the same way as `format: text` without `mainContent`, so both sides go through the same
//! text rules (a line per block, image alt texts, hidden elements left out).
//!
//! The measure: both texts cut into words — runs of Unicode alphanumerics, lowercased, with
//! each Han, Hiragana or Katakana character a word of its own, as those scripts put no
//! spaces between words — and similarity = 2·LCS / (words of ours + words expected), where
//! LCS is the longest common subsequence of the two word sequences (order counts: text from
//! the wrong place or in the wrong order lowers it). 1 is the same words in the same order;
//! two empty texts are 1. A page that fails to load, or whose expected text fails, counts as
//! 0.
//!
//! Then, for 20 of the pages (evenly spaced, interleaved on the same warm pool), the time of
//! `format: markdown` with `mainContent` against `format: png` of the same page.
//!
//! `CAPTURE_READABILITY_ONLY` (page names, comma-separated) measures just those, and
//! `CAPTURE_READABILITY_DUMP` (a folder) writes each page's two texts there
//! (`<page>.ours.txt`, `<page>.expected.txt`) to look at.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_browser::{BrowserPool, CaptureError, CaptureOutput, CaptureRequest};
use capture_core::options::{ContentSettings, ImageFormat, ResourceKind};
use support::*;

/// Each capture's own deadline, and the bound the test puts around it.
const DEADLINE: Duration = Duration::from_secs(30);
const BOUND: Duration = Duration::from_secs(45);
/// Pages timed markdown-against-PNG.
const TIMED: usize = 20;

/// The corpus's pages: folders holding both `source.html` and `expected.html`, by name.
fn pages(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.path().join("source.html").is_file() && e.path().join("expected.html").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    out.sort();
    out
}

/// Serves `/<page>/source.html` and `/<page>/expected.html` from the corpus; anything else
/// is a 404.
async fn serve(dir: PathBuf) -> Server {
    Server::start(Arc::new(move |path: &str, _: &str| {
        let mut parts = path.trim_start_matches('/').splitn(2, '/');
        let (page, file) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let ok = !page.is_empty() && !page.contains("..") && matches!(file, "source.html" | "expected.html");
        match ok.then(|| std::fs::read(dir.join(page).join(file)).ok()).flatten() {
            Some(body) => Resp::Full(200, "text/html; charset=utf-8", body, 0),
            None => Resp::Full(404, "text/plain", b"not found".to_vec(), 0),
        }
    }))
    .await
}

fn request(url: String, format: ImageFormat, main_content: bool) -> CaptureRequest {
    let mut r = url_req(url);
    r.deadline = DEADLINE;
    r.options.width = 1280;
    r.options.height = 800;
    r.options.format = format;
    r.options.block_resources = vec![
        ResourceKind::Image,
        ResourceKind::Media,
        ResourceKind::Font,
        ResourceKind::Stylesheet,
        ResourceKind::Script,
        ResourceKind::Xhr,
        ResourceKind::Fetch,
        ResourceKind::Websocket,
        ResourceKind::Other,
    ];
    if let Some(form) = format.content() {
        r.options.content = Some(ContentSettings { formats: vec![form], main_content, ..ContentSettings::default() });
    }
    r
}

async fn capture(pool: &BrowserPool, r: CaptureRequest) -> Result<CaptureOutput, String> {
    match tokio::time::timeout(BOUND, pool.capture(r)).await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(describe(&e)),
        Err(_) => Err(format!("no answer in {BOUND:?}")),
    }
}

fn describe(e: &CaptureError) -> String {
    format!("{e:?}").chars().take(160).collect()
}

/// Each Han, Hiragana or Katakana character is a word of its own.
fn unspaced(c: char) -> bool {
    matches!(u32::from(c),
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
}

/// The text's words (see the file's comment), as ids from `vocab`.
fn words(text: &str, vocab: &mut HashMap<String, u32>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut push = |w: &mut String, out: &mut Vec<u32>| {
        if !w.is_empty() {
            let next = vocab.len() as u32;
            out.push(*vocab.entry(std::mem::take(w)).or_insert(next));
        }
    };
    for c in text.chars() {
        if unspaced(c) {
            push(&mut word, &mut out);
            word.push(c);
            push(&mut word, &mut out);
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            push(&mut word, &mut out);
        }
    }
    push(&mut word, &mut out);
    out
}

/// The length of the longest common subsequence of `a` and `b`, bit-parallel (Hyyrö's form
/// of Allison and Dix's algorithm): |a|·|b|/64 steps, so the longest pages take moments.
fn lcs(a: &[u32], b: &[u32]) -> usize {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    let n = a.len().div_ceil(64);
    // Where each word of `a` stands in it.
    let mut at: HashMap<u32, Vec<u64>> = HashMap::new();
    for (i, w) in a.iter().enumerate() {
        at.entry(*w).or_insert_with(|| vec![0; n])[i / 64] |= 1 << (i % 64);
    }
    let mut v = vec![u64::MAX; n];
    for w in b {
        let Some(m) = at.get(w) else { continue };
        let mut carry = false;
        for k in 0..n {
            let u = v[k] & m[k];
            let (s, c1) = v[k].overflowing_add(u);
            let (s, c2) = s.overflowing_add(u64::from(carry));
            carry = c1 || c2;
            v[k] = s | (v[k] & !m[k]);
        }
    }
    // The zero bits among the first |a| are the LCS.
    v.iter()
        .enumerate()
        .map(|(k, w)| {
            let bits = (a.len() - k * 64).min(64);
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            (!w & mask).count_ones() as usize
        })
        .sum()
}

/// The textbook dynamic programme, to check [`lcs`] against.
fn lcs_slow(a: &[u32], b: &[u32]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diag = 0;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[b.len()]
}

/// 2·LCS / (|a| + |b|) over the two texts' words; 1 when both are empty.
fn similarity(ours: &str, expected: &str) -> f64 {
    let mut vocab = HashMap::new();
    let (a, b) = (words(ours, &mut vocab), words(expected, &mut vocab));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    2.0 * lcs(&a, &b) as f64 / (a.len() + b.len()) as f64
}

fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// What one page measured.
struct Row {
    name: String,
    similarity: f64,
    ours: usize,
    expected: usize,
    article: bool,
    failed: Option<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "measures against Mozilla Readability's test pages: set CAPTURE_READABILITY_CORPUS"]
async fn main_content_against_readability_test_pages() {
    // The fast LCS agrees with the textbook one (short pseudo-random sequences of a few
    // words, across the 64-bit word boundaries).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |k: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % k) as u32
    };
    for _ in 0..200 {
        let (la, lb) = (next(200) as usize, next(200) as usize);
        let a: Vec<u32> = (0..la).map(|_| next(6)).collect();
        let b: Vec<u32> = (0..lb).map(|_| next(6)).collect();
        assert_eq!(lcs(&a, &b), lcs_slow(&a, &b), "{a:?} / {b:?}");
    }
    assert_eq!(similarity("The cat, sat!", "the CAT sat"), 1.0);
    assert_eq!(similarity("日本語", "日本"), 0.8);

    let Some(dir) = std::env::var_os("CAPTURE_READABILITY_CORPUS").map(PathBuf::from) else {
        println!("skipped: set CAPTURE_READABILITY_CORPUS to Mozilla Readability's test/test-pages folder");
        return;
    };
    let only = std::env::var("CAPTURE_READABILITY_ONLY").unwrap_or_default();
    let only: Vec<&str> = only.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let names: Vec<String> =
        pages(&dir).into_iter().filter(|p| only.is_empty() || only.contains(&p.as_str())).collect();
    let dump = std::env::var_os("CAPTURE_READABILITY_DUMP").map(PathBuf::from);
    assert!(!names.is_empty(), "no test pages (source.html and expected.html) in {}", dir.display());
    let srv = serve(dir.clone()).await;
    let work = tempfile::tempdir().unwrap();
    let mut cfg = config(work.path().to_path_buf(), true);
    cfg.browsers = 1;
    let pool = BrowserPool::start(cfg).await.expect("pool starts");

    let started = Instant::now();
    let mut rows = Vec::new();
    for name in &names {
        let source = capture(&pool, request(srv.url(&format!("/{name}/source.html")), ImageFormat::Text, true)).await;
        let expected =
            capture(&pool, request(srv.url(&format!("/{name}/expected.html")), ImageFormat::Text, false)).await;
        let row = match (source, expected) {
            (Ok(s), Ok(e)) => {
                let (ours, want) = (String::from_utf8_lossy(&s.bytes), String::from_utf8_lossy(&e.bytes));
                if let Some(d) = &dump {
                    std::fs::create_dir_all(d).unwrap();
                    std::fs::write(d.join(format!("{name}.ours.txt")), ours.as_bytes()).unwrap();
                    std::fs::write(d.join(format!("{name}.expected.txt")), want.as_bytes()).unwrap();
                }
                Row {
                    name: name.clone(),
                    similarity: similarity(&ours, &want),
                    ours: ours.chars().count(),
                    expected: want.chars().count(),
                    article: s.content.is_some_and(|c| c.article),
                    failed: None,
                }
            }
            (s, e) => Row {
                name: name.clone(),
                similarity: 0.0,
                ours: 0,
                expected: 0,
                article: false,
                failed: Some(match (s, e) {
                    (Err(s), _) => format!("source: {s}"),
                    (_, Err(e)) => format!("expected: {e}"),
                    _ => unreachable!(),
                }),
            },
        };
        match &row.failed {
            None => println!(
                "{:<48} similarity {:.3}  chars ours {:>6} expected {:>6}{}",
                row.name,
                row.similarity,
                row.ours,
                row.expected,
                if row.article { "" } else { "  (no article found: whole page)" }
            ),
            Some(why) => println!("{:<48} FAILED {why}", row.name),
        }
        rows.push(row);
    }
    let sims: Vec<f64> = rows.iter().map(|r| r.similarity).collect();
    let n = rows.len();
    let failed = rows.iter().filter(|r| r.failed.is_some()).count();
    let high = sims.iter().filter(|s| **s >= 0.9).count();
    let mean = sims.iter().sum::<f64>() / n as f64;
    let whole = rows.iter().filter(|r| r.failed.is_none() && !r.article).count();
    println!("--- {:.0?} for {n} pages", started.elapsed());
    println!(
        "pages {n}, failed {failed} (counted as 0), no article found {whole}; similarity >= 0.9: {high}/{n} ({:.1}%), >= 0.8: {}/{n}; median {:.3}, mean {:.3}",
        100.0 * high as f64 / n as f64,
        sims.iter().filter(|s| **s >= 0.8).count(),
        median(&sims),
        mean
    );
    let mut worst: Vec<&Row> = rows.iter().collect();
    worst.sort_by(|a, b| a.similarity.total_cmp(&b.similarity));
    println!(
        "lowest: {}",
        worst.iter().take(12).map(|r| format!("{} {:.3}", r.name, r.similarity)).collect::<Vec<_>>().join(", ")
    );

    // Markdown with mainContent against PNG, page by page on the same pool, the order
    // alternating.
    let ok: Vec<&Row> = rows.iter().filter(|r| r.failed.is_none()).collect();
    let step = (ok.len() as f64 / TIMED as f64).max(1.0);
    let timed: Vec<&str> = (0..TIMED.min(ok.len())).map(|i| ok[(i as f64 * step) as usize].name.as_str()).collect();
    let (mut md, mut png) = (Vec::new(), Vec::new());
    for (i, name) in timed.iter().enumerate() {
        let url = srv.url(&format!("/{name}/source.html"));
        let order = if i % 2 == 0 {
            [ImageFormat::Markdown, ImageFormat::Png]
        } else {
            [ImageFormat::Png, ImageFormat::Markdown]
        };
        for format in order {
            let t = Instant::now();
            let out = capture(&pool, request(url.clone(), format, true)).await;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            match (out, format) {
                (Ok(_), ImageFormat::Markdown) => md.push(ms),
                (Ok(_), _) => png.push(ms),
                (Err(e), _) => println!("timing {name} {}: FAILED {e}", format.as_str()),
            }
        }
    }
    println!(
        "timing over {} pages ({}): markdown + mainContent median {:.0} ms, png median {:.0} ms",
        timed.len(),
        timed.join(", "),
        median(&md),
        median(&png)
    );
    pool.shutdown().await;
    assert!(failed < n, "every page failed");
}
