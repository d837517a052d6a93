//! Performance checks: redirect chains, server response, Web Vitals, page weight and request
//! count (they explain the performance score and weigh nothing themselves).

use super::ctx::{Ctx, Failure};
use super::defs::Thresholds;
use super::facts::PageFacts;
use super::findings::{Evidence, Severity};
use crate::collect::PageCollection;

fn kib(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / 1_048_576.0)
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

pub(super) fn check_redirects(cx: &mut Ctx<'_>, facts: &PageFacts, t: &Thresholds) {
    if facts.redirects.len() >= t.redirect_hops {
        let mut ev: Vec<Evidence> = facts
            .redirects
            .iter()
            .map(|h| Evidence { url: h.url.clone(), value: Some(format!("HTTP {}", h.status)), ..Evidence::default() })
            .collect();
        ev.push(Evidence { url: cx.url.to_owned(), value: Some("final page".into()), ..Evidence::default() });
        let n = facts.redirects.len();
        cx.fail(
            "redirect-chain",
            Severity::Warning,
            format!("{n} redirects before the page loads"),
            "Each redirect costs a round trip before anything shows. Link straight to the final address and make old addresses redirect there in one step.".into(),
            ev,
            n as u32,
        );
    } else {
        cx.pass("redirect-chain");
    }
}

pub(super) fn check_performance(cx: &mut Ctx<'_>, c: &PageCollection, t: &Thresholds) {
    let url = cx.url.to_owned();
    let grade = |v: f64, (warn, crit): (f64, f64)| {
        if v > crit {
            Some(Severity::Critical)
        } else if v > warn {
            Some(Severity::Warning)
        } else {
            None
        }
    };
    if let Some(n) = &c.navigation {
        let f: Failure = grade(n.ttfb_ms, t.ttfb_ms).map(|s| {
            (
                s,
                format!("The server is slow to answer ({:.0} ms to first byte)", n.ttfb_ms),
                "Nothing can show until the server starts answering. Cache pages, use a CDN or speed up the code that builds the page.".into(),
                vec![Evidence { url: url.clone(), selector: None, value: Some(format!("{:.0} ms", n.ttfb_ms)), expected: Some(format!("under {:.0} ms", t.ttfb_ms.0)) }],
                1,
            )
        });
        cx.check("slow-ttfb", f);
    }
    let v = &c.vitals;
    if let Some(lcp) = v.lcp_ms {
        let f: Failure = grade(lcp, t.lcp_ms).map(|s| {
            (
                s,
                format!("The main content appears late (LCP {:.1} s)", lcp / 1000.0),
                "Largest Contentful Paint is when the biggest text or image shows; visitors leave when it takes long. Shrink and preload the hero image, and cut render-blocking scripts and styles.".into(),
                vec![Evidence { url: url.clone(), selector: v.lcp_selector.clone(), value: Some(format!("{:.0} ms", lcp)), expected: Some(format!("under {:.0} ms", t.lcp_ms.0)) }],
                1,
            )
        });
        cx.check("slow-lcp", f);
    }
    if let Some(cls) = v.cls {
        let f: Failure = grade(cls, t.cls).map(|s| {
            let mut ev: Vec<Evidence> = v
                .layout_shifts
                .iter()
                .flat_map(|sh| {
                    let value = format!("shift {:.3} at {:.0} ms", sh.value, sh.start_time);
                    let url = url.clone();
                    let sel: Vec<Option<String>> = if sh.sources.is_empty() { vec![None] } else { sh.sources.iter().cloned().map(Some).collect() };
                    sel.into_iter().map(move |selector| Evidence { url: url.clone(), selector, value: Some(value.clone()), expected: None })
                })
                .collect();
            ev.insert(0, Evidence { url: url.clone(), selector: None, value: Some(format!("CLS {:.3}", cls)), expected: Some(format!("under {}", t.cls.0)) });
            (
                s,
                format!("Content jumps around while loading (CLS {:.2})", cls),
                "Elements move after they appear, so visitors lose their place or click the wrong thing. Reserve space for images, ads and banners (width/height or aspect-ratio).".into(),
                ev,
                v.layout_shifts.len().max(1) as u32,
            )
        });
        cx.check("high-cls", f);
    }
    if let Some(tbt) = v.tbt_ms {
        let f: Failure = grade(tbt, t.tbt_ms).map(|s| {
            (
                s,
                format!("Scripts block the page ({:.0} ms of blocking time)", tbt),
                "Long-running JavaScript freezes the page so taps and clicks wait. Split or defer heavy scripts and remove unused ones.".into(),
                vec![Evidence { url: url.clone(), selector: None, value: Some(format!("{:.0} ms, {} long tasks", tbt, v.long_tasks.unwrap_or(0))), expected: Some(format!("under {:.0} ms", t.tbt_ms.0)) }],
                v.long_tasks.unwrap_or(1),
            )
        });
        cx.check("high-tbt", f);
    }
    let r = &c.resources;
    let heavy: Failure = (r.total_bytes > t.page_bytes.0).then(|| {
        let s = if r.total_bytes > t.page_bytes.1 { Severity::Critical } else { Severity::Warning };
        let mut ev = vec![Evidence { url: url.clone(), selector: None, value: Some(kib(r.total_bytes)), expected: Some(format!("under {}", kib(t.page_bytes.0))) }];
        ev.extend(r.largest.iter().take(5).map(|x| Evidence { url: x.url.clone(), selector: None, value: Some(format!("{} {}", x.kind, kib(x.bytes))), expected: None }));
        (
            s,
            format!("The page is heavy ({})", kib(r.total_bytes)),
            "Every byte costs load time and mobile data. Compress images (WebP/AVIF at the displayed size), and drop unused scripts and fonts.".into(),
            ev,
            1,
        )
    });
    cx.check("heavy-page", heavy);
    let many: Failure = (r.total_requests > t.requests).then(|| {
        (
            Severity::Warning,
            format!("The page makes {} requests", r.total_requests),
            "Many small files slow loading, above all on mobile networks. Bundle scripts and styles, and lazy-load images below the fold.".into(),
            vec![Evidence { url: url.clone(), selector: None, value: Some(r.total_requests.to_string()), expected: Some(format!("at most {}", t.requests)) }],
            r.total_requests,
        )
    });
    cx.check("many-requests", many);
}
