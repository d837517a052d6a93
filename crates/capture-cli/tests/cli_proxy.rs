//! `capture proxy …` and `--proxy` end to end against the real `capture serve` (with a worker
//! and Chromium), a page of our own and local proxies that speak the real protocols (an HTTP
//! proxy asking for Basic credentials, a SOCKS5 proxy asking for a user name and password):
//! add one proxy and a pool, list, show, test every member against a local page that names an
//! exit address, a capture through the proxy by name, remove; and what the server refuses,
//! named by its field, never echoing credentials.

#[allow(dead_code)]
mod cli_support;
#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use capture_testkit::proxies::TestProxy;
use cli_support::client;
use helpers::*;
use serde_json::{Value, json};

/// The exit address the `/ip` page names (as an address-echo service would).
const EXIT: &str = "203.0.113.7";

/// The server, a key, the pages and a home folder for the client.
struct Setup {
    app: TestApp,
    key: String,
    site: Site,
    home: tempfile::TempDir,
}

impl Setup {
    async fn start(opts: Opts) -> Setup {
        let site = Site::start(vec![
            ("/red", "text/html", solid("#ff0000")),
            ("/ip", "application/json", format!(r#"{{"ip": "{EXIT}"}}"#)),
        ])
        .await;
        let app = TestApp::spawn(opts).await;
        let (_, key) = app.user_with_key("pro").await;
        Setup { app, key, site, home: tempfile::tempdir().unwrap() }
    }

    async fn run(&self, args: &[&str]) -> cli_support::Run {
        let run = client(self.home.path(), &self.app.base, &self.key, args).await;
        println!("capture {args:?} → {:?}\n--- stdout:\n{}--- stderr:\n{}", run.code, run.stdout, run.stderr);
        // Whatever a command prints, the credentials are never in it.
        for secret in ["s3cret", "bob:", "alice:", "pw@", "nope"] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{secret} printed by capture {args:?}"
            );
        }
        run
    }

    /// `capture proxy ARGS --json`, succeeding, as JSON.
    async fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["proxy"];
        all.extend(args);
        all.push("--json");
        let run = self.run(&all).await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
    }

    /// The job `capture shot` made (its id from the progress on stderr).
    async fn job_of(&self, run: &cli_support::Run) -> Value {
        let id = run
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("job ")?.strip_suffix(": pending"))
            .unwrap_or_else(|| panic!("no job id in:\n{}", run.stderr));
        self.app.get(&self.key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap()
    }
}

/// The cells of a table's line (columns are two spaces or more apart).
fn cells(line: &str) -> Vec<&str> {
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()
}

