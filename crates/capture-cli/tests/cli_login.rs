//! `capture login`'s loopback redirect target: it takes one answer on `/callback`, checks
//! the state, shows a page that says what happened, waits a bounded time, and then stops
//! listening. (The whole sign-in that succeeds is in `cli.rs`.)

#[allow(dead_code)]
mod cli_support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli_support::Serve;

/// A running `capture login` and the authorization address it printed.
struct Login {
    child: Child,
    auth: url::Url,
    _home: tempfile::TempDir,
}

impl Login {
    async fn start(server: &str, timeout_secs: &str) -> Login {
        let home = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_capture"))
            .args(["login", "--server", server, "--no-browser", "--timeout", timeout_secs])
            .env("CAPTURE_CONFIG_DIR", home.path().join("cfg"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let line = tokio::task::spawn_blocking(move || {
            BufReader::new(out).lines().map_while(Result::ok).find(|l| l.starts_with("http"))
        })
        .await
        .unwrap()
        .expect("an authorization address on stdout");
        Login { child, auth: url::Url::parse(line.trim()).unwrap(), _home: home }
    }

    fn param(&self, name: &str) -> String {
        self.auth.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned()).unwrap()
    }

    /// Wait for the command to end: (exit code, stderr).
    async fn finish(mut self) -> (Option<i32>, String) {
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while self.child.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "capture login did not end");
                std::thread::sleep(Duration::from_millis(20));
            }
            let out = self.child.wait_with_output().unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
        })
        .await
        .unwrap()
    }
}

/// Poll until nothing listens at `addr` any more.
async fn refuses(redirect: &str) -> bool {
    let u = url::Url::parse(redirect).unwrap();
    let addr = format!("127.0.0.1:{}", u.port().unwrap());
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if tokio::net::TcpStream::connect(&addr).await.is_err() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loopback_callback_checks_state_answers_once_and_stops() {
    let app = Serve::start("api", &[]).await;
    let http = reqwest::Client::new();

    // An answer with another login's state is refused, and ends this login.
    let login = Login::start(&app.base, "60").await;
    let redirect = login.param("redirect_uri");
    assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"), "{redirect}");
    assert_eq!(login.param("code_challenge_method"), "S256");
    assert_eq!(login.param("resource"), app.base);
    let r = http.get(format!("{redirect}?code=stolen&state=not-this-one")).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("Sign-in refused"));
    let (code, stderr) = login.finish().await;
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("state mismatch"), "{stderr}");
    assert!(refuses(&redirect).await, "the loopback server stopped");

    // Stray requests (a favicon) do not count; a cancelled sign-in ends it with a clear page.
    let login = Login::start(&app.base, "60").await;
    let (redirect, state) = (login.param("redirect_uri"), login.param("state"));
    let favicon = redirect.replace("/callback", "/favicon.ico");
    assert_eq!(http.get(&favicon).send().await.unwrap().status(), 404);
    let r = http.get(format!("{redirect}?error=access_denied&state={state}")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(r.text().await.unwrap().contains("Sign-in cancelled"));
    let (code, stderr) = login.finish().await;
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("access_denied"), "{stderr}");
    assert!(refuses(&redirect).await);

    // Nobody answers: the wait is bounded.
    let started = Instant::now();
    let login = Login::start(&app.base, "1").await;
    let redirect = login.param("redirect_uri");
    let (code, stderr) = login.finish().await;
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert!(refuses(&redirect).await);
    app.stop().await;
}
