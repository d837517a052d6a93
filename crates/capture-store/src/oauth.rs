//! OAuth 2.1 state: registered clients (dynamic registration and cached client ID metadata
//! documents), single-use authorization codes and access/refresh tokens. Codes and tokens
//! are stored only as SHA-256 hashes; a refresh token's rotations share a `family_id` (the
//! hash of the code that started the grant) so a replayed token can revoke the whole grant.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Result, Store};
use crate::json::Json;
use crate::users::User;

/// A registered OAuth client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    pub client_id: String,
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: String,
    /// The URL of its client ID metadata document (None for dynamically registered clients).
    pub metadata_url: Option<String>,
    /// The registration request or metadata document, as JSON text.
    pub metadata: Option<String>,
    /// Registration time, or when the metadata document was last fetched.
    pub created_at: i64,
}

/// An authorization code as issued (the code itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthCode {
    pub code_hash: String,
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub scope: String,
    pub resource: Option<String>,
    pub expires_at: i64,
    pub created_at: i64,
}

/// What redeeming an authorization code found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRedemption {
    /// The code was live and is now spent.
    Redeemed(OAuthCode),
    /// The code was spent before: every token issued from it has now been revoked.
    Replayed,
    /// Unknown or expired.
    Invalid,
}

/// A token to store (access or refresh).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub token_hash: String,
    pub kind: TokenKind,
    pub client_id: String,
    pub user_id: String,
    pub scope: String,
    pub resource: Option<String>,
    pub family_id: String,
    pub expires_at: i64,
}

/// The two kinds of token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
}

/// A stored token's grant (what a refresh or a bearer check needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    pub client_id: String,
    pub user_id: String,
    pub scope: String,
    pub resource: Option<String>,
    pub family_id: String,
    pub expires_at: i64,
}

/// What presenting a refresh token found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshOutcome {
    /// The old token is revoked and the new pair stored.
    Rotated(TokenGrant),
    /// The token had already been used or revoked: its whole family is now revoked.
    Replayed,
    /// Unknown, expired, or issued to another client.
    Invalid,
    /// The caller's check refused the grant; nothing changed.
    Declined(TokenGrant),
}

/// A live access token: its account, grant and the account's usage in the asked month.
#[derive(Debug, Clone)]
pub struct AccessRecord {
    pub user: User,
    pub grant: TokenGrant,
    pub used: i64,
}

fn client_from(r: &AnyRow) -> Result<OAuthClient> {
    Ok(OAuthClient {
        client_id: r.try_get("client_id")?,
        client_name: r.try_get("client_name")?,
        redirect_uris: r.try_get::<Json<Vec<String>>, _>("redirect_uris")?.0,
        token_endpoint_auth_method: r.try_get("token_endpoint_auth_method")?,
        metadata_url: r.try_get("metadata_url")?,
        metadata: r.try_get("metadata")?,
        created_at: r.try_get("created_at")?,
    })
}

fn grant_from(r: &AnyRow) -> Result<TokenGrant> {
    Ok(TokenGrant {
        client_id: r.try_get("client_id")?,
        user_id: r.try_get("user_id")?,
        scope: r.try_get("scope")?,
        resource: r.try_get("resource")?,
        family_id: r.try_get("family_id")?,
        expires_at: r.try_get("expires_at")?,
    })
}

const CLIENT_COLS: &str =
    "client_id, client_name, redirect_uris, token_endpoint_auth_method, metadata_url, metadata, created_at";

