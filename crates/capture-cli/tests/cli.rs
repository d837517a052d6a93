//! The CLI end to end: `capture login` completed through the real sign-in and consent
//! pages (driven over HTTP like a browser would), then `balance`, `shot`, `webhooks`,
//! `logout`, and the same commands with an API key.

#[allow(dead_code)]
mod cli_support;
#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use helpers::*;
use serde_json::Value;

/// The hidden and visible `<input>`s of the first POST form containing `marker`:
/// `(action, fields)`.
fn form_fields(html: &str, marker: &str) -> (String, Vec<(String, String)>) {
    let lower = html.to_lowercase();
    let mut start = 0;
    while let Some(i) = lower[start..].find("<form") {
        let s = start + i;
        let e = lower[s..].find("</form>").map_or(lower.len(), |j| s + j);
        let form = &html[s..e];
        if form.contains(marker) {
            let action = attr(form, "action").unwrap_or_default();
            let mut fields = Vec::new();
            for tag in form.split('<').skip(1).filter(|t| t.to_lowercase().starts_with("input")) {
                if let Some(name) = attr(tag, "name") {
                    fields.push((name, attr(tag, "value").unwrap_or_default()));
                }
            }
            return (action, fields);
        }
        start = e;
    }
    panic!("no form with {marker:?} in:\n{html}");
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_lowercase();
    for q in ['"', '\''] {
        let pat = format!("{name}={q}");
        if let Some(i) = lower.find(&format!(" {pat}")) {
            let v = &tag[i + pat.len() + 1..];
            return v.split(q).next().map(|s| s.replace("&amp;", "&").replace("&quot;", "\""));
        }
    }
    None
}

fn absolute(base: &str, current: &str, href: &str) -> String {
    url::Url::parse(current).unwrap().join(href).map(|u| u.to_string()).unwrap_or_else(|_| format!("{base}{href}"))
}

/// Follow redirects by hand until one points outside the server (the loopback callback).
async fn browse(c: &reqwest::Client, base: &str, mut url: String) -> (String, String) {
    for _ in 0..10 {
        let r = c.get(&url).send().await.unwrap();
        if r.status().is_redirection() {
            let loc = r.headers()["location"].to_str().unwrap().to_string();
            url = absolute(base, &url, &loc);
            if !url.starts_with(base) {
                return (url, String::new());
            }
            continue;
        }
        let status = r.status();
        let body = r.text().await.unwrap();
        assert!(status.is_success(), "{url}: {status}\n{body}");
        return (url, body);
    }
    panic!("too many redirects");
}

/// Submit a form and return where it sends us (following same-site redirects).
async fn submit(
    c: &reqwest::Client,
    base: &str,
    page_url: &str,
    action: &str,
    fields: &[(String, String)],
) -> (String, String) {
    let target = if action.is_empty() { page_url.to_string() } else { absolute(base, page_url, action) };
    let r = c.post(&target).form(fields).send().await.unwrap();
    if r.status().is_redirection() {
        let loc = absolute(base, &target, r.headers()["location"].to_str().unwrap());
        if !loc.starts_with(base) {
            return (loc, String::new());
        }
        return browse(c, base, loc).await;
    }
    let status = r.status();
    let body = r.text().await.unwrap();
    assert!(status.is_success(), "{target}: {status}\n{body}");
    (target, body)
}

