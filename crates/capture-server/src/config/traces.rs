//! Where traces go: the standard OpenTelemetry variables (`OTEL_*`, read from the environment
//! only, never from the TOML file), for OTLP over HTTP. Without an endpoint nothing is traced
//! (see `crate::traces`).

use std::time::Duration;

use super::parse::{ConfigError, Reader, err};

/// How spans are sent (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// `http/protobuf` (the default).
    Protobuf,
    /// `http/json`.
    Json,
}

/// The OTLP/HTTP exporter of traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The URL spans are POSTed to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` added.
    pub endpoint: String,
    /// `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`.
    pub protocol: OtlpProtocol,
    /// `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`: `key=value` pairs (values percent-decoded).
    pub headers: Vec<(String, String)>,
    /// `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` (milliseconds, default 10000).
    pub timeout: Duration,
    /// `OTEL_SERVICE_NAME`, else `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `capture`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`: more attributes of every span's resource.
    pub resource: Vec<(String, String)>,
}

/// Traces: off, or exported over OTLP/HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceSettings {
    /// None: nothing is traced (no endpoint, `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`).
    pub otlp: Option<OtlpSettings>,
}

impl TraceSettings {
    pub(super) fn read(r: &Reader) -> Result<TraceSettings, ConfigError> {
        // Either the signal's own variable or the general one, as the specification says.
        let either = |signal: &str, general: &str| match r.get(signal) {
            Some(v) => Some((signal.to_string(), v)),
            None => r.get(general).map(|v| (general.to_string(), v)),
        };
        if let Some(v) = r.get("OTEL_SDK_DISABLED")
            && super::parse::parse_bool("OTEL_SDK_DISABLED", &v)?
        {
            return Ok(TraceSettings::default());
        }
        match r.get("OTEL_TRACES_EXPORTER").map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("otlp") => {}
            Some("none") => return Ok(TraceSettings::default()),
            Some(v) => return Err(err("OTEL_TRACES_EXPORTER", format!("'{v}' is not otlp or none"))),
        }
        let endpoint = match r.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => http_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &url)?,
            None => match r.get("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(base) => {
                    let base = http_url("OTEL_EXPORTER_OTLP_ENDPOINT", &base)?;
                    format!("{}/v1/traces", base.trim_end_matches('/'))
                }
                None => return Ok(TraceSettings::default()),
            },
        };
        let protocol = match either("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") {
            None => OtlpProtocol::Protobuf,
            Some((var, v)) => match v.to_ascii_lowercase().as_str() {
                "http/protobuf" => OtlpProtocol::Protobuf,
                "http/json" => OtlpProtocol::Json,
                "grpc" => {
                    return Err(err(
                        &var,
                        "grpc is not supported: use http/protobuf (a collector's OTLP/HTTP port, 4318)",
                    ));
                }
                _ => return Err(err(&var, format!("'{v}' is not http/protobuf or http/json"))),
            },
        };
        let headers = match either("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS") {
            None => Vec::new(),
            Some((var, v)) => {
                let pairs = pairs(&var, &v)?;
                for (k, v) in &pairs {
                    let name_ok = axum::http::HeaderName::from_bytes(k.as_bytes()).is_ok();
                    if !name_ok || axum::http::HeaderValue::from_str(v).is_err() {
                        return Err(err(&var, format!("'{k}' is not a valid header")));
                    }
                }
                pairs
            }
        };
        let timeout = match either("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT") {
            None => Duration::from_secs(10),
            Some((var, v)) => match v.parse::<u64>() {
                Ok(ms) if (1..=600_000).contains(&ms) => Duration::from_millis(ms),
                _ => return Err(err(&var, format!("'{v}' is not a number of milliseconds from 1 to 600000"))),
            },
        };
        let mut resource = match r.get("OTEL_RESOURCE_ATTRIBUTES") {
            Some(v) => pairs("OTEL_RESOURCE_ATTRIBUTES", &v)?,
            None => Vec::new(),
        };
        // The specification's order: OTEL_SERVICE_NAME over the resource's `service.name`.
        let from_resource = resource.iter().position(|(k, _)| k == "service.name").map(|i| resource.remove(i).1);
        let service_name = r.get("OTEL_SERVICE_NAME").or(from_resource).unwrap_or_else(|| "capture".into());
        Ok(TraceSettings { otlp: Some(OtlpSettings { endpoint, protocol, headers, timeout, service_name, resource }) })
    }

    /// The settings from the process's environment alone (what `Config::load` reads for them):
    /// the CLI decides with it whether to install the trace layer before the rest is read.
    pub fn from_env() -> Result<TraceSettings, ConfigError> {
        let m = std::env::vars().filter(|(k, _)| k.starts_with("OTEL_")).collect();
        TraceSettings::read(&Reader(&m))
    }
}

