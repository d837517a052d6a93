//! `capture shot URL`: its flags, and every other capture option by name. The request is the
//! server's own type (`ScreenshotIn`): the flags set some of its fields, while
//! `--options FILE.json` and `--set KEY=VALUE` set any field by its API name, so an option the
//! type gains can be sent with no code here. The merged request is read back into the type
//! before anything is sent, so an unknown name or a value of the wrong shape is refused here,
//! naming the key; the server still checks ranges.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use capture_core::options::{CookieConsent, ImageFormat, ScreenshotIn, WaitUntil};
use serde_json::{Map, Value};

use crate::conn::Conn;
use crate::error::{ClientError, Result, exit};
use crate::{commands, retry};

/// A flag's value read as the API reads it (`png`, `networkidle`), so its choices are the
/// type's own.
fn wire<T: serde::de::DeserializeOwned>(s: &str) -> std::result::Result<T, String> {
    serde_json::from_value(Value::String(s.to_string())).map_err(|e| e.to_string())
}

#[derive(clap::Args)]
pub struct ShotCmd {
    #[command(flatten)]
    conn: Conn,
    /// The page to capture (http or https).
    url: String,
    /// Output file (default: <job id>.<extension>: png, jpeg, webp, pdf, mp4, webm, gif, md,
    /// txt or html).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[arg(long)]
    full_page: bool,
    #[arg(long)]
    pdf: bool,
    /// png, jpeg or webp; mp4, webm or gif (with scroll); or the page as text: markdown, text
    /// or html.
    #[arg(long, value_parser = wire::<ImageFormat>)]
    format: Option<ImageFormat>,
    /// With --format markdown, text or html: keep the article only (Readability), without
    /// navigation, footers, sidebars and comments.
    #[arg(long)]
    main_content: bool,
    #[arg(long)]
    width: Option<u32>,
    #[arg(long)]
    height: Option<u32>,
    #[arg(long)]
    dark_mode: bool,
    #[arg(long)]
    device_scale_factor: Option<f64>,
    #[command(flatten)]
    request: RequestArgs,
    /// Print only the saved file's path (no progress, no retry notices).
    #[arg(short, long)]
    quiet: bool,
}

/// What `shot` and `read` share: how the page is loaded and prepared, any option by its API
/// name, and the Idempotency-Key.
#[derive(clap::Args)]
pub struct RequestArgs {
    /// Milliseconds to wait after load.
    #[arg(long)]
    delay: Option<u64>,
    /// Leave cookie banners alone (default: dismiss them).
    #[arg(long)]
    no_cookie_consent: bool,
    /// CSS selector to wait for before capturing (best effort).
    #[arg(long)]
    wait_for: Option<String>,
    /// networkidle, load, domcontentloaded or none.
    #[arg(long, value_parser = wire::<WaitUntil>)]
    wait_until: Option<WaitUntil>,
    /// Timeout for navigation, --wait-for and --click-before, in milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// CSS selector to click before waiting and capturing.
    #[arg(long)]
    click_before: Option<String>,
    /// Start signed in from one of your browser profiles (id or name: capture profile list).
    #[arg(long)]
    profile: Option<String>,
    /// Leave through one of your proxies (id or name: capture proxy list); a proxy that fails
    /// fails the capture naming it, uncharged.
    #[arg(long, value_name = "NAME")]
    proxy: Option<String>,
    /// For a pool with sticky rotation: the key that picks its member (the same key, the
    /// same member; default: the page's host).
    #[arg(long, value_name = "KEY")]
    proxy_sticky_key: Option<String>,
    /// JavaScript evaluated right before the capture.
    #[arg(long)]
    js: Option<String>,
    /// A JSON object of capture options by their API names (flags and --set win over it).
    #[arg(long, value_name = "FILE.json")]
    options: Option<PathBuf>,
    /// Any capture option by its API name, repeatable: --set waitFor='#main' --set timeoutMs=20000.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set, long_help = set_help())]
    set: Vec<(String, Value)>,
    /// The Idempotency-Key sent with every attempt to create the job ([A-Za-z0-9_-]{8,128});
    /// default: a new random key for this run. Running again with the same key within 24 h
    /// returns the same job instead of a new one.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
}

