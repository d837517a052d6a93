//! OpenTelemetry traces over OTLP/HTTP: one trace per request, continued by the capture job it
//! makes. Off (no `OTEL_EXPORTER_OTLP_ENDPOINT`), [`Traces`] is empty: nothing is made, nothing
//! is sent, and the process has no trace layer.
//!
//! Spans are made two ways:
//! - **The request's span** is the `tracing` span `request` of `http::request`, made an
//!   OpenTelemetry server span by tracing-opentelemetry's [`layer`], which the process installs
//!   once in its subscriber (the CLI's logs, the tests' harness); log lines inside it become its
//!   events. The layer's tracer is [`Routed`]: it makes each span with the tracer of the
//!   application whose request it belongs to, which the middleware puts in the span's parent
//!   context ([`Traces::request_parent`]), and records nothing for spans of no such request. So
//!   every application exports to its own endpoint, several in one process (the tests) included,
//!   and one without an endpoint exports nothing.
//! - **A job's work** happens later, in a worker, often on another node, and much of it inside
//!   the browser: it is recorded from its measured times with explicit start and end
//!   ([`Stage`]), under the request's span context stored with the job (`traceparent`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use opentelemetry::global::{BoxedSpan, BoxedTracer};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::noop::NoopTracer;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

use crate::config::{OtlpProtocol, TraceSettings};

/// W3C Trace Context: `traceparent` (and `tracestate`) in and out.
static PROPAGATOR: LazyLock<TraceContextPropagator> = LazyLock::new(TraceContextPropagator::new);

/// The instrumentation scope of every span the service makes.
const SCOPE: &str = "capture";

/// How long a stop waits for the last spans to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// This application's traces: off, or exported over OTLP/HTTP in batches from a tokio task.
/// Cheap to clone.
#[derive(Clone, Default)]
pub struct Traces(Option<Arc<Exporter>>);

struct Exporter {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// The tracer the bridge layer uses for this application's requests.
    routed: Arc<BoxedTracer>,
    /// The service's clock's offset from the system clock (ms): spans are on the system clock.
    offset_ms: i64,
    /// Shut down (or its shutdown started).
    shut: AtomicBool,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // The provider's own drop would wait for its batch task on this thread, which may be
        // the one that task needs (a test's single-threaded runtime): wait elsewhere instead.
        if !self.shut.swap(true, Ordering::SeqCst) {
            let provider = self.provider.clone();
            let _ = std::thread::Builder::new().name("capture-traces-stop".into()).spawn(move || provider.shutdown());
        }
    }
}

