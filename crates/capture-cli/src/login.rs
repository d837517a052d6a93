//! `capture login`: OAuth 2.1 authorization code flow with PKCE (S256) as a native public
//! client (RFC 8252): discovery (RFC 8414), dynamic registration (RFC 7591), a loopback
//! redirect on 127.0.0.1, the code exchanged for tokens, the session stored with mode 0600.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng;
use rand::distributions::Alphanumeric;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::{ClientError, Result, Session, exit, load_session, now_secs, save_session, session_path};

fn random(n: usize) -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(n).map(char::from).collect()
}

/// The PKCE S256 challenge of a verifier.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

async fn discover(http: &reqwest::Client, server: &str) -> Result<Value> {
    let url = format!("{server}/.well-known/oauth-authorization-server");
    let r = http.get(&url).send().await?;
    if !r.status().is_success() {
        return Err(ClientError::new(
            exit::FAILURE,
            format!("{url} answered HTTP {}: is {server} a Capture server?", r.status()),
        ));
    }
    r.json().await.map_err(|e| ClientError::new(exit::FAILURE, format!("bad metadata at {url}: {e}")))
}

fn endpoint(meta: &Value, name: &str) -> Result<String> {
    meta[name]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ClientError::new(exit::FAILURE, format!("the server's OAuth metadata lacks {name}")))
}

/// Run the whole login; prints the authorization URL (for headless machines) and tries
/// to open a browser unless `no_browser`.
pub async fn login(server: &str, no_browser: bool, wait: Duration) -> Result<()> {
    let server = server.trim_end_matches('/').to_string();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?;
    let meta = discover(&http, &server).await?;
    let authorize = endpoint(&meta, "authorization_endpoint")?;
    let token_ep = endpoint(&meta, "token_endpoint")?;
    let register = endpoint(&meta, "registration_endpoint")?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| ClientError::new(exit::FAILURE, format!("cannot open a loopback port for the redirect: {e}")))?;
    let port = listener.local_addr().map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let reg = http
        .post(&register)
        .json(&json!({
            "client_name": "Capture CLI",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
        .send()
        .await?;
    let reg = crate::client::json_or_error(reg).await?;
    let client_id = reg["client_id"]
        .as_str()
        .ok_or_else(|| ClientError::new(exit::FAILURE, "registration returned no client_id"))?
        .to_string();

    let verifier = random(64);
    let state = random(32);
    let mut url = url::Url::parse(&authorize)
        .map_err(|e| ClientError::new(exit::FAILURE, format!("bad authorization endpoint: {e}")))?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("code_challenge", &challenge(&verifier))
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("resource", &server);
    println!("To sign in, open this address in a browser:\n{url}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    if !no_browser {
        let _ = std::process::Command::new("xdg-open")
            .arg(url.as_str())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }

    let (code, got_state) = tokio::time::timeout(wait, receive_code(&listener))
        .await
        .map_err(|_| ClientError::new(exit::AUTH, "timed out waiting for the sign-in to finish"))??;
    if got_state != state {
        return Err(ClientError::new(exit::AUTH, "the sign-in answer did not match this login (state mismatch)"));
    }
    let r = http
        .post(&token_ep)
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("client_id", client_id.as_str()),
            ("code_verifier", verifier.as_str()),
            ("resource", server.as_str()),
        ])
        .send()
        .await?;
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(ClientError::new(
            exit::AUTH,
            format!(
                "the token exchange failed: {} {}",
                v["error"].as_str().unwrap_or(""),
                v["error_description"].as_str().unwrap_or("")
            ),
        ));
    }
    let session = Session {
        server: server.clone(),
        client_id,
        access_token: v["access_token"].as_str().unwrap_or_default().to_string(),
        refresh_token: v["refresh_token"].as_str().map(str::to_string),
        expires_at: now_secs() + v["expires_in"].as_i64().unwrap_or(3600),
        token_endpoint: token_ep,
        revocation_endpoint: meta["revocation_endpoint"].as_str().map(str::to_string),
    };
    if session.access_token.is_empty() {
        return Err(ClientError::new(exit::AUTH, "the server returned no access token"));
    }
    save_session(&session)?;
    println!("Signed in to {server}. Session saved to {}", session_path().display());
    Ok(())
}

/// Accept connections on the loopback listener until one carries `code` (or `error`).
async fn receive_code(listener: &tokio::net::TcpListener) -> Result<(String, String)> {
    loop {
        let (mut sock, _) = listener.accept().await.map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?;
        let mut buf = vec![0u8; 8192];
        let mut n = 0;
        while n < buf.len() {
            match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf[n..])).await {
                Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
                Ok(Ok(k)) => {
                    n += k;
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
        let head = String::from_utf8_lossy(&buf[..n]).to_string();
        let target = head.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or("/").to_string();
        let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok();
        let param =
            |k: &str| url.as_ref().and_then(|u| u.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned()));
        let (status, body, result) =
            match (url.as_ref().map(|u| u.path() == "/callback"), param("code"), param("error")) {
                (Some(true), Some(code), _) => (
                    "200 OK",
                    "<h1>Signed in</h1><p>You can close this window and go back to the terminal.</p>",
                    Some(Ok((code, param("state").unwrap_or_default()))),
                ),
                (Some(true), None, Some(err)) => (
                    "200 OK",
                    "<h1>Sign-in cancelled</h1><p>Go back to the terminal.</p>",
                    Some(Err(ClientError::new(exit::AUTH, format!("the sign-in was not completed: {err}")))),
                ),
                _ => ("404 Not Found", "<h1>Not found</h1>", None),
            };
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = sock.write_all(resp.as_bytes()).await;
        let _ = sock.shutdown().await;
        if let Some(r) = result {
            return r;
        }
    }
}

/// `capture logout`: revoke the tokens (best effort) and delete the stored session.
pub async fn logout() -> Result<()> {
    let Some(s) = load_session() else {
        println!("Not signed in.");
        return Ok(());
    };
    if let Some(rev) = &s.revocation_endpoint {
        let http = reqwest::Client::new();
        for t in [Some(&s.access_token), s.refresh_token.as_ref()].into_iter().flatten() {
            let _ = http
                .post(rev)
                .form(&[("token", t.as_str()), ("client_id", s.client_id.as_str())])
                .timeout(Duration::from_secs(10))
                .send()
                .await;
        }
    }
    std::fs::remove_file(session_path())
        .map_err(|e| ClientError::new(exit::FAILURE, format!("{}: {e}", session_path().display())))?;
    println!("Signed out of {}.", s.server);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn pkce_challenge_matches_rfc_7636_example() {
        // RFC 7636 appendix B.
        assert_eq!(
            super::challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
