//! The OAuth/MCP tests' client: an app with a browser-like client that does not follow
//! redirects, sign-in, authorization with PKCE, tokens, and JSON-RPC calls to `/mcp`. Shared by
//! the in-process suite (`crates/capture-server/tests/service/oauth*.rs`) and the multi-process
//! one (`crates/capture-cli/tests/oauth.rs`), each over its own harness (`App<TestApp>`).

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

use crate::common::{Accounts, Db, Harness, Opts};

/// A running service (api and scheduler roles) on a fresh SQLite file or a fresh
/// PostgreSQL database, with a client that does not follow redirects; `T` is the suite's
/// harness (its `TestApp`).
pub struct App<T> {
    pub base: String,
    pub http: reqwest::Client,
    pub app: T,
}

impl<T: Harness> App<T> {
    pub async fn spawn(db: Db) -> App<T> {
        App::spawn_with(Opts::api(db)).await
    }

    pub async fn spawn_with(opts: Opts) -> App<T> {
        App::over(T::spawn(opts).await)
    }
}

impl<T: Accounts> App<T> {
    /// The OAuth helpers over a deployment that is already running.
    pub fn over(app: T) -> App<T> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        App { base: app.base().to_string(), http, app }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A new account with a password, signed in on the website: returns (email, Cookie header).
    pub async fn signed_in_user(&self) -> (String, String) {
        let email = format!("u{}@example.com", capture_core::ids::random_string(10).to_lowercase());
        let password = "correct horse battery staple";
        self.app.create_user(&email, "free", Some(password), false).await;
        let page = self.http.get(self.url("/login")).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let anon = cookies(&page);
        let csrf = hidden_field(&page.text().await.unwrap(), "csrf");
        let r = self
            .http
            .post(self.url("/login"))
            .header("cookie", &anon)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[("csrf", &csrf), ("email", &email), ("password", password)]))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303, "sign-in failed");
        let session = cookies(&r);
        assert!(session.contains("capture_session="), "no session cookie: {session}");
        (email, session)
    }

    pub async fn register(&self, redirect_uris: &[&str]) -> reqwest::Response {
        self.http
            .post(self.url("/oauth/register"))
            .json(&json!({"client_name": "Test client", "redirect_uris": redirect_uris}))
            .send()
            .await
            .unwrap()
    }

    pub async fn client(&self) -> String {
        let r = self.register(&[REDIRECT]).await;
        assert_eq!(r.status(), 201);
        r.json::<Value>().await.unwrap()["client_id"].as_str().unwrap().to_string()
    }

    pub async fn authorize(&self, cookie: &str, params: &[(&str, &str)]) -> reqwest::Response {
        self.http
            .get(format!("{}?{}", self.url("/oauth/authorize"), form(params)))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap()
    }

    /// Open the consent page for `params` and press `decision`; returns the redirect target.
    pub async fn consent(&self, cookie: &str, params: &[(&str, &str)], decision: &str) -> url::Url {
        let page = self.authorize(cookie, params).await;
        assert_eq!(page.status(), 200, "no consent page");
        let html = page.text().await.unwrap();
        assert!(html.contains(">Allow</button>") && html.contains(">Deny</button>"), "{html}");
        // The fields of the consent form (the page's sign-out form repeats `csrf`).
        let form_html = &html[html.find("action=\"/oauth/authorize\"").expect("a consent form")..];
        let mut fields: Vec<(String, String)> = hidden_fields(form_html);
        fields.push(("decision".into(), decision.into()));
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let r = self
            .http
            .post(self.url("/oauth/authorize"))
            .header("cookie", cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&pairs))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        location(&r)
    }

    /// The whole flow up to an authorization code: (code, verifier).
    pub async fn code(&self, cookie: &str, client_id: &str, resource: Option<&str>) -> (String, String) {
        let verifier = verifier();
        let challenge = s256(&verifier);
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", "st-123"),
        ];
        if let Some(r) = resource {
            params.push(("resource", r));
        }
        let to = self.consent(cookie, &params, "allow").await;
        let q = query(&to);
        assert_eq!(q.get("state").map(String::as_str), Some("st-123"));
        assert_eq!(q.get("iss"), Some(&self.base));
        (q["code"].clone(), verifier)
    }

    pub async fn token(&self, params: &[(&str, &str)]) -> (u16, Value) {
        let r = self
            .http
            .post(self.url("/oauth/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(params))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        assert_eq!(r.headers().get("cache-control").map(|v| v.to_str().unwrap()), Some("no-store"));
        (status, r.json().await.unwrap())
    }

    pub async fn exchange(&self, client_id: &str, code: &str, verifier: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("client_id", client_id),
            ("code_verifier", verifier),
        ])
        .await
    }

    pub async fn refresh(&self, client_id: &str, refresh_token: &str) -> (u16, Value) {
        self.token(&[("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", client_id)]).await
    }

    /// Tokens for a new signed-in user: (email, client_id, token response).
    pub async fn tokens(&self, resource: Option<&str>) -> (String, String, Value) {
        let (email, cookie) = self.signed_in_user().await;
        let client_id = self.client().await;
        let (code, verifier) = self.code(&cookie, &client_id, resource).await;
        let (status, body) = self.exchange(&client_id, &code, &verifier).await;
        assert_eq!(status, 200, "{body}");
        (email, client_id, body)
    }

    pub async fn balance(&self, bearer: &str) -> reqwest::Response {
        self.http.get(self.url("/v1/account/balance")).bearer_auth(bearer).send().await.unwrap()
    }

    /// A JSON-RPC `initialize` POSTed to `/mcp`.
    pub async fn mcp_initialize(&self, bearer: Option<&str>) -> reqwest::Response {
        let mut req = self
            .http
            .post(self.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        req.send().await.unwrap()
    }
}

