//! Integration tests of the `Store` API, every scenario on both backends (the harness in
//! `common`: `<scenario>_sqlite` and `<scenario>_postgres`, PostgreSQL through
//! `CAPTURE_TEST_POSTGRES_URL`, skipped with `CAPTURE_SKIP_POSTGRES=1`).
//!
//! Times are fixed Unix-millisecond values passed to the store (no sleeps, no wall clock).

#[macro_use]
mod common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use capture_core::JobStatus;
use capture_core::ids::{KEY, SCREENSHOT, USER, new_id, random_string};
use capture_store::{
    AdshotDone, ApiKeyRow, FairShare, IdemBegin, IdemClaim, IdemResponse, KIND_DRAFT, KIND_RENDER, Listener, NewAdshot,
    NewScreenshot, QueueFull, QueueLimits, QueueScope, QuotaExceeded, Refused, SCHEDULER_LOCK, ScreenshotDone,
    ScreenshotRow, Store, StoreError, User, Wakeup,
};
use sqlx::{AnyPool, AssertSqlSafe, Connection, Executor, PgConnection};

use common::Ctx;

/// A fixed "now" (2025-06-15T..Z) and its usage month.
const T0: i64 = 1_750_000_000_000;
const MONTH: &str = "2025-06";
const DAY_MS: i64 = 86_400_000;

on_both_backends! {
    migrations_are_idempotent => migrations_are_idempotent_sqlite, migrations_are_idempotent_postgres;
    concurrent_first_starts_migrate_once => concurrent_first_starts_migrate_once_sqlite, concurrent_first_starts_migrate_once_postgres;
    users_are_unique_by_email_and_found_case_insensitively => users_are_unique_by_email_and_found_case_insensitively_sqlite, users_are_unique_by_email_and_found_case_insensitively_postgres;
    keys_authenticate_until_revoked_by_their_owner => keys_authenticate_until_revoked_by_their_owner_sqlite, keys_authenticate_until_revoked_by_their_owner_postgres;
    usage_is_counted_per_key => usage_is_counted_per_key_sqlite, usage_is_counted_per_key_postgres;
    quota_admits_exactly_the_limit_under_concurrency => quota_admits_exactly_the_limit_under_concurrency_sqlite, quota_admits_exactly_the_limit_under_concurrency_postgres;
    one_accounts_creates_run_side_by_side_within_exact_bounds => one_accounts_creates_run_side_by_side_within_exact_bounds_sqlite, one_accounts_creates_run_side_by_side_within_exact_bounds_postgres;
    quota_counts_actions_not_jobs => quota_counts_actions_not_jobs_sqlite, quota_counts_actions_not_jobs_postgres;
    a_job_keeps_the_traceparent_it_was_made_with => a_job_keeps_the_traceparent_it_was_made_with_sqlite, a_job_keeps_the_traceparent_it_was_made_with_postgres;
    unlimited_plan_is_never_refused => unlimited_plan_is_never_refused_sqlite, unlimited_plan_is_never_refused_postgres;
    failed_job_refunds_its_actions => failed_job_refunds_its_actions_sqlite, failed_job_refunds_its_actions_postgres;
    sealed_credentials_last_until_the_job_ends => sealed_credentials_last_until_the_job_ends_sqlite, sealed_credentials_last_until_the_job_ends_postgres;
    the_cache_answers_a_done_job_within_its_ttl_to_its_owner_only => the_cache_answers_a_done_job_within_its_ttl_to_its_owner_only_sqlite, the_cache_answers_a_done_job_within_its_ttl_to_its_owner_only_postgres;
    render_keys_are_listed_found_and_revoked_by_their_owner => render_keys_are_listed_found_and_revoked_by_their_owner_sqlite, render_keys_are_listed_found_and_revoked_by_their_owner_postgres;
    storage_destinations_belong_to_their_owner_and_jobs_keep_where_their_copy_went => storage_destinations_belong_to_their_owner_and_jobs_keep_where_their_copy_went_sqlite, storage_destinations_belong_to_their_owner_and_jobs_keep_where_their_copy_went_postgres;
    monitors_are_owned_bounded_claimed_once_and_keep_their_baseline => monitors_are_owned_bounded_claimed_once_and_keep_their_baseline_sqlite, monitors_are_owned_bounded_claimed_once_and_keep_their_baseline_postgres;
    profiles_belong_to_their_owner_and_are_found_by_id_or_name => profiles_belong_to_their_owner_and_are_found_by_id_or_name_sqlite, profiles_belong_to_their_owner_and_are_found_by_id_or_name_postgres;
    proxies_belong_to_their_owner_and_are_found_by_id_or_name => proxies_belong_to_their_owner_and_are_found_by_id_or_name_sqlite, proxies_belong_to_their_owner_and_are_found_by_id_or_name_postgres;
    a_batch_is_all_or_nothing_and_completes_once => a_batch_is_all_or_nothing_and_completes_once_sqlite, a_batch_is_all_or_nothing_and_completes_once_postgres;
    uploads_are_created_done_without_a_task => uploads_are_created_done_without_a_task_sqlite, uploads_are_created_done_without_a_task_postgres;
    listing_walks_every_job_once_newest_first => listing_walks_every_job_once_newest_first_sqlite, listing_walks_every_job_once_newest_first_postgres;
    claim_takes_the_oldest_due_task => claim_takes_the_oldest_due_task_sqlite, claim_takes_the_oldest_due_task_postgres;
    expired_lease_moves_task_to_another_worker_and_fences_the_first => expired_lease_moves_task_to_another_worker_and_fences_the_first_sqlite, expired_lease_moves_task_to_another_worker_and_fences_the_first_postgres;
    release_requeues_without_counting_an_attempt => release_requeues_without_counting_an_attempt_sqlite, release_requeues_without_counting_an_attempt_postgres;
    a_hand_back_is_counted_on_its_task => a_hand_back_is_counted_on_its_task_sqlite, a_hand_back_is_counted_on_its_task_postgres;
    a_render_links_views_share_one_capture_in_flight => a_render_links_views_share_one_capture_in_flight_sqlite, a_render_links_views_share_one_capture_in_flight_postgres;
    concurrent_workers_never_share_a_task => concurrent_workers_never_share_a_task_sqlite, concurrent_workers_never_share_a_task_postgres;
    idempotency_owns_replays_and_expires_keys => idempotency_owns_replays_and_expires_keys_sqlite, idempotency_owns_replays_and_expires_keys_postgres;
    idempotency_admits_one_owner_under_concurrency => idempotency_admits_one_owner_under_concurrency_sqlite, idempotency_admits_one_owner_under_concurrency_postgres;
    idempotency_abort_and_purge_forget_keys => idempotency_abort_and_purge_forget_keys_sqlite, idempotency_abort_and_purge_forget_keys_postgres;
    abandoned_in_flight_keys_are_taken_over_after_their_lease => abandoned_in_flight_keys_are_taken_over_after_their_lease_sqlite, abandoned_in_flight_keys_are_taken_over_after_their_lease_postgres;
    a_job_that_ran_into_its_own_deadline_keeps_its_charge => a_job_that_ran_into_its_own_deadline_keeps_its_charge_sqlite, a_job_that_ran_into_its_own_deadline_keeps_its_charge_postgres;
    fair_claims_serve_the_least_busy_account_within_its_cap => fair_claims_serve_the_least_busy_account_within_its_cap_sqlite, fair_claims_serve_the_least_busy_account_within_its_cap_postgres;
    fair_claim_caps_hold_under_concurrency => fair_claim_caps_hold_under_concurrency_sqlite, fair_claim_caps_hold_under_concurrency_postgres;
    waiting_accounts_name_who_has_work_due_and_claims_name_the_account => waiting_accounts_name_who_has_work_due_and_claims_name_the_account_sqlite, waiting_accounts_name_who_has_work_due_and_claims_name_the_account_postgres;
    databases_from_before_sqlx_migrations_upgrade_in_place => databases_from_before_sqlx_migrations_upgrade_in_place_sqlite, databases_from_before_sqlx_migrations_upgrade_in_place_postgres;
    share_tokens_are_stable_and_owner_only => share_tokens_are_stable_and_owner_only_sqlite, share_tokens_are_stable_and_owner_only_postgres;
    screenshot_of_hides_other_users_jobs => screenshot_of_hides_other_users_jobs_sqlite, screenshot_of_hides_other_users_jobs_postgres;
    key_lookups_are_cacheable_while_every_change_is_heard => key_lookups_are_cacheable_while_every_change_is_heard_sqlite, key_lookups_are_cacheable_while_every_change_is_heard_postgres;
    notifications_reach_listeners_when_changes_commit_and_never_on_rollback => notifications_reach_listeners_when_changes_commit_and_never_on_rollback_sqlite, notifications_reach_listeners_when_changes_commit_and_never_on_rollback_postgres;
    one_process_leads_at_a_time_and_another_takes_over => one_process_leads_at_a_time_and_another_takes_over_sqlite, one_process_leads_at_a_time_and_another_takes_over_postgres;
    account_queue_bound_admits_exactly_the_limit_under_concurrency => account_queue_bound_admits_exactly_the_limit_under_concurrency_sqlite, account_queue_bound_admits_exactly_the_limit_under_concurrency_postgres;
    global_queue_bound_admits_exactly_the_limit_under_concurrency => global_queue_bound_admits_exactly_the_limit_under_concurrency_sqlite, global_queue_bound_admits_exactly_the_limit_under_concurrency_postgres;
    sign_in_failures_count_since_the_last_success => sign_in_failures_count_since_the_last_success_sqlite, sign_in_failures_count_since_the_last_success_postgres;
    an_email_is_verified_once_by_its_link_before_it_expires => an_email_is_verified_once_by_its_link_before_it_expires_sqlite, an_email_is_verified_once_by_its_link_before_it_expires_postgres;
    ad_drafts_and_renders_charge_progress_and_complete => ad_drafts_and_renders_charge_progress_and_complete_sqlite, ad_drafts_and_renders_charge_progress_and_complete_postgres;
    a_failed_ad_render_refunds_once => a_failed_ad_render_refunds_once_sqlite, a_failed_ad_render_refunds_once_postgres;
    an_ad_create_stores_its_idempotent_response_with_it => an_ad_create_stores_its_idempotent_response_with_it_sqlite, an_ad_create_stores_its_idempotent_response_with_it_postgres;
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

async fn new_user(store: &Store, email: &str) -> User {
    let user = User {
        id: new_id(USER),
        email: email.to_string(),
        plan: "free".into(),
        legacy_free: false,
        password_hash: Some("argon2-hash".into()),
        created_at: T0,
    };
    store.create_user(&user).await.expect("create_user");
    user
}

/// A new key of `user`; returns the row and the hash it authenticates with.
async fn new_key(store: &Store, user: &User, name: &str, created_at: i64) -> (ApiKeyRow, String) {
    let key = ApiKeyRow {
        id: new_id(KEY),
        user_id: user.id.clone(),
        name: name.into(),
        prefix: "sk_live_abcd".into(),
        key_enc: format!("enc-{}", random_string(16)),
        created_at,
        revoked_at: None,
        last_used_at: None,
    };
    let hash = format!("hash-{}", random_string(32));
    store.create_key(&key, &hash).await.expect("create_key");
    (key, hash)
}

/// A queued one-action PNG job of `user` at `now`.
fn job(user: &User, key_id: Option<&str>, now: i64, limit: Option<i64>) -> NewScreenshot {
    let id = new_id(SCREENSHOT);
    NewScreenshot {
        task_payload: serde_json::json!({ "job": id }).to_string(),
        id,
        user_id: user.id.clone(),
        key_id: key_id.map(str::to_string),
        url: "https://example.com/".into(),
        options: r#"{"full_page":false}"#.into(),
        credentials: None,
        cache: None,
        cached_from: None,
        flight: false,
        batch: None,
        format: "png".into(),
        actions: 1,
        month: MONTH.into(),
        limit,
        reset_at: "2026-12-01T00:00:00.000Z".into(),
        now,
        done: None,
        queue_limits: QueueLimits::default(),
        traceparent: None,
    }
}

/// Create a job that must be accepted.
async fn create(store: &Store, n: &NewScreenshot) -> ScreenshotRow {
    let (row, _used) = store.create_screenshot(n).await.expect("create_screenshot").expect("within quota");
    row
}

fn done_fields(tag: &str) -> ScreenshotDone {
    ScreenshotDone {
        result_key: format!("results/{tag}.png"),
        thumb_key: Some(format!("thumbs/{tag}.webp")),
        page_title: Some(format!("Title {tag}")),
        tags: vec!["news".into(), tag.into()],
        width: Some(1280),
        height: Some(720),
        metadata: Some(format!(r#"{{"title":"Title {tag}"}}"#)),
        storage_url: None,
        storage_error: None,
    }
}

/// The statuses carried by a job's events, oldest first.
async fn statuses(store: &Store, job_id: &str) -> Vec<String> {
    store
        .events_after(job_id, 0)
        .await
        .expect("events_after")
        .into_iter()
        .map(|(_, event_type, data)| {
            assert_eq!(event_type, "screenshot.status");
            let data: serde_json::Value = serde_json::from_str(&data).expect("event data is JSON");
            data["status"].as_str().expect("status").to_string()
        })
        .collect()
}

async fn job_row(store: &Store, id: &str) -> ScreenshotRow {
    store.screenshot(id).await.expect("screenshot").expect("job exists")
}

// ---------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------

async fn migrations_are_idempotent(ctx: Ctx) {
    let alice = new_user(&ctx.store, "alice@example.com").await;

    // Connecting again (and migrating explicitly) to an up-to-date database changes nothing.
    let again = Store::connect(&ctx.url, 2).await.expect("second connect");
    again.migrate().await.expect("explicit migrate");
    again.ping().await.expect("ping");
    assert_eq!(again.user_by_id(&alice.id).await.unwrap(), Some(alice.clone()));
    again.close().await;

    // Several nodes starting at once.
    let starts: Vec<_> = (0..3)
        .map(|_| {
            let url = ctx.url.clone();
            tokio::spawn(async move { Store::connect(&url, 2).await.map(|s| s.backend()) })
        })
        .collect();
    for start in starts {
        assert_eq!(start.await.unwrap().expect("concurrent connect"), ctx.store.backend());
    }

    // Every step is recorded exactly once.
    let (rows, versions) = migration_rows(&ctx.url).await;
    assert!(rows >= 1);
    assert_eq!(rows, versions);

    // The original store still works after all that.
    assert_eq!(ctx.store.user_by_email("alice@example.com").await.unwrap(), Some(alice));
}

async fn concurrent_first_starts_migrate_once(ctx: Ctx) {
    // Several nodes starting at once on an empty database: one migrates, none fails.
    let url = ctx.dbs.fresh_url().await;
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { Store::connect(&url, 2).await })
        })
        .collect();
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.unwrap().expect("concurrent first connect"));
    }
    let alice = new_user(&stores[0], "alice@example.com").await;
    for store in &stores {
        assert_eq!(store.user_by_email("alice@example.com").await.unwrap(), Some(alice.clone()));
        store.close().await;
    }
    let (rows, versions) = migration_rows(&url).await;
    assert_eq!(rows, versions, "each step recorded once");
    assert_eq!((rows, versions), migration_rows(&ctx.url).await, "every step applied");
    // The fixture's own database is untouched by all this.
    assert_eq!(ctx.store.user_by_email("alice@example.com").await.unwrap(), None);
}

/// `(rows, distinct versions)` of `_sqlx_migrations`, read without the store.
async fn migration_rows(url: &str) -> (i64, i64) {
    sqlx::any::install_default_drivers();
    let raw = AnyPool::connect(url).await.expect("raw pool");
    let counts =
        sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT version) FROM _sqlx_migrations").fetch_one(&raw).await.unwrap();
    raw.close().await;
    counts
}

async fn users_are_unique_by_email_and_found_case_insensitively(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;

    let twin = User { id: new_id(USER), ..alice.clone() };
    match store.create_user(&twin).await {
        Err(StoreError::Conflict(msg)) => assert!(msg.contains("alice@example.com"), "{msg}"),
        other => panic!("duplicate e-mail must be a Conflict, got {other:?}"),
    }
    assert_eq!(store.user_by_id(&twin.id).await.unwrap(), None);

    assert_eq!(store.user_by_id(&alice.id).await.unwrap(), Some(alice.clone()));
    assert_eq!(store.user_by_email("alice@example.com").await.unwrap(), Some(alice.clone()));
    // The store lower-cases the lookup (callers store e-mails lower-case).
    assert_eq!(store.user_by_email("ALICE@Example.COM").await.unwrap(), Some(alice.clone()));
    assert_eq!(store.user_by_email("bob@example.com").await.unwrap(), None);
    assert_eq!(store.user_by_id("usr_nobody").await.unwrap(), None);

    assert!(store.set_plan("Alice@Example.com", "pro").await.unwrap());
    let after = store.user_by_id(&alice.id).await.unwrap().unwrap();
    assert_eq!(after.plan, "pro");
    assert_eq!(User { plan: "free".into(), ..after }, alice, "set_plan changes only the plan");
    assert!(!store.set_plan("nobody@example.com", "pro").await.unwrap());

    // A second, distinct account is fine; flags round-trip.
    let bob = User {
        id: new_id(USER),
        email: "bob@example.com".into(),
        plan: "free".into(),
        legacy_free: true,
        password_hash: None,
        created_at: T0 + 1,
    };
    store.create_user(&bob).await.unwrap();
    assert_eq!(store.user_by_email("BOB@example.com").await.unwrap(), Some(bob));
}

