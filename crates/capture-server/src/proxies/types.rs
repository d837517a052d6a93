//! The wire types of customers' proxies (`/v1/proxies`).

use capture_core::egress::UpstreamProxy;
use capture_core::{FieldError, ProxyId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

/// Most members of a pool.
pub const POOL_MAX: usize = 50;
/// Most characters of a name.
pub const NAME_MAX: usize = 100;

/// How a pool picks the member that serves a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Rotation {
    /// The members take jobs in turn (counted across every node).
    PerJob,
    /// The same key (`proxyStickyKey`, else the page's host) gets the same member.
    Sticky,
}

impl Rotation {
    pub fn as_str(self) -> &'static str {
        match self {
            Rotation::PerJob => "per-job",
            Rotation::Sticky => "sticky",
        }
    }

    /// A stored rotation (`single` is a proxy of one URL).
    pub fn stored(s: &str) -> Option<Rotation> {
        match s {
            "per-job" => Some(Rotation::PerJob),
            "sticky" => Some(Rotation::Sticky),
            _ => None,
        }
    }
}

/// `POST /v1/proxies`: one proxy (`url`) or a pool of them (`urls`, with a `rotation`).
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyIn {
    /// What it is called (`office`, `eu-residential`): captures name it by id or name.
    pub name: String,
    /// `http://`, `https://` or `socks5://host:port`, with `user:password@` when it needs
    /// credentials (percent-encoded). Stored encrypted; shown without the credentials.
    #[serde(default)]
    #[schema(examples("http://bob:s3cret@proxy.example:3128"))]
    pub url: Option<String>,
    /// A pool: up to 50 such URLs.
    #[serde(default)]
    pub urls: Option<Vec<String>>,
    /// A pool's rotation: `per-job` (default) or `sticky`.
    #[serde(default)]
    pub rotation: Option<Rotation>,
    /// Credentials for every member that has none in its URL (a provider's pool shares one
    /// login). Stored encrypted; never returned.
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
}

/// `PATCH /v1/proxies/{id}`: a new name, new members (`url` or `urls`, with the credentials
/// fields as at creation), a pool's rotation, or several at once.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub urls: Option<Vec<String>>,
    #[serde(default)]
    pub rotation: Option<Rotation>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
}

/// New members, checked: the proxies and whether they form a pool.
#[derive(Debug, Clone)]
pub struct Members {
    pub proxies: Vec<UpstreamProxy>,
    pub pool: bool,
}

/// A checked create or patch.
#[derive(Debug, Clone)]
pub struct ValidProxy {
    pub name: Option<String>,
    pub members: Option<Members>,
    pub rotation: Option<Rotation>,
}

fn check_name(raw: &str) -> Result<String, FieldError> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX || name.chars().any(char::is_control) {
        return Err(FieldError::new("name", "must be 1 to 100 characters without control characters"));
    }
    if name.starts_with(&format!("{}_", capture_core::ids::PROXY)) {
        return Err(FieldError::new("name", "must not start with prx_ (the ids' prefix)"));
    }
    Ok(name.to_owned())
}

fn check_members(
    url: Option<String>,
    urls: Option<Vec<String>>,
    username: Option<String>,
    password: Option<String>,
) -> Result<Option<Members>, FieldError> {
    let (raw, pool) = match (url, urls) {
        (Some(_), Some(_)) => return Err(FieldError::new("urls", "give url (one proxy) or urls (a pool), not both")),
        (Some(u), None) => (vec![u], false),
        (None, Some(us)) if us.is_empty() || us.len() > POOL_MAX => {
            return Err(FieldError::new("urls", "must list 1 to 50 proxy URLs"));
        }
        (None, Some(us)) => (us, true),
        (None, None) if username.is_some() || password.is_some() => {
            return Err(FieldError::new("username", "applies with url or urls"));
        }
        (None, None) => return Ok(None),
    };
    if password.is_some() && username.is_none() {
        return Err(FieldError::new("password", "applies with username"));
    }
    for (field, v) in [("username", &username), ("password", &password)] {
        if let Some(v) = v
            && (v.is_empty() || v.len() > 255 || v.chars().any(char::is_control))
        {
            return Err(FieldError::new(field, "must be 1 to 255 characters without control characters"));
        }
    }
    let mut proxies = Vec::with_capacity(raw.len());
    for (i, u) in raw.iter().enumerate() {
        let field = if pool { format!("urls[{i}]") } else { "url".to_string() };
        let mut p = UpstreamProxy::parse(u, "").map_err(|why| FieldError::new(field.clone(), why))?;
        if p.username.is_none() {
            p.username.clone_from(&username);
            p.password.clone_from(&password);
        }
        if proxies.iter().any(|q: &UpstreamProxy| q.shown() == p.shown()) {
            return Err(FieldError::new(field, format!("lists {} twice", p.shown())));
        }
        proxies.push(p);
    }
    Ok(Some(Members { proxies, pool }))
}

