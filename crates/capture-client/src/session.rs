//! The stored OAuth session: where it lives, reading and writing it (mode 0600), and
//! refreshing it at the token endpoint. The `oauth2` crate's token requests go through
//! [`send`] over our reqwest (its own integration is for reqwest 0.12); `capture login`
//! uses the same plumbing for the code exchange.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse};
use oauth2::{ClientId, RefreshToken, RequestTokenError, TokenResponse, TokenUrl};
use serde::{Deserialize, Serialize};

use crate::error::{ClientError, Result, exit};

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

/// Send one of `oauth2`'s requests with our reqwest (which must not follow redirects: a
/// token endpoint that redirects is refused rather than followed with the code).
pub(crate) async fn send(
    http: &reqwest::Client,
    req: oauth2::HttpRequest,
) -> std::result::Result<oauth2::HttpResponse, reqwest::Error> {
    let (parts, body) = req.into_parts();
    let r = http.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body).send().await?;
    let status = r.status();
    let headers = r.headers().clone();
    let mut resp = oauth2::HttpResponse::new(r.bytes().await?.to_vec());
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Ok(resp)
}

pub(crate) type TokenError = RequestTokenError<reqwest::Error, BasicErrorResponse>;

/// A token request's failure for people: the server's OAuth error, or why there was none.
pub(crate) fn token_error(what: &str, e: TokenError) -> ClientError {
    match e {
        RequestTokenError::ServerResponse(r) => ClientError::new(
            exit::AUTH,
            format!("{what} failed: {} {}", r.error(), r.error_description().map_or("", String::as_str)),
        ),
        RequestTokenError::Request(e) => ClientError::from(e),
        RequestTokenError::Parse(e, _) => {
            ClientError::new(exit::FAILURE, format!("{what} failed: the token response is malformed: {e}"))
        }
        RequestTokenError::Other(e) => ClientError::new(exit::FAILURE, format!("{what} failed: {e}")),
    }
}

/// A metadata endpoint that is not a URL.
pub(crate) fn bad_endpoint(name: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::new(exit::FAILURE, format!("the server's {name} is not a URL: {e}"))
}

/// The session fields a token response sets.
pub(crate) fn apply_tokens(t: &BasicTokenResponse, previous_refresh: Option<String>) -> (String, Option<String>, i64) {
    (
        t.access_token().secret().clone(),
        t.refresh_token().map(|r| r.secret().clone()).or(previous_refresh),
        now_secs() + t.expires_in().map_or(3600, |d| d.as_secs() as i64),
    )
}

/// Use the refresh token for a new access token (the refresh token rotates) and save it.
pub async fn refresh(http: &reqwest::Client, s: Session) -> Result<Session> {
    let Some(rt) = s.refresh_token.clone() else {
        return Err(ClientError::new(exit::AUTH, "the session expired: run `capture login` again"));
    };
    let oauth = BasicClient::new(ClientId::new(s.client_id.clone()))
        .set_token_uri(TokenUrl::new(s.token_endpoint.clone()).map_err(|e| bad_endpoint("token_endpoint", e))?);
    let via = |req| send(http, req);
    let tokens = match oauth.exchange_refresh_token(&RefreshToken::new(rt)).request_async(&via).await {
        Ok(t) => t,
        Err(RequestTokenError::ServerResponse(_)) => {
            return Err(ClientError::new(exit::AUTH, "the session expired or was revoked: run `capture login` again"));
        }
        Err(e) => return Err(token_error("refreshing the session", e)),
    };
    let (access_token, refresh_token, expires_at) = apply_tokens(&tokens, s.refresh_token.clone());
    let new = Session { access_token, refresh_token, expires_at, ..s };
    save_session(&new)?;
    Ok(new)
}
