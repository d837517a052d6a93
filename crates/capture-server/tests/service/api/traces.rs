//! Traces as a collector receives them: a local OTLP/HTTP receiver (`POST /v1/traces`,
//! protobuf decoded with the OTLP messages, JSON with serde_json), an app pointed at it with the
//! standard `OTEL_*` settings, and the spans of a request and of the capture job it makes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use capture_testkit::captures::pages;
use capture_testkit::webhooks::{Receiver, create_endpoint};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::{Value, json};

use crate::helpers::*;

/// One export the collector received.
#[derive(Debug, Clone)]
struct Export {
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// A span, whichever encoding it came in.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    /// Empty for a root.
    parent: String,
    name: String,
    /// 2 server, 3 client (OTLP's numbers).
    kind: i64,
    start_ns: u64,
    end_ns: u64,
    attrs: BTreeMap<String, String>,
    /// 2: error.
    status: i64,
    /// The resource's `service.name`.
    service: String,
}

impl Span {
    fn start_ms(&self) -> i64 {
        (self.start_ns / 1_000_000) as i64
    }
    fn end_ms(&self) -> i64 {
        (self.end_ns / 1_000_000) as i64
    }
    fn attr(&self, k: &str) -> &str {
        self.attrs.get(k).map_or("", String::as_str)
    }
}

/// A local OTLP/HTTP receiver: answers 200 to every export and keeps it.
struct Collector {
    base: String,
    got: Arc<Mutex<Vec<Export>>>,
}

impl Collector {
    async fn start() -> Collector {
        let got: Arc<Mutex<Vec<Export>>> = Arc::default();
        let g = got.clone();
        let app = axum::Router::new().fallback(axum::routing::post(
            move |uri: axum::http::Uri, headers: HeaderMap, body: axum::body::Bytes| {
                let g = g.clone();
                async move {
                    g.lock().unwrap().push(Export { path: uri.path().to_string(), headers, body: body.to_vec() });
                    axum::http::StatusCode::OK
                }
            },
        ));
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        Collector { base, got }
    }

    fn exports(&self) -> Vec<Export> {
        self.got.lock().unwrap().clone()
    }

    /// Every span received, decoded as its export's content type says.
    fn spans(&self) -> Vec<Span> {
        let mut out = Vec::new();
        for e in self.exports() {
            let ct = e.headers.get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
            match ct.as_str() {
                "application/x-protobuf" => out.extend(from_protobuf(&e.body)),
                "application/json" => out.extend(from_json(&e.body)),
                other => panic!("an export with content type {other:?}"),
            }
        }
        out
    }

    /// The spans of trace `trace_id`.
    fn trace(&self, trace_id: &str) -> Vec<Span> {
        self.spans().into_iter().filter(|s| s.trace_id == trace_id).collect()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn any_to_string(v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attrs_of(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter().map(|kv| (kv.key.clone(), any_to_string(&kv.value))).collect()
}

fn from_protobuf(body: &[u8]) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
    let mut out = Vec::new();
    for rs in req.resource_spans {
        let resource = attrs_of(&rs.resource.map(|r| r.attributes).unwrap_or_default());
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent: hex(&s.parent_span_id),
                    name: s.name,
                    kind: i64::from(s.kind),
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                    attrs: attrs_of(&s.attributes),
                    status: s.status.map_or(0, |st| i64::from(st.code)),
                    service: resource.get("service.name").cloned().unwrap_or_default(),
                });
            }
        }
    }
    out
}

/// A number of OTLP/JSON: a JSON number, or a string holding one (64-bit integers).
fn num(v: &Value) -> u64 {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

fn json_attrs(v: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for kv in v.as_array().into_iter().flatten() {
        let val = &kv["value"];
        let s = match (val.get("stringValue"), val.get("intValue"), val.get("boolValue")) {
            (Some(s), _, _) => s.as_str().unwrap().to_string(),
            (_, Some(i), _) => num(i).to_string(),
            (_, _, Some(b)) => b.to_string(),
            _ => val.to_string(),
        };
        out.insert(kv["key"].as_str().unwrap().to_string(), s);
    }
    out
}

fn from_json(body: &[u8]) -> Vec<Span> {
    let v: Value = serde_json::from_slice(body).expect("an OTLP/JSON export");
    let mut out = Vec::new();
    for rs in v["resourceSpans"].as_array().expect("resourceSpans") {
        let resource = json_attrs(&rs["resource"]["attributes"]);
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            for s in ss["spans"].as_array().into_iter().flatten() {
                out.push(Span {
                    trace_id: s["traceId"].as_str().unwrap().to_lowercase(),
                    span_id: s["spanId"].as_str().unwrap().to_lowercase(),
                    parent: s["parentSpanId"].as_str().unwrap_or("").to_lowercase(),
                    name: s["name"].as_str().unwrap().to_string(),
                    kind: num(&s["kind"]) as i64,
                    start_ns: num(&s["startTimeUnixNano"]),
                    end_ns: num(&s["endTimeUnixNano"]),
                    attrs: json_attrs(&s["attributes"]),
                    status: num(&s["status"]["code"]) as i64,
                    service: resource.get("service.name").cloned().unwrap_or_default(),
                });
            }
        }
    }
    out
}