async fn keys_authenticate_until_revoked_by_their_owner(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let mallory = new_user(store, "mallory@example.com").await;
    let (k1, h1) = new_key(store, &alice, "ci", T0).await;
    let (k2, h2) = new_key(store, &alice, "laptop", T0 + 1000).await;

    let auth = store.authenticate(&h1, MONTH).await.unwrap().expect("live key");
    assert_eq!(auth.user, alice);
    assert_eq!(auth.key_id, k1.id);
    assert_eq!(auth.used, 0);
    assert!(store.authenticate("hash-unknown", MONTH).await.unwrap().is_none());

    // Usage shows up in the month it was spent in, and only there.
    create(store, &job(&alice, Some(&k1.id), T0, Some(100))).await;
    create(store, &job(&alice, Some(&k2.id), T0, Some(100))).await;
    let auth = store.authenticate(&h1, MONTH).await.unwrap().unwrap();
    assert_eq!(auth.used, 2, "usage is the account's, not the key's");
    assert_eq!(store.authenticate(&h1, "2025-07").await.unwrap().unwrap().used, 0);
    assert_eq!(store.key_of(&alice.id, &k1.id).await.unwrap().unwrap().last_used_at, Some(T0));

    // Newest first, with everything but the hash.
    let keys = store.list_keys(&alice.id).await.unwrap();
    assert_eq!(
        keys,
        vec![ApiKeyRow { last_used_at: Some(T0), ..k2.clone() }, ApiKeyRow { last_used_at: Some(T0), ..k1.clone() },]
    );
    assert!(store.list_keys(&mallory.id).await.unwrap().is_empty());
    assert!(store.key_of(&mallory.id, &k1.id).await.unwrap().is_none());

    // A key's use is written at most once a minute, so one key's creates do not all queue on
    // its row.
    create(store, &job(&alice, Some(&k2.id), T0 + 59_999, Some(100))).await;
    assert_eq!(store.key_of(&alice.id, &k2.id).await.unwrap().unwrap().last_used_at, Some(T0));
    create(store, &job(&alice, Some(&k2.id), T0 + 60_000, Some(100))).await;
    assert_eq!(store.key_of(&alice.id, &k2.id).await.unwrap().unwrap().last_used_at, Some(T0 + 60_000));

    // Someone else cannot revoke the key.
    assert!(!store.revoke_key(&k1.id, Some(&mallory.id), T0 + 5).await.unwrap());
    assert!(store.authenticate(&h1, MONTH).await.unwrap().is_some());
    assert_eq!(store.key_of(&alice.id, &k1.id).await.unwrap().unwrap().revoked_at, None);

    // The owner can; the very next authentication fails.
    assert!(store.revoke_key(&k1.id, Some(&alice.id), T0 + 10).await.unwrap());
    assert!(store.authenticate(&h1, MONTH).await.unwrap().is_none());
    assert!(!store.revoke_key(&k1.id, Some(&alice.id), T0 + 11).await.unwrap(), "already revoked");
    assert_eq!(
        store.key_of(&alice.id, &k1.id).await.unwrap().unwrap().revoked_at,
        Some(T0 + 10),
        "a second revoke keeps the first time"
    );

    // The other key is unaffected; an admin revoke (no user) works too.
    assert_eq!(store.authenticate(&h2, MONTH).await.unwrap().unwrap().key_id, k2.id);
    assert!(store.revoke_key(&k2.id, None, T0 + 20).await.unwrap());
    assert!(store.authenticate(&h2, MONTH).await.unwrap().is_none());

    // Revoked keys are still listed.
    let revoked: Vec<_> = store.list_keys(&alice.id).await.unwrap().into_iter().map(|k| (k.id, k.revoked_at)).collect();
    assert_eq!(revoked, vec![(k2.id, Some(T0 + 20)), (k1.id, Some(T0 + 10))]);
}

async fn usage_is_counted_per_key(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let (k1, _) = new_key(store, &alice, "one", T0).await;
    let (k2, _) = new_key(store, &alice, "two", T0).await;
    let (kb, _) = new_key(store, &bob, "bob", T0).await;

    for _ in 0..3 {
        create(store, &job(&alice, Some(&k1.id), T0, None)).await;
    }
    let mut big = job(&alice, Some(&k2.id), T0, None);
    big.actions = 4;
    create(store, &big).await;
    // Jobs without a key (dashboard) count for the account but for no key.
    create(store, &job(&alice, None, T0, None)).await;
    // Another month and another account stay apart.
    let mut july = job(&alice, Some(&k1.id), T0, None);
    july.month = "2025-07".into();
    create(store, &july).await;
    create(store, &job(&bob, Some(&kb.id), T0, None)).await;

    let mut by_key = store.usage_by_key(&alice.id, MONTH).await.unwrap();
    by_key.sort();
    let mut expected = vec![(k1.id.clone(), 3), (k2.id.clone(), 4)];
    expected.sort();
    assert_eq!(by_key, expected);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 8);
    assert_eq!(store.usage_by_key(&alice.id, "2025-07").await.unwrap(), vec![(k1.id, 1)]);
    assert_eq!(store.month_usage(&alice.id, "2025-07").await.unwrap(), 1);
    assert_eq!(store.usage_by_key(&bob.id, MONTH).await.unwrap(), vec![(kb.id, 1)]);
    assert!(store.usage_by_key(&alice.id, "2025-05").await.unwrap().is_empty());
    assert_eq!(store.month_usage(&alice.id, "2025-05").await.unwrap(), 0);
}

async fn quota_admits_exactly_the_limit_under_concurrency(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let (key, hash) = new_key(store, &alice, "ci", T0).await;

    let calls: Vec<_> = (0..20)
        .map(|_| {
            let store = store.clone();
            let n = job(&alice, Some(&key.id), T0, Some(5));
            tokio::spawn(async move { store.create_screenshot(&n).await })
        })
        .collect();
    let mut admitted = Vec::new();
    let mut refused = 0;
    for call in calls {
        match call.await.unwrap().expect("create_screenshot") {
            Ok((row, used)) => {
                assert_eq!(row.status, JobStatus::Pending);
                admitted.push(used);
            }
            Err(Refused::Quota(QuotaExceeded { used })) => {
                assert_eq!(used, 5, "a refusal reports the usage at the cap");
                refused += 1;
            }
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    admitted.sort_unstable();
    assert_eq!(admitted, vec![1, 2, 3, 4, 5], "each admission sees its own reservation");
    assert_eq!(refused, 15);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 5);

    // Refused calls wrote nothing: no job, no task, no ledger entry.
    assert_eq!(store.list_screenshots(&alice.id, None, 100).await.unwrap().len(), 5);
    assert_eq!(store.queue_depth().await.unwrap(), 5);
    assert_eq!(store.usage_by_key(&alice.id, MONTH).await.unwrap(), vec![(key.id.clone(), 5)]);
    assert_eq!(store.count_by_status().await.unwrap(), vec![("pending".to_string(), 5)]);
    let auth = store.authenticate(&hash, MONTH).await.unwrap().unwrap();
    assert_eq!(auth.used, 5);

    // And the next one is refused too.
    let next = store.create_screenshot(&job(&alice, None, T0, Some(5))).await.unwrap();
    assert_eq!(next.unwrap_err(), QuotaExceeded { used: 5 }.into());
}

/// What the account's gate slots have charged from their blocks (PostgreSQL's fast way; 0 on
/// SQLite, whose single writer charges the counter itself).
async fn spent_from_blocks(ctx: &Ctx, user: &User) -> i64 {
    let pool = AnyPool::connect(&ctx.url).await.unwrap();
    let (spent,): (i64,) =
        sqlx::query_as("SELECT CAST(COALESCE(SUM(spent), 0) AS BIGINT) FROM account_slots WHERE user_id = $1")
            .bind(&user.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    spent
}

async fn one_accounts_creates_run_side_by_side_within_exact_bounds(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let (key, hash) = new_key(store, &alice, "ci", T0).await;

    // A cap of 1,000 actions and 150 creates of 10 at once: exactly 100 fit, whichever way
    // each came in (a slot's block, the counter, or every slot near the cap).
    let jobs = (0..150)
        .map(|i| {
            let mut n = job(&alice, Some(&key.id), T0 + i, Some(1000));
            n.actions = 10;
            n
        })
        .collect();
    let (accepted, refused) = create_concurrently(store, jobs).await;
    assert_eq!(accepted.len(), 100);
    assert_eq!(refused, vec![Refused::Quota(QuotaExceeded { used: 1000 }); 50]);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1000);
    assert_eq!(store.authenticate(&hash, MONTH).await.unwrap().unwrap().used, 1000);
    assert_eq!(store.usage_by_key(&alice.id, MONTH).await.unwrap(), vec![(key.id.clone(), 1000)]);
    assert_eq!(store.list_screenshots(&alice.id, None, 200).await.unwrap().len(), 100);
    let pool = AnyPool::connect(&ctx.url).await.unwrap();
    let warned: Vec<(i64,)> =
        sqlx::query_as("SELECT threshold FROM quota_warnings WHERE user_id = $1 AND month = $2 ORDER BY threshold")
            .bind(&alice.id)
            .bind(MONTH)
            .fetch_all(&pool)
            .await
            .unwrap();
    pool.close().await;
    assert_eq!(warned, vec![(80,), (95,)], "each warning once, though creates crossed them side by side");
    let from_blocks = spent_from_blocks(&ctx, &alice).await;
    if matches!(ctx.dbs.backend, common::Backend::Postgres) {
        assert!(from_blocks > 0, "PostgreSQL charged some creates from their slot's block");
    } else {
        assert_eq!(from_blocks, 0);
    }

    // An action given back can be spent again, by exactly one of many.
    let t = store.claim("screenshot", "w1", T0 + 1_000, 60_000).await.unwrap().unwrap();
    assert!(store.fail_screenshot(&t.id, "w1", &t.subject_id, "net::ERR_FAILED", true, T0 + 1_001).await.unwrap());
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 990);
    let jobs = (0..5)
        .map(|i| {
            let mut n = job(&alice, None, T0 + 1_100 + i, Some(1000));
            n.actions = 10;
            n
        })
        .collect();
    let (accepted, refused) = create_concurrently(store, jobs).await;
    assert_eq!((accepted.len(), refused.len()), (1, 4));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1000);

    // A new month: the slots' blocks move to it and what they left unspent goes back to June.
    let july = (0..40)
        .map(|i| {
            let mut n = job(&alice, None, T0 + 2_000 + i, None);
            n.month = "2025-07".into();
            n
        })
        .collect();
    let (accepted, refused) = create_concurrently(store, july).await;
    assert_eq!((accepted.len(), refused.len()), (40, 0));
    assert_eq!(store.month_usage(&alice.id, "2025-07").await.unwrap(), 40);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1000);

    // The account's queue bound, far above the slots' margin: exactly 100 of 150 wait.
    let bob = new_user(store, "bob@example.com").await;
    let limits = QueueLimits { per_account: Some(100), global: None };
    let (accepted, refused) =
        create_concurrently(store, (0..150).map(|i| bounded_job_within(&bob, T0 + i, limits, None)).collect()).await;
    assert_eq!(accepted.len(), 100);
    assert_eq!(
        refused,
        vec![Refused::QueueFull(QueueFull { scope: QueueScope::Account, pending: 100, limit: 100 }); 50]
    );

    // And the global bound over four accounts: exactly 60 of 100.
    let mut users = Vec::new();
    for i in 0..4 {
        users.push(new_user(store, &format!("g{i}@example.com")).await);
    }
    // Waiting already: alice's 100 of June and 40 of July, bob's 100.
    let limits = QueueLimits { per_account: None, global: Some(300) };
    let jobs = (0..100).map(|i| bounded_job_within(&users[i % 4], T0 + i as i64, limits, None)).collect();
    let (accepted, refused) = create_concurrently(store, jobs).await;
    assert_eq!(accepted.len(), 60);
    assert_eq!(
        refused,
        vec![Refused::QueueFull(QueueFull { scope: QueueScope::Global, pending: 300, limit: 300 }); 40]
    );
    assert_eq!(store.queue_depth().await.unwrap(), 300);
}

/// A queued job of `user` under `limits` and a monthly cap of `limit`.
fn bounded_job_within(user: &User, now: i64, limits: QueueLimits, limit: Option<i64>) -> NewScreenshot {
    let mut n = job(user, None, now, limit);
    n.queue_limits = limits;
    n
}

async fn a_job_keeps_the_traceparent_it_was_made_with(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = NewScreenshot { traceparent: Some(tp.into()), ..job(&alice, None, T0, None) };
    let (row, _) = store.create_screenshot(&traced).await.unwrap().unwrap();
    assert_eq!(row.traceparent.as_deref(), Some(tp));
    assert_eq!(store.screenshot(&traced.id).await.unwrap().unwrap().traceparent.as_deref(), Some(tp));
    let plain = job(&alice, None, T0 + 1, None);
    store.create_screenshot(&plain).await.unwrap().unwrap();
    assert_eq!(store.screenshot(&plain.id).await.unwrap().unwrap().traceparent, None);
}

async fn quota_counts_actions_not_jobs(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let mut three = job(&alice, None, T0, Some(5));
    three.actions = 3;
    let (_, used) = store.create_screenshot(&three).await.unwrap().unwrap();
    assert_eq!(used, 3);

    let mut another = job(&alice, None, T0, Some(5));
    another.actions = 3;
    assert_eq!(store.create_screenshot(&another).await.unwrap(), Err(QuotaExceeded { used: 3 }.into()));
    assert_eq!(store.screenshot(&another.id).await.unwrap(), None);

    let mut two = job(&alice, None, T0, Some(5));
    two.actions = 2;
    two.format = "pdf".into();
    let (row, used) = store.create_screenshot(&two).await.unwrap().unwrap();
    assert_eq!(used, 5, "landing exactly on the cap is allowed");
    assert_eq!((row.actions, row.format.as_str()), (2, "pdf"));

    // Another month has its own pool.
    let mut july = job(&alice, None, T0, Some(5));
    july.month = "2025-07".into();
    let (row, used) = store.create_screenshot(&july).await.unwrap().unwrap();
    assert_eq!((used, row.usage_month.as_str()), (1, "2025-07"));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 5);
}

async fn unlimited_plan_is_never_refused(ctx: Ctx) {
    let store = &ctx.store;
    let admin = new_user(store, "admin@example.com").await;
    let calls: Vec<_> = (0..25)
        .map(|_| {
            let store = store.clone();
            let mut n = job(&admin, None, T0, None);
            n.actions = 2;
            tokio::spawn(async move { store.create_screenshot(&n).await })
        })
        .collect();
    for call in calls {
        assert!(call.await.unwrap().unwrap().is_ok(), "limit None never refuses");
    }
    assert_eq!(store.month_usage(&admin.id, MONTH).await.unwrap(), 50);

    // A limit applies to the call that carries it (e.g. after a plan change).
    let capped = store.create_screenshot(&job(&admin, None, T0, Some(10))).await.unwrap();
    assert_eq!(capped, Err(QuotaExceeded { used: 50 }.into()));
    assert!(store.create_screenshot(&job(&admin, None, T0, None)).await.unwrap().is_ok());
    assert_eq!(store.month_usage(&admin.id, MONTH).await.unwrap(), 51);
}

async fn failed_job_refunds_its_actions(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let (key, hash) = new_key(store, &alice, "ci", T0).await;
    let mut jobs = Vec::new();
    for i in 0..5 {
        jobs.push(create(store, &job(&alice, Some(&key.id), T0 + i, Some(5))).await);
    }
    let refused = store.create_screenshot(&job(&alice, Some(&key.id), T0 + 10, Some(5))).await;
    assert_eq!(refused.unwrap(), Err(QuotaExceeded { used: 5 }.into()));

    let task = store.claim("screenshot", "w1", T0 + 20, 60_000).await.unwrap().unwrap();
    assert_eq!(task.subject_id, jobs[0].id, "oldest first");
    assert!(store.mark_processing(&task.subject_id, T0 + 20).await.unwrap());
    assert!(
        store
            .fail_screenshot(&task.id, "w1", &task.subject_id, "net::ERR_NAME_NOT_RESOLVED", true, T0 + 30)
            .await
            .unwrap()
    );

    let failed = job_row(store, &task.subject_id).await;
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("net::ERR_NAME_NOT_RESOLVED"));
    assert_eq!(failed.completed_at, Some(T0 + 30));
    assert_eq!(failed.result_key, None);
    assert_eq!(statuses(store, &task.subject_id).await, ["pending", "processing", "failed"]);
    let (_, _, data) = store.events_after(&task.subject_id, 0).await.unwrap().pop().unwrap();
    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data["error"], "net::ERR_NAME_NOT_RESOLVED");

    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 4, "refunded");
    assert_eq!(store.usage_by_key(&alice.id, MONTH).await.unwrap(), vec![(key.id.clone(), 4)]);

    // Failing again (the task is closed) neither writes nor refunds twice.
    assert!(!store.fail_screenshot(&task.id, "w1", &task.subject_id, "again", true, T0 + 40).await.unwrap());
    assert!(
        !store
            .complete_screenshot(
                &task.id,
                "w1",
                &task.subject_id,
                &done_fields("x"),
                &serde_json::json!({}),
                None,
                T0 + 40
            )
            .await
            .unwrap()
    );
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 4);
    assert_eq!(job_row(store, &task.subject_id).await, failed);

    // The refunded action can be spent again, but only once.
    let (_, used) = store
        .create_screenshot(&job(&alice, Some(&key.id), T0 + 50, Some(5)))
        .await
        .unwrap()
        .expect("accepted after the refund");
    assert_eq!(used, 5);
    let refused = store.create_screenshot(&job(&alice, Some(&key.id), T0 + 60, Some(5))).await;
    assert_eq!(refused.unwrap(), Err(QuotaExceeded { used: 5 }.into()));
    assert_eq!(store.authenticate(&hash, MONTH).await.unwrap().unwrap().used, 5);
}

async fn sealed_credentials_last_until_the_job_ends(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let mut a = job(&alice, None, T0, None);
    a.credentials = Some("sealed-a".into());
    let mut b = job(&alice, None, T0 + 1, None);
    b.credentials = Some("sealed-b".into());
    let (a, b) = (create(store, &a).await, create(store, &b).await);
    assert_eq!(a.credentials.as_deref(), Some("sealed-a"));
    // The worker reads them while the job runs; a handed-back job keeps them for its retry.
    let t1 = store.claim("screenshot", "w1", T0 + 10, 60_000).await.unwrap().unwrap();
    assert_eq!(t1.subject_id, a.id);
    assert_eq!(job_row(store, &a.id).await.credentials.as_deref(), Some("sealed-a"));
    assert!(store.release(&t1.id, "w1", &a.id, T0 + 11).await.unwrap());
    assert_eq!(job_row(store, &a.id).await.credentials.as_deref(), Some("sealed-a"));
    // Done or failed, they are gone.
    let t1 = store.claim("screenshot", "w1", T0 + 20, 60_000).await.unwrap().unwrap();
    assert!(
        store
            .complete_screenshot(&t1.id, "w1", &t1.subject_id, &done_fields("a"), &serde_json::json!({}), None, T0 + 30)
            .await
            .unwrap()
    );
    let t2 = store.claim("screenshot", "w1", T0 + 40, 60_000).await.unwrap().unwrap();
    assert!(store.fail_screenshot(&t2.id, "w1", &t2.subject_id, "boom", true, T0 + 50).await.unwrap());
    let mut ended = [t1.subject_id.clone(), t2.subject_id.clone()];
    ended.sort();
    let mut made = [a.id.clone(), b.id.clone()];
    made.sort();
    assert_eq!(ended, made);
    for (id, status) in [(&t1.subject_id, JobStatus::Done), (&t2.subject_id, JobStatus::Failed)] {
        let row = job_row(store, id).await;
        assert_eq!((row.status, row.credentials), (status, None));
    }
}

