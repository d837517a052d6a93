//! `capture serve`'s log lines as an operator's collector receives them (stderr piped):
//! `CAPTURE_LOG_FORMAT=json` gives one JSON object per line, text has no colour codes, and a
//! bad value stops start-up naming the variable. `serve` bounds glibc's malloc arenas.

#[allow(dead_code)]
mod cli_support;

use cli_support::{Reply, Scripted, Serve};
use serde_json::Value;

/// Start an api node, make it log a few requests, stop it: its whole stderr.
async fn serve_and_stop(env: &[(&str, &str)]) -> String {
    let app = Serve::start("api", env).await;
    let http = reqwest::Client::new();
    for path in ["/healthz", "/readyz", "/v1/account/balance"] {
        let r = http.get(format!("{}{path}", app.base)).send().await.unwrap();
        assert!(r.status().as_u16() < 500, "{path}: {}", r.status());
        // Without OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced.
        assert!(r.headers().get("traceparent").is_none(), "{path}: {:?}", r.headers());
    }
    app.stop().await
}

#[tokio::test]
async fn json_logs_are_one_object_per_line() {
    let stderr = serve_and_stop(&[("CAPTURE_LOG_FORMAT", "json"), ("CAPTURE_LOG", "debug,sqlx=warn,hyper=info")]).await;
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.len() >= 2, "start-up and shutdown at least:\n{stderr}");
    let mut messages = Vec::new();
    for line in &lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        assert!(v["timestamp"].as_str().is_some_and(|t| t.len() >= 20 && t.contains('T')), "{line}");
        assert!(["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&v["level"].as_str().unwrap_or("")), "{line}");
        assert!(v["target"].as_str().is_some_and(|t| !t.is_empty()), "{line}");
        assert!(v["message"].is_string(), "{line}");
        messages.push(v);
    }
    // The line that says where the service listens carries the address as a field.
    let serving = messages.iter().find(|v| v["message"] == "serving").expect("a serving line");
    assert!(serving["addr"].as_str().is_some_and(|a| a.starts_with("127.0.0.1:")), "{serving}");
    assert!(!stderr.contains("\x1b["), "no colour codes in JSON");
}

#[tokio::test]
async fn text_logs_into_a_pipe_have_no_colour_codes() {
    let stderr = serve_and_stop(&[("CAPTURE_LOG_FORMAT", "text")]).await;
    assert!(stderr.contains("serving"), "{stderr}");
    assert!(stderr.contains(" INFO "), "{stderr}");
    assert!(!stderr.contains("\x1b["), "{stderr:?}");
    // The default is text as well.
    let stderr = serve_and_stop(&[]).await;
    assert!(stderr.contains("serving") && !stderr.contains("\x1b["), "{stderr:?}");
    assert!(serde_json::from_str::<Value>(stderr.lines().next().unwrap()).is_err(), "text, not JSON");
}

#[tokio::test]
async fn with_an_otlp_endpoint_serve_sends_its_requests_spans_the_last_ones_when_it_stops() {
    let collector = Scripted::start().await;
    collector.on("POST /v1/traces", vec![Reply::json(200, serde_json::json!({}))]);
    let app = Serve::start(
        "api",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.base),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0k"),
        ],
    )
    .await;
    let (trace, caller) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let r = reqwest::Client::new()
        .get(format!("{}/healthz", app.base))
        .header("traceparent", format!("00-{trace}-{caller}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answered = r.headers()["traceparent"].to_str().unwrap().to_string();
    assert!(answered.starts_with(&format!("00-{trace}-")) && !answered.contains(caller), "{answered}");
    // Nothing forces the batch out before its 5 s: the stop (SIGTERM) sends it.
    let stderr = app.stop().await;
    let exports = collector.seen("POST /v1/traces");
    assert!(!exports.is_empty(), "no export; stderr:\n{stderr}");
    let spans: Vec<Value> = exports
        .iter()
        .flat_map(|e| {
            let v: Value = serde_json::from_slice(&e.body).unwrap();
            let mut out = Vec::new();
            for rs in v["resourceSpans"].as_array().unwrap() {
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    out.extend(ss["spans"].as_array().unwrap().iter().cloned());
                }
            }
            out
        })
        .collect();
    let span =
        spans.iter().find(|s| s["traceId"] == trace).unwrap_or_else(|| panic!("no span of the trace: {spans:?}"));
    assert_eq!((span["name"].as_str(), span["parentSpanId"].as_str()), (Some("GET /healthz"), Some(caller)));
    assert!(answered.contains(span["spanId"].as_str().unwrap()), "{answered} names {span}");
    assert!(exports.iter().all(|e| e.authorization.as_deref() == Some("Bearer t0k")));
    assert!(!stderr.contains("the last spans"), "sent in time: {stderr}");
}

/// `capture serve` with a bad setting in `env`: it must stop before listening; its stderr.
fn serve_refuses(env: &[(&str, &str)]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capture"))
        .args(["serve", "--roles", "api"])
        .envs(env.iter().copied())
        .env("CAPTURE_LISTEN", "127.0.0.1:0")
        .env("CAPTURE_DATA_DIR", tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "it never listened");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_log_format_stops_start_up_naming_the_variable() {
    let err = serve_refuses(&[("CAPTURE_LOG_FORMAT", "xml")]);
    assert!(err.contains("CAPTURE_LOG_FORMAT") && err.contains("'xml' is not text or json"), "{err}");
}

#[test]
fn a_bad_otel_setting_stops_start_up_naming_the_variable() {
    let err = serve_refuses(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]);
    assert!(err.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && err.contains("http/protobuf"), "{err}");
}

/// The server's environment as the kernel holds it (after any re-exec).
fn environ_of(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    raw.split(|b| *b == 0).map(|v| String::from_utf8_lossy(v).into_owned()).collect()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test]
async fn serve_bounds_glibc_malloc_arenas_unless_the_operator_chose() {
    // Unset: `serve` re-executes itself with MALLOC_ARENA_MAX=2 (same PID, still serving).
    let inherited = std::env::var("MALLOC_ARENA_MAX").ok();
    let app = Serve::start("api", &[]).await;
    let want = format!("MALLOC_ARENA_MAX={}", inherited.as_deref().unwrap_or("2"));
    assert!(environ_of(app.pid()).contains(&want), "{want} in the server's environment");
    if inherited.is_none() && std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        assert!(environ_of(app.pid()).contains(&"MALLOC_MMAP_THRESHOLD_=262144".to_string()));
    }
    let r = reqwest::get(format!("{}/healthz", app.base)).await.unwrap();
    assert_eq!(r.status(), 200);
    app.stop().await;
    // Set by the operator: kept as it is.
    let app = Serve::start("api", &[("MALLOC_ARENA_MAX", "4")]).await;
    assert!(environ_of(app.pid()).contains(&"MALLOC_ARENA_MAX=4".to_string()));
    app.stop().await;
}
