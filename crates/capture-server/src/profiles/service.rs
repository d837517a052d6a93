//! Browser profiles: a signed-in browser state per account. The state is sealed with the
//! master key; only its owner finds a profile, by id or name. Jobs name the profile's id and
//! open its state when they run, so a state saved again in the meantime is the one used.

use capture_core::profile::{BrowserState, StateSummary};
use capture_core::time::iso;
use capture_core::{FieldError, ProfileId, ProfileStatus};
use capture_store::{ProfileRow, StoreError};

use super::types::{Profile, ProfileList, ValidProfile};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::state::AppState;

/// What saved a state imported through the API.
pub const FROM_IMPORT: &str = "import";
/// What saved a state `login` made.
pub const FROM_LOGIN: &str = "login";

fn taken(e: StoreError, field: &str) -> Error {
    match e {
        StoreError::Conflict(m) => Error::Invalid(FieldError::new(field, m)),
        e => e.into(),
    }
}

/// A profile as shown.
pub fn view(r: &ProfileRow) -> Profile {
    let status = match (&r.state_enc, r.expired_at) {
        (None, _) => ProfileStatus::Empty,
        (Some(_), Some(_)) => ProfileStatus::Expired,
        (Some(_), None) => ProfileStatus::Ready,
    };
    Profile {
        id: ProfileId::from_stored(r.id.clone()),
        name: r.name.clone(),
        status,
        summary: serde_json::from_str(&r.summary).unwrap_or_default(),
        saved_from: r.saved_from.clone(),
        saved_at: r.saved_at.map(iso),
        expired_at: r.expired_at.map(iso),
        expired_by: r.expired_by.clone(),
        last_used_at: r.last_used_at.map(iso),
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at),
    }
}

fn sealed(state: &AppState, s: &BrowserState) -> Result<(String, String)> {
    let json = serde_json::to_string(s).map_err(Error::internal)?;
    let summary = serde_json::to_string(&s.summary()).map_err(Error::internal)?;
    Ok((state.master.encrypt(&json), summary))
}

/// A new profile, empty or with an imported state.
pub async fn create(state: &AppState, account: &Account, p: ValidProfile) -> Result<Profile> {
    let name = p.name.ok_or_else(|| Error::Invalid(FieldError::new("name", "is required")))?;
    new_profile(state, &account.user.id, name, p.state.as_ref(), FROM_IMPORT).await
}

async fn new_profile(
    state: &AppState,
    user_id: &str,
    name: String,
    s: Option<&BrowserState>,
    from: &str,
) -> Result<Profile> {
    let now = state.clock.now_ms();
    let (state_enc, summary) = match s {
        Some(s) => {
            let (e, sum) = sealed(state, s)?;
            (Some(e), sum)
        }
        None => (None, serde_json::to_string(&StateSummary::default()).map_err(Error::internal)?),
    };
    let row = ProfileRow {
        id: ProfileId::new().to_string(),
        user_id: user_id.to_owned(),
        name,
        saved_from: state_enc.as_ref().map(|_| from.to_owned()),
        saved_at: state_enc.as_ref().map(|_| now),
        state_enc,
        summary,
        expired_at: None,
        expired_by: None,
        last_used_at: None,
        created_at: now,
        updated_at: now,
    };
    state.store.create_profile(&row).await.map_err(|e| taken(e, "name"))?;
    Ok(view(&row))
}

/// The caller's profiles, oldest first.
pub async fn list(state: &AppState, account: &Account) -> Result<ProfileList> {
    let rows = state.store.list_profiles(&account.user.id).await?;
    Ok(ProfileList { data: rows.iter().map(view).collect() })
}

/// One of the caller's profiles, by id or name.
pub async fn find(state: &AppState, account: &Account, id_or_name: &str) -> Result<ProfileRow> {
    state.store.find_profile(&account.user.id, id_or_name).await?.ok_or_else(|| Error::not_found(ProfileId::NOUN))
}

/// One of the caller's profiles as shown.
pub async fn get(state: &AppState, account: &Account, id_or_name: &str) -> Result<Profile> {
    Ok(view(&find(state, account, id_or_name).await?))
}

/// Rename a profile, replace its state, or both.
pub async fn update(state: &AppState, account: &Account, id_or_name: &str, p: ValidProfile) -> Result<Profile> {
    let row = find(state, account, id_or_name).await?;
    let now = state.clock.now_ms();
    if let Some(name) = &p.name
        && *name != row.name
        && !state.store.rename_profile(&account.user.id, &row.id, name, now).await.map_err(|e| taken(e, "name"))?
    {
        return Err(Error::not_found(ProfileId::NOUN));
    }
    if let Some(s) = &p.state {
        save_into(state, &account.user.id, &row.id, s, FROM_IMPORT).await?;
    }
    get(state, account, &row.id).await
}