fn client_cmd(app: &TestApp, home: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capture"));
    cmd.args(args)
        .env("CAPTURE_CONFIG_DIR", home.join("cfg"))
        .env_remove("CAPTURE_API_KEY")
        .env_remove("CAPTURE_SERVER");
    let _ = app;
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn login_through_the_sign_in_page_then_use_the_session() {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let email = format!("cli{}@example.com", rand_suffix());
    app.cli(&["admin", "user", "create", "--email", &email, "--plan", "free", "--password", "correct horse battery"]);
    let home = tempfile::tempdir().unwrap();

    // 1. Start `capture login` and read the authorization address it prints.
    let mut login =
        client_cmd(&app, home.path(), &["login", "--server", &app.base, "--no-browser", "--timeout", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let mut out = BufReader::new(login.stdout.take().unwrap());
    let mut auth_url = String::new();
    for _ in 0..5 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        if line.starts_with("http") {
            auth_url = line.trim().to_string();
            break;
        }
    }
    assert!(auth_url.starts_with(&app.base), "authorization URL: {auth_url:?}");

    // 2. A browser: sign in, then allow.
    let browser =
        reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (page, html) = browse(&browser, &app.base, auth_url).await;
    assert!(page.contains("/login"), "not signed in, so the sign-in page comes first: {page}");
    let (action, mut fields) = form_fields(&html, "assword");
    for f in fields.iter_mut() {
        match f.0.as_str() {
            "email" => f.1 = email.clone(),
            "password" => f.1 = "correct horse battery".into(),
            _ => {}
        }
    }
    let (page, html) = submit(&browser, &app.base, &page, &action, &fields).await;
    assert!(html.contains("Allow"), "consent page expected at {page}:\n{html}");
    let (action, mut fields) = form_fields(&html, ">Allow</button>");
    // The pressed button's own name/value is part of the submission.
    let end = html.find(">Allow</button>").unwrap();
    let button = &html[html[..end].rfind("<button").unwrap()..end];
    if let Some(name) = attr(button, "name") {
        fields.push((name, attr(button, "value").unwrap_or_default()));
    }
    let (callback, _) = submit(&browser, &app.base, &page, &action, &fields).await;
    assert!(callback.starts_with("http://127.0.0.1:") && callback.contains("code="), "{callback}");
    let r = reqwest::get(&callback).await.unwrap();
    assert_eq!(r.status(), 200);
    let status = tokio::task::spawn_blocking(move || login.wait().unwrap()).await.unwrap();
    assert!(status.success());

    // 3. The session is stored privately and works.
    let session = home.path().join("cfg/session.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&session).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let out = client_cmd(&app, home.path(), &["balance", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bal: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(bal["plan"], "free");
    assert_eq!(bal["usage"]["limit"], 100);
    let out = client_cmd(&app, home.path(), &["balance"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("of 100 actions"), "{text}");

    // An access token about to expire is refreshed first (and the refresh token rotates).
    let read_session = || serde_json::from_slice::<Value>(&std::fs::read(&session).unwrap()).unwrap();
    let mut saved = read_session();
    saved["expires_at"] = 0.into();
    std::fs::write(&session, saved.to_string()).unwrap();
    let out = client_cmd(&app, home.path(), &["balance", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let renewed = read_session();
    assert_ne!(renewed["access_token"], saved["access_token"]);
    assert_ne!(renewed["refresh_token"], saved["refresh_token"]);
    assert!(renewed["expires_at"].as_i64().unwrap() > 1_000_000_000);

    let file = home.path().join("shot.png");
    let out = client_cmd(
        &app,
        home.path(),
        &["shot", &site.url("/red"), "-o", file.to_str().unwrap(), "--width", "300", "--height", "200"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(progress.contains("processing") || progress.contains("done") || progress.contains("saved"), "{progress}");
    let img = decode(&std::fs::read(&file).unwrap());
    assert_eq!((img.width(), img.height()), (300, 200));
    assert_px(&img, 150, 100, [255, 0, 0]);

    // 4. Sign out: the session is gone and commands say so with the auth exit code.
    let access = read_session()["access_token"].as_str().unwrap().to_string();
    let out = client_cmd(&app, home.path(), &["logout"]).output().unwrap();
    assert!(out.status.success());
    assert!(!session.exists());
    let r = reqwest::Client::new().get(app.url("/v1/account/balance")).bearer_auth(&access).send().await.unwrap();
    assert_eq!(r.status(), 401, "logout revoked the access token");
    let out = client_cmd(&app, home.path(), &["balance"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("capture login"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn api_keys_work_instead_of_a_session_and_errors_have_exit_codes() {
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true").env("CAPTURE_PLAN_LIMITS", "free=1"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str], key: Option<&str>| {
        let mut c = client_cmd(&app, home.path(), args);
        c.env("CAPTURE_SERVER", &app.base);
        if let Some(k) = key {
            c.env("CAPTURE_API_KEY", k);
        }
        c.output().unwrap()
    };
    let out = run(&["balance", "--json"], Some(&key));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["usage"]["limit"], 1);
    let out = run(&["balance"], Some("sk_live_wrongwrongwrongwrongwrongwrongwrong"));
    assert_eq!(out.status.code(), Some(3));
    let out = run(&["balance"], None);
    assert_eq!(out.status.code(), Some(3), "no session, no key");

    let out = run(&["webhooks", "create", "http://127.0.0.1:9/hook", "--event", "test.ping", "--json"], Some(&key));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["endpoint"]["id"].as_str().unwrap().to_string();
    assert!(v["endpoint"]["secret"].as_str().unwrap().starts_with("whsec_"));
    let out = run(&["webhooks", "list", "--json"], Some(&key));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["data"][0]["id"], id.as_str());
    let out = run(&["webhooks", "delete", &id], Some(&key));
    assert!(out.status.success());
    let out = run(&["webhooks", "test", &id], Some(&key));
    assert_eq!(out.status.code(), Some(6), "404 → invalid request exit code");

    // Quota: one job takes the only action; `shot` is then refused with exit code 4.
    app.create(&key, serde_json::json!({"url": "https://example.com/"})).await;
    let out = run(&["shot", "https://example.com/", "-q"], Some(&key));
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PLAN_QUOTA_EXCEEDED"));
}

/// `capture audit URL`: follows the audit, prints the scores, the issues and the report's
/// links, saves the PDF; a failed audit exits with the capture-failed code.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audit_prints_the_scores_and_saves_the_pdf() {
    let site = capture_audit::fixtures::FixtureSite::start().await.unwrap();
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let home = tempfile::tempdir().unwrap();
    let pdf = home.path().join("report.pdf");
    let mut c = client_cmd(&app, home.path(), &["audit", &site.url("/no-title"), "--pdf", pdf.to_str().unwrap()]);
    c.env("CAPTURE_SERVER", &app.base).env("CAPTURE_API_KEY", &key);
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("performance ") && stdout.contains("accessibility "), "{stdout}");
    assert!(stdout.contains("[critical]") && stdout.contains(&format!("report: {}/r/", app.base)), "{stdout}");
    assert!(std::fs::read(&pdf).unwrap().starts_with(b"%PDF-"));

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut c = client_cmd(&app, home.path(), &["audit", &format!("http://{closed}/"), "--json"]);
    c.env("CAPTURE_SERVER", &app.base).env("CAPTURE_API_KEY", &key);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not be reached"));
}

/// `capture shot --set KEY=VALUE`: any option of the request by its API name, sent as typed
/// JSON beside the flags; an unknown name is refused before anything is sent.
#[tokio::test]
async fn shot_sends_set_options_and_refuses_unknown_ones_without_contacting_the_server() {
    use cli_support::{Reply, Scripted, client};
    let s = Scripted::start().await;
    let job = |status: &str| {
        serde_json::json!({
            "id": "scr_setopts1", "status": status, "url": "https://example.com/",
            "publicUrl": format!("{}/files/scr_setopts1.png", s.base),
        })
    };
    s.on("POST /v1/screenshot", vec![Reply::json(202, job("pending"))]);
    s.on(
        "GET /v1/screenshot/scr_setopts1/stream",
        vec![Reply::raw(200, "text/event-stream", b"event: done\ndata: {\"status\":\"done\"}\n\n".to_vec())],
    );
    s.on("GET /v1/screenshot/scr_setopts1", vec![Reply::json(200, job("done"))]);
    s.on("GET /files/scr_setopts1.png", vec![Reply::raw(200, "image/png", b"png bytes".to_vec())]);
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("set.png");
    let key = "sk_live_scriptedscriptedscripted";

    let shot = [
        "shot",
        "https://example.com/",
        "-o",
        file.to_str().unwrap(),
        "--width",
        "640",
        "--set",
        "waitFor=body",
        "--set",
        "timeoutMs=5000",
    ];
    let run = client(home.path(), &s.base, key, &shot).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), b"png bytes");
    let posts = s.seen("POST /v1/screenshot");
    assert_eq!(posts.len(), 1);
    let body: Value = serde_json::from_slice(&posts[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"url": "https://example.com/", "width": 640, "waitFor": "body", "timeoutMs": 5000})
    );

    // An unknown option: the invalid-request exit code, the key named, nothing sent.
    let fresh = Scripted::start().await;
    let run = client(home.path(), &fresh.base, key, &["shot", "https://example.com/", "--set", "nosuchOption=1"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(
        run.stderr.starts_with("error: unknown option 'nosuchOption' (from --set); the options are: url,"),
        "{}",
        run.stderr
    );
    assert_eq!(fresh.requests(), 0, "refused before connecting");
    // A value of the wrong type for a known option, the same way.
    let run = client(home.path(), &fresh.base, key, &["shot", "https://example.com/", "--set", "timeoutMs=soon"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert_eq!(
        run.stderr.trim(),
        "error: option 'timeoutMs' (from --set): invalid type: string \"soon\", expected a JSON number"
    );
    // KEY=VALUE without `=` is wrong usage, refused by the argument parser.
    let run = client(home.path(), &fresh.base, key, &["shot", "https://example.com/", "--set", "waitFor"]).await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("expected KEY=VALUE (e.g. waitFor=#main), got 'waitFor'"), "{}", run.stderr);
    assert_eq!(fresh.requests(), 0);
}
