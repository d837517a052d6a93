//! Fixtures of the inbox and auth-test tests: a raw SMTP client (to see every reply code),
//! and a small site on 127.0.0.1 whose sign-up mails a verification link and code to the
//! address given, through the service's inbound SMTP server, then verifies and signs in.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The first reply of the transaction that was not a success, or the final `250`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub text: String,
}

async fn read_reply(r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Reply {
    let mut text = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).await.unwrap_or(0);
        if n == 0 {
            return Reply { code: 0, text: format!("{text}(connection closed)") };
        }
        text.push_str(&line);
        // "250-…" continues, "250 …" ends.
        if line.len() < 4 || line.as_bytes()[3] != b'-' {
            let code = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
            return Reply { code, text };
        }
    }
}

/// Send one message over SMTP (no dot-stuffing needed for our fixtures: no line starts
/// with a dot). Returns the reply that ended the transaction: `250` when accepted, else the
/// refusal (at the greeting, MAIL, RCPT, DATA or after the final dot).
pub async fn smtp_send(addr: SocketAddr, from: &str, to: &str, data: &[u8]) -> Reply {
    let stream = TcpStream::connect(addr).await.expect("the inbound SMTP server accepts connections");
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let greeting = read_reply(&mut r).await;
    if greeting.code != 220 {
        return greeting;
    }
    for cmd in ["EHLO fixture.test".to_string(), format!("MAIL FROM:<{from}>"), format!("RCPT TO:<{to}>")] {
        w.write_all(format!("{cmd}\r\n").as_bytes()).await.unwrap();
        let reply = read_reply(&mut r).await;
        if reply.code != 250 {
            let _ = w.write_all(b"QUIT\r\n").await;
            return reply;
        }
    }
    w.write_all(b"DATA\r\n").await.unwrap();
    let reply = read_reply(&mut r).await;
    if reply.code != 354 {
        return reply;
    }
    w.write_all(data).await.unwrap();
    if !data.ends_with(b"\r\n") {
        w.write_all(b"\r\n").await.unwrap();
    }
    w.write_all(b".\r\n").await.unwrap();
    let reply = read_reply(&mut r).await;
    let _ = w.write_all(b"QUIT\r\n").await;
    reply
}

/// A verification mail with a link and a code (multipart: text and HTML).
/// Wait until the service at `metrics` (its `/metrics` URL) has an inbox long-poll waiting:
/// mail sent after this wakes a poll that is already waiting.
pub async fn wait_for_inbox_poll(client: &reqwest::Client, metrics: &str) {
    crate::common::eventually("the inbox long-poll is waiting", std::time::Duration::from_secs(10), || async {
        let text = client.get(metrics).send().await.unwrap().text().await.unwrap();
        let line = text.lines().find(|l| l.starts_with("capture_inbox_waiting ")).map(str::to_string);
        if line.as_deref() == Some("capture_inbox_waiting 1") { Ok(()) } else { Err(line) }
    })
    .await
}

pub fn verification_mail(to: &str, link: &str, code: &str) -> Vec<u8> {
    format!(
        "From: Fixture App <no-reply@fixture.test>\r\n\
         To: <{to}>\r\n\
         Subject: Confirm your email for Fixture App\r\n\
         Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n\
         Message-ID: <{code}.verify@fixture.test>\r\n\
         MIME-Version: 1.0\r\n\
         Content-Type: multipart/alternative; boundary=\"b1\"\r\n\
         \r\n\
         --b1\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\
         \r\n\
         Welcome to Fixture App!\r\n\
         Confirm your email address by opening this link: {link}\r\n\
         Or enter your verification code: {code}\r\n\
         \r\n\
         --b1\r\n\
         Content-Type: text/html; charset=utf-8\r\n\
         \r\n\
         <p>Welcome to Fixture App!</p><p><a href=\"{link}\">Verify your email</a></p>\r\n\
         <p>Your verification code is <b>{code}</b>.</p>\r\n\
         --b1--\r\n"
    )
    .into_bytes()
}

#[derive(Debug, Clone)]
struct Account {
    password: String,
    verified: bool,
    token: String,
}

#[derive(Default)]
struct SiteState {
    accounts: Mutex<HashMap<String, Account>>,
    base: Mutex<String>,
    smtp: Mutex<Option<SocketAddr>>,
    sent: Mutex<Vec<Reply>>,
}

/// The fixture site: `/` (sign-up), `/signin`, `/magic` (a magic-link form), and the form
/// posts `/signup`, `/login`, `/verify?token=`.
pub struct AuthSite {
    pub base: String,
    state: Arc<SiteState>,
    _handle: tokio::task::JoinHandle<()>,
}

const SIGN_UP_PAGE: &str = r#"<!doctype html><html><head><title>Fixture App — Create your account</title></head><body>
<h1>Create your account</h1>
<form method="post" action="/signup">
  <label>Email <input type="email" name="email" autocomplete="email"></label>
  <label>Password <input type="password" name="password" autocomplete="new-password"></label>
  <label>Repeat password <input type="password" name="confirm" autocomplete="new-password"></label>
  <button type="submit">Create account</button>
