//! Monitors on the website: the empty list, a form error, a monitor created through the form
//! and listed, its page, "Check now" until a check is the baseline, that check's view,
//! another account's 404, and deleting it.

use std::time::Duration;

use crate::helpers::{Db, Opts, Site, TestApp, eventually};
use crate::web::{PASSWORD, email};
use capture_testkit::both_dbs;
use capture_testkit::visitor::{Visitor, value_after};

/// The checks table of a monitor's page (or what the page says instead).
fn history(body: &str) -> &str {
    let start = body.find("id=\"history\"").unwrap_or(0);
    &body[start..]
}

async fn monitors_are_made_checked_and_deleted_on_the_website(db: Db) {
    let site = Site::start(vec![(
        "/watched",
        "text/html",
        "<title>Watched page</title><h1>Prices</h1><p>Ten euros a month</p>".to_string(),
    )])
    .await;
    let app = TestApp::spawn(Opts::full(db)).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;

    // The navigation leads there, and an empty list says how to make one.
    let (dash, _) = v.dashboard().await;
    assert!(dash.body.contains(r#"<a href="/dashboard/monitors">Monitors</a>"#), "{}", dash.body);
    let list = v.get("/dashboard/monitors").await.expect(200);
    assert!(list.body.contains(r#"<a href="/dashboard/monitors" aria-current="page">Monitors</a>"#));
    assert!(list.body.contains("No monitors yet. Add one below"), "{}", list.body);
    let csrf = list.csrf();
    let url = site.url("/watched");

    // A schedule under the service's minimum: the form again, naming the field and why.
    let bad = v
        .submit(
            "/dashboard/monitors",
            &csrf,
            &[("url", &url), ("name", "Too often"), ("every", "1m"), ("compare", "both"), ("threshold", "0.001")],
        )
        .await
        .expect(400);
    assert!(bad.body.contains("schedule.every"), "{}", bad.body);
    assert!(bad.body.contains("must be at least 5m"), "{}", bad.body);
    assert!(bad.body.contains(r#"id="mon-every" name="every""#) && bad.body.contains(r#"value="1m""#), "kept as typed");
    assert!(bad.body.contains(r#"aria-invalid="true""#), "the input is marked");
    assert!(!v.get("/dashboard/monitors").await.body.contains("Too often"), "nothing was made");

    // Made through the form, with every=1h: off to its page, and listed by its exact name.
    let made = v
        .submit(
            "/dashboard/monitors",
            &csrf,
            &[
                ("url", &url),
                ("name", "Prices page"),
                ("every", "1h"),
                ("cron", ""),
                ("timezone", ""),
                ("compare", "both"),
                ("threshold", "0.001"),
                ("baseline", "auto"),
                ("ignoreSelectors", ""),
                ("notifyEmails", ""),
            ],
        )
        .await
        .expect(303);
    let location = made.location().to_string();
    let id = location
        .strip_prefix("/dashboard/monitors/")
        .and_then(|rest| rest.split('?').next())
        .unwrap_or_else(|| panic!("to the monitor's page: {location}"))
        .to_string();
    assert!(id.starts_with("mon_"), "{location}");
    let page_url = format!("/dashboard/monitors/{id}");
    let list = v.get("/dashboard/monitors").await.expect(200);
    assert!(list.body.contains(&format!(r#"<a href="{page_url}">Prices page</a>"#)), "{}", list.body);
    assert!(!list.body.contains("No monitors yet"));

    // Its page: the settings and the actions.
    let p = v.get(&location).await.expect(200);
    assert!(p.body.contains("<h1>Prices page</h1>") && p.body.contains("every 1h"), "{}", p.body);
    assert!(p.body.contains("The monitor is created"), "the notice of the create");
    for action in ["check", "pause", "delete"] {
        assert!(p.body.contains(&format!(r#"action="{page_url}/{action}""#)), "{action}: {}", p.body);
    }

    // Check now (the first check may still be running: then the page says so).
    let pressed = v.submit(&format!("{page_url}/check"), &csrf, &[]).await.expect(303);
    let back = pressed.location();
    assert!(
        back == format!("{page_url}?notice=started") || back == format!("{page_url}?notice=busy"),
        "back to the page: {back}"
    );
    let shown = v.get(back).await.expect(200);
    assert!(shown.body.contains("id=\"history\""), "{}", shown.body);

    // The history shows a check whose status is baseline.
    let p = eventually("a baseline check in the history", Duration::from_secs(120), || async {
        let p = v.get(&page_url).await.expect(200);
        if history(&p.body).contains(">baseline</a>") { Ok(p) } else { Err(history(&p.body).to_string()) }
    })
    .await;
    let row = history(&p.body).split("<tr").find(|r| r.contains(">baseline</a>")).unwrap();
    let check_href = value_after(row, "<a href=\"").expect("the check links to its view").replace("&amp;", "&");
    assert!(check_href.starts_with(&format!("{page_url}?check=chk_")), "{check_href}");

    // The check's view: its pictures and its text; it is the baseline, so no button to make it so.
    let view = v.get(&check_href).await.expect(200);
    assert!(view.body.contains("Status: <strong>baseline</strong>"), "{}", view.body);
    assert!(view.body.contains(r#"alt="After""#), "{}", view.body);
    assert!(!view.body.contains("Accept as baseline"), "already the baseline");
    assert!(!view.body.contains("http-equiv=\"refresh\""), "a done check's view stays still");
    let after = view.body.find(r#"alt="After""#).unwrap();
    let img = view.body[..after].rsplit("<img src=\"").next().unwrap().split('"').next().unwrap();
    let file = app.client.get(img.replace("&amp;", "&")).send().await.unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.headers()["content-type"], "image/png");

    // Once no check runs, a second one (Check now again if the first press found one
    // running) is compared with the baseline; accepting it makes it the baseline.
    let mut p = eventually("the checks end", Duration::from_secs(120), || async {
        let p = v.get(&page_url).await.expect(200);
        let h = history(&p.body);
        if h.contains(">pending</a>") { Err(h.to_string()) } else { Ok(p) }
    })
    .await;
    let compared = |body: &str| {
        history(body)
            .split("<tr")
            .find(|r| r.contains(">unchanged</a>") || r.contains(">changed</a>"))
            .map(str::to_string)
    };
    if compared(&p.body).is_none() {
        let pressed = v.submit(&format!("{page_url}/check"), &csrf, &[]).await.expect(303);
        assert_eq!(pressed.location(), format!("{page_url}?notice=started"));
        p = eventually("a compared check", Duration::from_secs(120), || async {
            let p = v.get(&page_url).await.expect(200);
            if compared(&p.body).is_some() { Ok(p) } else { Err(history(&p.body).to_string()) }
        })
        .await;
    }
    let row = compared(&p.body).unwrap();
    let second_href = value_after(&row, "<a href=\"").unwrap().replace("&amp;", "&");
    let second = second_href.rsplit("check=").next().unwrap().to_string();
    let view = v.get(&second_href).await.expect(200);
    assert!(view.body.contains(r#"alt="Before""#) && view.body.contains(r#"alt="After""#), "{}", view.body);
    assert!(view.body.contains(">Accept as baseline</button>"), "{}", view.body);
    v.submit(&format!("{page_url}/baseline"), &csrf, &[("checkId", "nope")]).await.expect(400);
    let accepted = v.submit(&format!("{page_url}/baseline"), &csrf, &[("checkId", &second)]).await.expect(303);
    assert_eq!(accepted.location(), format!("{page_url}?check={second}&notice=baseline"));
    let view = v.get(accepted.location()).await.expect(200);
    assert!(view.body.contains("(the baseline now)") && !view.body.contains("Accept as baseline"), "{}", view.body);
    assert!(v.get(&check_href).await.body.contains(">Accept as baseline</button>"), "the first check may be again");

    // Pause and resume.
    let paused = v.submit(&format!("{page_url}/pause"), &csrf, &[]).await.expect(303);
    assert_eq!(paused.location(), format!("{page_url}?notice=paused"));
    let p = v.get(paused.location()).await.expect(200);
    assert!(p.body.contains(r#"<dd id="monitor-status">paused</dd>"#) && p.body.contains(">Resume</button>"));
    v.submit(&format!("{page_url}/resume"), &csrf, &[]).await.expect(303);
    assert!(v.get(&page_url).await.body.contains(r#"<dd id="monitor-status">active</dd>"#));

    // Another account finds nothing there, and cannot act on it.
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    other.get(&page_url).await.expect(404);
    other.get(&check_href).await.expect(404);
    let (_, other_csrf) = other.dashboard().await;
    other.submit(&format!("{page_url}/delete"), &other_csrf, &[]).await.expect(404);
    assert!(!other.get("/dashboard/monitors").await.expect(200).body.contains(&id));

    // Delete: gone from the list.
    let gone = v.submit(&format!("{page_url}/delete"), &csrf, &[]).await.expect(303);
    assert_eq!(gone.location(), "/dashboard/monitors?notice=deleted");
    let list = v.get(gone.location()).await.expect(200);
    assert!(!list.body.contains(&id) && !list.body.contains("Prices page"), "{}", list.body);
    assert!(list.body.contains("No monitors yet"));
    v.get(&page_url).await.expect(404);
}

both_dbs!(monitors_are_made_checked_and_deleted_on_the_website);