async fn the_cache_answers_a_done_job_within_its_ttl_to_its_owner_only(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let mut first = job(&alice, None, T0, Some(10));
    first.cache = Some(("h1".into(), T0 + 60_000));
    let first = create(store, &first).await;
    // Waiting or running: a render link may join it; nothing answers from it yet.
    assert_eq!(store.running_screenshot(&alice.id, "h1").await.unwrap().map(|r| r.id), Some(first.id.clone()));
    assert_eq!(store.cached_screenshot(&alice.id, "h1", T0 + 1).await.unwrap(), None);
    let t = store.claim("screenshot", "w1", T0 + 10, 60_000).await.unwrap().unwrap();
    assert!(
        store
            .complete_screenshot(&t.id, "w1", &first.id, &done_fields("c"), &serde_json::json!({}), None, T0 + 20)
            .await
            .unwrap()
    );
    assert_eq!(store.running_screenshot(&alice.id, "h1").await.unwrap(), None);
    let hit = store.cached_screenshot(&alice.id, "h1", T0 + 30).await.unwrap().expect("a hit");
    assert_eq!((hit.id.as_str(), hit.cache_until), (first.id.as_str(), Some(T0 + 60_000)));
    // Another hash, another account, or past the TTL: no hit.
    assert_eq!(store.cached_screenshot(&alice.id, "h2", T0 + 30).await.unwrap(), None);
    assert_eq!(store.cached_screenshot(&bob.id, "h1", T0 + 30).await.unwrap(), None);
    assert_eq!(store.cached_screenshot(&alice.id, "h1", T0 + 60_000).await.unwrap(), None);
    // A hit is a job of its own, done at once, charging nothing, naming the original.
    let mut copy = job(&alice, None, T0 + 40, Some(10));
    copy.actions = 0;
    copy.cached_from = Some(first.id.clone());
    copy.done = Some(done_fields("c"));
    copy.cache = Some(("h1".into(), T0 + 60_000));
    let (row, used) = store.create_screenshot(&copy).await.unwrap().unwrap();
    assert_eq!((row.status, row.cached_from.as_deref(), used), (JobStatus::Done, Some(first.id.as_str()), 1));
    // The original stays the one that answers.
    assert_eq!(store.cached_screenshot(&alice.id, "h1", T0 + 50).await.unwrap().map(|r| r.id), Some(first.id));
}

async fn render_keys_are_listed_found_and_revoked_by_their_owner(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let key = |id: &str, user: &User, at: i64| capture_store::RenderKey {
        id: id.into(),
        user_id: user.id.clone(),
        name: format!("site {id}"),
        secret_enc: format!("sealed-{id}"),
        created_at: at,
        revoked_at: None,
    };
    for k in [key("rlk_a", &alice, T0), key("rlk_b", &alice, T0 + 1), key("rlk_c", &bob, T0)] {
        store.create_render_key(&k).await.unwrap();
    }
    let ids = |v: Vec<capture_store::RenderKey>| v.into_iter().map(|k| k.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list_render_keys(&alice.id).await.unwrap()), ["rlk_a", "rlk_b"]);
    assert_eq!(store.render_key("rlk_c").await.unwrap().unwrap().user_id, bob.id);
    // Only the owner revokes, once; a revoked key is still found (to say it is revoked).
    assert!(!store.revoke_render_key(&bob.id, "rlk_a", T0 + 5).await.unwrap());
    assert!(store.revoke_render_key(&alice.id, "rlk_a", T0 + 5).await.unwrap());
    assert!(!store.revoke_render_key(&alice.id, "rlk_a", T0 + 6).await.unwrap());
    assert_eq!(ids(store.list_render_keys(&alice.id).await.unwrap()), ["rlk_b"]);
    assert_eq!(store.render_key("rlk_a").await.unwrap().unwrap().revoked_at, Some(T0 + 5));
    assert_eq!(store.render_key("rlk_zzz").await.unwrap(), None);
}

async fn monitors_are_owned_bounded_claimed_once_and_keep_their_baseline(ctx: Ctx) {
    use capture_store::{CheckEvents, CheckOutcome, MonitorCheckRow, MonitorRow};
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let monitor = |id: &str, user: &User, at: i64| MonitorRow {
        id: id.into(),
        user_id: user.id.clone(),
        name: format!("pricing {id}"),
        url: "https://example.com/pricing".into(),
        schedule: r#"{"every":"15m"}"#.into(),
        capture: r#"{"url":"https://example.com/pricing"}"#.into(),
        compare: "both".into(),
        threshold: 0.001,
        ignore_selectors: r##"["#clock"]"##.into(),
        notify: "{}".into(),
        baseline_mode: "auto".into(),
        status: "active".into(),
        baseline_check_id: None,
        next_run_at: Some(at + 900_000),
        failures: 0,
        created_at: at,
        updated_at: at,
    };
    // The plan's bound: two each.
    assert!(store.create_monitor(&monitor("mon_a1", &alice, T0), Some(2)).await.unwrap());
    assert!(store.create_monitor(&monitor("mon_a2", &alice, T0 + 1), Some(2)).await.unwrap());
    assert!(!store.create_monitor(&monitor("mon_a3", &alice, T0 + 2), Some(2)).await.unwrap());
    assert!(store.create_monitor(&monitor("mon_b1", &bob, T0 + 3), Some(2)).await.unwrap());
    // Concurrent creates of one account never pass the bound.
    let tries: Vec<_> = (0..6)
        .map(|i| {
            let store = store.clone();
            let m = monitor(&format!("mon_b{}", i + 2), &bob, T0 + 10 + i);
            tokio::spawn(async move { store.create_monitor(&m, Some(3)).await.unwrap() })
        })
        .collect();
    let mut made = Vec::new();
    for t in tries {
        made.push(t.await.unwrap());
    }
    assert_eq!(made.iter().filter(|m| **m).count(), 2, "{made:?}");
    // Owned: another account sees nothing of it.
    assert_eq!(store.monitor(&bob.id, "mon_a1").await.unwrap(), None);
    assert_eq!(store.monitor(&alice.id, "mon_a1").await.unwrap(), Some(monitor("mon_a1", &alice, T0)));
    let ids = |v: Vec<MonitorRow>| v.into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list_monitors(&alice.id, None, 10).await.unwrap()), vec!["mon_a2", "mon_a1"]);
    assert_eq!(ids(store.list_monitors(&alice.id, Some((T0 + 1, "mon_a2")), 10).await.unwrap()), vec!["mon_a1"]);

    // Due ones, the longest waiting first; one claim per due time, whoever asks.
    let due = T0 + 900_000;
    assert_eq!(ids(store.due_monitors(due, 10).await.unwrap()), vec!["mon_a1"]);
    assert_eq!(ids(store.due_monitors(due + 1, 2).await.unwrap()), vec!["mon_a1", "mon_a2"]);
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.claim_monitor_run("mon_a1", due, due + 900_000).await.unwrap() })
        })
        .collect();
    let mut won = Vec::new();
    for c in claims {
        won.push(c.await.unwrap());
    }
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    assert!(!ids(store.due_monitors(due, 10).await.unwrap()).contains(&"mon_a1".to_string()));
    // Paused: never due, never claimed.
    let mut paused = store.monitor(&alice.id, "mon_a2").await.unwrap().unwrap();
    (paused.status, paused.next_run_at) = ("paused".into(), None);
    assert!(store.update_monitor(&paused).await.unwrap());
    assert!(!store.claim_monitor_run("mon_a2", T0 + 1 + 900_000, due + 900_000).await.unwrap());
    assert!(!ids(store.due_monitors(i64::MAX, 100).await.unwrap()).contains(&"mon_a2".to_string()));
    // Another account cannot change it.
    let mut stolen = paused.clone();
    stolen.user_id = bob.id.clone();
    assert!(!store.update_monitor(&stolen).await.unwrap());

    // Checks: the first good one is the baseline; failures count in a row; a changed one
    // becomes the baseline in auto mode, not in manual mode.
    let check = |id: &str, at: i64| MonitorCheckRow {
        id: id.into(),
        monitor_id: "mon_a1".into(),
        user_id: alice.id.clone(),
        status: "pending".into(),
        screenshot_id: Some(format!("scr_{id}")),
        diff_ratio: None,
        regions: None,
        diff_key: None,
        text_key: None,
        text_diff: None,
        error: None,
        created_at: at,
        completed_at: None,
        image_key: None,
        baseline_key: None,
    };
    let end = |status: &str| CheckOutcome { status: status.into(), ..Default::default() };
    let baseline = |s: &Store| {
        let s = s.clone();
        let id = alice.id.clone();
        async move { s.monitor(&id, "mon_a1").await.unwrap().unwrap().baseline_check_id }
    };
    for (i, c) in ["chk_1", "chk_2", "chk_3", "chk_4", "chk_5"].iter().enumerate() {
        store.insert_monitor_check(&check(c, T0 + i as i64)).await.unwrap();
    }
    // Their captures are gone (never made here): all five are ready to end, oldest first.
    let ready = store.monitor_checks_ready(10).await.unwrap();
    assert_eq!(
        ready.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        vec!["chk_1", "chk_2", "chk_3", "chk_4", "chk_5"]
    );
    assert!(store.monitor_check_pending("mon_a1").await.unwrap());
    assert_eq!(
        store.monitor_check_of_screenshot(&alice.id, "scr_chk_2").await.unwrap().map(|c| c.id),
        Some("chk_2".into())
    );
    assert_eq!(store.monitor_check_of_screenshot(&bob.id, "scr_chk_2").await.unwrap(), None);
    assert_eq!(
        store.complete_monitor_check("chk_1", &end("baseline"), T0 + 10, &Default::default()).await.unwrap(),
        Some(0)
    );
    assert_eq!(baseline(store).await.as_deref(), Some("chk_1"));
    let failed =
        CheckOutcome { status: "failed".into(), error: Some("blocked: cloudflare".into()), ..Default::default() };
    assert_eq!(store.complete_monitor_check("chk_2", &failed, T0 + 11, &Default::default()).await.unwrap(), Some(1));
    assert_eq!(store.complete_monitor_check("chk_3", &failed, T0 + 12, &Default::default()).await.unwrap(), Some(2));
    // A check that ended already records and emits nothing, whatever it is told.
    let events = CheckEvents {
        user_id: Some(alice.id.clone()),
        changed: None,
        failing: Some((3, serde_json::json!({"monitorId": "mon_a1"}))),
    };
    assert_eq!(
        store.complete_monitor_check("chk_3", &end("unchanged"), T0 + 13, &events).await.unwrap(),
        None,
        "ended once"
    );
    assert_eq!(baseline(store).await.as_deref(), Some("chk_1"), "a failure is never the baseline");
    let changed = CheckOutcome {
        status: "changed".into(),
        diff_ratio: Some(0.02),
        regions: Some(r#"[{"x":0,"y":0,"w":16,"h":16}]"#.into()),
        ..Default::default()
    };
    assert_eq!(store.complete_monitor_check("chk_4", &changed, T0 + 14, &Default::default()).await.unwrap(), Some(0));
    assert_eq!(baseline(store).await.as_deref(), Some("chk_4"));
    let mut manual = store.monitor(&alice.id, "mon_a1").await.unwrap().unwrap();
    manual.baseline_mode = "manual".into();
    assert!(store.update_monitor(&manual).await.unwrap());
    store.complete_monitor_check("chk_5", &changed, T0 + 15, &Default::default()).await.unwrap();
    assert_eq!(baseline(store).await.as_deref(), Some("chk_4"), "manual: kept");
    let c4 = store.monitor_check(&alice.id, "chk_4").await.unwrap().unwrap();
    assert_eq!((c4.status.as_str(), c4.diff_ratio, c4.completed_at), ("changed", Some(0.02), Some(T0 + 14)));
    assert_eq!(store.monitor_check(&bob.id, "chk_4").await.unwrap(), None);
    // Accepting a check: a good one of this monitor, by its owner only.
    assert!(!store.set_monitor_baseline(&alice.id, "mon_a1", "chk_2", T0 + 20).await.unwrap(), "failed");
    assert!(!store.set_monitor_baseline(&bob.id, "mon_a1", "chk_5", T0 + 20).await.unwrap(), "not bob's");
    assert!(!store.set_monitor_baseline(&alice.id, "mon_a2", "chk_5", T0 + 20).await.unwrap(), "another monitor's");
    assert!(store.set_monitor_baseline(&alice.id, "mon_a1", "chk_5", T0 + 20).await.unwrap());
    assert_eq!(baseline(store).await.as_deref(), Some("chk_5"));
    let history = store.monitor_checks(&alice.id, "mon_a1", None, 3).await.unwrap();
    assert_eq!(history.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec!["chk_5", "chk_4", "chk_3"]);
    let rest = store.monitor_checks(&alice.id, "mon_a1", Some((T0 + 2, "chk_3")), 3).await.unwrap();
    assert_eq!(rest.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec!["chk_2", "chk_1"]);
    assert!(store.monitor_checks(&bob.id, "mon_a1", None, 10).await.unwrap().is_empty());
    // The newest check of each monitor of a page, in one query: only the asker's monitors.
    let bobs = MonitorCheckRow { monitor_id: "mon_b1".into(), user_id: bob.id.clone(), ..check("chk_b1", T0 + 16) };
    store.insert_monitor_check(&bobs).await.unwrap();
    let newest = |user: &User, ids: &'static [&'static str]| {
        let (s, user) = (store.clone(), user.id.clone());
        async move {
            let mut got: Vec<(String, String)> =
                s.latest_monitor_checks(&user, ids).await.unwrap().into_iter().map(|(m, c)| (m, c.id)).collect();
            got.sort();
            got
        }
    };
    assert_eq!(
        newest(&alice, &["mon_a1", "mon_a2", "mon_b1"]).await,
        vec![("mon_a1".to_string(), "chk_5".to_string())]
    );
    assert_eq!(newest(&bob, &["mon_a1", "mon_b1"]).await, vec![("mon_b1".to_string(), "chk_b1".to_string())]);
    assert_eq!(newest(&alice, &[]).await, vec![]);

    // Deleted: by its owner only, with its checks; a late completion records nothing.
    assert!(!store.delete_monitor(&bob.id, "mon_a1").await.unwrap());
    store.insert_monitor_check(&check("chk_6", T0 + 30)).await.unwrap();
    assert!(store.delete_monitor(&alice.id, "mon_a1").await.unwrap());
    assert_eq!(store.monitor(&alice.id, "mon_a1").await.unwrap(), None);
    assert_eq!(
        store.complete_monitor_check("chk_6", &end("unchanged"), T0 + 31, &Default::default()).await.unwrap(),
        None
    );
    assert!(store.monitor_checks(&alice.id, "mon_a1", None, 10).await.unwrap().is_empty());
}

async fn storage_destinations_belong_to_their_owner_and_jobs_keep_where_their_copy_went(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let dest = |id: &str, user: &User, at: i64| capture_store::StorageDestination {
        id: id.into(),
        user_id: user.id.clone(),
        name: format!("bucket {id}"),
        url: format!("s3://bucket-{id}/shots"),
        endpoint: Some("http://127.0.0.1:9000".into()),
        region: "eu-west-1".into(),
        access_key_id_enc: format!("sealed-id-{id}"),
        secret_access_key_enc: format!("sealed-secret-{id}"),
        created_at: at,
    };
    for d in [dest("sd_a", &alice, T0), dest("sd_b", &alice, T0 + 1), dest("sd_c", &bob, T0)] {
        store.create_storage_destination(&d).await.unwrap();
    }
    let ids = |v: Vec<capture_store::StorageDestination>| v.into_iter().map(|d| d.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list_storage_destinations(&alice.id).await.unwrap()), ["sd_a", "sd_b"]);
    assert_eq!(store.storage_destination(&alice.id, "sd_a").await.unwrap(), Some(dest("sd_a", &alice, T0)));
    // Another account's is not found, nor deleted.
    assert_eq!(store.storage_destination(&alice.id, "sd_c").await.unwrap(), None);
    assert!(!store.delete_storage_destination(&alice.id, "sd_c").await.unwrap());
    assert!(store.delete_storage_destination(&alice.id, "sd_a").await.unwrap());
    assert!(!store.delete_storage_destination(&alice.id, "sd_a").await.unwrap());
    assert_eq!(ids(store.list_storage_destinations(&alice.id).await.unwrap()), ["sd_b"]);
    assert_eq!(ids(store.list_storage_destinations(&bob.id).await.unwrap()), ["sd_c"]);

    // A finished job keeps where its copy went, or why it did not.
    let a = create(store, &job(&alice, None, T0, None)).await;
    let t = store.claim("screenshot", "w1", T0 + 10, 60_000).await.unwrap().unwrap();
    assert_eq!(t.subject_id, a.id);
    let done = ScreenshotDone {
        storage_url: Some("s3://bucket-sd_b/shots/x.png".into()),
        storage_error: None,
        ..done_fields("s")
    };
    assert!(store.complete_screenshot(&t.id, "w1", &a.id, &done, &serde_json::json!({}), None, T0 + 20).await.unwrap());
    let row = job_row(store, &a.id).await;
    assert_eq!((row.storage_url.as_deref(), row.storage_error), (Some("s3://bucket-sd_b/shots/x.png"), None));
    let b = create(store, &job(&alice, None, T0 + 30, None)).await;
    let t = store.claim("screenshot", "w1", T0 + 40, 60_000).await.unwrap().unwrap();
    let done = ScreenshotDone { storage_error: Some("the bucket does not exist".into()), ..done_fields("t") };
    assert!(store.complete_screenshot(&t.id, "w1", &b.id, &done, &serde_json::json!({}), None, T0 + 50).await.unwrap());
    let row = job_row(store, &b.id).await;
    assert_eq!((row.storage_url, row.storage_error.as_deref()), (None, Some("the bucket does not exist")));
    // The copy as a task of its own: the job is done at once with its copy pending; a failed
    // attempt waits in the queue; the end is recorded once, fenced on the lease.
    let c = create(store, &job(&alice, None, T0 + 60, None)).await;
    let t = store.claim("screenshot", "w1", T0 + 70, 60_000).await.unwrap().unwrap();
    let payload = r#"{"destination":"sd_b"}"#;
    assert!(
        store
            .complete_screenshot(&t.id, "w1", &c.id, &done_fields("u"), &serde_json::json!({}), Some(payload), T0 + 80)
            .await
            .unwrap()
    );
    let row = job_row(store, &c.id).await;
    assert_eq!((row.status, row.storage_status.as_deref(), row.storage_url), (JobStatus::Done, Some("pending"), None));
    let copy = store.claim("storage_copy", "c1", T0 + 90, 60_000).await.unwrap().unwrap();
    assert_eq!(
        (copy.subject_id.as_str(), copy.payload.as_str(), copy.account_id.as_deref()),
        (c.id.as_str(), payload, Some(alice.id.as_str()))
    );
    assert!(store.copy_again(&copy.id, "c1", T0 + 2_000, "timed out").await.unwrap());
    assert_eq!(store.claim("storage_copy", "c1", T0 + 1_000, 60_000).await.unwrap(), None, "not before its time");
    let copy = store.claim("storage_copy", "c2", T0 + 2_000, 60_000).await.unwrap().unwrap();
    assert_eq!(copy.attempts, 2);
    let event = serde_json::json!({"screenshotId": c.id, "storageUrl": "s3://b/u.png"});
    assert!(!store.copy_ended(&copy.id, "c1", &c.id, Some("s3://b/u.png"), None, &event, T0 + 2_100).await.unwrap());
    assert!(store.copy_ended(&copy.id, "c2", &c.id, Some("s3://b/u.png"), None, &event, T0 + 2_100).await.unwrap());
    let row = job_row(store, &c.id).await;
    assert_eq!((row.storage_status.as_deref(), row.storage_url.as_deref()), (Some("stored"), Some("s3://b/u.png")));
    assert!(!store.copy_ended(&copy.id, "c2", &c.id, None, Some("late"), &event, T0 + 2_200).await.unwrap());
    assert_eq!(job_row(store, &c.id).await.storage_error, None);
}

