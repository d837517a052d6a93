//! Account and key administration shared by `capture admin …` and (later) the dashboard.

use capture_core::{Plan, ids};
use capture_store::{ApiKeyRow, Store, StoreError, User};

use crate::crypto::{MasterKey, sha256_hex};

/// An administration failure with a message for the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error("no account with e-mail {0}")]
    NoSuchUser(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn valid_email(e: &str) -> bool {
    let e = e.trim();
    let Some((local, domain)) = e.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !e.contains(char::is_whitespace)
        && e.len() <= 254
}

/// Hash a password with argon2id.
pub fn hash_password(p: &str) -> Result<String, AdminError> {
    use argon2::password_hash::PasswordHasher;
    use argon2::password_hash::phc::PasswordHash;
    if p.len() < 8 {
        return Err(AdminError::Invalid("the password must have at least 8 characters".into()));
    }
    // A random 16-byte salt from the operating system.
    PasswordHasher::<PasswordHash>::hash_password(&argon2::Argon2::default(), p.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| AdminError::Invalid(e.to_string()))
}

/// Create an account.
pub async fn create_user(
    store: &Store,
    email: &str,
    plan: &str,
    password: Option<&str>,
    legacy_free: bool,
    now_ms: i64,
) -> Result<User, AdminError> {
    if !valid_email(email) {
        return Err(AdminError::Invalid(format!("'{email}' is not an e-mail address")));
    }
    let plan =
        Plan::parse(plan).ok_or_else(|| AdminError::Invalid(format!("unknown plan '{plan}' (free, starter, pro)")))?;
    let user = User {
        id: ids::new_id(ids::USER),
        email: email.trim().to_lowercase(),
        plan: plan.as_str().into(),
        legacy_free,
        password_hash: password.map(hash_password).transpose()?,
        created_at: now_ms,
    };
    store.create_user(&user).await.map_err(|e| match e {
        StoreError::Conflict(m) => AdminError::Invalid(m),
        e => e.into(),
    })?;
    Ok(user)
}

/// Change an account's plan.
pub async fn set_plan(store: &Store, email: &str, plan: &str) -> Result<(), AdminError> {
    let plan =
        Plan::parse(plan).ok_or_else(|| AdminError::Invalid(format!("unknown plan '{plan}' (free, starter, pro)")))?;
    if !store.set_plan(email, plan.as_str()).await? {
        return Err(AdminError::NoSuchUser(email.into()));
    }
    Ok(())
}

/// Create a key for an account: returns the record and the key itself (shown once).
pub async fn create_key(
    store: &Store,
    master: &MasterKey,
    user_id: &str,
    name: &str,
    now_ms: i64,
) -> Result<(ApiKeyRow, String), AdminError> {
    let name = name.trim();
    if name.is_empty() || name.len() > 100 {
        return Err(AdminError::Invalid("a key name has 1 to 100 characters".into()));
    }
    let key = ids::new_api_key();
    let row = ApiKeyRow {
        id: ids::new_id(ids::KEY),
        user_id: user_id.into(),
        name: name.into(),
        prefix: key[..12].to_string(),
        key_enc: master.encrypt(&key),
        created_at: now_ms,
        revoked_at: None,
        last_used_at: None,
    };
    store.create_key(&row, &sha256_hex(key.as_bytes())).await?;
    Ok((row, key))
}

/// Find an account by e-mail or fail.
pub async fn user(store: &Store, email: &str) -> Result<User, AdminError> {
    store.user_by_email(email).await?.ok_or_else(|| AdminError::NoSuchUser(email.into()))
}
