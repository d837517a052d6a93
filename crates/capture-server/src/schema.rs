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
