//! Getting started, shown on the dashboard until the account's first job exists: create a
//! key, the first `curl`, the MCP server with the Claude Code and Codex lines, and the CLI
//! sign-in, each in a field with a "Copy" button.

use capture_store::ApiKeyRow;

use crate::state::AppState;

/// The getting-started steps, with this server's addresses filled in.
pub struct Start {
    /// The account has a live key already (the first step is done).
    pub has_key: bool,
    pub curl: String,
    pub mcp_url: String,
    pub claude: String,
    pub codex: String,
    pub cli: String,
}

impl Start {
    pub fn new(state: &AppState, keys: &[ApiKeyRow]) -> Start {
        let base = &state.base_url;
        let mcp_url = format!("{base}/mcp");
        Start {
            has_key: keys.iter().any(|k| k.revoked_at.is_none()),
            curl: super::snippets::snippets(base, &first_body()).remove(0).code,
            claude: format!("claude mcp add --transport http capture {mcp_url}"),
            codex: format!("codex mcp add capture --url {mcp_url} && codex mcp login capture"),
            cli: format!("capture login --server {base}"),
            mcp_url,
        }
    }
}

/// The first capture's body: `{"url": "https://example.com/"}`.
fn first_body() -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("url".into(), serde_json::Value::String("https://example.com/".into()));
    m
}