async fn insert_token(tx: &mut sqlx::Transaction<'static, sqlx::Any>, t: &NewToken, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO oauth_tokens (token_hash, kind, client_id, user_id, scope, resource, family_id, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&t.token_hash)
    .bind(t.kind.as_str())
    .bind(&t.client_id)
    .bind(&t.user_id)
    .bind(&t.scope)
    .bind(t.resource.clone())
    .bind(&t.family_id)
    .bind(t.expires_at)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn revoke_family(tx: &mut sqlx::Transaction<'static, sqlx::Any>, family_id: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL")
        .bind(now)
        .bind(family_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// Store a client; an existing client with the same id (a re-fetched metadata
    /// document) is replaced.
    pub async fn upsert_oauth_client(&self, c: &OAuthClient) -> Result<()> {
        sqlx::query(
            "INSERT INTO oauth_clients (client_id, client_name, redirect_uris, token_endpoint_auth_method, metadata_url, metadata, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (client_id) DO UPDATE SET client_name = excluded.client_name, redirect_uris = excluded.redirect_uris, \
             token_endpoint_auth_method = excluded.token_endpoint_auth_method, metadata_url = excluded.metadata_url, \
             metadata = excluded.metadata, created_at = excluded.created_at",
        )
        .bind(&c.client_id)
        .bind(c.client_name.clone())
        .bind(Json(&c.redirect_uris))
        .bind(&c.token_endpoint_auth_method)
        .bind(c.metadata_url.clone())
        .bind(c.metadata.clone())
        .bind(c.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A client by id.
    pub async fn oauth_client(&self, client_id: &str) -> Result<Option<OAuthClient>> {
        let row = sqlx::query(sqlf!("SELECT {CLIENT_COLS} FROM oauth_clients WHERE client_id = $1"))
            .bind(client_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(client_from).transpose()
    }

    /// Store a new authorization code.
    pub async fn create_oauth_code(&self, c: &OAuthCode) -> Result<()> {
        sqlx::query(
            "INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, resource, expires_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&c.code_hash)
        .bind(&c.client_id)
        .bind(&c.user_id)
        .bind(&c.redirect_uri)
        .bind(&c.code_challenge)
        .bind(&c.scope)
        .bind(c.resource.clone())
        .bind(c.expires_at)
        .bind(c.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Spend a code exactly once. A second redemption revokes every token issued from it
    /// (OAuth 2.1 §4.1.3), since one of the two presenters is not the legitimate client.
    pub async fn redeem_oauth_code(&self, code_hash: &str, now: i64) -> Result<CodeRedemption> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(
            "SELECT code_hash, client_id, user_id, redirect_uri, code_challenge, scope, resource, expires_at, used_at, created_at \
             FROM oauth_codes WHERE code_hash = $1",
        )
        .bind(code_hash)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(r) = row else { return Ok(CodeRedemption::Invalid) };
        let used_at: Option<i64> = r.try_get("used_at")?;
        if used_at.is_some() {
            revoke_family(&mut tx, code_hash, now).await?;
            tx.commit().await?;
            return Ok(CodeRedemption::Replayed);
        }
        let code = OAuthCode {
            code_hash: r.try_get("code_hash")?,
            client_id: r.try_get("client_id")?,
            user_id: r.try_get("user_id")?,
            redirect_uri: r.try_get("redirect_uri")?,
            code_challenge: r.try_get("code_challenge")?,
            scope: r.try_get("scope")?,
            resource: r.try_get("resource")?,
            expires_at: r.try_get("expires_at")?,
            created_at: r.try_get("created_at")?,
        };
        // Spend it even when it turns out to be expired or presented wrongly: a code is
        // good for one attempt.
        let res = sqlx::query("UPDATE oauth_codes SET used_at = $1 WHERE code_hash = $2 AND used_at IS NULL")
            .bind(now)
            .bind(code_hash)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        if res.rows_affected() == 0 {
            return Ok(CodeRedemption::Replayed);
        }
        if code.expires_at <= now {
            return Ok(CodeRedemption::Invalid);
        }
        Ok(CodeRedemption::Redeemed(code))
    }

    /// Store the tokens of a new grant (from an authorization code).
    pub async fn issue_oauth_tokens(&self, tokens: &[NewToken], now: i64) -> Result<()> {
        let mut tx = self.begin_write().await?;
        for t in tokens {
            insert_token(&mut tx, t, now).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Rotate a refresh token of `client_id`: revoke it and store the tokens `make` builds
    /// from its grant (same family, account, scope and audience), or change nothing when
    /// `make` declines with `None`. A token presented after it was rotated or revoked
    /// revokes its family.
    pub async fn rotate_refresh_token<F>(
        &self,
        token_hash: &str,
        client_id: &str,
        now: i64,
        make: F,
    ) -> Result<RefreshOutcome>
    where
        F: FnOnce(&TokenGrant) -> Option<Vec<NewToken>>,
    {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(
            "SELECT client_id, user_id, scope, resource, family_id, expires_at, revoked_at FROM oauth_tokens \
             WHERE token_hash = $1 AND kind = 'refresh'",
        )
        .bind(token_hash)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(r) = row else { return Ok(RefreshOutcome::Invalid) };
        let grant = grant_from(&r)?;
        if grant.client_id != client_id {
            return Ok(RefreshOutcome::Invalid);
        }
        let revoked_at: Option<i64> = r.try_get("revoked_at")?;
        if revoked_at.is_some() {
            revoke_family(&mut tx, &grant.family_id, now).await?;
            tx.commit().await?;
            return Ok(RefreshOutcome::Replayed);
        }
        if grant.expires_at <= now {
            return Ok(RefreshOutcome::Invalid);
        }
        let Some(new_tokens) = make(&grant) else { return Ok(RefreshOutcome::Declined(grant)) };
        let res = sqlx::query("UPDATE oauth_tokens SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(token_hash)
            .execute(&mut *tx)
            .await?;
        if res.rows_affected() == 0 {
            revoke_family(&mut tx, &grant.family_id, now).await?;
            tx.commit().await?;
            return Ok(RefreshOutcome::Replayed);
        }
        for t in &new_tokens {
            insert_token(&mut tx, t, now).await?;
        }
        tx.commit().await?;
        Ok(RefreshOutcome::Rotated(grant))
    }

    /// A live access token's account and grant, with the account's usage in `month`.
    pub async fn oauth_access(&self, token_hash: &str, now: i64, month: &str) -> Result<Option<AccessRecord>> {
        let row = sqlx::query(sqlf!(
            "SELECT u.id, u.email, u.plan, u.legacy_free, u.password_hash, u.created_at AS user_created_at, \
             t.client_id, t.user_id, t.scope, t.resource, t.family_id, t.expires_at, COALESCE({USED}, 0) AS used \
             FROM oauth_tokens t JOIN users u ON u.id = t.user_id \
             LEFT JOIN usage_counters c ON c.user_id = u.id AND c.month = $1 \
             WHERE t.token_hash = $2 AND t.kind = 'access' AND t.revoked_at IS NULL AND t.expires_at > $3",
            USED = crate::gate::USED
        ))
        .bind(month)
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(AccessRecord {
            user: User {
                id: r.try_get("id")?,
                email: r.try_get("email")?,
                plan: r.try_get("plan")?,
                legacy_free: r.try_get::<i64, _>("legacy_free")? != 0,
                password_hash: r.try_get("password_hash")?,
                created_at: r.try_get("user_created_at")?,
            },
            grant: grant_from(&r)?,
            used: r.try_get("used")?,
        }))
    }

    /// Revoke a token (RFC 7009) unless it belongs to a client other than `client_id`.
    /// Revoking a refresh token revokes its whole grant, access tokens included.
    /// Returns whether a live token was revoked.
    pub async fn revoke_oauth_token(&self, token_hash: &str, client_id: Option<&str>, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String, String, String, Option<i64>)> =
            sqlx::query_as("SELECT kind, client_id, family_id, revoked_at FROM oauth_tokens WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((kind, owner, family, revoked_at)) = row else { return Ok(false) };
        if client_id.is_some_and(|c| c != owner) || revoked_at.is_some() {
            return Ok(false);
        }
        if kind == TokenKind::Refresh.as_str() {
            revoke_family(&mut tx, &family, now).await?;
        } else {
            sqlx::query("UPDATE oauth_tokens SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL")
                .bind(now)
                .bind(token_hash)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Revoke every OAuth token of an account (e.g. "sign out everywhere"); returns how many
    /// live tokens were revoked.
    pub async fn revoke_user_oauth_tokens(&self, user_id: &str, now: i64) -> Result<u64> {
        let res = sqlx::query("UPDATE oauth_tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(res.rows_affected())
    }

    /// Delete codes and tokens that can no longer be used (housekeeping). Spent codes are
    /// kept until they expire so a replay inside their lifetime is still recognised.
    pub async fn purge_oauth_state(&self, now: i64) -> Result<()> {
        sqlx::query("DELETE FROM oauth_codes WHERE expires_at <= $1").bind(now).execute(&self.pool).await?;
        sqlx::query("DELETE FROM oauth_tokens WHERE expires_at <= $1").bind(now).execute(&self.pool).await?;
        Ok(())
    }
}
