//! Store tests of the website's queries (usage per day, the screenshots list with filters
//! and search, the deliveries one job caused), each scenario on SQLite and on PostgreSQL
//! (`<scenario>_sqlite`, `<scenario>_postgres`; PostgreSQL through
//! `CAPTURE_TEST_POSTGRES_URL`, skipped with `CAPTURE_SKIP_POSTGRES=1`), like `store.rs`.

#[macro_use]
mod common;

use capture_core::ids::{SCREENSHOT, USER, new_id, random_string};
use capture_store::{
    Endpoint, NewRun, NewScreenshot, QueueLimits, ScreenshotDone, ScreenshotFilter, ScreenshotRow, Store, UsageDay,
    User,
};

const T0: i64 = 1_750_000_000_000;
const MONTH: &str = "2025-06";

on_both_backends! {
    store:
    usage_per_day_splits_by_key_and_product_and_nets_refunds => usage_per_day_splits_by_key_and_product_and_nets_refunds_sqlite, usage_per_day_splits_by_key_and_product_and_nets_refunds_postgres;
    screenshots_filter_by_status_and_format_search_url_and_title_and_page => screenshots_filter_by_status_and_format_search_url_and_title_and_page_sqlite, screenshots_filter_by_status_and_format_search_url_and_title_and_page_postgres;
    a_jobs_deliveries_and_events_are_found_by_its_id => a_jobs_deliveries_and_events_are_found_by_its_id_sqlite, a_jobs_deliveries_and_events_are_found_by_its_id_postgres;
}

const DAY: i64 = 86_400_000;

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

fn shot(
    user: &User,
    key: Option<&str>,
    url: &str,
    format: &str,
    now: i64,
    done: Option<ScreenshotDone>,
) -> NewScreenshot {
    let id = new_id(SCREENSHOT);
    NewScreenshot {
        task_payload: serde_json::json!({ "screenshotId": id }).to_string(),
        id,
        user_id: user.id.clone(),
        key_id: key.map(str::to_string),
        url: url.into(),
        options: "{}".into(),
        credentials: None,
        cache: None,
        cached_from: None,
        flight: false,
        batch: None,
        format: format.into(),
        actions: 1,
        month: MONTH.into(),
        limit: Some(1000),
        reset_at: "2025-07-01T00:00:00.000Z".into(),
        now,
        done,
        queue_limits: QueueLimits::default(),
        traceparent: None,
    }
}

fn done(title: &str) -> ScreenshotDone {
    ScreenshotDone {
        result_key: format!("results/{}.png", random_string(8)),
        thumb_key: None,
        page_title: Some(title.into()),
        tags: vec![],
        width: Some(1280),
        height: Some(800),
        metadata: None,
        storage_url: None,
        storage_error: None,
    }
}

async fn create(store: &Store, n: &NewScreenshot) -> ScreenshotRow {
    store.create_screenshot(n).await.unwrap().expect("accepted").0
}

