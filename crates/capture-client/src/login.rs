//! `capture login`: OAuth 2.1 authorization code flow with PKCE (S256) as a native public
//! client (RFC 8252): discovery (RFC 8414), dynamic registration (RFC 7591), a loopback
//! redirect on 127.0.0.1, the code exchanged for tokens, the session stored with mode 0600.
//!
//! The `oauth2` crate makes the PKCE pair, the state, the authorization URL and the token
//! requests. Its reqwest integration is for reqwest 0.12 while the workspace uses 0.13, so
//! its requests go through [`send`](crate::session::send), a few lines over our client. Discovery and registration
//! are not part of `oauth2`; revocation is, but it refuses `http://` endpoints, and a server
//! on the loopback address is the first thing people sign in to: both stay hand-written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use oauth2::basic::BasicClient;
use oauth2::{AuthUrl, AuthorizationCode, ClientId, CsrfToken, PkceCodeChallenge, RedirectUrl, TokenUrl};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::error::{ClientError, Result, exit};
use crate::session::{
    Session, apply_tokens, bad_endpoint, load_session, save_session, send, session_path, token_error,
};

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

    let state = CsrfToken::new_random();
    let callback = Callback::start(state.secret().clone()).await?;
    let redirect_uri = callback.redirect_uri.clone();

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

    let oauth = BasicClient::new(ClientId::new(client_id.clone()))
        .set_auth_uri(AuthUrl::new(authorize).map_err(|e| bad_endpoint("authorization_endpoint", e))?)
        .set_token_uri(TokenUrl::new(token_ep.clone()).map_err(|e| bad_endpoint("token_endpoint", e))?)
        .set_redirect_uri(RedirectUrl::new(redirect_uri).map_err(|e| bad_endpoint("redirect URI", e))?);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = oauth
        .authorize_url(|| state.clone())
        .set_pkce_challenge(challenge)
        // RFC 8707: the tokens are for this server's API (the audience check on the server).
        .add_extra_param("resource", &server)
        .url();
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

    let code = callback.wait(wait).await?;
    let via = |req| send(&http, req);
    let tokens = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", &server)
        .request_async(&via)
        .await
        .map_err(|e| token_error("the token exchange", e))?;
    let (access_token, refresh_token, expires_at) = apply_tokens(&tokens, None);
    if access_token.is_empty() {
        return Err(ClientError::new(exit::AUTH, "the server returned no access token"));
    }
    let session = Session {
        server: server.clone(),
        client_id,
        access_token,
        refresh_token,
        expires_at,
        token_endpoint: token_ep,
        revocation_endpoint: meta["revocation_endpoint"].as_str().map(str::to_string),
    };
    save_session(&session)?;
    println!("Signed in to {server}. Session saved to {}", session_path().display());
    Ok(())
}

/// What the loopback redirect brought: the code, or why there is none.
type Outcome = std::result::Result<String, ClientError>;

/// The loopback redirect target: a small HTTP server on `127.0.0.1:<random port>` that
/// takes one answer on `/callback` and then stops.
struct Callback {
    redirect_uri: String,
    outcome: oneshot::Receiver<Outcome>,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
}

/// What the callback handler holds: the state this login sent, and the sender for the
/// first answer (later ones find it taken).
#[derive(Clone)]
struct Slot {
    state: Arc<str>,
    answer: Arc<Mutex<Option<oneshot::Sender<Outcome>>>>,
}

impl Callback {
    /// Listen on a random loopback port for the answer to the login that sent `state`.
    async fn start(state: String) -> Result<Callback> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| {
            ClientError::new(exit::FAILURE, format!("cannot open a loopback port for the redirect: {e}"))
        })?;
        let port = listener.local_addr().map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?.port();
        let (tx, outcome) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let slot = Slot { state: state.into(), answer: Arc::new(Mutex::new(Some(tx))) };
        let app = axum::Router::new().route("/callback", axum::routing::get(callback)).with_state(slot);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Callback { redirect_uri: format!("http://127.0.0.1:{port}/callback"), outcome, stop, server })
    }

    /// Wait up to `wait` for the answer and stop the server; returns the authorization code.
    async fn wait(self, wait: Duration) -> Result<String> {
        let outcome = tokio::time::timeout(wait, self.outcome).await;
        let _ = self.stop.send(());
        // The page has been answered; a browser's idle keep-alive connection must not hold
        // the command open.
        let mut server = self.server;
        if tokio::time::timeout(Duration::from_secs(2), &mut server).await.is_err() {
            server.abort();
        }
        match outcome {
            Err(_) => Err(ClientError::new(exit::AUTH, "timed out waiting for the sign-in to finish")),
            Ok(Err(_)) => Err(ClientError::new(exit::FAILURE, "the loopback server stopped")),
            Ok(Ok(r)) => r,
        }
    }
}

const PAGE_STYLE: &str =
    "<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}</style>";

async fn callback(State(slot): State<Slot>, Query(q): Query<HashMap<String, String>>) -> (StatusCode, Html<String>) {
    let Some(tx) = slot.answer.lock().ok().and_then(|mut s| s.take()) else {
        return page(StatusCode::CONFLICT, "Already answered", "This sign-in has already finished; close this window.");
    };
    // The state is in the address bar, so it is no secret to compare in constant time; it
    // proves the answer comes from the sign-in this command started, not a forged link.
    let (status, title, text, outcome) = match (q.get("code"), q.get("error")) {
        _ if q.get("state").map(String::as_str) != Some(&*slot.state) => (
            StatusCode::BAD_REQUEST,
            "Sign-in refused",
            "This answer does not belong to the sign-in started in your terminal, so it was refused. \
             Run <code>capture login</code> again.",
            Err(ClientError::new(exit::AUTH, "the sign-in answer did not match this login (state mismatch)")),
        ),
        (Some(code), _) => (
            StatusCode::OK,
            "Signed in",
            "You can close this window; the terminal shows when the session is saved.",
            Ok(code.clone()),
        ),
        (None, Some(err)) => (
            StatusCode::OK,
            "Sign-in cancelled",
            "Go back to the terminal.",
            Err(ClientError::new(exit::AUTH, format!("the sign-in was not completed: {err}"))),
        ),
        (None, None) => (
            StatusCode::BAD_REQUEST,
            "Not a sign-in answer",
            "This address expects the answer of the sign-in page. Run <code>capture login</code> again.",
            Err(ClientError::new(exit::AUTH, "the sign-in answer carried neither a code nor an error")),
        ),
    };
    let _ = tx.send(outcome);
    page(status, title, text)
}

fn page(status: StatusCode, title: &str, text: &str) -> (StatusCode, Html<String>) {
    (
        status,
        Html(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Capture: {title}</title>\
             {PAGE_STYLE}</head><body><h1>{title}</h1><p>{text}</p></body></html>"
        )),
    )
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
