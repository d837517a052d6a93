//! One delivery attempt: signed afresh (`Webhook-Signature`), sent through the egress-guarded
//! client, its outcome recorded with the retry schedule.

use std::time::{Duration, Instant, SystemTime};

use capture_store::{AttemptOutcome, Delivery, MAX_ATTEMPTS, Task};
use opentelemetry::KeyValue;

use crate::state::AppState;

/// `t=<ts>,v1=<hex HMAC-SHA256(secret, "<ts>.<body>")>`; the key is the whole secret string.
pub fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let v1 = crate::crypto::hmac_sha256_hex(secret.as_bytes(), format!("{timestamp}.{body}").as_bytes());
    format!("t={timestamp},v1={v1}")
}

fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("no response within {} s", timeout.as_secs_f64());
    }
    // The most specific cause (e.g. the egress guard's reason) is the last in the chain.
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg = s.to_string();
        src = s.source();
    }
    if e.is_connect() { format!("connection failed: {msg}") } else { msg }
}

/// Deliver the queued delivery of `task` once and record the attempt (fenced on the lease).
pub async fn deliver(state: &AppState, client: &reqwest::Client, worker: &str, task: Task) {
    let job = match state.store.delivery_job(&task.subject_id).await {
        Ok(Some(j)) => j,
        Ok(None) => {
            tracing::warn!(delivery = %task.subject_id, "delivery vanished");
            let _ = state.store.cancel_delivery(&task.id, worker, &task.subject_id, state.clock.now_ms()).await;
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "loading a delivery failed; its lease will expire");
            return;
        }
    };
    if job.endpoint_deleted || job.delivery.status != "pending" {
        let _ = state.store.cancel_delivery(&task.id, worker, &job.delivery.id, state.clock.now_ms()).await;
        return;
    }
    let Some(secret) = state.master.decrypt(&job.secret_enc) else {
        tracing::error!(endpoint = %job.delivery.endpoint_id, "endpoint secret cannot be decrypted (wrong CAPTURE_MASTER_KEY?)");
        return;
    };
    let trace = job_trace(state, &job.delivery.event_type, &job.payload).await;
    let from = SystemTime::now();
    let outcome = send_once(state, client, &job.url, &job.delivery, &job.payload, &secret).await;
    let attempts_after = job.delivery.attempts + 1;
    if let Some(t) = trace {
        let mut attrs = vec![
            KeyValue::new("http.request.method", "POST"),
            KeyValue::new("capture.webhook.event", job.delivery.event_type.clone()),
            KeyValue::new("capture.webhook.endpoint", job.delivery.endpoint_id.clone()),
            KeyValue::new("capture.webhook.attempt", attempts_after),
        ];
        if let Some(code) = outcome.status_code {
            attrs.push(KeyValue::new("http.response.status_code", code));
        }
        if let Some(e) = &outcome.error {
            attrs.push(KeyValue::new("error.type", e.clone()));
        }
        t.client_span("webhook.delivery", from, SystemTime::now(), attrs, outcome.succeeded);
    }
    let now = state.clock.now_ms();
    let retry_at = (!outcome.succeeded && attempts_after < MAX_ATTEMPTS).then(|| {
        let delays = &state.cfg.webhooks.retry_delays;
        let wait = delays[((attempts_after - 1) as usize).min(delays.len() - 1)];
        now + wait.as_millis() as i64
    });
    match state.store.record_attempt(&task.id, worker, &job.delivery.id, &outcome, retry_at, now).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(delivery = %job.delivery.id, "lease lost before recording an attempt"),
        Err(e) => tracing::error!(error = %e, "recording an attempt failed"),
    }
}

/// Where the span of a delivery goes, when the service is traced: under the request that made
/// the capture job it is about (a `screenshot.*` event names its job).
async fn job_trace(state: &AppState, event_type: &str, payload: &str) -> Option<crate::traces::Stage> {
    if !state.traces.enabled() || !event_type.starts_with("screenshot.") {
        return None;
    }
    let body: serde_json::Value = serde_json::from_str(payload).ok()?;
    let job_id = body["data"]["screenshotId"].as_str()?;
    let job = state.store.screenshot(job_id).await.ok()??;
    state.traces.job(job.traceparent.as_deref())
}

/// One signed attempt. Public for the benchmark and tests of the signing path.
pub async fn send_once(
    state: &AppState,
    client: &reqwest::Client,
    url: &str,
    d: &Delivery,
    payload: &str,
    secret: &str,
) -> AttemptOutcome {
    let started = Instant::now();
    let timeout = state.cfg.webhooks.timeout;
    // A literal address never reaches the resolver: check it here.
    if let Ok(u) = url::Url::parse(url)
        && let Err(refusal) = crate::egress::check_url(&u, &state.egress)
    {
        return AttemptOutcome {
            status_code: None,
            error: Some(refusal.to_string()),
            duration_ms: 0,
            succeeded: false,
        };
    }
    let ts = capture_core::time::now_ms() / 1000;
    let res = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &d.id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature(secret, ts, payload))
        .header("x-service-event", &d.event_type)
        .body(payload.to_string())
        .send()
        .await;
    let duration_ms = started.elapsed().as_millis() as i64;
    match res {
        Ok(r) => {
            let code = r.status().as_u16();
            let ok = r.status().is_success();
            AttemptOutcome {
                status_code: Some(i64::from(code)),
                error: (!ok).then(|| format!("endpoint answered HTTP {code}")),
                duration_ms,
                succeeded: ok,
            }
        }
        Err(e) => {
            AttemptOutcome { status_code: None, error: Some(describe(&e, timeout)), duration_ms, succeeded: false }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_documented_algorithm() {
        // HMAC-SHA256("whsec_test", "1700000000.{}"), computed independently with openssl.
        let s = signature("whsec_test", 1_700_000_000, "{}");
        assert_eq!(s, "t=1700000000,v1=35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91");
    }
}
