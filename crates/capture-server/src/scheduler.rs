//! The scheduler role: periodic housekeeping (expired idempotency records). Webhook
//! retries and campaign sending join it later.

use std::time::Duration;

use capture_core::time::now_ms;
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Run housekeeping every few minutes until `stop`.
pub async fn run(state: AppState, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        match state.store.idem_purge(now_ms() - 24 * 3600 * 1000).await {
            Ok(n) if n > 0 => tracing::info!(purged = n, "expired idempotency records removed"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "idempotency purge failed"),
        }
        if let Err(e) = state.store.purge_oauth_state(now_ms()).await {
            tracing::warn!(error = %e, "purging expired OAuth codes and tokens failed");
        }
        if let Err(e) = state.store.purge_web_state(now_ms(), now_ms() - 24 * 3600 * 1000).await {
            tracing::warn!(error = %e, "purging expired sessions failed");
        }
    }
}