/// A caller's trace and span ids, random.
fn caller_ids() -> (String, String) {
    (format!("{:032x}", rand::random::<u128>()), format!("{:016x}", rand::random::<u64>()))
}

/// `(version, trace id, span id, flags)` of a `traceparent` header.
fn parts(traceparent: &str) -> (String, String, String, String) {
    let p: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(p.len(), 4, "{traceparent}");
    (p[0].into(), p[1].into(), p[2].into(), p[3].into())
}

/// The one span named `name` (failing with what there is instead).
fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(found.len(), 1, "one {name:?} span, among {names:?}");
    found[0]
}

/// The job's work in the worker, span by span (a PNG of a plain page).
const JOB_SPANS: [&str; 15] = [
    "queue.wait",
    "capture",
    "page",
    "setup",
    "navigate",
    "wall",
    "consent",
    "wait",
    "blocking",
    "overlays",
    "shot",
    "metadata",
    "encode",
    "content",
    "store",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_and_the_capture_job_it_makes_are_one_trace_at_the_collector() {
    let collector = Collector::start().await;
    let site = Site::start(pages()).await;
    let hooks = Receiver::start(vec![(200, Duration::ZERO)]).await;
    // The general endpoint: the exporter adds /v1/traces; protobuf is the default.
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.base)
            .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true"),
    )
    .await;
    assert!(app.state.traces.enabled());
    let (_, key) = app.user_with_key("pro").await;
    create_endpoint(&app, &key, json!({"url": hooks.url})).await;

    let (trace, caller) = caller_ids();
    let r = app
        .client
        .post(app.url("/v1/screenshot"))
        .bearer_auth(&key)
        .header("traceparent", format!("00-{trace}-{caller}-01"))
        .json(&json!({"url": site.url("/red"), "width": 400, "height": 300}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    // The answer names the request's own span, in the caller's trace.
    let (version, answered_trace, request_span, flags) = parts(r.headers()["traceparent"].to_str().unwrap());
    assert_eq!((version.as_str(), answered_trace.as_str(), flags.as_str()), ("00", trace.as_str(), "01"));
    assert_ne!(request_span, caller);
    let job: Value = r.json().await.unwrap();
    let id = job["id"].as_str().unwrap();
    let done = app.wait(&key, id).await;
    assert_eq!(done["status"], "done", "{done}");
    let row = app.state.store.screenshot(id).await.unwrap().unwrap();
    assert_eq!(row.traceparent.as_deref(), Some(format!("00-{trace}-{request_span}-01").as_str()));
    hooks.wait_for(1, Duration::from_secs(30)).await;

    let spans = eventually("the request's and the job's spans at the collector", Duration::from_secs(30), || async {
        app.state.traces.flush().await;
        let spans = collector.trace(&trace);
        let names: Vec<String> = spans.iter().map(|s| s.name.clone()).collect();
        let wanted = ["POST /v1/screenshot", "webhook.delivery"].iter().chain(JOB_SPANS.iter());
        if wanted.clone().all(|w| names.iter().any(|n| n == w)) { Ok(spans) } else { Err(names) }
    })
    .await;
    assert!(collector.exports().iter().all(|e| e.path == "/v1/traces"), "the signal's path added");

    // The request: a server span, the caller's span its parent.
    let req = one(&spans, "POST /v1/screenshot");
    assert_eq!((req.span_id.as_str(), req.parent.as_str(), req.kind), (request_span.as_str(), caller.as_str(), 2));
    assert_eq!(req.attr("http.request.method"), "POST");
    assert_eq!(req.attr("http.route"), "/v1/screenshot");
    assert_eq!(req.attr("url.path"), "/v1/screenshot");
    assert_eq!(req.attr("http.response.status_code"), "202");
    assert_eq!(req.service, "capture");
    // The worker's spans: in the same trace, under the request; the browser's under `capture`.
    for name in JOB_SPANS {
        let s = one(&spans, name);
        assert_eq!(s.trace_id, trace, "{name}");
        assert!(s.end_ns >= s.start_ns && s.start_ns > 0, "{name}: {s:?}");
        assert_eq!(s.status, 0, "{name} did not fail");
    }
    let capture = one(&spans, "capture");
    for name in ["queue.wait", "capture"] {
        assert_eq!(one(&spans, name).parent, request_span, "{name} is a child of the request");
    }
    for name in &JOB_SPANS[2..] {
        let s = one(&spans, name);
        assert_eq!(s.parent, capture.span_id, "{name} is a step of the capture");
        // Within the attempt (to the millisecond the row's times are kept in).
        assert!(s.start_ms() >= capture.start_ms() && s.end_ms() <= capture.end_ms(), "{name}: {s:?} in {capture:?}");
    }
    assert_eq!(capture.attr("capture.job.id"), id);
    assert_eq!(capture.attr("capture.job.format"), "png");
    assert!(one(&spans, "store").attr("capture.file.bytes").parse::<u64>().unwrap() > 0);
    // The times the job's page shows: waited from created to started, captured until finished.
    let wait = one(&spans, "queue.wait");
    assert_eq!((wait.start_ms(), wait.end_ms()), (row.created_at, row.started_at.unwrap()));
    assert_eq!((capture.start_ms(), capture.end_ms()), (row.started_at.unwrap(), row.completed_at.unwrap()));
    // The webhook's delivery: a client span of the same trace.
    let hook = one(&spans, "webhook.delivery");
    assert_eq!((hook.parent.as_str(), hook.kind), (request_span.as_str(), 3));
    assert_eq!(hook.attr("capture.webhook.event"), "screenshot.completed");
    assert_eq!(hook.attr("http.response.status_code"), "200");
    assert_eq!(hook.attr("capture.webhook.attempt"), "1");
}

#[tokio::test]
async fn traces_go_as_json_to_the_traces_endpoint_with_its_headers() {
    let collector = Collector::start().await;
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite)
            .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &format!("{}/otlp/traces", collector.base))
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0k")
            .env("OTEL_SERVICE_NAME", "capture-json"),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
    // No traceparent: a new trace, the request span its root.
    let r = app.get(&key, "/v1/account/balance").await;
    assert_eq!(r.status(), 200);
    let (_, trace, span, _) = parts(r.headers()["traceparent"].to_str().unwrap());
    // An unknown route: named by its method alone; a refusal keeps its status.
    let r = app.client.get(app.url("/v1/nothing-here")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let (_, missing, _, _) = parts(r.headers()["traceparent"].to_str().unwrap());
    assert_ne!(missing, trace, "one trace per request");
    // A load balancer's probe is not traced unless it brings a traceparent.
    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert!(r.headers().get("traceparent").is_none(), "{:?}", r.headers());

    let spans = eventually("both requests' spans", Duration::from_secs(30), || async {
        app.state.traces.flush().await;
        let s: Vec<Span> =
            collector.spans().into_iter().filter(|s| s.trace_id == trace || s.trace_id == missing).collect();
        if s.len() >= 2 { Ok(s) } else { Err(s) }
    })
    .await;
    let balance = one(&spans, "GET /v1/account/balance");
    assert_eq!((balance.span_id.as_str(), balance.parent.as_str(), balance.kind), (span.as_str(), "", 2));
    assert_eq!(balance.attr("http.response.status_code"), "200");
    assert_eq!(balance.service, "capture-json");
    let unknown = one(&spans, "GET");
    assert_eq!((unknown.attr("http.response.status_code"), unknown.attr("http.route")), ("404", ""));
    for e in collector.exports() {
        assert_eq!(e.path, "/otlp/traces", "the signal's endpoint as it is");
        assert_eq!(e.headers["authorization"], "Bearer t0k");
        assert_eq!(e.headers["content-type"], "application/json");
    }
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_traced() {
    let app = TestApp::spawn(Opts::api(Db::Sqlite)).await;
    assert!(!app.state.traces.enabled());
    let (_, key) = app.user_with_key("pro").await;
    let (trace, caller) = caller_ids();
    let r = app
        .client
        .post(app.url("/v1/screenshot"))
        .bearer_auth(&key)
        .header("traceparent", format!("00-{trace}-{caller}-01"))
        .json(&json!({"url": "http://127.0.0.1:9/"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    // No span to name, none to continue: the caller's traceparent is not echoed, not stored.
    assert!(r.headers().get("traceparent").is_none(), "{:?}", r.headers());
    let job: Value = r.json().await.unwrap();
    let row = app.state.store.screenshot(job["id"].as_str().unwrap()).await.unwrap().unwrap();
    assert_eq!(row.traceparent, None);
}
