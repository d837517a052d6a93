//! A site with a members' area behind a sign-in, for the browser-profile tests: a password
//! sign-in that mails a one-time code, a sign-up that mails a verification link, a cookie
//! session kept on the server (so a test can end it), and members' pages only a signed-in
//! visitor sees: their titles start `Members Club — `, and the whole viewport is one colour
//! (`MEMBERS_RGB`) that the sign-in page never shows. `/members/settings` also reads
//! localStorage: green when the item the members' page stores is there, red when it is not.
//! A `/logout` link on every members' page ends the session when followed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{AppendHeaders, Html, IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::inbox_fixture::{Reply, smtp_send};

/// The members' pages' colour (the sign-in page is white and grey).
pub const MEMBERS_RGB: [u8; 3] = [0, 160, 90];
/// `/members/settings` when the members' localStorage item is there.
pub const STORAGE_RGB: [u8; 3] = [20, 60, 200];
/// `/members/settings` when it is not.
pub const NO_STORAGE_RGB: [u8; 3] = [200, 30, 30];
/// `/members/settings`' top strip (100 px) when the members' IndexedDB record is there.
pub const IDB_RGB: [u8; 3] = [240, 200, 0];
/// The strip when it is not.
pub const NO_IDB_RGB: [u8; 3] = [90, 90, 90];

#[derive(Default)]
struct SiteState {
    /// email → (password, verified).
    accounts: Mutex<HashMap<String, (String, bool)>>,
    /// pending sign-in token → (email, code).
    pending: Mutex<HashMap<String, (String, String)>>,
    /// verification token → email.
    verify: Mutex<HashMap<String, String>>,
    /// session id → email.
    sessions: Mutex<HashMap<String, String>>,
    smtp: Mutex<Option<SocketAddr>>,
    base: Mutex<String>,
    sent: Mutex<Vec<Reply>>,
    /// Paths requested, in order (to see what a crawl followed).
    hits: Mutex<Vec<String>>,
}

/// The members' site on 127.0.0.1.
pub struct MembersSite {
    pub base: String,
    state: Arc<SiteState>,
    _handle: tokio::task::JoinHandle<()>,
}

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html><head><title>{title}</title><style>body{{margin:0;font:16px sans-serif}}</style></head><body>{body}</body></html>"
    ))
}

fn members_page(title: &str, extra: &str) -> Html<String> {
    let [r, g, b] = MEMBERS_RGB;
    page(
        &format!("Members Club — {title}"),
        &format!(
            "<div style=\"position:fixed;inset:0;background:rgb({r},{g},{b})\"></div>\
             <main style=\"position:relative;color:white;padding:20px\"><h1>{title}</h1>\
             <nav><a href=\"/members\">Members area</a> <a href=\"/members/billing\">Billing</a> \
             <a href=\"/members/settings\">Settings</a> <a href=\"/logout\">Log out</a></nav>{extra}</main>"
        ),
    )
}

const SIGN_IN: &str = r#"<h1>Sign in to Members Club</h1>
<form method="post" action="/login">
  <label>Email <input type="email" name="email" autocomplete="username"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password"></label>
  <button type="submit">Sign in</button>
</form>
<p><a href="/signup">Create an account</a></p>"#;

const OTP: &str = r#"<h1>Enter your code</h1>
<p>We emailed you a 6-digit code.</p>
<form method="post" action="/otp">
  <input type="text" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6">
  <button type="submit">Verify</button>
</form>"#;

const SIGN_UP: &str = r#"<h1>Join Members Club</h1>
<form method="post" action="/signup">
  <label>Email <input type="email" name="email" autocomplete="email"></label>
  <label>Password <input type="password" name="password" autocomplete="new-password"></label>
  <label>Repeat <input type="password" name="confirm" autocomplete="new-password"></label>
  <button type="submit">Create account</button>
</form>"#;

fn token(n: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut x = t ^ SEQ.fetch_add(0x9E37_79B9, Ordering::Relaxed).rotate_left(17) ^ 0xA5A5_5A5A_1234_5678;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'1' + (x % 9) as u8)
        })
        .collect()
}

fn form(body: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(body.as_bytes()).into_owned().collect()
}

fn cookie(h: &HeaderMap, name: &str) -> Option<String> {
    h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then(|| v.to_owned())
    })
}

fn mail(to: &str, subject: &str, text: &str) -> Vec<u8> {
    format!(
        "From: Members Club <no-reply@members.test>\r\nTo: <{to}>\r\nSubject: {subject}\r\n\
         Date: Sun, 29 Nov 2026 10:00:00 +0000\r\nMessage-ID: <{}@members.test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n",
        token(12)
    )
    .into_bytes()
}

