//! A website visitor: an HTTP client with its own cookie jar that never follows redirects
//! (so tests see every `Location`), plus helpers to read what the pages show.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::common::Api;

/// A response, read whole.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Page {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    pub fn location(&self) -> &str {
        self.header("location")
    }

    /// Assert the status, showing the page when it differs.
    pub fn expect(self, status: u16) -> Page {
        assert_eq!(self.status, status, "unexpected status; page:\n{}", self.body);
        self
    }

    /// The value of the hidden `csrf` field of the first form.
    pub fn csrf(&self) -> String {
        value_after(&self.body, "name=\"csrf\" value=\"").expect("a form with a csrf field")
    }

    /// The full API key shown on a key page.
    pub fn api_key(&self) -> String {
        value_after(&self.body, "value=\"sk_live_").map(|k| format!("sk_live_{k}")).expect("a page showing an API key")
    }

    /// Every distinct `{prefix}…` id in the page (e.g. `/dashboard/keys/key_` → key ids).
    pub fn ids_after(&self, prefix: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut rest = self.body.as_str();
        while let Some(i) = rest.find(prefix) {
            rest = &rest[i + prefix.len()..];
            let id: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }
}

/// The text after `marker` up to the next `"`.
pub fn value_after(html: &str, marker: &str) -> Option<String> {
    let i = html.find(marker)? + marker.len();
    Some(html[i..].split('"').next()?.to_string())
}

/// A visitor with its own cookies.
pub struct Visitor {
    base: String,
    client: reqwest::Client,
    cookies: Mutex<BTreeMap<String, String>>,
    /// Sent with every request (a load balancer's `X-Forwarded-For`, say).
    headers: Vec<(String, String)>,
}

impl Visitor {
    pub fn new(app: &impl Api) -> Visitor {
        Visitor {
            base: app.base().to_string(),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            cookies: Mutex::new(BTreeMap::new()),
            headers: Vec::new(),
        }
    }

    /// A visitor whose every request carries `name: value` (as a load balancer in front of
    /// the service would add it).
    pub fn with_header(app: &impl Api, name: &str, value: &str) -> Visitor {
        let mut v = Visitor::new(app);
        v.headers.push((name.into(), value.into()));
        v
    }

    /// The value of one of this visitor's cookies.
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.lock().unwrap().get(name).cloned()
    }

    pub fn set_cookie(&self, name: &str, value: &str) {
        self.cookies.lock().unwrap().insert(name.into(), value.into());
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> Page {
        let jar = {
            let c = self.cookies.lock().unwrap();
            c.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
        };
        let mut rb = if jar.is_empty() { rb } else { rb.header("cookie", jar) };
        for (k, v) in &self.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let r = rb.send().await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        for sc in headers.get_all("set-cookie") {
            let sc = sc.to_str().unwrap();
            let (kv, attrs) = sc.split_once(';').unwrap_or((sc, ""));
            let (k, v) = kv.split_once('=').unwrap();
            let mut c = self.cookies.lock().unwrap();
            if attrs.to_ascii_lowercase().contains("max-age=0") {
                c.remove(k.trim());
            } else {
                c.insert(k.trim().into(), v.trim().into());
            }
        }
        let body = r.text().await.unwrap();
        Page { status, headers, body }
    }

    pub async fn get(&self, path: &str) -> Page {
        self.send(self.client.get(format!("{}{path}", self.base))).await
    }

    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        self.send(
            self.client
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body),
        )
        .await
    }

    /// POST a form from a signed-in page, with the session's CSRF token.
    pub async fn submit(&self, path: &str, csrf: &str, fields: &[(&str, &str)]) -> Page {
        let mut all = vec![("csrf", csrf)];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    /// Sign up through the form; asserts the redirect to the dashboard.
    pub async fn sign_up(&self, email: &str, password: &str) -> Page {
        let csrf = self.get("/signup").await.expect(200).csrf();
        let p = self.post("/signup", &[("csrf", &csrf), ("email", email), ("password", password)]).await.expect(303);
        assert_eq!(p.location(), "/dashboard");
        p
    }

    /// Submit the sign-in form (fetching it first for the CSRF token).
    pub async fn sign_in(&self, email: &str, password: &str, next: Option<&str>) -> Page {
        let csrf = self.get("/login").await.expect(200).csrf();
        let mut fields = vec![("csrf", csrf.as_str()), ("email", email), ("password", password)];
        if let Some(n) = next {
            fields.push(("next", n));
        }
        self.post("/login", &fields).await
    }

    /// The dashboard (asserting 200) and its CSRF token.
    pub async fn dashboard(&self) -> (Page, String) {
        let p = self.get("/dashboard").await.expect(200);
        let csrf = p.csrf();
        (p, csrf)
    }

    /// Create a key on the dashboard; returns `(key_id, key)`.
    pub async fn create_key(&self, name: &str) -> (String, String) {
        let (before, csrf) = self.dashboard().await;
        let old = before.ids_after("/dashboard/keys/");
        let key = self.submit("/dashboard/keys", &csrf, &[("name", name)]).await.expect(200).api_key();
        let (after, _) = self.dashboard().await;
        let id =
            after.ids_after("/dashboard/keys/").into_iter().find(|i| !old.contains(i)).expect("the new key is listed");
        (id, key)
    }
}
