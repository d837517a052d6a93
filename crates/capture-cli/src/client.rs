//! The client side of the `capture` binary: credentials (an API key or a stored OAuth
//! session), the HTTP calls, and errors with clear messages and exit codes.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Exit codes of client commands.
pub mod exit {
    /// A generic failure (network, server error, bad response, a full queue: try again later).
    pub const FAILURE: u8 = 1;
    /// Not signed in, or the credential was refused (401).
    pub const AUTH: u8 = 3;
    /// The monthly quota is used up (429).
    pub const QUOTA: u8 = 4;
    /// The capture itself failed.
    pub const CAPTURE_FAILED: u8 = 5;
    /// The request was refused as invalid (4xx other than the above and 429).
    pub const INVALID: u8 = 6;
}

/// A client error: a message for people and the exit code to leave with.
#[derive(Debug)]
pub struct ClientError {
    pub message: String,
    pub code: u8,
}

impl ClientError {
    /// An error with `code`.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        ClientError { message: message.into(), code }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<reqwest::Error> for ClientError {
    fn from(e: reqwest::Error) -> Self {
        let what = if e.is_connect() {
            "cannot reach the server (is it running? check --server)"
        } else if e.is_timeout() {
            "the server did not answer in time"
        } else {
            "the request failed"
        };
        ClientError::new(exit::FAILURE, format!("{what}: {e}"))
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, ClientError>;

/// A stored OAuth session (`~/.config/capture/session.json`, mode 0600).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub server: String,
    pub client_id: String,
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Unix seconds when the access token expires.
    pub expires_at: i64,
    pub token_endpoint: String,
    pub revocation_endpoint: Option<String>,
}

/// Where the session file lives: `$CAPTURE_CONFIG_DIR`, `$XDG_CONFIG_HOME/capture` or
/// `~/.config/capture`.
pub fn config_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CAPTURE_CONFIG_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("capture");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".config").join("capture")
}

/// The session file's path.
pub fn session_path() -> PathBuf {
    config_dir().join("session.json")
}

/// Read the stored session, if any.
pub fn load_session() -> Option<Session> {
    let text = std::fs::read_to_string(session_path()).ok()?;
    serde_json::from_str(&text).ok()
}

/// Store the session with mode 0600 (written to a temporary file, then renamed).
pub fn save_session(s: &Session) -> Result<()> {
    let dir = config_dir();
    std::fs::create_dir_all(&dir).map_err(|e| ClientError::new(exit::FAILURE, format!("{}: {e}", dir.display())))?;
    let path = session_path();
    let tmp = path.with_extension("json.tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let write = || -> std::io::Result<()> {
        let mut f = opts.open(&tmp)?;
        std::io::Write::write_all(&mut f, serde_json::to_string_pretty(s).unwrap_or_default().as_bytes())?;
        #[cfg(unix)]
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| ClientError::new(exit::FAILURE, format!("saving the session to {}: {e}", path.display())))
}

/// Unix seconds now.
pub fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The credential for a call.
#[derive(Debug, Clone)]
pub enum Credential {
    ApiKey(String),
    Session(Session),
}

/// A connected client: server base URL, credential, HTTP client.
pub struct Client {
    pub server: String,
    pub credential: Credential,
    pub http: reqwest::Client,
}

/// The default server when nothing else says.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";

