//! Capture options of `POST /v1/screenshot`: defaults, bounds (DESIGN.md) and validation.

pub mod bounds;
pub mod defaults;

mod blocking;
mod capture;
mod content;
mod output;
mod page;
mod pdf;
mod request;
mod storage;
mod validate;

pub use blocking::{CookieConsent, ResourceKind};
pub use capture::CaptureOptions;
pub use content::{
    ContentFormat, ContentSettings, EXTRACT_FIELDS_MAX, ExtractIn, ExtractRule, ExtractSettings, FieldType,
    MAX_CHARS_MAX, TextPage, page_text,
};
pub use output::{Easing, ImageFormat, ScrollIn, ScrollSettings};
pub use page::{Clip, Geolocation, MediaType, WaitUntil};
pub use pdf::{Length, PaperFormat, PdfMargin, PdfOptionsIn, PdfSettings};
pub use request::ScreenshotIn;
pub use storage::{STORAGE_KEY_PLACEHOLDERS, StorageTarget};
pub use validate::{proxy_ref, proxy_sticky_key, validate_url};

#[cfg(test)]
mod tests {
    use super::{
        CaptureOptions, Clip, CookieConsent, Easing, Geolocation, ImageFormat, MediaType, ScreenshotIn, StorageTarget,
        WaitUntil,
    };
    use crate::states::OutputFormat;
    use serde_json::{Value, json};

    fn parse(v: Value) -> Result<CaptureOptions, String> {
        let shaped: ScreenshotIn = serde_json::from_value(v).map_err(|e| format!("shape: {e}"))?;
        shaped.into_options(true).map_err(|e| e.field)
    }

    #[test]
    fn defaults_follow_the_contract() {
        let o = parse(json!({"url": "https://example.com"})).unwrap();
        assert_eq!((o.width, o.height), (1280, 800));
        assert_eq!(o.format, ImageFormat::Png);
        assert_eq!(o.wait_until, WaitUntil::Networkidle);
        assert_eq!(o.timeout_ms, 10_000);
        assert!(o.cookie_consent == CookieConsent::Auto && !o.full_page && !o.pdf && !o.dark_mode);
        assert_eq!(o.device_scale_factor, 1.0);
        let o = parse(json!({"url": "https://example.com", "width": 800.0, "format": "jpg"})).unwrap();
        assert_eq!((o.width, o.format), (800, ImageFormat::Jpeg));
    }

    #[test]
    fn storage_keys_are_made_from_their_template() {
        let o = parse(json!({"url": "https://x.com", "storage": {"destination": "sd_abc"}})).unwrap();
        let t = o.storage.unwrap();
        assert_eq!(t.render_key("scr_1", "2026-11-29", "png", "x.com"), "scr_1.png");
        let t = StorageTarget { destination: "sd_abc".into(), key: Some("shots/{date}/{host}-{id}.{ext}".into()) };
        assert_eq!(t.clone().check().unwrap(), t);
        assert_eq!(t.render_key("scr_1", "2026-11-29", "mp4", "x.com"), "shots/2026-11-29/x.com-scr_1.mp4");
    }

