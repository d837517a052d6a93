//! The named devices (`device: "iphone-15"`) that captures, runs and automation sessions
//! emulate: one catalogue, listed by `GET /v1/devices` and the `list_devices` tool.

/// The named devices (`device: "iphone-15"`): name, viewport, DPR, mobile+touch, user agent.
pub const DEVICE_PRESETS: &[(&str, u32, u32, f64, bool, &str)] = &[
    ("desktop-1280", 1280, 800, 1.0, false, ""),
    ("desktop-1920", 1920, 1080, 1.0, false, ""),
    (
        "iphone-15",
        393,
        852,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ),
    (
        "pixel-8",
        412,
        915,
        2.625,
        true,
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "ipad",
        820,
        1180,
        2.0,
        true,
        "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ),
    // Added with the MCP automation tools (docs/automation.md lists them all).
    (
        "iphone-se",
        375,
        667,
        2.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-12",
        390,
        844,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-13-mini",
        375,
        812,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-14-pro-max",
        430,
        932,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-15-pro",
        393,
        852,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-15-pro-max",
        430,
        932,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-16-pro",
        402,
        874,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
    ),
    (
        "iphone-16-pro-max",
        440,
        956,
        3.0,
        true,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
    ),
    (
        "pixel-5",
        393,
        851,
        2.75,
        true,
        "Mozilla/5.0 (Linux; Android 14; Pixel 5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "pixel-7",
        412,
        915,
        2.625,
        true,
        "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "pixel-8-pro",
        448,
        998,
        3.0,
        true,
        "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "galaxy-s8",
        360,
        740,
        4.0,
        true,
        "Mozilla/5.0 (Linux; Android 14; SM-G950F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "galaxy-s20-ultra",
        412,
        915,
        3.5,
        true,
        "Mozilla/5.0 (Linux; Android 14; SM-G988B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "galaxy-s23",
        360,
        780,
        3.0,
        true,
        "Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "galaxy-s24-ultra",
        384,
        824,
        3.75,
        true,
        "Mozilla/5.0 (Linux; Android 14; SM-S928B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "galaxy-a51",
        412,
        914,
        2.625,
        true,
        "Mozilla/5.0 (Linux; Android 14; SM-A515F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    (
        "ipad-mini",
        768,
        1024,
        2.0,
        true,
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "ipad-pro-11",
        834,
        1194,
        2.0,
        true,
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "ipad-pro-12-9",
        1024,
        1366,
        2.0,
        true,
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "galaxy-tab-s4",
        712,
        1138,
        2.25,
        true,
        "Mozilla/5.0 (Linux; Android 14; SM-T835) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    ),
    (
        "nexus-10",
        800,
        1280,
        2.0,
        true,
        "Mozilla/5.0 (Linux; Android 14; Nexus 10) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    ),
    (
        "kindle-fire-hdx",
        800,
        1280,
        2.0,
        true,
        "Mozilla/5.0 (Linux; U; en-us; KFAPWI Build/JDQ39) AppleWebKit/535.19 (KHTML, like Gecko) Silk/3.13 Safari/535.19 Silk-Accelerated=true",
    ),
];

/// What a device is: `phone`, `tablet` (a mobile device at least 600 CSS px on its short
/// side) or `desktop`.
pub fn kind(width: u32, height: u32, mobile: bool) -> &'static str {
    match (mobile, width.min(height)) {
        (false, _) => "desktop",
        (true, m) if m >= 600 => "tablet",
        _ => "phone",
    }
}

/// A preset by its name: (width, height, device pixel ratio, mobile and touch, user agent —
/// empty for the browser's own).
pub fn preset(name: &str) -> Option<(u32, u32, f64, bool, &'static str)> {
    DEVICE_PRESETS.iter().find(|p| p.0 == name).map(|&(_, w, h, dsf, mobile, ua)| (w, h, dsf, mobile, ua))
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_presets_are_found() {
        let mut names: Vec<&str> = super::DEVICE_PRESETS.iter().map(|p| p.0).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), super::DEVICE_PRESETS.len());
        assert_eq!(super::preset("iphone-15").map(|p| (p.0, p.1, p.3)), Some((393, 852, true)));
        assert_eq!(super::preset("nokia-3310"), None);
    }
}
