//! The auth-test journey through the CLI, the test playing the agent against a fixture site
//! on 127.0.0.1 that mails its verification link and code through the service's inbound
//! SMTP server: `auth-test` (sign up) → sign up with the inbox's address and password →
//! `inbox --wait` (the link and code) → `auth-test record` → `auth-test` (expect the
//! verification) → verify → record → `auth-test` (sign in, high confidence, the history) →
//! sign in → record.

#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use capture_testkit::inbox_fixture::AuthSite;
use helpers::*;
use serde_json::Value;

struct Agent<'a> {
    app: &'a TestApp,
    key: String,
}

impl Agent<'_> {
    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_capture"));
        cmd.args(args);
        for (k, v) in &self.app.env {
            cmd.env(k, v);
        }
        cmd.env("CAPTURE_SERVER", &self.app.base).env("CAPTURE_API_KEY", &self.key);
        // Keep the CLI away from any stored session of the machine running the tests.
        cmd.env("XDG_CONFIG_HOME", self.app.data_dir.join("cli-config"));
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "capture {args:?} failed ({:?}): {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("capture {args:?}: {e}: {out}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_auth_test_journey_through_the_cli() {
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite)
            .roles("api,worker,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let agent = Agent { app: &app, key };
    let site = AuthSite::start().await;
    let home = site.url("/");

    // 1. First visit: nothing known, the page has a sign-up form → sign up, expect a verification mail.
    let c = agent.json(&["auth-test", &home, "--json"]);
    assert_eq!(c["origin"], site.base.as_str(), "{c}");
    assert_eq!(c["recommendation"], "sign_up", "{c}");
    assert_eq!(c["likelyAuthMethod"], "password", "{c}");
    assert_eq!(c["expectedFollowUp"], "email_verification", "{c}");
    assert_eq!(c["history"], serde_json::json!([]));
    assert_eq!(c["probed"], true);
    assert!(c["accountExistsConfidence"].as_f64().unwrap() < 0.2, "{c}");
    let evidence = c["evidence"].to_string();
    assert!(evidence.contains("sign-up form") && evidence.contains("verification wording"), "{evidence}");
    let address = c["inbox"]["address"].as_str().unwrap().to_string();
    let password = c["inbox"]["password"].as_str().unwrap().to_string();
    assert!(address.ends_with("@inbox.test") && password.len() >= 20, "{c}");
    // The readable summary says the same and shows what to type.
    let text = agent.ok(&["auth-test", &home, "--probe", "never"]);
    assert!(text.contains("Recommendation:  sign_up"), "{text}");
    assert!(text.contains(&format!("Use address:     {address}")), "{text}");
    assert!(text.contains(&format!("Use password:    {password}")), "{text}");

    // 2. The agent signs up with the inbox's credentials; the site mails the service's SMTP server.
    let inbox = agent.json(&["inbox", "--json"]);
    assert_eq!(inbox["inbox"]["address"], address.as_str());
    let smtp = format!("{}:{}", inbox["inbox"]["smtp"]["host"].as_str().unwrap(), inbox["inbox"]["smtp"]["port"]);
    site.set_smtp(smtp.parse().unwrap());
    let web = reqwest::Client::new();
    let form = [("email", address.as_str()), ("password", password.as_str()), ("confirm", password.as_str())];
    let r = web.post(site.url("/signup")).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 200, "{:?} {:?}", r.text().await, site.sent());

    // 3. `inbox --wait` hands over the link and the code.
    let out = agent.ok(&["inbox", "--wait", "--timeout", "30"]);
    let link = out.lines().find_map(|l| l.strip_prefix("link: ")).unwrap_or_else(|| panic!("no link in: {out}"));
    let code = out.lines().find_map(|l| l.strip_prefix("code: ")).unwrap_or_else(|| panic!("no code in: {out}"));
    assert!(link.starts_with(&site.url("/verify?token=")), "{out}");
    assert_eq!(code.len(), 6, "{out}");
    agent.ok(&[
        "auth-test",
        "record",
        &home,
        "--action",
        "sign_up",
        "--outcome",
        "verification_sent",
        "--method",
        "password",
    ]);
    let c = agent.json(&["auth-test", &home, "--json"]);
    assert_eq!(c["recommendation"], "expect_verification", "{c}");
    assert_eq!(c["expectedFollowUp"], "email_verification", "{c}");
    assert!(c["evidence"].to_string().contains("Confirm your email for Fixture App"), "{c}");

    // 4. Verify, and record it.
    let r = web.get(link).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(site.verified(&address), Some(true));
    let rec = agent.ok(&[
        "auth-test",
        "record",
        &home,
        "--action",
        "verify",
        "--outcome",
        "success",
        "--note",
        "link from the inbox",
    ]);
    assert!(rec.contains("verify → success"), "{rec}");

    // 5. Next visit: sign in, with high confidence, the history shown, no page load needed.
    let c = agent.json(&["auth-test", &site.url("/signin?next=/account"), "--json"]);
    assert_eq!(c["recommendation"], "sign_in", "{c}");
    assert!(c["accountExistsConfidence"].as_f64().unwrap() >= 0.9, "{c}");
    assert_eq!(c["likelyAuthMethod"], "password", "{c}");
    assert_eq!(c["expectedFollowUp"], "none", "{c}");
    assert_eq!(c["probed"], false, "{c}");
    let history = c["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{c}");
    assert_eq!((history[0]["action"].as_str(), history[0]["outcome"].as_str()), (Some("verify"), Some("success")));
    assert_eq!(history[0]["note"], "link from the inbox");
    let text = agent.ok(&["auth-test", &home]);
    assert!(text.contains("Recommendation:  sign_in") && text.contains("History (2):"), "{text}");
    assert!(text.contains("sign_up → verification_sent"), "{text}");

    // 6. The agent signs in with the same password, and records it.
    let r = web.post(site.url("/login")).form(&[("email", &address), ("password", &password)]).send().await.unwrap();
    assert_eq!(r.status(), 200);
    agent.ok(&["auth-test", "record", &home, "--action", "sign_in", "--outcome", "success"]);
    let c = agent.json(&["auth-test", &home, "--json"]);
    assert!(c["accountExistsConfidence"].as_f64().unwrap() > 0.9, "{c}");
    assert_eq!(c["history"].as_array().unwrap().len(), 3);

    // The inbox lists the mail (seen now), and a wait with nothing new times out as a failure.
    let listing = agent.ok(&["inbox"]);
    assert!(listing.contains(&address) && listing.contains("Confirm your email for Fixture App"), "{listing}");
    assert!(listing.contains(&format!("link: {link}")), "{listing}");
    let out = agent.run(&["inbox", "--wait", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no mail arrived within 1 s"), "{out:?}");
    // A bad record is refused with the field named.
    let out = agent.run(&["auth-test", "record", &home, "--action", "sign_on", "--outcome", "success"]);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("action"), "{out:?}");
}

