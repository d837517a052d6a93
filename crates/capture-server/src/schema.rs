//! One definition, two views. A wire type derives `schemars::JsonSchema` (the schemars 1.x
//! that rmcp re-exports and its tool macros use), with its bounds taken from the domain's
//! constants; from that one derive come the MCP tool's input schema and, for types whose
//! bounds matter, the OpenAPI schema. Sub-schemas are inlined, so enums read as enums
//! and the OpenAPI document has no dangling `$defs`.

use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The JSON Schema of `T` for an MCP tool's `inputSchema` (draft 2020-12, inlined).
pub fn tool_input<T: JsonSchema>() -> Arc<Map<String, Value>> {
    let generator = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).into_generator();
    let schema = generator.into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut m)) => {
            m.remove("$schema");
            // Some MCP clients want `properties` even when there are none.
            m.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            Arc::new(m)
        }
        _ => Arc::new(Map::new()),
    }
}

/// The same schema as an OpenAPI 3.1 schema object (OpenAPI 3.1 schemas are JSON Schema
/// 2020-12).
pub fn openapi<T: JsonSchema>() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    let json = Value::Object((*tool_input::<T>()).clone());
    match serde_json::from_value(json) {
        Ok(schema) => utoipa::openapi::RefOr::T(schema),
        // Not reachable for the types we derive; the document would still be served.
        Err(e) => {
            tracing::error!(error = %e, "a JSON Schema did not convert to OpenAPI");
            utoipa::openapi::RefOr::T(Default::default())
        }
    }
}

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
