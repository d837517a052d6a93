//! Probe (ignored): where the time of `blockAds` + `blockAnnoyances` goes on the bench's
//! realistic page, captures interleaved so the machine's noise falls on every setting alike.
//! `cargo test -p capture-browser --test overhead -- --ignored --nocapture`

mod support;

use std::collections::HashMap;
use std::time::Instant;

use capture_browser::BrowserPool;
use capture_core::options::CookieConsent;
use support::*;

const RICH: &str = r##"<!doctype html><html><head><title>Rich</title><style>
@font-face{font-family:Bench;src:url(/font.ttf) format("truetype")}
body{margin:0;font-family:Bench,serif;color:#fff;background:linear-gradient(135deg,#1e3c72 0%,#2a5298 45%,#f7797d 100%);min-height:100vh}
header{padding:32px 40px 12px;font-size:52px;letter-spacing:.5px;text-shadow:0 2px 8px rgba(0,0,0,.4)}
.hero{display:flex;gap:28px;padding:12px 40px;align-items:flex-start}
.card{background:radial-gradient(circle at 30% 20%,rgba(255,255,255,.45),rgba(255,255,255,.06));border-radius:18px;padding:20px 24px;width:330px;font-size:17px;line-height:1.55;box-shadow:0 8px 24px rgba(0,0,0,.35)}
img{border-radius:14px;box-shadow:0 10px 30px rgba(0,0,0,.5)}
p.cols{columns:3;padding:8px 40px;font-size:15px;line-height:1.5;color:#f3f3ff}
</style></head><body><header>Fresh coffee, roasted this morning</header>
<div class="hero"><img src="/photo.png" width="520" height="340" alt="">
<div class="card"><b>Single origin.</b> Our beans come from three farms we visit every year; each bag says which hillside it grew on, when it was picked and the day we roasted it. Free delivery over 30 €, a subscription you can pause, and a cup on us when you come by the shop.</div>
<svg width="230" height="230" viewBox="0 0 230 230"><defs><linearGradient id="g" x1="0" x2="1" y1="0" y2="1"><stop offset="0" stop-color="#ffd86f"/><stop offset="1" stop-color="#fc6262"/></linearGradient></defs>
<circle cx="115" cy="115" r="105" fill="url(#g)"/><path d="M60 130 Q115 40 170 130 T60 130" fill="rgba(30,60,114,.6)"/><text x="115" y="200" font-size="22" text-anchor="middle" fill="#fff">since 1998</text></svg></div>
<p class="cols">Lorem ipsum dolor sit amet, consectetur adipiscing elit. Integer nec odio. Praesent libero. Sed cursus ante dapibus diam. Sed nisi. Nulla quis sem at nibh elementum imperdiet. Duis sagittis ipsum. Praesent mauris. Fusce nec tellus sed augue semper porta. Mauris massa. Vestibulum lacinia arcu eget nulla. Class aptent taciti sociosqu ad litora torquent per conubia nostra, per inceptos himenaeos. Curabitur sodales ligula in libero. Sed dignissim lacinia nunc. Curabitur tortor. Pellentesque nibh. Aenean quam. In scelerisque sem at dolor. Maecenas mattis. Sed convallis tristique sem. Proin ut ligula vel nunc egestas porttitor. Morbi lectus risus, iaculis vel, suscipit quis, luctus non, massa. Fusce ac turpis quis ligula lacinia aliquet. Mauris ipsum. Nulla metus metus, ullamcorper vel, tincidunt sed, euismod in, nibh.</p>
</body></html>"##;

fn photo_png() -> Vec<u8> {
    let (w, h) = (520u32, 340u32);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let grain = (seed % 23) as f32 - 11.0;
        let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
        let r = 120.0 + 90.0 * (fx * 5.0).sin() * (fy * 3.0).cos() + grain;
        let g = 90.0 + 70.0 * (fy * 4.0 + fx).sin() + grain;
        let b = 60.0 + 50.0 * (fx * 2.0 - fy * 6.0).cos() + grain;
        image::Rgb([r.clamp(0.0, 255.0) as u8, g.clamp(0.0, 255.0) as u8, b.clamp(0.0, 255.0) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn where_the_time_goes() {
    let _ = tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).try_init();
    let photo = photo_png();
    let font = std::fs::read("/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf").unwrap();
    let srv = Server::start(std::sync::Arc::new(move |path: &str, _: &str| match path {
        "/photo.png" => Resp::Full(200, "image/png", photo.clone(), 0),
        "/font.ttf" => Resp::Full(200, "font/ttf", font.clone(), 0),
        _ => html(RICH),
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    let settings: [(&str, CookieConsent, bool); 3] = [
        ("none", CookieConsent::None, false),
        ("auto", CookieConsent::Auto, false),
        ("everything", CookieConsent::Auto, true),
    ];
    let mut times: HashMap<&str, Vec<f64>> = HashMap::new();
    let n: usize = std::env::var("PROBE_N").ok().and_then(|v| v.parse().ok()).unwrap_or(25);
    // In rounds of four captures per setting, the first of each left out: a spare page is
    // set up for the most recent job's consent mode, as a steady workload's would be.
    for i in 0..n / 3 + 2 {
        for (name, consent, block) in settings {
            for k in 0..4 {
                let mut r = url_req(srv.url("/rich"));
                r.options.wait_until = capture_core::WaitUntil::Load;
                r.options.cookie_consent = consent;
                (r.options.block_ads, r.options.block_annoyances, r.options.hide_popups) = (block, block, block);
                let t = Instant::now();
                pool.capture(r).await.expect("capture");
                if i >= 1 && k > 0 {
                    times.entry(name).or_default().push(t.elapsed().as_secs_f64() * 1000.0);
                }
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let none = med(times.get_mut("none").unwrap());
    for (name, _, _) in settings {
        let m = med(times.get_mut(name).unwrap());
        println!("{name}: p50 {m:.1} ms ({:+.1} % over none)", (m / none - 1.0) * 100.0);
    }
}
