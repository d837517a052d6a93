//! Customers' proxies: kept with their URLs (credentials included) sealed by the master key;
//! a capture, an audit, a run or a session naming one leaves through it. The egress guard
//! stays in force: Chromium talks only to our egress proxy, which checks each destination as
//! always, then connects **through** the customer's proxy (whose own address is checked like
//! any destination) — see `capture_browser::egress`.
//!
//! A pool's member is chosen when the job is created (`per-job`: the members take jobs in
//! turn, counted by the store across every node; `sticky`: by `proxyStickyKey`, else the
//! page's host), kept in the job's options and shown on the job, so a retry uses the same
//! member.

use std::time::{Duration, Instant};

use capture_core::egress::UpstreamProxy;
use capture_core::options::CaptureOptions;
use capture_core::time::iso;
use capture_core::{FieldError, ProxyId};
use capture_store::{ProxyRow, StoreError};

use super::types::{MemberShown, MemberTest, Proxy, ProxyList, ProxyTest, Rotation, ValidProxy};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::state::AppState;

/// How long one member's test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The most of a test answer read for its exit address.
const TEST_BODY_MAX: usize = 4096;

fn taken(e: StoreError) -> Error {
    match e {
        StoreError::Conflict(m) => Error::Invalid(FieldError::new("name", m)),
        e => e.into(),
    }
}

fn shown(r: ProxyRow) -> Proxy {
    let members: Vec<MemberShown> = serde_json::from_str(&r.members_shown).unwrap_or_default();
    let rotation = Rotation::stored(&r.rotation);
    Proxy {
        id: ProxyId::from_stored(r.id),
        name: r.name,
        kind: if rotation.is_some() { "pool" } else { "proxy" }.to_string(),
        rotation,
        members,
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at),
    }
}

/// The sealed and the shown forms of `members`.
fn seal(state: &AppState, members: &[UpstreamProxy]) -> Result<(String, String)> {
    let urls: Vec<String> = members.iter().map(UpstreamProxy::to_url).collect();
    let shown: Vec<MemberShown> = members.iter().map(MemberShown::of).collect();
    Ok((
        state.master.encrypt(&serde_json::to_string(&urls).map_err(Error::internal)?),
        serde_json::to_string(&shown).map_err(Error::internal)?,
    ))
}

/// The members of a stored proxy, opened; each labelled for its failures (`name`, or
/// `name[i]` in a pool).
fn open(state: &AppState, r: &ProxyRow) -> std::result::Result<Vec<UpstreamProxy>, String> {
    let plain = state.master.decrypt(&r.members_enc).ok_or("its stored URLs cannot be opened with this master key")?;
    let urls: Vec<String> = serde_json::from_str(&plain).map_err(|_| "its stored URLs are unreadable")?;
    let pool = Rotation::stored(&r.rotation).is_some();
    urls.iter()
        .enumerate()
        .map(|(i, u)| {
            let label = if pool { format!("{}[{i}]", r.name) } else { r.name.clone() };
            UpstreamProxy::parse(u, label)
        })
        .collect()
}

/// Check nothing but the shape, then keep the proxy with its URLs sealed.
pub async fn create(state: &AppState, account: &Account, p: ValidProxy) -> Result<Proxy> {
    let (Some(name), Some(members)) = (p.name, p.members) else {
        return Err(Error::internal("a checked proxy without a name or members"));
    };
    let (members_enc, members_shown) = seal(state, &members.proxies)?;
    let now = state.clock.now_ms();
    let row = ProxyRow {
        id: ProxyId::new().to_string(),
        user_id: account.user.id.clone(),
        name,
        members_enc,
        members_shown,
        rotation: p.rotation.map_or("single", Rotation::as_str).to_string(),
        created_at: now,
        updated_at: now,
    };
    state.store.create_proxy(&row).await.map_err(taken)?;
    Ok(shown(row))
}

/// The caller's proxies, oldest first.
pub async fn list(state: &AppState, account: &Account) -> Result<ProxyList> {
    let data = state.store.list_proxies(&account.user.id).await?.into_iter().map(shown).collect();
    Ok(ProxyList { data })
}

async fn find(state: &AppState, account: &Account, id: &str) -> Result<ProxyRow> {
    state.store.find_proxy(&account.user.id, id).await?.ok_or_else(|| Error::not_found(ProxyId::NOUN))
}

/// One of the caller's proxies, by id or name.
pub async fn get(state: &AppState, account: &Account, id: &str) -> Result<Proxy> {
    Ok(shown(find(state, account, id).await?))
}

