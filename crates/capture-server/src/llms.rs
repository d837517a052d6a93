//! `GET /llms.txt` and `GET /llms-full.txt` (<https://llmstxt.org>): the API and the MCP
//! server described for models, in Markdown, generated from the OpenAPI document
//! ([`crate::docs::openapi`]) and the MCP tool catalogue ([`crate::mcp::catalogue`]), so they
//! say what the service serves and cannot drift from it. The short file lists every operation
//! and tool in a line; the full one adds each operation's parameters, body fields and answers,
//! each tool's arguments and each webhook event's fields.

use std::fmt::Write as _;
use std::sync::OnceLock;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::Value;

use crate::state::AppState;

/// The two routes (public, like `/openapi.json`).
pub fn router() -> Router<AppState> {
    Router::new().route("/llms.txt", get(short)).route("/llms-full.txt", get(full))
}

/// Where the server's base URL goes in the texts made once per process.
const BASE: &str = "\u{1}BASE\u{1}";

/// The two texts, made once per process (the document and the catalogue are fixed), with
/// [`BASE`] where this server's URL goes (one process can serve several in tests).
fn texts() -> &'static (String, String) {
    static TEXTS: OnceLock<(String, String)> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let doc = serde_json::to_value(crate::docs::openapi()).unwrap_or_default();
        let tools = serde_json::to_value(crate::mcp::catalogue()).unwrap_or_default();
        (render(&doc, &tools, BASE, false), render(&doc, &tools, BASE, true))
    })
}

const MARKDOWN: &str = "text/markdown; charset=utf-8";

async fn short(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, MARKDOWN)], texts().0.replace(BASE, &state.base_url))
}

