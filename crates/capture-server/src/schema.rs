//! One definition, two views. A wire type derives `schemars::JsonSchema` (the schemars 1.x
//! that rmcp re-exports and its tool macros use), with its bounds taken from the domain's
//! constants; from that one derive come the MCP tool's input schema and, for types whose
//! bounds matter, the OpenAPI schema. Sub-schemas are inlined, so enums read as enums
//! and the OpenAPI document has no dangling `$defs`.

use schemars::JsonSchema;
use serde_json::Value;

pub use capture_core::schema::{openapi, tool_input};

/// The properties of `T` as OpenAPI query parameters (a list's query, say).
pub fn query_params<T: JsonSchema>() -> Vec<utoipa::openapi::path::Parameter> {
    use utoipa::openapi::Required;
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    let schema = tool_input::<T>();
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props
        .iter()
        .map(|(name, prop)| {
            let mut prop = prop.clone();
            let description = prop.as_object_mut().and_then(|p| p.remove("description"));
            let param_schema = serde_json::from_value(prop).unwrap_or_default();
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(if required.contains(&name.as_str()) { Required::True } else { Required::False })
                .description(description.and_then(|d| d.as_str().map(str::to_string)))
                .schema(Some(utoipa::openapi::RefOr::T(param_schema)))
                .build()
        })
        .collect()
}

/// The JSON type a property's schema gives its values, `null` aside: `"integer"`, also from
/// `["integer", "null"]` (an optional field) or an `anyOf`/`oneOf` of one type and null; a
/// list of `enum` or `const` choices without a `type` is `"string"` when they are all text.
/// `None` when the schema names no single type.
pub fn value_type(p: &Value) -> Option<&str> {
    match p.get("type") {
        Some(Value::String(t)) => return Some(t),
        Some(Value::Array(ts)) => {
            let mut named = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null");
            let t = named.next()?;
            return named.next().is_none().then_some(t);
        }
        _ => {}
    }
    if let Some(choices) = p.get("enum").and_then(Value::as_array) {
        return choices.iter().all(|c| c.is_string() || c.is_null()).then_some("string");
    }
    if p.get("const").is_some_and(Value::is_string) {
        return Some("string");
    }
    let alternatives = p.get("anyOf").or_else(|| p.get("oneOf")).and_then(Value::as_array)?;
    let mut types =
        alternatives.iter().filter(|a| a.get("type").and_then(Value::as_str) != Some("null")).map(value_type);
    let first = types.next()??;
    types.all(|t| t == Some(first)).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::value_type;
    use serde_json::json;

    #[test]
    fn a_property_type_is_read_past_null() {
        assert_eq!(value_type(&json!({"type": "integer"})), Some("integer"));
        assert_eq!(value_type(&json!({"type": ["integer", "null"]})), Some("integer"));
        assert_eq!(value_type(&json!({"type": ["array", "null"], "items": {"type": "string"}})), Some("array"));
        assert_eq!(value_type(&json!({"type": ["string", "integer"]})), None);
        assert_eq!(value_type(&json!({"enum": ["png", "jpeg", null]})), Some("string"));
        assert_eq!(value_type(&json!({"anyOf": [{"type": "object"}, {"type": "null"}]})), Some("object"));
        assert_eq!(
            value_type(&json!({"oneOf": [{"type": "string", "const": "a"}, {"type": "string", "const": "b"}]})),
            Some("string")
        );
        assert_eq!(value_type(&json!({"anyOf": [{"type": "string"}, {"type": "number"}]})), None);
        assert_eq!(value_type(&json!({"description": "anything"})), None);
    }
}
