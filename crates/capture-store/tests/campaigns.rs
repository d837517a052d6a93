//! Store tests of audit campaigns, each on SQLite and on PostgreSQL: rows stored once, bounds
//! and closed campaigns, the outbox fence, caps exact under concurrent reservations,
//! suppressions skipping open rows, and interrupted sends never re-sent.
//!
//! The harness (both backends, a database per test dropped after) is `common`.

#[macro_use]
mod common;

use std::sync::Arc;

use capture_core::ids::{USER, new_id, random_string};
use capture_core::{CampaignStatus, TargetState};
use capture_store::{
    NewCampaign, NewTarget, Reservation, Reserved, Store, SuppressionReason, SuppressionSource, Unsuppressed, User,
};

const T0: i64 = 1_800_000_000_000;
const DAY: &str = "2027-01-15";

async fn user(store: &Store) -> User {
    let u = User {
        id: new_id(USER),
        email: format!("{}@example.com", random_string(8).to_lowercase()),
        plan: "free".into(),
        legacy_free: false,
        password_hash: None,
        created_at: T0,
    };
    store.create_user(&u).await.unwrap();
    u
}

fn target(email: &str, site: &str) -> NewTarget {
    NewTarget {
        id: new_id("cmr"),
        website_url: site.into(),
        recipient_email: email.into(),
        email_key: email.to_ascii_lowercase(),
        recipient_domain: email.rsplit_once('@').unwrap().1.to_ascii_lowercase(),
        report_type: "single_page".into(),
        unsubscribe_token: random_string(32),
    }
}

async fn campaign(store: &Store, u: &User, rows: &[NewTarget]) -> String {
    let c = NewCampaign {
        id: new_id("cmp"),
        user_id: u.id.clone(),
        key_id: None,
        name: "test".into(),
        send_at: T0,
        timezone: "UTC".into(),
        report_type: "single_page".into(),
        send_hours: "anytime".into(),
        now: T0,
    };
    let (rec, _) = store.create_campaign(&c, rows).await.unwrap();
    rec.id
}

/// Launch and make every row `ready` (as if its audit passed the gates).
async fn launch_ready(store: &Store, u: &User, id: &str) {
    store
        .transition_campaign(&u.id, id, &[CampaignStatus::Draft], CampaignStatus::Scheduled, T0)
        .await
        .unwrap()
        .unwrap();
    store.advance_campaigns(T0).await.unwrap();
    for (t, _) in store.campaign_targets(id, 1000).await.unwrap() {
        assert!(store.target_wait(&t.id, TargetState::Ready, None, T0, T0).await.unwrap());
    }
}

async fn campaign_rows_and_bounds(store: Store) {
    let u = user(&store).await;
    let id = campaign(
        &store,
        &u,
        &[
            target("a@x.example", "https://a.example"),
            target("a@x.example", "https://a.example"),
            target("b@x.example", "https://a.example"),
        ],
    )
    .await;
    assert_eq!(store.campaign_targets(&id, 100).await.unwrap().len(), 2, "duplicates are stored once");
    let added = store
        .add_campaign_targets(
            &u.id,
            &id,
            &[target("a@x.example", "https://a.example"), target("c@y.example", "https://c.example")],
            3,
            T0,
        )
        .await
        .unwrap();
    assert_eq!(added, Ok(1));
    let too_many =
        store.add_campaign_targets(&u.id, &id, &[target("d@y.example", "https://d.example")], 3, T0).await.unwrap();
    assert!(matches!(too_many, Err(capture_store::AddRefused::TooMany { existing: 3, max: 3 })), "{too_many:?}");
    assert_eq!(store.campaign_targets(&id, 100).await.unwrap().len(), 3, "a refused add writes nothing");
    let other = user(&store).await;
    assert_eq!(
        store
            .add_campaign_targets(&other.id, &id, &[target("e@y.example", "https://e.example")], 100, T0)
            .await
            .unwrap(),
        Err(capture_store::AddRefused::NotFound)
    );
    let (c, changed) = store
        .transition_campaign(&u.id, &id, &[CampaignStatus::Draft], CampaignStatus::Cancelled, T0)
        .await
        .unwrap()
        .unwrap();
    assert!(changed && c.status == CampaignStatus::Cancelled);
    assert!(store.campaign_targets(&id, 100).await.unwrap().iter().all(|(t, _)| t.state == TargetState::Skipped));
    assert_eq!(
        store.add_campaign_targets(&u.id, &id, &[target("f@y.example", "https://f.example")], 100, T0).await.unwrap(),
        Err(capture_store::AddRefused::Closed(CampaignStatus::Cancelled))
    );
    // A second launch of a launched campaign changes nothing.
    let id2 = campaign(&store, &u, &[]).await;
    assert!(
        store
            .transition_campaign(&u.id, &id2, &[CampaignStatus::Draft], CampaignStatus::Scheduled, T0)
            .await
            .unwrap()
            .unwrap()
            .1
    );
    assert!(
        !store
            .transition_campaign(&u.id, &id2, &[CampaignStatus::Draft], CampaignStatus::Scheduled, T0 + 5)
            .await
            .unwrap()
            .unwrap()
            .1
    );
}