async fn proxies_belong_to_their_owner_and_are_found_by_id_or_name(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let proxy = |id: &str, user: &User, name: &str, at: i64| capture_store::ProxyRow {
        id: id.into(),
        user_id: user.id.clone(),
        name: name.into(),
        members_enc: format!("sealed-{id}"),
        members_shown: r#"[{"url":"http://p.example:3128","authenticated":true}]"#.into(),
        rotation: "single".into(),
        created_at: at,
        updated_at: at,
    };
    store.create_proxy(&proxy("prx_a", &alice, "office", T0)).await.unwrap();
    store.create_proxy(&proxy("prx_b", &alice, "eu", T0 + 1)).await.unwrap();
    // Names are unique per account, not across accounts.
    store.create_proxy(&proxy("prx_c", &bob, "office", T0)).await.unwrap();
    match store.create_proxy(&proxy("prx_d", &alice, "office", T0 + 2)).await {
        Err(StoreError::Conflict(m)) => assert_eq!(m, "a proxy named 'office' exists already"),
        other => panic!("{other:?}"),
    }
    let names = |v: Vec<capture_store::ProxyRow>| v.into_iter().map(|p| p.name).collect::<Vec<_>>();
    assert_eq!(names(store.list_proxies(&alice.id).await.unwrap()), ["office", "eu"]);
    assert_eq!(store.find_proxy(&alice.id, "prx_a").await.unwrap().map(|p| p.name), Some("office".into()));
    assert_eq!(store.find_proxy(&alice.id, "office").await.unwrap().map(|p| p.id), Some("prx_a".into()));
    assert_eq!(store.find_proxy(&bob.id, "office").await.unwrap().map(|p| p.id), Some("prx_c".into()));
    assert_eq!(store.find_proxy(&bob.id, "prx_a").await.unwrap(), None);
    // An update is the owner's, keeps names unique, and replaces what it names.
    let mut b = proxy("prx_b", &alice, "office", T0 + 3);
    assert!(matches!(store.update_proxy(&b).await, Err(StoreError::Conflict(_))));
    b.name = "eu-pool".into();
    b.rotation = "sticky".into();
    b.members_enc = "sealed-new".into();
    assert!(store.update_proxy(&b).await.unwrap());
    // The creation time stays.
    let kept = capture_store::ProxyRow { created_at: T0 + 1, ..b.clone() };
    assert_eq!(store.find_proxy(&alice.id, "prx_b").await.unwrap(), Some(kept));
    let stolen = capture_store::ProxyRow { user_id: bob.id.clone(), name: "mine".into(), ..b.clone() };
    assert!(!store.update_proxy(&stolen).await.unwrap());
    // Turns count per proxy, for its owner only, and none is taken twice when many ask at once.
    assert_eq!(store.take_proxy_turn(&alice.id, "prx_b").await.unwrap(), Some(0));
    assert_eq!(store.take_proxy_turn(&alice.id, "prx_b").await.unwrap(), Some(1));
    assert_eq!(store.take_proxy_turn(&bob.id, "prx_b").await.unwrap(), None);
    assert_eq!(store.take_proxy_turn(&bob.id, "prx_c").await.unwrap(), Some(0));
    let mut many = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (s, a) = (store.clone(), alice.id.clone());
        many.spawn(async move { s.take_proxy_turn(&a, "prx_b").await.unwrap().unwrap() });
    }
    let mut turns = many.join_all().await;
    turns.sort_unstable();
    assert_eq!(turns, (2..22).collect::<Vec<i64>>());
    assert!(!store.delete_proxy(&bob.id, "prx_a").await.unwrap());
    assert!(store.delete_proxy(&alice.id, "prx_a").await.unwrap());
    assert_eq!(store.find_proxy(&alice.id, "prx_a").await.unwrap(), None);
    assert_eq!(names(store.list_proxies(&alice.id).await.unwrap()), ["eu-pool"]);
}

async fn profiles_belong_to_their_owner_and_are_found_by_id_or_name(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let profile = |id: &str, user: &User, name: &str, at: i64| capture_store::ProfileRow {
        id: id.into(),
        user_id: user.id.clone(),
        name: name.into(),
        state_enc: None,
        summary: "{}".into(),
        saved_from: None,
        saved_at: None,
        expired_at: None,
        expired_by: None,
        last_used_at: None,
        created_at: at,
        updated_at: at,
    };
    store.create_profile(&profile("prf_a", &alice, "shop", T0)).await.unwrap();
    store.create_profile(&profile("prf_b", &alice, "admin", T0 + 1)).await.unwrap();
    // Names are unique per account, not across accounts.
    store.create_profile(&profile("prf_c", &bob, "shop", T0)).await.unwrap();
    match store.create_profile(&profile("prf_d", &alice, "shop", T0 + 2)).await {
        Err(StoreError::Conflict(m)) => assert_eq!(m, "a profile named 'shop' exists already"),
        other => panic!("{other:?}"),
    }
    let names = |v: Vec<capture_store::ProfileRow>| v.into_iter().map(|p| p.name).collect::<Vec<_>>();
    assert_eq!(names(store.list_profiles(&alice.id).await.unwrap()), ["shop", "admin"]);
    // By id or by name, the owner's only.
    assert_eq!(store.find_profile(&alice.id, "prf_a").await.unwrap().map(|p| p.name), Some("shop".into()));
    assert_eq!(store.find_profile(&alice.id, "shop").await.unwrap().map(|p| p.id), Some("prf_a".into()));
    assert_eq!(store.find_profile(&bob.id, "shop").await.unwrap().map(|p| p.id), Some("prf_c".into()));
    assert_eq!(store.find_profile(&bob.id, "prf_a").await.unwrap(), None);
    // Renaming keeps names unique; another's cannot be renamed.
    assert!(matches!(store.rename_profile(&alice.id, "prf_b", "shop", T0 + 3).await, Err(StoreError::Conflict(_))));
    assert!(!store.rename_profile(&bob.id, "prf_b", "mine", T0 + 3).await.unwrap());
    assert!(store.rename_profile(&alice.id, "prf_b", "back-office", T0 + 3).await.unwrap());
    // Saving a state; a job marks it expired only when the state is older than the job.
    assert!(!store.save_profile_state(&bob.id, "prf_a", "sealed-x", "{}", "import", T0 + 4).await.unwrap());
    assert!(
        store.save_profile_state(&alice.id, "prf_a", "sealed-1", r#"{"cookies":2}"#, "login", T0 + 10).await.unwrap()
    );
    store.profile_expired("prf_a", "scr_old", T0 + 5, T0 + 20).await.unwrap();
    assert_eq!(
        store.find_profile(&alice.id, "prf_a").await.unwrap().unwrap().expired_at,
        None,
        "a job older than the state"
    );
    store.profile_expired("prf_a", "scr_new", T0 + 15, T0 + 20).await.unwrap();
    let p = store.find_profile(&alice.id, "prf_a").await.unwrap().unwrap();
    assert_eq!(
        (p.state_enc.as_deref(), p.saved_from.as_deref(), p.expired_at, p.expired_by.as_deref()),
        (Some("sealed-1"), Some("login"), Some(T0 + 20), Some("scr_new"))
    );
    // A new save clears it; use is recorded at most once a minute.
    assert!(store.save_profile_state(&alice.id, "prf_a", "sealed-2", "{}", "run_x", T0 + 30).await.unwrap());
    store.profile_used("prf_a", T0 + 40).await.unwrap();
    store.profile_used("prf_a", T0 + 50).await.unwrap();
    let p = store.profile_by_id("prf_a").await.unwrap().unwrap();
    assert_eq!((p.expired_at, p.state_enc.as_deref(), p.last_used_at), (None, Some("sealed-2"), Some(T0 + 40)));
    // Deleting: the owner's only, once.
    assert!(!store.delete_profile(&bob.id, "prf_a").await.unwrap());
    assert!(store.delete_profile(&alice.id, "prf_a").await.unwrap());
    assert!(!store.delete_profile(&alice.id, "prf_a").await.unwrap());
    assert_eq!(store.profile_by_id("prf_a").await.unwrap(), None);
    assert_eq!(names(store.list_profiles(&alice.id).await.unwrap()), ["back-office"]);
}

async fn a_batch_is_all_or_nothing_and_completes_once(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    subscribe_everything(store, &alice).await;
    let batch = |id: &str, n: i64, limit: Option<i64>| -> Vec<NewScreenshot> {
        (0..n)
            .map(|i| {
                let mut j = job(&alice, None, T0 + i, limit);
                j.batch = Some((id.to_string(), i));
                j
            })
            .collect()
    };
    // Over the cap: refused whole, saying how many would fit; nothing written.
    create(store, &job(&alice, None, T0, Some(5))).await;
    let refused = store.create_screenshot_batch("bat_a", &batch("bat_a", 5, Some(5)), None).await.unwrap();
    assert_eq!(refused, Err(capture_store::BatchRefused::Quota { used: 1, fits: 4 }));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1);
    assert_eq!(store.batch_screenshots(&alice.id, "bat_a").await.unwrap(), vec![]);
    assert_eq!(store.queue_depth().await.unwrap(), 1);
    // Over the account's queue bound, for all of them at once.
    let mut bounded = batch("bat_q", 3, Some(100));
    for j in &mut bounded {
        j.queue_limits = QueueLimits { per_account: Some(3), global: None };
    }
    match store.create_screenshot_batch("bat_q", &bounded, None).await.unwrap() {
        Err(capture_store::BatchRefused::Queue(q)) => assert_eq!((q.pending, q.limit), (1, 3)),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1);
    // Within both: every job, in order, charged once each.
    let (rows, used) =
        store.create_screenshot_batch("bat_b", &batch("bat_b", 3, Some(100)), None).await.unwrap().unwrap();
    assert_eq!(used, 4);
    assert_eq!(rows.iter().map(|r| r.batch_index).collect::<Vec<_>>(), [Some(0), Some(1), Some(2)]);
    let listed = store.batch_screenshots(&alice.id, "bat_b").await.unwrap();
    assert_eq!(listed.iter().map(|r| &r.id).collect::<Vec<_>>(), rows.iter().map(|r| &r.id).collect::<Vec<_>>());
    assert_eq!(store.batch_screenshots(&bob.id, "bat_b").await.unwrap(), vec![]);
    // batch.completed once, when the last of its jobs ends (done or failed).
    let completed = |store: &Store| {
        let store = store.clone();
        let user = alice.id.clone();
        async move {
            let eps = store.list_endpoints(&user).await.unwrap();
            let ds = store.list_deliveries(&user, &eps[0].id, 100).await.unwrap();
            ds.into_iter().filter(|d| d.event_type == "batch.completed").collect::<Vec<_>>()
        }
    };
    let mut ended = 0;
    while let Some(t) = store.claim("screenshot", "w1", T0 + 100 + ended, 60_000).await.unwrap() {
        if !t.subject_id.starts_with("scr_") || !rows.iter().any(|r| r.id == t.subject_id) {
            assert!(
                store.fail_screenshot(&t.id, "w1", &t.subject_id, "not in the batch", true, T0 + 100).await.unwrap()
            );
            continue;
        }
        assert!(completed(store).await.is_empty(), "not before the last job ends");
        if ended == 1 {
            assert!(store.fail_screenshot(&t.id, "w1", &t.subject_id, "boom", true, T0 + 200).await.unwrap());
        } else {
            assert!(
                store
                    .complete_screenshot(
                        &t.id,
                        "w1",
                        &t.subject_id,
                        &done_fields("b"),
                        &serde_json::json!({}),
                        None,
                        T0 + 200
                    )
                    .await
                    .unwrap()
            );
        }
        ended += 1;
    }
    assert_eq!(ended, 3);
    let events = completed(store).await;
    assert_eq!(events.len(), 1);
    let job = store.delivery_job(&events[0].id).await.unwrap().unwrap();
    let payload: serde_json::Value = serde_json::from_str(&job.payload).unwrap();
    assert_eq!(payload["data"], serde_json::json!({"batchId": "bat_b", "total": 3, "done": 2, "failed": 1}));
}