fn run_of(user: &User, key: Option<&str>, now: i64, wanted: i64) -> NewRun {
    let id = new_id("run");
    NewRun {
        task_payload: Some(serde_json::json!({ "runId": id }).to_string()),
        id,
        user_id: user.id.clone(),
        key_id: key.map(str::to_string),
        kind: capture_core::RunKind::Scripted,
        start_url: "https://example.com/".into(),
        device: r#"{"width":1280,"height":800}"#.into(),
        record_video: false,
        timeout_ms: wanted * 60_000,
        steps: "[]".into(),
        connect_token_hash: None,
        connect_expires_at: None,
        actions_wanted: wanted,
        month: MONTH.into(),
        limit: Some(1000),
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

fn day(ms: i64) -> i64 {
    ms / DAY
}

fn usage(d: i64, key: Option<&str>, product: &str, actions: i64) -> UsageDay {
    UsageDay { day: d, key_id: key.map(str::to_string), product: product.into(), actions }
}

// ---------------------------------------------------------------------------------------

async fn usage_per_day_splits_by_key_and_product_and_nets_refunds(store: Store) {
    let user = new_user(&store).await;
    let other = new_user(&store).await;
    // Day 1: two screenshots with key A, one with key B, one from the website (no key).
    create(&store, &shot(&user, Some("key_a"), "https://a.example/", "png", T0, None)).await;
    create(&store, &shot(&user, Some("key_a"), "https://a.example/2", "pdf", T0 + 1, None)).await;
    create(&store, &shot(&user, Some("key_b"), "https://b.example/", "png", T0 + 2, None)).await;
    create(&store, &shot(&user, None, "https://web.example/", "png", T0 + 3, None)).await;
    // Day 3: a 4-action run with key A; another account's job never shows.
    store.create_run(&run_of(&user, Some("key_a"), T0 + 2 * DAY, 4), None).await.unwrap().expect("run accepted");
    create(&store, &shot(&other, Some("key_x"), "https://x.example/", "png", T0 + 2 * DAY, None)).await;
    // Day 3 too: the oldest job failed through the service's fault and was refunded.
    let task = store.claim("screenshot", "w1", T0 + 2 * DAY + 5, 60_000).await.unwrap().expect("a task");
    let refunded = task.subject_id.clone();
    assert!(
        store.fail_screenshot(&task.id, "w1", &refunded, "browser crashed", true, T0 + 2 * DAY + 10).await.unwrap()
    );
    let refunded_row = store.screenshot(&refunded).await.unwrap().unwrap();
    assert_eq!((refunded_row.user_id.as_str(), refunded_row.key_id.as_deref()), (user.id.as_str(), Some("key_a")));

    let got = store.usage_per_day(&user.id, MONTH).await.unwrap();
    let d1 = day(T0);
    let d3 = day(T0 + 2 * DAY);
    let mut want = vec![
        usage(d1, None, "screenshots", 1),
        usage(d1, Some("key_a"), "screenshots", 2),
        usage(d1, Some("key_b"), "screenshots", 1),
        usage(d3, Some("key_a"), "runs", 4),
    ];
    // The refund is a negative entry on day 3 under the refunded job's key.
    want.push(usage(d3, refunded_row.key_id.as_deref(), "screenshots", -1));
    want.sort_by(|a, b| (a.day, &a.key_id, &a.product).cmp(&(b.day, &b.key_id, &b.product)));
    let mut got_sorted = got.clone();
    got_sorted.sort_by(|a, b| (a.day, &a.key_id, &a.product).cmp(&(b.day, &b.key_id, &b.product)));
    assert_eq!(got_sorted, want);
    // The net sum equals the month's counter.
    let total: i64 = got.iter().map(|u| u.actions).sum();
    assert_eq!(total, store.month_usage(&user.id, MONTH).await.unwrap());
    assert_eq!(total, 4 + 4 - 1);
    // Another month has nothing.
    assert!(store.usage_per_day(&user.id, "2025-05").await.unwrap().is_empty());
}

async fn screenshots_filter_by_status_and_format_search_url_and_title_and_page(store: Store) {
    let user = new_user(&store).await;
    let other = new_user(&store).await;
    let a = create(&store, &shot(&user, None, "https://shop.example/cart", "png", T0, Some(done("Your Cart")))).await;
    let b =
        create(&store, &shot(&user, None, "https://blog.example/100%_real", "pdf", T0 + 1, Some(done("Blog")))).await;
    let c = create(&store, &shot(&user, None, "https://news.example/", "jpeg", T0 + 2, None)).await;
    let d = create(&store, &shot(&user, None, "https://shop.example/checkout", "png", T0 + 3, Some(done("Pay")))).await;
    create(&store, &shot(&other, None, "https://shop.example/other", "png", T0 + 4, Some(done("Cart")))).await;
    let ids = |rows: Vec<ScreenshotRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let f = |status: Option<&str>, format: Option<&str>, search: Option<&str>| ScreenshotFilter {
        status: status.map(str::to_string),
        format: format.map(str::to_string),
        search: search.map(str::to_string),
    };
    let all = store.search_screenshots(&user.id, &f(None, None, None), None, 100).await.unwrap();
    assert_eq!(ids(all), vec![d.id.clone(), c.id.clone(), b.id.clone(), a.id.clone()]);
    // Empty fields do not filter.
    let blank = store.search_screenshots(&user.id, &f(Some(""), Some(" "), Some("")), None, 100).await.unwrap();
    assert_eq!(blank.len(), 4);
    // Status and format.
    let pending = store.search_screenshots(&user.id, &f(Some("pending"), None, None), None, 100).await.unwrap();
    assert_eq!(ids(pending), vec![c.id.clone()]);
    let png_done = store.search_screenshots(&user.id, &f(Some("done"), Some("png"), None), None, 100).await.unwrap();
    assert_eq!(ids(png_done), vec![d.id.clone(), a.id.clone()]);
    // Search: URL or title, any case; `%` and `_` are literal.
    let cart = store.search_screenshots(&user.id, &f(None, None, Some("CART")), None, 100).await.unwrap();
    assert_eq!(ids(cart), vec![a.id.clone()]);
    let shop = store.search_screenshots(&user.id, &f(None, None, Some("shop.example")), None, 100).await.unwrap();
    assert_eq!(ids(shop), vec![d.id.clone(), a.id.clone()]);
    let pct = store.search_screenshots(&user.id, &f(None, None, Some("100%_")), None, 100).await.unwrap();
    assert_eq!(ids(pct), vec![b.id.clone()]);
    let wild = store.search_screenshots(&user.id, &f(None, None, Some("%")), None, 100).await.unwrap();
    assert_eq!(ids(wild), vec![b.id.clone()]);
    let title = store.search_screenshots(&user.id, &f(None, None, Some("blog")), None, 100).await.unwrap();
    assert_eq!(ids(title), vec![b.id.clone()]);
    // Pages through the filtered list with the (created_at, id) cursor.
    let p1 = store.search_screenshots(&user.id, &f(None, Some("png"), None), None, 1).await.unwrap();
    assert_eq!(ids(p1.clone()), vec![d.id.clone()]);
    let cur = Some((p1[0].created_at, Some(p1[0].id.clone())));
    let p2 = store.search_screenshots(&user.id, &f(None, Some("png"), None), cur, 1).await.unwrap();
    assert_eq!(ids(p2.clone()), vec![a.id.clone()]);
    let cur = Some((p2[0].created_at, Some(p2[0].id.clone())));
    assert!(store.search_screenshots(&user.id, &f(None, Some("png"), None), cur, 1).await.unwrap().is_empty());
}

async fn a_jobs_deliveries_and_events_are_found_by_its_id(store: Store) {
    let user = new_user(&store).await;
    let ep = new_id("whe");
    store
        .create_endpoint(&Endpoint {
            id: ep.clone(),
            user_id: user.id.clone(),
            url: "https://hooks.example.com/".into(),
            events: vec!["*".into()],
            description: None,
            secret_enc: "x".into(),
            created_at: T0,
        })
        .await
        .unwrap();
    let a = create(&store, &shot(&user, None, "https://a.example/", "png", T0, None)).await;
    let b = create(&store, &shot(&user, None, "https://b.example/", "png", T0 + 1, None)).await;
    // Fail `a` (oldest task first): it emits `screenshot.failed` naming it.
    let task = store.claim("screenshot", "w1", T0 + 10, 60_000).await.unwrap().expect("a task");
    assert_eq!(task.subject_id, a.id);
    assert!(store.fail_screenshot(&task.id, "w1", &a.id, "page crashed", false, T0 + 20).await.unwrap());
    let about_a = store.deliveries_about(&user.id, &a.id, 10).await.unwrap();
    assert_eq!(about_a.iter().map(|d| d.event_type.as_str()).collect::<Vec<_>>(), vec!["screenshot.failed"]);
    assert_eq!(about_a[0].endpoint_id, ep);
    assert!(store.deliveries_about(&user.id, &b.id, 10).await.unwrap().is_empty());
    // Another account sees none of them.
    let other = new_user(&store).await;
    assert!(store.deliveries_about(&other.id, &a.id, 10).await.unwrap().is_empty());
    // The job's events, oldest first, with their times.
    let events = store.events_of(&user.id, &a.id).await.unwrap();
    let statuses: Vec<String> = events
        .iter()
        .map(|(_, _, data, _)| {
            serde_json::from_str::<serde_json::Value>(data).unwrap()["status"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(statuses.first().map(String::as_str), Some("pending"));
    assert_eq!(statuses.last().map(String::as_str), Some("failed"));
    assert_eq!(events.last().unwrap().3, T0 + 20);
    assert!(store.events_of(&other.id, &a.id).await.unwrap().is_empty());
}
