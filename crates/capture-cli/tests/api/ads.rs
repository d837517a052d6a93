//! Ads against the `capture` binary where the process matters: one real render whose CPU
//! time is read from the server process, and a render whose worker is killed with SIGKILL and
//! taken up again after a restart. The rest: `crates/capture-server/tests/service/api/ads.rs`.

use crate::helpers::*;
use capture_testkit::ads::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A draft of the fixture page: the stream reports stages then `done` with the draft, whose
/// headline, colour, copy, storyboard and script are the page's; the create is idempotent;
/// bad render inputs are 400s naming the allowed values; one render is checked for real.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_becomes_a_draft_and_a_branded_narrated_video() {
    let site = Site::start(vec![("/", "text/html; charset=utf-8", bakery_page())]).await;
    let rx = capture_testkit::webhooks::Receiver::start(vec![(200, Duration::ZERO)]).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await;
    // A website account (to see the dashboard) with an API key.
    let email = format!("ads{}@example.com", rand_suffix());
    let visitor = capture_testkit::visitor::Visitor::new(&app);
    visitor.sign_up(&email, "correct horse battery").await;
    let key = app.new_key(&email).await;
    let r = app.post_json(&key, "/v1/webhooks", &json!({"url": rx.url, "events": ["adshot.completed"]})).await;
    assert_eq!(r.status(), 201);
    let secret = r.json::<Value>().await.unwrap()["endpoint"]["secret"].as_str().unwrap().to_string();

    // The allowed ids are listed.
    let voices: Value = app.get(&key, "/v1/adshot/voices").await.json().await.unwrap();
    let voice_ids: Vec<&str> = voices["data"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert!(voice_ids.contains(&"en-us") && voice_ids.contains(&"en-us+f3"), "{voices}");
    let music: Value = app.get(&key, "/v1/adshot/music").await.json().await.unwrap();
    let music_ids: Vec<&str> = music["data"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(music_ids, ["upbeat", "calm", "corporate", "none"]);

    // Draft, idempotently.
    let draft_t0 = Instant::now();
    let body = json!({"url": site.url("/")});
    let (status, draft, replayed) = post(&app, &key, "/v1/adshot/draft", &body, Some("draft-key-0001")).await;
    assert_eq!(status, 202, "{draft}");
    assert!(!replayed);
    let id = draft["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("drf_"), "{draft}");
    assert_eq!(draft["status"], "pending");
    assert_eq!(draft["object"], "ad_draft");
    let (status, again, replayed) = post(&app, &key, "/v1/adshot/draft", &body, Some("draft-key-0001")).await;
    assert_eq!((status, replayed), (202, true));
    assert_eq!(again["id"], draft["id"], "the replay names the same draft");
    let (status, other, _) =
        post(&app, &key, "/v1/adshot/draft", &json!({"url": "https://other.example"}), Some("draft-key-0001")).await;
    assert_eq!(status, 422, "the key with another body: {other}");

    let events = ad_stream(&app, &key, &id, Duration::from_secs(180)).await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.last(), Some(&"done"), "{events:?}");
    let stages: Vec<&str> = events.iter().filter_map(|(_, d)| d["stage"].as_str()).collect();
    assert!(stages.contains(&"capturing") && stages.contains(&"writing"), "{events:?}");
    eprintln!("BENCH draft: {:.1} s wall (create to done event)", draft_t0.elapsed().as_secs_f64());
    let done = &events.last().unwrap().1;
    assert_eq!(done["draft"]["headline"], "Fresh sourdough every morning", "{done}");

    let draft = get_ad(&app, &key, &id).await;
    let d = &draft["draft"];
    assert_eq!(draft["status"], "done", "{draft}");
    assert_eq!(d["headline"], "Fresh sourdough every morning");
    assert_eq!(d["name"], "Crumb & Co");
    assert_eq!(d["brandColor"], "#E4572E");
    assert_eq!(d["brandColorSource"], "theme-color");
    assert_eq!(d["cta"], "Order now");
    assert!(d["lines"].as_array().unwrap().len() >= 2, "{d}");
    let scenes = d["scenes"].as_array().unwrap();
    assert!(scenes.len() >= 4, "hero, mobile, sections, closing: {d}");
    let sources: Vec<&str> = scenes.iter().map(|s| s["source"].as_str().unwrap()).collect();
    assert!(sources.contains(&"hero") && sources.contains(&"mobile") && sources.contains(&"section"), "{sources:?}");
    assert_eq!(scenes.last().unwrap()["caption"], "Order now");
    let script = d["script"].as_str().unwrap();
    assert!(script.contains("Fresh sourdough every morning") && script.contains("Order now"), "{script}");
    let est = d["estimatedDurationMs"].as_i64().unwrap();
    assert!((15_000..=30_000).contains(&est), "{est}");
    // The scene pictures are served.
    let (s, ct, bytes) = app.fetch(scenes[0]["imageUrl"].as_str().unwrap()).await;
    assert_eq!((s, ct.as_str()), (200, "image/jpeg"));
    let hero = image::load_from_memory(&bytes).unwrap();
    assert_eq!((hero.width(), hero.height()), (1280, 800));
    assert_eq!(used(&app, &key).await, 1, "a draft costs one action");

    // Bad render inputs: 400s naming what is allowed, nothing charged.
    for (body, field, names) in [
        (json!({"draftId": id, "voiceId": "robot", "musicId": "calm"}), "voiceId", "en-us+f3"),
        (json!({"draftId": id, "voiceId": "en-us", "musicId": "jazz"}), "musicId", "corporate"),
        (json!({"draftId": id, "voiceId": "en-us", "musicId": "calm", "brandColor": "red"}), "brandColor", "#RRGGBB"),
        (
            json!({"draftId": id, "voiceId": "en-us", "musicId": "calm", "brandColor": "#12345"}),
            "brandColor",
            "#RRGGBB",
        ),
        (
            json!({"draftId": id, "voiceId": "en-us", "musicId": "calm", "orientation": "square"}),
            "orientation",
            "landscape",
        ),
        (json!({"voiceId": "en-us", "musicId": "calm"}), "draftId", "required"),
    ] {
        let (status, e, _) = post(&app, &key, "/v1/adshot/render", &body, None).await;
        assert_eq!(status, 400, "{body} → {e}");
        assert_eq!(e["code"], "VALIDATION_ERROR");
        assert_eq!(e["details"]["field"], field, "{e}");
        assert!(e["error"].as_str().unwrap().contains(names), "{e}");
    }
    let (status, e, _) = post(
        &app,
        &key,
        "/v1/adshot/render",
        &json!({"draftId": "drf_nosuchdraft", "voiceId": "en-us", "musicId": "calm"}),
        None,
    )
    .await;
    assert_eq!((status, e["code"].as_str()), (404, Some("NOT_FOUND")), "{e}");
    let (status, _, _) = post(&app, &key, "/v1/adshot/draft", &json!({}), None).await;
    assert_eq!(status, 400);
    let (status, _, _) = post(&app, &key, "/v1/adshot/draft", &json!({"url": "ftp://x"}), None).await;
    assert_eq!(status, 400);
    assert_eq!(app.get(&key, "/v1/adshot/ad_nothing").await.status(), 404);
    assert_eq!(used(&app, &key).await, 1);

    // The render.
    let body = json!({"draftId": id, "voiceId": "en-us+f3", "musicId": "upbeat"});
    let (status, render, _) = post(&app, &key, "/v1/adshot/render", &body, Some("render-key-0001")).await;
    assert_eq!(status, 202, "{render}");
    let rid = render["id"].as_str().unwrap().to_string();
    assert!(rid.starts_with("ad_"), "{render}");
    assert_eq!(render["object"], "ad_render");
    assert_eq!(render["draftId"], id.as_str());
    assert_eq!(render["orientation"], "portrait");
    let (_, again, replayed) = post(&app, &key, "/v1/adshot/render", &body, Some("render-key-0001")).await;
    assert!(replayed);
    assert_eq!(again["id"], render["id"]);
    assert_eq!(used(&app, &key).await, 11, "a render costs ten actions, once");

    let pid = app.child.as_ref().unwrap().id();
    let cpu0 = cpu_seconds(pid);
    let t0 = Instant::now();
    let events = ad_stream(&app, &key, &rid, Duration::from_secs(290)).await;
    let render_secs = t0.elapsed().as_secs_f64();
    let cpu1 = cpu_seconds(pid);
    let (last, done) = events.last().unwrap();
    assert_eq!(last, "done", "{events:?}");
    let stages: Vec<&str> = events.iter().filter_map(|(_, d)| d["stage"].as_str()).collect();
    for s in ["voice", "music", "scenes", "mux"] {
        assert!(stages.contains(&s), "stage {s} reported: {stages:?}");
    }
    assert_eq!((done["width"].as_i64(), done["height"].as_i64()), (Some(1080), Some(1920)));
    let duration_ms = done["durationMs"].as_i64().unwrap();
    let span = &done["ad"]["voiceSpanMs"];
    assert!(span[0].as_i64().unwrap() > 0 && span[1].as_i64().unwrap() < duration_ms, "{done}");
    assert!((15_000..=30_000).contains(&duration_ms), "{duration_ms}");
    let video_secs = duration_ms as f64 / 1000.0;
    let (own, children) = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    eprintln!(
        "BENCH render: {render_secs:.1} s wall for {video_secs:.1} s of video; CPU {:.1} s in ffmpeg/espeak-ng + {own:.1} s in the service = {:.2} CPU-s per second of video (load {})",
        children,
        (children + own) / video_secs,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').next().unwrap_or("?")
    );

    let (s, ct, mp4) = app.fetch(done["videoUrl"].as_str().unwrap()).await;
    assert_eq!((s, ct.as_str()), (200, "video/mp4"));
    let (s, ct, thumb) = app.fetch(done["thumbnailUrl"].as_str().unwrap()).await;
    assert_eq!((s, ct.as_str()), (200, "image/png"));
    assert!(image::load_from_memory(&thumb).is_ok());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ad.mp4");
    std::fs::write(&path, &mp4).unwrap();
    let info = ffprobe(&path);
    let streams = info["streams"].as_array().unwrap();
    let video = streams.iter().find(|s| s["codec_type"] == "video").expect("a video stream");
    let audio = streams.iter().find(|s| s["codec_type"] == "audio").expect("an audio stream");
    assert_eq!(video["codec_name"], "h264");
    assert_eq!((video["width"].as_i64(), video["height"].as_i64()), (Some(1080), Some(1920)));
    assert_eq!(video["r_frame_rate"], "30/1");
    assert_eq!(audio["codec_name"], "aac");
    let secs: f64 = info["format"]["duration"].as_str().unwrap().parse().unwrap();
    assert!((15.0..=30.5).contains(&secs), "{secs}");
    // Audible: the voice and music, not silence.
    let level = mean_volume(&path, 1.0, secs - 2.0);
    assert!(level > -35.0, "mean volume {level} dB");
    // The brand colour is in the frames (captions in it; the page's button too).
    let seen =
        (0..4).map(|i| brand_pixels(&frame(&path, 1.0 + i as f64 * (secs - 2.0) / 4.0))).filter(|&n| n > 200).count();
    assert!(seen >= 3, "brand-coloured pixels in {seen} of 4 sampled frames");

    // The render as listed.
    let list: Value = app.get(&key, "/v1/adshots").await.json().await.unwrap();
    let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [rid.as_str(), id.as_str()]);

    // Both sent a signed adshot.completed: the draft's copy, the render's lasting file URLs.
    let got = rx.wait_for(2, Duration::from_secs(30)).await;
    let events: Vec<Value> =
        got.iter().map(|r| capture_testkit::webhooks::verify(&secret, r).expect("signed")).collect();
    let of = |id: &str| events.iter().find(|e| e["data"]["adId"] == id).unwrap_or_else(|| panic!("{id}: {events:?}"));
    assert_eq!(of(&id)["type"], "adshot.completed");
    assert_eq!(of(&id)["data"]["headline"], "Fresh sourdough every morning");
    assert_eq!(of(&id)["data"]["brandColor"], "#E4572E");
    let r = &of(&rid)["data"];
    assert_eq!((r["kind"].as_str(), r["draftId"].as_str()), (Some("render"), Some(id.as_str())));
    assert!(
        r["videoUrl"].as_str().unwrap().starts_with(&app.base) && r["videoUrl"].as_str().unwrap().ends_with(".mp4")
    );
    assert_eq!(r["durationMs"], done["durationMs"]);

    // The dashboard lists both, the render with a player its policy lets play.
    let page = visitor.get("/dashboard/ads").await.expect(200);
    assert!(page.body.contains(&rid) && page.body.contains(&id), "{}", page.body);
    let video_path = url::Url::parse(done["videoUrl"].as_str().unwrap()).unwrap().path().to_string();
    assert!(page.body.contains("<video controls") && page.body.contains(&video_path), "{}", page.body);
    assert!(page.body.contains("Fresh sourdough every morning"));
    assert!(page.header("content-security-policy").contains("media-src 'self'"));
}