/// Every reservation at once from many tasks: exactly the caps pass, each row at most once.
async fn campaign_caps_hold_exactly_under_concurrency(store: Store) {
    let u = user(&store).await;
    let mut rows = Vec::new();
    for i in 0..12 {
        let domain = if i % 2 == 0 { "one.example" } else { "two.example" };
        rows.push(target(&format!("r{i}@{domain}"), "https://s.example"));
    }
    let id = campaign(&store, &u, &rows).await;
    launch_ready(&store, &u, &id).await;
    let targets: Vec<String> = store.campaign_targets(&id, 100).await.unwrap().into_iter().map(|(t, _)| t.id).collect();
    // Each row is tried by two "workers" at once; sender cap 7, domain cap 3.
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for w in 0..2 {
        for t in &targets {
            let (store, t) = (store.clone(), t.clone());
            tasks.push(tokio::spawn(async move {
                let ob = new_id("obx");
                let worker = format!("w{w}");
                let r = Reservation {
                    outbox_id: &ob,
                    row_id: &t,
                    worker: &worker,
                    sender: "s@capture.example",
                    sender_cap: 7,
                    domain_cap: 3,
                    day: DAY,
                    now: T0,
                };
                (t.clone(), store.reserve_send(&r).await.unwrap())
            }));
        }
    }
    let mut yes = Vec::new();
    for t in tasks {
        let (row, r) = t.await.unwrap();
        if r == Reserved::Yes {
            yes.push(row);
        }
    }
    let unique: std::collections::HashSet<_> = yes.iter().collect();
    assert_eq!(unique.len(), yes.len(), "a row was reserved twice: {yes:?}");
    assert_eq!(yes.len(), 6, "both domain caps of 3 bind before the sender's 7");
    assert_eq!(store.send_count("sender", "s@capture.example", DAY).await.unwrap(), 6);
    assert_eq!(store.send_count("domain", "one.example", DAY).await.unwrap(), 3);
    assert_eq!(store.send_count("domain", "two.example", DAY).await.unwrap(), 3);
    // The next day the counters start again.
    let ob = new_id("obx");
    let left = targets.iter().find(|t| !yes.contains(t)).unwrap();
    let r = Reservation {
        outbox_id: &ob,
        row_id: left,
        worker: "w",
        sender: "s@capture.example",
        sender_cap: 7,
        domain_cap: 3,
        day: "2027-01-16",
        now: T0,
    };
    assert_eq!(store.reserve_send(&r).await.unwrap(), Reserved::Yes);
}