/// Delete a profile and its state.
pub async fn delete(state: &AppState, account: &Account, id_or_name: &str) -> Result<()> {
    let row = find(state, account, id_or_name).await?;
    match state.store.delete_profile(&account.user.id, &row.id).await? {
        true => Ok(()),
        false => Err(Error::not_found(ProfileId::NOUN)),
    }
}

/// A profile's state in clear (Playwright's storage-state format), for its owner.
pub async fn export(state: &AppState, account: &Account, id_or_name: &str) -> Result<BrowserState> {
    let row = find(state, account, id_or_name).await?;
    Ok(open(state, &row)?.unwrap_or_default())
}

/// The state of a profile row; None when nothing was saved.
fn open(state: &AppState, row: &ProfileRow) -> Result<Option<BrowserState>> {
    let Some(enc) = &row.state_enc else { return Ok(None) };
    let json = state.master.decrypt(enc).ok_or_else(|| {
        Error::internal("a profile's state does not decrypt with this master key (CAPTURE_MASTER_KEY changed?)")
    })?;
    serde_json::from_str(&json).map(Some).map_err(Error::internal)
}

async fn save_into(state: &AppState, user_id: &str, id: &str, s: &BrowserState, from: &str) -> Result<()> {
    let (enc, summary) = sealed(state, s)?;
    match state.store.save_profile_state(user_id, id, &enc, &summary, from, state.clock.now_ms()).await? {
        true => Ok(()),
        false => Err(Error::not_found(ProfileId::NOUN)),
    }
}

/// Save a state into `user_id`'s profile named `id_or_name` (by id, or by name: a name
/// that is not one of theirs makes a new profile). `from` names what saved it.
pub async fn save(
    state: &AppState,
    user_id: &str,
    id_or_name: &str,
    s: &BrowserState,
    from: &str,
    field: &str,
) -> Result<Profile> {
    s.validate(field)?;
    match state.store.find_profile(user_id, id_or_name).await? {
        Some(row) => {
            save_into(state, user_id, &row.id, s, from).await?;
            let row =
                state.store.find_profile(user_id, &row.id).await?.ok_or_else(|| Error::not_found(ProfileId::NOUN))?;
            Ok(view(&row))
        }
        None if ProfileId::parse(id_or_name).is_some() => Err(Error::Invalid(FieldError::new(
            field,
            format!("{id_or_name} is not one of your profiles (GET /v1/profiles lists them)"),
        ))),
        None => {
            let name = super::types::check_name(field, id_or_name)?;
            new_profile(state, user_id, name, Some(s), from).await
        }
    }
}

/// A request's `profile` (id or name): the caller's profile that has a state to start from;
/// its id is what the job keeps.
pub async fn resolve(state: &AppState, account: &Account, id_or_name: &str, field: &str) -> Result<ProfileRow> {
    let row = state.store.find_profile(&account.user.id, id_or_name).await?.ok_or_else(|| {
        Error::Invalid(FieldError::new(
            field,
            format!("'{id_or_name}' is not one of your profiles (GET /v1/profiles lists them)"),
        ))
    })?;
    if row.state_enc.is_none() {
        return Err(Error::Invalid(FieldError::new(
            field,
            format!(
                "the profile '{}' has nothing saved yet: sign in with POST /v1/profiles/login, save a session into it (session_end saveProfile), or import a state",
                row.name
            ),
        )));
    }
    Ok(row)
}

/// The state a job starts from, opened when it runs (`user_id`'s profile `id`): a message
/// for the job when the profile is gone or cannot be opened.
pub async fn for_job(state: &AppState, user_id: &str, id: &str) -> std::result::Result<BrowserState, String> {
    let row = match state.store.find_profile(user_id, id).await {
        Ok(Some(r)) if r.id == id => r,
        Ok(_) => return Err(format!("the profile {id} was deleted")),
        Err(e) => {
            tracing::error!(error = %e, "reading a profile failed");
            return Err("the profile could not be read".into());
        }
    };
    let s = match open(state, &row) {
        Ok(Some(s)) => s,
        Ok(None) => return Err(format!("the profile {id} has nothing saved")),
        Err(_) => return Err("the profile's state could not be opened (the service's master key changed)".into()),
    };
    if let Err(e) = state.store.profile_used(id, state.clock.now_ms()).await {
        tracing::warn!(error = %e, "recording a profile's use failed");
    }
    Ok(s)
}

/// A job found the profile signed out: it shows `expired` until a state is saved again.
pub async fn expired(state: &AppState, id: &str, job_id: &str, job_started: i64) {
    if let Err(e) = state.store.profile_expired(id, job_id, job_started, state.clock.now_ms()).await {
        tracing::warn!(error = %e, "marking a profile expired failed");
    }
}
