//! The DevTools commands a [`Session`](crate::session::Session) offers its callers as typed
//! methods (`session/devtools.rs`): input events, DOM and accessibility reads, remote objects,
//! emulation setters, cookies, blocked URLs, frames and performance metrics. The parameter
//! and result types callers see are public (re-exported by [`crate::session`]); the
//! commands' envelopes stay crate-private.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::session::{CallArgument, TouchPoint};
use super::{Command, Empty, RemoteObject};

macro_rules! command {
    ($ty:ty, $method:literal, $resp:ty) => {
        impl Command for $ty {
            const METHOD: &'static str = $method;
            type Response = $resp;
        }
    };
}

// ---- Input -----------------------------------------------------------------------------

/// What a mouse event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MouseEventKind {
    /// `mousePressed`.
    #[serde(rename = "mousePressed")]
    Pressed,
    /// `mouseReleased`.
    #[serde(rename = "mouseReleased")]
    Released,
    /// `mouseMoved`.
    #[serde(rename = "mouseMoved")]
    Moved,
}

/// The mouse button of an event (never the middle one: on Linux it pastes the browser's
/// shared selection buffer, see [`crate::session::filter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MouseButton {
    None,
    Left,
    Right,
    Back,
    Forward,
}

/// A mouse event (`Input.dispatchMouseEvent`), at a point relative to the visual viewport in
/// CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MouseEvent {
    #[serde(rename = "type")]
    pub kind: MouseEventKind,
    pub x: f64,
    pub y: f64,
    pub button: MouseButton,
    /// The buttons held down, as a bit mask (1: left, 2: right, 8: back, 16: forward).
    pub buttons: u32,
    pub click_count: u32,
}
command!(MouseEvent, "Input.dispatchMouseEvent", Empty);

/// What a touch event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TouchEventKind {
    /// `touchStart`.
    #[serde(rename = "touchStart")]
    Start,
    /// `touchMove`.
    #[serde(rename = "touchMove")]
    Move,
    /// `touchEnd`.
    #[serde(rename = "touchEnd")]
    End,
    /// `touchCancel`.
    #[serde(rename = "touchCancel")]
    Cancel,
}

/// A touch event (`Input.dispatchTouchEvent`): the fingers on the screen after it (none for
/// the last `touchEnd`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TouchEvent {
    #[serde(rename = "type")]
    pub kind: TouchEventKind,
    pub touch_points: Vec<TouchPoint>,
}
command!(TouchEvent, "Input.dispatchTouchEvent", Empty);

// ---- Accessibility and DOM -------------------------------------------------------------

/// `Accessibility.getFullAXTree`, its nodes kept as DevTools sends them.
#[derive(Debug, Serialize)]
pub(crate) struct GetFullAxTreeRaw {}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct AxNodes {
    #[serde(default)]
    pub nodes: Vec<Value>,
}
command!(GetFullAxTreeRaw, "Accessibility.getFullAXTree", AxNodes);

/// A DOM node as `DOM.getDocument` and `DOM.describeNode` describe it (the parts callers read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DomNode {
    /// Its id for the `DOM` commands (`query_selector`…), when DevTools gave one.
    pub node_id: Option<i64>,
    /// Its backend id (what [`Target::Ref`](crate::session::Target::Ref) takes).
    pub backend_node_id: Option<i64>,
    /// `#document`, `DIV`, `#text`…
    pub node_name: String,
    /// The element's local name (`div`), empty for other nodes.
    pub local_name: String,
}

/// `DOM.getDocument`.
#[derive(Debug, Serialize)]
pub(crate) struct GetDocument {
    pub depth: i32,
}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct Document {
    #[serde(default)]
    pub root: DomNode,
}
command!(GetDocument, "DOM.getDocument", Document);

/// `DOM.querySelector`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QuerySelector<'a> {
    pub node_id: i64,
    pub selector: &'a str,
}
/// Its reply (0: nothing matches).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QueriedNode {
    #[serde(default)]
    pub node_id: i64,
}
command!(QuerySelector<'_>, "DOM.querySelector", QueriedNode);

/// `DOM.querySelectorAll`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QuerySelectorAll<'a> {
    pub node_id: i64,
    pub selector: &'a str,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QueriedNodes {
    #[serde(default)]
    pub node_ids: Vec<i64>,
}
command!(QuerySelectorAll<'_>, "DOM.querySelectorAll", QueriedNodes);

/// `DOM.describeNode`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DescribeNode {
    pub node_id: i64,
}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct DescribedNode {
    #[serde(default)]
    pub node: DomNode,
}
command!(DescribeNode, "DOM.describeNode", DescribedNode);

