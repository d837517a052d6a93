//! The `webhook` queue: each task is one delivery attempt, made by
//! [`webhooks::delivery::deliver`](crate::webhooks::delivery::deliver).

use std::time::Duration;

use capture_core::ids;
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::state::AppState;
use crate::webhooks::delivery::deliver;
/// Webhook deliveries: four workers on scheduler and worker nodes.
pub const WORKERS: super::Kind =
    super::Kind { name: "webhook", runs_on: super::RunsOn::Background, start: |s| Box::pin(run(s.state, 4, s.stop)) };

/// Run `n` delivery loops until `stop`.
pub async fn run(state: AppState, n: usize, stop: CancellationToken) {
    let client = crate::egress::client(state.egress.clone(), state.cfg.webhooks.timeout);
    let node = ids::random_string(8);
    let mut handles = Vec::new();
    for i in 0..n {
        let (state, client, stop) = (state.clone(), client.clone(), stop.clone());
        let worker = format!("wh-{node}-{i}");
        handles.push(tokio::spawn(async move {
            let lease = (state.cfg.webhooks.timeout + Duration::from_secs(30)).as_millis() as i64;
            claim_loop(
                &state,
                "webhook",
                &worker,
                lease,
                None,
                state.wake.of(crate::queues::Queue::Webhook),
                &stop,
                |task| {
                    // One change can queue several deliveries under a single wake-up (PostgreSQL
                    // folds identical notifications of a transaction): pass it on so an idle
                    // sibling looks for the next one meanwhile.
                    state.wake.queued(crate::queues::Queue::Webhook);
                    deliver(&state, &client, &worker, task)
                },
            )
            .await
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}
