//! The client side of the `capture` binary: credentials (an API key or a stored OAuth
//! session) and the HTTP calls, with retries and clear errors.

use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::error::{ClientError, Result, exit};
use crate::retry::{self, Decision, RetryPolicy, human};
use crate::session::{Session, load_session, now_secs};

/// The credential for a call.
#[derive(Debug, Clone)]
pub enum Credential {
    ApiKey(String),
    Session(Session),
}

/// A connected client: server base URL, credential, HTTP client, retry policy.
pub struct Client {
    pub server: String,
    pub credential: Credential,
    pub http: reqwest::Client,
    pub retry: RetryPolicy,
    /// The longest one attempt of a JSON call may take.
    pub request_timeout: Duration,
}

/// The default server when nothing else says.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";

/// A successful JSON answer.
#[derive(Debug)]
pub struct Answer {
    pub body: Value,
    /// The server replayed the stored answer of an earlier request with the same
    /// Idempotency-Key (`Idempotency-Replayed: true`).
    pub replayed: bool,
}

/// One failed attempt: the server's error answer, or no answer at all.
enum Failure {
    Api(ApiFailure),
    Network(reqwest::Error),
}

/// An error answer of the API (`{error, code, requestId, details}`).
pub struct ApiFailure {
    pub status: u16,
    pub code: String,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<Duration>,
}

impl ApiFailure {
    /// Read a non-2xx response (its body is consumed).
    pub async fn read(r: reqwest::Response) -> std::result::Result<ApiFailure, reqwest::Error> {
        let status = r.status().as_u16();
        let retry_after = r
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry::parse_retry_after(v, SystemTime::now()));
        let text = r.text().await?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(ApiFailure {
            status,
            code: v["code"].as_str().unwrap_or_default().to_string(),
            message: v["error"].as_str().map(str::to_string).unwrap_or_else(|| text.chars().take(200).collect()),
            details: v.get("details").filter(|d| !d.is_null()).cloned(),
            retry_after,
        })
    }

    /// `message (HTTP 429, PLAN_QUOTA_EXCEEDED)`.
    fn summary(&self) -> String {
        let code = if self.code.is_empty() { String::new() } else { format!(", {}", self.code) };
        format!("{} (HTTP {}{code})", self.message, self.status)
    }

    /// The error to exit with.
    pub fn into_error(self) -> ClientError {
        let exit_code = match self.status {
            401 => exit::AUTH,
            429 if self.code == "PLAN_QUOTA_EXCEEDED" => exit::QUOTA,
            // QUEUE_FULL and other 429s are transient: retrying later may work.
            429 => exit::FAILURE,
            409 if self.code == "IDEMPOTENCY_IN_FLIGHT" => exit::FAILURE,
            400..=499 => exit::INVALID,
            _ => exit::FAILURE,
        };
        let mut m = self.summary();
        if self.status == 401 {
            m.push_str("; sign in again with `capture login` or check the API key");
        }
        if let Some(d) = &self.details {
            m.push_str(&format!("; details: {d}"));
        }
        ClientError::new(exit_code, m)
    }
}

impl Failure {
    fn transient(&self) -> bool {
        match self {
            // No answer (refused, reset, timed out): with an Idempotency-Key or a GET a
            // second try is safe. A malformed URL or a redirect loop will not heal.
            Failure::Network(e) => !e.is_builder() && !e.is_redirect(),
            Failure::Api(a) => retry::is_transient(a.status, Some(&a.code)),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Api(a) => a.retry_after,
            Failure::Network(_) => None,
        }
    }

    fn summary(&self) -> String {
        match self {
            Failure::Api(a) => a.summary(),
            Failure::Network(e) => ClientError::from(e).message,
        }
    }

    fn into_error(self) -> ClientError {
        match self {
            Failure::Api(a) => a.into_error(),
            Failure::Network(e) => ClientError::from(e),
        }
    }
}