impl MembersSite {
    pub async fn start() -> MembersSite {
        let state = Arc::new(SiteState::default());
        let router = axum::Router::new()
            .route(
                "/",
                get(|| async {
                    page(
                        "Members Club",
                        "<h1>Members Club</h1><a href=\"/members\">Members area</a> <a href=\"/login\">Sign in</a>",
                    )
                }),
            )
            .route("/login", get(|| async { page("Members Club — Sign in", SIGN_IN) }).post(login))
            .route("/otp", get(|| async { page("Members Club — Enter your code", OTP) }).post(otp))
            .route("/signup", get(|| async { page("Members Club — Join", SIGN_UP) }).post(signup))
            .route("/verify", get(verify))
            .route("/logout", get(logout))
            .route("/members", get(members))
            .route("/members/billing", get(members))
            .route("/members/settings", get(members))
            .layer(axum::middleware::from_fn_with_state(state.clone(), record))
            .with_state(state.clone());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        *state.base.lock().unwrap() = base.clone();
        let h = tokio::spawn(async move {
            let _ = axum::serve(l, router).await;
        });
        MembersSite { base, state, _handle: h }
    }

    pub fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }

    /// Where the site sends its mail (the service's inbound SMTP server).
    pub fn set_smtp(&self, addr: SocketAddr) {
        *self.state.smtp.lock().unwrap() = Some(addr);
    }

    /// An account that may sign in (verified).
    pub fn add_account(&self, email: &str, password: &str) {
        self.state.accounts.lock().unwrap().insert(email.to_owned(), (password.to_owned(), true));
    }

    /// Whether `email`'s account exists and is verified.
    pub fn verified(&self, email: &str) -> Option<bool> {
        self.state.accounts.lock().unwrap().get(email).map(|a| a.1)
    }

    /// The SMTP replies to the mail the site sent.
    pub fn sent(&self) -> Vec<Reply> {
        self.state.sent.lock().unwrap().clone()
    }

    /// Signed-in sessions open now.
    pub fn sessions(&self) -> usize {
        self.state.sessions.lock().unwrap().len()
    }

    /// End every session on the server: the cookies browsers keep no longer sign in.
    pub fn end_sessions(&self) {
        self.state.sessions.lock().unwrap().clear();
    }

    /// The paths requested so far (with their queries).
    pub fn hits(&self) -> Vec<String> {
        self.state.hits.lock().unwrap().clone()
    }
}

async fn record(
    State(s): State<Arc<SiteState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let p = req.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
    s.hits.lock().unwrap().push(p);
    next.run(req).await
}

async fn send(s: &SiteState, to: &str, subject: &str, text: &str) {
    let Some(addr) = *s.smtp.lock().unwrap() else { return };
    let reply = smtp_send(addr, "no-reply@members.test", to, &mail(to, subject, text)).await;
    s.sent.lock().unwrap().push(reply);
}

fn signed_in(s: &SiteState, h: &HeaderMap) -> Option<String> {
    let sid = cookie(h, "sid")?;
    s.sessions.lock().unwrap().get(&sid).cloned()
}

fn start_session(s: &SiteState, email: &str, to: &str) -> Response {
    let sid = token(32);
    s.sessions.lock().unwrap().insert(sid.clone(), email.to_owned());
    // Two cookies: headers appended, not replaced.
    (
        StatusCode::SEE_OTHER,
        AppendHeaders([
            (header::SET_COOKIE, format!("sid={sid}; Path=/; HttpOnly; SameSite=Lax; Max-Age=86400")),
            (header::SET_COOKIE, "pending=; Path=/; Max-Age=0".to_owned()),
            (header::LOCATION, to.to_owned()),
        ]),
    )
        .into_response()
}

async fn login(State(s): State<Arc<SiteState>>, body: String) -> Response {
    let f = form(&body);
    let (email, password) =
        (f.get("email").cloned().unwrap_or_default(), f.get("password").cloned().unwrap_or_default());
    let ok = s.accounts.lock().unwrap().get(&email).is_some_and(|(p, verified)| *p == password && *verified);
    if !ok {
        let body = format!("<p role=\"alert\">Wrong email or password.</p>{SIGN_IN}");
        return (StatusCode::UNAUTHORIZED, page("Members Club — Sign in", &body)).into_response();
    }
    let (pending, code) = (token(24), token(6));
    s.pending.lock().unwrap().insert(pending.clone(), (email.clone(), code.clone()));
    send(
        &s,
        &email,
        "Your Members Club sign-in code",
        &format!("Your sign-in code is {code}. It expires in 10 minutes."),
    )
    .await;
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, format!("pending={pending}; Path=/; HttpOnly; SameSite=Lax")),
            (header::LOCATION, "/otp".to_owned()),
        ],
    )
        .into_response()
}

