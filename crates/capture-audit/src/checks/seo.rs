//! SEO checks of a page: title, meta description, headings, canonical, language, viewport,
//! noindex, Open Graph tags and image alt text.

use super::ctx::{Ctx, Failure};
use super::defs::Thresholds;
use super::facts::PageFacts;
use super::findings::{Evidence, Severity};
use crate::collect::PageCollection;

fn count_chars(s: &str) -> usize {
    s.chars().count()
}

pub(super) fn check_seo(cx: &mut Ctx<'_>, facts: &PageFacts, c: &PageCollection, t: &Thresholds) {
    let seo = &c.seo;
    let ev = |value: Option<String>, selector: Option<&str>, expected: &str| Evidence {
        url: cx.url.to_owned(),
        selector: selector.map(str::to_owned),
        value,
        expected: Some(expected.to_owned()),
    };

    // Title.
    let title = seo.title.as_deref().map(str::trim).filter(|s| !s.is_empty());
    match title {
        None => {
            cx.fail(
                "title-missing",
                Severity::Critical,
                "The page has no title".into(),
                "Search results and browser tabs show the title first; without one, search engines make one up. Add a <title> that says what the page offers.".into(),
                vec![ev(None, Some("head > title"), &format!("a <title> of {}–{} characters", t.title_min, t.title_max))],
                1,
            );
        }
        Some(tt) => {
            cx.pass("title-missing");
            let n = count_chars(tt);
            let short: Failure = (n < t.title_min).then(|| {
                (
                    Severity::Warning,
                    format!("The title is too short ({n} characters)"),
                    "A very short title wastes the most visible line in search results. Describe the page in a few words, with your brand.".into(),
                    vec![ev(Some(tt.to_owned()), Some("head > title"), &format!("at least {} characters", t.title_min))],
                    1,
                )
            });
            cx.check("title-too-short", short);
            let long: Failure = (n > t.title_max).then(|| {
                (
                    Severity::Warning,
                    format!("The title is too long ({n} characters)"),
                    "Search engines cut titles after about 60 characters, so the end is lost. Put the important words first and shorten it.".into(),
                    vec![ev(Some(tt.to_owned()), Some("head > title"), &format!("at most {} characters", t.title_max))],
                    1,
                )
            });
            cx.check("title-too-long", long);
        }
    }

    // Meta description.
    let desc = seo.meta_description.as_deref().map(str::trim).filter(|s| !s.is_empty());
    match desc {
        None => {
            cx.fail(
                "meta-description-missing",
                Severity::Warning,
                "The page has no meta description".into(),
                "Search engines show the description under the title; without one they pick a random snippet. Add <meta name=\"description\"> summing up the page in one or two sentences.".into(),
                vec![ev(None, Some("meta[name=\"description\"]"), &format!("{}–{} characters", t.description_min, t.description_max))],
                1,
            );
        }
        Some(d) => {
            cx.pass("meta-description-missing");
            let n = count_chars(d);
            let short: Failure = (n < t.description_min).then(|| {
                (
                    Severity::Info,
                    format!("The meta description is short ({n} characters)"),
                    "A fuller description (one or two sentences) earns more clicks from search results.".into(),
                    vec![ev(
                        Some(d.to_owned()),
                        Some("meta[name=\"description\"]"),
                        &format!("at least {} characters", t.description_min),
                    )],
                    1,
                )
            });
            cx.check("meta-description-too-short", short);
            let long: Failure = (n > t.description_max).then(|| {
                (
                    Severity::Info,
                    format!("The meta description is long ({n} characters)"),
                    "Search engines cut descriptions after about 160 characters. Keep the key message in the first sentence.".into(),
                    vec![ev(Some(d.to_owned()), Some("meta[name=\"description\"]"), &format!("at most {} characters", t.description_max))],
                    1,
                )
            });
            cx.check("meta-description-too-long", long);
        }
    }

    // Headings.
    let h1_missing: Failure = (seo.h1_count == 0).then(|| {
        (
            Severity::Warning,
            "The page has no main heading (h1)".into(),
            "The h1 tells visitors and search engines what the page is about. Mark the page's main heading up as <h1>."
                .into(),
            vec![ev(Some("0 h1 elements".into()), Some("h1"), "exactly one <h1>")],
            1,
        )
    });
    cx.check("h1-missing", h1_missing);
    let h1_multi: Failure = (seo.h1_count > 1).then(|| {
        let ev1: Vec<Evidence> = seo.h1.iter().map(|h| ev(Some(h.clone()), Some("h1"), "exactly one <h1>")).collect();
        (
            Severity::Warning,
            format!("The page has {} main headings (h1)", seo.h1_count),
            "Several h1 headings blur what the page is about. Keep one h1 for the page's topic and make the others h2."
                .into(),
            ev1,
            seo.h1_count,
        )
    });
    cx.check("h1-multiple", h1_multi);

    // Canonical.
    let mut canon: Vec<&String> = seo.canonical.iter().collect();
    canon.dedup();
    if canon.is_empty() {
        cx.fail(
            "canonical-missing",
            Severity::Info,
            "The page does not name its canonical address".into(),
            "A canonical link tells search engines which address to rank when the page is reachable under several (with tracking parameters, with or without www). Add <link rel=\"canonical\" href=\"…\">.".into(),
            vec![ev(None, Some("link[rel=\"canonical\"]"), "one <link rel=\"canonical\">")],
            1,
        );
    } else {
        cx.pass("canonical-missing");
        let distinct: std::collections::BTreeSet<&String> = canon.iter().copied().collect();
        let conflict: Failure = (distinct.len() > 1).then(|| {
            (
                Severity::Warning,
                "The page names several canonical addresses".into(),
                "Conflicting canonical links make search engines ignore them all. Keep exactly one.".into(),
                distinct
                    .iter()
                    .map(|c| ev(Some((*c).clone()), Some("link[rel=\"canonical\"]"), "one canonical address"))
                    .collect(),
                distinct.len() as u32,
            )
        });
        cx.check("canonical-conflict", conflict);
    }

    let lang: Failure = seo.lang.as_deref().map(str::trim).is_none_or(str::is_empty).then(|| {
        (
            Severity::Warning,
            "The page does not declare its language".into(),
            "Without <html lang>, screen readers may read the page with the wrong voice and search engines guess the language. Add lang=\"en\" (or your language) to the <html> element.".into(),
            vec![ev(None, Some("html"), "<html lang=\"…\">")],
            1,
        )
    });
    cx.check("html-lang-missing", lang);

    let vp_ok = seo.viewport.as_deref().is_some_and(|v| v.to_ascii_lowercase().contains("width="));
    let viewport: Failure = (!vp_ok).then(|| {
        (
            Severity::Warning,
            "The page is not set up for phones (no viewport)".into(),
            "Without a viewport meta tag phones show a shrunken desktop page, and search engines rank it lower on mobile. Add <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">.".into(),
            vec![ev(seo.viewport.clone(), Some("meta[name=\"viewport\"]"), "width=device-width, initial-scale=1")],
            1,
        )
    });
    cx.check("viewport-missing", viewport);

    // noindex: robots meta or X-Robots-Tag.
    let header = facts.header_all("x-robots-tag");
    let header_noindex = header.as_deref().is_some_and(|h| {
        let h = h.to_ascii_lowercase();
        h.contains("noindex") || h.split([',', ':', ' ']).any(|p| p.trim() == "none")
    });
    let noindex: Failure = (seo.noindex || header_noindex).then(|| {
        let mut e = Vec::new();
        if seo.noindex {
            e.push(ev(Some(seo.robots_meta.join(", ")), Some("meta[name=\"robots\"]"), "index (or no robots meta)"));
        }
        if header_noindex {
            e.push(Evidence { url: cx.url.to_owned(), value: Some(format!("X-Robots-Tag: {}", header.clone().unwrap_or_default())), expected: Some("no noindex".into()), selector: None });
        }
        (
            Severity::Warning,
            "Search engines are told not to index this page".into(),
            "A noindex directive keeps the page out of search results. If the page should be found, remove noindex from the robots meta tag or the X-Robots-Tag header.".into(),
            e,
            1,
        )
    });
    cx.check("noindex", noindex);

    let missing_og: Vec<&str> =
        ["og:title", "og:description", "og:image"].into_iter().filter(|k| !seo.open_graph.contains_key(*k)).collect();
    let og: Failure = (!missing_og.is_empty()).then(|| {
        (
            Severity::Info,
            "Open Graph tags are missing".into(),
            "Shared on social networks and chats, the page shows without a proper title, text or picture. Add og:title, og:description and og:image meta tags.".into(),
            vec![ev(Some(format!("missing {}", missing_og.join(", "))), Some("meta[property^=\"og:\"]"), "og:title, og:description, og:image")],
            missing_og.len() as u32,
        )
    });
    cx.check("og-tags-missing", og);

    let imgs = &c.images;
    let alt: Failure = (imgs.without_alt_count > 0).then(|| {
        (
            Severity::Warning,
            format!("{} image{} without alt text", imgs.without_alt_count, if imgs.without_alt_count == 1 { "" } else { "s" }),
            "Alt text describes an image to blind visitors and to image search. Add an alt attribute to each image (alt=\"\" for purely decorative ones).".into(),
            imgs.without_alt
                .iter()
                .map(|i| Evidence { url: cx.url.to_owned(), selector: i.selector.clone(), value: Some(i.src.clone()), expected: Some("an alt attribute".into()) })
                .collect(),
            imgs.without_alt_count,
        )
    });
    cx.check("image-alt-missing", alt);
}
