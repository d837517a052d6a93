//! What the CLI's own tests share: the real `capture serve` on a random port with a fresh
//! SQLite file (its stderr kept), `capture` client runs, and a scripted HTTP server that
//! answers a client command with chosen failures and records every request.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;

/// A running `capture serve` process.
pub struct Serve {
    pub base: String,
    pub env: Vec<(String, String)>,
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Option<std::thread::JoinHandle<()>>,
    pub tmp: tempfile::TempDir,
}

impl Serve {
    /// Start `capture serve --roles ROLES` with `env` over the test defaults (random port,
    /// fresh SQLite file and data folder) and wait for the address it prints.
    pub async fn start(roles: &str, env: &[(&str, &str)]) -> Serve {
        let tmp = tempfile::tempdir().unwrap();
        let mut all: Vec<(String, String)> = vec![
            ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
            ("CAPTURE_DATA_DIR".into(), tmp.path().join("data").display().to_string()),
            ("CAPTURE_DATABASE_URL".into(), format!("sqlite://{}", tmp.path().join("capture.db").display())),
            ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1,::1".into()),
            ("CAPTURE_BROWSERS".into(), "1".into()),
            ("CAPTURE_WORKER_CONCURRENCY".into(), "1".into()),
            ("CAPTURE_LOG".into(), "info".into()),
        ];
        all.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_capture"));
        cmd.args(["serve", "--roles", roles]).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.env_remove("CAPTURE_LOG_FORMAT").env_remove("NO_COLOR");
        for (k, v) in &all {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start capture serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (sink, mut err) = (stderr.clone(), child.stderr.take().unwrap());
        let stderr_done = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out).lines();
            if let Some(Ok(l)) = lines.next() {
                let _ = tx.send(l);
            }
            for _ in lines {}
        });
        let first = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(90))).await.unwrap();
        let Ok(line) = first else {
            let _ = child.kill();
            let _ = child.wait();
            let _ = stderr_done.join();
            panic!("capture serve printed no address; stderr:\n{}", stderr.lock().unwrap());
        };
        let base = line.strip_prefix("listening on ").expect("the api role prints its address").trim().to_string();
        Serve { base, env: all, child: Some(child), stderr, stderr_done: Some(stderr_done), tmp }
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Run `capture ARGS` with the server's settings (admin commands); panics on failure.
    pub fn admin(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_capture"));
        cmd.args(args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "capture {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// A new account on `plan` and an API key for it.
    pub fn key(&self, plan: &str) -> String {
        let email = format!("u{}@example.com", rand_suffix());
        self.admin(&["admin", "user", "create", "--email", &email, "--plan", plan]);
        let out = self.admin(&["admin", "key", "create", "--email", &email, "--name", "test"]);
        out.lines().last().unwrap().trim().to_string()
    }

    /// SIGTERM the server, wait for it to exit, and return everything it wrote to stderr.
    pub async fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let done = self.stderr_done.take().unwrap();
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("capture serve did not stop within 30 s of SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = done.join();
        })
        .await
        .unwrap();
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A unique-enough suffix for names in a shared database.
pub fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}{}x{}", std::process::id(), t % 1_000_000_000, N.fetch_add(1, Ordering::Relaxed))
}

/// The output of one `capture` client run.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Run a `capture` client command against `server` with `key`, no stored session.
pub async fn client(home: &Path, server: &str, key: &str, args: &[&str]) -> Run {
    let started = Instant::now();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_capture"))
        .args(args)
        .env("CAPTURE_CONFIG_DIR", home.join("cfg"))
        .env("CAPTURE_SERVER", server)
        .env("CAPTURE_API_KEY", key)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// One scripted answer.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering (a server too slow for the client's timeout).
    pub delay: Duration,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
        }
    }

    /// The API's error body `{error, code, requestId}`.
    pub fn error(status: u16, code: &str) -> Reply {
        Reply::json(
            status,
            serde_json::json!({"error": format!("scripted {code}"), "code": code, "requestId": "req_scripted"}),
        )
    }

    /// Any body with a content type.
    pub fn raw(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
        Reply { status, headers: vec![("content-type".into(), content_type.into())], body, delay: Duration::ZERO }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }

    pub fn delay(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

/// A request the scripted server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    pub authorization: Option<String>,
    pub body: Vec<u8>,
    pub at: Instant,
}

#[derive(Default)]
struct Script {
    replies: HashMap<String, VecDeque<Reply>>,
    seen: Vec<Seen>,
}

/// An HTTP server on 127.0.0.1 that answers `METHOD /path` with its scripted replies in
/// order (the last one repeats) and 404 otherwise, recording every request.
pub struct Scripted {
    pub base: String,
    script: Arc<Mutex<Script>>,
    _server: tokio::task::JoinHandle<()>,
}

impl Scripted {
    pub async fn start() -> Scripted {
        let script = Arc::new(Mutex::new(Script::default()));
        let app = axum::Router::new().fallback(answer).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Scripted { base, script, _server: server }
    }

    /// Script the answers to `route` (`"POST /v1/screenshot"`).
    pub fn on(&self, route: &str, replies: Vec<Reply>) {
        self.script.lock().unwrap().replies.insert(route.to_string(), replies.into());
    }

    /// The requests to `route` so far.
    pub fn seen(&self, route: &str) -> Vec<Seen> {
        let s = self.script.lock().unwrap();
        s.seen.iter().filter(|r| format!("{} {}", r.method, r.path) == route).cloned().collect()
    }

    /// How many requests, to any route, it has seen.
    pub fn requests(&self) -> usize {
        self.script.lock().unwrap().seen.len()
    }
}

async fn answer(State(script): State<Arc<Mutex<Script>>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.map(|b| b.to_vec()).unwrap_or_default();
    let header = |k: &str| parts.headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    let route = format!("{} {}", parts.method, parts.uri.path());
    let reply = {
        let mut s = script.lock().unwrap();
        s.seen.push(Seen {
            method: parts.method.to_string(),
            path: parts.uri.path().to_string(),
            idempotency_key: header("idempotency-key"),
            authorization: header("authorization"),
            body,
            at: Instant::now(),
        });
        match s.replies.get_mut(&route) {
            Some(q) if q.len() > 1 => q.pop_front(),
            Some(q) => q.front().cloned(),
            None => None,
        }
    };
    let reply = reply.unwrap_or_else(|| Reply::error(404, "NOT_FOUND"));
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut r = Response::builder().status(reply.status);
    for (k, v) in &reply.headers {
        r = r.header(k, v);
    }
    r.body(Body::from(reply.body)).unwrap()
}