async fn uploads_are_created_done_without_a_task(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let mut upload = job(&alice, None, T0, Some(10));
    upload.done = Some(done_fields("upload"));
    let (row, used) = store.create_screenshot(&upload).await.unwrap().unwrap();
    assert_eq!(used, 1);
    assert_eq!(row.status, JobStatus::Done);
    assert_eq!(row.result_key.as_deref(), Some("results/upload.png"));
    assert_eq!(row.thumb_key.as_deref(), Some("thumbs/upload.webp"));
    assert_eq!(row.page_title.as_deref(), Some("Title upload"));
    assert_eq!(row.tags, ["news", "upload"]);
    assert_eq!((row.width, row.height), (Some(1280), Some(720)));
    assert_eq!((row.created_at, row.completed_at), (T0, Some(T0)));
    assert_eq!(row.metadata.as_deref(), Some(r#"{"title":"Title upload"}"#));
    assert_eq!(store.queue_depth().await.unwrap(), 0);
    assert!(store.claim("screenshot", "w1", T0 + 1, 1000).await.unwrap().is_none());
    assert_eq!(statuses(store, &row.id).await, ["done"]);

    let queued = create(store, &job(&alice, None, T0, Some(10))).await;
    assert_eq!(queued.tags, Vec::<String>::new());
    assert_eq!((queued.result_key, queued.completed_at), (None, None));
    let mut counts = store.count_by_status().await.unwrap();
    counts.sort();
    assert_eq!(counts, vec![("done".to_string(), 1), ("pending".to_string(), 1)]);
}

async fn listing_walks_every_job_once_newest_first(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;

    // 25 jobs in groups of four sharing a created_at; bob's jobs interleave at the same times.
    let mut mine = HashSet::new();
    for i in 0..25 {
        let at = T0 + (i / 4) * 1000;
        mine.insert(create(store, &job(&alice, None, at, None)).await.id);
        if i % 3 == 0 {
            create(store, &job(&bob, None, at, None)).await;
        }
    }

    let all = store.list_screenshots(&alice.id, None, 100).await.unwrap();
    assert_eq!(all.len(), 25);

    let mut walked: Vec<ScreenshotRow> = Vec::new();
    let mut before = None;
    let mut pages = Vec::new();
    loop {
        let page = store.list_screenshots(&alice.id, before.clone(), 7).await.unwrap();
        pages.push(page.len());
        let Some(last) = page.last() else { break };
        before = Some((last.created_at, Some(last.id.clone())));
        walked.extend(page);
        assert!(pages.len() <= 10, "the cursor does not advance");
    }
    assert_eq!(pages, [7, 7, 7, 4, 0]);
    let ids: Vec<&str> = walked.iter().map(|r| r.id.as_str()).collect();
    let unique: HashSet<String> = ids.iter().map(|s| s.to_string()).collect();
    assert_eq!(ids.len(), 25);
    assert_eq!(unique, mine, "every job exactly once, and only alice's");
    assert!(walked.iter().all(|r| r.user_id == alice.id));
    assert!(
        walked.windows(2).all(|w| (w[0].created_at, &w[0].id) > (w[1].created_at, &w[1].id)),
        "newest first, ties broken by id, strictly decreasing"
    );
    assert_eq!(walked, all, "pages concatenate to the unpaginated listing");

    // A plain timestamp returns only strictly older jobs, newest first.
    let ts = T0 + 3000; // the fourth group (jobs 12..16)
    let older = store.list_screenshots(&alice.id, Some((ts, None)), 100).await.unwrap();
    assert_eq!(older.len(), 12);
    assert!(older.iter().all(|r| r.created_at < ts && r.user_id == alice.id));
    assert_eq!(older[..], all[13..], "the tail of the full listing");
    assert!(store.list_screenshots(&alice.id, Some((T0, None)), 100).await.unwrap().is_empty());

    // A cursor in the middle of a group continues inside the group.
    let mid = &all[5];
    let rest = store.list_screenshots(&alice.id, Some((mid.created_at, Some(mid.id.clone()))), 100).await.unwrap();
    assert_eq!(rest[..], all[6..]);

    // Bob sees only his own.
    let bobs = store.list_screenshots(&bob.id, None, 100).await.unwrap();
    assert_eq!(bobs.len(), 9);
    assert!(bobs.iter().all(|r| r.user_id == bob.id && !mine.contains(&r.id)));
}

async fn claim_takes_the_oldest_due_task(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let first = job(&alice, None, T0, None);
    let second = job(&alice, None, T0 + 10, None);
    let third = job(&alice, None, T0 + 20, None);
    // Created out of order: the queue orders by due time, not insertion.
    create(store, &third).await;
    create(store, &first).await;
    create(store, &second).await;
    assert_eq!(store.queue_depth().await.unwrap(), 3);

    assert!(store.claim("webhook", "w1", T0 + 100, 1000).await.unwrap().is_none(), "other kind");
    assert!(store.claim("screenshot", "w1", T0 - 1, 1000).await.unwrap().is_none(), "nothing due yet");

    let task = store.claim("screenshot", "w1", T0 + 5, 1000).await.unwrap().expect("a due task");
    assert_eq!(task.kind, "screenshot");
    assert_eq!(task.subject_id, first.id);
    assert_eq!(task.payload, first.task_payload);
    assert_eq!(task.attempts, 1);
    assert_eq!(store.queue_depth().await.unwrap(), 2, "the claimed task is running");

    // The claimed task is leased and the others are not due yet at T0 + 5.
    assert!(store.claim("screenshot", "w2", T0 + 5, 1000).await.unwrap().is_none());

    let next = store.claim("screenshot", "w2", T0 + 15, 1000).await.unwrap().unwrap();
    assert_eq!((next.subject_id.as_str(), next.attempts), (second.id.as_str(), 1));
    let last = store.claim("screenshot", "w3", T0 + 25, 1000).await.unwrap().unwrap();
    assert_eq!(last.subject_id, third.id);
    assert_ne!(task.id, next.id);
    assert!(store.claim("screenshot", "w4", T0 + 30, 1000).await.unwrap().is_none());
    assert_eq!(store.queue_depth().await.unwrap(), 0);
}

async fn expired_lease_moves_task_to_another_worker_and_fences_the_first(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let job_id = create(store, &job(&alice, None, T0, Some(10))).await.id;

    let t1 = store.claim("screenshot", "w1", T0, 1000).await.unwrap().unwrap();
    assert_eq!((t1.subject_id.as_str(), t1.attempts), (job_id.as_str(), 1));
    assert!(store.mark_processing(&job_id, T0 + 1).await.unwrap());
    let processing = job_row(store, &job_id).await;
    assert_eq!((processing.status.as_str(), processing.started_at), ("processing", Some(T0 + 1)));

    // While the lease is live nobody else gets the task (the lease ends at T0 + 1000).
    assert!(store.claim("screenshot", "w2", T0 + 500, 1000).await.unwrap().is_none());
    assert!(store.claim("screenshot", "w2", T0 + 1000, 1000).await.unwrap().is_none());
    assert!(!store.extend_lease(&t1.id, "w2", T0 + 5000).await.unwrap(), "not w2's lease");
    assert!(store.extend_lease(&t1.id, "w1", T0 + 2000).await.unwrap());
    assert!(store.claim("screenshot", "w2", T0 + 1500, 1000).await.unwrap().is_none(), "extended");

    // w1 stalls; its lease runs out and w2 takes the task over.
    let t2 = store.claim("screenshot", "w2", T0 + 2001, 1000).await.unwrap().expect("expired lease");
    assert_eq!(t2.id, t1.id);
    assert_eq!(t2.attempts, 2);
    assert!(!store.mark_processing(&job_id, T0 + 2001).await.unwrap(), "already processing");
    assert!(!store.extend_lease(&t1.id, "w1", T0 + 9000).await.unwrap(), "w1 lost the lease");

    // w1's late result is fenced off and writes nothing.
    assert!(
        !store
            .complete_screenshot(&t1.id, "w1", &job_id, &done_fields("stale"), &serde_json::json!({}), None, T0 + 2100)
            .await
            .unwrap()
    );
    assert!(!store.fail_screenshot(&t1.id, "w1", &job_id, "stale", true, T0 + 2100).await.unwrap());
    assert!(!store.release(&t1.id, "w1", &job_id, T0 + 2100).await.unwrap());
    assert_eq!(job_row(store, &job_id).await, processing);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1, "no refund");

    // w2's result lands.
    assert!(
        store
            .complete_screenshot(&t2.id, "w2", &job_id, &done_fields("fresh"), &serde_json::json!({}), None, T0 + 2500)
            .await
            .unwrap()
    );
    let done = job_row(store, &job_id).await;
    assert_eq!(done.status, JobStatus::Done);
    assert_eq!(done.result_key.as_deref(), Some("results/fresh.png"));
    assert_eq!(done.thumb_key.as_deref(), Some("thumbs/fresh.webp"));
    assert_eq!(done.page_title.as_deref(), Some("Title fresh"));
    assert_eq!(done.tags, ["news", "fresh"]);
    assert_eq!((done.width, done.height), (Some(1280), Some(720)));
    assert_eq!(done.error, None);
    assert_eq!(done.metadata.as_deref(), Some(r#"{"title":"Title fresh"}"#));
    assert_eq!((done.started_at, done.completed_at), (Some(T0 + 1), Some(T0 + 2500)));

    // Done is final: the task is closed and cannot be claimed or completed again.
    assert!(
        !store
            .complete_screenshot(&t2.id, "w2", &job_id, &done_fields("again"), &serde_json::json!({}), None, T0 + 2600)
            .await
            .unwrap()
    );
    assert!(store.claim("screenshot", "w3", T0 + 100_000, 1000).await.unwrap().is_none());
    assert_eq!(job_row(store, &job_id).await, done);

    // The event log tells the story once, in order; `after` skips what was seen.
    assert_eq!(statuses(store, &job_id).await, ["pending", "processing", "done"]);
    let events = store.events_after(&job_id, 0).await.unwrap();
    assert!(events.windows(2).all(|w| w[0].0 < w[1].0));
    let tail = store.events_after(&job_id, events[0].0).await.unwrap();
    assert_eq!(tail, events[1..]);
    assert!(store.events_after(&job_id, events[2].0).await.unwrap().is_empty());
    assert!(store.events_after("scr_other", 0).await.unwrap().is_empty());
}

async fn release_requeues_without_counting_an_attempt(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let job_id = create(store, &job(&alice, None, T0, Some(10))).await.id;

    let t1 = store.claim("screenshot", "w1", T0, 60_000).await.unwrap().unwrap();
    assert_eq!(t1.attempts, 1);
    assert!(store.mark_processing(&job_id, T0 + 1).await.unwrap());
    assert_eq!(store.queue_depth().await.unwrap(), 0);

    assert!(!store.release(&t1.id, "w2", &job_id, T0 + 10).await.unwrap(), "not w2's task");
    assert!(store.release(&t1.id, "w1", &job_id, T0 + 10).await.unwrap());
    assert!(!store.release(&t1.id, "w1", &job_id, T0 + 11).await.unwrap(), "no longer held");

    let pending = job_row(store, &job_id).await;
    assert_eq!((pending.status.as_str(), pending.started_at), ("pending", None));
    assert_eq!(store.queue_depth().await.unwrap(), 1);
    assert!(!store.extend_lease(&t1.id, "w1", T0 + 99_000).await.unwrap());
    assert!(
        !store
            .complete_screenshot(&t1.id, "w1", &job_id, &done_fields("x"), &serde_json::json!({}), None, T0 + 12)
            .await
            .unwrap()
    );

    // Claimable right away (long before the old lease would have run out), attempts unchanged.
    let t2 = store.claim("screenshot", "w2", T0 + 20, 60_000).await.unwrap().unwrap();
    assert_eq!((t2.id.as_str(), t2.attempts), (t1.id.as_str(), 1));
    assert!(store.mark_processing(&job_id, T0 + 21).await.unwrap());
    assert!(
        store
            .complete_screenshot(&t2.id, "w2", &job_id, &done_fields("y"), &serde_json::json!({}), None, T0 + 30)
            .await
            .unwrap()
    );
    assert_eq!(job_row(store, &job_id).await.status, JobStatus::Done);
    assert_eq!(statuses(store, &job_id).await, ["pending", "processing", "pending", "processing", "done"]);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1);
}

async fn concurrent_workers_never_share_a_task(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let mut subjects = HashSet::new();
    for i in 0..30 {
        subjects.insert(create(store, &job(&alice, None, T0 + i, None)).await.id);
    }

    let now = T0 + 1000;
    let workers: Vec<_> = (0..10)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let worker = format!("w{w}");
                let mut got = Vec::new();
                while let Some(task) = store.claim("screenshot", &worker, now, 60_000).await.unwrap() {
                    got.push(task);
                }
                (worker, got)
            })
        })
        .collect();

    // task id -> (worker, job id)
    let mut owner: HashMap<String, (String, String)> = HashMap::new();
    for w in workers {
        let (worker, got) = w.await.unwrap();
        for task in got {
            assert_eq!(task.attempts, 1, "{} claimed more than once", task.id);
            if let Some((first, _)) = owner.insert(task.id.clone(), (worker.clone(), task.subject_id)) {
                panic!("task {} claimed by both {first} and {worker}", task.id);
            }
        }
    }
    assert_eq!(owner.len(), 30, "every task claimed exactly once");
    let claimed_subjects: HashSet<String> = owner.values().map(|(_, s)| s.clone()).collect();
    assert_eq!(claimed_subjects, subjects, "one task per job");
    assert!(store.claim("screenshot", "late", now + 59_999, 60_000).await.unwrap().is_none());
    assert_eq!(store.queue_depth().await.unwrap(), 0);

    // Each holder can complete its own task and nobody else can, concurrently.
    let completions: Vec<_> = owner
        .into_iter()
        .map(|(task_id, (worker, job_id))| {
            let store = store.clone();
            tokio::spawn(async move {
                let other = if worker == "w0" { "w1" } else { "w0" };
                let done = done_fields("c");
                let stolen = store
                    .complete_screenshot(&task_id, other, &job_id, &done, &serde_json::json!({}), None, now + 10)
                    .await
                    .unwrap();
                let own = store
                    .complete_screenshot(&task_id, &worker, &job_id, &done, &serde_json::json!({}), None, now + 10)
                    .await
                    .unwrap();
                (stolen, own)
            })
        })
        .collect();
    for c in completions {
        assert_eq!(c.await.unwrap(), (false, true));
    }
    assert_eq!(store.count_by_status().await.unwrap(), vec![("done".to_string(), 30)]);
}

/// How long a request owns an idempotency key before another may take it over.
const LEASE: i64 = 30_000;

/// The claim of an `Owned` outcome (panics otherwise).
fn owned(b: IdemBegin) -> IdemClaim {
    match b {
        IdemBegin::Owned(c) => c,
        other => panic!("expected to own the key, got {other:?}"),
    }
}

fn is_owned(b: &IdemBegin) -> bool {
    matches!(b, IdemBegin::Owned(_))
}

async fn idempotency_owns_replays_and_expires_keys(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let route = "POST /v1/screenshots";
    let ttl = DAY_MS;

    let begin = |user: &str, route: &str, key: &str, hash: &str, now: i64| {
        let (store, user, route, key, hash) =
            (store.clone(), user.to_string(), route.to_string(), key.to_string(), hash.to_string());
        async move { store.idem_begin(&user, &route, &key, &hash, now, ttl, LEASE).await.unwrap() }
    };

    let k1 = owned(begin(&alice.id, route, "k1", "h1", T0).await);
    assert_eq!(begin(&alice.id, route, "k1", "h1", T0 + 1).await, IdemBegin::InFlight);
    assert_eq!(begin(&alice.id, route, "k1", "h2", T0 + 1).await, IdemBegin::Mismatch);
    // Keys are scoped by user and route.
    let bob_k1 = owned(begin(&bob.id, route, "k1", "h2", T0 + 1).await);
    assert!(is_owned(&begin(&alice.id, "POST /v1/pdf", "k1", "h2", T0 + 1).await));

    let body = r#"{"id":"scr_123","status":"pending"}"#;
    assert!(store.idem_complete(&k1, 202, body).await.unwrap());
    assert_eq!(begin(&alice.id, route, "k1", "h1", T0 + 2).await, IdemBegin::Replay(202, body.into()));
    assert_eq!(begin(&alice.id, route, "k1", "h2", T0 + 2).await, IdemBegin::Mismatch);
    // Aborting or completing a completed key does nothing.
    store.idem_abort(&k1).await.unwrap();
    assert!(!store.idem_complete(&k1, 500, "{}").await.unwrap());
    assert_eq!(
        begin(&alice.id, route, "k1", "h1", T0 + ttl - 1).await,
        IdemBegin::Replay(202, body.into()),
        "still inside the TTL"
    );
    // Bob's key is his own, still in flight within its lease.
    assert_eq!(begin(&bob.id, route, "k1", "h2", T0 + 3).await, IdemBegin::InFlight);
    drop(bob_k1);

    // After the TTL the key is fresh again, whatever the body.
    let k1b = owned(begin(&alice.id, route, "k1", "h3", T0 + ttl).await);
    assert_eq!(begin(&alice.id, route, "k1", "h3", T0 + ttl + 1).await, IdemBegin::InFlight);
    assert!(store.idem_complete(&k1b, 400, "{}").await.unwrap());
    assert_eq!(begin(&alice.id, route, "k1", "h3", T0 + ttl + 2).await, IdemBegin::Replay(400, "{}".into()));
    // An abandoned in-flight key expires too.
    assert!(is_owned(&begin(&bob.id, route, "k1", "h9", T0 + ttl + 1).await));
}