async fn otp(State(s): State<Arc<SiteState>>, h: HeaderMap, body: String) -> Response {
    let code = form(&body).get("code").cloned().unwrap_or_default();
    let pending = cookie(&h, "pending").and_then(|p| s.pending.lock().unwrap().remove(&p));
    match pending {
        Some((email, want)) if want == code.trim() => start_session(&s, &email, "/members"),
        _ => (
            StatusCode::UNAUTHORIZED,
            page("Members Club — Sign in", &format!("<p role=\"alert\">That code did not work.</p>{SIGN_IN}")),
        )
            .into_response(),
    }
}

async fn signup(State(s): State<Arc<SiteState>>, body: String) -> Response {
    let f = form(&body);
    let (email, password) =
        (f.get("email").cloned().unwrap_or_default(), f.get("password").cloned().unwrap_or_default());
    if email.is_empty() || password.len() < 8 || f.get("confirm") != Some(&password) {
        return (
            StatusCode::BAD_REQUEST,
            page("Members Club — Join", &format!("<p role=\"alert\">Check the form.</p>{SIGN_UP}")),
        )
            .into_response();
    }
    s.accounts.lock().unwrap().insert(email.clone(), (password, false));
    let t = token(24);
    s.verify.lock().unwrap().insert(t.clone(), email.clone());
    let link = format!("{}/verify?token={t}", s.base.lock().unwrap());
    send(
        &s,
        &email,
        "Confirm your email for Members Club",
        &format!("Welcome! Confirm your email address by opening this link: {link}"),
    )
    .await;
    page(
        "Members Club — Check your email",
        "<h1>Check your email</h1><p>We sent you a link to verify your address.</p>",
    )
    .into_response()
}

async fn verify(State(s): State<Arc<SiteState>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let email = q.get("token").and_then(|t| s.verify.lock().unwrap().remove(t));
    match email {
        Some(email) => {
            if let Some(a) = s.accounts.lock().unwrap().get_mut(&email) {
                a.1 = true;
            }
            start_session(&s, &email, "/members")
        }
        None => (StatusCode::NOT_FOUND, page("Members Club — Link expired", "<p>This link has expired.</p>"))
            .into_response(),
    }
}

async fn logout(State(s): State<Arc<SiteState>>, h: HeaderMap) -> Response {
    if let Some(sid) = cookie(&h, "sid") {
        s.sessions.lock().unwrap().remove(&sid);
    }
    Redirect::to("/login").into_response()
}

async fn members(State(s): State<Arc<SiteState>>, uri: axum::http::Uri, h: HeaderMap) -> Response {
    if signed_in(&s, &h).is_none() {
        return Redirect::to(&format!("/login?next={}", uri.path())).into_response();
    }
    match uri.path() {
        "/members/billing" => members_page("Billing", "<p>Your plan: Gold.</p>").into_response(),
        "/members/settings" => {
            let ([r1, g1, b1], [r2, g2, b2]) = (STORAGE_RGB, NO_STORAGE_RGB);
            let ([r3, g3, b3], [r4, g4, b4]) = (IDB_RGB, NO_IDB_RGB);
            let script = format!(
                "<div id=\"pref\" style=\"position:fixed;inset:0\"></div>\
                 <div id=\"badge\" style=\"position:fixed;left:0;top:0;width:100%;height:100px\"></div><script>\
                 document.getElementById('pref').style.background = \
                 localStorage.getItem('club.theme') === 'gold' ? 'rgb({r1},{g1},{b1})' : 'rgb({r2},{g2},{b2})';\
                 const badge = document.getElementById('badge');\
                 const done = (c) => {{ badge.style.background = c; badge.dataset.ready = '1'; }};\
                 const r = indexedDB.open('club');\
                 r.onsuccess = () => {{ const db = r.result;\
                   if (!db.objectStoreNames.contains('prefs')) {{ db.close(); return done('rgb({r4},{g4},{b4})'); }}\
                   const g = db.transaction('prefs').objectStore('prefs').get('badge');\
                   g.onsuccess = () => {{ db.close(); done(g.result && g.result.color === 'gold' ? 'rgb({r3},{g3},{b3})' : 'rgb({r4},{g4},{b4})'); }};\
                   g.onerror = () => done('rgb({r4},{g4},{b4})'); }};\
                 r.onerror = () => done('rgb({r4},{g4},{b4})');</script>"
            );
            members_page("Settings", &script).into_response()
        }
        // The members' area keeps a preference in localStorage and a badge in IndexedDB.
        _ => members_page(
            "Members area",
            "<script>localStorage.setItem('club.theme', 'gold');\
             const r = indexedDB.open('club', 1);\
             r.onupgradeneeded = () => r.result.createObjectStore('prefs', { keyPath: 'id' });\
             r.onsuccess = () => { const tx = r.result.transaction('prefs', 'readwrite');\
               tx.objectStore('prefs').put({ id: 'badge', color: 'gold', since: 2026 });\
               tx.oncomplete = () => { r.result.close(); document.body.dataset.saved = '1'; }; };</script>",
        )
        .into_response(),
    }
}