async fn full(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, MARKDOWN)], texts().1.replace(BASE, &state.base_url))
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// The Markdown for the document `doc` and the tools `tools` on the server at `base`;
/// `full` adds the details.
pub fn render(doc: &Value, tools: &Value, base: &str, full: bool) -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "# Capture\n");
    let _ = writeln!(
        w,
        "> {} A self-hostable service: REST API with API keys, an MCP server (OAuth 2.1) for agents, signed webhooks.\n",
        one_line(doc["info"]["description"].as_str().unwrap_or_default())
    );
    let _ = writeln!(
        w,
        "This server: {base}. REST calls authenticate with `Authorization: Bearer <API key>` (keys from {base}/dashboard). \
         Writes take an `Idempotency-Key` header (the same key replays the first answer). Errors are JSON with a stable \
         `code` (`{{\"error\": {{\"code\": \"VALIDATION_ERROR\", \"message\": …}}}}`; see ErrorBody).\n"
    );
    let _ = writeln!(
        w,
        "A capture is a job: `POST /v1/screenshot {{\"url\": \"https://example.com\"}}` answers it (`202`, status `queued`); \
         follow it with `GET /v1/screenshot/{{id}}`, its server-sent events at `GET /v1/screenshot/{{id}}/stream`, or a \
         signed webhook (`screenshot.completed`); a finished job has `publicUrl`, the file.\n"
    );
    let _ = writeln!(w, "## Docs\n");
    let _ = writeln!(w, "- [OpenAPI 3.1 document]({base}/openapi.json): every operation and schema");
    let _ = writeln!(w, "- [API reference]({base}/docs): the same document, browsable");
    if full {
        let _ = writeln!(w, "- [Short version]({base}/llms.txt): one line per operation and tool");
    } else {
        let _ = writeln!(
            w,
            "- [Full reference for models]({base}/llms-full.txt): every operation's parameters, body fields and answers, \
             every MCP tool's arguments, every webhook event's fields"
        );
    }
    let _ = writeln!(w, "- [MCP setup]({base}/mcp/setup): connecting an agent\n");

    let _ = writeln!(w, "## REST API\n");
    let tags: Vec<(String, String)> =
        doc["tags"].as_array().into_iter().flatten().map(|t| (str_of(&t["name"]), str_of(&t["description"]))).collect();
    let mut ops: Vec<(String, String, String, &Value)> = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for m in METHODS {
            if let Some(op) = item.get(m).filter(|o| o.is_object()) {
                let tag = op["tags"][0].as_str().unwrap_or("other").to_string();
                ops.push((tag, path.clone(), m.to_ascii_uppercase(), op));
            }
        }
    }
    let mut seen_tags: Vec<String> = tags.iter().map(|(n, _)| n.clone()).collect();
    for (tag, ..) in &ops {
        if !seen_tags.contains(tag) {
            seen_tags.push(tag.clone());
        }
    }
    for tag in seen_tags {
        let mine: Vec<_> = ops.iter().filter(|o| o.0 == tag).collect();
        if mine.is_empty() {
            continue;
        }
        match tags.iter().find(|(n, _)| *n == tag).map(|(_, d)| d.as_str()).filter(|d| !d.is_empty()) {
            Some(d) => _ = writeln!(w, "### {tag}\n\n{d}\n"),
            None => _ = writeln!(w, "### {tag}\n"),
        }
        for (_, path, method, op) in mine {
            let summary = one_line(op["summary"].as_str().or(op["description"].as_str()).unwrap_or_default());
            let _ = writeln!(w, "- `{method} {path}`: {summary}");
            if full {
                operation(w, doc, op);
            }
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "## MCP server\n");
    let _ = writeln!(
        w,
        "Endpoint `{base}/mcp` (Streamable HTTP, JSON answers; OAuth 2.1 with dynamic client registration and PKCE: the \
         first call's 401 names the authorization server). {}\n",
        crate::mcp::INSTRUCTIONS
    );
    for t in tools.as_array().into_iter().flatten() {
        let name = str_of(&t["name"]);
        let desc = str_of(&t["description"]);
        if full {
            let _ = writeln!(w, "### `{name}`\n\n{}\n", desc.trim());
            let schema = &t["inputSchema"];
            fields(w, doc, schema, "");
            let _ = writeln!(w);
        } else {
            let _ = writeln!(w, "- `{name}`: {}", first_sentence(&desc));
        }
    }
    if !full {
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "## Webhook events\n");
    let _ = writeln!(
        w,
        "POSTed as JSON `{{type, createdAt, data}}` to the account's subscribed endpoints, signed: `webhook-signature: \
         t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\" with the endpoint's secret>`; `webhook-id` is the same on \
         every retry.\n"
    );
    for (event, item) in doc["webhooks"].as_object().into_iter().flatten() {
        let data = &item["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]["data"];
        let fields = str_of(&data["description"]);
        let _ = writeln!(w, "- `{event}`: {}", fields.strip_prefix("fields: ").unwrap_or(&fields));
    }
    out
}

/// An operation's details: description, parameters, body fields, answers.
fn operation(w: &mut String, doc: &Value, op: &Value) {
    let desc = op["description"].as_str().unwrap_or_default().trim();
    if !desc.is_empty() {
        for line in desc.lines() {
            let _ = writeln!(w, "  {line}");
        }
    }
    for p in op["parameters"].as_array().into_iter().flatten() {
        let p = resolve(doc, p);
        let _ = writeln!(
            w,
            "  - {} `{}` ({}{}): {}",
            str_of(&p["in"]),
            str_of(&p["name"]),
            type_of(&p["schema"]),
            if p["required"].as_bool() == Some(true) { ", required" } else { "" },
            one_line(p["description"].as_str().unwrap_or_default())
        );
    }
    let body = &op["requestBody"]["content"]["application/json"]["schema"];
    if body.is_object() {
        let _ = writeln!(w, "  - body: {}", type_of(body));
        fields(w, doc, body, "    ");
    }
    let answers: Vec<String> = op["responses"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(code, r)| {
            let schema = &resolve(doc, r)["content"]["application/json"]["schema"];
            if schema.is_object() { format!("{code} {}", type_of(schema)) } else { code.clone() }
        })
        .collect();
    if !answers.is_empty() {
        let _ = writeln!(w, "  - answers: {}", answers.join(", "));
    }
}

/// The properties of an object schema, one line each.
fn fields(w: &mut String, doc: &Value, schema: &Value, indent: &str) {
    let s = resolve(doc, schema);
    let required: Vec<&str> = s["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for (name, p) in s["properties"].as_object().into_iter().flatten() {
        let desc = one_line(resolve(doc, p)["description"].as_str().unwrap_or_default());
        let req = if required.contains(&name.as_str()) { ", required" } else { "" };
        let _ = writeln!(
            w,
            "{indent}- `{name}` ({}{req}){}",
            type_of(p),
            if desc.is_empty() { String::new() } else { format!(": {desc}") }
        );
    }
}

/// `$ref` followed to its schema (or response, or parameter).
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    let mut v = v;
    for _ in 0..8 {
        let Some(r) = v["$ref"].as_str() else { return v };
        let Some(path) = r.strip_prefix("#/") else { return v };
        let mut at = doc;
        for part in path.split('/') {
            at = &at[part];
        }
        v = at;
    }
    v
}