async fn idempotency_admits_one_owner_under_concurrency(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let calls: Vec<_> = (0..12)
        .map(|i| {
            let store = store.clone();
            let user = alice.id.clone();
            tokio::spawn(async move {
                store.idem_begin(&user, "POST /v1/screenshots", "same-key", "h1", T0 + i, DAY_MS, LEASE).await.unwrap()
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for c in calls {
        outcomes.push(c.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| is_owned(o)).count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| **o == IdemBegin::InFlight).count(), 11, "{outcomes:?}");

    // Past the lease, many takers at once: one takes the abandoned key over.
    let takers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let user = alice.id.clone();
            tokio::spawn(async move {
                store
                    .idem_begin(&user, "POST /v1/screenshots", "same-key", "h1", T0 + LEASE + 20 + i, DAY_MS, LEASE)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for c in takers {
        outcomes.push(c.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| is_owned(o)).count(), 1, "{outcomes:?}");
}

async fn idempotency_abort_and_purge_forget_keys(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let route = "POST /v1/screenshots";
    let begin = |key: &str, hash: &str, now: i64| {
        let (store, user, key, hash) = (store.clone(), alice.id.clone(), key.to_string(), hash.to_string());
        async move { store.idem_begin(&user, route, &key, &hash, now, DAY_MS, LEASE).await.unwrap() }
    };

    // Abort lets a retry (even with another body) own the key.
    let retry = owned(begin("retry", "h1", T0).await);
    store.idem_abort(&retry).await.unwrap();
    let retry2 = owned(begin("retry", "h2", T0 + 1).await);
    assert_eq!(begin("retry", "h2", T0 + 2).await, IdemBegin::InFlight);
    // A stale claim (the first owner's) cannot release the new owner's key.
    store.idem_abort(&retry).await.unwrap();
    assert_eq!(begin("retry", "h2", T0 + 3).await, IdemBegin::InFlight);
    drop(retry2);

    // Purge deletes records created before the cutoff, done or not.
    let old_done = owned(begin("old-done", "h", T0 - 2 * DAY_MS).await);
    assert!(store.idem_complete(&old_done, 200, "{}").await.unwrap());
    assert!(is_owned(&begin("old-open", "h", T0 - 2 * DAY_MS + 5).await));
    let recent = owned(begin("recent", "h", T0 - 1000).await);
    assert!(store.idem_complete(&recent, 201, "{\"ok\":true}").await.unwrap());

    assert_eq!(store.idem_purge(T0 - DAY_MS).await.unwrap(), 2);
    assert_eq!(store.idem_purge(T0 - DAY_MS).await.unwrap(), 0);
    // Purged keys are fresh (a huge TTL shows they are gone, not merely expired).
    let fresh = store.idem_begin(&alice.id, route, "old-done", "other", T0, 10 * DAY_MS, LEASE).await.unwrap();
    assert!(is_owned(&fresh));
    assert_eq!(begin("recent", "h", T0).await, IdemBegin::Replay(201, "{\"ok\":true}".into()));
    assert_eq!(begin("retry", "h2", T0 + 4).await, IdemBegin::InFlight, "newer than the cutoff");
}

async fn abandoned_in_flight_keys_are_taken_over_after_their_lease(ctx: Ctx) {
    // A client that disconnected while its process died left the key in flight: the next
    // request with the key waits out the lease, then owns it; the old owner is fenced.
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let route = "POST /v1/screenshot";
    let first = owned(store.idem_begin(&alice.id, route, "k", "h", T0, DAY_MS, LEASE).await.unwrap());
    assert_eq!(
        store.idem_begin(&alice.id, route, "k", "h", T0 + LEASE - 1, DAY_MS, LEASE).await.unwrap(),
        IdemBegin::InFlight
    );
    let second = owned(store.idem_begin(&alice.id, route, "k", "h", T0 + LEASE, DAY_MS, LEASE).await.unwrap());
    assert_ne!(first.owner, second.owner);
    assert_eq!(
        store.idem_begin(&alice.id, route, "k", "h", T0 + LEASE + 1, DAY_MS, LEASE).await.unwrap(),
        IdemBegin::InFlight
    );
    // The first owner comes back late: its response is not stored.
    assert!(!store.idem_complete(&first, 202, "{\"late\":true}").await.unwrap());
    // A create under the stale claim writes nothing at all.
    let render = |r: &ScreenshotRow| (202u16, format!("{{\"id\":\"{}\"}}", r.id));
    let stale = store
        .create_screenshot_with(
            &job(&alice, None, T0 + LEASE + 2, Some(10)),
            Some(IdemResponse { claim: &first, render: &render }),
        )
        .await
        .unwrap();
    assert_eq!(stale, Err(Refused::IdempotencyTakenOver));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 0, "nothing charged");
    assert_eq!(store.queue_depth().await.unwrap(), 0, "nothing queued");
    // The new owner's create stores its response in the same transaction as the job.
    let (row, used) = store
        .create_screenshot_with(
            &job(&alice, None, T0 + LEASE + 3, Some(10)),
            Some(IdemResponse { claim: &second, render: &render }),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(used, 1);
    assert_eq!(
        store.idem_begin(&alice.id, route, "k", "h", T0 + LEASE + 4, DAY_MS, LEASE).await.unwrap(),
        IdemBegin::Replay(202, format!("{{\"id\":\"{}\"}}", row.id))
    );
    // Legacy records (no lease stored) count their lease from their creation.
    sqlx::any::install_default_drivers();
    let raw = AnyPool::connect(&ctx.url).await.unwrap();
    sqlx::query("INSERT INTO idempotency_keys (user_id, route, idem_key, request_hash, state, created_at) VALUES ($1, $2, 'legacy', 'h', 'in_flight', $3)")
        .bind(&alice.id)
        .bind(route)
        .bind(T0)
        .execute(&raw)
        .await
        .unwrap();
    raw.close().await;
    assert_eq!(
        store.idem_begin(&alice.id, route, "legacy", "h", T0 + 1, DAY_MS, LEASE).await.unwrap(),
        IdemBegin::InFlight
    );
    assert!(is_owned(&store.idem_begin(&alice.id, route, "legacy", "h", T0 + LEASE, DAY_MS, LEASE).await.unwrap()));
}

async fn share_tokens_are_stable_and_owner_only(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let mallory = new_user(store, "mallory@example.com").await;
    let id = create(store, &job(&alice, None, T0, None)).await.id;
    let other = create(store, &job(&alice, None, T0, None)).await.id;

    assert_eq!(store.screenshot_by_share("tok-1").await.unwrap(), None);
    assert_eq!(store.share(&alice.id, &id, "tok-1").await.unwrap().as_deref(), Some("tok-1"));
    assert_eq!(
        store.share(&alice.id, &id, "tok-2").await.unwrap().as_deref(),
        Some("tok-1"),
        "sharing again keeps the token in force"
    );
    let shared = store.screenshot_by_share("tok-1").await.unwrap().expect("shared job");
    assert_eq!((shared.id.as_str(), shared.share_token.as_deref()), (id.as_str(), Some("tok-1")));
    assert_eq!(store.screenshot_by_share("tok-2").await.unwrap(), None);

    // Someone else can neither share, read the token through share, nor unshare.
    assert_eq!(store.share(&mallory.id, &other, "tok-m").await.unwrap(), None);
    assert_eq!(store.share(&mallory.id, &id, "tok-m").await.unwrap(), None);
    assert!(!store.unshare(&mallory.id, &id).await.unwrap());
    assert_eq!(job_row(store, &other).await.share_token, None);
    assert_eq!(store.screenshot_by_share("tok-m").await.unwrap(), None);
    assert_eq!(store.screenshot_by_share("tok-1").await.unwrap().unwrap().id, id);
    assert!(!store.unshare(&alice.id, "scr_missing").await.unwrap());

    assert!(store.unshare(&alice.id, &id).await.unwrap());
    assert_eq!(store.screenshot_by_share("tok-1").await.unwrap(), None);
    assert_eq!(job_row(store, &id).await.share_token, None);

    // A fresh share after unsharing takes the new token.
    assert_eq!(store.share(&alice.id, &id, "tok-3").await.unwrap().as_deref(), Some("tok-3"));
    assert_eq!(store.screenshot_by_share("tok-3").await.unwrap().unwrap().id, id);
}

async fn screenshot_of_hides_other_users_jobs(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let row = create(store, &job(&alice, None, T0, None)).await;

    assert_eq!(store.screenshot_of(&alice.id, &row.id).await.unwrap(), Some(row.clone()));
    assert_eq!(store.screenshot_of(&bob.id, &row.id).await.unwrap(), None);
    assert_eq!(store.screenshot_of(&alice.id, "scr_missing").await.unwrap(), None);
    assert_eq!(store.screenshot(&row.id).await.unwrap(), Some(row.clone()));
    assert_eq!(row.user_id, alice.id);
    assert_eq!(row.url, "https://example.com/");
    assert_eq!(row.options, r#"{"full_page":false}"#);
    assert_eq!((row.format.as_str(), row.actions, row.usage_month.as_str()), ("png", 1, MONTH));
    assert_eq!((row.key_id, row.share_token, row.error), (None, None, None));
}

// ---------------------------------------------------------------------------------------
// Coordination between nodes (PostgreSQL LISTEN/NOTIFY and the leader lock)
// ---------------------------------------------------------------------------------------

/// The next wake-up, failing the test after 10 s.
async fn next_wakeup(l: &mut Listener) -> Wakeup {
    tokio::time::timeout(Duration::from_secs(10), l.recv()).await.expect("a notification within 10 s")
}

/// Assert that nothing arrives for `ms`.
async fn no_wakeup(l: &mut Listener, ms: u64, why: &str) {
    if let Ok(w) = tokio::time::timeout(Duration::from_millis(ms), l.recv()).await {
        panic!("{why}: got {w:?}");
    }
}

/// The pid of the backend waiting for a row lock while running `UPDATE api_keys …` (the
/// last statement of `create_screenshot` with a key, after its task and event are written).
async fn blocked_key_update(observer: &mut PgConnection) -> i32 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let pid: Option<(i32,)> = sqlx::query_as(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND query LIKE 'UPDATE api_keys%'",
        )
        .fetch_optional(&mut *observer)
        .await
        .unwrap();
        if let Some((pid,)) = pid {
            return pid;
        }
        assert!(tokio::time::Instant::now() < deadline, "create_screenshot never waited on the key row");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Open a transaction on `locker` that holds key `key_id`'s row.
async fn hold_key_row(locker: &mut PgConnection, key_id: &str) {
    locker.execute("BEGIN").await.unwrap();
    sqlx::query("SELECT id FROM api_keys WHERE id = $1 FOR NO KEY UPDATE")
        .bind(key_id)
        .fetch_one(&mut *locker)
        .await
        .unwrap();
}

/// What `create_screenshot` answers.
type Created = Result<Result<(ScreenshotRow, i64), Refused>, StoreError>;

/// `create_screenshot(n)` in a task of its own.
fn spawn_create(store: &Store, n: &NewScreenshot) -> tokio::task::JoinHandle<Created> {
    let (store, n) = (store.clone(), n.clone());
    tokio::spawn(async move { store.create_screenshot(&n).await })
}

async fn key_lookups_are_cacheable_while_every_change_is_heard(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let (key, _) = new_key(store, &alice, "laptop", T0).await;
    let Some(mut listener) = store.listener() else {
        // SQLite: always cacheable; this process's and the admin CLI's changes move it.
        let v = store.auth_version().expect("cacheable on SQLite");
        assert!(store.revoke_key(&key.id, None, T0 + 1).await.unwrap());
        assert_ne!(store.auth_version(), Some(v));
        return;
    };
    // PostgreSQL: nothing is cached until the listener hears every change.
    assert_eq!(store.auth_version(), None);
    listener.connect().await.expect("LISTEN");
    let v = store.auth_version().expect("cacheable while listening");
    // Another node's change (its own connection) moves the version once it is heard.
    let other = Store::connect(&ctx.url, 2).await.unwrap();
    assert!(other.set_plan("alice@example.com", "pro").await.unwrap());
    no_wakeup(&mut listener, 300, "an auth change is not a wake-up").await;
    let heard = store.auth_version().expect("still listening");
    assert_ne!(heard, v, "the plan change was heard");
    assert!(other.revoke_key(&key.id, None, T0 + 1).await.unwrap());
    no_wakeup(&mut listener, 300, "an auth change is not a wake-up").await;
    assert_ne!(store.auth_version(), Some(heard), "the revocation was heard");
    // A change that changes nothing sends nothing.
    let still = store.auth_version();
    assert!(!other.revoke_key(&key.id, None, T0 + 2).await.unwrap());
    no_wakeup(&mut listener, 300, "nothing changed").await;
    assert_eq!(store.auth_version(), still);
    // Without its listener the node trusts no cached lookup.
    drop(listener);
    assert_eq!(store.auth_version(), None);
    other.close().await;
}

async fn notifications_reach_listeners_when_changes_commit_and_never_on_rollback(ctx: Ctx) {
    let store = &ctx.store;
    let Some(mut listener) = store.listener() else {
        // SQLite is one node: nothing to listen to, workers and streams poll.
        assert!(ctx.url.starts_with("sqlite:"));
        return;
    };
    listener.connect().await.expect("LISTEN");
    let alice = new_user(store, "alice@example.com").await;
    let (key, _) = new_key(store, &alice, "laptop", T0).await;

    // A created job wakes idle workers of its kind, then streams following it.
    let first = create(store, &job(&alice, None, T0, Some(10))).await;
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Work("screenshot".into()));
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Job(first.id.clone()));

    // Not before commit: hold the key's row so create_screenshot stops at its key update,
    // after pg_notify ran for its task and its event.
    let mut locker = PgConnection::connect(&ctx.url).await.unwrap();
    let mut observer = PgConnection::connect(&ctx.url).await.unwrap();
    hold_key_row(&mut locker, &key.id).await;
    let second = job(&alice, Some(&key.id), T0 + 1, Some(10));
    let creating = spawn_create(store, &second);
    blocked_key_update(&mut observer).await;
    no_wakeup(&mut listener, 300, "notified before the transaction committed").await;
    locker.execute("COMMIT").await.unwrap();
    creating.await.unwrap().expect("create_screenshot").expect("within quota");
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Work("screenshot".into()));
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Job(second.id.clone()));

    // Never on rollback: the same, but the blocked statement is cancelled.
    hold_key_row(&mut locker, &key.id).await;
    // A minute later, since a key's use is written at most once a minute.
    let third = job(&alice, Some(&key.id), T0 + 60_001, Some(10));
    let creating = spawn_create(store, &third);
    let pid = blocked_key_update(&mut observer).await;
    sqlx::query("SELECT pg_cancel_backend($1)").bind(pid).execute(&mut observer).await.unwrap();
    assert!(creating.await.unwrap().is_err(), "the cancelled statement fails the create");
    locker.execute("ROLLBACK").await.unwrap();
    no_wakeup(&mut listener, 500, "notified for a rolled-back transaction").await;
    assert_eq!(store.screenshot(&third.id).await.unwrap(), None);

    // A job handed back to the queue wakes workers again; the listener is still in order.
    let task = store.claim("screenshot", "w1", T0 + 3, 60_000).await.unwrap().unwrap();
    assert!(store.mark_processing(&task.subject_id, T0 + 4).await.unwrap());
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Job(task.subject_id.clone()));
    assert!(store.release(&task.id, "w1", &task.subject_id, T0 + 5).await.unwrap());
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Work("screenshot".into()));
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Job(task.subject_id.clone()));

    // The listener's session dies: it reconnects, says so (notifications may have been
    // missed meanwhile), and hears the next change.
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = 'capture listener'",
    )
    .execute(&mut observer)
    .await
    .unwrap();
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Resync);
    let fourth = create(store, &job(&alice, None, T0 + 6, Some(10))).await;
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Work("screenshot".into()));
    assert_eq!(next_wakeup(&mut listener).await, Wakeup::Job(fourth.id.clone()));
    let _ = locker.close().await;
    let _ = observer.close().await;
}

async fn one_process_leads_at_a_time_and_another_takes_over(ctx: Ctx) {
    let store = &ctx.store;
    let mut a = store.leader_lock(SCHEDULER_LOCK);
    let mut b = store.leader_lock(SCHEDULER_LOCK);
    if ctx.url.starts_with("sqlite:") {
        // One node: the process always leads and never loses it.
        assert!(a.try_acquire().await.unwrap());
        assert!(b.try_acquire().await.unwrap());
        assert!(tokio::time::timeout(Duration::from_millis(100), a.lost(Duration::from_millis(10))).await.is_err());
        return;
    }
    assert!(a.try_acquire().await.unwrap());
    assert!(!b.try_acquire().await.unwrap(), "a holds it");
    assert!(a.try_acquire().await.unwrap(), "asking again keeps it");
    assert!(!b.try_acquire().await.unwrap());
    // Another key is another lock.
    let mut other = store.leader_lock(SCHEDULER_LOCK + 1);
    assert!(other.try_acquire().await.unwrap());
    other.release().await;

    // Released (shutdown): the next one takes over.
    a.release().await;
    assert!(!a.is_held());
    assert!(b.try_acquire().await.unwrap());
    assert!(!a.try_acquire().await.unwrap(), "b holds it now");

    // The leader's session dies: it notices, and the lock is free for the others.
    let mut admin = PgConnection::connect(&ctx.url).await.unwrap();
    let (holder,): (i32,) = sqlx::query_as(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    sqlx::query("SELECT pg_terminate_backend($1)").bind(holder).execute(&mut admin).await.unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(10), b.lost(Duration::from_millis(50))).await;
    assert!(lost.is_ok(), "the leader noticed its lost session");
    assert!(!b.is_held());
    assert!(a.try_acquire().await.unwrap(), "a takes over");
    assert!(!b.try_acquire().await.unwrap(), "b reconnects as a follower");
    a.release().await;
    b.release().await;
    let _ = admin.close().await;
}

/// Run `jobs` as concurrent creates; returns the accepted rows and the refusals.
async fn create_concurrently(store: &Store, jobs: Vec<NewScreenshot>) -> (Vec<ScreenshotRow>, Vec<Refused>) {
    let calls: Vec<_> = jobs.iter().map(|n| spawn_create(store, n)).collect();
    let (mut accepted, mut refused) = (Vec::new(), Vec::new());
    for call in calls {
        match call.await.unwrap().expect("create_screenshot") {
            Ok((row, _)) => accepted.push(row),
            Err(r) => refused.push(r),
        }
    }
    (accepted, refused)
}

/// A queued job of `user` under `limits`, within a monthly cap of 100.
fn bounded_job(user: &User, now: i64, limits: QueueLimits) -> NewScreenshot {
    let mut n = job(user, None, now, Some(100));
    n.queue_limits = limits;
    n
}

async fn account_queue_bound_admits_exactly_the_limit_under_concurrency(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let limits = QueueLimits { per_account: Some(5), global: None };
    let full = Refused::QueueFull(QueueFull { scope: QueueScope::Account, pending: 5, limit: 5 });

    let (accepted, refused) =
        create_concurrently(store, (0..20).map(|i| bounded_job(&alice, T0 + i, limits)).collect()).await;
    assert_eq!(accepted.len(), 5);
    assert_eq!(refused, vec![full; 15]);
    // Refusals wrote nothing: no action used, no job, no task.
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 5);
    assert_eq!(store.list_screenshots(&alice.id, None, 100).await.unwrap().len(), 5);
    assert_eq!(store.queue_depth().await.unwrap(), 5);
    assert_eq!(store.tasks_by_status().await.unwrap(), vec![("screenshot".to_string(), "queued".to_string(), 5)]);

    // Each account has its own bound (bob's job is due later than every claim below).
    create(store, &bounded_job(&bob, T0 + 10_000, limits)).await;

    // A job in capture still takes its place; a finished one frees it.
    let t = store.claim("screenshot", "w1", T0 + 100, 60_000).await.unwrap().unwrap();
    assert!(store.mark_processing(&t.subject_id, T0 + 100).await.unwrap());
    assert_eq!(store.create_screenshot(&bounded_job(&alice, T0 + 101, limits)).await.unwrap().unwrap_err(), full);
    let done = &done_fields("a");
    assert!(
        store
            .complete_screenshot(&t.id, "w1", &t.subject_id, done, &serde_json::json!({}), None, T0 + 200)
            .await
            .unwrap()
    );
    create(store, &bounded_job(&alice, T0 + 201, limits)).await;
    assert_eq!(store.create_screenshot(&bounded_job(&alice, T0 + 202, limits)).await.unwrap().unwrap_err(), full);

    // So does a failed one.
    let t = store.claim("screenshot", "w1", T0 + 300, 60_000).await.unwrap().unwrap();
    assert!(store.fail_screenshot(&t.id, "w1", &t.subject_id, "net::ERR_FAILED", true, T0 + 301).await.unwrap());
    create(store, &bounded_job(&alice, T0 + 302, limits)).await;
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 6, "5 + 1 done + 1 new - 1 refunded");

    // Uploads are done at once: never bounded.
    let mut upload = bounded_job(&alice, T0 + 400, limits);
    upload.done = Some(done_fields("upload"));
    create(store, &upload).await;

    // An account out of actions learns that first.
    let mut broke = bounded_job(&alice, T0 + 500, limits);
    broke.limit = Some(7);
    assert_eq!(store.create_screenshot(&broke).await.unwrap().unwrap_err(), QuotaExceeded { used: 7 }.into());

    // Creates that straddle a month boundary reserve in different monthly counters, yet
    // the account's bound still holds.
    let carol = new_user(store, "carol@example.com").await;
    let straddling = (0..20)
        .map(|i| {
            let mut n = bounded_job(&carol, T0 + 20_000 + i, limits);
            if i % 2 == 1 {
                n.month = "2025-07".into();
            }
            n
        })
        .collect();
    let (accepted, refused) = create_concurrently(store, straddling).await;
    assert_eq!((accepted.len(), refused), (5, vec![full; 15]));
}

async fn global_queue_bound_admits_exactly_the_limit_under_concurrency(ctx: Ctx) {
    let store = &ctx.store;
    let mut users = Vec::new();
    for i in 0..4 {
        users.push(new_user(store, &format!("user{i}@example.com")).await);
    }
    let limits = QueueLimits { per_account: Some(100), global: Some(7) };
    let full = Refused::QueueFull(QueueFull { scope: QueueScope::Global, pending: 7, limit: 7 });

    let jobs = (0..20).map(|i| bounded_job(&users[i % 4], T0 + i as i64, limits)).collect();
    let (accepted, refused) = create_concurrently(store, jobs).await;
    assert_eq!(accepted.len(), 7);
    assert_eq!(refused, vec![full; 13]);
    let mut used = 0;
    for u in &users {
        used += store.month_usage(&u.id, MONTH).await.unwrap();
    }
    assert_eq!(used, 7, "refused jobs used no action");
    assert_eq!(store.count_by_status().await.unwrap(), vec![("pending".to_string(), 7)]);
    assert_eq!(store.queue_depth().await.unwrap(), 7);

    // The global bound alone (no per-account bound) holds too, and a finished job frees a place.
    let global_only = QueueLimits { per_account: None, global: Some(7) };
    assert_eq!(
        store.create_screenshot(&bounded_job(&users[0], T0 + 50, global_only)).await.unwrap().unwrap_err(),
        full
    );
    let t = store.claim("screenshot", "w1", T0 + 100, 60_000).await.unwrap().unwrap();
    let done = &done_fields("g");
    assert!(
        store
            .complete_screenshot(&t.id, "w1", &t.subject_id, done, &serde_json::json!({}), None, T0 + 101)
            .await
            .unwrap()
    );
    let (accepted, refused) =
        create_concurrently(store, (0..6).map(|i| bounded_job(&users[i % 4], T0 + 200, global_only)).collect()).await;
    assert_eq!((accepted.len(), refused), (1, vec![full; 5]));
}

async fn a_job_that_ran_into_its_own_deadline_keeps_its_charge(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let j = create(store, &job(&alice, None, T0, Some(5))).await;
    let task = store.claim("screenshot", "w1", T0 + 1, 60_000).await.unwrap().unwrap();
    assert_eq!(task.subject_id, j.id);
    assert!(store.fail_screenshot(&task.id, "w1", &j.id, "capture exceeded 33000 ms", false, T0 + 2).await.unwrap());
    let failed = job_row(store, &j.id).await;
    assert_eq!((failed.status.as_str(), failed.error.as_deref()), ("failed", Some("capture exceeded 33000 ms")));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1, "charged");
    // The failure is still reported like any other.
    assert_eq!(statuses(store, &j.id).await, ["pending", "failed"]);
}

fn share(free: i64, pro: i64) -> FairShare {
    FairShare { per_plan: vec![("free".into(), free), ("pro".into(), pro)], default: Some(free) }
}

async fn new_user_on(store: &Store, email: &str, plan: &str) -> User {
    let mut u = new_user(store, email).await;
    store.set_plan(&u.email, plan).await.expect("set plan");
    u.plan = plan.to_string();
    u
}