/// Rename, replace the members, change a pool's rotation. New members replace all the old
/// ones (their credentials with them); queued jobs use the new ones.
pub async fn update(state: &AppState, account: &Account, id: &str, p: ValidProxy) -> Result<Proxy> {
    let mut row = find(state, account, id).await?;
    if let Some(name) = p.name {
        row.name = name;
    }
    let was_pool = Rotation::stored(&row.rotation).is_some();
    match p.members {
        Some(m) => {
            (row.members_enc, row.members_shown) = seal(state, &m.proxies)?;
            row.rotation = match (m.pool, p.rotation) {
                (false, _) => "single".to_string(),
                (true, Some(r)) => r.as_str().to_string(),
                (true, None) => Rotation::stored(&row.rotation).unwrap_or(Rotation::PerJob).as_str().to_string(),
            };
        }
        None => {
            if let Some(r) = p.rotation {
                if !was_pool {
                    return Err(Error::Invalid(FieldError::new("rotation", "applies to a pool (urls)")));
                }
                row.rotation = r.as_str().to_string();
            }
        }
    }
    row.updated_at = state.clock.now_ms();
    if !state.store.update_proxy(&row).await.map_err(taken)? {
        return Err(Error::not_found(ProxyId::NOUN));
    }
    Ok(shown(row))
}

/// Delete one: jobs queued with it fail (`proxy_failed: <id>: the proxy was deleted`,
/// not charged).
pub async fn delete(state: &AppState, account: &Account, id: &str) -> Result<()> {
    let row = find(state, account, id).await?;
    match state.store.delete_proxy(&account.user.id, &row.id).await? {
        true => Ok(()),
        false => Err(Error::not_found(ProxyId::NOUN)),
    }
}

/// FNV-1a: a stable spread of keys over members (the same everywhere and every release).
fn spread(key: &str, n: usize) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % n.max(1) as u64) as u32
}

/// A request's `proxy` (id or name) found among the caller's: the options name its id and
/// no member (the same capture however it was named).
pub async fn resolve(state: &AppState, account: &Account, opts: &CaptureOptions) -> Result<CaptureOptions> {
    let Some(asked) = &opts.proxy else { return Ok(opts.clone()) };
    let row = asked_row(state, account, asked).await?;
    Ok(CaptureOptions { proxy: Some(row.id), proxy_member: None, ..opts.clone() })
}

async fn asked_row(state: &AppState, account: &Account, asked: &str) -> Result<ProxyRow> {
    state.store.find_proxy(&account.user.id, asked).await?.ok_or_else(|| {
        Error::Invalid(FieldError::new(
            "proxy",
            format!("'{asked}' is not one of your proxies (GET /v1/proxies lists them)"),
        ))
    })
}

/// A request's `proxy` (id or name) found among the caller's: the options name its id and
/// the member that will serve the job (a `per-job` pool's next turn, a `sticky` pool's key).
pub async fn choose(state: &AppState, account: &Account, opts: &CaptureOptions) -> Result<CaptureOptions> {
    let Some(asked) = &opts.proxy else { return Ok(opts.clone()) };
    let row = asked_row(state, account, asked).await?;
    let n = serde_json::from_str::<Vec<MemberShown>>(&row.members_shown).map_or(1, |m| m.len());
    let member = match Rotation::stored(&row.rotation) {
        None => 0,
        Some(Rotation::PerJob) => match state.store.take_proxy_turn(&account.user.id, &row.id).await? {
            Some(turn) => (turn.unsigned_abs() % n.max(1) as u64) as u32,
            // Deleted since it was found: the job fails naming it when it runs.
            None => 0,
        },
        Some(Rotation::Sticky) => {
            let host =
                opts.url.as_deref().and_then(|u| url::Url::parse(u).ok()).and_then(|u| u.host_str().map(str::to_owned));
            spread(opts.proxy_sticky_key.as_deref().or(host.as_deref()).unwrap_or(""), n)
        }
    };
    Ok(CaptureOptions { proxy: Some(row.id), proxy_member: Some(member), ..opts.clone() })
}

/// The proxy a job leaves through (`user_id`'s proxy `id`, the chosen `member`), opened when
/// it runs: the job's error when it is gone or cannot be opened (uncharged).
pub async fn for_job(
    state: &AppState,
    user_id: &str,
    id: &str,
    member: u32,
) -> std::result::Result<UpstreamProxy, String> {
    let gone = |why: &str| format!("{}{id}: {why}", capture_core::egress::PROXY_FAILED);
    let row = match state.store.find_proxy(user_id, id).await {
        Ok(Some(r)) if r.id == id => r,
        Ok(_) => return Err(gone("the proxy was deleted")),
        Err(e) => {
            tracing::error!(error = %e, "reading a proxy failed");
            return Err(gone("the proxy could not be read; try again"));
        }
    };
    let members = open(state, &row).map_err(|why| gone(&why))?;
    // A pool made smaller since the job was created: the member wraps around.
    let n = members.len().max(1);
    members.into_iter().nth(member as usize % n).ok_or_else(|| gone("the proxy has no members"))
}

