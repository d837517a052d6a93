//! The same capture request as `curl`, Python and Node code, with the caller's key left as
//! a placeholder (`$CAPTURE_API_KEY`), for the playground and a job's page.

use capture_core::credentials::CredentialsSet;
use capture_core::options::CaptureOptions;
use serde_json::{Map, Value, json};

/// One snippet: its language's name, the element id and the code.
pub struct Snippet {
    pub id: &'static str,
    pub label: &'static str,
    pub code: String,
}

/// The `POST /v1/screenshot` body for `o`: the URL and every option that differs from its
/// default, in the contract's names. The stored options carry the request's names, so each
/// one is read off their JSON (a new option needs nothing here); only the two stored in
/// another form are translated: `cookieConsent` (a bool here, `auto`/`none` on the wire) and
/// `format`, which a PDF leaves out.
pub fn request_body(o: &CaptureOptions) -> Map<String, Value> {
    let (Ok(Value::Object(set)), Ok(Value::Object(defaults))) =
        (serde_json::to_value(o), serde_json::to_value(CaptureOptions::default()))
    else {
        return Map::new();
    };
    let mut m: Map<String, Value> =
        set.into_iter().filter(|(k, v)| !v.is_null() && defaults.get(k) != Some(v)).collect();
    if m.contains_key("cookieConsent") {
        m.insert("cookieConsent".into(), json!(o.cookie_consent.as_str()));
    }
    if o.pdf {
        m.remove("format");
    }
    // The page as text is stored as one setting; on the wire it is `format` and three options.
    if let Some(c) = m.remove("content").and(o.content.as_ref()) {
        if c.main_content {
            m.insert("mainContent".into(), json!(true));
        }
        if !c.include_selectors.is_empty() {
            m.insert("includeSelectors".into(), json!(c.include_selectors));
        }
        if !c.exclude_selectors.is_empty() {
            m.insert("excludeSelectors".into(), json!(c.exclude_selectors));
        }
    }
    // Credentials are kept only until the job runs and never shown: their names, with a
    // placeholder where each value goes.
    if let Some(set) = m.remove("credentialsSet").and_then(|v| serde_json::from_value::<CredentialsSet>(v).ok()) {
        if !set.headers.is_empty() {
            let h: Map<String, Value> = set.headers.iter().map(|n| (n.clone(), json!(HIDDEN))).collect();
            m.insert("headers".into(), Value::Object(h));
        }
        if !set.cookies.is_empty() {
            m.insert("cookies".into(), set.cookies.iter().map(|n| json!({"name": n, "value": HIDDEN})).collect());
        }
        if set.http_auth {
            m.insert("httpAuth".into(), json!({"username": HIDDEN, "password": HIDDEN}));
        }
    }
    m.insert("url".into(), json!(o.url.clone().unwrap_or_default()));
    m
}

/// What a request body shows where a credential's value was.
pub const HIDDEN: &str = "(hidden)";

/// `curl`, Python (`requests`) and Node (`fetch`) snippets sending `body` to `base_url`.
pub fn snippets(base_url: &str, body: &Map<String, Value>) -> Vec<Snippet> {
    let endpoint = format!("{base_url}/v1/screenshot");
    let compact = Value::Object(body.clone()).to_string();
    let pretty = serde_json::to_string_pretty(&Value::Object(body.clone())).unwrap_or_else(|_| compact.clone());
    let shell_quoted = format!("'{}'", compact.replace('\'', "'\\''"));
    let curl = format!(
        "curl -X POST {endpoint} \\\n  -H \"Authorization: Bearer $CAPTURE_API_KEY\" \\\n  -H \"Content-Type: application/json\" \\\n  -d {shell_quoted}"
    );
    let python = format!(
        "import os, requests\n\nr = requests.post(\n    \"{endpoint}\",\n    headers={{\"Authorization\": \"Bearer \" + os.environ[\"CAPTURE_API_KEY\"]}},\n    json={},\n)\nprint(r.json())",
        python_literal(&Value::Object(body.clone()), 1)
    );
    let node = format!(
        "const r = await fetch(\"{endpoint}\", {{\n  method: \"POST\",\n  headers: {{\n    Authorization: `Bearer ${{process.env.CAPTURE_API_KEY}}`,\n    \"Content-Type\": \"application/json\",\n  }},\n  body: JSON.stringify({}),\n}});\nconsole.log(await r.json());",
        indent(&pretty, 2)
    );
    vec![
        Snippet { id: "snippet-curl", label: "curl", code: curl },
        Snippet { id: "snippet-python", label: "Python", code: python },
        Snippet { id: "snippet-node", label: "Node.js", code: node },
    ]
}

