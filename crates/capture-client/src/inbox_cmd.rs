//! `capture auth-test URL`, `capture auth-test record URL …` and `capture inbox [--wait]`:
//! the auth-test helper and the saved test inbox from the terminal.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::Client;
use crate::error::{ClientError, Result, exit};

/// Each long-poll of `inbox --wait` asks the server to hold this long (its most).
const POLL_MS: u64 = 8_000;

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// `capture auth-test URL [--json] [--probe auto|always|never]`.
pub async fn check(c: &Client, url: &str, as_json: bool, probe: Option<String>) -> Result<()> {
    let mut body = json!({"url": url});
    if let Some(p) = probe {
        body["probe"] = Value::String(p);
    }
    let mut v = c.post("/v1/auth-test/check", Some(&body)).await?;
    let inbox = c.get("/v1/inbox").await?;
    v["inbox"]["password"] = inbox["password"].clone();
    if as_json {
        println!("{}", pretty(&v));
        return Ok(());
    }
    let conf = v["accountExistsConfidence"].as_f64().unwrap_or(0.0);
    println!("Site:            {}", s(&v, "origin"));
    println!("Recommendation:  {}", s(&v, "recommendation"));
    println!("Account exists:  {:.0}% confident", conf * 100.0);
    println!("Auth method:     {}", s(&v, "likelyAuthMethod"));
    println!("Then expect:     {}", s(&v, "expectedFollowUp"));
    println!("Use address:     {}", s(&inbox, "address"));
    println!("Use password:    {}", s(&inbox, "password"));
    let history = v["history"].as_array().cloned().unwrap_or_default();
    if history.is_empty() {
        println!("History:         none recorded for this site");
    } else {
        println!("History ({}):", history.len());
        for a in &history {
            let note = a["note"].as_str().map(|n| format!(" — {n}")).unwrap_or_default();
            println!("  {}  {} → {}{note}", s(a, "at"), s(a, "action"), s(a, "outcome"));
        }
    }
    if let Some(ev) = v["evidence"].as_array().filter(|e| !e.is_empty()) {
        println!("Why:");
        for e in ev {
            println!("  [{}] {}", s(e, "source"), s(e, "detail"));
        }
    }
    Ok(())
}

/// `capture auth-test record URL --action A --outcome O [--method M] [--note N] [--json]`.
pub async fn record(
    c: &Client,
    url: &str,
    action: &str,
    outcome: &str,
    method: Option<String>,
    note: Option<String>,
    as_json: bool,
) -> Result<()> {
    let mut body = json!({"url": url, "action": action, "outcome": outcome});
    if let Some(m) = method {
        body["method"] = Value::String(m);
    }
    if let Some(n) = note {
        body["note"] = Value::String(n);
    }
    let v = c.post("/v1/auth-test/record", Some(&body)).await?;
    if as_json {
        println!("{}", pretty(&v));
    } else {
        println!("Recorded {} → {} on {} ({}).", s(&v, "action"), s(&v, "outcome"), s(&v, "origin"), s(&v, "id"));
    }
    Ok(())
}

/// Options of `capture inbox`.
pub struct InboxArgs {
    pub wait: bool,
    pub json: bool,
    pub from: Option<String>,
    pub since: Option<String>,
    pub limit: Option<u32>,
    /// How long `--wait` waits in all.
    pub timeout: Duration,
}

fn query(pairs: &[(&str, Option<String>)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if let Some(v) = v {
            q.append_pair(k, v);
        }
    }
    let q = q.finish();
    if q.is_empty() { q } else { format!("?{q}") }
}

/// `capture inbox [--wait] [--json]`: the address, password and messages; with `--wait`,
/// the verification link and code of the next mail.
pub async fn inbox(c: &Client, a: InboxArgs) -> Result<()> {
    if a.wait {
        return wait(c, &a).await;
    }
    let inbox = c.get("/v1/inbox").await?;
    let list = c
        .get(&format!(
            "/v1/inbox/messages{}",
            query(&[("limit", a.limit.map(|l| l.to_string())), ("from", a.from.clone()), ("since", a.since.clone())])
        ))
        .await?;
    if a.json {
        println!("{}", pretty(&json!({"inbox": inbox, "messages": list["data"], "nextCursor": list["nextCursor"]})));
        return Ok(());
    }
    println!("Address:   {}", s(&inbox, "address"));
    println!("Password:  {}", s(&inbox, "password"));
    println!("Messages:  {} ({} unseen)", inbox["counts"]["messages"], inbox["counts"]["unseen"]);
    for m in list["data"].as_array().cloned().unwrap_or_default() {
        let from = m["from"]["address"].as_str().unwrap_or(s(&m, "mailFrom")).to_string();
        println!(
            "{}  {}  {}  {}{}",
            s(&m, "id"),
            s(&m, "receivedAt"),
            from,
            s(&m, "subject"),
            if m["seen"] == true { "" } else { "  (new)" }
        );
        if let Some(l) = m["verificationLink"].as_str() {
            println!("    link: {l}");
        }
        if let Some(code) = m["code"].as_str() {
            println!("    code: {code}");
        }
    }
    Ok(())
}

async fn wait(c: &Client, a: &InboxArgs) -> Result<()> {
    let started = Instant::now();
    loop {
        let left = a.timeout.saturating_sub(started.elapsed());
        let ms = (left.as_millis() as u64).min(POLL_MS);
        let path = format!(
            "/v1/inbox/messages/wait{}",
            query(&[("timeoutMs", Some(ms.to_string())), ("from", a.from.clone()), ("since", a.since.clone())])
        );
        let v = c.get(&path).await?;
        let m = &v["message"];
        if m.is_object() {
            if a.json {
                println!("{}", pretty(m));
                return Ok(());
            }
            let from = m["from"]["address"].as_str().unwrap_or(s(m, "mailFrom")).to_string();
            eprintln!("mail from {from}: {}", s(m, "subject"));
            match (m["verificationLink"].as_str(), m["code"].as_str()) {
                (None, None) => println!("(no verification link or code; id {})", s(m, "id")),
                (link, code) => {
                    if let Some(l) = link {
                        println!("link: {l}");
                    }
                    if let Some(code) = code {
                        println!("code: {code}");
                    }
                }
            }
            return Ok(());
        }
        if started.elapsed() >= a.timeout {
            return Err(ClientError::new(exit::FAILURE, format!("no mail arrived within {} s", a.timeout.as_secs())));
        }
    }
}