impl Traces {
    /// Export as `settings` say (nothing when they name no endpoint). Runs on the tokio runtime
    /// the batches are sent from. `offset_ms`: the service's clock's offset (`CAPTURE_CLOCK_OFFSET`).
    pub fn start(settings: &TraceSettings, offset_ms: i64) -> Result<Traces, String> {
        let Some(o) = &settings.otlp else { return Ok(Traces::default()) };
        // The exporter's requests: the operator's collector, not the egress guard's business.
        let client = reqwest::Client::builder().timeout(o.timeout).build().map_err(|e| e.to_string())?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(o.endpoint.clone())
            .with_protocol(match o.protocol {
                OtlpProtocol::Protobuf => Protocol::HttpBinary,
                OtlpProtocol::Json => Protocol::HttpJson,
            })
            .with_timeout(o.timeout)
            .with_headers(o.headers.iter().cloned().collect())
            .build()
            .map_err(|e| e.to_string())?;
        let batches = BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
        let resource = Resource::builder_empty()
            .with_attributes(o.resource.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())))
            .with_service_name(o.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder().with_span_processor(batches).with_resource(resource).build();
        let tracer = provider
            .tracer_with_scope(InstrumentationScope::builder(SCOPE).with_version(env!("CARGO_PKG_VERSION")).build());
        let routed = Arc::new(BoxedTracer::new(Box::new(tracer.clone())));
        Ok(Traces(Some(Arc::new(Exporter { provider, tracer, routed, offset_ms, shut: AtomicBool::new(false) }))))
    }

    /// Whether spans are exported.
    pub fn enabled(&self) -> bool {
        self.0.is_some()
    }

    /// The parent context of the span of a request to `path`: the caller's `traceparent` when
    /// valid (else a new trace), carrying this application's tracer for the spans under it. None
    /// when off, and for the probes of load balancers and scrapers (`/healthz`, `/readyz`,
    /// `/metrics`) that bring no `traceparent`: a trace every few seconds that says nothing.
    pub fn request_parent(&self, path: &str, headers: &HeaderMap) -> Option<Context> {
        let e = self.0.as_ref()?;
        if matches!(path, "/healthz" | "/readyz" | "/metrics") && !headers.contains_key("traceparent") {
            return None;
        }
        let cx = PROPAGATOR.extract(&HeaderExtractor(headers));
        Some(cx.with_value(AppTracer(e.routed.clone())))
    }

    /// The `traceparent` of the current `tracing` span (a request's, where a job is made), to
    /// store with the job. None when off or outside a traced request.
    pub fn current_traceparent(&self) -> Option<String> {
        self.0.as_ref()?;
        traceparent(&tracing::Span::current().context())
    }

    /// Where the spans of a job's work go: under `traceparent`, the context stored with the job.
    /// None when off, or the job has none.
    pub fn job(&self, traceparent: Option<&str>) -> Option<Stage> {
        let e = self.0.as_ref()?;
        let carrier = HashMap::from([("traceparent".to_string(), traceparent?.to_string())]);
        let cx = PROPAGATOR.extract(&carrier);
        cx.span().span_context().is_valid().then(|| Stage { exporter: e.clone(), cx })
    }

    /// Send the spans ended so far (tests).
    pub async fn flush(&self) {
        let Some(e) = &self.0 else { return };
        let provider = e.provider.clone();
        // The flush waits for the batch task, which runs on this runtime: wait off it.
        let _ = tokio::task::spawn_blocking(move || provider.force_flush()).await;
    }

    /// Send what is left and stop (the application's last step), waiting at most 5 s.
    pub async fn shutdown(&self) {
        let Some(e) = &self.0 else { return };
        if e.shut.swap(true, Ordering::SeqCst) {
            return;
        }
        let provider = e.provider.clone();
        match tokio::time::timeout(SHUTDOWN_WAIT, tokio::task::spawn_blocking(move || provider.shutdown())).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(err))) => tracing::warn!(error = %err, "sending the last spans failed"),
            Ok(Err(err)) => tracing::warn!(error = %err, "sending the last spans failed"),
            Err(_) => tracing::warn!("the last spans were not sent within {} s", SHUTDOWN_WAIT.as_secs()),
        }
    }
}

/// Make `span`, a request's `tracing` span not yet entered, this application's server span
/// under `parent` ([`Traces::request_parent`]), with the HTTP attributes known before the
/// handler runs.
pub fn server_span(span: &tracing::Span, parent: Context, method: &str, route: Option<&str>, path: &str) {
    span.record("otel.name", route.map_or_else(|| method.to_string(), |r| format!("{method} {r}")));
    span.record("otel.kind", "server");
    let _ = span.set_parent(parent);
    span.set_attribute("http.request.method", method.to_string());
    if let Some(r) = route {
        span.set_attribute("http.route", r.to_string());
    }
    span.set_attribute("url.path", path.to_string());
}

/// Record the answer's status on the server span `span` and return its `traceparent` in the
/// answer's headers.
pub fn answered(span: &tracing::Span, status: u16, headers: &mut HeaderMap) {
    span.set_attribute("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.set_status(Status::error(""));
    }
    let cx = span.context();
    if cx.span().span_context().is_valid() {
        PROPAGATOR.inject_context(&cx, &mut HeaderInjector(headers));
    }
}

/// The `traceparent` of the span of `cx`, when it has a valid one.
fn traceparent(cx: &Context) -> Option<String> {
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    PROPAGATOR.inject_context(cx, &mut carrier);
    carrier.remove("traceparent")
}

/// A place in a trace where the spans of background work go, recorded with explicit times.
/// Cheap to clone.
#[derive(Clone)]
pub struct Stage {
    exporter: Arc<Exporter>,
    /// The parent of the spans recorded here (for an opened span, the span itself).
    cx: Context,
}

impl Stage {
    fn builder(&self, name: &'static str, start: SystemTime, attributes: Vec<KeyValue>) -> SpanBuilder {
        self.exporter.tracer.span_builder(name).with_start_time(start).with_attributes(attributes)
    }

    /// Record the span `name` under this one, from `start` to `end`.
    pub fn span(&self, name: &'static str, start: SystemTime, end: SystemTime, attributes: Vec<KeyValue>) {
        let mut s = self.builder(name, start, attributes).start_with_context(&self.exporter.tracer, &self.cx);
        s.end_with_timestamp(end.max(start));
    }

    /// Record the client span `name` (an outbound request) under this one.
    pub fn client_span(
        &self,
        name: &'static str,
        start: SystemTime,
        end: SystemTime,
        attributes: Vec<KeyValue>,
        ok: bool,
    ) {
        let mut s = self
            .builder(name, start, attributes)
            .with_kind(SpanKind::Client)
            .start_with_context(&self.exporter.tracer, &self.cx);
        if !ok {
            s.set_status(Status::error(""));
        }
        s.end_with_timestamp(end.max(start));
    }

