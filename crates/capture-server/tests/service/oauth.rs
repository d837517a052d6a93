//! The OAuth 2.1 authorization server and the MCP endpoint's front door, driven over HTTP
//! against the in-process application: metadata, registration, sign-in and consent on the
//! website, PKCE, redirect URIs, single-use codes, refresh rotation with replay detection,
//! revocation, audiences, and the 401 of `/mcp`.

use crate::helpers::{Api, App, Db, Opts};
use capture_testkit::oauth::*;
use serde_json::{Value, json};

/// Run an `async fn(Db)` test on SQLite and on PostgreSQL.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(super::Db::Sqlite).await
            })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(super::Db::Postgres).await
            })*
        }
    };
}

on_both!(
    an_access_token_reads_the_same_balance_as_an_api_key,
    a_code_works_once_and_its_replay_revokes_the_tokens,
    refresh_rotates_and_a_replayed_refresh_token_ends_the_grant,
    revocation_ends_access_and_refresh_tokens,
    a_client_id_metadata_document_identifies_a_client_without_registration,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_names_the_issuer_endpoints_and_the_mcp_resource() {
    let app = App::spawn(Db::Sqlite).await;
    let m: Value =
        app.http.get(app.url("/.well-known/oauth-authorization-server")).send().await.unwrap().json().await.unwrap();
    assert_eq!(m["issuer"], app.base);
    assert_eq!(m["authorization_endpoint"], app.url("/oauth/authorize"));
    assert_eq!(m["token_endpoint"], app.url("/oauth/token"));
    assert_eq!(m["registration_endpoint"], app.url("/oauth/register"));
    assert_eq!(m["revocation_endpoint"], app.url("/oauth/revoke"));
    assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(m["response_types_supported"], json!(["code"]));
    assert_eq!(m["grant_types_supported"], json!(["authorization_code", "refresh_token"]));
    assert!(m["token_endpoint_auth_methods_supported"].as_array().unwrap().contains(&json!("none")));
    assert_eq!(m["client_id_metadata_document_supported"], true);
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let p: Value = app.http.get(app.url(path)).send().await.unwrap().json().await.unwrap();
        assert_eq!(p["resource"], app.url("/mcp"), "{path}");
        assert_eq!(p["authorization_servers"], json!([app.base]), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_accepts_https_and_loopback_redirects_only() {
    let app = App::spawn(Db::Sqlite).await;
    let r = app
        .register(&["http://127.0.0.1:5000/cb", "http://[::1]/cb", "http://localhost:1/cb", "https://app.example/cb"])
        .await;
    assert_eq!(r.status(), 201);
    let c: Value = r.json().await.unwrap();
    assert!(c["client_id"].as_str().unwrap().starts_with("oc_"));
    assert_eq!(c["token_endpoint_auth_method"], "none");
    assert!(c.get("client_secret").is_none());
    for bad in [&["http://example.com/cb"][..], &["https://app.example/cb#x"], &[], &["javascript:alert(1)"]] {
        let r = app.register(bad).await;
        assert_eq!(r.status(), 400, "{bad:?}");
        assert_eq!(r.json::<Value>().await.unwrap()["error"], "invalid_redirect_uri", "{bad:?}");
    }
    let r = app
        .http
        .post(app.url("/oauth/register"))
        .json(&json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "invalid_client_metadata");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorizing_without_a_session_goes_to_sign_in_and_comes_back() {
    let app = App::spawn(Db::Sqlite).await;
    let client_id = app.client().await;
    let challenge = s256(&verifier());
    let params = [
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", "abc"),
    ];
    let r = app.authorize("", &params).await;
    assert_eq!(r.status(), 303);
    let to = location(&r);
    assert_eq!(to.path(), "/login");
    let next = query(&to)["next"].clone();
    assert!(next.starts_with("/oauth/authorize?"), "{next}");
    // After signing in, the same address shows the consent page.
    let (email, cookie) = app.signed_in_user().await;
    let page = app.http.get(app.url(&next)).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Test client") && html.contains(&email), "{html}");
    // "Deny" goes back to the client with access_denied and its state.
    let to = app.consent(&cookie, &params, "deny").await;
    assert!(to.as_str().starts_with(REDIRECT));
    assert_eq!(query(&to)["error"], "access_denied");
    assert_eq!(query(&to)["state"], "abc");
}

async fn an_access_token_reads_the_same_balance_as_an_api_key(db: Db) {
    let app = App::spawn(db).await;
    let (email, _client, tokens) = app.tokens(None).await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    let access = tokens["access_token"].as_str().unwrap();
    assert!(tokens["refresh_token"].as_str().is_some());
    let key = app.app.new_key(&email).await;
    let by_token = app.balance(access).await;
    assert_eq!(by_token.status(), 200);
    assert!(by_token.headers().get("x-ratelimit-limit").is_some());
    let by_token: Value = by_token.json().await.unwrap();
    let by_key: Value = app.balance(&key).await.json().await.unwrap();
    assert_eq!(by_token, by_key);
    assert_eq!(by_token["usage"]["used"], 0);
    // An MCP token (audience {base_url}/mcp) serves the balance and MCP only, not the rest
    // of the REST API (the CLI asks for audience {base_url}, which the REST API accepts).
    let r = app.http.get(app.url("/v1/screenshots")).bearer_auth(access).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let bogus = format!("cap_at_{}", capture_core::ids::random_string(43));
    assert_eq!(app.balance(&bogus).await.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pkce_is_required_and_only_s256_with_the_right_verifier_passes() {
    let app = App::spawn(Db::Sqlite).await;
    let (_email, cookie) = app.signed_in_user().await;
    let client_id = app.client().await;
    let v = verifier();
    let base =
        [("response_type", "code"), ("client_id", client_id.as_str()), ("redirect_uri", REDIRECT), ("state", "s")];
    // plain, or no challenge at all: refused back to the client.
    for extra in [vec![("code_challenge", v.as_str()), ("code_challenge_method", "plain")], vec![]] {
        let params: Vec<_> = base.iter().copied().chain(extra).collect();
        let r = app.authorize(&cookie, &params).await;
        assert_eq!(r.status(), 303);
        let q = query(&location(&r));
        assert_eq!(q["error"], "invalid_request", "{q:?}");
        assert_eq!(q["state"], "s");
    }
    // A wrong verifier: invalid_grant, and the code is spent.
    let (code, verifier) = app.code(&cookie, &client_id, None).await;
    let (status, body) = app.exchange(&client_id, &code, &format!("{verifier}x")).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
    let (status, _) = app.exchange(&client_id, &code, &verifier).await;
    assert_eq!(status, 400);
    // No verifier at all.
    let (code, _) = app.code(&cookie, &client_id, None).await;
    let (status, body) = app
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", &client_id),
        ])
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_uris_must_match_exactly_except_a_loopback_port() {
    let app = App::spawn(Db::Sqlite).await;
    let (_email, cookie) = app.signed_in_user().await;
    let client_id = app.client().await;
    let challenge = s256(&verifier());
    // Not registered: an error page, never a redirect.
    for bad in ["http://127.0.0.1:9/other", "https://evil.example/callback", "http://localhost:9/callback"] {
        let r = app.authorize(&cookie, &authz(&client_id, bad, &challenge)).await;
        assert_eq!(r.status(), 400, "{bad}");
        assert!(r.headers().get("location").is_none());
    }
    // A loopback redirect on another port is the same native app (RFC 8252).
    let r = app.authorize(&cookie, &authz(&client_id, "http://127.0.0.1:45678/callback", &challenge)).await;
    assert_eq!(r.status(), 200);
    // The token request must repeat the redirect URI exactly.
    let (code, verifier) = app.code(&cookie, &client_id, None).await;
    let (status, body) = app
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:10/callback"),
            ("client_id", &client_id),
            ("code_verifier", &verifier),
        ])
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
    // An unknown client at the token endpoint.
    let (status, body) = app.exchange("oc_nosuchclient", "cap_ac_x", &verifier).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")));
}

async fn a_code_works_once_and_its_replay_revokes_the_tokens(db: Db) {
    let app = App::spawn(db).await;
    let (_email, cookie) = app.signed_in_user().await;
    let client_id = app.client().await;
    let (code, verifier) = app.code(&cookie, &client_id, None).await;
    let (status, tokens) = app.exchange(&client_id, &code, &verifier).await;
    assert_eq!(status, 200);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(app.balance(access).await.status(), 200);
    let (status, body) = app.exchange(&client_id, &code, &verifier).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(app.balance(access).await.status(), 401);
    let (status, _) = app.refresh(&client_id, tokens["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, 400);
    // A code issued to one client is no good to another.
    let other = app.client().await;
    let (code, verifier) = app.code(&cookie, &client_id, None).await;
    let (status, body) = app.exchange(&other, &code, &verifier).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
}

async fn refresh_rotates_and_a_replayed_refresh_token_ends_the_grant(db: Db) {
    let app = App::spawn(db).await;
    let (_email, client_id, first) = app.tokens(None).await;
    let rt1 = first["refresh_token"].as_str().unwrap();
    let (status, second) = app.refresh(&client_id, rt1).await;
    assert_eq!(status, 200, "{second}");
    let rt2 = second["refresh_token"].as_str().unwrap();
    assert_ne!(rt1, rt2);
    let at2 = second["access_token"].as_str().unwrap();
    assert_ne!(first["access_token"], second["access_token"]);
    assert_eq!(app.balance(at2).await.status(), 200);
    // Another client cannot use this refresh token.
    let other = app.client().await;
    let (status, body) = app.refresh(&other, rt2).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
    // The old one again: refused, and the whole family is revoked.
    let (status, body) = app.refresh(&client_id, rt1).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(app.balance(at2).await.status(), 401);
    let (status, _) = app.refresh(&client_id, rt2).await;
    assert_eq!(status, 400);
    // Unknown grant types are named as such.
    let (status, body) = app.token(&[("grant_type", "password"), ("client_id", &client_id)]).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("unsupported_grant_type")));
}

async fn revocation_ends_access_and_refresh_tokens(db: Db) {
    let app = App::spawn(db).await;
    let (_email, client_id, t) = app.tokens(None).await;
    let revoke = |token: String| {
        let app = &app;
        let client_id = client_id.clone();
        async move {
            app.http
                .post(app.url("/oauth/revoke"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form(&[("token", &token), ("client_id", &client_id)]))
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let access = t["access_token"].as_str().unwrap().to_string();
    assert_eq!(revoke(access.clone()).await, 200);
    assert_eq!(app.balance(&access).await.status(), 401);
    // Unknown tokens are answered the same way (RFC 7009 §2.2).
    assert_eq!(revoke("cap_rt_unknown".into()).await, 200);
    let (status, t2) = app.refresh(&client_id, t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(revoke(t2["refresh_token"].as_str().unwrap().to_string()).await, 200);
    let (status, _) = app.refresh(&client_id, t2["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, 400);
    // Revoking the refresh token ended the grant's access token too.
    assert_eq!(app.balance(t2["access_token"].as_str().unwrap()).await.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_carry_their_audience_and_mcp_accepts_only_its_own() {
    let app = App::spawn(Db::Sqlite).await;
    let mcp = app.url("/mcp");
    // For the API as a whole: fine for the balance, refused by /mcp.
    let (_e, client_id, api) = app.tokens(Some(&app.base)).await;
    let api_token = api["access_token"].as_str().unwrap();
    assert_eq!(app.balance(api_token).await.status(), 200);
    let r = app.mcp_initialize(Some(api_token)).await;
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"].to_str().unwrap().contains("invalid_token"));
    // Asking for a different audience when refreshing is refused and changes nothing.
    let rt = api["refresh_token"].as_str().unwrap();
    let (status, body) = app
        .token(&[("grant_type", "refresh_token"), ("refresh_token", rt), ("client_id", &client_id), ("resource", &mcp)])
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_target")));
    let (status, _) = app.refresh(&client_id, rt).await;
    assert_eq!(status, 200);
    // For the MCP server: accepted there.
    let (_e, _c, m) = app.tokens(Some(&mcp)).await;
    let r = app.mcp_initialize(m["access_token"].as_str()).await;
    assert_eq!(r.status(), 200);
    let init: Value = r.json().await.unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "capture", "{init}");
    // Someone else's resource is refused at the authorization endpoint.
    let (_email, cookie) = app.signed_in_user().await;
    let client_id = app.client().await;
    let challenge = s256(&verifier());
    let r = app
        .authorize(
            &cookie,
            &[
                ("response_type", "code"),
                ("client_id", &client_id),
                ("redirect_uri", REDIRECT),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("resource", "https://other.example/mcp"),
            ],
        )
        .await;
    assert_eq!(query(&location(&r))["error"], "invalid_target");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_without_a_token_answers_401_with_where_to_sign_in() {
    let app = App::spawn(Db::Sqlite).await;
    for r in [app.mcp_initialize(None).await, app.http.get(app.url("/mcp")).send().await.unwrap()] {
        assert_eq!(r.status(), 401);
        let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_string();
        assert!(
            challenge.starts_with(&format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                app.base
            )),
            "{challenge}"
        );
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["mcp_url"], app.url("/mcp"));
        assert_eq!(body["login_url"], app.url("/login"));
        assert_eq!(body["setup_url"], app.url("/mcp/setup"));
        assert_eq!(body["codex_login_command"], "codex mcp login capture");
    }
    let setup = app.http.get(app.url("/mcp/setup")).send().await.unwrap();
    assert_eq!(setup.status(), 200);
    let html = setup.text().await.unwrap();
    for needle in
        ["Claude Code", "Codex", "Cursor", "VS Code", "claude mcp add --transport http capture", "take_screenshot"]
    {
        assert!(html.contains(needle), "setup page lacks {needle}");
    }
}

async fn a_client_id_metadata_document_identifies_a_client_without_registration(db: Db) {
    use axum::routing::get;
    let app = App::spawn(db).await;
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://{}", l.local_addr().unwrap());
    let good = format!("{site}/client.json");
    let (good_doc, liar_doc) = (
        json!({"client_id": good, "client_name": "Documented app", "redirect_uris": [REDIRECT]}),
        json!({"client_id": "https://someone-else.example/client.json", "redirect_uris": [REDIRECT]}),
    );
    let router = axum::Router::new()
        .route("/client.json", get(move || async move { axum::Json(good_doc) }))
        .route("/liar.json", get(move || async move { axum::Json(liar_doc) }));
    tokio::spawn(async move {
        let _ = axum::serve(l, router).await;
    });
    let (_email, cookie) = app.signed_in_user().await;
    let challenge = s256(&verifier());
    let params = |client_id: &str| {
        form(&[
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ])
    };
    let page = app
        .http
        .get(format!("{}?{}", app.url("/oauth/authorize"), params(&good)))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Documented app") && html.contains(&good), "{html}");
    let r = app
        .http
        .get(format!("{}?{}", app.url("/oauth/authorize"), params(&format!("{site}/liar.json"))))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("does not equal the URL"));
}

/// The audit tools over MCP: listed, `run_audit` audits a page and answers with its scores,
/// top issues and report links (one action), `get_audit` reads it back with the whole report.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_run_audit_and_get_audit_call_the_audit_service() {
    let site = capture_audit::fixtures::FixtureSite::start().await.unwrap();
    let app = App::spawn_with(Opts::full(Db::Sqlite)).await;
    let (_e, _c, m) = app.tokens(Some(&app.url("/mcp"))).await;
    let token = m["access_token"].as_str().unwrap();
    let tools = mcp_call(&app, token, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"run_audit") && names.contains(&"get_audit"), "{names:?}");
    let run = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "run_audit").unwrap();
    assert_eq!(run["inputSchema"]["properties"]["maxPages"]["maximum"], 50, "{run}");

    let r =
        mcp_call(&app, token, "tools/call", json!({"name": "run_audit", "arguments": {"url": site.url("/no-title")}}))
            .await;
    assert_ne!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Scores:") && text.contains("/r/"), "{text}");
    let audit = &r["structuredContent"];
    assert_eq!((audit["status"].as_str(), audit["pagesAudited"].as_u64()), (Some("done"), Some(1)), "{audit}");
    let topics = audit["summary"]["topIssues"].to_string();
    assert!(topics.contains("title-missing"), "{topics}");
    let id = audit["id"].as_str().unwrap();

    let r = mcp_call(
        &app,
        token,
        "tools/call",
        json!({"name": "get_audit", "arguments": {"id": id, "includeReport": true}}),
    )
    .await;
    let report = &r["structuredContent"]["report"];
    let ids = report["pages"][0]["findings"].to_string();
    assert!(ids.contains("\"title-missing\""), "{ids}");
    // The same audit over REST is the account's: one action spent.
    let b = mcp_call(&app, token, "tools/call", json!({"name": "account_balance", "arguments": {}})).await;
    assert_eq!(b["structuredContent"]["usage"]["used"], 1, "{b}");
    // Someone else's id, or no id: a tool error with our code, not a protocol error.
    let r = mcp_call(&app, token, "tools/call", json!({"name": "get_audit", "arguments": {"id": "aud_nope"}})).await;
    assert_eq!((r["isError"].as_bool(), r["structuredContent"]["code"].as_str()), (Some(true), Some("NOT_FOUND")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_answers_carry_the_rate_limit_headers_of_the_account() {
    let app = App::spawn(Db::Sqlite).await;
    let mcp = app.url("/mcp");
    let (email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap();
    // One action used through the REST API first, so the figure is the account's.
    let key = app.app.new_key(&email).await;
    let r = app.app.post_json(&key, "/v1/screenshot", &json!({"url": "https://example.com/"})).await;
    assert_eq!(r.status(), 202);
    let r = app.mcp_initialize(Some(token)).await;
    assert_eq!(r.status(), 200);
    let h = r.headers();
    let limit: i64 = h["x-ratelimit-limit"].to_str().unwrap().parse().unwrap();
    let remaining: i64 = h["x-ratelimit-remaining"].to_str().unwrap().parse().unwrap();
    assert_eq!(remaining, limit - 1, "{h:?}");
    assert!(h.contains_key("x-ratelimit-reset"), "{h:?}");
    let exposed = h["access-control-expose-headers"].to_str().unwrap();
    assert!(exposed.contains("x-ratelimit-remaining"), "{exposed}");
}

/// The campaign tools over MCP call the campaigns service: a bad zone refused naming the field,
/// a create with a duplicate stored once, targets added (a duplicate again not added), a launch
/// that only queues and a second one that changes nothing, the campaign read back with its rows,
/// the list, and the sender's capacity with the recipients' domains. No tool sends: launched
/// rows may be audited, but none is mailed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_campaign_tools_call_the_campaigns_service() {
    let app = App::spawn_with(Opts::api(Db::Sqlite)).await;
    let (_e, _c, m) = app.tokens(Some(&app.url("/mcp"))).await;
    let token = m["access_token"].as_str().unwrap();
    let call = |name: &'static str, args: Value| {
        let app = &app;
        async move { mcp_call(app, token, "tools/call", json!({"name": name, "arguments": args})).await }
    };
    // A month from the clock the test runs under: a fixed date passes, and the scheduler would
    // start the campaign between the two launches.
    let send_at = capture_core::time::iso(capture_core::time::now_ms() + 30 * 86_400_000);
    let campaign = |zone: &str| {
        json!({"name": "Cafés in Berlin", "sendAt": send_at, "timezone": zone,
               "reportType": "single_page", "sendHours": "office",
               "recipients": [
                   {"websiteUrl": "https://shop.example", "recipientEmail": "owner@shop.example"},
                   {"websiteUrl": "https://shop.example", "recipientEmail": "owner@shop.example"},
                   {"websiteUrl": "https://cafe.example/", "recipientEmail": "hi@cafe.example"}]})
    };
    let r = call("create_campaign", campaign("Mars/Olympus_Mons")).await;
    assert_eq!(
        (r["isError"].as_bool(), r["structuredContent"]["code"].as_str()),
        (Some(true), Some("VALIDATION_ERROR")),
        "{r}"
    );
    assert!(r.to_string().contains("timezone"), "{r}");

    let r = call("create_campaign", campaign("Europe/Berlin")).await;
    let c = &r["structuredContent"];
    let id = c["id"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    assert!(id.starts_with("cmp_"), "{r}");
    assert_eq!(
        (c["status"].as_str(), c["counts"]["total"].as_i64()),
        (Some("draft"), Some(2)),
        "a duplicate stored once: {r}"
    );

    let r = call(
        "add_campaign_targets",
        json!({"id": id, "recipients": [
            {"websiteUrl": "https://cafe.example/", "recipientEmail": "hi@cafe.example"},
            {"websiteUrl": "https://bakery.example", "recipientEmail": "team@bakery.example"}]}),
    )
    .await;
    let t = &r["structuredContent"];
    assert_eq!((t["added"].as_i64(), t["duplicates"].as_i64()), (Some(1), Some(1)), "{r}");

    let r = call("launch_campaign", json!({"id": id})).await;
    assert_eq!(r["structuredContent"]["status"], "scheduled", "{r}");
    let again = call("launch_campaign", json!({"id": id})).await;
    assert_ne!(again["isError"].as_bool(), Some(true), "{again}");
    assert_eq!(again["structuredContent"]["status"], "scheduled", "a second launch changes nothing: {again}");

    let r = call("get_campaign", json!({"id": id})).await;
    let g = &r["structuredContent"];
    let rows = g["rows"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(rows.len(), 3, "{r}");
    // Launched: the audits may start at once, but nothing is mailed (before sendAt, and this
    // service has no SMTP server) — every row is still on its way, none sent.
    for row in rows {
        assert!(["pending", "auditing", "ready", "skipped"].contains(&row["state"].as_str().unwrap_or("")), "{row}");
        assert!(row["sentAt"].is_null() && row["messageId"].is_null(), "{row}");
    }
    assert_eq!(g["counts"]["sent"].as_i64(), Some(0), "{r}");
    let r = call("get_campaign", json!({"id": "cmp_doesnotexist0000"})).await;
    assert_eq!(r["structuredContent"]["code"], "NOT_FOUND", "{r}");

    let r = call("list_campaigns", json!({"limit": 5})).await;
    let listed = r["structuredContent"]["data"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!((listed.len(), listed[0]["id"].as_str()), (1, Some(id.as_str())), "{r}");

    let r = call("sender_capacity", json!({})).await;
    let cap = &r["structuredContent"];
    let sender = &cap["senders"][0];
    assert!(sender["capToday"].as_i64().unwrap_or(0) > 0, "{r}");
    assert_eq!(sender["sentToday"].as_i64(), Some(0), "{r}");
    let domains: Vec<&str> = cap["domains"].as_array().unwrap().iter().filter_map(|d| d["domain"].as_str()).collect();
    for d in ["shop.example", "cafe.example", "bakery.example"] {
        assert!(domains.contains(&d), "{d} in {domains:?}");
    }
}

/// The suppression tools: the account lifts only what it added. A recipient's unsubscribe or
/// complaint and the mail system's hard bounce (written here by the same store calls the
/// unsubscribe link and the campaign loop make; the REST test drives the real ones) are
/// refused with FORBIDDEN and their source.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_suppression_tools_lift_only_what_the_account_added() {
    use capture_store::SuppressionReason;
    let app = App::spawn_with(Opts::api(Db::Sqlite)).await;
    let (email, _c, m) = app.tokens(Some(&app.url("/mcp"))).await;
    let token = m["access_token"].as_str().unwrap();
    let call = |name: &'static str, args: Value| {
        let app = &app;
        async move { mcp_call(app, token, "tools/call", json!({"name": name, "arguments": args})).await }
    };
    let store = &app.app.state.store;
    let user = store.user_by_email(&email).await.unwrap().unwrap();
    for (address, reason) in [
        ("reader@mcp.test", SuppressionReason::Unsubscribed),
        ("spam@mcp.test", SuppressionReason::Complained),
        ("gone@mcp.test", SuppressionReason::Bounced),
    ] {
        assert!(store.suppress(&user.id, address, address, reason, None, capture_core::time::now_ms()).await.unwrap());
    }
    let r = call("add_suppression", json!({"email": "Mine@mcp.test"})).await;
    let added = &r["structuredContent"];
    assert_eq!((added["reason"].as_str(), added["source"].as_str()), (Some("manual"), Some("tenant")), "{r}");

    let r = call("list_suppressions", json!({"limit": 10})).await;
    let listed = r["structuredContent"]["data"].as_array().unwrap_or_else(|| panic!("{r}")).clone();
    let source_of = |list: &[Value], e: &str| {
        list.iter().find(|s| s["email"].as_str().unwrap().eq_ignore_ascii_case(e)).map(|s| s["source"].clone())
    };
    assert_eq!(source_of(&listed, "reader@mcp.test"), Some(json!("recipient")));
    assert_eq!(source_of(&listed, "spam@mcp.test"), Some(json!("recipient")));
    assert_eq!(source_of(&listed, "gone@mcp.test"), Some(json!("mail_system")));
    assert_eq!(source_of(&listed, "mine@mcp.test"), Some(json!("tenant")));

    for (address, source, reason) in [
        ("reader@mcp.test", "recipient", "unsubscribed"),
        ("spam@mcp.test", "recipient", "complained"),
        ("gone@mcp.test", "mail_system", "bounced"),
    ] {
        let r = call("remove_suppression", json!({"email": address})).await;
        let e = &r["structuredContent"];
        assert_eq!((r["isError"].as_bool(), e["code"].as_str()), (Some(true), Some("FORBIDDEN")), "{r}");
        assert_eq!(
            (e["details"]["source"].as_str(), e["details"]["suppressionReason"].as_str()),
            (Some(source), Some(reason))
        );
    }
    let r = call("remove_suppression", json!({"email": "mine@mcp.test"})).await;
    assert_ne!(r["isError"].as_bool(), Some(true), "{r}");
    let r = call("remove_suppression", json!({"email": "mine@mcp.test"})).await;
    assert_eq!(r["structuredContent"]["code"], "NOT_FOUND", "{r}");
    let r = call("list_suppressions", json!({})).await;
    let left = r["structuredContent"]["data"].as_array().unwrap().len();
    assert_eq!(left, 3, "the three permanent ones stay: {r}");
}
