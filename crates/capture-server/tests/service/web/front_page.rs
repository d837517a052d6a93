//! The front page's live example: the node captures its own API reference at start-up
//! (kept per app in `AppState::front_example`).

use std::time::{Duration, Instant};

use crate::helpers::{Api, Db, Opts, TestApp, decode, rand_suffix};
use capture_testkit::visitor::Visitor;

const PASSWORD: &str = "correct horse battery";

fn email() -> String {
    format!("web{}@example.com", rand_suffix())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_front_page_shows_signed_out_visitors_a_live_capture_of_the_docs() {
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let anon = Visitor::new(&app);
    let front = anon.get("/").await.expect(200);
    assert!(front.body.contains("<a class=\"button\" href=\"/signup\">Create a free account</a>"), "{}", front.body);
    assert!(front.body.contains("<a href=\"/login\">sign in</a>"));
    assert!(front.body.contains(&format!("{}/mcp", app.base)));
    // The node captures its own API reference at start-up (the browser may not load the
    // service's own listener, so it renders the OpenAPI document as one page).
    let deadline = Instant::now() + Duration::from_secs(90);
    let bytes = loop {
        let (status, _, bytes) = app.fetch(&app.url("/assets/example.png")).await;
        if status == 200 {
            break bytes;
        }
        assert_eq!(status, 404);
        assert!(Instant::now() < deadline, "the example was never captured");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (1280, 800));
    // Not a blank page: the reference is dark text on white under a blue header.
    let dark = img.pixels().filter(|p| p[0] < 100 && p[1] < 100 && p[2] < 100).count();
    assert!(dark > 500, "the capture shows the reference ({dark} dark pixels)");
    let front = anon.get("/").await.expect(200);
    assert!(front.body.contains("<img id=\"example-capture\" src=\"/assets/example.png\""), "{}", front.body);
    assert!(front.body.contains(&format!("<code>{}/openapi.json</code>", app.base)), "{}", front.body);
    // Signed in, `/` is the dashboard.
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    assert_eq!(v.get("/").await.expect(303).location(), "/dashboard");
}
