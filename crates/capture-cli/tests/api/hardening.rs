//! Every log line of a request carries its request id and client address: the process's JSON
//! logs on stderr.
//! The rest: `crates/capture-server/tests/service/api/hardening.rs`.

use crate::helpers::*;
use capture_testkit::hardening::*;
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_log_line_of_a_request_carries_its_request_id() {
    let app = TestApp::spawn(Opts::api(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let (base, mut child, lines) = serve_with_json_logs(&app).await;
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(png_claiming(9000, 9000)).file_name("b.png"));
    let r = app
        .client
        .post(format!("{base}/v1/screenshot/upload"))
        .bearer_auth(&key)
        .header("x-request-id", "req_logs_upload_1")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r =
        app.client.get(format!("{base}/v1/account/balance")).header("x-request-id", "req_logs_nokey_1").send().await;
    assert_eq!(r.unwrap().status(), 401);
    let r = app.client.get(format!("{base}/healthz")).send().await.unwrap();
    let minted = r.headers()["x-request-id"].to_str().unwrap().to_string();
    // The last request's access line is written once it is answered: wait until it reaches
    // the pipe, then stop the server.
    eventually("the last request's access line is logged", Duration::from_secs(10), || async {
        let seen = lines.lock().unwrap().iter().any(|l| l.contains(&minted) && l.contains("request answered"));
        if seen { Ok(()) } else { Err(lines.lock().unwrap().len()) }
    })
    .await;
    let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = tokio::task::spawn_blocking(move || child.wait()).await;
    let lines = lines.lock().unwrap().clone();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    let of = |id: &str| -> Vec<&Value> { parsed.iter().filter(|v| v["span"]["request_id"] == id).collect() };
    // The handler's own line and the access line, both with the id the client sent.
    let upload = of("req_logs_upload_1");
    assert!(upload.iter().any(|v| v["message"] == "upload refused: too many pixels"), "{lines:#?}");
    assert!(upload.iter().any(|v| v["message"] == "request answered" && v["status"] == 400), "{lines:#?}");
    assert!(of("req_logs_nokey_1").iter().any(|v| v["status"] == 401), "{lines:#?}");
    // A minted id is the one the response named.
    assert!(of(&minted).iter().any(|v| v["message"] == "request answered"), "{minted}: {lines:#?}");
    // And no line logged inside a request lacks it, nor the client's address.
    for v in &parsed {
        if v["span"]["name"] == "request" {
            assert!(v["span"]["request_id"].as_str().is_some_and(|s| s.starts_with("req_")), "{v}");
            assert_eq!(v["span"]["client"], "127.0.0.1", "{v}");
        }
    }
}

/// Start `capture serve` on `app`'s deployment with JSON logs on a pipe; returns the base URL,
/// the process and the collected stderr lines.
async fn serve_with_json_logs(
    app: &TestApp,
) -> (String, std::process::Child, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::BufRead;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_capture"));
    cmd.args(["serve", "--roles", "api"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    for (k, v) in &app.env {
        cmd.env(k, v);
    }
    cmd.env("CAPTURE_LOG_FORMAT", "json").env("CAPTURE_LOG", "info,capture_server::access=debug");
    let mut child = cmd.spawn().unwrap();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (stderr, sink) = (child.stderr.take().unwrap(), lines.clone());
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(l);
        }
    });
    let stdout = child.stdout.take().unwrap();
    let first = tokio::task::spawn_blocking(move || {
        let mut l = String::new();
        std::io::BufReader::new(stdout).read_line(&mut l).unwrap();
        l
    })
    .await
    .unwrap();
    let base = first.trim().strip_prefix("listening on ").expect("its address").to_string();
    (base, child, lines)
}