impl Checked for ProxyIn {
    type Valid = ValidProxy;

    fn check(self) -> Result<ValidProxy, FieldError> {
        let name = check_name(&self.name)?;
        let members = check_members(self.url, self.urls, self.username, self.password)?
            .ok_or_else(|| FieldError::new("url", "give url (one proxy) or urls (a pool)"))?;
        if !members.pool && self.rotation.is_some() {
            return Err(FieldError::new("rotation", "applies to a pool (urls)"));
        }
        let rotation = members.pool.then(|| self.rotation.unwrap_or(Rotation::PerJob));
        Ok(ValidProxy { name: Some(name), members: Some(members), rotation })
    }
}

impl Checked for ProxyPatch {
    type Valid = ValidProxy;

    fn check(self) -> Result<ValidProxy, FieldError> {
        let name = self.name.as_deref().map(check_name).transpose()?;
        let members = check_members(self.url, self.urls, self.username, self.password)?;
        if name.is_none() && members.is_none() && self.rotation.is_none() {
            return Err(FieldError::new("name", "give a new name, new members (url or urls) or a rotation"));
        }
        if members.as_ref().is_some_and(|m| !m.pool) && self.rotation.is_some() {
            return Err(FieldError::new("rotation", "applies to a pool (urls)"));
        }
        Ok(ValidProxy { name, members, rotation: self.rotation })
    }
}

/// A member as shown: its URL without credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberShown {
    /// `scheme://host:port`.
    pub url: String,
    /// Whether it signs in (the credentials are never shown).
    pub authenticated: bool,
}

impl MemberShown {
    pub fn of(p: &UpstreamProxy) -> MemberShown {
        MemberShown { url: p.shown(), authenticated: p.username.is_some() }
    }
}

/// A proxy as shown (never its credentials).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// `prx_…`: what `proxy` names on a capture, an audit, a run or a session (the name
    /// works too).
    pub id: ProxyId,
    pub name: String,
    /// `proxy` (one URL) or `pool`.
    pub kind: String,
    /// A pool's rotation (`per-job` or `sticky`); null for one proxy.
    pub rotation: Option<Rotation>,
    /// Its URLs without credentials, in order (a job shows which member served it).
    pub members: Vec<MemberShown>,
    pub created_at: String,
    pub updated_at: String,
}

list_type! {
    /// The caller's proxies, oldest first.
    pub type ProxyList = Collection<Proxy>;
    schemas: both;
}

/// `POST /v1/proxies/{id}/test`: where to connect through it.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyTestIn {
    /// The page fetched through each member (default: the operator's
    /// `CAPTURE_PROXY_TEST_URL`, an address-echo service). An answer that names an address
    /// (`{"ip": …}`, `{"origin": …}` or a bare address) is reported as the exit address.
    #[serde(default)]
    pub url: Option<String>,
}

impl Checked for ProxyTestIn {
    type Valid = ProxyTestIn;

    fn check(self) -> Result<ProxyTestIn, FieldError> {
        if let Some(u) = &self.url {
            capture_core::options::validate_url(u).map_err(|e| FieldError::new("url", e.reason))?;
        }
        Ok(self)
    }
}