async fn campaign_outcomes_suppressions_and_interrupted_sends(store: Store) {
    let u = user(&store).await;
    let id = campaign(
        &store,
        &u,
        &[
            target("ok@a.example", "https://s.example"),
            target("bounce@a.example", "https://s.example"),
            target("crash@a.example", "https://s.example"),
            target("later@a.example", "https://s.example"),
        ],
    )
    .await;
    launch_ready(&store, &u, &id).await;
    let rows = store.campaign_targets(&id, 100).await.unwrap();
    let by = |e: &str| rows.iter().find(|(t, _)| t.recipient_email == e).unwrap().0.id.clone();
    let reserve = |row: String| {
        let store = store.clone();
        async move {
            let ob = new_id("obx");
            let r = Reservation {
                outbox_id: &ob,
                row_id: &row,
                worker: "w",
                sender: "s@c.example",
                sender_cap: 100,
                domain_cap: 100,
                day: DAY,
                now: T0,
            };
            store.reserve_send(&r).await.unwrap()
        }
    };
    // Sent once: a second reservation of the row is refused.
    assert_eq!(reserve(by("ok@a.example")).await, Reserved::Yes);
    assert_eq!(reserve(by("ok@a.example")).await, Reserved::Taken);
    store.finish_send_ok(&by("ok@a.example"), "<m1@c.example>", "250 ok", T0 + 1).await.unwrap();
    assert_eq!(reserve(by("ok@a.example")).await, Reserved::NotSendable);
    let sent = store.campaign_target(&by("ok@a.example")).await.unwrap().unwrap();
    assert_eq!(
        (sent.state.as_str(), sent.message_id.as_deref(), sent.sent_at),
        ("sent", Some("<m1@c.example>"), Some(T0 + 1))
    );

    // A 5xx rejection fails the row and suppresses the address for the account.
    assert_eq!(reserve(by("bounce@a.example")).await, Reserved::Yes);
    store.finish_send_rejected(&by("bounce@a.example"), "smtp_rejected:550", "550 no such user", T0).await.unwrap();
    assert_eq!(store.suppression(&u.id, "bounce@a.example").await.unwrap().unwrap().reason, SuppressionReason::Bounced);

    // A retryable failure re-arms the outbox entry: the row may be reserved again.
    assert_eq!(reserve(by("later@a.example")).await, Reserved::Yes);
    store.finish_send_retry(&by("later@a.example"), "smtp_transient", "451", T0 + 10, T0).await.unwrap();
    assert_eq!(reserve(by("later@a.example")).await, Reserved::Yes);
    assert_eq!(store.outbox_entry(&by("later@a.example")).await.unwrap().unwrap().1, 2);

    // A worker that died mid-send: swept as interrupted, the row fails and is never re-sent.
    assert_eq!(reserve(by("crash@a.example")).await, Reserved::Yes);
    assert_eq!(store.sweep_interrupted_sends(T0 - 1, T0 + 100).await.unwrap(), 0, "a fresh claim is left alone");
    assert!(store.sweep_interrupted_sends(T0 + 1, T0 + 100).await.unwrap() >= 1);
    let crashed = store.campaign_target(&by("crash@a.example")).await.unwrap().unwrap();
    assert_eq!((crashed.state.as_str(), crashed.reason.as_deref()), ("failed", Some("send_interrupted")));
    assert_eq!(reserve(by("crash@a.example")).await, Reserved::NotSendable);

    // A suppression skips the account's open rows for the address, in every campaign.
    let id2 = campaign(&store, &u, &[target("Quiet@A.example", "https://s.example")]).await;
    launch_ready(&store, &u, &id2).await;
    assert!(
        store
            .suppress(&u.id, "quiet@a.example", "Quiet@A.example", SuppressionReason::Unsubscribed, None, T0)
            .await
            .unwrap()
    );
    assert!(
        !store
            .suppress(&u.id, "quiet@a.example", "Quiet@A.example", SuppressionReason::Manual, None, T0)
            .await
            .unwrap()
    );
    let (t, _) = store.campaign_targets(&id2, 10).await.unwrap().remove(0);
    assert_eq!((t.state.as_str(), t.reason.as_deref()), ("skipped", Some("suppressed")));
    // Another account's suppression does not touch this one's rows.
    let other = user(&store).await;
    assert!(store.suppression(&other.id, "quiet@a.example").await.unwrap().is_none());
    assert_eq!(store.list_suppressions(&u.id, None, 10).await.unwrap().len(), 2);
    // A manual entry never replaces the recipient's own: it stays unsubscribed, and stays.
    let quiet = store.suppression(&u.id, "quiet@a.example").await.unwrap().unwrap();
    assert_eq!((quiet.reason, quiet.reason.source()), (SuppressionReason::Unsubscribed, SuppressionSource::Recipient));
    assert_eq!(store.unsuppress(&u.id, "quiet@a.example").await.unwrap(), Unsuppressed::Permanent(quiet));
    assert!(matches!(
        store.unsuppress(&u.id, "bounce@a.example").await.unwrap(),
        Unsuppressed::Permanent(s) if s.reason.source() == SuppressionSource::MailSystem
    ));
    // The account's own entry is lifted; a recipient's unsubscribe replaces it for good.
    assert!(
        store.suppress(&u.id, "mine@a.example", "mine@a.example", SuppressionReason::Manual, None, T0).await.unwrap()
    );
    assert_eq!(store.unsuppress(&u.id, "mine@a.example").await.unwrap(), Unsuppressed::Lifted);
    assert_eq!(store.unsuppress(&u.id, "mine@a.example").await.unwrap(), Unsuppressed::NotSuppressed);
    assert!(
        store.suppress(&u.id, "mine@a.example", "mine@a.example", SuppressionReason::Manual, None, T0).await.unwrap()
    );
    let upgraded = store
        .suppress(&u.id, "mine@a.example", "mine@a.example", SuppressionReason::Unsubscribed, Some("link"), T0 + 5)
        .await
        .unwrap();
    assert!(!upgraded, "not a new suppression");
    let mine = store.suppression(&u.id, "mine@a.example").await.unwrap().unwrap();
    assert_eq!(
        (mine.reason, mine.detail.as_deref(), mine.created_at),
        (SuppressionReason::Unsubscribed, Some("link"), T0)
    );
    assert!(matches!(store.unsuppress(&u.id, "mine@a.example").await.unwrap(), Unsuppressed::Permanent(_)));
    // Another account's delete finds nothing of this one's.
    assert_eq!(store.unsuppress(&other.id, "quiet@a.example").await.unwrap(), Unsuppressed::NotSuppressed);
    let (uid, email, _) = store.target_by_unsubscribe_token(&t.unsubscribe_token).await.unwrap().unwrap();
    assert_eq!((uid, email), (u.id.clone(), "Quiet@A.example".to_string()));
}

