//! Site-level checks: robots.txt, the sitemap and HTTPS.

use super::ctx::{Ctx, Failure, finish};
use super::facts::SiteFacts;
use super::findings::{Checked, Evidence, Severity};

/// Check the site as a whole (robots.txt, sitemap, HTTPS).
pub fn check_site(site: &SiteFacts) -> Checked {
    let url = if site.final_url.is_empty() { site.start_url.as_str() } else { site.final_url.as_str() };
    let mut cx = Ctx { url, out: Checked::default() };
    let robots = Evidence { url: site.robots_url.clone(), ..Evidence::default() };
    match (site.robots_status, &site.robots_error) {
        (Some(s), _) if (200..300).contains(&s) => {
            cx.pass("robots-txt-missing");
            cx.pass("robots-txt-unreachable");
        }
        (Some(s), _) if (400..500).contains(&s) && s != 429 => {
            cx.pass("robots-txt-unreachable");
            cx.fail(
                "robots-txt-missing",
                Severity::Info,
                "The site has no robots.txt".into(),
                "robots.txt tells search engines what to crawl and where the sitemap is. Add one at the site's root, even if it allows everything.".into(),
                vec![Evidence { value: Some(format!("HTTP {s}")), expected: Some("HTTP 200".into()), ..robots.clone() }],
                1,
            );
        }
        (status, err) => {
            cx.pass("robots-txt-missing");
            let value = match (status, err) {
                (Some(s), _) => format!("HTTP {s}"),
                (None, Some(e)) => e.clone(),
                (None, None) => "no response".into(),
            };
            cx.fail(
                "robots-txt-unreachable",
                Severity::Warning,
                "robots.txt fails to load".into(),
                "When robots.txt answers with a server error, search engines stop crawling the whole site, and so did this audit. Make /robots.txt answer 200 (or 404 if you have none).".into(),
                vec![Evidence { value: Some(value), expected: Some("HTTP 200 or 404".into()), ..robots.clone() }],
                1,
            );
        }
    }
    let sm: Failure = (!site.sitemap_found).then(|| {
        (
            Severity::Info,
            "No sitemap found".into(),
            "A sitemap lists the pages you want found, so search engines discover new ones sooner. Publish /sitemap.xml and name it in robots.txt.".into(),
            vec![Evidence {
                url: site.sitemap_urls.first().cloned().unwrap_or_else(|| format!("{}sitemap.xml", root_of(url))),
                value: Some("not found".into()),
                expected: Some("a sitemap.xml".into()),
                selector: None,
            }],
            1,
        )
    });
    cx.check("sitemap-missing", sm);
    let https: Failure = (!url.starts_with("https:")).then(|| {
        (
            Severity::Critical,
            "The site is not served over HTTPS".into(),
            "Browsers mark http sites 'Not secure', search engines rank them lower, and anything typed can be read on the way. Get a certificate (free from Let's Encrypt) and redirect http to https.".into(),
            vec![Evidence { url: url.to_owned(), value: Some(url.split(':').next().unwrap_or_default().to_owned()), expected: Some("https".into()), selector: None }],
            1,
        )
    });
    cx.check("no-https", https);
    finish(cx)
}

fn root_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.join("/").map(|r| r.to_string()).unwrap_or_default(),
        Err(_) => String::new(),
    }
}