/// One member's test.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberTest {
    pub url: String,
    pub ok: bool,
    /// From the start of the connection to the answer's head, through the proxy.
    pub latency_ms: Option<u64>,
    /// The fetched page's HTTP status.
    pub status: Option<u16>,
    /// The address the destination saw, when the answer names one.
    pub exit_address: Option<String>,
    /// Why it failed (`proxy_failed: <name>: <why>`, or the destination's failure).
    pub error: Option<String>,
}

/// `POST /v1/proxies/{id}/test`'s answer: every member tried.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyTest {
    /// Every member answered.
    pub ok: bool,
    /// What was fetched.
    pub target: String,
    pub members: Vec<MemberTest>,
}

/// Which proxy served a job (`proxy` on the job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyServed {
    /// `prx_…`.
    pub id: String,
    /// The pool member (0-based; 0 for one proxy).
    pub member: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(v: serde_json::Value) -> Result<ValidProxy, FieldError> {
        serde_json::from_value::<ProxyIn>(v).unwrap().check()
    }

    #[test]
    fn one_proxy_or_a_pool_with_shared_credentials() {
        let p = valid(serde_json::json!({"name": " office ", "url": "http://bob:pw@10.0.0.5:3128"})).unwrap();
        assert_eq!(p.name.as_deref(), Some("office"));
        let m = p.members.unwrap();
        assert_eq!((m.pool, m.proxies.len(), p.rotation), (false, 1, None));
        assert_eq!(
            MemberShown::of(&m.proxies[0]),
            MemberShown { url: "http://10.0.0.5:3128".into(), authenticated: true }
        );
        let pool =
            valid(serde_json::json!({"name": "eu", "urls": ["socks5://a.example:1080", "http://x:y@b.example:8080"],
            "rotation": "sticky", "username": "u", "password": "p"}))
            .unwrap();
        let m = pool.members.unwrap();
        assert_eq!(pool.rotation, Some(Rotation::Sticky));
        assert_eq!((m.proxies[0].username.as_deref(), m.proxies[0].password.as_deref()), (Some("u"), Some("p")));
        // A member's own credentials win.
        assert_eq!(m.proxies[1].username.as_deref(), Some("x"));
    }

    #[test]
    fn bad_input_names_the_field() {
        for (body, field, why) in [
            (
                serde_json::json!({"name": "a", "url": "ftp://p.example"}),
                "url",
                "scheme 'ftp' is not supported (use http://, https:// or socks5://)",
            ),
            (
                serde_json::json!({"name": "a", "url": "http://p.example:70000"}),
                "url",
                "is not a valid URL: invalid port number",
            ),
            (serde_json::json!({"name": "a", "url": "http://:80"}), "url", "is not a valid URL: empty host"),
            (serde_json::json!({"name": "a"}), "url", "give url (one proxy) or urls (a pool)"),
            (serde_json::json!({"name": "a", "urls": []}), "urls", "must list 1 to 50 proxy URLs"),
            (
                serde_json::json!({"name": "a", "urls": ["http://p.example:1", "http://p.example:1"]}),
                "urls[1]",
                "lists http://p.example:1 twice",
            ),
            (
                serde_json::json!({"name": "a", "urls": ["http://p.example:1", "gopher://q"]}),
                "urls[1]",
                "scheme 'gopher' is not supported (use http://, https:// or socks5://)",
            ),
            (
                serde_json::json!({"name": "a", "url": "http://p.example", "rotation": "sticky"}),
                "rotation",
                "applies to a pool (urls)",
            ),
            (
                serde_json::json!({"name": "prx_x", "url": "http://p.example"}),
                "name",
                "must not start with prx_ (the ids' prefix)",
            ),
            (
                serde_json::json!({"name": "a", "url": "http://p.example", "password": "p"}),
                "password",
                "applies with username",
            ),
        ] {
            let e = valid(body.clone()).unwrap_err();
            assert_eq!((e.field.as_str(), e.reason.as_str()), (field, why), "{body}");
        }
    }
}
