//! `capture proxy …`: your own proxies from the terminal. `add` keeps one proxy (one URL) or a
//! pool (several, with a rotation), `list`, `show` and `rm` manage them, and `test` fetches a
//! page through every member and prints each one's latency, status and exit address (or why
//! it failed). Captures, reads and audits name one with `--proxy NAME`.
//!
//! Credentials go to the server only: it keeps them sealed and never returns them, and
//! nothing here prints a URL as it was given, only the members as the server shows them
//! (`scheme://host:port`, with whether they sign in).

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::Client;
use crate::error::{ClientError, Result, exit};

/// How long the server gives one member's test (its `TEST_TIMEOUT`): `test` waits this long
/// per member, beyond the ordinary request timeout.
const MEMBER_TEST_TIMEOUT: Duration = Duration::from_secs(15);

/// `capture proxy …`.
#[derive(clap::Subcommand)]
pub enum ProxyCmd {
    /// Add a proxy (one URL) or a pool (several URLs): http://, https:// or socks5://host:port,
    /// with user:password@ in a URL or --username/--password for every member without any.
    Add(AddArgs),
    /// Your proxies: id, name, kind, rotation and members (never their credentials).
    List,
    /// One proxy (by id or name) with its members.
    Show { id: String },
    /// Delete a proxy and its credentials (jobs still queued with it fail, uncharged).
    #[command(visible_alias = "delete")]
    Rm { id: String },
    /// Fetch a page through every member and print each one's latency, the page's status and
    /// the exit address, or why it failed (exit code 1 when a member failed).
    Test {
        id: String,
        /// The page to fetch (default: the server's CAPTURE_PROXY_TEST_URL, an address-echo
        /// service whose answer shows the exit address).
        #[arg(long)]
        url: Option<String>,
    },
}

/// What `capture proxy add` asks for.
#[derive(clap::Args)]
pub struct AddArgs {
    /// What to call it: captures name it by id or name (`--proxy NAME`).
    pub name: String,
    /// The proxy's URL, or several for a pool (up to 50).
    #[arg(required = true, num_args = 1.., value_name = "URL")]
    pub urls: Vec<String>,
    /// A pool's rotation: per-job (each job a member, the default) or sticky (the same
    /// --proxy-sticky-key, else the page's host, the same member).
    #[arg(long, value_parser = ["per-job", "sticky"])]
    pub rotation: Option<String>,
    /// The user name of every member whose URL has none (a provider's pool shares one login).
    #[arg(long)]
    pub username: Option<String>,
    /// The password that goes with --username. Stored sealed by the server, never shown.
    #[arg(long, requires = "username")]
    pub password: Option<String>,
}

impl AddArgs {
    /// The body of `POST /v1/proxies`: one URL is `url`, several are `urls`.
    fn body(self) -> Value {
        let mut body = json!({"name": self.name});
        let mut urls = self.urls;
        if urls.len() == 1 {
            body["url"] = json!(urls.remove(0));
        } else {
            body["urls"] = json!(urls);
        }
        for (k, v) in [("rotation", self.rotation), ("username", self.username), ("password", self.password)] {
            if let Some(v) = v {
                body[k] = json!(v);
            }
        }
        body
    }
}

