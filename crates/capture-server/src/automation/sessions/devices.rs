//! The devices of a session: the presets, the device a session emulates and how it is
//! shown, changing it and rotating it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::live;
use crate::automation::timeout;
use crate::error::Result;
use crate::runs::types::{DeviceIn, DeviceSpec, device_spec};
use crate::screenshots::types::DevicePreset;
use crate::tool::{Cx, Reply};
use capture_browser::session::{Device, Session};
use capture_core::devices::DEVICE_PRESETS;
use serde_json::Value;
use std::time::Duration;

/// `portrait` or `landscape`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Orientation {
    Portrait,
    Landscape,
}

/// List the device presets session_start and session_set_device accept: phones, tablets and desktops with their real CSS viewport (portrait), device pixel ratio, touch and mobile flags and user agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListDevicesIn {
    /// Only `phone`, `tablet` or `desktop` presets.
    pub kind: Option<DeviceKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Phone,
    Tablet,
    Desktop,
}

/// Every preset, as listed.
pub fn presets() -> Vec<Value> {
    DEVICE_PRESETS.iter().map(|p| json!(DevicePreset::from(p))).collect()
}

pub async fn list_devices(_cx: &Cx<'_>, a: ListDevicesIn) -> Result<Reply> {
    let all: Vec<Value> = presets().into_iter().filter(|d| a.kind.is_none_or(|k| d["kind"] == json!(k))).collect();
    let names: Vec<&str> = all.iter().filter_map(|d| d["name"].as_str()).collect();
    let text = format!("{} devices: {}", all.len(), names.join(", "));
    Ok(Reply::data(json!({"devices": all})).with_text(text))
}

/// A device spec as the browser emulates it, held per `orientation`.
pub fn device_of(spec: &DeviceSpec, orientation: Option<Orientation>) -> Device {
    let d = spec.device();
    match orientation {
        Some(Orientation::Landscape) if !d.landscape => d.rotated(),
        Some(Orientation::Portrait) if d.landscape => d.rotated(),
        _ => d,
    }
}

pub fn device_json(d: &Device, preset: Option<&str>) -> Value {
    json!({
        "preset": preset, "width": d.width, "height": d.height, "deviceScaleFactor": d.device_scale_factor,
        "mobile": d.mobile, "touch": d.touch,
        "orientation": if d.landscape { "landscape" } else { "portrait" },
        "userAgent": d.user_agent,
    })
}

/// Emulate another device in the running session: a preset from list_devices or an explicit viewport, scale, touch, mobile and user agent. The page keeps its URL and reflows (reload it if it sniffs the user agent only on load).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetDeviceIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// A preset name (iphone-15, pixel-8, ipad-mini, desktop-1280…) or {viewport: {width, height}, deviceScaleFactor, touch, mobile, userAgent}.
    pub device: DeviceIn,
    /// How it is held (default portrait).
    pub orientation: Option<Orientation>,
    /// Most time for the change in ms (default 10000).
    pub timeout_ms: Option<u64>,
}

pub(crate) async fn viewport_now(s: &Session) -> Value {
    s.evaluate(
        "({innerWidth, innerHeight, orientation: (screen.orientation && screen.orientation.type) || null, \
         touchPoints: navigator.maxTouchPoints})",
        false,
        Duration::from_secs(5),
    )
    .await
    .unwrap_or(Value::Null)
}

pub async fn session_set_device(cx: &Cx<'_>, a: SetDeviceIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let spec = device_spec(Some(&a.device))?;
    let device = device_of(&spec, a.orientation);
    l.session.set_device(device.clone(), t).await?;
    *l.device.lock().unwrap() = device.clone();
    *l.preset.lock().unwrap() = spec.preset.clone();
    let data = json!({"device": device_json(&device, spec.preset.as_deref()), "page": viewport_now(&l.session).await});
    Ok(Reply::data(data))
}

/// Rotate the device by 90° (portrait ↔ landscape), or to the given orientation: the viewport's width and height swap, screen.orientation and orientation media queries change, and the page reflows. Returns the device and the page's new innerWidth/innerHeight.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotateIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Turn to this orientation (nothing happens if already so); default: the other one.
    pub orientation: Option<Orientation>,
    /// Most time for the change in ms (default 10000).
    pub timeout_ms: Option<u64>,
}

pub async fn session_rotate(cx: &Cx<'_>, a: RotateIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let current = l.session.device().await?;
    let want_landscape = match a.orientation {
        Some(Orientation::Landscape) => true,
        Some(Orientation::Portrait) => false,
        None => !current.landscape,
    };
    let device = if want_landscape == current.landscape { current } else { l.session.rotate(t).await? };
    *l.device.lock().unwrap() = device.clone();
    let preset = l.preset.lock().unwrap().clone();
    let page = viewport_now(&l.session).await;
    let text = format!(
        "Now {} ({}×{}); the page sees {}×{}.",
        if device.landscape { "landscape" } else { "portrait" },
        device.width,
        device.height,
        page["innerWidth"],
        page["innerHeight"]
    );
    Ok(Reply::data(json!({"device": device_json(&device, preset.as_deref()), "page": page})).with_text(text))
}