// ---- Runtime: remote objects -----------------------------------------------------------

/// `Runtime.evaluate` to a remote object kept in a group (no other option set).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EvaluateToObject<'a> {
    pub expression: &'a str,
    pub object_group: &'a str,
}
command!(EvaluateToObject<'_>, "Runtime.evaluate", super::Evaluated);

/// `Runtime.callFunctionOn`, by value, awaiting a promise (no user gesture set).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallFunctionByValue<'a> {
    pub object_id: &'a str,
    pub function_declaration: &'a str,
    pub arguments: Vec<CallArgument>,
    pub return_by_value: bool,
    pub await_promise: bool,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionCalled {
    #[serde(default)]
    pub result: RemoteObject,
    #[serde(default)]
    pub exception_details: Option<ThrownDetails>,
}
/// A thrown exception's details (the parts read).
#[derive(Debug, Deserialize)]
pub(crate) struct ThrownDetails {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub exception: Option<RemoteObject>,
}
command!(CallFunctionByValue<'_>, "Runtime.callFunctionOn", FunctionCalled);

/// What a function called on a remote object gave back.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// Its value (`Null` for `undefined`).
    Returned(Value),
    /// It threw.
    Threw(ThrownException),
}

/// An exception a called function threw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThrownException {
    /// The exception's description (`Error: boom\n    at …`).
    pub description: Option<String>,
    /// The exception details' text (`Uncaught`).
    pub text: Option<String>,
}

impl ThrownException {
    /// The description, else the text.
    pub fn message(&self) -> Option<&str> {
        self.description.as_deref().or(self.text.as_deref())
    }
}

impl From<FunctionCalled> for CallOutcome {
    fn from(r: FunctionCalled) -> CallOutcome {
        match r.exception_details {
            Some(d) => CallOutcome::Threw(ThrownException {
                description: d.exception.and_then(|e| e.description),
                text: d.text,
            }),
            None => CallOutcome::Returned(r.result.value.unwrap_or(Value::Null)),
        }
    }
}

// ---- Performance -----------------------------------------------------------------------

/// `Performance.enable`.
#[derive(Debug, Serialize)]
pub(crate) struct PerformanceEnable {}
command!(PerformanceEnable, "Performance.enable", Empty);

/// `Performance.getMetrics`.
#[derive(Debug, Serialize)]
pub(crate) struct GetPerformanceMetrics {}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct PerformanceMetrics {
    #[serde(default)]
    pub metrics: Vec<PerformanceMetric>,
}
command!(GetPerformanceMetrics, "Performance.getMetrics", PerformanceMetrics);

/// One DevTools performance metric (`JSHeapUsedSize`, `Nodes`, `TaskDuration`…).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PerformanceMetric {
    pub name: String,
    /// As DevTools sent it (a count stays an integer).
    pub value: serde_json::Number,
}

// ---- Emulation -------------------------------------------------------------------------

/// `Emulation.setFocusEmulationEnabled`.
#[derive(Debug, Serialize)]
pub(crate) struct SetFocusEmulationEnabled {
    pub enabled: bool,
}
command!(SetFocusEmulationEnabled, "Emulation.setFocusEmulationEnabled", Empty);

/// `Emulation.setScriptExecutionDisabled`.
#[derive(Debug, Serialize)]
pub(crate) struct SetScriptExecutionDisabled {
    pub value: bool,
}
command!(SetScriptExecutionDisabled, "Emulation.setScriptExecutionDisabled", Empty);

/// A vision deficiency DevTools can simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VisionDeficiency {
    BlurredVision,
    ReducedContrast,
    Achromatopsia,
    Deuteranopia,
    Protanopia,
    Tritanopia,
}

impl VisionDeficiency {
    /// Its DevTools name (`blurredVision`…).
    pub fn as_str(self) -> &'static str {
        match self {
            VisionDeficiency::BlurredVision => "blurredVision",
            VisionDeficiency::ReducedContrast => "reducedContrast",
            VisionDeficiency::Achromatopsia => "achromatopsia",
            VisionDeficiency::Deuteranopia => "deuteranopia",
            VisionDeficiency::Protanopia => "protanopia",
            VisionDeficiency::Tritanopia => "tritanopia",
        }
    }
}

