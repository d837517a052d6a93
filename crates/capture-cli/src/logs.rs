//! Log lines of `capture serve`, `migrate` and `admin` on stderr: `CAPTURE_LOG` picks the
//! lines (an `EnvFilter`), `CAPTURE_LOG_FORMAT` their shape (text or one JSON object per line).
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the same subscriber also has the trace layer that
//! makes the requests' spans OpenTelemetry spans (`capture_server::traces`); unset, it has none.

use std::io::IsTerminal;

use capture_server::config::{LogFormat, TraceSettings};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The filter when `CAPTURE_LOG` is unset or unreadable.
const DEFAULT_FILTER: &str = "info,sqlx=warn";

/// Install the process's log subscriber (once; later calls do nothing).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("CAPTURE_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colour codes only for a person at a terminal: a file, a pipe or a journal would keep
    // them as `\x1b[…m` noise. NO_COLOR (no-color.org) turns them off there too.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    // A bad OTEL_* value stops start-up when the settings are read; here it only means no layer.
    let traced = TraceSettings::from_env().is_ok_and(|t| t.otlp.is_some());
    let _ = subscriber(format, ansi, filter, std::io::stderr, traced).try_init();
}

/// The subscriber for `format`, writing to `writer`; with the trace layer when `traced`.
fn subscriber<W>(
    format: LogFormat,
    ansi: bool,
    filter: EnvFilter,
    writer: W,
    traced: bool,
) -> Box<dyn tracing::Subscriber + Send + Sync + 'static>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let fmt = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(ansi);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => Box::new(fmt.with_filter(filter)),
        // `message` and the event's fields at the top level (what collectors index), the
        // innermost span's fields under `span`, and every enclosing span (the request with
        // its id, whatever span a handler opens inside it) under `spans`.
        LogFormat::Json => {
            Box::new(fmt.json().flatten_event(true).with_current_span(true).with_span_list(true).with_filter(filter))
        }
    };
    // Each layer has its own filter: the log lines' (`CAPTURE_LOG`) does not decide what is traced.
    let registry = tracing_subscriber::registry().with(lines);
    match traced {
        true => Box::new(registry.with(capture_server::traces::layer())),
        false => Box::new(registry),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn capture(format: LogFormat, ansi: bool) -> String {
        let buf = Buf::default();
        let out = buf.clone();
        let sub = subscriber(format, ansi, EnvFilter::new("info"), move || out.clone(), false);
        tracing::subscriber::with_default(sub, || {
            let span = tracing::info_span!("request", request_id = "req_abc123", method = "GET");
            let _in = span.enter();
            tracing::info!(status = 202, "job accepted");
            tracing::debug!("filtered out");
        });
        String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn json_lines_carry_the_event_and_its_span() {
        let text = capture(LogFormat::Json, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert!(v["timestamp"].as_str().is_some_and(|t| t.contains('T')), "{v}");
        assert_eq!(v["level"], "INFO");
        assert_eq!(v["target"], module_path!());
        assert_eq!(v["message"], "job accepted");
        assert_eq!(v["status"], 202);
        assert_eq!(v["span"]["name"], "request");
        assert_eq!(v["span"]["request_id"], "req_abc123");
    }

    #[test]
    fn the_trace_layer_is_there_only_when_traced_and_the_lines_are_the_same() {
        for traced in [false, true] {
            let buf = Buf::default();
            let out = buf.clone();
            let sub = subscriber(LogFormat::Text, false, EnvFilter::new("info"), move || out.clone(), traced);
            tracing::subscriber::with_default(sub, || {
                assert_eq!(capture_server::traces::bridged(), traced);
                let span = tracing::info_span!("request", request_id = "req_abc123");
                let _in = span.enter();
                tracing::warn!("slow");
                tracing::debug!("filtered out of the lines");
            });
            let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(text.contains("slow") && text.contains("req_abc123"), "{text}");
        }
    }

    #[test]
    fn text_without_a_terminal_has_no_colour_codes() {
        let plain = capture(LogFormat::Text, false);
        assert!(plain.contains("job accepted") && plain.contains("req_abc123"), "{plain}");
        assert!(!plain.contains("\x1b["), "{plain:?}");
        // The switch does something: with colour on, the same line has escape codes.
        assert!(capture(LogFormat::Text, true).contains("\x1b["));
    }
}