/// How many times `proxy` let `request` through.
fn passed(proxy: &TestProxy, request: &str) -> usize {
    proxy.seen().iter().filter(|x| x.request == request && x.allowed).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn proxies_are_added_listed_shown_tested_used_by_shot_and_removed() {
    let squid = TestProxy::http("squid", Some(("bob", "s3cret"))).await;
    let dante = TestProxy::socks5(Some(("alice", "pw"))).await;
    let s = Setup::start(Opts::full(Db::Sqlite)).await;
    let site_port = s.site.base.rsplit(':').next().unwrap().to_string();
    let (squid_at, dante_at) = (format!("http://{}", squid.addr), format!("socks5://{}", dante.addr));
    // What each proxy is asked for when a page of the site goes through it.
    let (connect, socks) = (format!("CONNECT 127.0.0.1:{site_port}"), format!("SOCKS5 127.0.0.1:{site_port}"));

    // One proxy, its credentials in its URL: shown without them.
    let run = s.run(&["proxy", "add", "squid", &squid.url("http", Some(("bob", "s3cret")))]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let squid_id = run.stdout.lines().next().unwrap().strip_prefix("Added the proxy ").unwrap().split(' ').next();
    let squid_id = squid_id.unwrap().to_string();
    assert!(squid_id.starts_with("prx_"), "{}", run.stdout);
    assert_eq!(
        run.stdout,
        format!(
            "Added the proxy {squid_id} (squid)\n\
             Kind:     proxy\n\
             Members:  [0] {squid_at} (authenticated)\n\
             Use it:   capture shot URL --proxy squid\n"
        )
    );

    // A pool of two, sticky: the SOCKS5 member takes the shared --username/--password, the
    // HTTP member keeps the credentials of its own URL.
    let pool = s
        .json(&[
            "add",
            "pool",
            &squid.url("http", Some(("bob", "s3cret"))),
            &dante.url("socks5", None),
            "--rotation",
            "sticky",
            "--username",
            "alice",
            "--password",
            "pw",
        ])
        .await;
    let pool_id = pool["id"].as_str().unwrap().to_string();
    assert!(pool_id.starts_with("prx_"), "{pool}");
    assert_eq!(
        (&pool["name"], &pool["kind"], &pool["rotation"], &pool["members"]),
        (
            &json!("pool"),
            &json!("pool"),
            &json!("sticky"),
            &json!([{"url": squid_at, "authenticated": true}, {"url": dante_at, "authenticated": true}])
        )
    );
    // One whose password is wrong, for a test that fails.
    let run = s.run(&["proxy", "add", "wrong", &squid.url("http", Some(("bob", "nope")))]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // The list: a header, then a row each, oldest first.
    let run = s.run(&["proxy", "list"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<Vec<&str>> = run.stdout.lines().map(cells).collect();
    let wrong_id = lines[3][0].to_string();
    assert_eq!(
        lines,
        [
            vec!["ID", "NAME", "KIND", "ROTATION", "MEMBERS"],
            vec![squid_id.as_str(), "squid", "proxy", "—", squid_at.as_str()],
            vec![pool_id.as_str(), "pool", "pool", "sticky", format!("{squid_at}, {dante_at}").as_str()],
            vec![wrong_id.as_str(), "wrong", "proxy", "—", squid_at.as_str()],
        ],
        "{}",
        run.stdout
    );
    let list = s.json(&["list"]).await;
    let names: Vec<&str> = list["data"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["squid", "pool", "wrong"]);

    // Show, by name: every member under the other.
    let shown = s.json(&["show", "pool"]).await;
    assert_eq!(shown, pool);
    let run = s.run(&["proxy", "show", "pool"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "{pool_id}  pool\n\
             \x20 Kind:      pool, rotation sticky\n\
             \x20 Members:   [0] {squid_at} (authenticated)\n\
             \x20            [1] {dante_at} (authenticated)\n\
             \x20 Created:   {}\n\
             \x20 Updated:   {}\n",
            pool["createdAt"].as_str().unwrap(),
            pool["updatedAt"].as_str().unwrap()
        )
    );

    // Test the pool against the local page: both members answer it, with the page's status and
    // the exit address it names; each proxy was asked for the page's host and port.
    let ip = s.site.url("/ip");
    let run = s.run(&["proxy", "test", &pool_id, "--url", &ip]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert_eq!(lines[0], format!("Fetched {ip} through pool ({pool_id}):"));
    assert_eq!(cells(lines[1]), ["#", "URL", "OK", "LATENCY", "STATUS", "EXIT ADDRESS / ERROR"]);
    for (line, (i, url)) in lines[2..].iter().zip([("0", &squid_at), ("1", &dante_at)]) {
        let row = cells(line);
        assert_eq!([row[0], row[1], row[2], row[4], row[5]], [i, url.as_str(), "yes", "200", EXIT], "{line}");
        let ms = row[3].strip_suffix(" ms").unwrap_or_else(|| panic!("latency {:?}", row[3]));
        assert!(ms.parse::<u64>().is_ok(), "{line}");
    }
    assert_eq!(passed(&squid, &connect), 1, "{:?}", squid.seen());
    assert_eq!(passed(&dante, &socks), 1, "{:?}", dante.seen());
    let t = s.json(&["test", "squid", "--url", &ip]).await;
    assert_eq!((&t["ok"], &t["target"]), (&json!(true), &json!(ip)));
    let m = &t["members"][0];
    assert_eq!(
        (&m["url"], &m["ok"], &m["status"], &m["exitAddress"], &m["error"]),
        (&json!(squid_at), &json!(true), &json!(200), &json!(EXIT), &Value::Null)
    );

    // A member that fails: its row says why, and the command fails.
    let run = s.run(&["proxy", "test", "wrong", "--url", &ip]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert_eq!(lines[0], format!("Fetched {ip} through wrong ({wrong_id}):"));
    assert_eq!(
        cells(lines[2]),
        [
            "0",
            squid_at.as_str(),
            "no",
            "—",
            "—",
            "proxy_failed: wrong: it refused the credentials (407 Proxy Authentication Required)"
        ]
    );
    assert_eq!(run.stderr, "error: the test of wrong failed: the proxy failed\n");

    // A capture through the proxy, by name: the page itself, the job names the proxy, and the
    // proxy was asked for the page's host and port.
    let before = passed(&squid, &connect);
    let out = s.home.path().join("red.png");
    let out_s = out.display().to_string();
    let run = s.run(&["shot", &s.site.url("/red"), "--wait-until", "load", "--proxy", "squid", "-o", &out_s]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, format!("{out_s}\n"));
    assert_px(&decode(&std::fs::read(&out).unwrap()), 10, 10, [255, 0, 0]);
    let job = s.job_of(&run).await;
    assert_eq!((&job["status"], &job["proxy"]), (&json!("done"), &json!({"id": squid_id, "member": 0})), "{job}");
    assert!(passed(&squid, &connect) > before, "{:?}", squid.seen());

    // Through the sticky pool with a key: the key, not the page's host, picks the member (the
    // server spreads keys by FNV-1a: `127.0.0.1` → member 0, `customer-1` → member 1, the
    // SOCKS5 proxy).
    let before = passed(&dante, &socks);
    let run = s
        .run(&[
            "shot",
            &s.site.url("/red"),
            "--wait-until",
            "load",
            "--proxy",
            "pool",
            "--proxy-sticky-key",
            "customer-1",
            "-o",
            &out_s,
        ])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let job = s.job_of(&run).await;
    assert_eq!((&job["status"], &job["proxy"]), (&json!("done"), &json!({"id": pool_id, "member": 1})), "{job}");
    assert_px(&decode(&std::fs::read(&out).unwrap()), 10, 10, [255, 0, 0]);
    assert!(passed(&dante, &socks) > before, "{:?}", dante.seen());

    // Removed: gone from show (not found, exit code 6) and from the list.
    let run = s.run(&["proxy", "rm", "squid"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "Deleted the proxy squid and its credentials.\n");
    let run = s.run(&["proxy", "show", &squid_id]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert_eq!(run.stderr, "error: proxy not found (HTTP 404, NOT_FOUND)\n");
    assert_eq!(run.stdout, "");
    assert_eq!(s.json(&["rm", &pool_id]).await, json!({"deleted": pool_id}));
    let list = s.json(&["list"]).await;
    let names: Vec<&str> = list["data"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["wrong"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_the_server_refuses_is_named_by_its_field_without_the_credentials() {
    let s = Setup::start(Opts::api(Db::Sqlite)).await;

    let run = s.run(&["proxy", "list"]).await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "No proxies yet: capture proxy add NAME URL adds one.\n"));

    // A bad URL: the API's validation error, naming the field, without the URL's password.
    let run = s.run(&["proxy", "add", "office", "ftp://bob:s3cret@proxy.example:21"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: invalid url: scheme 'ftp' is not supported (use http://, https:// or socks5://) (HTTP 400, VALIDATION_ERROR); \
         details: {\"field\":\"url\",\"reason\":\"scheme 'ftp' is not supported (use http://, https:// or socks5://)\"}\n"
    );
    // A pool member: named by its place.
    let run = s.run(&["proxy", "add", "eu", "http://a.example:8080", "gopher://b.example:70"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(
        run.stderr.ends_with(
            "details: {\"field\":\"urls[1]\",\"reason\":\"scheme 'gopher' is not supported (use http://, https:// or socks5://)\"}\n"
        ),
        "{}",
        run.stderr
    );
    // A rotation for one proxy.
    let run = s.run(&["proxy", "add", "one", "http://a.example:8080", "--rotation", "sticky"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(
        run.stderr.ends_with("details: {\"field\":\"rotation\",\"reason\":\"applies to a pool (urls)\"}\n"),
        "{}",
        run.stderr
    );
    // Wrong usage, before anything is sent: a password without a user name, an unknown rotation.
    let run = s.run(&["proxy", "add", "one", "http://a.example:8080", "--password", "s3cret"]).await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let run = s.run(&["proxy", "add", "one", "http://a.example:8080", "--rotation", "round-robin"]).await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let list = s.json(&["list"]).await;
    assert_eq!(list["data"], json!([]));

    // A capture naming a proxy the caller does not have, and a sticky key without a proxy.
    let run = s.run(&["shot", &s.site.url("/red"), "--proxy", "nosuch"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(
        run.stderr.ends_with(
            "details: {\"field\":\"proxy\",\"reason\":\"'nosuch' is not one of your proxies (GET /v1/proxies lists them)\"}\n"
        ),
        "{}",
        run.stderr
    );
    let run = s.run(&["shot", &s.site.url("/red"), "--proxy-sticky-key", "customer-42"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(
        run.stderr.ends_with(
            "details: {\"field\":\"proxyStickyKey\",\"reason\":\"applies with proxy (a pool with sticky rotation)\"}\n"
        ),
        "{}",
        run.stderr
    );
}