/// A person signs in once from the terminal: `capture profile login URL` (the inbox's address
/// and password typed, the mailed code typed by the server), then `capture shot --profile`
/// captures the members' page, `capture profile list` shows it and `capture profile delete`
/// removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_person_signs_in_once_with_capture_profile_login() {
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite)
            .roles("api,worker,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
    let agent = Agent { app: &app, key };
    let inbox = agent.json(&["inbox", "--json"]);
    let inbox = &inbox["inbox"];
    let site = capture_testkit::members_site::MembersSite::start().await;
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]);
    site.set_smtp(smtp.parse().unwrap());
    site.add_account(inbox["address"].as_str().unwrap(), inbox["password"].as_str().unwrap());

    let out = agent.ok(&["profile", "login", &site.url("/login"), "--name", "club"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"  typed the one-time code from the mail 'Your Members Club sign-in code'"), "{out}");
    assert!(
        lines.contains(
            &format!("Signed in to {} as {}", site.url("/members"), inbox["address"].as_str().unwrap()).as_str()
        ),
        "{out}"
    );
    assert!(lines.iter().any(|l| l.starts_with("Profile:  club (prf_")), "{out}");

    let file = app.data_dir.join("members.png");
    agent.ok(&[
        "shot",
        &site.url("/members"),
        "--profile",
        "club",
        "--wait-until",
        "load",
        "-o",
        file.to_str().unwrap(),
        "-q",
    ]);
    let img = image::load_from_memory(&std::fs::read(&file).unwrap()).unwrap().to_rgb8();
    let p = img.get_pixel(img.width() / 2, img.height() / 2);
    assert_eq!([p[0], p[1], p[2]], capture_testkit::members_site::MEMBERS_RGB, "the members' page, signed in");

    let list = agent.json(&["profile", "list", "--json"]);
    assert_eq!(list["data"][0]["name"], "club", "{list}");
    assert_eq!(list["data"][0]["status"], "ready", "{list}");
    let out = agent.ok(&["profile", "delete", "club"]);
    assert_eq!(out, "Deleted the profile club and its state.\n");
    assert_eq!(agent.json(&["profile", "list", "--json"])["data"], serde_json::json!([]));
    // A name that is not one of yours: the server's error, with a failing exit code.
    let out = agent.run(&["shot", &site.url("/members"), "--profile", "club", "-o", file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("'club' is not one of your profiles"), "{out:?}");
}
