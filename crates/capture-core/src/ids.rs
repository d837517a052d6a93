//! Typed, prefixed random identifiers (`scr_…`, `usr_…`, `key_…`) and secrets.

use rand::Rng;
use rand::distributions::Alphanumeric;

/// `n` random alphanumeric characters from the OS-seeded CSPRNG.
pub fn random_string(n: usize) -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(n).map(char::from).collect()
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
    fn token_pattern() {
        assert!(is_token("abcdefgh", 8, 128));
        assert!(!is_token("abc", 8, 128));
        assert!(!is_token("abcdefg h", 8, 128));
        assert!(!is_token(&"a".repeat(129), 8, 128));
    }
}
