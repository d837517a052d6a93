//! Browser profiles against a members' site on 127.0.0.1 (a password sign-in with a mailed
//! one-time code, a sign-up with a mailed verification link, a server-side cookie session):
//! the sign-in helper makes a profile through the account's inbox; a capture and a full-site
//! audit with it show the members' pages (their titles, a pixel only members see, the
//! localStorage a members' page stored), without it the sign-in page; the crawl never follows
//! `/logout`; a run starts from one and saves into another; an expired session is reported
//! and not charged; another account can neither see nor use a profile; a deleted one is gone
//! from the database files.

use std::time::Duration;

use serde_json::{Value, json};

use super::inbox::inbound_app;
use crate::helpers::*;
use capture_testkit::audits::wait_audit;
use capture_testkit::both_dbs;
use capture_testkit::captures::shot;
use capture_testkit::members_site::{IDB_RGB, MEMBERS_RGB, MembersSite, NO_IDB_RGB, NO_STORAGE_RGB, STORAGE_RGB};

async fn json_of(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text)
            .unwrap_or_else(|_| if text.is_empty() { Value::Null } else { panic!("not JSON ({status}): {text}") }),
    )
}

async fn call(app: &TestApp, key: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    json_of(req.send().await.unwrap()).await
}

/// The members' site with an account for `key`'s inbox address and password, mailing
/// through the service's inbound SMTP server.
async fn site_for(app: &TestApp, key: &str) -> (MembersSite, String) {
    let (_, inbox) = json_of(app.get(key, "/v1/inbox").await).await;
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]);
    let site = MembersSite::start().await;
    site.set_smtp(smtp.parse().unwrap());
    let address = inbox["address"].as_str().unwrap().to_string();
    site.add_account(&address, inbox["password"].as_str().unwrap());
    (site, address)
}

/// The colour at the middle of a capture.
fn middle(bytes: &[u8]) -> [u8; 3] {
    let img = decode(bytes);
    let p = img.get_pixel(img.width() / 2, img.height() / 2);
    [p[0], p[1], p[2]]
}

/// The colour of the settings page's top strip (what its IndexedDB read found).
fn strip(bytes: &[u8]) -> [u8; 3] {
    let img = decode(bytes);
    let p = img.get_pixel(img.width() / 2, 50);
    [p[0], p[1], p[2]]
}

