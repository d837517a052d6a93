//! The named devices (`device: "iphone-15"`) that captures, runs and automation sessions
//! emulate: one catalogue, listed by `GET /v1/devices` and the `list_devices` tool, and the
//! one [`Device`] shape they, an explicit device and the browser's emulation share.

use std::borrow::Cow;

/// A device a page is shown on: its viewport, pixel ratio, mobile and touch behaviour and
/// user agent. The catalogue's presets, a run's or a session's explicit device and what the
/// browser emulates are this one type.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// Viewport in CSS pixels (as held: a phone held in landscape has the larger width).
    pub width: u32,
    pub height: u32,
    pub device_scale_factor: f64,
    /// Mobile viewport semantics (meta viewport, overlay scrollbars, text autosizing).
    pub mobile: bool,
    /// Touch events and `navigator.maxTouchPoints`.
    pub touch: bool,
    /// Held in landscape (`screen.orientation`).
    pub landscape: bool,
    /// User agent (None: the browser's own).
    pub user_agent: Option<Cow<'static, str>>,
}

impl Device {
    /// A desktop browser window of `width`×`height`.
    pub const fn desktop(width: u32, height: u32) -> Device {
        Device {
            width,
            height,
            device_scale_factor: 1.0,
            mobile: false,
            touch: false,
            landscape: width > height,
            user_agent: None,
        }
    }

    /// A touch phone of `width`×`height` CSS pixels held upright, at `dsf`.
    pub const fn phone(width: u32, height: u32, dsf: f64) -> Device {
        Device {
            width,
            height,
            device_scale_factor: dsf,
            mobile: true,
            touch: true,
            landscape: false,
            user_agent: None,
        }
    }

    /// The same device turned by 90°.
    pub fn rotated(&self) -> Device {
        Device { width: self.height, height: self.width, landscape: !self.landscape, ..self.clone() }
    }

    /// `phone`, `tablet` or `desktop` (see [`kind`]).
    pub fn kind(&self) -> &'static str {
        kind(self.width, self.height, self.mobile)
    }
}

impl Default for Device {
    fn default() -> Device {
        Device::desktop(1280, 800)
    }
}

/// A named device of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    /// The name a request gives (`iphone-15`).
    pub name: &'static str,
    pub device: Device,
}

impl Preset {
    /// A desktop window (no touch, the browser's own user agent).
    const fn desktop(name: &'static str, width: u32, height: u32, dsf: f64) -> Preset {
        let mut device = Device::desktop(width, height);
        device.device_scale_factor = dsf;
        Preset { name, device }
    }

    /// A mobile device (a phone or a tablet: touch, mobile viewport) with its own user agent.
    const fn mobile(name: &'static str, width: u32, height: u32, dsf: f64, user_agent: &'static str) -> Preset {
        let device = Device {
            width,
            height,
            device_scale_factor: dsf,
            mobile: true,
            touch: true,
            landscape: width > height,
            user_agent: Some(Cow::Borrowed(user_agent)),
        };
        Preset { name, device }
    }
}

/// The named devices (`device: "iphone-15"`).
pub const DEVICE_PRESETS: &[Preset] = &[
    Preset::desktop("desktop-1280", 1280, 800, 1.0),
    Preset::desktop("desktop-1920", 1920, 1080, 1.0),
    Preset::mobile(
        "iphone-15",
        393,
        852,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "pixel-8",
        412,
        915,
        2.625,
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "ipad",
        820,
        1180,
        2.0,
        "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ),
    // Added with the MCP automation tools (docs/automation.md lists them all).
    Preset::mobile(
        "iphone-se",
        375,
        667,
        2.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-12",
        390,
        844,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-13-mini",
        375,
        812,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-14-pro-max",
        430,
        932,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-15-pro",
        393,
        852,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-15-pro-max",
        430,
        932,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-16-pro",
        402,
        874,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "iphone-16-pro-max",
        440,
        956,
        3.0,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "pixel-5",
        393,
        851,
        2.75,
        "Mozilla/5.0 (Linux; Android 14; Pixel 5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "pixel-7",
        412,
        915,
        2.625,
        "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "pixel-8-pro",
        448,
        998,
        3.0,
        "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "galaxy-s8",
        360,
        740,
        4.0,
        "Mozilla/5.0 (Linux; Android 14; SM-G950F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "galaxy-s20-ultra",
        412,
        915,
        3.5,
        "Mozilla/5.0 (Linux; Android 14; SM-G988B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "galaxy-s23",
        360,
        780,
        3.0,
        "Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "galaxy-s24-ultra",
        384,
        824,
        3.75,
        "Mozilla/5.0 (Linux; Android 14; SM-S928B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "galaxy-a51",
        412,
        914,
        2.625,
        "Mozilla/5.0 (Linux; Android 14; SM-A515F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    ),
    Preset::mobile(
        "ipad-mini",
        768,
        1024,
        2.0,
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "ipad-pro-11",
        834,
        1194,
        2.0,
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "ipad-pro-12-9",
        1024,
        1366,
        2.0,
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    Preset::mobile(
        "galaxy-tab-s4",
        712,
        1138,
        2.25,
        "Mozilla/5.0 (Linux; Android 14; SM-T835) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    ),
    Preset::mobile(
        "nexus-10",
        800,
        1280,
        2.0,
        "Mozilla/5.0 (Linux; Android 14; Nexus 10) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    ),
    Preset::mobile(
        "kindle-fire-hdx",
        800,
        1280,
        2.0,
        "Mozilla/5.0 (Linux; U; en-us; KFAPWI Build/JDQ39) AppleWebKit/535.19 (KHTML, like Gecko) Silk/3.13 Safari/535.19 Silk-Accelerated=True",
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

/// A preset by its name.
pub fn preset(name: &str) -> Option<&'static Preset> {
    DEVICE_PRESETS.iter().find(|p| p.name == name)
}

/// The names of every preset, in catalogue order (for messages).
pub fn names() -> Vec<&'static str> {
    DEVICE_PRESETS.iter().map(|p| p.name).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_presets_are_found() {
        let mut names = super::names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), super::DEVICE_PRESETS.len());
        let d = &super::preset("iphone-15").unwrap().device;
        assert_eq!((d.width, d.height, d.mobile, d.touch, d.kind()), (393, 852, true, true, "phone"));
        assert_eq!(super::preset("desktop-1920").unwrap().device.user_agent, None);
        assert_eq!(super::preset("nokia-3310"), None);
    }
}