/// Run `capture proxy CMD` (`--json`: the API's JSON as it came).
pub async fn run(c: &Client, cmd: ProxyCmd, as_json: bool) -> Result<()> {
    match cmd {
        ProxyCmd::Add(a) => add(c, a, as_json).await,
        ProxyCmd::List => list(c, as_json).await,
        ProxyCmd::Show { id } => show(c, &id, as_json).await,
        ProxyCmd::Rm { id } => rm(c, &id, as_json).await,
        ProxyCmd::Test { id, url } => test(c, &id, url, as_json).await,
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A path segment (ids and names come from the user).
fn seg(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}

/// `proxy` (one URL) or `pool, rotation sticky`.
fn kind(p: &Value) -> String {
    match p["rotation"].as_str() {
        Some(r) => format!("{}, rotation {r}", s(p, "kind")),
        None => s(p, "kind").to_string(),
    }
}

/// The members, one per line: `[0] http://host:port (authenticated)`.
fn members(p: &Value) -> Vec<String> {
    p["members"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, m)| {
            let auth = if m["authenticated"].as_bool() == Some(true) { " (authenticated)" } else { "" };
            format!("[{i}] {}{auth}", s(m, "url"))
        })
        .collect()
}

/// `label` then the first line, the others under it.
fn print_lines(label: &str, lines: &[String]) {
    let pad = " ".repeat(label.chars().count());
    for (i, l) in lines.iter().enumerate() {
        println!("{}{l}", if i == 0 { label } else { &pad });
    }
}

/// Rows under a header, each column as wide as its widest cell (the last one as it is).
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; N]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == N - 1 {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    for r in rows {
        out.push_str(&line(r.each_ref().map(String::as_str)));
    }
    out
}

async fn add(c: &Client, a: AddArgs, as_json: bool) -> Result<()> {
    let p = c.post("/v1/proxies", Some(&a.body())).await?;
    if as_json {
        println!("{}", pretty(&p));
        return Ok(());
    }
    println!("Added the proxy {} ({})", s(&p, "id"), s(&p, "name"));
    println!("Kind:     {}", kind(&p));
    print_lines("Members:  ", &members(&p));
    println!("Use it:   capture shot URL --proxy {}", s(&p, "name"));
    Ok(())
}

async fn list(c: &Client, as_json: bool) -> Result<()> {
    let v = c.get("/v1/proxies").await?;
    if as_json {
        println!("{}", pretty(&v));
        return Ok(());
    }
    let data = v["data"].as_array().cloned().unwrap_or_default();
    if data.is_empty() {
        println!("No proxies yet: capture proxy add NAME URL adds one.");
        return Ok(());
    }
    let rows: Vec<[String; 5]> = data
        .iter()
        .map(|p| {
            let urls: Vec<&str> = p["members"].as_array().into_iter().flatten().map(|m| s(m, "url")).collect();
            [
                s(p, "id").into(),
                s(p, "name").into(),
                s(p, "kind").into(),
                p["rotation"].as_str().unwrap_or("—").into(),
                urls.join(", "),
            ]
        })
        .collect();
    print!("{}", table(["ID", "NAME", "KIND", "ROTATION", "MEMBERS"], &rows));
    Ok(())
}

async fn show(c: &Client, id: &str, as_json: bool) -> Result<()> {
    let p = c.get(&format!("/v1/proxies/{}", seg(id))).await?;
    if as_json {
        println!("{}", pretty(&p));
        return Ok(());
    }
    println!("{}  {}", s(&p, "id"), s(&p, "name"));
    println!("  Kind:      {}", kind(&p));
    print_lines("  Members:   ", &members(&p));
    println!("  Created:   {}", s(&p, "createdAt"));
    println!("  Updated:   {}", s(&p, "updatedAt"));
    Ok(())
}

async fn rm(c: &Client, id: &str, as_json: bool) -> Result<()> {
    c.delete(&format!("/v1/proxies/{}", seg(id))).await?;
    if as_json {
        println!("{}", pretty(&json!({"deleted": id})));
    } else {
        println!("Deleted the proxy {id} and its credentials.");
    }
    Ok(())
}

