//! Throwaway: consent/blocking step timing on a rich static page (not committed).
mod support;
use capture_core::options::CookieConsent;
use std::time::Instant;
use support::*;

const PAGE: &str = r#"<!doctype html><html><head><title>Rich</title><style>body{margin:0;background:linear-gradient(135deg,#1e3c72,#f7797d);color:#fff;font:16px serif}.card{width:330px;border-radius:18px;padding:20px;box-shadow:0 8px 24px rgba(0,0,0,.35)}</style></head><body><header>Fresh coffee</header><div class="card"><b>Single origin.</b> Our beans come from three farms.</div><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit. Integer nec odio. Praesent libero.</p></body></html>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let server = Server::start(std::sync::Arc::new(|_p: &str, _q: &str| html(PAGE))).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    cfg.pages_per_browser = 1;
    let pool = capture_browser::BrowserPool::start(cfg).await.unwrap();
    let modes = [
        ("none", CookieConsent::None, false),
        ("auto", CookieConsent::Auto, false),
        ("auto+ads", CookieConsent::Auto, true),
    ];
    let mut v: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for i in 0..40 {
        for (k, (_name, mode, ads)) in modes.iter().enumerate() {
            let mut r = url_req(server.url("/rich"));
            r.options.cookie_consent = *mode;
            r.options.wait_until = capture_core::WaitUntil::Load;
            r.options.block_ads = *ads;
            r.options.block_annoyances = *ads;
            r.options.hide_popups = *ads;
            let t = Instant::now();
            let out = pool.capture(r).await.unwrap();
            if i >= 3 {
                v[k].push(t.elapsed().as_secs_f64() * 1000.0);
            }
            assert!(out.bytes.len() > 100);
        }
    }
    for (k, (name, _, _)) in modes.iter().enumerate() {
        let x = &mut v[k];
        x.sort_by(|a, b| a.partial_cmp(b).unwrap());
        eprintln!("RESULT {name}: p50 {:.1} ms min {:.1}", x[x.len() / 2], x[0]);
    }
}