/// Every line after the first indented by `n` spaces.
fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines()
        .enumerate()
        .map(|(i, l)| if i == 0 { l.to_string() } else { format!("{pad}{l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `v` as a Python literal (`True`, `False`, `None`), objects one key a line.
fn python_literal(v: &Value, depth: usize) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(a) => {
            format!("[{}]", a.iter().map(|x| python_literal(x, depth + 1)).collect::<Vec<_>>().join(", "))
        }
        Value::Object(m) => {
            let pad = "    ".repeat(depth + 1);
            let end = "    ".repeat(depth);
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{pad}{}: {},", Value::String(k.clone()), python_literal(x, depth + 1)))
                .collect();
            format!("{{\n{}\n{end}}}", items.join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: Value) -> CaptureOptions {
        crate::http::validated::validate::<capture_core::options::ScreenshotIn>(v.as_object().unwrap()).unwrap()
    }

    #[test]
    fn the_body_names_only_what_differs_from_the_defaults() {
        let o =
            opts(json!({"url": "https://example.com/", "fullPage": true, "format": "webp", "cookieConsent": "none"}));
        assert_eq!(
            Value::Object(request_body(&o)),
            json!({"url": "https://example.com/", "fullPage": true, "format": "webp", "cookieConsent": "none"})
        );
        let pdf = opts(json!({"url": "https://example.com/", "pdf": true, "deviceScaleFactor": 2}));
        assert_eq!(
            Value::Object(request_body(&pdf)),
            json!({"url": "https://example.com/", "pdf": true, "deviceScaleFactor": 2.0})
        );
        // The body parses back to the same options.
        assert_eq!(opts(Value::Object(request_body(&o))), o);
        assert_eq!(opts(Value::Object(request_body(&pdf))), pdf);
        // Every option away from its default is in the body, in the request's names.
        let all = json!({
            "url": "https://example.com/", "width": 640, "height": 480, "fullPage": true, "format": "jpeg",
            "delay": 100, "darkMode": true, "cookieConsent": "none", "waitFor": "#main", "waitUntil": "load",
            "timeoutMs": 5000, "preScreenshotJs": "document.title", "deviceScaleFactor": 2.0, "clickBefore": ".ok",
        });
        let every = opts(all.clone());
        assert_eq!(Value::Object(request_body(&every)), all);
        assert_eq!(opts(Value::Object(request_body(&every))), every);
        let names = capture_core::options::ScreenshotIn::field_names();
        assert!(request_body(&every).keys().all(|k| names.contains(&k.as_str())));
        // The page as text comes back as the request said it.
        let text = json!({"url": "https://example.com/", "format": "markdown", "mainContent": true,
            "excludeSelectors": ["nav"]});
        assert_eq!(Value::Object(request_body(&opts(text.clone()))), text);
    }

    #[test]
    fn snippets_quote_the_body_for_each_language() {
        let o = opts(json!({"url": "https://example.com/", "darkMode": true, "waitFor": "a[title='x']"}));
        let s = snippets("https://capture.example", &request_body(&o));
        assert_eq!(s.len(), 3);
        assert!(s[0].code.contains("curl -X POST https://capture.example/v1/screenshot"), "{}", s[0].code);
        assert!(
            s[0].code.contains(r#"-d '{"darkMode":true,"url":"https://example.com/","waitFor":"a[title='\''x'\'']"}'"#),
            "{}",
            s[0].code
        );
        assert!(s[0].code.contains("$CAPTURE_API_KEY"));
        assert!(s[1].code.contains("\"darkMode\": True,"), "{}", s[1].code);
        assert!(s[1].code.contains("os.environ[\"CAPTURE_API_KEY\"]"));
        assert!(s[2].code.contains("\"darkMode\": true"), "{}", s[2].code);
        assert!(s[2].code.contains("process.env.CAPTURE_API_KEY"));
    }
}