/// A short type: `string`, `integer 1..3840`, `png|jpeg`, `array of string`, a schema's name.
fn type_of(schema: &Value) -> String {
    if let Some(r) = schema["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(e) = schema["enum"].as_array() {
        let vals: Vec<String> =
            e.iter().filter(|v| !v.is_null()).map(|v| v.as_str().map_or(v.to_string(), str::to_owned)).collect();
        return vals.join("|");
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(alts) = schema[key].as_array() {
            let alts: Vec<&Value> = alts.iter().filter(|a| a["type"] != "null").collect();
            let mut parts: Vec<String> = Vec::new();
            for t in alts.iter().map(|a| type_of(a)).filter(|t| !t.is_empty()) {
                if !parts.contains(&t) {
                    parts.push(t);
                }
            }
            // Documented choices (one value each): `auto|reject|accept`.
            let sep = if alts.iter().all(|a| a["enum"].is_array()) { "|" } else { " or " };
            return parts.join(sep);
        }
    }
    let ty = match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => {
            ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" or ")
        }
        _ => String::new(),
    };
    match ty.as_str() {
        "array" => format!("array of {}", type_of(&schema["items"])),
        "integer" | "number" => match (schema["minimum"].as_f64(), schema["maximum"].as_f64()) {
            (Some(lo), Some(hi)) => format!("{ty} {lo}..{hi}"),
            (Some(lo), None) => format!("{ty} >= {lo}"),
            (None, Some(hi)) => format!("{ty} <= {hi}"),
            _ => ty,
        },
        "" if schema["properties"].is_object() => "object".into(),
        "" => "any".into(),
        _ => ty,
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Text on one line (for a list item).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first sentence of a description (up to its first ". ").
fn first_sentence(s: &str) -> String {
    let s = one_line(s);
    match s.find(". ") {
        Some(i) => s[..=i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both() -> (String, String) {
        let doc = serde_json::to_value(crate::docs::openapi()).unwrap();
        let tools = serde_json::to_value(crate::mcp::catalogue()).unwrap();
        (render(&doc, &tools, "https://capture.example", false), render(&doc, &tools, "https://capture.example", true))
    }

    #[test]
    fn every_operation_tool_and_event_is_in_both_files() {
        let (short, full) = both();
        assert!(short.starts_with("# Capture\n\n> "), "{short}");
        let doc = serde_json::to_value(crate::docs::openapi()).unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for m in item.as_object().unwrap().keys().filter(|m| METHODS.contains(&m.as_str())) {
                let line = format!("- `{} {path}`: ", m.to_ascii_uppercase());
                assert!(short.contains(&line), "{line} is missing from llms.txt");
                assert!(full.contains(&line), "{line} is missing from llms-full.txt");
            }
        }
        for t in crate::mcp::catalogue() {
            assert!(short.contains(&format!("- `{}`: ", t.name)), "tool {} in llms.txt", t.name);
            assert!(full.contains(&format!("### `{}`\n", t.name)), "tool {} in llms-full.txt", t.name);
        }
        for e in capture_core::events::WEBHOOK_EVENTS {
            assert!(short.contains(&format!("- `{e}`: ")), "event {e}");
        }
        assert!(short.contains("https://capture.example/llms-full.txt"));
        assert!(short.len() < full.len() / 2, "the short file is short: {} vs {}", short.len(), full.len());
    }

    #[test]
    fn the_full_file_gives_fields_with_their_types_and_bounds() {
        let (_, full) = both();
        // The capture request's width with its bounds, the proxy tool's argument, an answer.
        let shot = full.split("- `POST /v1/screenshot`: ").nth(1).unwrap();
        let shot = &shot[..shot.find("\n- `").unwrap_or(shot.len())];
        assert!(shot.contains("  - body: ScreenshotRequest\n"), "{shot}");
        assert!(shot.contains("    - `url` (string, required)"), "{shot}");
        assert!(shot.contains("    - `width` (integer "), "{shot}");
        assert!(shot.contains("..3840)"), "{shot}");
        assert!(shot.contains("  - answers: "), "{shot}");
        assert!(shot.contains("    - `cookieConsent` (auto|reject|accept|hide|none)"), "{shot}");
        let tool = full.split("### `request_human`\n").nth(1).unwrap();
        assert!(tool.contains("- `reason` (string, required)"), "{tool}");
    }
}