</form>
<p>We'll send you a verification link to confirm your email.</p>
<p>Already have an account? <a href="/signin">Sign in</a></p>
</body></html>"#;

const SIGN_IN_PAGE: &str = r#"<!doctype html><html><head><title>Fixture App — Sign in</title></head><body>
<h1>Welcome back</h1>
<form method="post" action="/login">
  <input type="email" name="email" autocomplete="username">
  <input type="password" name="password" autocomplete="current-password">
  <button type="submit">Log in</button>
</form>
<a href="/">Create an account</a>
</body></html>"#;

const MAGIC_PAGE: &str = r#"<!doctype html><html><head><title>Magic App</title></head><body>
<h1>Sign in to Magic App</h1>
<p>No password needed: we'll email you a magic link to sign in.</p>
<form method="post" action="/magic"><input type="email" name="email" placeholder="you@example.com">
<button type="submit">Email me a link</button></form>
<a href="https://accounts.google.com/o/oauth2/v2/auth?client_id=x">Continue with Google</a>
</body></html>"#;

fn form(body: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(body.as_bytes()).into_owned().collect()
}

fn random_digits(n: usize) -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let mut x = (t as u64) ^ 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // No leading zero, and never a run that reads like a year.
            char::from(b'1' + ((x >> (i % 7)) % 9) as u8)
        })
        .collect()
}

impl AuthSite {
    pub async fn start() -> AuthSite {
        let state = Arc::new(SiteState::default());
        let router = axum::Router::new()
            .route("/", get(|| async { Html(SIGN_UP_PAGE) }))
            .route("/signin", get(|| async { Html(SIGN_IN_PAGE) }))
            .route("/magic", get(|| async { Html(MAGIC_PAGE) }))
            .route("/signup", axum::routing::post(signup))
            .route("/login", axum::routing::post(login))
            .route("/verify", get(verify))
            .with_state(state.clone());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        *state.base.lock().unwrap() = base.clone();
        let h = tokio::spawn(async move {
            let _ = axum::serve(l, router).await;
        });
        AuthSite { base, state, _handle: h }
    }

    /// Where the site sends its mail (the service's inbound SMTP server).
    pub fn set_smtp(&self, addr: SocketAddr) {
        *self.state.smtp.lock().unwrap() = Some(addr);
    }

    pub fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }

    /// The SMTP replies the site got for the mail it sent.
    pub fn sent(&self) -> Vec<Reply> {
        self.state.sent.lock().unwrap().clone()
    }

    /// Whether the account of `email` is verified.
    pub fn verified(&self, email: &str) -> Option<bool> {
        self.state.accounts.lock().unwrap().get(email).map(|a| a.verified)
    }
}

async fn signup(State(s): State<Arc<SiteState>>, body: String) -> (StatusCode, Html<String>) {
    let f = form(&body);
    let (email, password) =
        (f.get("email").cloned().unwrap_or_default(), f.get("password").cloned().unwrap_or_default());
    if email.is_empty() || password.len() < 8 || f.get("confirm") != Some(&password) {
        return (StatusCode::BAD_REQUEST, Html("<p>Check the form.</p>".into()));
    }
    let token = random_digits(24);
    let code = random_digits(6);
    {
        let mut accounts = s.accounts.lock().unwrap();
        if accounts.contains_key(&email) {
            return (StatusCode::CONFLICT, Html("<p>An account with this email already exists.</p>".into()));
        }
        accounts.insert(email.clone(), Account { password, verified: false, token: token.clone() });
    }
    let link = format!("{}/verify?token={token}", s.base.lock().unwrap());
    let smtp = s.smtp.lock().unwrap().expect("the test told the site where to send mail");
    let reply = smtp_send(smtp, "bounces@fixture.test", &email, &verification_mail(&email, &link, &code)).await;
    let ok = reply.code == 250;
    s.sent.lock().unwrap().push(reply);
    if !ok {
        return (StatusCode::BAD_GATEWAY, Html("<p>We could not send the mail.</p>".into()));
    }
    (StatusCode::OK, Html("<p>Check your inbox: we sent you a link to verify your email.</p>".into()))
}

async fn verify(
    State(s): State<Arc<SiteState>>,
    Query(q): Query<HashMap<String, String>>,
) -> (StatusCode, &'static str) {
    let token = q.get("token").cloned().unwrap_or_default();
    let mut accounts = s.accounts.lock().unwrap();
    match accounts.values_mut().find(|a| a.token == token && !token.is_empty()) {
        Some(a) => {
            a.verified = true;
            (StatusCode::OK, "Your email is verified.")
        }
        None => (StatusCode::NOT_FOUND, "Unknown link."),
    }
}

async fn login(State(s): State<Arc<SiteState>>, body: String) -> (StatusCode, &'static str) {
    let f = form(&body);
    let accounts = s.accounts.lock().unwrap();
    match accounts.get(f.get("email").map(String::as_str).unwrap_or("")) {
        Some(a) if Some(&a.password) == f.get("password") && a.verified => (StatusCode::OK, "Welcome back!"),
        Some(a) if Some(&a.password) == f.get("password") => (StatusCode::FORBIDDEN, "Verify your email first."),
        _ => (StatusCode::UNAUTHORIZED, "Wrong email or password."),
    }
}