/// `url` when it is an absolute `http://` or `https://` URL.
fn http_url(var: &str, url: &str) -> Result<String, ConfigError> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(url.to_string()),
        _ => Err(err(var, format!("'{url}' is not an http:// or https:// URL"))),
    }
}

/// `k1=v1,k2=v2` (the W3C Baggage shape the OTLP variables use): keys trimmed, values
/// trimmed and percent-decoded.
fn pairs(var: &str, s: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(err(var, format!("'{item}' is not key=value")));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(err(var, format!("'{item}' has no key")));
        }
        let v = percent_decode(v.trim())
            .ok_or_else(|| err(var, format!("the value of '{k}' is not percent-encoded UTF-8")))?;
        out.push((k.to_string(), v));
    }
    Ok(out)
}

/// `%XX` escapes decoded; None when one is malformed or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<TraceSettings, ConfigError> {
        let m: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TraceSettings::read(&Reader(&m))
    }

    #[test]
    fn without_an_endpoint_nothing_is_traced() {
        assert_eq!(read(&[]).unwrap().otlp, None);
        assert_eq!(
            read(&[("OTEL_SERVICE_NAME", "x"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap().otlp,
            None
        );
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")];
        assert!(read(&on).unwrap().otlp.is_some());
        assert_eq!(read(&[on[0], ("OTEL_SDK_DISABLED", "true")]).unwrap().otlp, None);
        assert_eq!(read(&[on[0], ("OTEL_TRACES_EXPORTER", "none")]).unwrap().otlp, None);
        assert_eq!(read(&[on[0], ("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err().var, "OTEL_TRACES_EXPORTER");
    }

    #[test]
    fn the_general_endpoint_gets_the_signal_path_and_the_signal_one_is_kept_as_it_is() {
        let o = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]).unwrap().otlp.unwrap();
        assert_eq!(o.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(
            (o.protocol, o.timeout, o.service_name.as_str()),
            (OtlpProtocol::Protobuf, Duration::from_secs(10), "capture")
        );
        let o = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://otlp.example/api/traces"),
        ])
        .unwrap()
        .otlp
        .unwrap();
        assert_eq!(o.endpoint, "https://otlp.example/api/traces");
        for (k, v) in
            [("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x")]
        {
            assert_eq!(read(&[(k, v)]).unwrap_err().var, k);
        }
    }

    #[test]
    fn protocol_headers_timeout_and_service_name() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let o = read(&[
            base,
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0k, x-team = a%2Cb"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-resource,deployment.environment=prod"),
        ])
        .unwrap()
        .otlp
        .unwrap();
        assert_eq!(o.protocol, OtlpProtocol::Json);
        assert_eq!(o.headers, [("authorization".into(), "Bearer t0k".into()), ("x-team".into(), "a,b".into())]);
        assert_eq!(o.timeout, Duration::from_millis(2500));
        assert_eq!(o.service_name, "from-resource");
        assert_eq!(o.resource, [("deployment.environment".to_string(), "prod".to_string())]);
        let o = read(&[base, ("OTEL_SERVICE_NAME", "shots"), ("OTEL_RESOURCE_ATTRIBUTES", "service.name=x")]);
        assert_eq!(o.unwrap().otlp.unwrap().service_name, "shots");
        for (k, v) in [
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "bad header=1"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "k=%zz"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"),
        ] {
            assert_eq!(read(&[base, (k, v)]).unwrap_err().var, k, "{k}={v}");
        }
    }
}