impl RequestArgs {
    /// The Idempotency-Key (the one given, checked, or a new one) and the request: `defaults`,
    /// then the options file, then `flags` with these shared flags, then the --set pairs. All
    /// before connecting, so a refused option never reaches the server.
    pub fn request(&self, defaults: &ScreenshotIn, flags: ScreenshotIn) -> Result<(ScreenshotIn, String)> {
        let idempotency_key = match &self.idempotency_key {
            Some(k) if retry::valid_idempotency_key(k) => k.clone(),
            Some(k) => {
                return Err(ClientError::new(
                    exit::INVALID,
                    format!("--idempotency-key '{k}' must be 8 to 128 of A-Z a-z 0-9 _ -"),
                ));
            }
            None => retry::new_idempotency_key(),
        };
        let file = match &self.options {
            Some(path) => Some((path.as_path(), read_options(path)?)),
            None => None,
        };
        let options = merge(defaults, &self.flags(flags), file, &self.set)?;
        Ok((options, idempotency_key))
    }

    /// `flags` with the shared flags' fields set: a flag is one field of the server's own type.
    fn flags(&self, flags: ScreenshotIn) -> ScreenshotIn {
        ScreenshotIn {
            delay: self.delay,
            cookie_consent: self.no_cookie_consent.then_some(CookieConsent::None),
            wait_for: self.wait_for.clone(),
            wait_until: self.wait_until,
            timeout_ms: self.timeout_ms,
            pre_screenshot_js: self.js.clone(),
            click_before: self.click_before.clone(),
            profile: self.profile.clone(),
            proxy: self.proxy.clone(),
            proxy_sticky_key: self.proxy_sticky_key.clone(),
            ..flags
        }
    }
}

/// `--set`'s long help: the syntax, the precedence and the options' names as the request type
/// declares them (so a new option is listed with no change here).
fn set_help() -> String {
    format!(
        "Any capture option by its API name, repeatable. VALUE is read as JSON when it parses \
         (numbers, true/false, null, [arrays], {{objects}}, \"quoted text\"), otherwise as text: \
         --set waitFor='#main' --set timeoutMs=20000 --set pdf=true. A --set wins over the flags, \
         and the flags over --options. Unknown names and values of the wrong type are refused \
         before anything is sent.\n\nOptions: {}",
        ScreenshotIn::field_names().join(", ")
    )
}

/// One `--set KEY=VALUE`: the key, and the value as JSON when it parses, else as text (the
/// first `=` ends the key, so a value may hold more).
pub fn parse_set(s: &str) -> std::result::Result<(String, Value), String> {
    let Some((key, value)) = s.split_once('=') else {
        return Err(format!("expected KEY=VALUE (e.g. waitFor=#main), got '{s}'"));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("the KEY of KEY=VALUE is empty in '{s}'"));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
    Ok((key.to_string(), value))
}

/// `capture shot`: check the Idempotency-Key and build the request before connecting (a
/// refused option never reaches the server), then create the job, follow it and save the file.
pub async fn run(a: ShotCmd) -> Result<()> {
    let (options, idempotency_key) = a.request.request(&ScreenshotIn::default(), a.flags())?;
    let c = a.conn.connect(a.quiet).await?;
    let args = commands::ShotArgs { output: a.output, options, quiet: a.quiet, idempotency_key };
    commands::shot(&c, args).await
}

impl ShotCmd {
    /// The request `shot`'s own flags make: a flag is one field of the server's own type.
    fn flags(&self) -> ScreenshotIn {
        ScreenshotIn {
            url: Some(self.url.clone()),
            width: self.width,
            height: self.height,
            full_page: self.full_page.then_some(true),
            format: self.format,
            main_content: self.main_content.then_some(true),
            pdf: self.pdf.then_some(true),
            dark_mode: self.dark_mode.then_some(true),
            device_scale_factor: self.device_scale_factor,
            ..ScreenshotIn::default()
        }
    }
}

/// The JSON object in `--options FILE`.
fn read_options(path: &Path) -> Result<Map<String, Value>> {
    let refuse = |why: String| ClientError::new(exit::INVALID, format!("--options {}: {why}", path.display()));
    let text = std::fs::read(path).map_err(|e| refuse(format!("cannot read it ({e})")))?;
    match serde_json::from_slice(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(refuse("must hold a JSON object of options, e.g. {\"waitFor\": \"#main\"}".into())),
        Err(e) => Err(refuse(format!("is not JSON ({e})"))),
    }
}

