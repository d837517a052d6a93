//! The bounded queue of what the relay sends a client: bounded in bytes, so a client that
//! stops reading is closed ([`CLOSE_TOO_SLOW`]) rather than buffered for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

/// Bytes of messages that may wait for one client before it counts as fallen behind and is
/// closed (the default of [`RelayOptions::max_queued_bytes`]).
pub const MAX_QUEUED_BYTES: usize = 16 << 20;

/// The WebSocket close code a client that fell behind gets (1008, policy violation).
pub const CLOSE_TOO_SLOW: u16 = 1008;

/// The counters a client's queue shares between the relay and the socket's writer.
#[derive(Debug, Default)]
struct QueueState {
    /// Bytes queued or being written.
    queued: AtomicUsize,
    /// Set (to the bytes queued) when a message did not fit.
    overflowed: AtomicUsize,
}

/// The relay's end of a client's outgoing queue, bounded in bytes: see [`client_queue`].
#[derive(Debug)]
pub struct ClientTx {
    tx: mpsc::UnboundedSender<String>,
    state: Arc<QueueState>,
    max: usize,
}

impl ClientTx {
    /// Queue a message; false if the client is gone or has fallen behind (the queue is
    /// then left alone: the relay ends).
    pub(super) fn push(&self, msg: String) -> bool {
        let len = msg.len();
        let before = self.state.queued.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before + len > self.max {
            self.state.queued.fetch_sub(len, Ordering::AcqRel);
            self.state.overflowed.store(before.max(1), Ordering::Release);
            return false;
        }
        self.tx.send(msg).is_ok()
    }

    /// Bytes waiting when the queue overflowed.
    pub(super) fn overflowed(&self) -> Option<usize> {
        Some(self.state.overflowed.load(Ordering::Acquire)).filter(|q| *q > 0)
    }
}

/// The writer's end of a client's outgoing queue.
#[derive(Debug)]
pub struct ClientRx {
    rx: mpsc::UnboundedReceiver<String>,
    state: Arc<QueueState>,
}

impl ClientRx {
    /// The next message for the client (None: the relay ended). Call [`written`](Self::written)
    /// once it is on the socket.
    pub async fn recv(&mut self) -> Option<String> {
        self.rx.recv().await
    }

    /// A message of `len` bytes has been written: it no longer counts against the bound.
    pub fn written(&self, len: usize) {
        self.state.queued.fetch_sub(len, Ordering::AcqRel);
    }

    /// Bytes queued or being written.
    pub fn queued(&self) -> usize {
        self.state.queued.load(Ordering::Acquire)
    }
}

/// A client's outgoing queue holding at most `max_bytes` (beyond one message in flight).
pub fn client_queue(max_bytes: usize) -> (ClientTx, ClientRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    let state = Arc::new(QueueState::default());
    (ClientTx { tx, state: state.clone(), max: max_bytes.max(1) }, ClientRx { rx, state })
}