/// `Emulation.setEmulatedVisionDeficiency` (`none`: back to normal vision).
#[derive(Debug, Serialize)]
pub(crate) struct SetEmulatedVisionDeficiency {
    #[serde(rename = "type")]
    pub kind: &'static str,
}
command!(SetEmulatedVisionDeficiency, "Emulation.setEmulatedVisionDeficiency", Empty);

/// How the device is held in space, in degrees (`DeviceOrientation.setDeviceOrientationOverride`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeviceOrientation {
    /// The compass direction, 0 to 360.
    pub alpha: f64,
    /// The front-back tilt, -180 to 180.
    pub beta: f64,
    /// The left-right tilt, -90 to 90.
    pub gamma: f64,
}
command!(DeviceOrientation, "DeviceOrientation.setDeviceOrientationOverride", Empty);

/// `DeviceOrientation.clearDeviceOrientationOverride`.
#[derive(Debug, Serialize)]
pub(crate) struct ClearDeviceOrientationOverride {}
command!(ClearDeviceOrientationOverride, "DeviceOrientation.clearDeviceOrientationOverride", Empty);

// ---- Network ---------------------------------------------------------------------------

/// Which cookies to delete (`Network.deleteCookies`): those named `name`, matching `url`,
/// or `domain` (and `path`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeleteCookies {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}
command!(DeleteCookies, "Network.deleteCookies", Empty);

// ---- Page ------------------------------------------------------------------------------

/// `Page.getFrameTree`.
#[derive(Debug, Serialize)]
pub(crate) struct GetFrameTree {}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FrameTreeReply {
    #[serde(default)]
    pub frame_tree: FrameTree,
}
command!(GetFrameTree, "Page.getFrameTree", FrameTreeReply);

/// A frame and the frames inside it, as `Page.getFrameTree` gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FrameTree {
    pub frame: FrameInfo,
    pub child_frames: Vec<FrameTree>,
}

