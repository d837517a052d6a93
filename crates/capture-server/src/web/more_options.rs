//! The playground's "More options": one input for each property of the capture request's JSON
//! schema (the one the OpenAPI document, the MCP tool and `form_to_json` read) that the
//! hand-laid form does not show, chosen by the property's schema: a checkbox for a boolean, a
//! select for a list of choices, a number input within the schema's bounds, a text input for
//! text, a JSON textarea for an array or an object. An option added to the request appears
//! here with no code; its value goes through `form_to_json` like the others.

use serde_json::{Map, Value};

use super::base::forms::Form;

/// The input a property gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Checkbox,
    Select,
    Number,
    Text,
    /// A textarea holding JSON (an array or an object).
    Json,
}

/// One generated input: the property (also the form field's name) and what its schema says.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub description: String,
    pub kind: Kind,
    /// A select's choices (after the empty "default" one).
    pub choices: Vec<String>,
    /// A number input's bounds and step (`1` for integers, `any` otherwise).
    pub min: Option<String>,
    pub max: Option<String>,
    pub step: &'static str,
    pub max_length: Option<u64>,
    /// The schema's default, as text (shown as the placeholder or the empty choice).
    pub default: Option<String>,
}

impl Spec {
    /// A checkbox starts checked when the option defaults to true.
    fn default_on(&self) -> bool {
        self.kind == Kind::Checkbox && self.default.as_deref() == Some("true")
    }

    /// The element id of the input.
    pub fn id(&self) -> String {
        format!("pg-opt-{}", self.name)
    }
}

/// The inputs for the properties of `schema` not in `shown`, in the schema's order.
pub fn specs(schema: &Map<String, Value>, shown: &[&str]) -> Vec<Spec> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props.iter().filter(|(name, _)| !shown.contains(&name.as_str())).map(|(name, p)| spec(name, p)).collect()
}

fn spec(name: &str, p: &Value) -> Spec {
    let choices = choices(p);
    let ty = crate::schema::value_type(p);
    let kind = match ty {
        _ if !choices.is_empty() => Kind::Select,
        Some("boolean") => Kind::Checkbox,
        Some("integer" | "number") => Kind::Number,
        Some("array" | "object") => Kind::Json,
        _ => Kind::Text,
    };
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
        other => Some(other.to_string()),
    };
    Spec {
        name: name.to_string(),
        description: p.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
        kind,
        choices,
        min: p.get("minimum").and_then(text),
        max: p.get("maximum").and_then(text),
        step: if ty == Some("integer") { "1" } else { "any" },
        max_length: p.get("maxLength").and_then(Value::as_u64),
        default: p.get("default").and_then(text),
    }
}

/// The text choices a property allows: its `enum`, or the `const`/`enum` of each alternative
/// of an `anyOf`/`oneOf` (null aside).
fn choices(p: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = p.get("enum").and_then(Value::as_array) {
        out.extend(e.iter().filter_map(Value::as_str).map(str::to_string));
    }
    if let Some(c) = p.get("const").and_then(Value::as_str) {
        out.push(c.to_string());
    }
    for alt in p.get("anyOf").or_else(|| p.get("oneOf")).and_then(Value::as_array).into_iter().flatten() {
        out.extend(choices(alt));
    }
    out
}

/// One input as shown: its spec and the value typed (a checkbox's: `on` or empty).
#[derive(Debug, Clone)]
pub struct Input {
    pub spec: Spec,
    pub value: String,
}

impl Input {
    /// Checked, for a checkbox.
    pub fn on(&self) -> bool {
        self.value == "on"
    }

    /// This value is `choice` (a select's selected option).
    pub fn is(&self, choice: &str) -> bool {
        self.value == choice
    }

    /// The id of the element describing the input.
    pub fn hint_id(&self) -> String {
        format!("{}-hint", self.spec.id())
    }
}

/// The inputs before anything is typed (a checkbox as its default).
pub fn fresh(specs: &[Spec]) -> Vec<Input> {
    specs
        .iter()
        .map(|s| Input { spec: s.clone(), value: if s.default_on() { "on".into() } else { String::new() } })
        .collect()
}