/// The options' proxy, opened for a job or a session started now (no member chosen yet:
/// one is chosen here as at creation).
pub async fn for_request(state: &AppState, account: &Account, opts: &CaptureOptions) -> Result<Option<UpstreamProxy>> {
    if opts.proxy.is_none() {
        return Ok(None);
    }
    let chosen = choose(state, account, opts).await?;
    let (Some(id), Some(member)) = (chosen.proxy, chosen.proxy_member) else { return Ok(None) };
    for_job(state, &account.user.id, &id, member)
        .await
        .map(Some)
        .map_err(|why| Error::Invalid(FieldError::new("proxy", why)))
}

/// Connect through every member to `target` and report each: latency to the answer's head,
/// its status, the exit address when the answer names one, or why it failed.
pub async fn test(state: &AppState, account: &Account, id: &str, target: Option<String>) -> Result<ProxyTest> {
    let row = find(state, account, id).await?;
    let target = target.unwrap_or_else(|| state.cfg.browser.proxy_test_url.clone());
    let members = open(state, &row).map_err(|why| Error::internal(format!("proxy {}: {why}", row.id)))?;
    let egress = capture_browser::egress::EgressProxy::start((*state.egress).clone())
        .await
        .map_err(|e| Error::internal(format!("cannot start an egress proxy: {e}")))?;
    let host = url::Url::parse(&target).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let mut out = Vec::with_capacity(members.len());
    for up in members {
        out.push(test_member(&egress, up, &target, &host).await);
    }
    Ok(ProxyTest { ok: out.iter().all(|m| m.ok), target, members: out })
}

async fn test_member(
    egress: &capture_browser::egress::EgressProxy,
    up: UpstreamProxy,
    target: &str,
    host: &str,
) -> MemberTest {
    let url = up.shown();
    let failed = |error: String| MemberTest {
        url: url.clone(),
        ok: false,
        latency_ms: None,
        status: None,
        exit_address: None,
        error: Some(error),
    };
    let route = match egress.route(up).await {
        Ok(r) => r,
        Err(e) => return failed(format!("cannot open an egress route: {e}")),
    };
    let client = match reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(format!("http://{}", route.addr())).expect("a loopback proxy URL"))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TEST_TIMEOUT)
        .build()
    {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot make an HTTP client: {e}")),
    };
    let t0 = Instant::now();
    let since = std::time::Instant::now();
    let resp = match client.get(target).send().await {
        Ok(r) => r,
        Err(e) => {
            // The egress proxy's word for it (the customer's proxy, named) beats the client's.
            let why = egress.failures().since(host, since).unwrap_or_else(|| format!("fetching {target} failed: {e}"));
            return failed(why);
        }
    };
    let latency = t0.elapsed();
    let status = resp.status().as_u16();
    // A refusal of the egress proxy itself comes back as an answer with its reason.
    if let Some(why) = resp.headers().get("x-capture-egress-error").and_then(|v| v.to_str().ok()) {
        return MemberTest { status: None, ..failed(why.to_string()) };
    }
    let body = read_some(resp).await;
    MemberTest {
        url,
        ok: true,
        latency_ms: Some(latency.as_millis() as u64),
        status: Some(status),
        exit_address: exit_address(&body),
        error: None,
    }
}

async fn read_some(mut resp: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < TEST_BODY_MAX {
        match resp.chunk().await {
            Ok(Some(c)) => body.extend_from_slice(&c),
            _ => break,
        }
    }
    body.truncate(TEST_BODY_MAX);
    body
}

/// The address an echo service's answer names: `{"ip": …}` (ipify), `{"origin": …}`
/// (httpbin) or a bare address.
fn exit_address(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let candidate = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => ["ip", "origin", "address", "query"].iter().find_map(|k| v[*k].as_str().map(str::to_owned))?,
        Err(_) => text.to_string(),
    };
    let first = candidate.split(',').next().unwrap_or("").trim();
    first.parse::<std::net::IpAddr>().ok().map(|ip| ip.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_members_stably() {
        assert_eq!(spread("example.com", 4), spread("example.com", 4));
        let mut counts = [0usize; 4];
        for i in 0..400 {
            counts[spread(&format!("scr_{i:08}"), 4) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c >= 60), "{counts:?}");
        assert_eq!(spread("anything", 1), 0);
    }

    #[test]
    fn the_exit_address_is_read_from_the_usual_echo_answers() {
        assert_eq!(exit_address(br#"{"ip":"203.0.113.7"}"#).as_deref(), Some("203.0.113.7"));
        assert_eq!(exit_address(br#"{"origin": "198.51.100.2, 10.0.0.1"}"#).as_deref(), Some("198.51.100.2"));
        assert_eq!(exit_address(b"2001:db8::1\n").as_deref(), Some("2001:db8::1"));
        assert_eq!(exit_address(b"<html>hello</html>"), None);
    }
}