async fn campaign_sender_limits_and_warmup_start(store: Store) {
    let l = store.sender_limits("s@c.example", (20, 20, 500), T0).await.unwrap();
    assert_eq!((l.daily_limit, l.warmup_start, l.first_day.clone()), (None, 20, None));
    let l = store.set_sender_limits("s@c.example", (20, 20, 500), Some(Some(7)), Some((5, 50, 100)), T0).await.unwrap();
    assert_eq!((l.daily_limit, l.warmup_start, l.warmup_growth, l.warmup_max), (Some(7), 5, 50, 100));
    let l = store.set_sender_limits("s@c.example", (20, 20, 500), Some(None), None, T0).await.unwrap();
    assert_eq!((l.daily_limit, l.warmup_start), (None, 5));
    // The first reservation stamps the warmup's day 0.
    let u = user(&store).await;
    let id = campaign(&store, &u, &[target("a@b.example", "https://s.example")]).await;
    launch_ready(&store, &u, &id).await;
    let (t, _) = store.campaign_targets(&id, 10).await.unwrap().remove(0);
    let ob = new_id("obx");
    let r = Reservation {
        outbox_id: &ob,
        row_id: &t.id,
        worker: "w",
        sender: "s@c.example",
        sender_cap: 5,
        domain_cap: 5,
        day: DAY,
        now: T0,
    };
    assert_eq!(store.reserve_send(&r).await.unwrap(), Reserved::Yes);
    assert_eq!(store.sender_limits("s@c.example", (20, 20, 500), T0).await.unwrap().first_day.as_deref(), Some(DAY));
}