/// The request from the command's defaults, then the options file, then the flags (only
/// those given), then the --set pairs in order, each later one winning; read back into the
/// type, an unknown name or a value of the wrong shape refused naming its key and where it
/// came from.
fn merge(
    defaults: &ScreenshotIn,
    flags: &ScreenshotIn,
    file: Option<(&Path, Map<String, Value>)>,
    sets: &[(String, Value)],
) -> Result<ScreenshotIn> {
    let mut body = Map::new();
    // Where each key's value came from; the defaults and the flags are typed, so they cannot
    // be the culprit.
    let mut from: HashMap<String, String> = HashMap::new();
    if let Ok(Value::Object(m)) = serde_json::to_value(defaults) {
        body.extend(m);
    }
    if let Some((path, m)) = file {
        for (k, v) in m {
            from.insert(k.clone(), format!("--options {}", path.display()));
            body.insert(k, v);
        }
    }
    if let Ok(Value::Object(m)) = serde_json::to_value(flags) {
        for (k, v) in m {
            from.remove(&k);
            body.insert(k, v);
        }
    }
    for (k, v) in sets {
        from.insert(k.clone(), "--set".into());
        body.insert(k.clone(), v.clone());
    }
    serde_path_to_error::deserialize(Value::Object(body.clone())).map_err(|e| {
        let inner = e.inner().to_string();
        let key = match e.path().iter().next() {
            Some(serde_path_to_error::Segment::Map { key }) => key.clone(),
            _ => between(&inner, "unknown field `", "`").unwrap_or_default().to_string(),
        };
        let origin = from.get(&key).map(|o| format!(" (from {o})")).unwrap_or_default();
        let message = if inner.starts_with("unknown field") {
            format!("unknown option '{key}'{origin}; the options are: {}", ScreenshotIn::field_names().join(", "))
        } else {
            let mut m = format!("option '{}'{origin}: {inner}", e.path());
            // `--set waitFor=404` reads 404 as a number; say how to send it as text.
            if origin == " (from --set)" && body.get(&key).is_some_and(|v| !v.is_string()) {
                m.push_str(&format!(" (to send it as text, quote it: --set {key}='\"…\"')"));
            }
            m
        };
        ClientError::new(exit::INVALID, message)
    })
}

