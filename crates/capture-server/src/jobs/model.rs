//! `extract: {prompt, schema}`: the page's Markdown sent to the operator's language model (an
//! OpenAI-compatible chat completions endpoint, `CAPTURE_LLM_*`), its answer read as JSON and
//! validated against the schema, asked once more with the validation error when it does not
//! match.

use std::collections::BTreeMap;

use capture_core::metadata::Extracted;
use capture_core::options::{ContentFormat, ContentSettings, ExtractSettings};
use serde_json::{Value, json};

use crate::config::LlmSettings;

/// What the model is told, before the schema and the page.
const SYSTEM: &str = "You extract structured data from one web page, given as Markdown. Answer with a single JSON \
object and nothing else: no prose, no code fence. Use only what the page says; where it does not say, use null. \
Never invent values.";

/// Ask the model for the data `spec.prompt` and `spec.schema` describe, from the page's
/// Markdown (`markdown`, cut to `CAPTURE_LLM_MAX_CHARS`). The error says why, for the job's
/// `error`.
pub async fn extract(
    cfg: &LlmSettings,
    client: Option<&reqwest::Client>,
    spec: &ExtractSettings,
    markdown: &str,
) -> Result<Extracted, String> {
    let (Some(base), Some(client)) = (&cfg.url, client) else {
        return Err("extract: no language model is configured here (CAPTURE_LLM_URL)".into());
    };
    let page: String = markdown.chars().take(cfg.max_chars).collect();
    let mut instruction = format!("Task: {}\n", spec.prompt.as_deref().unwrap_or_default());
    if let Some(schema) = &spec.schema {
        instruction.push_str(&format!("The JSON object must match this JSON Schema:\n{schema}\n"));
    }
    instruction.push_str(&format!("\nThe page:\n\n{page}"));
    let mut messages =
        vec![json!({"role": "system", "content": SYSTEM}), json!({"role": "user", "content": instruction})];
    let url = format!("{base}/chat/completions");
    let mut last = String::new();
    // The first answer, and one more with what was wrong with it.
    for attempt in 0..2 {
        let answer = ask(client, &url, cfg, &messages).await?;
        match read_answer(&answer).and_then(|data| check(spec, data)) {
            Ok(data) => {
                let from = format!("model:{}", cfg.model);
                let sources: BTreeMap<String, Option<String>> = match &data {
                    Value::Object(m) => {
                        m.iter().map(|(k, v)| (k.clone(), (!v.is_null()).then(|| from.clone()))).collect()
                    }
                    _ => BTreeMap::new(),
                };
                return Ok(Extracted { data, sources });
            }
            Err(why) => {
                tracing::info!(attempt, why = %why, "the language model's answer was not valid");
                last = why.clone();
                messages.push(json!({"role": "assistant", "content": answer}));
                messages.push(json!({"role": "user", "content": format!(
                    "That answer is not valid: {why}. Answer again with the corrected JSON object only."
                )}));
            }
        }
    }
    Err(format!("extract: the language model's answer is not valid after a retry: {last}"))
}

/// One chat completion: the assistant's text.
async fn ask(client: &reqwest::Client, url: &str, cfg: &LlmSettings, messages: &[Value]) -> Result<String, String> {
    let body = json!({
        "model": cfg.model,
        "messages": messages,
        "temperature": 0,
        "response_format": {"type": "json_object"},
    });
    let mut req = client.post(url).json(&body);
    if let Some(k) = &cfg.api_key {
        req = req.bearer_auth(k);
    }
    let r = req.send().await.map_err(|e| format!("extract: the language model could not be reached: {e}"))?;
    let status = r.status();
    let v: Value =
        r.json().await.map_err(|e| format!("extract: the language model answered {status} without JSON: {e}"))?;
    if !status.is_success() {
        let why = v["error"]["message"].as_str().or(v["error"].as_str()).unwrap_or("no reason given");
        return Err(format!("extract: the language model answered {status}: {why}"));
    }
    v["choices"][0]["message"]["content"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "extract: the language model's answer has no message".to_string())
}

/// The answer's JSON object (a fence around it is taken off).
fn read_answer(answer: &str) -> Result<Value, String> {
    let t = answer.trim();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).unwrap_or(t);
    let t = t.strip_suffix("```").unwrap_or(t).trim();
    match serde_json::from_str::<Value>(t) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("the answer is not a JSON object".into()),
        Err(e) => Err(format!("the answer is not JSON ({e})")),
    }
}

fn check(spec: &ExtractSettings, data: Value) -> Result<Value, String> {
    spec.validate(&data).map_err(|e| format!("it does not match the schema at {e}"))?;
    Ok(data)
}

/// The page's Markdown as the model reads it: front matter and the whole text.
pub fn markdown_of(out: &capture_browser::CaptureOutput) -> Option<String> {
    let content = out.content.as_ref()?;
    let settings = ContentSettings { formats: vec![ContentFormat::Markdown], ..Default::default() };
    let at = capture_core::time::iso(capture_core::time::now_ms());
    Some(capture_browser::content::render(ContentFormat::Markdown, content, &out.metadata, &at, &settings).text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_past_a_fence_and_must_be_an_object() {
        assert_eq!(read_answer("```json\n{\"a\": 1}\n```"), Ok(json!({"a": 1})));
        assert_eq!(read_answer(" {\"a\": null} "), Ok(json!({"a": null})));
        assert_eq!(read_answer("[1]"), Err("the answer is not a JSON object".into()));
        assert!(read_answer("The price is 12").unwrap_err().starts_with("the answer is not JSON"));
    }
}