/// A campaign completes once its last row is final, emitting `campaign.completed` with its
/// counts in the same transaction — exactly once however many schedulers race to complete it
/// — to the endpoints subscribed to it (or to `*`), not to others; a row added while it runs
/// keeps it running.
async fn campaign_completed_is_emitted_once_with_the_counts(store: Store) {
    let u = user(&store).await;
    let endpoint = |events: &[&str]| capture_store::Endpoint {
        id: new_id("whe"),
        user_id: u.id.clone(),
        url: "https://hooks.example/h".into(),
        events: events.iter().map(|e| e.to_string()).collect(),
        description: None,
        secret_enc: "x".into(),
        created_at: T0,
    };
    let (sub, all, other) =
        (endpoint(&["campaign.completed"]), endpoint(&["*"]), endpoint(&["audit.completed", "screenshot.completed"]));
    for e in [&sub, &all, &other] {
        store.create_endpoint(e).await.unwrap();
    }
    let id = campaign(
        &store,
        &u,
        &[
            target("a@x.example", "https://a.example"),
            target("b@x.example", "https://a.example"),
            target("c@y.example", "https://c.example"),
        ],
    )
    .await;
    launch_ready(&store, &u, &id).await;
    let rows: Vec<String> = store.campaign_targets(&id, 10).await.unwrap().into_iter().map(|(t, _)| t.id).collect();
    store.target_end(&rows[0], TargetState::Skipped, "quality_gate:report_has_scores", T0).await.unwrap();
    store.target_end(&rows[1], TargetState::Failed, "smtp_rejected:550", T0).await.unwrap();
    // One row still open: not completed, nothing emitted.
    store.advance_campaigns(T0 + 1).await.unwrap();
    assert_eq!(store.campaign_of(&u.id, &id).await.unwrap().unwrap().status, CampaignStatus::Running);
    assert!(store.list_deliveries(&u.id, &sub.id, 10).await.unwrap().is_empty());
    store.target_end(&rows[2], TargetState::Skipped, "quality_gate:report_has_scores", T0).await.unwrap();
    // Eight schedulers at once: one completes it.
    let store = Arc::new(store);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.advance_campaigns(T0 + 5).await.unwrap() })
        })
        .collect();
    let mut moved = 0;
    for t in tasks {
        moved += t.await.unwrap();
    }
    assert_eq!(moved, 1, "one completion");
    let c = store.campaign_of(&u.id, &id).await.unwrap().unwrap();
    assert_eq!((c.status.as_str(), c.completed_at), ("completed", Some(T0 + 5)));
    for (ep, n) in [(&sub, 1), (&all, 1), (&other, 0)] {
        let ds = store.list_deliveries(&u.id, &ep.id, 10).await.unwrap();
        assert_eq!(ds.len(), n, "{:?}: {ds:?}", ep.events);
        if let Some(d) = ds.first() {
            assert_eq!(d.event_type, "campaign.completed");
            let job = store.delivery_job(&d.id).await.unwrap().unwrap();
            let body: serde_json::Value = serde_json::from_str(&job.payload).unwrap();
            assert_eq!(body["type"], "campaign.completed");
            assert_eq!(
                body["data"],
                serde_json::json!({
                    "campaignId": id, "name": "test", "status": "completed",
                    "counts": {"pending": 0, "auditing": 0, "ready": 0, "sent": 0, "skipped": 2, "failed": 1, "total": 3},
                    "reasons": {"quality_gate:report_has_scores": 2, "smtp_rejected:550": 1},
                    "sendAt": capture_core::time::iso(T0), "timezone": "UTC",
                    "launchedAt": capture_core::time::iso(T0), "completedAt": capture_core::time::iso(T0 + 5),
                })
            );
        }
    }
    // Later rounds emit nothing more.
    store.advance_campaigns(T0 + 10).await.unwrap();
    assert_eq!(store.list_deliveries(&u.id, &sub.id, 10).await.unwrap().len(), 1);

    // Rows added to a running campaign keep it running until they too are final.
    let id2 = campaign(&store, &u, &[target("d@x.example", "https://d.example")]).await;
    launch_ready(&store, &u, &id2).await;
    let first = store.campaign_targets(&id2, 10).await.unwrap().remove(0).0.id;
    store.target_end(&first, TargetState::Sent, "", T0).await.unwrap();
    assert_eq!(
        store.add_campaign_targets(&u.id, &id2, &[target("e@x.example", "https://e.example")], 10, T0).await.unwrap(),
        Ok(1)
    );
    store.advance_campaigns(T0 + 20).await.unwrap();
    assert_eq!(store.campaign_of(&u.id, &id2).await.unwrap().unwrap().status, CampaignStatus::Running);
}

on_both_backends! {
    store:
    campaign_completed_is_emitted_once_with_the_counts => campaign_completed_is_emitted_once_with_the_counts_sqlite, campaign_completed_is_emitted_once_with_the_counts_postgres;
    campaign_rows_and_bounds => campaign_rows_and_bounds_sqlite, campaign_rows_and_bounds_postgres;
    campaign_caps_hold_exactly_under_concurrency => campaign_caps_hold_exactly_under_concurrency_sqlite, campaign_caps_hold_exactly_under_concurrency_postgres;
    campaign_outcomes_suppressions_and_interrupted_sends => campaign_outcomes_suppressions_and_interrupted_sends_sqlite, campaign_outcomes_suppressions_and_interrupted_sends_postgres;
    campaign_sender_limits_and_warmup_start => campaign_sender_limits_and_warmup_start_sqlite, campaign_sender_limits_and_warmup_start_postgres;
}