async fn fair_claims_serve_the_least_busy_account_within_its_cap(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await; // free: 2 at once
    let bob = new_user(store, "bob@example.com").await;
    let carol = new_user_on(store, "carol@example.com", "pro").await; // pro: 3 at once
    let mut alices = Vec::new();
    for i in 0..6 {
        alices.push(create(store, &job(&alice, None, T0 + i, None)).await.id);
    }
    let b = create(store, &job(&bob, None, T0 + 10, None)).await.id;
    let c = create(store, &job(&carol, None, T0 + 11, None)).await.id;
    let kinds = ["screenshot"];
    let fs = share(2, 3);
    let now = T0 + 100;
    let claim = |w: &'static str| {
        let store = store.clone();
        let fs = fs.clone();
        async move { store.claim_fair(&kinds, w, now, 60_000, &fs).await.unwrap().map(|t| (t.id, t.subject_id)) }
    };
    let (t1, s1) = claim("w1").await.unwrap();
    assert_eq!(s1, alices[0], "oldest first when nobody runs anything");
    assert_eq!(claim("w2").await.unwrap().1, b, "bob runs nothing yet: he goes before alice's second");
    assert_eq!(claim("w3").await.unwrap().1, c);
    assert_eq!(claim("w4").await.unwrap().1, alices[1]);
    assert_eq!(claim("w5").await, None, "alice is at her cap of 2; nobody else waits");
    // A plain claim (no fair share) ignores the cap, as webhooks do.
    // An account's task that ends frees its place.
    assert!(
        store.complete_screenshot(&t1, "w1", &s1, &done_fields("a"), &serde_json::json!({}), None, now).await.unwrap()
    );
    assert_eq!(claim("w6").await.unwrap().1, alices[2]);
    assert_eq!(claim("w7").await, None);
    // A running task whose lease expired no longer counts, and is itself claimable again.
    let later = now + 60_001;
    let again = store.claim_fair(&kinds, "w8", later, 60_000, &fs).await.unwrap().unwrap();
    assert!(alices[1..3].contains(&again.subject_id), "an expired alice task is claimed again");
    assert_eq!(again.attempts, 2);
    // Without a cap every waiting task is claimable.
    let open = FairShare::default();
    let mut rest = 0;
    while store.claim_fair(&kinds, "w9", later, 60_000, &open).await.unwrap().is_some() {
        rest += 1;
    }
    assert_eq!(rest, 6, "alice's three never claimed, her other expired one, and bob's and carol's (expired too)");
    assert_eq!(store.claim_fair(&["webhook"], "w", later, 1, &fs).await.unwrap(), None, "other kinds are apart");
}

async fn waiting_accounts_name_who_has_work_due_and_claims_name_the_account(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    create(store, &job(&alice, None, T0, None)).await;
    create(store, &job(&alice, None, T0 + 1, None)).await;
    create(store, &job(&bob, None, T0 + 500, None)).await;
    let waiting = |now: i64| {
        let store = store.clone();
        async move {
            let mut w = store.waiting_accounts("screenshot", now, 250).await.unwrap();
            w.sort();
            w
        }
    };
    // Bob's task has waited 100 ms only at T0 + 600.
    assert_eq!(waiting(T0 + 600).await, vec![Some(alice.id.clone())]);
    let mut both = vec![Some(alice.id.clone()), Some(bob.id.clone())];
    both.sort();
    assert_eq!(waiting(T0 + 800).await, both);
    assert_eq!(store.waiting_accounts("webhook", T0 + 800, 250).await.unwrap(), Vec::<Option<String>>::new());
    // A claimed task names its account; running tasks wait no more.
    let fs = FairShare::default();
    let first = store.claim_fair(&["screenshot"], "w1", T0 + 800, 60_000, &fs).await.unwrap().unwrap();
    assert_eq!(first.account_id.as_deref(), Some(alice.id.as_str()));
    let second = store.claim_fair(&["screenshot"], "w2", T0 + 800, 60_000, &fs).await.unwrap().unwrap();
    assert_eq!(second.account_id.as_deref(), Some(bob.id.as_str()), "bob runs nothing: he goes next");
    assert_eq!(waiting(T0 + 800).await, vec![Some(alice.id.clone())]);
    let third = store.claim("screenshot", "w3", T0 + 800, 60_000).await.unwrap().unwrap();
    assert_eq!(third.account_id.as_deref(), Some(alice.id.as_str()));
    assert_eq!(waiting(T0 + 800).await, Vec::<Option<String>>::new());
    // A task handed back waits again from the moment it was handed back.
    assert!(store.release(&second.id, "w2", &second.subject_id, T0 + 900).await.unwrap());
    assert_eq!(waiting(T0 + 1000).await, Vec::<Option<String>>::new());
    assert_eq!(waiting(T0 + 1150).await, vec![Some(bob.id.clone())]);
}

async fn fair_claim_caps_hold_under_concurrency(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    for i in 0..12 {
        create(store, &job(&alice, None, T0 + i, None)).await;
    }
    for i in 0..3 {
        create(store, &job(&bob, None, T0 + 20 + i, None)).await;
    }
    let fs = share(2, 3);
    let claims: Vec<_> = (0..10)
        .map(|i| {
            let (store, fs) = (store.clone(), fs.clone());
            tokio::spawn(async move {
                store.claim_fair(&["screenshot"], &format!("w{i}"), T0 + 100, 60_000, &fs).await.unwrap()
            })
        })
        .collect();
    let mut got = 0;
    for c in claims {
        if c.await.unwrap().is_some() {
            got += 1;
        }
    }
    assert_eq!(got, 4, "two for each account, never more");
    let running = store.running_by_account("screenshot", T0 + 100).await.unwrap();
    let mut expected = vec![(Some(alice.id.clone()), 2), (Some(bob.id.clone()), 2)];
    expected.sort();
    assert_eq!(running, expected);
}

async fn databases_from_before_sqlx_migrations_upgrade_in_place(ctx: Ctx) {
    // A database made by the old migration runner: steps 1-4 recorded in
    // `schema_migrations`, with data in it.
    let url = ctx.dbs.fresh_url().await;
    let files: [&str; 4] = match ctx.store.backend() {
        capture_store::Backend::Sqlite => [
            include_str!("../migrations/sqlite/0001_core.sql"),
            include_str!("../migrations/sqlite/0002_webhooks.sql"),
            include_str!("../migrations/sqlite/0003_web_oauth.sql"),
            include_str!("../migrations/sqlite/0004_screenshots_active.sql"),
        ],
        capture_store::Backend::Postgres => [
            include_str!("../migrations/postgres/0001_core.sql"),
            include_str!("../migrations/postgres/0002_webhooks.sql"),
            include_str!("../migrations/postgres/0003_web_oauth.sql"),
            include_str!("../migrations/postgres/0004_screenshots_active.sql"),
        ],
    };
    sqlx::any::install_default_drivers();
    let raw =
        AnyPool::connect(&format!("{url}{}", if url.starts_with("sqlite") { "?mode=rwc" } else { "" })).await.unwrap();
    raw.execute(
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .await
    .unwrap();
    for (i, sql) in files.iter().enumerate() {
        for stmt in sql.split(';').filter(|s| !s.trim().is_empty()) {
            raw.execute(AssertSqlSafe(stmt.to_string())).await.unwrap();
        }
        sqlx::query("INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, 'old', 0)")
            .bind(i as i64 + 1)
            .execute(&raw)
            .await
            .unwrap();
    }
    sqlx::query("INSERT INTO users (id, email, plan, legacy_free, created_at) VALUES ('usr_old', 'old@example.com', 'pro', 0, 1)")
        .execute(&raw)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO screenshots (id, user_id, status, url, options, format, actions, usage_month, created_at) \
         VALUES ('scr_old', 'usr_old', 'pending', 'https://example.com', '{}', 'png', 1, '2025-06', 1)",
    )
    .execute(&raw)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO tasks (id, kind, subject_id, payload, status, attempts, run_at, created_at) \
         VALUES ('tsk_old', 'screenshot', 'scr_old', '{}', 'queued', 0, 1, 1)",
    )
    .execute(&raw)
    .await
    .unwrap();
    raw.close().await;

    // The new build starts on it (twice, at once): nothing applied twice, the data stays.
    let a = tokio::spawn({
        let url = url.clone();
        async move { Store::connect(&url, 2).await }
    });
    let b = tokio::spawn({
        let url = url.clone();
        async move { Store::connect(&url, 2).await }
    });
    let store = a.await.unwrap().expect("upgrade");
    let other = b.await.unwrap().expect("concurrent upgrade");
    other.close().await;
    let applied = store.applied_migrations().await.unwrap();
    assert_eq!(applied, store.known_migrations());
    assert_eq!(applied.last().copied(), Some(store.latest_migration()));
    let user = store.user_by_email("old@example.com").await.unwrap().expect("the old user is still there");
    assert_eq!(user.plan, "pro");
    // The new column was filled in for the old task: it is claimed fairly for its account.
    let task = store.claim_fair(&["screenshot"], "w", 10, 1000, &share(1, 1)).await.unwrap().unwrap();
    assert_eq!(task.id, "tsk_old");
    assert_eq!(store.running_by_account("screenshot", 10).await.unwrap(), vec![(Some("usr_old".to_string()), 1)]);
    // The old bookkeeping is gone; starting again is a no-op.
    store.close().await;
    let again = Store::connect(&url, 2).await.unwrap();
    assert_eq!(again.applied_migrations().await.unwrap(), again.known_migrations());
    again.close().await;
}

// ---------------------------------------------------------------------------------------
// Website audits
// ---------------------------------------------------------------------------------------

on_both_backends! {
    audits_charge_pages_audited_and_give_back_the_rest => audits_charge_pages_audited_and_give_back_the_rest_sqlite, audits_charge_pages_audited_and_give_back_the_rest_postgres;
    failed_audits_give_everything_back_and_quota_refuses_the_page_cap => failed_audits_give_everything_back_and_quota_refuses_the_page_cap_sqlite, failed_audits_give_everything_back_and_quota_refuses_the_page_cap_postgres;
    audits_list_newest_first_store_idempotent_responses_and_stay_owner_only => audits_list_newest_first_store_idempotent_responses_and_stay_owner_only_sqlite, audits_list_newest_first_store_idempotent_responses_and_stay_owner_only_postgres;
    audits_waiting_per_account_are_bounded => audits_waiting_per_account_are_bounded_sqlite, audits_waiting_per_account_are_bounded_postgres;
}

/// A full-site audit of `user` reserving `actions` at `now`.
fn audit(user: &User, now: i64, actions: i64, limit: Option<i64>) -> capture_store::NewAudit {
    let id = new_id(capture_core::ids::AUDIT);
    capture_store::NewAudit {
        task_payload: serde_json::json!({ "auditId": id }).to_string(),
        id,
        user_id: user.id.clone(),
        key_id: None,
        url: "https://example.com/".into(),
        report_type: "full_site".into(),
        max_pages: actions,
        actions,
        share_token: random_string(32),
        month: MONTH.into(),
        limit,
        reset_at: "2026-12-01T00:00:00.000Z".into(),
        now,
        task_run_at: now,
        queue_limits: QueueLimits::default(),
    }
}

/// `(type, data)` of an audit's events, oldest first.
async fn audit_events(store: &Store, id: &str) -> Vec<(String, serde_json::Value)> {
    store
        .events_after(id, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, t, d)| (t, serde_json::from_str(&d).unwrap()))
        .collect()
}

async fn subscribe_everything(store: &Store, user: &User) {
    let ep = capture_store::Endpoint {
        id: new_id(capture_core::ids::ENDPOINT),
        user_id: user.id.clone(),
        url: "https://hooks.example.com/in".into(),
        events: vec!["*".into()],
        description: None,
        secret_enc: "enc".into(),
        created_at: T0,
    };
    store.create_endpoint(&ep).await.unwrap();
}

async fn audits_charge_pages_audited_and_give_back_the_rest(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    subscribe_everything(store, &alice).await;
    let n = audit(&alice, T0, 10, Some(100));
    let (row, used) = store.create_audit_with(&n, None).await.unwrap().unwrap();
    assert_eq!(used, 10, "the page cap is reserved up front");
    assert_eq!((row.status.as_str(), row.actions_reserved, row.actions_charged), ("pending", 10, 0));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 10);

    let task = store.claim("audit", "w1", T0 + 1, 60_000).await.unwrap().expect("an audit task");
    assert_eq!(task.subject_id, n.id);
    assert!(store.mark_audit_processing(&n.id, T0 + 2).await.unwrap());
    assert!(store.audit_progress(&task.id, "w1", &n.id, 1, 4, T0 + 3).await.unwrap());
    assert!(!store.audit_progress(&task.id, "w2", &n.id, 2, 4, T0 + 3).await.unwrap(), "fenced on the lease");
    assert!(store.audit_progress(&task.id, "w1", &n.id, 2, 3, T0 + 4).await.unwrap());
    let running = store.audit(&n.id).await.unwrap().unwrap();
    assert_eq!((running.status.as_str(), running.pages_audited, running.pages_total), ("processing", 2, 3));

    let done = capture_store::AuditDone {
        pages_audited: 3,
        scores: r#"{"seo":90}"#.into(),
        report: r#"{"pagesAudited":3}"#.into(),
    };
    let event = serde_json::json!({"auditId": n.id});
    assert!(!store.complete_audit(&task.id, "w2", &n.id, &done, &event, T0 + 5).await.unwrap(), "not w2's lease");
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 10, "nothing settled by a stale worker");
    assert!(store.complete_audit(&task.id, "w1", &n.id, &done, &event, T0 + 5).await.unwrap());
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 3, "3 pages charged, 7 given back");
    let row = store.audit(&n.id).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "done");
    assert_eq!((row.pages_audited, row.actions_charged, row.completed_at), (3, 3, Some(T0 + 5)));
    assert_eq!(row.report.as_deref(), Some(r#"{"pagesAudited":3}"#));
    assert_eq!(row.scores.as_deref(), Some(r#"{"seo":90}"#));
    // A second completion changes nothing.
    assert!(!store.complete_audit(&task.id, "w1", &n.id, &done, &event, T0 + 6).await.unwrap());
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 3);

    let events = audit_events(store, &n.id).await;
    let kinds: Vec<String> = events
        .iter()
        .map(|(t, d)| match t.as_str() {
            "audit.status" => d["status"].as_str().unwrap().to_string(),
            "audit.progress" => format!("{}/{}", d["pagesDone"], d["pagesTotal"]),
            other => panic!("unexpected event {other}"),
        })
        .collect();
    assert_eq!(kinds, ["pending", "processing", "1/4", "2/3", "done"]);
    // The webhook outbox got audit.completed in the same transaction.
    let eps = store.list_endpoints(&alice.id).await.unwrap();
    let deliveries = store.list_deliveries(&alice.id, &eps[0].id, 10).await.unwrap();
    assert_eq!(deliveries.iter().filter(|d| d.event_type == "audit.completed").count(), 1, "{deliveries:?}");
    // The public token finds it; a wrong one nothing.
    assert_eq!(store.audit_by_token(&n.share_token).await.unwrap().unwrap().id, n.id);
    assert!(store.audit_by_token("nope").await.unwrap().is_none());
    store.set_audit_pdf(&n.id, "reports/x.pdf").await.unwrap();
    assert_eq!(store.audit(&n.id).await.unwrap().unwrap().pdf_key.as_deref(), Some("reports/x.pdf"));
}

async fn failed_audits_give_everything_back_and_quota_refuses_the_page_cap(ctx: Ctx) {
    let store = &ctx.store;
    let bob = new_user(store, "bob@example.com").await;
    // 12 actions a month: a 10-page audit fits once, not twice.
    let first = audit(&bob, T0, 10, Some(12));
    store.create_audit_with(&first, None).await.unwrap().unwrap();
    let refused = store.create_audit_with(&audit(&bob, T0 + 1, 10, Some(12)), None).await.unwrap();
    assert_eq!(refused.map(|(r, _)| r.id), Err(Refused::Quota(QuotaExceeded { used: 10 })));
    assert_eq!(store.queue_depth().await.unwrap(), 1, "a refusal queues nothing");
    subscribe_everything(store, &bob).await;

    let task = store.claim("audit", "w1", T0 + 2, 60_000).await.unwrap().unwrap();
    store.mark_audit_processing(&first.id, T0 + 3).await.unwrap();
    store.audit_progress(&task.id, "w1", &first.id, 1, 1, T0 + 4).await.unwrap();
    let ev = serde_json::json!({"auditId": first.id, "error": "unreachable"});
    assert!(store.fail_audit(&task.id, "w1", &first.id, "the site could not be reached", &ev, T0 + 5).await.unwrap());
    assert_eq!(store.month_usage(&bob.id, MONTH).await.unwrap(), 0, "a failed audit costs nothing");
    let row = store.audit(&first.id).await.unwrap().unwrap();
    assert_eq!((row.status.as_str(), row.actions_charged), ("failed", 0));
    assert_eq!(row.error.as_deref(), Some("the site could not be reached"));
    let last = audit_events(store, &first.id).await.pop().unwrap();
    assert_eq!(last.1["status"], "failed");
    let eps = store.list_endpoints(&bob.id).await.unwrap();
    let deliveries = store.list_deliveries(&bob.id, &eps[0].id, 10).await.unwrap();
    assert_eq!(deliveries.iter().filter(|d| d.event_type == "audit.failed").count(), 1);
    // Now the 10 actions are free again.
    store.create_audit_with(&audit(&bob, T0 + 6, 10, Some(12)), None).await.unwrap().unwrap();

    // Shutdown hands a running audit back: pending again, the claim not counted.
    let task = store.claim("audit", "w2", T0 + 7, 60_000).await.unwrap().unwrap();
    store.mark_audit_processing(&task.subject_id, T0 + 8).await.unwrap();
    assert!(store.release_audit(&task.id, "w2", &task.subject_id, T0 + 9).await.unwrap());
    assert_eq!(store.audit(&task.subject_id).await.unwrap().unwrap().status.as_str(), "pending");
    let again = store.claim("audit", "w3", T0 + 10, 60_000).await.unwrap().unwrap();
    assert_eq!((again.id, again.attempts), (task.id, 1));
}

async fn audits_list_newest_first_store_idempotent_responses_and_stay_owner_only(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let eve = new_user(store, "eve@example.com").await;
    let route = "POST /v1/audits";
    let claim = match store.idem_begin(&alice.id, route, "key-1", "h", T0, DAY_MS, 60_000).await.unwrap() {
        IdemBegin::Owned(c) => c,
        other => panic!("{other:?}"),
    };
    let render = |r: &capture_store::AuditRow| (202u16, format!("{{\"id\":\"{}\"}}", r.id));
    let first = audit(&alice, T0, 1, None);
    store.create_audit_with(&first, Some(IdemResponse { claim: &claim, render: &render })).await.unwrap().unwrap();
    assert_eq!(
        store.idem_begin(&alice.id, route, "key-1", "h", T0 + 1, DAY_MS, 60_000).await.unwrap(),
        IdemBegin::Replay(202, format!("{{\"id\":\"{}\"}}", first.id)),
        "the response was stored with the audit"
    );
    let mut ids = vec![first.id.clone()];
    for i in 1..5 {
        let n = audit(&alice, T0 + i, 1, None);
        store.create_audit_with(&n, None).await.unwrap().unwrap();
        ids.push(n.id);
    }
    store.create_audit_with(&audit(&eve, T0 + 2, 1, None), None).await.unwrap().unwrap();
    ids.reverse();
    let page1 = store.list_audits(&alice.id, None, 2).await.unwrap();
    assert_eq!(page1.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), ids[..2]);
    assert!(page1.iter().all(|r| r.report.is_none()), "listings leave the report out");
    let last = page1.last().unwrap();
    let page2 = store.list_audits(&alice.id, Some((last.created_at, Some(last.id.clone()))), 10).await.unwrap();
    assert_eq!(page2.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), ids[2..]);
    assert!(store.audit_of(&eve.id, &first.id).await.unwrap().is_none(), "someone else's audit is not found");
    assert_eq!(store.audit_of(&alice.id, &first.id).await.unwrap().unwrap().url, "https://example.com/");
}

