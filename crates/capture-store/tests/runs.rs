//! Store tests of browser session runs, each scenario on SQLite and on PostgreSQL
//! (`<scenario>_sqlite`, `<scenario>_postgres`; PostgreSQL through
//! `CAPTURE_TEST_POSTGRES_URL`, skipped with `CAPTURE_SKIP_POSTGRES=1`), like `store.rs`.

#[macro_use]
mod common;

use capture_core::ids::{USER, new_id, random_string};
use capture_core::{EndReason, RunStatus};
use capture_store::{Endpoint, IdemBegin, IdemResponse, NewRun, QuotaExceeded, Refused, RunEnd, RunRow, Store, User};

const T0: i64 = 1_750_000_000_000;
const MONTH: &str = "2025-06";

on_both_backends! {
    store:
    runs_reserve_what_the_month_has_left_and_bound_active_runs => runs_reserve_what_the_month_has_left_and_bound_active_runs_sqlite, runs_reserve_what_the_month_has_left_and_bound_active_runs_postgres;
    a_run_ends_exactly_once_whoever_races_to_end_it => a_run_ends_exactly_once_whoever_races_to_end_it_sqlite, a_run_ends_exactly_once_whoever_races_to_end_it_postgres;
    live_tokens_are_single_use_and_expire => live_tokens_are_single_use_and_expire_sqlite, live_tokens_are_single_use_and_expire_postgres;
    nodes_advertise_where_they_are_and_live_runs_name_their_node => nodes_advertise_where_they_are_and_live_runs_name_their_node_sqlite, nodes_advertise_where_they_are_and_live_runs_name_their_node_postgres;
    abandoned_runs_are_found_and_heartbeats_fence_the_lost_worker => abandoned_runs_are_found_and_heartbeats_fence_the_lost_worker_sqlite, abandoned_runs_are_found_and_heartbeats_fence_the_lost_worker_postgres;
    runs_list_newest_first_with_a_stable_cursor_and_store_their_idempotent_response => runs_list_newest_first_with_a_stable_cursor_and_store_their_idempotent_response_sqlite, runs_list_newest_first_with_a_stable_cursor_and_store_their_idempotent_response_postgres;
}

async fn new_user(store: &Store) -> User {
    let user = User {
        id: new_id(USER),
        email: format!("{}@example.com", random_string(10)),
        plan: "free".into(),
        legacy_free: false,
        password_hash: None,
        created_at: T0,
    };
    store.create_user(&user).await.unwrap();
    user
}

fn new_run(user: &User, now: i64, wanted: i64, limit: Option<i64>) -> NewRun {
    let id = new_id("run");
    NewRun {
        task_payload: Some(serde_json::json!({ "runId": id }).to_string()),
        id,
        user_id: user.id.clone(),
        key_id: None,
        kind: capture_core::RunKind::Scripted,
        start_url: "https://example.com/".into(),
        device: r#"{"width":1280,"height":800}"#.into(),
        record_video: true,
        timeout_ms: wanted * 60_000,
        steps: "[]".into(),
        connect_token_hash: None,
        connect_expires_at: None,
        actions_wanted: wanted,
        month: MONTH.into(),
        limit,
        reset_at: "2025-07-01T00:00:00.000Z".into(),
        now,
        max_active: None,
        client_id: None,
        shared: false,
        profile_id: None,
        save_profile: None,
        cookie_consent: "auto".into(),
        proxy_id: None,
        proxy_member: None,
    }
}

async fn create(store: &Store, n: &NewRun) -> RunRow {
    store.create_run(n, None).await.unwrap().expect("accepted").0
}

/// The month's usage, read straight from the database.
async fn used(store: &Store, user: &User) -> i64 {
    store.month_usage(&user.id, MONTH).await.unwrap()
}

