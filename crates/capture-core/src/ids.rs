//! Typed, prefixed random identifiers (`scr_…`, `whe_…`, `msg_…`, …) and secrets.
//!
//! Requests turn ids into their typed form once, at the edge ([`ScreenshotId::parse`] and
//! its siblings), so a service function can never be handed a webhook id for a screenshot.

use rand::RngExt;
use rand::distr::Alphanumeric;

/// `n` random alphanumeric characters from the OS-seeded CSPRNG.
pub fn random_string(n: usize) -> String {
    rand::rng().sample_iter(&Alphanumeric).take(n).map(char::from).collect()
}

/// A new id such as `scr_5fG…` (prefix, underscore, 24 random characters).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_string(24))
}

/// Prefix of screenshot job ids.
pub const SCREENSHOT: &str = "scr";
/// Prefix of user ids.
pub const USER: &str = "usr";
/// Prefix of API key ids.
pub const KEY: &str = "key";
/// Prefix of background task ids.
pub const TASK: &str = "tsk";
/// Prefix of webhook endpoint ids.
pub const ENDPOINT: &str = "whe";
/// Prefix of webhook delivery ids (the `Webhook-Id` header).
pub const DELIVERY: &str = "msg";
/// Prefix of website audit ids.
pub const AUDIT: &str = "aud";
/// Prefix of browser session run ids.
pub const RUN: &str = "run";
/// Prefix of audit campaigns.
pub const CAMPAIGN: &str = "cmp";
/// Prefix of campaign rows (a target: a website and a recipient).
pub const CAMPAIGN_ROW: &str = "cmr";
/// Prefix of render-link keys.
pub const RENDER_KEY: &str = "rlk";
/// Prefix of storage destinations (a customer's own bucket).
pub const STORAGE_DESTINATION: &str = "sd";
/// Prefix of browser profiles (a signed-in browser state).
pub const PROFILE: &str = "prf";
/// Prefix of monitors (a page checked on a schedule).
pub const MONITOR: &str = "mon";
/// Prefix of a monitor's checks.
pub const MONITOR_CHECK: &str = "chk";
/// A customer's proxy (`prx_…`).
pub const PROXY: &str = "prx";

/// A new API key: `sk_live_` followed by 40 random characters.
pub fn new_api_key() -> String {
    format!("sk_live_{}", random_string(40))
}

/// `[A-Za-z0-9_-]{min,max}`, the pattern of request ids, idempotency keys and org ids.
pub fn is_token(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `s` looks like an id of ours with the given prefix (cheap pre-check before a query).
pub fn looks_like(prefix: &str, s: &str) -> bool {
    s.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')).is_some_and(|r| is_token(r, 1, 64))
}

/// What every typed id offers, for code generic over them (path extractors, say).
pub trait TypedId: Sized {
    /// What the id names, in words ("screenshot").
    const NOUN: &'static str;
    /// `s` when it has this id's shape, else `None`.
    fn parse_id(s: &str) -> Option<Self>;
}

/// Declares a typed id: a string of the form `{prefix}_{token}`, parsed once at the edge
/// (like svix's `create_id_type!`). Serialized as the plain string.
#[macro_export]
macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $prefix:expr, $noun:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, ::serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The prefix of this kind of id (before the `_`).
            pub const PREFIX: &'static str = $prefix;
            /// What the id names, in words ("screenshot"), for "… not found".
            pub const NOUN: &'static str = $noun;

            /// A new random id.
            pub fn new() -> Self {
                $name($crate::ids::new_id($prefix))
            }

            /// `s` when it has this id's shape (a cheap check before any query), else `None`.
            pub fn parse(s: &str) -> Option<Self> {
                $crate::ids::looks_like($prefix, s).then(|| $name(s.to_string()))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Wrap an id read from storage, which holds only ids this type made.
            pub fn from_stored(s: String) -> Self {
                $name(s)
            }
        }

        impl $crate::ids::TypedId for $name {
            const NOUN: &'static str = $noun;
            fn parse_id(s: &str) -> Option<Self> {
                $name::parse(s)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "string",
                    "description": format!("A {} id ({}_…).", $noun, $prefix),
                })
            }
        }

        #[cfg(feature = "schema")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .description(Some(format!("A {} id ({}_…).", $noun, $prefix)))
                    .into()
            }
        }

        #[cfg(feature = "schema")]
        impl ::utoipa::ToSchema for $name {}

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    ::serde::de::Error::custom(format!("not a {} id ({}_…)", stringify!($name), $prefix))
                })
            }
        }
    };
}

id_type!(
    /// A render-link key (`rlk_…`): the id a signed link names in `key`.
    RenderKeyId,
    RENDER_KEY,
    "render key"
);
id_type!(
    /// A storage destination (`sd_…`): a customer's S3-compatible bucket captures are
    /// also written to.
    StorageDestinationId,
    STORAGE_DESTINATION,
    "storage destination"
);
id_type!(
    /// A monitor (`mon_…`): a page checked on a schedule.
    MonitorId,
    MONITOR,
    "monitor"
);
id_type!(
    /// A check of a monitor (`chk_…`).
    MonitorCheckId,
    MONITOR_CHECK,
    "check"
);
id_type!(
    /// A customer's proxy or pool of proxies (`prx_…`) pages leave through.
    ProxyId,
    PROXY,
    "proxy"
);
id_type!(
    /// A browser profile (`prf_…`): cookies and site storage a page starts from.
    ProfileId,
    PROFILE,
    "profile"
);
id_type!(
    /// A screenshot job (`scr_…`).
    ScreenshotId,
    SCREENSHOT,
    "screenshot"
);
id_type!(
    /// A webhook endpoint (`whe_…`).
    EndpointId,
    ENDPOINT,
    "webhook endpoint"
);
id_type!(
    /// A webhook delivery (`msg_…`), sent as `Webhook-Id`.
    DeliveryId,
    DELIVERY,
    "webhook delivery"
);
id_type!(
    /// A website audit (`aud_…`).
    AuditId,
    AUDIT,
    "audit"
);
id_type!(
    /// A browser session run (`run_…`).
    RunId,
    RUN,
    "run"
);
id_type!(
    /// An audit campaign (`cmp_…`).
    CampaignId,
    CAMPAIGN,
    "campaign"
);
id_type!(
    /// An account (`usr_…`).
    UserId,
    USER,
    "account"
);
id_type!(
    /// An API key's record (`key_…`; not the key itself).
    KeyId,
    KEY,
    "API key"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_prefix_and_length() {
        let id = new_id(SCREENSHOT);
        assert!(id.starts_with("scr_"));
        assert_eq!(id.len(), 28);
        assert!(looks_like("scr", &id));
        assert!(!looks_like("usr", &id));
        let k = new_api_key();
        assert!(k.starts_with("sk_live_") && k.len() == 48);
    }

    #[test]
    fn typed_ids_parse_only_their_own_prefix() {
        let id = ScreenshotId::new();
        assert_eq!(ScreenshotId::parse(id.as_str()), Some(id.clone()));
        assert_eq!(EndpointId::parse(id.as_str()), None);
        assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{id}\""));
        assert!(serde_json::from_str::<ScreenshotId>("\"whe_abc\"").is_err());
        assert_eq!(ScreenshotId::NOUN, "screenshot");
    }

    #[test]
    fn token_pattern() {
        assert!(is_token("abcdefgh", 8, 128));
        assert!(!is_token("abc", 8, 128));
        assert!(!is_token("abcdefg h", 8, 128));
        assert!(!is_token(&"a".repeat(129), 8, 128));
    }
}
