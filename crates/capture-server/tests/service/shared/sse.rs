//! Reading a job's event stream (SSE) to its end, from any node.

use std::time::Duration;

use futures_util::StreamExt;

/// Read the event stream of job `id` at `base` to its end: `(event name, data)`; comments
/// come back as `("ping", "")`.
pub async fn read_sse_at(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    id: &str,
    limit: Duration,
) -> Vec<(String, String)> {
    let r = client.get(format!("{base}/v1/screenshot/{id}/stream")).bearer_auth(key).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let chunk = tokio::time::timeout_at(deadline, stream.next()).await.expect("stream did not end in time");
        let Some(chunk) = chunk else { break };
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(pos) = buf.find("\n\n") {
            let block: String = buf.drain(..pos + 2).collect();
            let (mut name, mut data) = (String::from("message"), String::new());
            for line in block.lines() {
                if let Some(c) = line.strip_prefix(':') {
                    if c.trim() == "ping" {
                        name = "ping".into();
                    }
                } else if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            out.push((name, data));
        }
    }
    out
}