/// A frame of the page (the parts callers read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FrameInfo {
    /// Its frame id (what [`Session::set_document_content`](crate::session::Session::set_document_content) takes).
    pub id: String,
    /// The frame it is in (None for the main frame).
    pub parent_id: Option<String>,
    pub url: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params<C: Command>(c: &C) -> Value {
        serde_json::to_value(c).unwrap()
    }

    #[test]
    fn commands_send_the_parameters_the_tools_sent_raw() {
        let m = MouseEvent {
            kind: MouseEventKind::Pressed,
            x: 10.5,
            y: 20.0,
            button: MouseButton::Left,
            buttons: 1,
            click_count: 1,
        };
        assert_eq!(
            params(&m),
            json!({"type": "mousePressed", "x": 10.5, "y": 20.0, "button": "left", "buttons": 1, "clickCount": 1})
        );
        let m = MouseEvent { kind: MouseEventKind::Moved, button: MouseButton::None, buttons: 0, ..m };
        assert_eq!(params(&m)["type"], "mouseMoved");
        assert_eq!(params(&m)["button"], "none");
        let finger = TouchPoint { x: 1.0, y: 2.0, id: 0, radius_x: 1.0, radius_y: 1.0, force: 1.0 };
        let t = TouchEvent { kind: TouchEventKind::Start, touch_points: vec![finger] };
        assert_eq!(
            params(&t),
            json!({"type": "touchStart", "touchPoints": [{"x": 1.0, "y": 2.0, "id": 0, "radiusX": 1.0, "radiusY": 1.0, "force": 1.0}]})
        );
        let t = TouchEvent { kind: TouchEventKind::End, touch_points: Vec::new() };
        assert_eq!(params(&t), json!({"type": "touchEnd", "touchPoints": []}));
        assert_eq!(params(&GetDocument { depth: 0 }), json!({"depth": 0}));
        assert_eq!(params(&QuerySelector { node_id: 1, selector: "a" }), json!({"nodeId": 1, "selector": "a"}));
        assert_eq!(params(&QuerySelectorAll { node_id: 1, selector: "a" }), json!({"nodeId": 1, "selector": "a"}));
        assert_eq!(params(&DescribeNode { node_id: 7 }), json!({"nodeId": 7}));
        assert_eq!(
            params(&EvaluateToObject { expression: "document.body", object_group: "g" }),
            json!({"expression": "document.body", "objectGroup": "g"})
        );
        let call = CallFunctionByValue {
            object_id: "o",
            function_declaration: "function(a) { return a; }",
            arguments: vec![CallArgument { value: json!(3) }],
            return_by_value: true,
            await_promise: true,
        };
        assert_eq!(
            params(&call),
            json!({"objectId": "o", "functionDeclaration": "function(a) { return a; }", "arguments": [{"value": 3}],
                   "returnByValue": true, "awaitPromise": true})
        );
        assert_eq!(params(&GetFullAxTreeRaw {}), json!({}));
        assert_eq!(params(&PerformanceEnable {}), json!({}));
        assert_eq!(params(&GetPerformanceMetrics {}), json!({}));
        assert_eq!(params(&SetFocusEmulationEnabled { enabled: true }), json!({"enabled": true}));
        assert_eq!(params(&SetScriptExecutionDisabled { value: true }), json!({"value": true}));
        assert_eq!(
            params(&SetEmulatedVisionDeficiency { kind: VisionDeficiency::BlurredVision.as_str() }),
            json!({"type": "blurredVision"})
        );
        let o = DeviceOrientation { alpha: 90.0, beta: -10.5, gamma: 0.0 };
        assert_eq!(params(&o), json!({"alpha": 90.0, "beta": -10.5, "gamma": 0.0}));
        assert_eq!(params(&ClearDeviceOrientationOverride {}), json!({}));
        let d = DeleteCookies { name: "sid".into(), url: Some("https://a.test/".into()), ..Default::default() };
        assert_eq!(params(&d), json!({"name": "sid", "url": "https://a.test/"}));
        let d = DeleteCookies {
            name: "sid".into(),
            domain: Some("a.test".into()),
            path: Some("/x".into()),
            ..Default::default()
        };
        assert_eq!(params(&d), json!({"name": "sid", "domain": "a.test", "path": "/x"}));
        assert_eq!(params(&GetFrameTree {}), json!({}));
    }

    #[test]
    fn replies_read_what_the_tools_read_leniently() {
        let doc: Document = serde_json::from_value(json!({"root": {"nodeId": 3, "backendNodeId": 9}})).unwrap();
        assert_eq!(doc.root.node_id, Some(3));
        let doc: Document = serde_json::from_value(json!({})).unwrap();
        assert_eq!(doc.root.node_id, None);
        let q: QueriedNode = serde_json::from_value(json!({})).unwrap();
        assert_eq!(q.node_id, 0);
        let q: QueriedNodes = serde_json::from_value(json!({"nodeIds": [4, 5]})).unwrap();
        assert_eq!(q.node_ids, vec![4, 5]);
        let d: DescribedNode = serde_json::from_value(
            json!({"node": {"nodeId": 0, "backendNodeId": 12, "nodeName": "INPUT", "localName": "input", "nodeType": 1}}),
        )
        .unwrap();
        assert_eq!(d.node.backend_node_id, Some(12));
        assert_eq!(d.node.local_name, "input");
        let ax: AxNodes = serde_json::from_value(json!({"nodes": [{"nodeId": "1"}]})).unwrap();
        assert_eq!(ax.nodes, vec![json!({"nodeId": "1"})]);
        let m: PerformanceMetrics =
            serde_json::from_value(json!({"metrics": [{"name": "Nodes", "value": 120}, {"name": "X", "value": 0.5}]}))
                .unwrap();
        assert_eq!(json!(m.metrics[0].value), json!(120));
        assert_eq!(json!(m.metrics[1].value), json!(0.5));
        let f: FrameTreeReply = serde_json::from_value(
            json!({"frameTree": {"frame": {"id": "F1", "loaderId": "L", "url": "about:blank"}}}),
        )
        .unwrap();
        assert_eq!(f.frame_tree.frame.id, "F1");
        let r: FunctionCalled = serde_json::from_value(json!({"result": {"type": "number", "value": 3}})).unwrap();
        assert_eq!(CallOutcome::from(r), CallOutcome::Returned(json!(3)));
        let r: FunctionCalled = serde_json::from_value(json!({"result": {"type": "undefined"}})).unwrap();
        assert_eq!(CallOutcome::from(r), CallOutcome::Returned(Value::Null));
        let r: FunctionCalled = serde_json::from_value(json!({
            "result": {"type": "object"},
            "exceptionDetails": {"text": "Uncaught", "exception": {"description": "Error: boom"}}
        }))
        .unwrap();
        let CallOutcome::Threw(e) = CallOutcome::from(r) else { panic!("no exception") };
        assert_eq!(e.message(), Some("Error: boom"));
        let r: FunctionCalled =
            serde_json::from_value(json!({"result": {}, "exceptionDetails": {"text": "Uncaught"}})).unwrap();
        let CallOutcome::Threw(e) = CallOutcome::from(r) else { panic!("no exception") };
        assert_eq!(e.message(), Some("Uncaught"));
    }
}