async fn profiles_sign_in_once_and_stay_their_accounts(db: Db) {
    let app = inbound_app(db, true).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, other) = app.user_with_key("pro").await;
    let (site, address) = site_for(&app, &key).await;

    // Without a profile the members' page is the sign-in page.
    let (job, bytes) = shot(&app, &key, json!({"url": site.url("/members"), "waitUntil": "load"})).await;
    assert_eq!(job["pageTitle"], "Members Club — Sign in", "{job}");
    assert_ne!(middle(&bytes), MEMBERS_RGB);

    // Nothing saved yet: a profile that is empty cannot be used.
    let (status, p) = call(&app, &key, reqwest::Method::POST, "/v1/profiles", Some(json!({"name": "club"}))).await;
    assert_eq!(status, 201, "{p}");
    assert_eq!((p["status"].as_str(), p["summary"]["cookies"].as_u64()), (Some("empty"), Some(0)), "{p}");
    let r = app.post_json(&key, "/v1/screenshot", &json!({"url": site.url("/members"), "profile": "club"})).await;
    let (status, e) = json_of(r).await;
    assert_eq!((status, e["details"]["field"].as_str()), (400, Some("profile")), "{e}");

    // The helper signs in with the inbox: password, then the code mailed to the inbox.
    let (status, out) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/profiles/login",
        Some(json!({"url": site.url("/login"), "profile": "club"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let steps: Vec<&str> = out["steps"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(steps[1], format!("typed {address} in the e-mail field"), "{steps:?}");
    assert!(steps.contains(&"typed the one-time code from the mail 'Your Members Club sign-in code'"), "{steps:?}");
    assert_eq!(out["finalUrl"], site.url("/members"), "{out}");
    assert_eq!(out["title"], "Members Club — Members area");
    let profile = &out["profile"];
    let id = profile["id"].as_str().unwrap().to_string();
    assert_eq!((profile["name"].as_str(), profile["status"].as_str()), (Some("club"), Some("ready")), "{profile}");
    assert_eq!(profile["savedFrom"], "login");
    assert_eq!(profile["summary"]["domains"], json!(["127.0.0.1"]), "{profile}");
    assert_eq!(profile["summary"]["origins"], json!([site.base]), "{profile}");
    assert_eq!(
        (profile["summary"]["localStorageItems"].as_u64(), profile["summary"]["indexedDbDatabases"].as_u64()),
        (Some(1), Some(1)),
        "{profile}"
    );
    // The profile shows what it holds, never a value.
    assert!(!profile.to_string().contains("gold"), "{profile}");
    assert_eq!(site.sessions(), 1);

    // With it: the members' page, its colour, and the localStorage the members' page stored.
    let before = used(&app, &key).await;
    let (job, bytes) =
        shot(&app, &key, json!({"url": site.url("/members/billing"), "waitUntil": "load", "profile": "club"})).await;
    assert_eq!(job["pageTitle"], "Members Club — Billing", "{job}");
    assert_eq!(middle(&bytes), MEMBERS_RGB);
    let settings = |profile: &str| json!({"url": site.url("/members/settings"), "waitUntil": "load", "waitFor": "#badge[data-ready]", "profile": profile});
    let (job, bytes) = shot(&app, &key, settings(&id)).await;
    assert_eq!(job["pageTitle"], "Members Club — Settings", "{job}");
    assert_eq!(middle(&bytes), STORAGE_RGB, "the profile's localStorage is there before the page's script runs");
    assert_eq!(strip(&bytes), IDB_RGB, "the profile's IndexedDB record is there when the page opens the database");
    assert_eq!(used(&app, &key).await, before + 2);
    let first_sealed = sealed_state(&app, &id).await.unwrap();

    // A full-site audit signed in: the members' pages, never the sign-out link.
    let (status, a) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/audits",
        Some(json!({"url": site.url("/members"), "reportType": "full_site", "maxPages": 5, "profile": "club"})),
    )
    .await;
    assert_eq!(status, 202, "{a}");
    let audit = wait_audit(&app, &key, a["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(audit["status"], "done", "{audit}");
    let pages = audit["report"]["pages"].as_array().unwrap();
    let mut titles: Vec<&str> = pages.iter().map(|p| p["title"].as_str().unwrap_or("")).collect();
    titles.sort();
    assert_eq!(
        titles,
        vec!["Members Club — Billing", "Members Club — Members area", "Members Club — Settings"],
        "{pages:?}"
    );
    let skipped = &audit["report"]["crawl"]["skipped"];
    assert!(
        skipped
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["url"] == site.url("/logout").as_str() && s["reason"] == "sign_out"),
        "{skipped}"
    );
    assert!(!site.hits().iter().any(|h| h == "/logout"), "{:?}", site.hits());
    assert_eq!(site.sessions(), 1, "the audit did not end the session");
    // The same audit without the profile sees the sign-in page.
    let (_, a) =
        call(&app, &key, reqwest::Method::POST, "/v1/audits", Some(json!({"url": site.url("/members")}))).await;
    let audit = wait_audit(&app, &key, a["id"].as_str().unwrap(), Duration::from_secs(90)).await;
    let page = &audit["report"]["pages"][0];
    assert_eq!(
        (page["title"].as_str(), page["finalUrl"].as_str()),
        (Some("Members Club — Sign in"), Some(site.url("/login?next=/members").as_str())),
        "{page}"
    );

    // A run starts from the profile and saves its state into a new one.
    let (status, run) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/runs",
        Some(json!({"startUrl": site.url("/members"), "recordVideo": false, "profile": "club", "saveProfile": "club-copy",
            "steps": [{"action": "goto", "url": site.url("/members/billing")}, {"action": "assertText", "text": "Your plan: Gold."}]})),
    )
    .await;
    assert_eq!(status, 202, "{run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    let run = capture_testkit::common::eventually("the run ends", Duration::from_secs(60), || async {
        let (_, r) = call(&app, &key, reqwest::Method::GET, &format!("/v1/runs/{run_id}"), None).await;
        if r["status"] == "completed" || r["status"] == "failed" { Ok(r) } else { Err(r) }
    })
    .await;
    assert_eq!((run["status"].as_str(), run["profile"].as_str()), (Some("completed"), Some(id.as_str())), "{run}");
    let (status, copy) = call(&app, &key, reqwest::Method::GET, "/v1/profiles/club-copy", None).await;
    assert_eq!((status, copy["savedFrom"].as_str()), (200, Some(run_id.as_str())), "{copy}");
    let (job, _) =
        shot(&app, &key, json!({"url": site.url("/members"), "waitUntil": "load", "profile": "club-copy"})).await;
    assert_eq!(job["pageTitle"], "Members Club — Members area", "{job}");

    // Export (Playwright's format) and import into a third profile.
    let (status, state) = call(&app, &key, reqwest::Method::GET, "/v1/profiles/club/state", None).await;
    assert_eq!(status, 200, "{state}");
    let names: Vec<&str> = state["cookies"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["sid"], "{state}");
    assert_eq!(state["origins"][0]["localStorage"], json!([{"name": "club.theme", "value": "gold"}]), "{state}");
    assert_eq!(
        state["origins"][0]["indexedDB"],
        json!([{"name": "club", "version": 1, "stores": [{"name": "prefs", "keyPath": "id", "autoIncrement": false,
            "indexes": [], "records": [{"value": {"id": "badge", "color": "gold", "since": 2026}}]}]}]),
        "{state}"
    );
    let (status, imported) =
        call(&app, &key, reqwest::Method::POST, "/v1/profiles", Some(json!({"name": "imported", "state": state})))
            .await;
    assert_eq!(
        (status, imported["status"].as_str(), imported["savedFrom"].as_str()),
        (201, Some("ready"), Some("import")),
        "{imported}"
    );
    // The cookies alone sign in, but the settings then find no localStorage: the colour
    // above came from the profile's storage.
    let cookies_only = json!({"cookies": state["cookies"], "origins": []});
    let (status, _) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/profiles",
        Some(json!({"name": "cookies-only", "state": cookies_only})),
    )
    .await;
    assert_eq!(status, 201);
    let (job, bytes) = shot(&app, &key, settings("cookies-only")).await;
    assert_eq!(job["pageTitle"], "Members Club — Settings", "{job}");
    assert_eq!((middle(&bytes), strip(&bytes)), (NO_STORAGE_RGB, NO_IDB_RGB));
    // Bad input names its field; names are unique and never look like ids.
    for (body, field) in [
        (json!({"name": "club"}), "name"),
        (json!({"name": "prf_abc"}), "name"),
        (
            json!({"name": "x", "state": {"cookies": [{"name": "a", "value": "b", "domain": "x.test", "sameSite": "lax"}]}}),
            "state.cookies[0].sameSite",
        ),
        (json!({"name": "x", "state": {"origins": [{"origin": "https://x.test/path"}]}}), "state.origins[0].origin"),
        (json!({"name": "x", "state": {"cookies": "nope"}}), "state.cookies"),
    ] {
        let (status, e) = call(&app, &key, reqwest::Method::POST, "/v1/profiles", Some(body.clone())).await;
        assert_eq!((status, e["details"]["field"].as_str()), (400, Some(field)), "{body}: {e}");
    }
    let (status, renamed) =
        call(&app, &key, reqwest::Method::PATCH, "/v1/profiles/imported", Some(json!({"name": "club-2"}))).await;
    assert_eq!((status, renamed["name"].as_str()), (200, Some("club-2")), "{renamed}");

    // Another account sees none of them and cannot use them, by name or by id.
    let (status, list) = call(&app, &other, reqwest::Method::GET, "/v1/profiles", None).await;
    assert_eq!((status, &list["data"]), (200, &json!([])), "{list}");
    for path in [format!("/v1/profiles/{id}"), "/v1/profiles/club".into(), format!("/v1/profiles/{id}/state")] {
        let (status, e) = call(&app, &other, reqwest::Method::GET, &path, None).await;
        assert_eq!((status, e["code"].as_str()), (404, Some("NOT_FOUND")), "{path}: {e}");
    }
    let (status, _) = call(&app, &other, reqwest::Method::DELETE, &format!("/v1/profiles/{id}"), None).await;
    assert_eq!(status, 404);
    for (path, body) in [
        ("/v1/screenshot", json!({"url": site.url("/members"), "profile": id})),
        ("/v1/screenshot", json!({"url": site.url("/members"), "profile": "club"})),
        ("/v1/audits", json!({"url": site.url("/members"), "profile": id})),
        ("/v1/runs", json!({"startUrl": site.url("/members"), "live": true, "profile": id})),
        ("/v1/runs", json!({"startUrl": site.url("/members"), "live": true, "saveProfile": id})),
    ] {
        let (status, e) = call(&app, &other, reqwest::Method::POST, path, Some(body.clone())).await;
        let field = if body.get("saveProfile").is_some() { "saveProfile" } else { "profile" };
        assert_eq!((status, e["details"]["field"].as_str()), (400, Some(field)), "{path} {body}: {e}");
    }

    // The site ends the session: the profile's capture fails as expired, uncharged.
    site.end_sessions();
    let before = used(&app, &key).await;
    let job = app.create(&key, json!({"url": site.url("/members"), "waitUntil": "load", "profile": "club"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(
        done["error"].as_str().unwrap(),
        format!(
            "profile_expired: the page redirected to a sign-in form ({}): the profile's session has expired; sign in again (capture profile login, or the MCP tool profile_login) and retry",
            site.url("/login?next=/members")
        )
    );
    assert_eq!(used(&app, &key).await, before, "an expired profile's capture is not charged");
    let (_, p) = call(&app, &key, reqwest::Method::GET, "/v1/profiles/club", None).await;
    assert_eq!((p["status"].as_str(), p["expiredBy"].as_str()), (Some("expired"), job["id"].as_str()), "{p}");
    // A signed-in audit with it fails the same way.
    let (_, a) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/audits",
        Some(json!({"url": site.url("/members"), "profile": "club"})),
    )
    .await;
    let audit = wait_audit(&app, &key, a["id"].as_str().unwrap(), Duration::from_secs(90)).await;
    assert_eq!(audit["status"], "failed", "{audit}");
    assert!(
        audit["error"].as_str().unwrap().starts_with("profile_expired: the page redirected to a sign-in form"),
        "{audit}"
    );

    // Signing in again makes it ready.
    let (status, out) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/profiles/login",
        Some(json!({"url": site.url("/login"), "profile": id})),
    )
    .await;
    assert_eq!((status, out["profile"]["status"].as_str()), (200, Some("ready")), "{out}");

    // Deleted: gone from the API and from the database.
    let (_, exported) = call(&app, &key, reqwest::Method::GET, "/v1/profiles/club/state", None).await;
    let sid = exported["cookies"][0]["value"].as_str().unwrap().to_string();
    let sealed = sealed_state(&app, &id).await;
    if db == Db::Sqlite {
        // The check below can see a sealed state: before the deletion it is in the files.
        let probe = sealed.clone().unwrap();
        let files = db_files(&app);
        assert!(
            files.iter().any(|(_, b)| b.windows(40).any(|w| w == &probe.as_bytes()[..40])),
            "the stored state is found in the database files before the deletion"
        );
    }
    let (status, _) = call(&app, &key, reqwest::Method::DELETE, "/v1/profiles/club", None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&app, &key, reqwest::Method::GET, &format!("/v1/profiles/{id}"), None).await;
    assert_eq!(status, 404);
    assert_eq!(sealed_state(&app, &id).await, None);
    if db == Db::Sqlite {
        // Nothing of it is left in the files: not the sealed state, not a cookie's value.
        let sealed = sealed.unwrap();
        assert_ne!(sealed, first_sealed, "signing in again sealed a new state");
        let files = db_files(&app);
        assert!(files.iter().any(|(name, _)| name.ends_with(".db")), "the database file is read");
        for (name, bytes) in &files {
            let has = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
            assert!(!has(&sealed[..40]), "{name} holds the deleted profile's state");
            assert!(!has(&first_sealed[..40]), "{name} holds the profile's replaced state");
            assert!(!has(&sid), "{name} holds the session cookie in clear");
        }
    }
}
both_dbs!(profiles_sign_in_once_and_stay_their_accounts);

/// The SQLite database's files (the database, its write-ahead log): name and bytes.
fn db_files(app: &TestApp) -> Vec<(String, Vec<u8>)> {
    let url = app.database_url();
    let db = std::path::PathBuf::from(url.trim_start_matches("sqlite://").split('?').next().unwrap());
    let (dir, stem) = (db.parent().unwrap(), db.file_name().unwrap().to_string_lossy().into_owned());
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let path = f.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(&stem) {
            out.push((name, std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// The sealed state of profile `id` as stored, or None when there is no row.
async fn sealed_state(app: &TestApp, id: &str) -> Option<String> {
    let row = app.state.store.profile_by_id(id).await.unwrap();
    row.and_then(|r| r.state_enc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_helper_signs_up_through_the_verification_link() {
    let app = inbound_app(Db::Sqlite, true).await;
    let (_, key) = app.user_with_key("pro").await;
    let (site, _) = site_for(&app, &key).await;
    let (_, inbox) = json_of(app.get(&key, "/v1/inbox").await).await;
    let fresh = inbox["address"].as_str().unwrap().to_string();
    let (status, out) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/profiles/login",
        Some(json!({"url": site.url("/signup"), "profile": "joined", "password": "a-Long-pass-123"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let steps: Vec<&str> = out["steps"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(steps.contains(&"typed the password in 2 password field(s)"), "{steps:?}");
    assert!(
        steps.contains(&"followed the verification link from the mail 'Confirm your email for Members Club'"),
        "{steps:?}"
    );
    assert_eq!(site.verified(&fresh), Some(true));
    let (job, bytes) =
        shot(&app, &key, json!({"url": site.url("/members"), "waitUntil": "load", "profile": "joined"})).await;
    assert_eq!(job["pageTitle"], "Members Club — Members area");
    assert_eq!(middle(&bytes), MEMBERS_RGB);
    let (_, bytes) =
        shot(&app, &key, json!({"url": site.url("/members/settings"), "waitUntil": "load", "profile": "joined"})).await;
    assert_eq!(middle(&bytes), STORAGE_RGB);

    // A wrong password: LOGIN_FAILED with what was done and what the page said.
    let (status, e) = call(
        &app,
        &key,
        reqwest::Method::POST,
        "/v1/profiles/login",
        Some(json!({"url": site.url("/login"), "profile": "wrong", "password": "not-the-password"})),
    )
    .await;
    assert_eq!((status, e["code"].as_str()), (422, Some("LOGIN_FAILED")), "{e}");
    assert_eq!(
        e["error"],
        "the site still shows its sign-in form after the credentials were submitted: the page says 'Wrong email or password.'"
    );
    assert_eq!(e["details"]["finalUrl"], site.url("/login"));
    let (status, _) = call(&app, &key, reqwest::Method::GET, "/v1/profiles/wrong", None).await;
    assert_eq!(status, 404, "a failed sign-in saves nothing");
}

/// A deployment whose API node runs no browser: the sign-in it is asked for runs on the node
/// that has one (signed internal call), the profile is saved in the shared database, and the
/// answer is the one that node gave — its LOGIN_FAILED too. With no browser node at all, 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_without_a_browser_hands_the_sign_in_to_one_with_it() {
    let master = "42".repeat(32);
    let worker = TestApp::browser_node(&master).await;
    let api = TestApp::spawn(worker.api_node_opts(&master)).await;
    let (_, key) = api.user_with_key("pro").await;
    // The inbox's SMTP address is the worker's (its inbound role).
    let (_, inbox) = json_of(worker.get(&key, "/v1/inbox").await).await;
    let site = MembersSite::start().await;
    site.set_smtp(format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]).parse().unwrap());
    site.add_account(inbox["address"].as_str().unwrap(), inbox["password"].as_str().unwrap());
    worker.advertise_as("node-worker-of-this-test").await;
    let (status, out) = call(
        &api,
        &key,
        reqwest::Method::POST,
        "/v1/profiles/login",
        Some(json!({"url": site.url("/login"), "profile": "club"})),
    )
    .await;
    assert_eq!((status, out["profile"]["status"].as_str()), (200, Some("ready")), "{out}");
    let (status, p) = call(&api, &key, reqwest::Method::GET, "/v1/profiles/club", None).await;
    assert_eq!((status, p["savedFrom"].as_str()), (200, Some("login")), "{p}");
    let (status, e) = call(
        &api,
        &key,
        reqwest::Method::POST,
        "/v1/profiles/login",
        Some(json!({"url": site.url("/login"), "profile": "x", "password": "wrong-password"})),
    )
    .await;
    assert_eq!((status, e["code"].as_str()), (422, Some("LOGIN_FAILED")), "{e}");
    // An internal call without the deployment's signature is refused.
    let r = api.client.post(api.url("/internal/v1/profiles/login")).body("{}").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);

    // No browser anywhere: 503, saying so.
    drop(worker);
    let lonely = TestApp::spawn(Opts::api(Db::Sqlite).roles("api")).await;
    let (_, key) = lonely.user_with_key("pro").await;
    let (status, e) =
        call(&lonely, &key, reqwest::Method::POST, "/v1/profiles/login", Some(json!({"url": site.url("/login")})))
            .await;
    assert_eq!((status, e["code"].as_str()), (503, Some("SERVICE_UNAVAILABLE")), "{e}");
    assert_eq!(e["error"], "no node with a browser is up (the worker role); retry shortly");
}
