//! Sign-up, sign-in, CSRF, throttling (behind trusted load balancers too), `next=` and sign-out.

use crate::helpers::{Api, Db, Opts, TestApp};
use crate::web::{PASSWORD, email, spawn};
use capture_testkit::both_dbs;
use capture_testkit::visitor::Visitor;

async fn signing_up_signs_in_and_the_password_signs_in_again(db: Db) {
    let app = spawn(db).await;
    let v = Visitor::new(&app);
    let address = email();
    let p = v.sign_up(&address.to_uppercase(), PASSWORD).await;
    let cookie =
        p.headers.get_all("set-cookie").iter().map(|c| c.to_str().unwrap()).find(|c| c.starts_with("capture_session="));
    let cookie = cookie.expect("a session cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains("Secure"), "no Secure flag on a plain-http base URL: {cookie}");

    let (dash, _) = v.dashboard().await;
    assert_eq!(dash.header("cache-control"), "no-store");
    assert!(dash.header("content-type").starts_with("text/html"));
    assert!(dash.header("content-security-policy").contains("script-src 'self'"));
    assert!(dash.body.contains(&address), "the e-mail is stored lower-case and shown");
    assert!(
        dash.body.contains("<strong>0</strong> of <strong>100</strong> actions used"),
        "free plan usage: {}",
        dash.body
    );

    // The same e-mail cannot sign up twice; a short password is refused.
    let other = Visitor::new(&app);
    let csrf = other.get("/signup").await.expect(200).csrf();
    let again =
        other.post("/signup", &[("csrf", &csrf), ("email", &address), ("password", PASSWORD)]).await.expect(400);
    assert!(again.body.contains("already exists"), "{}", again.body);
    let short = other
        .post("/signup", &[("csrf", &csrf), ("email", &crate::web::email()), ("password", "1234567")])
        .await
        .expect(400);
    assert!(short.body.contains("at least 8 characters"));
    assert!(other.cookie("capture_session").is_none());

    // Sign in with the password; a wrong one is refused without saying which part was wrong.
    let wrong = other.sign_in(&address, "not the password", None).await.expect(400);
    assert!(wrong.body.contains("Wrong e-mail or password"));
    let ok = other.sign_in(&address, PASSWORD, None).await.expect(303);
    assert_eq!(ok.location(), "/dashboard");
    other.dashboard().await;
}
both_dbs!(signing_up_signs_in_and_the_password_signs_in_again);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forms_without_the_matching_csrf_token_are_refused() {
    let app = spawn(Db::Sqlite).await;
    let address = email();

    // Sign-up and sign-in: the hidden field must equal the double-submit cookie.
    let v = Visitor::new(&app);
    let token = "a".repeat(43);
    let no_cookie =
        v.post("/signup", &[("csrf", &token), ("email", &address), ("password", PASSWORD)]).await.expect(403);
    assert!(no_cookie.body.contains("Form expired"));
    v.get("/signup").await.expect(200);
    v.post("/signup", &[("csrf", &token), ("email", &address), ("password", PASSWORD)]).await.expect(403);
    v.post("/signup", &[("email", &address), ("password", PASSWORD)]).await.expect(403);
    v.post("/login", &[("csrf", &token), ("email", &address), ("password", PASSWORD)]).await.expect(403);
    // A cross-site attacker who plants its own cookie value still needs it in the form.
    v.set_cookie("capture_csrf", &token);
    v.post("/signup", &[("csrf", &"b".repeat(43)), ("email", &address), ("password", PASSWORD)]).await.expect(403);
    assert!(v.cookie("capture_session").is_none());
    v.sign_up(&address, PASSWORD).await;

    // Signed in: every POST needs the session's own token.
    let (_, csrf) = v.dashboard().await;
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    let (_, other_csrf) = other.dashboard().await;
    assert_ne!(csrf, other_csrf);
    v.submit("/dashboard/keys", &other_csrf, &[("name", "stolen")]).await.expect(403);
    v.post("/dashboard/keys", &[("name", "no token")]).await.expect(403);
    v.submit("/dashboard/keys", "", &[("name", "empty token")]).await.expect(403);
    let (dash, _) = v.dashboard().await;
    assert!(dash.body.contains("No keys yet"), "no key was created");
    v.submit("/logout", &other_csrf, &[]).await.expect(403);
    v.dashboard().await;
    // Not a form at all.
    let json = app
        .client
        .post(app.url("/dashboard/keys"))
        .header("cookie", format!("capture_session={}", v.cookie("capture_session").unwrap()))
        .json(&serde_json::json!({"csrf": csrf, "name": "json"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json.status().as_u16(), 415);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sign_in_from_one_address_pauses_after_ten_failures_for_one_email() {
    let app = spawn(Db::Sqlite).await;
    let (victim, bystander) = (email(), email());
    Visitor::new(&app).sign_up(&victim, PASSWORD).await;
    Visitor::new(&app).sign_up(&bystander, PASSWORD).await;
    let attacker = Visitor::new(&app);
    for i in 0..10 {
        let p = attacker.sign_in(&victim, &format!("guess number {i}"), None).await;
        assert_eq!(p.status, 400, "attempt {i} is refused normally");
    }
    // Even the right password is refused now, so the answer reveals nothing.
    // A pause of 30 s from the latest failure (doubling with each further one), not a lockout.
    let paused = attacker.sign_in(&victim, PASSWORD, None).await.expect(429);
    let retry: i64 = paused.header("retry-after").parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    assert!(paused.body.contains("Too many failed sign-in attempts"));
    assert!(paused.header("content-type").starts_with("text/html"));
    assert!(
        Visitor::new(&app).sign_in(&victim.to_uppercase(), PASSWORD, None).await.status == 429,
        "e-mails are compared case-insensitively"
    );
    // Another account from the same address is not affected (10 < 30 per address).
    assert_eq!(Visitor::new(&app).sign_in(&bystander, PASSWORD, None).await.expect(303).location(), "/dashboard");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sign_in_pauses_after_thirty_failures_from_one_address() {
    let app = spawn(Db::Sqlite).await;
    let real = email();
    Visitor::new(&app).sign_up(&real, PASSWORD).await;
    let v = Visitor::new(&app);
    let targets: Vec<String> = (0..4).map(|_| email()).collect();
    for i in 0..30 {
        // Spread over four e-mails so no single e-mail reaches its own limit.
        let p = v.sign_in(&targets[i % 4], "wrong password", None).await;
        assert_eq!(p.status, 400, "attempt {i}");
    }
    let paused = Visitor::new(&app).sign_in(&real, PASSWORD, None).await.expect(429);
    assert!(paused.body.contains("Too many failed sign-in attempts"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn next_sends_people_back_only_to_same_site_paths() {
    let app = spawn(Db::Sqlite).await;
    let address = email();
    Visitor::new(&app).sign_up(&address, PASSWORD).await;

    // A page that needs a session sends the visitor to sign in and remembers where it was.
    let v = Visitor::new(&app);
    let p = v.get("/dashboard/webhooks?x=1").await.expect(303);
    assert_eq!(p.location(), "/login?next=%2Fdashboard%2Fwebhooks%3Fx%3D1");
    let form = v.get(p.location()).await.expect(200);
    assert!(form.body.contains("name=\"next\" value=\"/dashboard/webhooks?x=1\""), "{}", form.body);

    let oauth =
        "/oauth/authorize?response_type=code&client_id=abc&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s%2F1";
    assert_eq!(v.sign_in(&address, PASSWORD, Some(oauth)).await.expect(303).location(), oauth);

    for bad in [
        "//evil.example/x",
        "https://evil.example/",
        "/\\evil.example",
        "\\\\evil.example",
        "/\t/evil.example",
        "javascript:alert(1)",
        "dashboard",
    ] {
        let v = Visitor::new(&app);
        let q: String = url::form_urlencoded::byte_serialize(bad.as_bytes()).collect();
        let form = v.get(&format!("/login?next={q}")).await.expect(200);
        assert!(!form.body.contains("name=\"next\""), "{bad:?} is not carried into the form");
        let p = v.sign_in(&address, PASSWORD, Some(bad)).await.expect(303);
        assert_eq!(p.location(), "/dashboard", "{bad:?} must not be followed");
        // Already signed in: the sign-in page forwards, but never off-site.
        assert_eq!(v.get(&format!("/login?next={q}")).await.expect(303).location(), "/dashboard");
    }
    let signed_in = Visitor::new(&app);
    signed_in.sign_in(&address, PASSWORD, None).await.expect(303);
    assert_eq!(signed_in.get("/login?next=%2Fsettings").await.expect(303).location(), "/settings");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn signing_out_ends_the_session_for_good() {
    let app = spawn(Db::Sqlite).await;
    let address = email();
    let v = Visitor::new(&app);
    v.sign_up(&address, PASSWORD).await;
    let session = v.cookie("capture_session").unwrap();
    let (_, csrf) = v.dashboard().await;
    let out = v.submit("/logout", &csrf, &[]).await.expect(303);
    assert_eq!(out.location(), "/login");
    assert!(out.header("set-cookie").contains("Max-Age=0"));
    assert!(v.cookie("capture_session").is_none());
    assert_eq!(v.get("/dashboard").await.expect(303).location(), "/login?next=%2Fdashboard");
    // The old cookie is dead on the server too.
    v.set_cookie("capture_session", &session);
    v.get("/settings").await.expect(303);
    v.submit("/dashboard/keys", &csrf, &[("name", "after sign-out")]).await.expect(303);

    // "Sign out everywhere" ends the account's other sessions as well.
    let (a, b) = (Visitor::new(&app), Visitor::new(&app));
    a.sign_in(&address, PASSWORD, None).await.expect(303);
    b.sign_in(&address, PASSWORD, None).await.expect(303);
    let settings = a.get("/settings").await.expect(200);
    assert!(settings.body.contains(&address) && settings.body.contains("free"));
    a.submit("/settings/sign-out-everywhere", &settings.csrf(), &[]).await.expect(303);
    b.get("/dashboard").await.expect(303);
    a.get("/dashboard").await.expect(303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cookies_are_secure_and_host_bound_when_the_base_url_is_https() {
    let app = crate::helpers::TestApp::spawn(
        crate::helpers::Opts::api(Db::Sqlite).env("CAPTURE_BASE_URL", "https://capture.example.test"),
    )
    .await;
    let v = Visitor::new(&app);
    let form = v.get("/signup").await.expect(200);
    let csrf_cookie = form.header("set-cookie");
    assert!(csrf_cookie.starts_with("__Host-capture_csrf=") && csrf_cookie.contains("; Secure"), "{csrf_cookie}");
    assert!(!csrf_cookie.contains("Domain="), "a __Host- cookie has no Domain");
    let csrf = form.csrf();
    let p = v.post("/signup", &[("csrf", &csrf), ("email", &email()), ("password", PASSWORD)]).await.expect(303);
    let session =
        p.headers.get_all("set-cookie").iter().map(|c| c.to_str().unwrap()).find(|c| c.starts_with("capture_session="));
    assert!(session.unwrap().contains("; Secure"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_administrator_sees_an_unlimited_allowance() {
    let admin = email();
    let app =
        crate::helpers::TestApp::spawn(crate::helpers::Opts::api(Db::Sqlite).env("CAPTURE_ADMIN_EMAILS", &admin)).await;
    let v = Visitor::new(&app);
    v.sign_up(&admin, PASSWORD).await;
    let (dash, _) = v.dashboard().await;
    assert!(
        dash.body.contains("<strong>0</strong> actions used this month. This is an administrator account"),
        "{}",
        dash.body
    );
    assert!(!dash.body.contains("<meter"));
    assert!(v.get("/settings").await.expect(200).body.contains("administrator: no monthly cap"));
}

/// Behind a load balancer (`CAPTURE_TRUSTED_PROXIES` names it; here the test client on
/// 127.0.0.1 plays it and adds `X-Forwarded-For`), backoff and the sign-up limit key on the
/// client the balancer names: one client's 30 failures pause that client only, even when it
/// forged the owner's address into the header before the balancer appended its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn behind_a_trusted_proxy_one_clients_failures_do_not_pause_another() {
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite)
            .env("CAPTURE_TRUSTED_PROXIES", "127.0.0.0/8, 10.0.0.0/8")
            .env("CAPTURE_SIGNUPS_PER_HOUR", "2"),
    )
    .await;
    let (owner_ip, attacker_ip) = ("203.0.113.20", "198.51.100.7");
    let owner = email();
    Visitor::with_header(&app, "x-forwarded-for", owner_ip).sign_up(&owner, PASSWORD).await;
    // The attacker's own header says it is the owner; the balancer (a second trusted hop at
    // 10.0.0.5 too) appends the address it really came from.
    let forged = format!("{owner_ip}, {attacker_ip}, 10.0.0.5");
    let attacker = Visitor::with_header(&app, "x-forwarded-for", &forged);
    let targets: Vec<String> = (0..4).map(|_| email()).collect();
    for i in 0..30 {
        let p = attacker.sign_in(&targets[i % 4], "wrong password", None).await;
        assert_eq!(p.status, 400, "attempt {i}");
    }
    let paused = Visitor::with_header(&app, "x-forwarded-for", attacker_ip).sign_in(&owner, PASSWORD, None).await;
    assert_eq!(paused.status, 429, "the attacker's address is paused");
    // The owner, behind the same balancer, signs in at once.
    let ok = Visitor::with_header(&app, "x-forwarded-for", owner_ip).sign_in(&owner, PASSWORD, None).await;
    assert_eq!(ok.expect(303).location(), "/dashboard");
    // Without a header the balancer itself is the client: not paused by the attacker either.
    assert_eq!(Visitor::new(&app).sign_in(&owner, PASSWORD, None).await.expect(303).location(), "/dashboard");

    // Sign-ups are counted per client: the owner's address made one, may make one more.
    Visitor::with_header(&app, "x-forwarded-for", owner_ip).sign_up(&email(), PASSWORD).await;
    let v = Visitor::with_header(&app, "x-forwarded-for", owner_ip);
    let csrf = v.get("/signup").await.expect(200).csrf();
    let refused = v.post("/signup", &[("csrf", &csrf), ("email", &email()), ("password", PASSWORD)]).await;
    assert_eq!(refused.status, 429, "the third account from one client in an hour");
    Visitor::with_header(&app, "x-forwarded-for", attacker_ip).sign_up(&email(), PASSWORD).await;
}

/// A forwarding header from a peer that is not a trusted proxy is ignored: a guesser on the
/// internet cannot dodge the backoff by naming a new address on every try — with no trusted
/// proxies (the default) or with some that do not include it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn from_an_untrusted_peer_a_forged_forwarded_header_changes_nothing() {
    for trusted in [None, Some("10.0.0.0/8")] {
        let opts = match trusted {
            None => Opts::api(Db::Sqlite),
            Some(t) => Opts::api(Db::Sqlite).env("CAPTURE_TRUSTED_PROXIES", t),
        };
        let app = TestApp::spawn(opts).await;
        let real = email();
        Visitor::new(&app).sign_up(&real, PASSWORD).await;
        let targets: Vec<String> = (0..4).map(|_| email()).collect();
        for i in 0..30 {
            let forged = format!("198.51.100.{i}");
            let (name, value) =
                if i % 2 == 0 { ("x-forwarded-for", forged.clone()) } else { ("forwarded", format!("for={forged}")) };
            let p = Visitor::with_header(&app, name, &value).sign_in(&targets[i % 4], "wrong password", None).await;
            assert_eq!(p.status, 400, "attempt {i} ({trusted:?})");
        }
        for (name, value) in [("x-forwarded-for", "192.0.2.99"), ("forwarded", "for=192.0.2.99")] {
            let p = Visitor::with_header(&app, name, value).sign_in(&real, PASSWORD, None).await;
            assert_eq!(p.status, 429, "{name} from an untrusted peer is ignored ({trusted:?})");
        }
    }
}