/// The inputs as submitted (an absent checkbox is unchecked).
pub fn from_form(specs: &[Spec], f: &Form) -> Vec<Input> {
    specs
        .iter()
        .map(|s| {
            let value = match s.kind {
                Kind::Checkbox => if matches!(f.text(&s.name), "on" | "true" | "1") { "on" } else { "" }.to_string(),
                _ => f.text(&s.name).to_string(),
            };
            Input { spec: s.clone(), value }
        })
        .collect()
}

/// The form fields these inputs add to the request: every non-empty value, and a checkbox
/// only when it differs from the option's default (left alone, the option keeps it).
pub fn fields(inputs: &[Input]) -> Vec<(String, String)> {
    inputs
        .iter()
        .filter_map(|i| match i.spec.kind {
            Kind::Checkbox => (i.on() != i.spec.default_on()).then(|| (i.spec.name.clone(), i.on().to_string())),
            _ => (!i.value.is_empty()).then(|| (i.spec.name.clone(), i.value.clone())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request with one property of each kind, as schemars writes them.
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Sample {
        /// Shown by the main form.
        url: String,
        /// Stop the animations.
        #[schemars(extend("default" = true))]
        reduce_motion: Option<bool>,
        /// Which frame.
        frame: Option<Frame>,
        /// How many tries.
        #[schemars(range(min = 1, max = 5), extend("default" = 2))]
        tries: Option<u32>,
        /// Zoom factor.
        #[schemars(range(min = 0.25, max = 4.0))]
        zoom: Option<f64>,
        /// A selector.
        #[schemars(length(max = 64))]
        pick: Option<String>,
        /// Selectors to hide.
        hide_selectors: Option<Vec<String>>,
        /// Extra headers.
        headers: Option<std::collections::BTreeMap<String, String>>,
    }

    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Frame {
        Top,
        First,
    }

    fn sample() -> Vec<Spec> {
        specs(&crate::schema::tool_input::<Sample>(), &["url"])
    }

    #[test]
    fn each_schema_type_gets_its_input() {
        let s = sample();
        let by = |n: &str| s.iter().find(|x| x.name == n).unwrap_or_else(|| panic!("{n}"));
        let names: Vec<&str> = s.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["frame", "headers", "hideSelectors", "pick", "reduceMotion", "tries", "zoom"]);
        assert_eq!(by("reduceMotion").kind, Kind::Checkbox);
        assert_eq!(by("reduceMotion").description, "Stop the animations.");
        assert!(by("reduceMotion").default_on());
        assert_eq!(by("frame").kind, Kind::Select);
        assert_eq!(by("frame").choices, ["top", "first"]);
        let tries = by("tries");
        assert_eq!(
            (tries.kind, tries.min.as_deref(), tries.max.as_deref(), tries.step),
            (Kind::Number, Some("1"), Some("5"), "1")
        );
        assert_eq!(tries.default.as_deref(), Some("2"));
        let zoom = by("zoom");
        assert_eq!(
            (zoom.kind, zoom.min.as_deref(), zoom.max.as_deref(), zoom.step),
            (Kind::Number, Some("0.25"), Some("4.0"), "any")
        );
        assert_eq!((by("pick").kind, by("pick").max_length), (Kind::Text, Some(64)));
        assert_eq!(by("hideSelectors").kind, Kind::Json);
        assert_eq!(by("headers").kind, Kind::Json);
    }

    #[test]
    fn only_typed_values_and_changed_checkboxes_are_sent() {
        let s = sample();
        assert_eq!(fields(&fresh(&s)), Vec::<(String, String)>::new(), "nothing typed, nothing sent");
        let form = Form(vec![
            ("tries".into(), " 3 ".into()),
            ("frame".into(), String::new()),
            ("hideSelectors".into(), r#"[".ad"]"#.into()),
        ]);
        let inputs = from_form(&s, &form);
        // reduceMotion defaults to true and its box was not sent (unchecked): false is sent.
        let expected = [("hideSelectors", "[\".ad\"]"), ("reduceMotion", "false"), ("tries", "3")];
        assert_eq!(fields(&inputs), expected.map(|(k, v)| (k.to_string(), v.to_string())));
        // The values typed are kept for the form shown again.
        let kept: Vec<(&str, &str)> = inputs.iter().map(|i| (i.spec.name.as_str(), i.value.as_str())).collect();
        assert_eq!(kept[..3], [("frame", ""), ("headers", ""), ("hideSelectors", "[\".ad\"]")]);
    }
}