pub const REDIRECT: &str = "http://127.0.0.1:9/callback";

pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// `name=value` pairs of every Set-Cookie, joined for a Cookie header.
pub fn cookies(r: &reqwest::Response) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next().map(str::to_string))
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// Every `<input type="hidden" name=… value=…>` of a page.
pub fn hidden_fields(html: &str) -> Vec<(String, String)> {
    html.split("<input type=\"hidden\" ")
        .skip(1)
        .filter_map(|rest| {
            let name = rest.split("name=\"").nth(1)?.split('"').next()?;
            let value = rest.split("value=\"").nth(1)?.split('"').next()?;
            Some((unescape(name), unescape(value)))
        })
        .collect()
}

pub fn hidden_field(html: &str, name: &str) -> String {
    hidden_fields(html).into_iter().find(|(k, _)| k == name).map(|(_, v)| v).expect("hidden field")
}

pub fn location(r: &reqwest::Response) -> url::Url {
    let loc = r.headers().get("location").expect("a Location header").to_str().unwrap();
    url::Url::parse(loc).unwrap_or_else(|_| url::Url::parse("http://relative.invalid").unwrap().join(loc).unwrap())
}

pub fn query(u: &url::Url) -> HashMap<String, String> {
    u.query_pairs().into_owned().collect()
}

/// The parameters of an authorization request (PKCE S256, no state).
pub fn authz<'a>(client_id: &'a str, redirect_uri: &'a str, challenge: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
    ]
}

pub fn verifier() -> String {
    format!("v{}", capture_core::ids::random_string(60))
}

pub fn s256(v: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(v.as_bytes()))
}

/// A JSON-RPC call to `/mcp` with a bearer token: the response's `result` (or `error`), from
/// JSON or from the SSE stream a tool with progress answers with.
pub async fn mcp_call<T: Accounts>(app: &App<T>, bearer: &str, method: &str, params: Value) -> Value {
    let r = app
        .http
        .post(app.url("/mcp"))
        .timeout(Duration::from_secs(300))
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(bearer)
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{method}");
    let sse = r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream");
    let body = r.text().await.unwrap();
    let msg: Value = if sse {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v["id"] == 7)
            .unwrap_or_else(|| panic!("no response in {body}"))
    } else {
        serde_json::from_str(&body).unwrap()
    };
    msg.get("result").cloned().unwrap_or_else(|| panic!("{method}: {msg}"))
}

/// A `tools/call` of `name` on the MCP endpoint at `mcp_url`.
pub async fn tool_at(http: &reqwest::Client, mcp_url: &str, bearer: &str, name: &str, args: Value) -> Value {
    let r = http
        .post(mcp_url)
        .timeout(Duration::from_secs(300))
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(bearer)
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": args}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{name}");
    let body = r.text().await.unwrap();
    let msg: Value = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == 9)
        .or_else(|| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("no answer in {body}"));
    msg["result"].clone()
}