impl Client {
    /// Build from `--api-key`/`CAPTURE_API_KEY`, else the stored session (refreshed when
    /// it is about to expire). `server` overrides the session's.
    pub async fn connect(
        api_key: Option<String>,
        server: Option<String>,
        retry: RetryPolicy,
        request_timeout: Duration,
    ) -> Result<Client> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("capture-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10).min(request_timeout))
            // Per read, not per request: an event stream stays open for minutes, with a
            // heartbeat every 15 s by default.
            .read_timeout(Duration::from_secs(60).max(request_timeout))
            .build()
            .map_err(|e| ClientError::new(exit::FAILURE, e.to_string()))?;
        let client =
            |server: String, credential| Client { server, credential, http: http.clone(), retry, request_timeout };
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            let server = server.unwrap_or_else(|| DEFAULT_SERVER.into());
            return Ok(client(server.trim_end_matches('/').into(), Credential::ApiKey(key)));
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
            // Never retried: refresh tokens rotate, and replaying a spent one ends the grant.
            session = crate::session::refresh(&http, session).await?;
        }
        Ok(client(session.server.clone(), Credential::Session(session)))
    }

    fn bearer(&self) -> &str {
        match &self.credential {
            Credential::ApiKey(k) => k,
            Credential::Session(s) => &s.access_token,
        }
    }

    /// Send what `build` makes, again on transient failures as the retry policy allows
    /// (callers pass only requests that are safe to repeat: GETs, and POSTs with an
    /// Idempotency-Key), and read the successful answer with `read` inside the same attempt,
    /// so a connection lost mid-body is retried too.
    async fn send<T, F, Fut>(&self, build: impl Fn() -> reqwest::RequestBuilder, read: F) -> Result<T>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = std::result::Result<T, reqwest::Error>>,
    {
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            let failure = match build().send().await {
                Ok(r) if r.status().is_success() => match read(r).await {
                    Ok(v) => return Ok(v),
                    Err(e) => Failure::Network(e),
                },
                Ok(r) => match ApiFailure::read(r).await {
                    Ok(a) => Failure::Api(a),
                    Err(e) => Failure::Network(e),
                },
                Err(e) => Failure::Network(e),
            };
            let decision = self.retry.decide(failure.transient(), attempt, started.elapsed(), failure.retry_after());
            let wait = match decision {
                Decision::Retry(wait) => wait,
                Decision::Permanent => return Err(failure.into_error()),
                Decision::OutOfAttempts => {
                    let mut e = failure.into_error();
                    if attempt > 1 {
                        let took = human(started.elapsed());
                        e.message.push_str(&format!("; gave up after {attempt} attempts in {took}"));
                    }
                    return Err(e);
                }
                Decision::WaitTooLong(after) => {
                    let quota = matches!(&failure, Failure::Api(a) if a.code == "PLAN_QUOTA_EXCEEDED");
                    let reset = match &failure {
                        Failure::Api(a) => a.details.as_ref().and_then(|d| d["resetAt"].as_str()).map(str::to_string),
                        Failure::Network(_) => None,
                    };
                    let mut e = failure.into_error();
                    if quota {
                        let at = reset.unwrap_or_else(|| httpdate::fmt_http_date(SystemTime::now() + after));
                        e.message.push_str(&format!("; the quota resets at {at} (in {}): not waiting", human(after)));
                    } else {
                        e.message.push_str(&format!(
                            "; the server asks to retry in {}, past --max-retry-time: not waiting",
                            human(after)
                        ));
                    }
                    return Err(e);
                }
            };
            if !self.retry.quiet {
                eprintln!(
                    "{}; retrying in {} (attempt {} of {})",
                    failure.summary(),
                    human(wait),
                    attempt + 1,
                    self.retry.max_attempts
                );
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// GET a JSON resource (retried).
    pub async fn get(&self, path: &str) -> Result<Value> {
        let url = format!("{}{path}", self.server);
        self.send(|| self.http.get(&url).bearer_auth(self.bearer()).timeout(self.request_timeout), read_json).await
    }

    /// POST JSON (or nothing) and read JSON; not retried (the request may not be safe to repeat).
    pub async fn post(&self, path: &str, body: Option<&Value>) -> Result<Value> {
        let mut req = self.http.post(format!("{}{path}", self.server)).bearer_auth(self.bearer());
        if let Some(b) = body {
            req = req.json(b);
        }
        let r = req.timeout(self.request_timeout).send().await?;
        json_or_error(r).await
    }

    /// POST JSON (or nothing), not retried: the JSON answer, or the API's error answer as it
    /// came, for a caller that handles an error code itself.
    pub async fn post_or_failure(
        &self,
        path: &str,
        body: Option<&Value>,
    ) -> Result<std::result::Result<Value, ApiFailure>> {
        let mut req = self.http.post(format!("{}{path}", self.server)).bearer_auth(self.bearer());
        if let Some(b) = body {
            req = req.json(b);
        }
        let r = req.timeout(self.request_timeout).send().await?;
        if r.status().is_success() {
            return Ok(Ok(read_json(r).await?));
        }
        Ok(Err(ApiFailure::read(r).await?))
    }

    /// POST JSON and read JSON, allowed `timeout` (a request the server takes long over);
    /// not retried.
    pub async fn post_with_timeout(&self, path: &str, body: &Value, timeout: Duration) -> Result<Value> {
        let req = self.http.post(format!("{}{path}", self.server)).bearer_auth(self.bearer()).json(body);
        let r = req.timeout(timeout).send().await?;
        json_or_error(r).await
    }

    /// POST JSON under an Idempotency-Key, retried with the same key: the server creates at
    /// most one thing and replays its first answer to the repeats.
    pub async fn post_idempotent(&self, path: &str, body: &Value, key: &str) -> Result<Answer> {
        let url = format!("{}{path}", self.server);
        let build = || {
            self.http
                .post(&url)
                .bearer_auth(self.bearer())
                .header("idempotency-key", key)
                .json(body)
                .timeout(self.request_timeout)
        };
        self.send(build, |r| async move {
            let replayed = r.headers().get("idempotency-replayed").is_some_and(|v| v.as_bytes() == b"true");
            let text = r.text().await?;
            Ok(Answer { body: serde_json::from_str(&text).unwrap_or(Value::Null), replayed })
        })
        .await
    }

    /// DELETE a resource; not retried (a repeat after a lost answer would report 404).
    pub async fn delete(&self, path: &str) -> Result<()> {
        let r = self
            .http
            .delete(format!("{}{path}", self.server))
            .bearer_auth(self.bearer())
            .timeout(self.request_timeout)
            .send()
            .await?;
        if r.status().is_success() {
            return Ok(());
        }
        json_or_error(r).await.map(|_| ())
    }

    /// An authenticated GET of a whole file (retried, the body read within each attempt).
    pub async fn get_bytes(&self, url: &str) -> Result<Vec<u8>> {
        self.send(|| self.http.get(url).bearer_auth(self.bearer()), |r| async move { Ok(r.bytes().await?.to_vec()) })
            .await
    }

    /// An authenticated GET returning the raw response, tried once (event streams: the
    /// caller has its own fallback).
    pub async fn get_raw(&self, url: &str) -> Result<reqwest::Response> {
        let r = self.http.get(url).bearer_auth(self.bearer()).send().await?;
        if r.status().is_success() {
            return Ok(r);
        }
        Err(ApiFailure::read(r).await?.into_error())
    }
}

async fn read_json(r: reqwest::Response) -> std::result::Result<Value, reqwest::Error> {
    let text = r.text().await?;
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Turn a response into JSON, or a `ClientError` with the server's code and message.
pub async fn json_or_error(r: reqwest::Response) -> Result<Value> {
    if r.status().is_success() {
        return Ok(read_json(r).await?);
    }
    Err(ApiFailure::read(r).await?.into_error())
}
