//! The devices a run emulates: the named presets (`device: "iphone-15"`), an explicit device,
//! and the device as stored and shown.

use capture_core::FieldError;
use capture_core::devices::Device;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::{self, text};

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
            let names = capture_core::devices::names();
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
    let p = capture_core::devices::preset(name)?;
    Some(DeviceSpec { preset: Some(p.name.to_string()), ..DeviceSpec::of(&p.device) })
}

impl DeviceSpec {
    /// `d` as stored and shown (no preset).
    pub fn of(d: &Device) -> DeviceSpec {
        DeviceSpec {
            preset: None,
            width: d.width,
            height: d.height,
            device_scale_factor: d.device_scale_factor,
            mobile: d.mobile,
            touch: d.touch,
            user_agent: d.user_agent.as_deref().map(str::to_string),
        }
    }

    /// The device the browser emulates, as stored (held as its size says).
    pub fn device(&self) -> Device {
        Device {
            width: self.width,
            height: self.height,
            device_scale_factor: self.device_scale_factor,
            mobile: self.mobile,
            touch: self.touch,
            landscape: self.width > self.height,
            user_agent: self.user_agent.clone().map(Into::into),
        }
    }
}
