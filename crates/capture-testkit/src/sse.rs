//! Reading an event stream (SSE) to its end: the one reader every stream's tests use (jobs,
//! ads, audits, runs), from any node.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

/// Read the event stream at `url` (GET with bearer `key`) to its end, within `limit`:
/// `(event name, data)`; comments come back as `("ping", "")`, unnamed data as `"message"`.
pub async fn read_sse(client: &reqwest::Client, url: &str, key: &str, limit: Duration) -> Vec<(String, String)> {
    let r = client.get(url).bearer_auth(key).send().await.unwrap();
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

/// The named events of a stream read by [`read_sse`], their data as JSON (`null` when it is
/// not); heartbeats and unnamed blocks are left out.
pub fn json_events(frames: Vec<(String, String)>) -> Vec<(String, Value)> {
    frames
        .into_iter()
        .filter(|(name, _)| name != "ping" && name != "message")
        .map(|(name, data)| (name, serde_json::from_str(&data).unwrap_or(Value::Null)))
        .collect()
}