impl Client {
    /// Build from `--api-key`/`CAPTURE_API_KEY`, else the stored session (refreshed when
    /// it is about to expire). `server` overrides the session's.
    pub async fn connect(api_key: Option<String>, server: Option<String>) -> Result<Client> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("capture-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?;
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            let server = server.unwrap_or_else(|| DEFAULT_SERVER.into());
            return Ok(Client {
                server: server.trim_end_matches('/').into(),
                credential: Credential::ApiKey(key),
                http,
            });
        }
        let Some(mut session) = load_session() else {
            return Err(ClientError::new(
                exit::AUTH,
                "not signed in: run `capture login --server URL`, or pass --api-key / set CAPTURE_API_KEY",
            ));
        };
        if let Some(s) = server
            && s.trim_end_matches('/') != session.server
        {
            return Err(ClientError::new(
                exit::AUTH,
                format!(
                    "the stored session is for {}; run `capture login --server {s}` or pass --api-key",
                    session.server
                ),
            ));
        }
        if session.expires_at - 60 <= now_secs() {
            session = refresh(&http, session).await?;
        }
        Ok(Client { server: session.server.clone(), credential: Credential::Session(session), http })
    }

    fn bearer(&self) -> &str {
        match &self.credential {
            Credential::ApiKey(k) => k,
            Credential::Session(s) => &s.access_token,
        }
    }

    /// GET a JSON resource.
    pub async fn get(&self, path: &str) -> Result<Value> {
        let r = self.http.get(format!("{}{path}", self.server)).bearer_auth(self.bearer()).send().await?;
        json_or_error(r).await
    }

    /// POST JSON (or nothing) and read JSON.
    pub async fn post(&self, path: &str, body: Option<&Value>) -> Result<Value> {
        let mut req = self.http.post(format!("{}{path}", self.server)).bearer_auth(self.bearer());
        if let Some(b) = body {
            req = req.json(b);
        }
        json_or_error(req.send().await?).await
    }

    /// DELETE a resource.
    pub async fn delete(&self, path: &str) -> Result<()> {
        let r = self.http.delete(format!("{}{path}", self.server)).bearer_auth(self.bearer()).send().await?;
        if r.status().is_success() {
            return Ok(());
        }
        json_or_error(r).await.map(|_| ())
    }

    /// An authenticated GET returning the raw response (streams, downloads).
    pub async fn get_raw(&self, url: &str) -> Result<reqwest::Response> {
        let r = self.http.get(url).bearer_auth(self.bearer()).send().await?;
        if r.status().is_success() {
            return Ok(r);
        }
        let status = r.status().as_u16();
        Err(json_or_error(r)
            .await
            .err()
            .unwrap_or_else(|| ClientError::new(exit::FAILURE, format!("unexpected HTTP {status}"))))
    }
}

/// Turn a response into JSON, or a `ClientError` with the server's code and message.
pub async fn json_or_error(r: reqwest::Response) -> Result<Value> {
    let status = r.status().as_u16();
    let text = r.text().await?;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        return Ok(v);
    }
    let msg = v["error"].as_str().map(str::to_string).unwrap_or_else(|| text.chars().take(200).collect());
    let code = v["code"].as_str().unwrap_or("");
    let exit_code = match status {
        401 => exit::AUTH,
        429 if code == "PLAN_QUOTA_EXCEEDED" => exit::QUOTA,
        // QUEUE_FULL and other 429s are transient: retrying later may work.
        429 => exit::FAILURE,
        400..=499 => exit::INVALID,
        _ => exit::FAILURE,
    };
    let mut m = format!("{msg} (HTTP {status}{})", if code.is_empty() { String::new() } else { format!(", {code}") });
    if status == 401 {
        m.push_str("; sign in again with `capture login` or check the API key");
    }
    if let Some(d) = v.get("details").filter(|d| !d.is_null()) {
        m.push_str(&format!("; details: {d}"));
    }
    Err(ClientError::new(exit_code, m))
}

/// Use the refresh token for a new access token (the refresh token rotates).
pub async fn refresh(http: &reqwest::Client, s: Session) -> Result<Session> {
    let Some(rt) = s.refresh_token.clone() else {
        return Err(ClientError::new(exit::AUTH, "the session expired: run `capture login` again"));
    };
    let r = http
        .post(&s.token_endpoint)
        .form(&[("grant_type", "refresh_token"), ("refresh_token", rt.as_str()), ("client_id", s.client_id.as_str())])
        .send()
        .await?;
    if !r.status().is_success() {
        return Err(ClientError::new(exit::AUTH, "the session expired or was revoked: run `capture login` again"));
    }
    let v: Value = r.json().await?;
    let new = Session {
        access_token: v["access_token"].as_str().unwrap_or_default().to_string(),
        refresh_token: v["refresh_token"].as_str().map(str::to_string).or(s.refresh_token.clone()),
        expires_at: now_secs() + v["expires_in"].as_i64().unwrap_or(3600),
        ..s
    };
    save_session(&new)?;
    Ok(new)
}
