//! One definition, two views (feature `schema`): a wire type derives `schemars::JsonSchema`
//! (the schemars 1.x that rmcp re-exports and its tool macros use), with its bounds taken
//! from the domain's constants; from that one derive come the MCP tool's input schema and, for
//! types whose bounds matter, the OpenAPI schema. Sub-schemas are inlined, so enums read as
//! enums and the OpenAPI document has no dangling `$defs`. Here, beside the types of this
//! crate that need it (the capture request); the server uses the same two functions.

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
    let mut json = Value::Object((*tool_input::<T>()).clone());
    const_as_enum(&mut json);
    match serde_json::from_value(json) {
        Ok(schema) => utoipa::openapi::RefOr::T(schema),
        // Not reachable for the types we derive; the document would still be served.
        Err(_) => utoipa::openapi::RefOr::T(Default::default()),
    }
}

/// `{"const": x}` as `{"enum": [x]}`, everywhere in `v`: the same schema, in the form utoipa's
/// schema object keeps (it drops `const`, which left a documented enum's variants as bare
/// `{"type": "string"}`, so no client could know the values).
fn const_as_enum(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(c) = m.remove("const") {
                m.insert("enum".into(), Value::Array(vec![c]));
            }
            m.values_mut().for_each(const_as_enum);
        }
        Value::Array(a) => a.iter_mut().for_each(const_as_enum),
        _ => {}
    }
}

// The capture request's OpenAPI schema is its JSON Schema (one derive, one set of bounds).
impl utoipa::PartialSchema for crate::options::ScreenshotIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        openapi::<crate::options::ScreenshotIn>()
    }
}

impl utoipa::ToSchema for crate::options::ScreenshotIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "ScreenshotRequest".into()
    }
}