/// `capture proxy test ID [--url URL]`: every member tried (one after the other on the
/// server, each allowed 15 s), a row each; a member that failed makes the exit code 1.
async fn test(c: &Client, id: &str, url: Option<String>, as_json: bool) -> Result<()> {
    // How many members there are decides how long the server may take.
    let p = c.get(&format!("/v1/proxies/{}", seg(id))).await?;
    let n = p["members"].as_array().map_or(1, Vec::len).max(1) as u32;
    let timeout = c.request_timeout + MEMBER_TEST_TIMEOUT * n;
    let body = url.map_or_else(|| json!({}), |u| json!({"url": u}));
    let t = c.post_with_timeout(&format!("/v1/proxies/{}/test", seg(id)), &body, timeout).await?;
    let all = t["members"].as_array().cloned().unwrap_or_default();
    let failed = all.iter().filter(|m| m["ok"].as_bool() != Some(true)).count();
    if as_json {
        println!("{}", pretty(&t));
    } else {
        println!("Fetched {} through {} ({}):", s(&t, "target"), s(&p, "name"), s(&p, "id"));
        print!("{}", test_table(&all));
    }
    if failed > 0 {
        let of = all.len();
        let what = if of == 1 { "the proxy failed".to_string() } else { format!("{failed} of {of} members failed") };
        return Err(ClientError::new(exit::FAILURE, format!("the test of {id} failed: {what}")));
    }
    Ok(())
}

/// One row per member: its index, URL, ok, latency, the page's status and the exit address
/// (or, for a member that failed, why).
fn test_table(members: &[Value]) -> String {
    let rows: Vec<[String; 6]> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let ok = m["ok"].as_bool() == Some(true);
            let latency = m["latencyMs"].as_u64().map_or_else(|| "—".to_string(), |l| format!("{l} ms"));
            let status = m["status"].as_u64().map_or_else(|| "—".to_string(), |v| v.to_string());
            let last = match (m["error"].as_str(), m["exitAddress"].as_str()) {
                (Some(e), _) => e.to_string(),
                (None, Some(a)) => a.to_string(),
                (None, None) => "—".to_string(),
            };
            [i.to_string(), s(m, "url").into(), if ok { "yes" } else { "no" }.into(), latency, status, last]
        })
        .collect();
    table(["#", "URL", "OK", "LATENCY", "STATUS", "EXIT ADDRESS / ERROR"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(urls: &[&str]) -> AddArgs {
        AddArgs {
            name: "office".into(),
            urls: urls.iter().map(|u| u.to_string()).collect(),
            rotation: None,
            username: None,
            password: None,
        }
    }

    #[test]
    fn one_url_is_url_and_several_are_a_pool() {
        assert_eq!(add(&["http://p.example:3128"]).body(), json!({"name": "office", "url": "http://p.example:3128"}));
        let mut a = add(&["socks5://a.example:1080", "http://b.example:8080"]);
        a.rotation = Some("sticky".into());
        a.username = Some("u".into());
        a.password = Some("pw".into());
        assert_eq!(
            a.body(),
            json!({"name": "office", "urls": ["socks5://a.example:1080", "http://b.example:8080"],
                   "rotation": "sticky", "username": "u", "password": "pw"})
        );
    }

    #[test]
    fn a_test_prints_a_row_per_member() {
        let rows = [
            json!({"url": "http://127.0.0.1:3128", "ok": true, "latencyMs": 12, "status": 200,
                   "exitAddress": "203.0.113.7", "error": null}),
            json!({"url": "socks5://127.0.0.1:1080", "ok": true, "latencyMs": 3, "status": 404,
                   "exitAddress": null, "error": null}),
            json!({"url": "http://10.0.0.1:8080", "ok": false, "latencyMs": null, "status": null,
                   "exitAddress": null, "error": "proxy_failed: eu[2]: connection refused"}),
        ];
        assert_eq!(
            test_table(&rows),
            "#  URL                      OK   LATENCY  STATUS  EXIT ADDRESS / ERROR\n\
             0  http://127.0.0.1:3128    yes  12 ms    200     203.0.113.7\n\
             1  socks5://127.0.0.1:1080  yes  3 ms     404     —\n\
             2  http://10.0.0.1:8080     no   —        —       proxy_failed: eu[2]: connection refused\n"
        );
        let p = json!({"kind": "pool", "rotation": "sticky",
                       "members": [{"url": "http://a:1", "authenticated": true}, {"url": "http://b:2", "authenticated": false}]});
        assert_eq!(kind(&p), "pool, rotation sticky");
        assert_eq!(members(&p), ["[0] http://a:1 (authenticated)", "[1] http://b:2"]);
    }
}