fn end(id: &str, status: &str, charged: i64, now: i64) -> RunEnd {
    let event_type = if status == "failed" { "run.failed" } else { "run.completed" };
    RunEnd {
        id: id.into(),
        status: RunStatus::parse(status).unwrap(),
        end_reason: EndReason::Finished,
        final_url: Some("https://example.com/done".into()),
        page_title: Some("Done".into()),
        video_key: Some("videos/x.mp4".into()),
        console_error_count: 2,
        network_error_count: 1,
        console_errors: Some(r#"[{"text":"a"},{"text":"b"}]"#.into()),
        network_errors: Some(r#"[{"url":"https://example.com/404"}]"#.into()),
        step_results: Some("[]".into()),
        error: None,
        finalization_error: (status == "failed").then(|| "the encoder failed".into()),
        charged,
        event_type: event_type.into(),
        event: serde_json::json!({ "runId": id }),
        task: None,
        only_if_pending: false,
        now,
    }
}

async fn deliveries(store: &Store, user: &User, endpoint: &str) -> Vec<String> {
    let _ = user;
    store.list_deliveries(&user.id, endpoint, 100).await.unwrap().into_iter().map(|d| d.event_type).collect()
}

async fn endpoint(store: &Store, user: &User) -> String {
    let id = new_id("whe");
    store
        .create_endpoint(&Endpoint {
            id: id.clone(),
            user_id: user.id.clone(),
            url: "https://hooks.example.com/".into(),
            events: vec!["*".into()],
            description: None,
            secret_enc: "x".into(),
            created_at: T0,
        })
        .await
        .unwrap();
    id
}

// ---------------------------------------------------------------------------------------

async fn runs_reserve_what_the_month_has_left_and_bound_active_runs(store: Store) {
    let user = new_user(&store).await;
    // 10 actions a month; a 3-minute run reserves 3.
    let a = create(&store, &new_run(&user, T0, 3, Some(10))).await;
    assert_eq!((a.status.as_str(), a.actions_reserved, a.kind.as_str()), ("pending", 3, "scripted"));
    let b = create(&store, &new_run(&user, T0 + 1, 5, Some(10))).await;
    assert_eq!(b.actions_reserved, 5);
    // Two left: a 4-minute run gets 2 (it will be cut off when they run out).
    let c = create(&store, &new_run(&user, T0 + 2, 4, Some(10))).await;
    assert_eq!(c.actions_reserved, 2);
    // None left: refused, nothing written.
    let refused = store.create_run(&new_run(&user, T0 + 3, 1, Some(10)), None).await.unwrap();
    assert_eq!(refused.unwrap_err(), Refused::Quota(QuotaExceeded { used: 10 }));
    // Ending a run gives back what it did not use: `a` ran one minute.
    assert!(store.finish_run(&end(&a.id, "completed", 1, T0 + 60_000)).await.unwrap());
    let a = store.run(&a.id).await.unwrap().unwrap();
    assert_eq!((a.actions_reserved, a.actions_charged), (3, 1));
    let after = store.create_run(&new_run(&user, T0 + 4, 1, Some(10)), None).await.unwrap();
    assert_eq!(after.unwrap().1, 9, "2 actions came back, one is used again");

    // The bound on active runs holds under concurrency: 2 of 6 concurrent creates pass.
    let other = new_user(&store).await;
    let mut handles = Vec::new();
    for i in 0..6 {
        let mut n = new_run(&other, T0 + i, 1, None);
        n.max_active = Some(2);
        let s = store.clone();
        handles.push(tokio::spawn(async move { s.create_run(&n, None).await.unwrap() }));
    }
    let mut ok = 0;
    for h in handles {
        match h.await.unwrap() {
            Ok(_) => ok += 1,
            Err(Refused::TooManyActive { active, limit }) => assert_eq!((active, limit), (2, 2)),
            Err(e) => panic!("unexpected refusal {e:?}"),
        }
    }
    assert_eq!(ok, 2);
    assert_eq!(store.active_runs(&other.id).await.unwrap(), 2);
}

async fn a_run_ends_exactly_once_whoever_races_to_end_it(store: Store) {
    let user = new_user(&store).await;
    let hook = endpoint(&store, &user).await;
    for round in 0..5 {
        let r = create(&store, &new_run(&user, T0 + round, 2, None)).await;
        let started = store.start_run(&r.id, "w1", T0 + 60_000, T0 + round).await.unwrap().expect("started");
        assert_eq!((started.status.as_str(), started.worker.as_deref()), ("running", Some("w1")));
        // The worker completes while the sweeper fails it and the user's stop lands.
        let mut handles = Vec::new();
        for (i, status) in ["completed", "failed", "stopped", "failed"].into_iter().enumerate() {
            let s = store.clone();
            let e = end(&r.id, status, 1, T0 + 1000 + i as i64);
            handles.push(tokio::spawn(async move { (status, s.finish_run(&e).await.unwrap()) }));
        }
        let mut winners = Vec::new();
        for h in handles {
            let (status, won) = h.await.unwrap();
            if won {
                winners.push(status);
            }
        }
        assert_eq!(winners.len(), 1, "exactly one end wins: {winners:?}");
        let row = store.run(&r.id).await.unwrap().unwrap();
        assert_eq!(row.status.as_str(), winners[0]);
        assert!(row.is_final() && row.ended_at.is_some());
        // Nothing more changes it.
        assert!(!store.finish_run(&end(&r.id, "completed", 1, T0 + 9999)).await.unwrap());
        assert_eq!(store.heartbeat_run(&r.id, "w1", T0 + 120_000).await.unwrap(), None);
    }
    let events = deliveries(&store, &user, &hook).await;
    assert_eq!(events.len(), 5, "one webhook per run: {events:?}");
    assert!(events.iter().all(|e| e == "run.completed" || e == "run.failed"));
    // The stream's events of the last run: pending, running, then one final status.
    let last = store.list_runs(&user.id, None, 1).await.unwrap().remove(0);
    let statuses: Vec<String> = store
        .events_after(&last.id, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, _, d)| serde_json::from_str::<serde_json::Value>(&d).unwrap()["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses.len(), 3, "{statuses:?}");
    assert_eq!(&statuses[..2], ["pending", "running"]);
}

async fn live_tokens_are_single_use_and_expire(store: Store) {
    let user = new_user(&store).await;
    let mut n = new_run(&user, T0, 1, None);
    n.kind = capture_core::RunKind::Live;
    n.task_payload = None;
    n.connect_token_hash = Some("hash-a".into());
    n.connect_expires_at = Some(T0 + 30_000);
    let r = create(&store, &n).await;
    // A scripted worker never starts a live run.
    assert!(store.start_run(&r.id, "w", T0 + 60_000, T0 + 1).await.unwrap().is_none());
    assert!(store.claim_live_run(&r.id, "wrong", "w", T0 + 60_000, T0 + 1).await.unwrap().is_none());
    let claimed = store.claim_live_run(&r.id, "hash-a", "node-1", T0 + 60_000, T0 + 2).await.unwrap().unwrap();
    assert_eq!((claimed.status.as_str(), claimed.connect_token_hash), ("running", None));
    assert!(
        store.claim_live_run(&r.id, "hash-a", "node-2", T0 + 60_000, T0 + 3).await.unwrap().is_none(),
        "single use"
    );
    // Expired before anyone connected: refused, and the sweeper finds it after the grace.
    let mut n2 = new_run(&user, T0, 1, None);
    n2.kind = capture_core::RunKind::Live;
    n2.task_payload = None;
    n2.connect_token_hash = Some("hash-b".into());
    n2.connect_expires_at = Some(T0 + 30_000);
    let r2 = create(&store, &n2).await;
    assert!(store.claim_live_run(&r2.id, "hash-b", "w", T0 + 90_000, T0 + 30_000).await.unwrap().is_none());
    assert!(store.abandoned_runs(T0 + 31_000, 5_000, 10).await.unwrap().is_empty());
    let found = store.abandoned_runs(T0 + 36_000, 5_000, 10).await.unwrap();
    assert_eq!(found.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [r2.id.as_str()]);
}

async fn nodes_advertise_where_they_are_and_live_runs_name_their_node(store: Store) {
    assert_eq!(store.node_url("node-1").await.unwrap(), None);
    assert_eq!(store.browser_node(T0).await.unwrap(), None);
    store.advertise_node("node-1", "http://10.0.0.1:8080", false, T0).await.unwrap();
    store.advertise_node("node-2", "http://10.0.0.2:8080", true, T0).await.unwrap();
    // Only a node with a browser, and only while it is fresh, takes live connections.
    assert_eq!(store.browser_node(T0).await.unwrap(), Some(("node-2".into(), "http://10.0.0.2:8080".into())));
    assert_eq!(store.browser_node(T0 + 1).await.unwrap(), None);
    // A node that comes back elsewhere says so.
    store.advertise_node("node-1", "http://10.0.0.9:8080", false, T0 + 10_000).await.unwrap();
    assert_eq!(store.node_url("node-1").await.unwrap().as_deref(), Some("http://10.0.0.9:8080"));
    assert_eq!(store.node_url("node-2").await.unwrap().as_deref(), Some("http://10.0.0.2:8080"));

    let alice = new_user(&store).await;
    let bob = new_user(&store).await;
    let live = |user: &User, hash: &str| {
        let mut n = new_run(user, T0, 1, None);
        n.kind = capture_core::RunKind::Live;
        n.task_payload = None;
        n.connect_token_hash = Some(hash.into());
        n.connect_expires_at = Some(T0 + 30_000);
        n
    };
    let a1 = create(&store, &live(&alice, "h1")).await;
    let a2 = create(&store, &live(&alice, "h2")).await;
    let b1 = create(&store, &live(&bob, "h3")).await;
    let _pending = create(&store, &live(&alice, "h4")).await;
    store.claim_live_run(&a1.id, "h1", "node-1", T0 + 60_000, T0 + 1).await.unwrap().unwrap();
    store.claim_live_run(&a2.id, "h2", "node-2", T0 + 60_000, T0 + 2).await.unwrap().unwrap();
    store.claim_live_run(&b1.id, "h3", "node-2", T0 + 60_000, T0 + 3).await.unwrap().unwrap();
    let ids = |v: Vec<RunRow>| v.into_iter().map(|r| (r.id, r.worker.unwrap_or_default())).collect::<Vec<_>>();
    // Seen from node-1: Alice's session on node-2 only (not her own here, not Bob's, not a
    // pending one).
    assert_eq!(ids(store.live_runs_elsewhere(&alice.id, "node-1").await.unwrap()), [(a2.id.clone(), "node-2".into())]);
    assert_eq!(ids(store.live_runs_elsewhere(&alice.id, "node-2").await.unwrap()), [(a1.id.clone(), "node-1".into())]);
    assert_eq!(ids(store.live_runs_elsewhere(&alice.id, "node-3").await.unwrap()).len(), 2);
    assert!(store.live_runs_elsewhere(&bob.id, "node-2").await.unwrap().is_empty());
}

async fn abandoned_runs_are_found_and_heartbeats_fence_the_lost_worker(store: Store) {
    let user = new_user(&store).await;
    let r = create(&store, &new_run(&user, T0, 2, Some(100))).await;
    store.start_run(&r.id, "w1", T0 + 10_000, T0).await.unwrap().unwrap();
    assert_eq!(store.heartbeat_run(&r.id, "w1", T0 + 20_000).await.unwrap(), Some(false));
    assert_eq!(store.heartbeat_run(&r.id, "w2", T0 + 20_000).await.unwrap(), None, "another worker does not hold it");
    assert!(store.abandoned_runs(T0 + 15_000, 0, 10).await.unwrap().is_empty());
    // A stop request reaches the holder at its next heartbeat.
    assert!(store.request_run_stop(&user.id, &r.id).await.unwrap().is_some());
    assert_eq!(store.heartbeat_run(&r.id, "w1", T0 + 30_000).await.unwrap(), Some(true));
    assert!(store.request_run_stop("usr_someoneelse", &r.id).await.unwrap().is_none());
    // Steps are recorded while it is held, with an event for streams.
    let step = serde_json::json!({"index": 0, "action": "goto", "ok": true});
    assert!(store.record_run_step(&r.id, "w1", "[{\"index\":0}]", &step, T0 + 1).await.unwrap());
    assert!(!store.record_run_step(&r.id, "w2", "[]", &step, T0 + 1).await.unwrap());
    // The worker died: its hold runs out, the sweeper fails the run once.
    let found = store.abandoned_runs(T0 + 31_000, 0, 10).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].step_results, "[{\"index\":0}]");
    let mut e = end(&r.id, "failed", 1, T0 + 31_000);
    e.step_results = None;
    assert!(store.finish_run(&e).await.unwrap());
    assert!(store.abandoned_runs(T0 + 99_000, 0, 10).await.unwrap().is_empty());
    assert_eq!(used(&store, &user).await, 1, "the unused minute came back");
    let row = store.run(&r.id).await.unwrap().unwrap();
    assert_eq!(row.step_results, "[{\"index\":0}]", "kept when the end brings none");
    // A stop of a pending run nobody holds ends it without charge.
    let p = create(&store, &new_run(&user, T0 + 5, 3, Some(100))).await;
    store.request_run_stop(&user.id, &p.id).await.unwrap();
    assert!(store.start_run(&p.id, "w1", T0 + 60_000, T0 + 6).await.unwrap().is_none(), "a stopped run never starts");
    let mut stop = end(&p.id, "stopped", 0, T0 + 7);
    stop.only_if_pending = true;
    assert!(store.finish_run(&stop).await.unwrap());
    assert_eq!(used(&store, &user).await, 1);
}

async fn runs_list_newest_first_with_a_stable_cursor_and_store_their_idempotent_response(store: Store) {
    let user = new_user(&store).await;
    let mut ids = Vec::new();
    for i in 0..7 {
        // Two share each timestamp: the id breaks ties.
        ids.push(create(&store, &new_run(&user, T0 + i / 2, 1, None)).await.id);
    }
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = store.list_runs(&user.id, before.clone(), 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        let last = page.last().unwrap();
        before = Some((last.created_at, Some(last.id.clone())));
        seen.extend(page.into_iter().map(|r| r.id));
    }
    assert_eq!(seen.len(), 7);
    let mut sorted = seen.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 7, "every run once");
    let other = new_user(&store).await;
    assert!(store.list_runs(&other.id, None, 10).await.unwrap().is_empty());
    assert!(store.run_of(&other.id, &ids[0]).await.unwrap().is_none());

    // The response of an idempotent create is stored with the run.
    let IdemBegin::Owned(claim) =
        store.idem_begin(&user.id, "POST /v1/runs", "key-12345678", "h", T0, 86_400_000, 60_000).await.unwrap()
    else {
        panic!("owned")
    };
    let render = |r: &RunRow| (202u16, serde_json::json!({ "id": r.id }).to_string());
    let n = new_run(&user, T0 + 100, 1, None);
    let (row, _) = store.create_run(&n, Some(IdemResponse { claim: &claim, render: &render })).await.unwrap().unwrap();
    let again =
        store.idem_begin(&user.id, "POST /v1/runs", "key-12345678", "h", T0 + 1, 86_400_000, 60_000).await.unwrap();
    assert_eq!(again, IdemBegin::Replay(202, serde_json::json!({ "id": row.id }).to_string()));
}
