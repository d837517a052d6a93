//! Cursor pages of every list: a page that is exactly full is the last one when nothing
//! follows (its `nextCursor` is null, not a link to an empty page), and with one more item the
//! cursor leads to a page holding exactly that item. Screenshots, audits, runs, campaigns,
//! suppressions, inbox messages and the dashboard's screenshots, each as a second account
//! would see it too (nothing of the first account's).

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::both_dbs;
use capture_testkit::inbox_fixture::smtp_send;
use capture_testkit::visitor::Visitor;

const LIMIT: usize = 2;

async fn page(app: &TestApp, key: &str, list: &str, before: Option<&str>) -> Value {
    let sep = if list.contains('?') { '&' } else { '?' };
    let mut path = format!("{list}{sep}limit={LIMIT}");
    if let Some(b) = before {
        path.push_str(&format!("&before={}", url::form_urlencoded::byte_serialize(b.as_bytes()).collect::<String>()));
    }
    let r = app.get(key, &path).await;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{path}: {v}");
    v
}

fn ids(page: &Value, id: &str) -> Vec<String> {
    page["data"].as_array().unwrap().iter().map(|d| d[id].as_str().unwrap().to_string()).collect()
}

/// `list` holds exactly [`LIMIT`] items of `key`: the one page, no cursor. Then `add` makes one
/// more: a full page with a cursor, whose page holds exactly the one remaining item and no
/// cursor. `id` names the field that identifies an item. (Items made in one millisecond are
/// ordered by id, so which one is last is not asserted: that every item is on exactly one page.)
async fn exact_pages<F, Fut>(app: &TestApp, key: &str, list: &str, id: &str, add: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..LIMIT {
        add().await;
    }
    let full = page(app, key, list, None).await;
    assert_eq!(ids(&full, id).len(), LIMIT, "{list}: {full}");
    assert!(full["nextCursor"].is_null(), "{list}: an exactly full last page has no next page: {full}");

    add().await;
    let first = page(app, key, list, None).await;
    assert_eq!(ids(&first, id).len(), LIMIT, "{list}: {first}");
    let cursor = first["nextCursor"].as_str().unwrap_or_else(|| panic!("{list}: one more item, a cursor: {first}"));
    let rest = page(app, key, list, Some(cursor)).await;
    assert_eq!(ids(&rest, id).len(), 1, "{list}: the next page holds exactly the remaining item: {rest}");
    assert!(rest["nextCursor"].is_null(), "{list}: {rest}");
    let mut all: Vec<String> = ids(&first, id).into_iter().chain(ids(&rest, id)).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), LIMIT + 1, "{list}: every item on exactly one page: {first} {rest}");
}

async fn every_cursor_list_ends_without_a_cursor_on_an_exactly_full_page(db: Db) {
    let app = TestApp::spawn(
        Opts::api(db)
            .roles("api,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, other) = app.user_with_key("pro").await;
    let post = |path: &'static str, body: Value, want: u16| {
        let (app, key) = (&app, &key);
        async move {
            let r = app.post_json(key, path, &body).await;
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            assert_eq!(status, want, "{path}: {v}");
        }
    };
    // Nobody works on them (no worker role): each stays where it was created.
    exact_pages(&app, &key, "/v1/screenshots", "id", || {
        post("/v1/screenshot", json!({"url": "http://127.0.0.1:9/"}), 202)
    })
    .await;
    exact_pages(&app, &key, "/v1/audits", "id", || {
        post("/v1/audits", json!({"url": "http://127.0.0.1:9/", "reportType": "single_page"}), 202)
    })
    .await;
    exact_pages(&app, &key, "/v1/runs", "id", || {
        post("/v1/runs", json!({"startUrl": "http://127.0.0.1:9/", "steps": [{"action": "wait", "ms": 10}]}), 202)
    })
    .await;
    exact_pages(&app, &key, "/v1/campaigns", "id", || {
        post(
            "/v1/campaigns",
            json!({"name": "list", "sendAt": "2099-01-01T00:00:00Z", "timezone": "UTC", "sendHours": "anytime",
                   "recipients": []}),
            201,
        )
    })
    .await;
    let n = std::sync::atomic::AtomicUsize::new(0);
    exact_pages(&app, &key, "/v1/suppressions", "email", || {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        post("/v1/suppressions", json!({"email": format!("s{i}@list.test")}), 201)
    })
    .await;
    let inbox: Value = app.get(&key, "/v1/inbox").await.json().await.unwrap();
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]).parse().unwrap();
    let address = inbox["address"].as_str().unwrap().to_string();
    let n = std::sync::atomic::AtomicUsize::new(0);
    exact_pages(&app, &key, "/v1/inbox/messages", "id", || {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let address = address.clone();
        async move {
            let mail = format!("From: a@list.test\r\nTo: {address}\r\nSubject: message {i}\r\n\r\nbody {i}\r\n");
            assert_eq!(smtp_send(smtp, "a@list.test", &address, mail.as_bytes()).await.code, 250);
        }
    })
    .await;
    // The other account's lists are empty, and so without a cursor.
    for list in ["/v1/screenshots", "/v1/audits", "/v1/runs", "/v1/campaigns", "/v1/suppressions", "/v1/inbox/messages"]
    {
        let p = page(&app, &other, list, None).await;
        assert_eq!((p["data"].as_array().unwrap().len(), &p["nextCursor"]), (0, &Value::Null), "{list}: {p}");
    }
}

both_dbs!(every_cursor_list_ends_without_a_cursor_on_an_exactly_full_page);

/// The dashboard's screenshot list pages the same way: no "Older screenshots" link on an
/// exactly full last page; with one more, the link leads to a page with just that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dashboard_list_has_no_older_link_on_an_exactly_full_last_page() {
    let app = TestApp::spawn(Opts::api(Db::Sqlite)).await;
    let v = Visitor::new(&app);
    v.sign_up(&format!("pages{}@example.com", rand_suffix()), "correct horse battery").await;
    let (_, key) = v.create_key("pages").await;
    let mut made = Vec::new();
    for _ in 0..LIMIT {
        made.push(app.create(&key, json!({"url": "http://127.0.0.1:9/"})).await["id"].as_str().unwrap().to_string());
    }
    let list = format!("/dashboard/screenshots?limit={LIMIT}");
    let p = v.get(&list).await.expect(200);
    assert!(!p.body.contains("rel=\"next\""), "an exactly full last page: {}", p.body);
    made.push(app.create(&key, json!({"url": "http://127.0.0.1:9/"})).await["id"].as_str().unwrap().to_string());
    let p = v.get(&list).await.expect(200);
    let older = p
        .body
        .split("rel=\"next\"")
        .next()
        .and_then(|s| s.rsplit("href=\"").next())
        .map(|h| h.split('"').next().unwrap().replace("&amp;", "&"));
    let older = older.unwrap_or_else(|| panic!("one more: an older page: {}", p.body));
    let rest = v.get(&older).await.expect(200);
    let on = |body: &str| made.iter().filter(|id| body.contains(id.as_str())).cloned().collect::<Vec<_>>();
    let (first, second) = (on(&p.body), on(&rest.body));
    assert_eq!((first.len(), second.len()), (LIMIT, 1), "a full page, then the one job left");
    assert!(!first.contains(&second[0]), "each job on one page");
    assert!(!rest.body.contains("rel=\"next\""), "and nothing after it: {}", rest.body);
}
