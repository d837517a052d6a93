//! `capture profile login URL`, `capture profile list` and `capture profile delete ID`:
//! browser profiles from the terminal. `login` signs in to a site with the saved test inbox
//! (the server follows the verification mail or types the one-time code) and keeps the
//! signed-in state as a profile that `capture shot --profile NAME` and audits start from.

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::Client;
use crate::error::Result;

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// What `capture profile login` asks for.
pub struct LoginArgs {
    pub url: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub password: Option<String>,
    pub mail_timeout: u64,
    /// One of the caller's proxies to sign in through.
    pub proxy: Option<String>,
    pub json: bool,
}

/// `capture profile login URL [--name N] [--email E] [--password P] [--mail-timeout S] [--proxy P]
/// [--json]`.
pub async fn login(c: &Client, a: LoginArgs) -> Result<()> {
    let mut body = json!({"url": a.url, "mailTimeoutS": a.mail_timeout});
    for (k, v) in [("profile", a.name), ("email", a.email), ("password", a.password), ("proxy", a.proxy)] {
        if let Some(v) = v {
            body[k] = Value::String(v);
        }
    }
    // The sign-in takes a browser and, often, a mail: longer than one ordinary request.
    let v = c.post_with_timeout("/v1/profiles/login", &body, Duration::from_secs(a.mail_timeout * 2 + 120)).await?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    for step in v["steps"].as_array().into_iter().flatten() {
        println!("  {}", step.as_str().unwrap_or(""));
    }
    let p = &v["profile"];
    println!("Signed in to {} as {}", s(&v, "finalUrl"), s(&v, "email"));
    println!("Profile:  {} ({})", s(p, "name"), s(p, "id"));
    println!("Use it:   capture shot URL --profile {}", s(p, "name"));
    Ok(())
}

/// `capture profile list [--json]`.
pub async fn list(c: &Client, as_json: bool) -> Result<()> {
    let v = c.get("/v1/profiles").await?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    let data = v["data"].as_array().cloned().unwrap_or_default();
    if data.is_empty() {
        println!("No profiles yet: capture profile login URL makes one.");
    }
    for p in &data {
        let domains: Vec<&str> =
            p["summary"]["domains"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        println!(
            "{}  {:<24} {:<8} {} cookies  {}",
            s(p, "id"),
            s(p, "name"),
            s(p, "status"),
            p["summary"]["cookies"].as_u64().unwrap_or(0),
            domains.join(", ")
        );
    }
    Ok(())
}

/// `capture profile delete ID-OR-NAME`.
pub async fn delete(c: &Client, id: &str) -> Result<()> {
    c.delete(&format!("/v1/profiles/{}", urlencode(id))).await?;
    println!("Deleted the profile {id} and its state.");
    Ok(())
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}
