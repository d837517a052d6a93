//! Serving a relay to a client over a WebSocket (or any message sink and stream): reading
//! its messages, and writing the queue's out until the relay closes it.

use tokio::sync::mpsc;

use super::queue::{CLOSE_TOO_SLOW, ClientRx, client_queue};
use super::{CLOSE_GRACE, RelayEnd, RelayOptions, run};
use crate::session::Session;

/// The relay over a plain WebSocket on `stream` (the test hook, and what a server without
/// its own WebSocket stack can use): accept the handshake, then [`serve_socket`].
pub async fn serve_websocket(
    session: &Session,
    stream: tokio::net::TcpStream,
    opts: RelayOptions,
) -> Result<RelayEnd, String> {
    let ws = tokio_tungstenite::accept_async(stream).await.map_err(|e| format!("WebSocket handshake failed: {e}"))?;
    Ok(serve_socket(session, ws, opts).await)
}

/// Aborts a task when dropped (the socket's reader, when the relay's future is dropped).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Relay a client's WebSocket (after its handshake) until either side ends, then close it:
/// a normal close, or [`CLOSE_TOO_SLOW`] with its reason for a client that fell behind
/// (what was queued for it is dropped first). Dropping this future (the run's timeout,
/// a stop) closes the socket normally too.
pub async fn serve_socket<S>(
    session: &Session,
    ws: tokio_tungstenite::WebSocketStream<S>,
    opts: RelayOptions,
) -> RelayEnd
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let (sink, mut source) = ws.split();
    let (in_tx, in_rx) = mpsc::channel::<String>(256);
    let _reader = AbortOnDrop(tokio::spawn(async move {
        while let Some(msg) = source.next().await {
            let text = match msg {
                Ok(Message::Text(t)) => t.to_string(),
                Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            if in_tx.send(text).await.is_err() {
                break;
            }
        }
    }));
    let (to_client, out) = client_queue(opts.max_queued_bytes);
    let (close_tx, close_rx) = tokio::sync::oneshot::channel();
    // Not awaited: a client that fell behind may take up to CLOSE_GRACE to see its close.
    tokio::spawn(write_loop(sink, out, close_rx));
    let end = run(session, in_rx, to_client, opts).await;
    if let Some(reason) = end.close_reason() {
        tracing::info!(target: "capture_browser::relay", ?end, "closing a client that fell behind");
        let _ = close_tx.send(Some((CLOSE_TOO_SLOW, reason)));
    } else {
        let _ = close_tx.send(None);
    }
    end
}

/// Write the relay's messages to the client's socket; then close it with `close`'s frame
/// (a normal close when its sender is dropped or sends None). A close that arrives while
/// the client is not reading drops what is still queued at once.
async fn write_loop<S>(mut sink: S, mut out: ClientRx, close: tokio::sync::oneshot::Receiver<Option<(u16, String)>>)
where
    S: futures_util::Sink<tokio_tungstenite::tungstenite::Message> + Unpin,
{
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;

    tokio::pin!(close);
    let frame = loop {
        let msg = tokio::select! {
            biased;
            c = &mut close => break c.ok().flatten(),
            m = out.recv() => m,
        };
        let Some(text) = msg else { break (&mut close).await.ok().flatten() };
        let len = text.len();
        tokio::select! {
            biased;
            c = &mut close => break c.ok().flatten(),
            r = sink.send(Message::Text(text.into())) => if r.is_err() { return },
        }
        out.written(len);
    };
    // What the client did not read is freed now, not when its socket finally closes.
    drop(out);
    let frame = frame.map(|(code, reason)| CloseFrame { code: code.into(), reason: reason.into() });
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        let _ = sink.send(Message::Close(frame)).await;
        let _ = sink.close().await;
    })
    .await;
}