    /// Open the span `name` under this one from `start`: what is recorded on the stage it returns
    /// goes under it. It ends with [`Stage::end`], or when the last clone is dropped.
    pub fn open(&self, name: &'static str, start: SystemTime, attributes: Vec<KeyValue>) -> Stage {
        let s = self.builder(name, start, attributes).start_with_context(&self.exporter.tracer, &self.cx);
        Stage { exporter: self.exporter.clone(), cx: self.cx.with_span(s) }
    }

    /// Add an attribute to this stage's own span.
    pub fn set(&self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute);
    }

    /// Mark this stage's own span failed.
    pub fn fail(&self, why: &str) {
        self.cx.span().set_status(Status::error(why.to_string()));
    }

    /// End this stage's own span at `at`.
    pub fn end(&self, at: SystemTime) {
        self.cx.span().end_with_timestamp(at);
    }

    /// `ms`, a time of the service's clock (ms since the epoch), on the system clock spans use.
    pub fn at_ms(&self, ms: i64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(u64::try_from(ms - self.exporter.offset_ms).unwrap_or(0))
    }
}

/// The tracer of an application, in the parent context of its requests' spans.
struct AppTracer(Arc<BoxedTracer>);

/// The bridge layer's tracer: each span is made by the tracer of the application whose request
/// it belongs to ([`AppTracer`] in its parent context), or by the no-op tracer (nothing recorded).
#[derive(Debug, Clone, Copy)]
pub struct Routed;

impl opentelemetry::trace::Tracer for Routed {
    type Span = BoxedSpan;

    fn build_with_context(&self, builder: SpanBuilder, parent_cx: &Context) -> BoxedSpan {
        static NOOP: LazyLock<BoxedTracer> = LazyLock::new(|| BoxedTracer::new(Box::new(NoopTracer::new())));
        match parent_cx.get::<AppTracer>() {
            Some(app) => app.0.build_with_context(builder, parent_cx),
            None => NOOP.build_with_context(builder, parent_cx),
        }
    }
}

/// The layer that makes `tracing` spans (a request's) OpenTelemetry spans, with the log lines of
/// `info` and above inside them as their events. Install it once per process, and only when
/// some application of it exports (the CLI: when `OTEL_EXPORTER_OTLP_ENDPOINT` is set); an
/// application exporting without it still records its jobs' work, but not its requests.
pub fn layer<S>() -> impl tracing_subscriber::Layer<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    use tracing_subscriber::Layer as _;
    // Its own filter, not the log lines': traces do not depend on `CAPTURE_LOG`. The exporter's
    // own lines never become events of the spans it sends.
    let filter = Targets::new()
        .with_default(LevelFilter::INFO)
        .with_target("sqlx", LevelFilter::WARN)
        .with_target("opentelemetry", LevelFilter::OFF)
        .with_target("opentelemetry_sdk", LevelFilter::OFF)
        .with_target("opentelemetry-otlp", LevelFilter::OFF)
        .with_target("opentelemetry-http", LevelFilter::OFF);
    tracing_opentelemetry::layer()
        .with_tracer(Routed)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(filter)
}

/// Whether the process's subscriber has the bridge [`layer`] (a request span can take a parent).
pub fn bridged() -> bool {
    let probe = tracing::info_span!("capture.trace_probe");
    probe.set_parent(Context::new()).is_ok()
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn a_span_of_no_application_is_not_recorded_and_the_probe_sees_the_layer() {
        assert!(!bridged(), "no layer in this thread's subscriber");
        let sub = tracing_subscriber::registry().with(layer());
        tracing::subscriber::with_default(sub, || {
            assert!(bridged());
            let span = tracing::info_span!("request");
            // No application's tracer in its parent: the no-op tracer made it.
            assert!(!span.context().span().is_recording());
        });
    }

    #[test]
    fn a_stored_traceparent_reads_back_and_a_bad_one_is_none() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let cx = PROPAGATOR.extract(&HashMap::from([("traceparent".to_string(), tp.to_string())]));
        assert_eq!(traceparent(&cx).as_deref(), Some(tp));
        let bad = PROPAGATOR.extract(&HashMap::from([("traceparent".to_string(), "00-zz-01".to_string())]));
        assert_eq!(traceparent(&bad), None);
        assert!(Traces::default().job(Some(tp)).is_none(), "off: nothing");
    }
}
