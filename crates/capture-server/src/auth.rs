//! Who is calling: a credential (an API key, an OAuth access token, a website session's
//! user) turned into an [`Account`], using only the store, the hot cache and the crypto
//! helpers. The request middleware, the OAuth routes, MCP and the website all call this;
//! it calls none of them.

use axum::http::{HeaderMap, header};
use capture_core::Plan;
use capture_core::ids;
use capture_core::time::MonthWindow;
use capture_store::{StoreError, User};

use crate::crypto::sha256_hex;
use crate::state::AppState;

/// Prefix of OAuth access tokens (tells them apart from `sk_live_` API keys).
pub const ACCESS_PREFIX: &str = "cap_at_";

/// The authenticated caller, in request extensions.
#[derive(Debug, Clone)]
pub struct Account {
    pub user: User,
    pub key_id: Option<String>,
    pub is_admin: bool,
    /// The plan's monthly cap (also reported for admins, who are not held to it).
    pub plan_limit: i64,
    pub used: i64,
    pub window: MonthWindow,
    /// The OAuth client the request came through (an MCP access token); None for API keys
    /// and the website. Automation sessions belong to the client that started them.
    pub client_id: Option<String>,
}

impl Account {
    /// The cap that applies: None for admins.
    pub fn limit(&self) -> Option<i64> {
        (!self.is_admin).then_some(self.plan_limit)
    }

    /// Why a paid create of this account was refused, as the service's error — the one
    /// mapping for screenshots, bulk, audits, ads and runs. A quota refusal carries `used` as
    /// the store counted it, `fits` for a bulk request and when the month resets (on the
    /// service's clock); a full queue is counted in the metrics.
    pub fn refused(&self, state: &AppState, refused: capture_store::Refused, fits: Option<i64>) -> crate::error::Error {
        use crate::error::Error;
        use capture_store::Refused;
        match refused {
            Refused::Quota(q) => Error::QuotaExceeded(crate::error::QuotaExceeded {
                used: q.used,
                limit: self.plan_limit,
                plan: self.user.plan.clone(),
                reset_ms: self.window.reset_ms,
                retry_after_s: (self.window.reset_ms - state.clock.now_ms()).max(0) / 1000 + 1,
                fits,
            }),
            Refused::QueueFull(q) => {
                state.metrics.queue_refused(q.scope);
                Error::QueueFull(q)
            }
            Refused::TooManyActive { active, limit } => Error::TooManyRuns { active, limit },
            Refused::IdempotencyTakenOver => Error::IdempotencyInFlight,
        }
    }
}

/// The caller's usage after a request changed it, as a response extension: the
/// rate-limit headers report it instead of the figure the request started with.
#[derive(Debug, Clone, Copy)]
pub struct UsageAfter(pub i64);

/// Build the caller's account view: admin status, plan cap, usage.
pub fn account_for(state: &AppState, user: User, key_id: Option<String>, used: i64, window: MonthWindow) -> Account {
    let plan = Plan::parse(&user.plan).unwrap_or(Plan::Free);
    Account {
        is_admin: state.cfg.accounts.is_admin(&user.email),
        plan_limit: state.cfg.accounts.plan_limits.limit(plan),
        user,
        key_id,
        used,
        window,
        client_id: None,
    }
}

/// The account of a signed-in website user, with this month's usage.
pub async fn account_of_user(state: &AppState, user: &User) -> Result<Account, StoreError> {
    let window = MonthWindow::containing(state.clock.now_ms());
    let used = state.store.month_usage(&user.id, &window.label).await?;
    Ok(account_for(state, user.clone(), None, used, window))
}

/// The bearer token of a request, if any. The scheme is case-insensitive (RFC 9110
/// §11.1: `BEARER`, `bearer` and `Bearer` are one scheme), and any run of spaces may
/// separate it from the token.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The audience of OAuth tokens minted for the REST API (what `capture login` asks for).
pub fn api_resource(state: &AppState) -> &str {
    &state.base_url
}

/// The MCP resource identifier, the audience of tokens for the MCP server: `{base_url}/mcp`.
pub fn mcp_resource(state: &AppState) -> String {
    format!("{}/mcp", state.base_url)
}