/// A render whose worker process is killed mid-encode is taken up again when the lease
/// runs out (by the restarted process here) and finishes; it is charged once. Its voice
/// (a short script: a draft of screenshots alone) is measured above the music alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_render_whose_worker_is_killed_is_taken_up_again() {
    let wide = png(1200, 800, |x, _| if x < 600 { BRAND } else { [250, 250, 250] });
    let tall = png(600, 2000, |_, y| if y % 400 < 200 { [30, 30, 30] } else { [240, 240, 240] });
    let base = serve_files(vec![("/wide.png", "image/png", wide), ("/tall.png", "image/png", tall)]).await;
    let mut app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_QUEUE_LEASE", "3s")).await;
    let (_, key) = app.user_with_key("pro").await;
    let shots = json!({"screenshotUrls": [format!("{base}/wide.png"), format!("{base}/tall.png")]});
    let (_, draft, _) = post(&app, &key, "/v1/adshot/draft", &shots, None).await;
    let id = draft["id"].as_str().unwrap().to_string();
    assert_eq!(wait_ad(&app, &key, &id, Duration::from_secs(120)).await["status"], "done");
    let body = json!({"draftId": id, "voiceId": "en-gb", "musicId": "calm", "orientation": "landscape", "brandColor": "#1A73E8"});
    let (status, render, _) = post(&app, &key, "/v1/adshot/render", &body, None).await;
    assert_eq!(status, 202, "{render}");
    let rid = render["id"].as_str().unwrap().to_string();
    // Kill the process once the scenes are being encoded.
    eventually("the scenes stage", Duration::from_secs(200), || async {
        let v = get_ad(&app, &key, &rid).await;
        assert!(v["status"] != "done", "never saw the scenes stage: {v}");
        if v["stage"] == "scenes" { Ok(()) } else { Err(v) }
    })
    .await;
    app.kill9();
    app.start("api,worker,scheduler").await;
    let v = wait_ad(&app, &key, &rid, Duration::from_secs(400)).await;
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!((v["width"].as_i64(), v["height"].as_i64()), (Some(1920), Some(1080)));
    assert_eq!(v["brandColor"], "#1A73E8");
    assert_eq!(used(&app, &key).await, 11, "charged once");

    // The voice is clearly above the music alone (the tail after the voice-over).
    let (_, _, mp4) = app.fetch(v["videoUrl"].as_str().unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ad.mp4");
    std::fs::write(&path, &mp4).unwrap();
    let secs = v["durationMs"].as_f64().unwrap() / 1000.0;
    let (vs, ve) = (v["voiceSpanMs"][0].as_f64().unwrap() / 1000.0, v["voiceSpanMs"][1].as_f64().unwrap() / 1000.0);
    let (tail_start, tail_end) = (ve + 0.8, secs - 1.6);
    assert!(tail_end - tail_start >= 1.0, "a music-only tail: voice {vs}..{ve} of {secs}");
    let during = mean_volume(&path, vs + 0.3, ve - vs - 0.6);
    let music = mean_volume(&path, tail_start, tail_end - tail_start);
    eprintln!("BENCH audio: {during:.1} dB during the voice-over, {music:.1} dB music alone");
    assert!(music > -40.0, "the music is audible: {music}");
    assert!(during - music >= 6.0, "voice {during:.1} dB over music {music:.1} dB");
}

/// `(own, waited-for children)` CPU seconds of a process, from `/proc/PID/stat` (the
/// children are the render's ffmpeg and espeak-ng runs, counted when they exit).
fn cpu_seconds(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<f64> = rest.split(' ').map(|x| x.parse().unwrap_or(0.0)).collect();
    // Fields 14-17 (utime, stime, cutime, cstime) are 11-14 after the state; 100 ticks a second.
    ((f[11] + f[12]) / 100.0, (f[13] + f[14]) / 100.0)
}