    #[test]
    fn a_video_scrolls_top_to_end_and_is_charged_per_started_ten_seconds() {
        let o = parse(json!({"url": "https://x.com", "format": "mp4"})).unwrap();
        let s = o.scroll.clone().unwrap();
        assert_eq!((s.duration_ms, s.easing, s.scroll_back, s.frames()), (5000, Easing::EaseInOut, false, 125));
        assert_eq!((s.position(0), s.position(124)), (0.0, 1.0));
        assert_eq!(o.output_format(), OutputFormat::Mp4);
        assert_eq!(o.actions(), 1);
        let o = parse(json!({"url": "https://x.com", "format": "gif",
            "scroll": {"durationMs": 10001, "easing": "linear", "scrollBack": true, "untilSelector": "#end"}}))
        .unwrap();
        let s = o.scroll.clone().unwrap();
        assert_eq!((o.actions(), s.frames(), s.until_selector.as_deref()), (2, 251, Some("#end")));
        // Three quarters down, a quarter back: the end at 3/4, the top again last.
        assert_eq!((s.position(0), s.position(187), s.position(250)), (0.0, 1.0, 0.0));
        assert_eq!(
            parse(json!({"url": "https://x.com", "format": "webm", "scroll": {"durationMs": 30000}}))
                .unwrap()
                .actions(),
            3
        );
        // Every easing starts at the top and ends at the end, never going back on the way.
        for e in [Easing::Linear, Easing::EaseIn, Easing::EaseOut, Easing::EaseInOut] {
            assert_eq!((e.at(0.0), e.at(1.0)), (0.0, 1.0));
            assert!((1..=100).all(|i| e.at(f64::from(i) / 100.0) >= e.at(f64::from(i - 1) / 100.0)), "{e:?}");
        }
        assert_eq!(parse(json!({"url": "https://x.com"})).unwrap().actions(), 1);
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let cases = [
            (json!({}), "url"),
            (json!({"url": "ftp://x.com"}), "url"),
            (json!({"url": "file:///etc/passwd"}), "url"),
            (json!({"url": "javascript:alert(1)"}), "url"),
            (json!({"url": "https://x.com", "width": 99}), "width"),
            (json!({"url": "https://x.com", "width": 3841}), "width"),
            (json!({"url": "https://x.com", "height": 2161}), "height"),
            (json!({"url": "https://x.com", "delay": 30001}), "delay"),
            (json!({"url": "https://x.com", "timeoutMs": 999}), "timeoutMs"),
            (json!({"url": "https://x.com", "deviceScaleFactor": 4}), "deviceScaleFactor"),
            (json!({"url": "https://x.com", "preScreenshotJs": "x".repeat(16385)}), "preScreenshotJs"),
            (json!({"url": "https://x.com", "waitFor": "x".repeat(1025)}), "waitFor"),
            (json!({"url": "https://x.com", "selector": "x".repeat(1025)}), "selector"),
            (
                json!({"url": "https://x.com", "selector": "#a", "clip": {"x": 0, "y": 0, "width": 9, "height": 9}}),
                "clip",
            ),
            (json!({"url": "https://x.com", "pdf": true, "selector": "#a"}), "selector"),
            (json!({"url": "https://x.com", "pdf": true, "imageWidth": 300}), "imageWidth"),
            (json!({"url": "https://x.com", "clip": {"x": 0, "y": 0, "width": 0, "height": 9}}), "clip"),
            (json!({"url": "https://x.com", "clip": {"x": 1200, "y": 0, "width": 100, "height": 9}}), "clip"),
            (json!({"url": "https://x.com", "clip": {"x": -1, "y": 0, "width": 10, "height": 9}}), "clip"),
            (json!({"url": "https://x.com", "hideSelectors": vec![".a"; 51]}), "hideSelectors"),
            (json!({"url": "https://x.com", "hideSelectors": [".a", "x".repeat(1025)]}), "hideSelectors[1]"),
            (json!({"url": "https://x.com", "quality": 50}), "quality"),
            (json!({"url": "https://x.com", "format": "jpeg", "quality": 0}), "quality"),
            (json!({"url": "https://x.com", "format": "webp", "quality": 101}), "quality"),
            (json!({"url": "https://x.com", "format": "jpeg", "omitBackground": true}), "omitBackground"),
            (json!({"url": "https://x.com", "imageWidth": 15}), "imageWidth"),
            (json!({"url": "https://x.com", "imageWidth": 7681}), "imageWidth"),
            (json!({"url": "https://x.com", "timezone": "Mars/Olympus"}), "timezone"),
            (json!({"url": "https://x.com", "locale": "german"}), "locale"),
            (json!({"url": "https://x.com", "locale": "de_DE"}), "locale"),
            (json!({"url": "https://x.com", "geolocation": {"latitude": 91, "longitude": 0}}), "geolocation.latitude"),
            (
                json!({"url": "https://x.com", "geolocation": {"latitude": 0, "longitude": 181}}),
                "geolocation.longitude",
            ),
            (
                json!({"url": "https://x.com", "geolocation": {"latitude": 0, "longitude": 0, "accuracy": -1}}),
                "geolocation.accuracy",
            ),
            (json!({"url": "https://x.com", "failIfContentContains": vec!["x"; 11]}), "failIfContentContains"),
            (json!({"url": "https://x.com", "failIfContentMissing": ["ok", ""]}), "failIfContentMissing[1]"),
            (json!({"url": "https://x.com", "device": "nokia-3310"}), "device"),
            (json!({"url": "https://x.com", "device": "iphone-15", "deviceScaleFactor": 4}), "deviceScaleFactor"),
            (json!({"url": "https://x.com", "userAgent": "x".repeat(513)}), "userAgent"),
            (json!({"url": "https://x.com", "userAgent": "a\r\nX-Injected: 1"}), "userAgent"),
            (json!({"url": "https://x.com", "pdfOptions": {"landscape": true}}), "pdfOptions"),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperFormat": "a4", "paperWidth": "10in"}}),
                "pdfOptions.paperWidth",
            ),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperWidth": "10in"}}),
                "pdfOptions.paperHeight",
            ),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperWidth": "10furlong", "paperHeight": 5}}),
                "pdfOptions.paperWidth",
            ),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"margin": {"top": "-1cm"}}}),
                "pdfOptions.margin.top",
            ),
            (json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"scale": 3}}), "pdfOptions.scale"),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"pageRanges": "1-a"}}),
                "pdfOptions.pageRanges",
            ),
            (json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"pageRanges": "0"}}), "pdfOptions.pageRanges"),
            (json!({"url": "https://x.com", "blockRequests": vec!["*x*"; 101]}), "blockRequests"),
            (json!({"url": "https://x.com", "blockRequests": ["*/ads/*", " "]}), "blockRequests[1]"),
            (json!({"url": "https://x.com", "storage": {"destination": "rlk_x"}}), "storage.destination"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "/abs/{id}"}}), "storage.key"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "a/../{id}"}}), "storage.key"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "{id}{nope}"}}), "storage.key"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "{id"}}), "storage.key"),
            (json!({"url": "https://x.com", "scroll": {"durationMs": 2000}}), "scroll"),
            (json!({"url": "https://x.com", "format": "mp4", "scroll": {"durationMs": 999}}), "scroll.durationMs"),
            (json!({"url": "https://x.com", "format": "mp4", "scroll": {"durationMs": 30001}}), "scroll.durationMs"),
            (json!({"url": "https://x.com", "format": "webm", "fullPage": true}), "fullPage"),
            (json!({"url": "https://x.com", "format": "gif", "pdf": true}), "pdf"),
            (json!({"url": "https://x.com", "format": "mp4", "quality": 50}), "quality"),
            (json!({"url": "https://x.com", "format": "mp4", "width": 1920, "deviceScaleFactor": 2}), "width"),
        ];
        for (v, field) in cases {
            assert_eq!(parse(v.clone()).unwrap_err(), field, "{v}");
        }
        // Wrong shapes are refused by the type itself (the server names the field by its path).
        for v in [
            json!({"url": "https://x.com", "width": "wide"}),
            json!({"url": "https://x.com", "width": 800.5}),
            json!({"url": "https://x.com", "width": -1}),
            json!({"url": "https://x.com", "format": "tiff"}),
            json!({"url": "https://x.com", "waitUntil": "idle"}),
            json!({"url": "https://x.com", "cookieConsent": "yes"}),
            json!({"url": "https://x.com", "fullPage": "yes"}),
            json!({"url": "https://x.com", "fullpage": true}),
            json!({"url": "https://x.com", "mediaType": "tv"}),
            json!({"url": "https://x.com", "clip": {"x": 0, "y": 0, "width": 10}}),
            json!({"url": "https://x.com", "clip": {"x": 0, "y": 0, "width": 10, "height": 10, "z": 1}}),
            json!({"url": "https://x.com", "hideSelectors": ".ad"}),
            json!({"url": "https://x.com", "geolocation": {"lat": 1, "lng": 2}}),
            json!({"url": "https://x.com", "quality": 80.5}),
        ] {
            assert!(parse(v.clone()).unwrap_err().starts_with("shape: "), "{v}");
        }
    }

    #[test]
    fn the_new_options_are_read_and_defaulted() {
        let o = parse(json!({
            "url": "https://x.com", "format": "webp", "quality": 55, "imageWidth": 640, "omitBackground": true,
            "hideSelectors": [".ad", "  ", "#chat"], "selector": "main h1", "timezone": "Asia/Tokyo",
            "locale": "zh-Hant-TW", "geolocation": {"latitude": 35.68, "longitude": 139.76},
            "reducedMotion": true, "mediaType": "print"
        }))
        .unwrap();
        assert_eq!((o.quality, o.image_width, o.omit_background), (Some(55), Some(640), true));
        assert_eq!(o.hide_selectors, vec![".ad".to_string(), "#chat".to_string()]);
        assert_eq!(o.selector.as_deref(), Some("main h1"));
        assert_eq!((o.timezone.as_deref(), o.locale.as_deref()), (Some("Asia/Tokyo"), Some("zh-Hant-TW")));
        assert_eq!(o.geolocation, Some(Geolocation { latitude: 35.68, longitude: 139.76, accuracy: None }));
        assert_eq!((o.reduced_motion, o.media_type), (true, MediaType::Print));
        let clip = parse(
            json!({"url": "https://x.com", "fullPage": true, "clip": {"x": 0, "y": 5000, "width": 300, "height": 200}}),
        )
        .unwrap()
        .clip;
        assert_eq!(clip, Some(Clip { x: 0.0, y: 5000.0, width: 300.0, height: 200.0 }));
        // A job stored before these options existed reads their defaults, and the defaults
        // are not written out.
        let old = json!({"url": "https://x.com/", "width": 1280, "height": 800, "fullPage": false, "format": "png",
            "pdf": false, "delay": 0, "darkMode": false, "cookieConsent": true, "waitFor": null,
            "waitUntil": "networkidle", "timeoutMs": 10000, "preScreenshotJs": null, "deviceScaleFactor": 1.0,
            "clickBefore": null});
        let read: CaptureOptions = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(read, CaptureOptions { url: Some("https://x.com/".into()), ..CaptureOptions::default() });
        // `cookieConsent: true` was `auto`, and is written by its name now.
        let mut named = old.clone();
        named["cookieConsent"] = json!("auto");
        assert_eq!(serde_json::to_value(&read).unwrap(), named);
        // blockAnnoyances turns hidePopups on, unless it is set to false.
        let a = parse(json!({"url": "https://x.com", "blockAnnoyances": true})).unwrap();
        assert_eq!((a.block_annoyances, a.hide_popups), (true, true));
        let a = parse(json!({"url": "https://x.com", "blockAnnoyances": true, "hidePopups": false})).unwrap();
        assert_eq!((a.block_annoyances, a.hide_popups), (true, false));
        let a = parse(json!({"url": "https://x.com", "hidePopups": true})).unwrap();
        assert_eq!((a.block_annoyances, a.hide_popups), (false, true));
        let mut off = old.clone();
        off["cookieConsent"] = json!(false);
        let off: CaptureOptions = serde_json::from_value(off).unwrap();
        assert_eq!(off.cookie_consent, CookieConsent::None);
    }

    #[test]
    fn pdf_options_become_inches() {
        let o = parse(json!({"url": "https://x.com", "pdf": true, "pdfOptions": {
            "paperWidth": "210mm", "paperHeight": 1056, "landscape": true, "scale": 0.5, "pageRanges": "1-2, 4, 6-",
            "margin": {"top": "1in", "bottom": "2.54cm", "left": 48}, "printBackground": false,
            "footerTemplate": "<span class='pageNumber'></span>"}}))
        .unwrap();
        let p = o.pdf_options.unwrap();
        let (w, h) = p.paper.unwrap();
        assert!((w - 8.2677).abs() < 1e-3 && (h - 11.0).abs() < 1e-9, "{w} {h}");
        assert_eq!(p.margin, [1.0, 0.0, 1.0, 0.5]);
        assert_eq!((p.landscape, p.print_background, p.scale), (true, false, 0.5));
        assert_eq!(p.page_ranges.as_deref(), Some("1-2, 4, 6-"));
        assert_eq!(p.header_template, None);
        let p = parse(json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperFormat": "letter"}})).unwrap();
        assert_eq!(p.pdf_options.unwrap().paper, Some((8.5, 11.0)));
    }

    #[test]
    fn a_device_sets_the_view_and_explicit_values_win() {
        let o = parse(json!({"url": "https://x.com", "device": "iphone-15"})).unwrap();
        assert_eq!((o.width, o.height, o.device_scale_factor, o.mobile, o.touch), (393, 852, 3.0, true, true));
        assert!(o.user_agent.as_deref().is_some_and(|ua| ua.contains("iPhone")));
        assert_eq!(o.device.as_deref(), Some("iphone-15"));
        let o = parse(json!({"url": "https://x.com", "device": "iphone-15", "width": 500, "deviceScaleFactor": 1,
            "userAgent": "Kettlebot/1.0"}))
        .unwrap();
        assert_eq!((o.width, o.height, o.device_scale_factor), (500, 852, 1.0));
        assert_eq!(o.user_agent.as_deref(), Some("Kettlebot/1.0"));
        // A desktop preset has the browser's own user agent; a preset's ratio may pass 3.
        let o = parse(json!({"url": "https://x.com", "device": "desktop-1920"})).unwrap();
        assert_eq!((o.width, o.height, o.mobile, o.user_agent), (1920, 1080, false, None));
        assert_eq!(parse(json!({"url": "https://x.com", "device": "galaxy-s8"})).unwrap().device_scale_factor, 4.0);
    }

    #[test]
    fn the_field_names_are_the_types_own() {
        let names = ScreenshotIn::field_names();
        assert_eq!(names.len(), 56);
        assert_eq!((names[8], names[9], names[10], names[11]), ("content", "maxChars", "from", "extract"));
        assert_eq!(
            (names[0], names[5], names[7], names[21], names[40], names[44], names[45], names[50], names[53]),
            (
                "url",
                "mainContent",
                "excludeSelectors",
                "clickBefore",
                "blockResources",
                "blockAnnoyances",
                "hidePopups",
                "cacheKey",
                "profile"
            )
        );
        assert!(names.contains(&"preScreenshotJs") && names.contains(&"deviceScaleFactor"));
    }

    #[test]
    fn a_request_built_in_code_serialises_only_what_it_sets() {
        let r = ScreenshotIn { url: Some("https://example.com".into()), full_page: Some(true), ..Default::default() };
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"url": "https://example.com", "fullPage": true}));
    }
}