/// Resolve an API key (`sk_live_…`) to its account. `Ok(None)` for anything that is not a
/// live key. Lookups are cached while the store's auth version stands.
pub async fn from_api_key(state: &AppState, token: &str) -> Result<Option<Account>, StoreError> {
    if !token.starts_with("sk_live_") || token.len() > 200 {
        return Ok(None);
    }
    let window = MonthWindow::containing(state.clock.now_ms());
    let hash = sha256_hex(token.as_bytes());
    // Read the version before the lookup: a change committed in between makes the
    // cached entry stale at once (see hotcache).
    let version = state.store.auth_version();
    if let Some(v) = version
        && let Some((user, key_id)) = state.hot.key(&hash, v)
    {
        let used = match state.hot.usage(&user.id, &window.label) {
            Some(u) => u,
            None => {
                let u = state.store.month_usage(&user.id, &window.label).await?;
                state.hot.put_usage(&user.id, &window.label, u);
                u
            }
        };
        return Ok(Some(account_for(state, user, Some(key_id), used, window)));
    }
    let Some(rec) = state.store.authenticate(&hash, &window.label).await? else { return Ok(None) };
    if let Some(v) = version {
        state.hot.put_key(&hash, &rec.user, &rec.key_id, v);
    }
    state.hot.put_usage(&rec.user.id, &window.label, rec.used);
    Ok(Some(account_for(state, rec.user, Some(rec.key_id), rec.used, window)))
}

/// Whether `token` has the shape of one of our access tokens (cheap pre-check).
pub fn looks_like_access_token(token: &str) -> bool {
    token.strip_prefix(ACCESS_PREFIX).is_some_and(|r| ids::is_token(r, 20, 100))
}

/// Resolve an OAuth access token to the account it acts for, when its audience is one of
/// `audiences`. `Ok(None)` for an unknown, expired, revoked or wrong-audience token.
pub async fn from_access_token(
    state: &AppState,
    token: &str,
    audiences: &[&str],
) -> Result<Option<Account>, StoreError> {
    if !looks_like_access_token(token) {
        return Ok(None);
    }
    let now = state.clock.now_ms();
    let window = MonthWindow::containing(state.clock.now_ms());
    let Some(rec) = state.store.oauth_access(&sha256_hex(token.as_bytes()), now, &window.label).await? else {
        return Ok(None);
    };
    if !rec.grant.resource.as_deref().is_some_and(|r| audiences.contains(&r)) {
        return Ok(None);
    }
    let client = Some(rec.grant.client_id.clone());
    Ok(Some(Account { client_id: client, ..account_for(state, rec.user, None, rec.used, window) }))
}

/// Why a credential was refused (the caller words the answer for its channel).
#[derive(Debug)]
pub enum Refused {
    /// No API key, or one that is unknown or revoked.
    ApiKey,
    /// An access token that is unknown, expired, revoked or for another audience.
    AccessToken,
    /// The lookup itself failed.
    Store(StoreError),
}

/// The account behind the request's bearer credential: an API key, or an OAuth access
/// token whose audience is one of `audiences`.
pub async fn from_request(state: &AppState, headers: &HeaderMap, audiences: &[&str]) -> Result<Account, Refused> {
    match bearer(headers) {
        Some(t) if looks_like_access_token(t) => {
            from_access_token(state, t, audiences).await.map_err(Refused::Store)?.ok_or(Refused::AccessToken)
        }
        Some(t) => from_api_key(state, t).await.map_err(Refused::Store)?.ok_or(Refused::ApiKey),
        None => Err(Refused::ApiKey),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, v.parse().unwrap());
            bearer(&h).map(str::to_string)
        };
        for v in ["Bearer sk_live_x", "BEARER sk_live_x", "bearer sk_live_x", "bEaReR   sk_live_x "] {
            assert_eq!(with(v).as_deref(), Some("sk_live_x"), "{v}");
        }
        for v in ["Basic sk_live_x", "Bearer", "Bearer   ", "Bearersk_live_x", "sk_live_x"] {
            assert_eq!(with(v), None, "{v}");
        }
    }

    #[test]
    fn access_tokens_are_recognised_by_shape() {
        assert!(looks_like_access_token(&format!("{ACCESS_PREFIX}{}", ids::random_string(43))));
        assert!(!looks_like_access_token(&format!("cap_rt_{}", ids::random_string(43))));
        assert!(!looks_like_access_token("sk_live_abc"));
    }
}