async fn audits_waiting_per_account_are_bounded(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let bounded = |user: &User, now: i64| {
        let mut n = audit(user, now, 1, None);
        n.queue_limits = QueueLimits { per_account: Some(2), global: Some(3) };
        n
    };
    store.create_audit_with(&bounded(&alice, T0), None).await.unwrap().unwrap();
    store.create_audit_with(&bounded(&alice, T0 + 1), None).await.unwrap().unwrap();
    let refused = store.create_audit_with(&bounded(&alice, T0 + 2), None).await.unwrap().map(|(r, _)| r.id);
    assert_eq!(refused, Err(Refused::QueueFull(QueueFull { scope: QueueScope::Account, pending: 2, limit: 2 })));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 2, "a refusal charges nothing");
    store.create_audit_with(&bounded(&bob, T0 + 3), None).await.unwrap().unwrap();
    let refused = store.create_audit_with(&bounded(&bob, T0 + 4), None).await.unwrap().map(|(r, _)| r.id);
    assert_eq!(refused, Err(Refused::QueueFull(QueueFull { scope: QueueScope::Global, pending: 3, limit: 3 })));
    // An audit that ends frees its place.
    let task = store.claim("audit", "w1", T0 + 5, 60_000).await.unwrap().unwrap();
    let ev = serde_json::json!({});
    store.fail_audit(&task.id, "w1", &task.subject_id, "x", &ev, T0 + 6).await.unwrap();
    store.create_audit_with(&bounded(&bob, T0 + 7), None).await.unwrap().unwrap();
}

// ---------------------------------------------------------------------------------------
// Sign-in throttle and e-mail verification
// ---------------------------------------------------------------------------------------

async fn sign_in_failures_count_since_the_last_success(ctx: Ctx) {
    let store = &ctx.store;
    let key = "pair:10.0.0.1|alice@example.com";
    assert_eq!(store.login_failures_since_success(key, T0).await.unwrap(), (0, None));
    for i in 0..3 {
        store.record_login_attempt(key, false, T0 + i).await.unwrap();
    }
    assert_eq!(store.login_failures_since_success(key, T0).await.unwrap(), (3, Some(T0 + 2)));
    assert_eq!(store.login_failures_since_success(key, T0 + 1).await.unwrap(), (2, Some(T0 + 2)), "the window");
    // A success starts the count again; plain counting keeps every failure.
    store.record_login_attempt(key, true, T0 + 10).await.unwrap();
    store.record_login_attempt(key, false, T0 + 11).await.unwrap();
    assert_eq!(store.login_failures_since_success(key, T0).await.unwrap(), (1, Some(T0 + 11)));
    assert_eq!(store.login_failures(key, T0).await.unwrap(), (4, Some(T0 + 11)));
    // Other keys are apart.
    assert_eq!(store.login_failures("ip:10.0.0.1", T0).await.unwrap(), (0, None));
}

async fn an_email_is_verified_once_by_its_link_before_it_expires(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    assert!(!store.email_unverified(&alice.id).await.unwrap(), "accounts start verified");
    store.start_email_verification(&alice.id, "hash-1", T0, T0 + DAY_MS).await.unwrap();
    // A new link replaces the last.
    store.start_email_verification(&alice.id, "hash-2", T0 + 1, T0 + DAY_MS).await.unwrap();
    store.start_email_verification(&bob.id, "hash-b", T0, T0 + 10).await.unwrap();
    assert!(store.email_unverified(&alice.id).await.unwrap());
    assert_eq!(store.verify_email("hash-1", T0 + 2).await.unwrap(), None, "the replaced link");
    assert_eq!(store.verify_email("hash-b", T0 + 10).await.unwrap(), None, "an expired link");
    assert!(store.email_unverified(&bob.id).await.unwrap());
    assert_eq!(store.verify_email("hash-2", T0 + 2).await.unwrap().as_deref(), Some(alice.id.as_str()));
    assert!(!store.email_unverified(&alice.id).await.unwrap());
    assert_eq!(store.verify_email("hash-2", T0 + 3).await.unwrap(), None, "a link works once");
}

// ---------------------------------------------------------------------------------------
// Ad generation
// ---------------------------------------------------------------------------------------

fn ad(user: &User, kind: &str, draft_id: Option<&str>, now: i64, limit: Option<i64>) -> NewAdshot {
    let (prefix, actions) = if kind == KIND_RENDER { ("ad", 10) } else { ("drf", 1) };
    let id = new_id(prefix);
    NewAdshot {
        task_payload: serde_json::json!({ "id": id }).to_string(),
        id,
        user_id: user.id.clone(),
        key_id: None,
        kind: kind.into(),
        draft_id: draft_id.map(str::to_string),
        input: r#"{"url":"https://example.com/"}"#.into(),
        actions,
        month: MONTH.into(),
        limit,
        reset_at: "2026-12-01T00:00:00.000Z".into(),
        now,
        max_active: None,
    }
}

async fn ad_statuses(store: &Store, id: &str) -> Vec<String> {
    store
        .events_after(id, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, ty, data)| {
            assert_eq!(ty, "adshot.status");
            let data: serde_json::Value = serde_json::from_str(&data).unwrap();
            data["status"].as_str().unwrap().to_string()
        })
        .collect()
}

async fn ad_drafts_and_renders_charge_progress_and_complete(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    store
        .create_endpoint(&capture_store::Endpoint {
            id: new_id("whe"),
            user_id: alice.id.clone(),
            url: "https://hooks.example.com/".into(),
            events: vec!["adshot.completed".into()],
            description: None,
            secret_enc: "enc".into(),
            created_at: T0,
        })
        .await
        .unwrap();

    // A draft costs 1 action, a render 10; the cap counts actions.
    let (draft, used) =
        store.create_adshot_with(&ad(&alice, KIND_DRAFT, None, T0, Some(12)), None).await.unwrap().unwrap();
    assert_eq!((draft.status.as_str(), draft.kind.as_str(), used), ("pending", KIND_DRAFT, 1));
    let (render, used) = store
        .create_adshot_with(&ad(&alice, KIND_RENDER, Some(&draft.id), T0 + 1, Some(12)), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((render.draft_id.as_deref(), render.actions, used), (Some(draft.id.as_str()), 10, 11));
    let refused = store.create_adshot_with(&ad(&alice, KIND_RENDER, Some(&draft.id), T0 + 2, Some(12)), None).await;
    assert_eq!(refused.unwrap(), Err(QuotaExceeded { used: 11 }.into()));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 11);

    // Each kind has its own queue.
    let task = store.claim("ad_draft", "w1", T0 + 10, 60_000).await.unwrap().unwrap();
    assert_eq!(task.subject_id, draft.id);
    assert!(store.claim("ad_draft", "w2", T0 + 10, 60_000).await.unwrap().is_none());
    assert!(store.adshot_progress(&task.id, "w1", &draft.id, "capturing", 20, T0 + 11).await.unwrap());
    assert!(
        !store.adshot_progress(&task.id, "w2", &draft.id, "capturing", 30, T0 + 11).await.unwrap(),
        "not its lease"
    );
    let row = store.adshot(&draft.id).await.unwrap().unwrap();
    assert_eq!(
        (row.status.as_str(), row.stage.as_deref(), row.progress, row.started_at),
        ("processing", Some("capturing"), 20, Some(T0 + 11))
    );

    let done = AdshotDone {
        draft: Some(r#"{"headline":"Fresh bread daily"}"#.into()),
        files: vec!["a.png".into(), "b.png".into()],
        ..Default::default()
    };
    let event = serde_json::json!({"adId": draft.id});
    assert!(store.complete_adshot(&task.id, "w1", &draft.id, &done, &event, T0 + 20).await.unwrap());
    assert!(!store.complete_adshot(&task.id, "w1", &draft.id, &done, &event, T0 + 21).await.unwrap(), "closed");
    let row = store.adshot(&draft.id).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "done");
    assert_eq!(row.progress, 100);
    assert_eq!(row.draft.as_deref(), done.draft.as_deref());
    assert_eq!(row.files, done.files);
    assert_eq!(row.completed_at, Some(T0 + 20));
    assert_eq!(ad_statuses(store, &draft.id).await, ["pending", "processing", "done"]);
    let ep = store.list_endpoints(&alice.id).await.unwrap().remove(0);
    let deliveries = store.list_deliveries(&alice.id, &ep.id, 10).await.unwrap();
    assert_eq!(deliveries.len(), 1);
    assert_eq!(deliveries[0].event_type, "adshot.completed");

    // The render completes with its files.
    let task = store.claim("ad_render", "w1", T0 + 30, 60_000).await.unwrap().unwrap();
    assert_eq!(task.subject_id, render.id);
    let done = AdshotDone {
        video_key: Some("v.mp4".into()),
        thumb_key: Some("t.png".into()),
        duration_ms: Some(18_500),
        width: Some(1080),
        height: Some(1920),
        ..Default::default()
    };
    assert!(store.complete_adshot(&task.id, "w1", &render.id, &done, &serde_json::json!({}), T0 + 40).await.unwrap());
    let row = store.adshot(&render.id).await.unwrap().unwrap();
    assert_eq!(
        (row.video_key.as_deref(), row.duration_ms, row.width, row.height),
        (Some("v.mp4"), Some(18_500), Some(1080), Some(1920))
    );
    assert_eq!(row.draft, None);

    // Listing and ownership.
    let all = store.list_adshots(&alice.id, None, 10).await.unwrap();
    assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [render.id.as_str(), draft.id.as_str()]);
    let renders = store.list_adshots(&alice.id, Some(KIND_RENDER), 10).await.unwrap();
    assert_eq!(renders.len(), 1);
    assert!(store.adshot_of(&bob.id, &draft.id).await.unwrap().is_none());
    assert!(store.adshot_of(&alice.id, &draft.id).await.unwrap().is_some());
    assert!(store.list_adshots(&bob.id, None, 10).await.unwrap().is_empty());

    // Back-pressure per account and kind: two renders may wait; a third is refused, uncharged.
    let bounded = |now| NewAdshot { max_active: Some(2), ..ad(&bob, KIND_RENDER, None, now, Some(100)) };
    store.create_adshot_with(&bounded(T0 + 50), None).await.unwrap().unwrap();
    store.create_adshot_with(&bounded(T0 + 51), None).await.unwrap().unwrap();
    let full = store.create_adshot_with(&bounded(T0 + 52), None).await.unwrap();
    assert_eq!(full, Err(QueueFull { scope: QueueScope::Account, pending: 2, limit: 2 }.into()));
    assert_eq!(store.month_usage(&bob.id, MONTH).await.unwrap(), 20);
    let draft = NewAdshot { max_active: Some(2), ..ad(&bob, KIND_DRAFT, None, T0 + 53, Some(100)) };
    assert!(store.create_adshot_with(&draft, None).await.unwrap().is_ok(), "drafts are counted apart");
}

async fn a_failed_ad_render_refunds_once(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let (render, used) =
        store.create_adshot_with(&ad(&alice, KIND_RENDER, None, T0, Some(100)), None).await.unwrap().unwrap();
    assert_eq!(used, 10);
    let (draft, _) =
        store.create_adshot_with(&ad(&alice, KIND_DRAFT, None, T0 + 1, Some(100)), None).await.unwrap().unwrap();
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 11);

    let task = store.claim("ad_render", "w1", T0 + 10, 60_000).await.unwrap().unwrap();
    let event = serde_json::json!({"adId": render.id});
    assert!(store.fail_adshot(&task.id, "w1", &render.id, "ffmpeg timed out", true, &event, T0 + 20).await.unwrap());
    assert!(!store.fail_adshot(&task.id, "w1", &render.id, "again", true, &event, T0 + 21).await.unwrap());
    let row = store.adshot(&render.id).await.unwrap().unwrap();
    assert_eq!((row.status.as_str(), row.error.as_deref()), ("failed", Some("ffmpeg timed out")));
    assert_eq!(ad_statuses(store, &render.id).await, ["pending", "failed"]);
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1, "refunded once");

    // A failure the tenant caused keeps its charge.
    let task = store.claim("ad_draft", "w1", T0 + 30, 60_000).await.unwrap().unwrap();
    assert!(store.fail_adshot(&task.id, "w1", &draft.id, "page timed out", false, &event, T0 + 40).await.unwrap());
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1);
}

async fn an_ad_create_stores_its_idempotent_response_with_it(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let route = "POST /v1/adshot/draft";
    let claim = owned(store.idem_begin(&alice.id, route, "key-1234", "h", T0, DAY_MS, LEASE).await.unwrap());
    let render = |r: &capture_store::AdshotRow| (202u16, format!(r#"{{"id":"{}"}}"#, r.id));
    let idem = IdemResponse { claim: &claim, render: &render };
    let (row, _) =
        store.create_adshot_with(&ad(&alice, KIND_DRAFT, None, T0, None), Some(idem)).await.unwrap().unwrap();
    assert_eq!(
        store.idem_begin(&alice.id, route, "key-1234", "h", T0 + 1, DAY_MS, LEASE).await.unwrap(),
        IdemBegin::Replay(202, format!(r#"{{"id":"{}"}}"#, row.id))
    );
}

async fn a_hand_back_is_counted_on_its_task(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let job_id = create(store, &job(&alice, None, T0, Some(10))).await.id;
    let t = store.claim("screenshot", "w1", T0, 60_000).await.unwrap().unwrap();
    assert_eq!((t.attempts, t.handed_back), (1, 0));
    // A shutdown's release is not a hand-back; a fairness hand-back is, and neither an attempt.
    assert!(store.release(&t.id, "w1", &job_id, T0 + 1).await.unwrap());
    let t = store.claim("screenshot", "w1", T0 + 2, 60_000).await.unwrap().unwrap();
    assert_eq!((t.attempts, t.handed_back), (1, 0));
    assert!(!store.hand_back(&t.id, "w2", &job_id, T0 + 3).await.unwrap(), "not w2's task");
    assert!(store.hand_back(&t.id, "w1", &job_id, T0 + 3).await.unwrap());
    let t = store.claim("screenshot", "w1", T0 + 4, 60_000).await.unwrap().unwrap();
    assert!(store.hand_back(&t.id, "w1", &job_id, T0 + 5).await.unwrap());
    let t = store.claim("screenshot", "w1", T0 + 6, 60_000).await.unwrap().unwrap();
    assert_eq!((t.attempts, t.handed_back), (1, 2));
    assert_eq!(store.most_hand_backs("screenshot").await.unwrap(), 2);
    assert_eq!(job_row(store, &job_id).await.status.as_str(), "pending");
}

async fn a_render_links_views_share_one_capture_in_flight(ctx: Ctx) {
    let store = &ctx.store;
    let alice = new_user(store, "alice@example.com").await;
    let bob = new_user(store, "bob@example.com").await;
    let view = |user: &User, now: i64| {
        let mut n = job(user, None, now, Some(100));
        n.cache = Some(("link-hash".into(), now + 60_000));
        n.flight = true;
        n
    };
    // Eight first views at once: one capture, one action, every view answered with it.
    let mut views = Vec::new();
    for i in 0..8 {
        let (store, n) = (store.clone(), view(&alice, T0 + i));
        views.push(tokio::spawn(async move { store.create_screenshot(&n).await.unwrap().unwrap().0.id }));
    }
    let mut ids = std::collections::BTreeSet::new();
    for v in views {
        ids.insert(v.await.unwrap());
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 1);
    assert_eq!(store.queue_depth().await.unwrap(), 1);
    let first = ids.into_iter().next().unwrap();
    // Another account's view of the same hash is its own capture.
    let (other, _) = store.create_screenshot(&view(&bob, T0 + 9)).await.unwrap().unwrap();
    assert_ne!(other.id, first);
    // Once it failed, it no longer answers: the next view captures again, and the failure and
    // the captures of the hour are found by the hash.
    let t = store.claim("screenshot", "w1", T0 + 10, 60_000).await.unwrap().unwrap();
    let t = if t.subject_id == first {
        t
    } else {
        store.claim("screenshot", "w1", T0 + 10, 60_000).await.unwrap().unwrap()
    };
    assert!(store.fail_screenshot(&t.id, "w1", &first, "HTTP 500", false, T0 + 20).await.unwrap());
    let failed = store.failed_screenshot_since(&alice.id, "link-hash", T0).await.unwrap().map(|r| r.id);
    assert_eq!(failed.as_deref(), Some(first.as_str()));
    assert_eq!(store.failed_screenshot_since(&alice.id, "link-hash", T0 + 21).await.unwrap(), None);
    let (again, _) = store.create_screenshot(&view(&alice, T0 + 30)).await.unwrap().unwrap();
    assert_ne!(again.id, first);
    // (Whichever of the eight views won was created between T0 and T0 + 7.)
    let (n, oldest) = store.captures_since(&alice.id, "link-hash", T0).await.unwrap();
    assert_eq!((n, oldest.is_some_and(|t| (T0..T0 + 8).contains(&t))), (2, true));
    assert_eq!(store.captures_since(&alice.id, "link-hash", T0 + 30).await.unwrap(), (1, Some(T0 + 30)));
    assert_eq!(store.month_usage(&alice.id, MONTH).await.unwrap(), 2);
}