/// The text between `start` and the next `end` in `s`.
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &s[s.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_is_json_when_it_parses_and_text_otherwise() {
        let set = |s: &str| parse_set(s).unwrap();
        assert_eq!(set("quality=70"), ("quality".into(), json!(70)));
        assert_eq!(set("deviceScaleFactor=1.5"), ("deviceScaleFactor".into(), json!(1.5)));
        assert_eq!(set("fullPage=true"), ("fullPage".into(), json!(true)));
        assert_eq!(set("waitFor=null"), ("waitFor".into(), Value::Null));
        assert_eq!(set(r##"hideSelectors=[".ad", "#cookie"]"##), ("hideSelectors".into(), json!([".ad", "#cookie"])));
        assert_eq!(set(r#"headers={"x-a": "1"}"#), ("headers".into(), json!({"x-a": "1"})));
        assert_eq!(set(r#"waitFor="404""#), ("waitFor".into(), json!("404")), "quoted text stays text");
        assert_eq!(set("waitFor=#main"), ("waitFor".into(), json!("#main")));
        assert_eq!(set("waitFor=body"), ("waitFor".into(), json!("body")));
        assert_eq!(set("waitFor=a[href='/x=1']"), ("waitFor".into(), json!("a[href='/x=1']")), "first = only");
        assert_eq!(set("waitFor="), ("waitFor".into(), json!("")));
        assert_eq!(set(" waitUntil =load"), ("waitUntil".into(), json!("load")));
        assert_eq!(parse_set("waitFor").unwrap_err(), "expected KEY=VALUE (e.g. waitFor=#main), got 'waitFor'");
        assert_eq!(parse_set("=body").unwrap_err(), "the KEY of KEY=VALUE is empty in '=body'");
    }

    fn flags() -> ScreenshotIn {
        ScreenshotIn {
            url: Some("https://example.com/".into()),
            width: Some(800),
            full_page: Some(true),
            wait_for: Some("#flag".into()),
            ..Default::default()
        }
    }

    fn sets(pairs: &[&str]) -> Vec<(String, Value)> {
        pairs.iter().map(|s| parse_set(s).unwrap()).collect()
    }

    #[test]
    fn set_wins_over_the_flags_the_flags_over_the_file_and_the_file_over_the_defaults() {
        let file = json!({"waitFor": "#file", "timeoutMs": 2000, "delay": 100, "width": 640, "mainContent": false});
        let Value::Object(file) = file else { unreachable!() };
        // A command's defaults (`read`'s mainContent and format) come first of all.
        let defaults =
            ScreenshotIn { main_content: Some(true), format: Some(ImageFormat::Markdown), ..Default::default() };
        let merged = merge(
            &defaults,
            &flags(),
            Some((Path::new("o.json"), file)),
            &sets(&["waitFor=#main", "timeoutMs=5000", "clickBefore=.accept", "timeoutMs=6000"]),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&merged).unwrap(),
            json!({
                "url": "https://example.com/", "width": 800, "fullPage": true, "delay": 100,
                "waitFor": "#main", "timeoutMs": 6000, "clickBefore": ".accept",
                "mainContent": false, "format": "markdown",
            })
        );
        // null takes a flag's value away.
        let merged = merge(&ScreenshotIn::default(), &flags(), None, &sets(&["fullPage=null"])).unwrap();
        assert_eq!(merged.full_page, None);
    }

    #[test]
    fn unknown_names_and_wrong_shapes_are_refused_naming_the_key() {
        let e = merge(&ScreenshotIn::default(), &flags(), None, &sets(&["nosuchOption=1"])).unwrap_err();
        assert_eq!(e.code, exit::INVALID);
        assert!(
            e.message.starts_with("unknown option 'nosuchOption' (from --set); the options are: url, width, "),
            "{}",
            e.message
        );
        let e = merge(&ScreenshotIn::default(), &flags(), None, &sets(&["timeoutMs=soon"])).unwrap_err();
        assert_eq!(e.code, exit::INVALID);
        assert_eq!(e.message, "option 'timeoutMs' (from --set): invalid type: string \"soon\", expected a JSON number");
        let e = merge(&ScreenshotIn::default(), &flags(), None, &sets(&["waitFor=404"])).unwrap_err();
        assert_eq!(
            e.message,
            "option 'waitFor' (from --set): invalid type: integer `404`, expected a string \
             (to send it as text, quote it: --set waitFor='\"…\"')"
        );
        let e = merge(&ScreenshotIn::default(), &flags(), None, &sets(&["format=tiff"])).unwrap_err();
        assert!(e.message.starts_with("option 'format' (from --set): unknown variant `tiff`"), "{}", e.message);
        let Value::Object(file) = json!({"darkMode": "yes"}) else { unreachable!() };
        let e = merge(&ScreenshotIn::default(), &flags(), Some((Path::new("o.json"), file)), &[]).unwrap_err();
        assert_eq!(
            e.message,
            "option 'darkMode' (from --options o.json): invalid type: string \"yes\", expected a boolean"
        );
    }

    #[test]
    fn the_options_file_must_be_a_json_object() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let good = dir.join("good.json");
        std::fs::write(&good, r##"{"waitFor": "#main"}"##).unwrap();
        assert_eq!(Value::Object(read_options(&good).unwrap()), json!({"waitFor": "#main"}));
        let list = dir.join("list.json");
        std::fs::write(&list, "[1]").unwrap();
        let e = read_options(&list).unwrap_err();
        assert_eq!(e.code, exit::INVALID);
        assert!(
            e.message.ends_with("must hold a JSON object of options, e.g. {\"waitFor\": \"#main\"}"),
            "{}",
            e.message
        );
        let e = read_options(&dir.join("missing.json")).unwrap_err();
        assert!(e.message.contains("missing.json: cannot read it"), "{}", e.message);
    }

    #[test]
    fn proxy_and_its_sticky_key_are_sent_by_their_api_names() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            shot: ShotCmd,
        }
        let cli = Cli::try_parse_from([
            "shot",
            "https://example.com/",
            "--proxy",
            "office",
            "--proxy-sticky-key",
            "customer-42",
        ])
        .unwrap();
        let (options, _) = cli.shot.request.request(&ScreenshotIn::default(), cli.shot.flags()).unwrap();
        assert_eq!(
            serde_json::to_value(options).unwrap(),
            json!({"url": "https://example.com/", "proxy": "office", "proxyStickyKey": "customer-42"})
        );
    }

    #[test]
    fn the_help_lists_every_option_of_the_type() {
        let help = set_help();
        for name in ScreenshotIn::field_names() {
            assert!(help.contains(name), "{name} missing from --set's help");
        }
    }
}
