//! The operator's language model for `extract: {prompt, schema}`: an OpenAI-compatible chat
//! completions endpoint (OpenAI, Ollama, vLLM, llama.cpp's server…). Without one, a prompt is
//! refused with `FEATURE_UNAVAILABLE` and `/readyz` says why.

use std::time::Duration;

use super::parse::{ConfigError, Reader, err};

/// How the service reaches the language model.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// `CAPTURE_LLM_URL`: the API's base (`http://127.0.0.1:11434/v1`); `/chat/completions` is
    /// added. None: no model.
    pub url: Option<String>,
    /// `CAPTURE_LLM_MODEL`: the model's name (needed with a URL).
    pub model: String,
    /// `CAPTURE_LLM_API_KEY`: sent as a bearer token when set.
    pub api_key: Option<String>,
    /// `CAPTURE_LLM_MAX_CHARS`: most characters of the page's Markdown sent (default 60000).
    pub max_chars: usize,
    /// `CAPTURE_LLM_TIMEOUT`: most time one answer may take (default 60 s).
    pub timeout: Duration,
}

impl LlmSettings {
    pub(super) fn read(r: &Reader) -> Result<LlmSettings, ConfigError> {
        let url = r.get("CAPTURE_LLM_URL").map(|u| u.trim_end_matches('/').to_string());
        if let Some(u) = &url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return Err(err("CAPTURE_LLM_URL", "must be http://… or https://…"));
        }
        let model = r.get("CAPTURE_LLM_MODEL").unwrap_or_default();
        if url.is_some() && model.trim().is_empty() {
            return Err(err("CAPTURE_LLM_MODEL", "must name the model when CAPTURE_LLM_URL is set"));
        }
        let max_chars = r.num("CAPTURE_LLM_MAX_CHARS", 60_000, 1_000, 2_000_000)? as usize;
        let timeout = r.dur_in(
            "CAPTURE_LLM_TIMEOUT",
            "60s",
            Duration::from_secs(1),
            Duration::from_secs(600),
            "must be between 1s and 10m",
        )?;
        Ok(LlmSettings { url, model, api_key: r.get("CAPTURE_LLM_API_KEY"), max_chars, timeout })
    }
}
