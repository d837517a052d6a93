//! The devices a run emulates: the named presets (`device: "iphone-15"`), an explicit device,
//! and the device as stored and shown.

use capture_core::FieldError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::{self, text};

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

/// A device: a preset's name or an explicit one.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DeviceIn {
    Preset(String),
    Custom(CustomDevice),
}

/// An explicit device.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomDevice {
    pub viewport: Viewport,
    #[schemars(range(min = bounds::DSF.0, max = bounds::DSF.1), extend("default" = 1.0))]
    pub device_scale_factor: Option<f64>,
    /// Touch events (and mobile viewport semantics unless `mobile` says otherwise).
    pub touch: Option<bool>,
    pub mobile: Option<bool>,
    #[schemars(length(max = bounds::USER_AGENT_MAX))]
    pub user_agent: Option<String>,
}

/// A viewport in CSS pixels.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Viewport {
    #[schemars(range(min = bounds::WIDTH.0, max = bounds::WIDTH.1))]
    pub width: u32,
    #[schemars(range(min = bounds::HEIGHT.0, max = bounds::HEIGHT.1))]
    pub height: u32,
}

/// The device a run emulates, as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSpec {
    /// The preset it came from, if any.
    pub preset: Option<String>,
    pub width: u32,
    pub height: u32,
    pub device_scale_factor: f64,
    pub mobile: bool,
    pub touch: bool,
    pub user_agent: Option<String>,
}

/// The device of a request (the desktop preset when none is given).
pub fn device_spec(d: Option<&DeviceIn>) -> Result<DeviceSpec, FieldError> {
    match d {
        None => Ok(preset("desktop-1280").expect("the default preset exists")),
        Some(DeviceIn::Preset(name)) => preset(name).ok_or_else(|| {
            let names: Vec<&str> = DEVICE_PRESETS.iter().map(|p| p.0).collect();
            FieldError::new("device", format!("unknown device '{name}' (known: {})", names.join(", ")))
        }),
        Some(DeviceIn::Custom(c)) => {
            let (w, h) = (c.viewport.width, c.viewport.height);
            if !(bounds::WIDTH.0..=bounds::WIDTH.1).contains(&w) {
                return Err(FieldError::new(
                    "device.viewport.width",
                    format!("must be from {} to {}", bounds::WIDTH.0, bounds::WIDTH.1),
                ));
            }
            if !(bounds::HEIGHT.0..=bounds::HEIGHT.1).contains(&h) {
                return Err(FieldError::new(
                    "device.viewport.height",
                    format!("must be from {} to {}", bounds::HEIGHT.0, bounds::HEIGHT.1),
                ));
            }
            let dsf = c.device_scale_factor.unwrap_or(1.0);
            if !(bounds::DSF.0..=bounds::DSF.1).contains(&dsf) {
                return Err(FieldError::new(
                    "device.deviceScaleFactor",
                    format!("must be from {} to {}", bounds::DSF.0, bounds::DSF.1),
                ));
            }
            if let Some(ua) = &c.user_agent {
                text("device.userAgent", ua, bounds::USER_AGENT_MAX, false)?;
                if ua.chars().any(char::is_control) {
                    return Err(FieldError::new("device.userAgent", "must not contain control characters"));
                }
            }
            let touch = c.touch.unwrap_or(false);
            Ok(DeviceSpec {
                preset: None,
                width: w,
                height: h,
                device_scale_factor: dsf,
                mobile: c.mobile.unwrap_or(touch),
                touch,
                user_agent: c.user_agent.clone(),
            })
        }
    }
}

fn preset(name: &str) -> Option<DeviceSpec> {
    DEVICE_PRESETS.iter().find(|p| p.0 == name).map(|&(n, w, h, dsf, mobile, ua)| DeviceSpec {
        preset: Some(n.to_string()),
        width: w,
        height: h,
        device_scale_factor: dsf,
        mobile,
        touch: mobile,
        user_agent: (!ua.is_empty()).then(|| ua.to_string()),
    })
}
