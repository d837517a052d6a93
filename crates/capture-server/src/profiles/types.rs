//! The wire types of browser profiles (`/v1/profiles`).

use capture_core::profile::{BrowserState, NAME_MAX, StateSummary};
use capture_core::{FieldError, ProfileId, ProfileStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

/// `POST /v1/profiles`: a named profile, empty until a session, a run or `login` saves a
/// state in it, or with a state imported in Playwright's storage-state format.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileIn {
    /// 1 to 100 characters, unique in your account (`shop-admin`).
    pub name: String,
    /// A state to start from: `{cookies: [...], origins: [{origin, localStorage, indexedDB}]}`
    /// as Playwright's `context.storageState()` writes it (at most 3,000 cookies, 100
    /// origins, 4 MB). Stored encrypted.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub state: Option<Value>,
}

/// `PATCH /v1/profiles/{id}`: rename it, replace its state, or both.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfilePatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub state: Option<Value>,
}

/// A checked name and state.
#[derive(Debug, Clone)]
pub struct ValidProfile {
    pub name: Option<String>,
    pub state: Option<BrowserState>,
}

/// A profile's name: trimmed, 1 to 100 characters, no control characters, not shaped like
/// a profile id (a name and an id must never be mistaken for each other).
pub fn check_name(field: &str, raw: &str) -> Result<String, FieldError> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX || name.chars().any(char::is_control) {
        return Err(FieldError::new(field, "must be 1 to 100 characters without control characters"));
    }
    if name.starts_with(&format!("{}_", capture_core::ids::PROFILE)) {
        return Err(FieldError::new(field, "must not start with prf_ (the ids' prefix)"));
    }
    Ok(name.to_owned())
}

/// A state in Playwright's format, checked.
pub fn check_state(field: &str, v: Value) -> Result<BrowserState, FieldError> {
    let s: BrowserState = serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." { field.to_owned() } else { format!("{field}.{path}") };
        FieldError::new(at, format!("is not a storage state: {}", e.inner()))
    })?;
    s.validate(field)?;
    Ok(s)
}

impl Checked for ProfileIn {
    type Valid = ValidProfile;

    fn check(self) -> Result<ValidProfile, FieldError> {
        Ok(ValidProfile {
            name: Some(check_name("name", &self.name)?),
            state: self.state.map(|v| check_state("state", v)).transpose()?,
        })
    }
}

impl Checked for ProfilePatch {
    type Valid = ValidProfile;

    fn check(self) -> Result<ValidProfile, FieldError> {
        if self.name.is_none() && self.state.is_none() {
            return Err(FieldError::new("name", "give a new name, a state, or both"));
        }
        Ok(ValidProfile {
            name: self.name.map(|n| check_name("name", &n)).transpose()?,
            state: self.state.map(|v| check_state("state", v)).transpose()?,
        })
    }
}

/// A profile as shown: what its state holds, never a cookie's or an item's value.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// `prf_…`: what `profile` names on a capture, an audit, a run or a session (the name works too).
    pub id: ProfileId,
    pub name: String,
    /// `empty` (nothing saved yet), `ready`, or `expired` (a job found its session signed
    /// out: sign in again).
    #[schema(value_type = String)]
    #[schemars(with = "String")]
    pub status: ProfileStatus,
    /// Counts, cookie domains and origins of the saved state.
    #[schema(value_type = Object)]
    #[schemars(with = "Value")]
    pub summary: StateSummary,
    /// What saved the state: a run or session (`run_…`), `import` or `login`.
    pub saved_from: Option<String>,
    pub saved_at: Option<String>,
    /// When a job found the session expired, and which job.
    pub expired_at: Option<String>,
    pub expired_by: Option<String>,
    pub last_used_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

list_type! {
    /// The caller's profiles, oldest first.
    pub type ProfileList = Collection<Profile>;
    schemas: both;
}

/// `POST /v1/profiles/login`: sign in (or up) to a site in a fresh browser with a test
/// inbox's address, follow the verification link or type the one-time code mailed to it,
/// and save the signed-in state as a profile.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginIn {
    /// The site's sign-in (or sign-up) page.
    pub url: String,
    /// The profile to save into, by id or name; a name that is not one of yours makes a new
    /// profile (default: the site's host).
    #[serde(default)]
    pub profile: Option<String>,
    /// The inbox whose address signs in (id or address; default: your first inbox, made if
    /// you have none).
    #[serde(default)]
    pub inbox: Option<String>,
    /// The address to type instead of the inbox's (mail to it must reach the inbox).
    #[serde(default)]
    pub email: Option<String>,
    /// The password, when the site asks for one. Used once, never stored.
    #[serde(default)]
    pub password: Option<String>,
    /// How long to wait for the site's mail, in seconds (default 30, 5–120).
    #[serde(default)]
    pub mail_timeout_s: Option<u64>,
    /// Sign in through one of your proxies (id or name, `POST /v1/proxies`), as the
    /// captures that use the profile will.
    #[serde(default)]
    pub proxy: Option<String>,
}

/// A checked login request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValidLogin {
    pub url: String,
    pub profile: Option<String>,
    pub inbox: Option<String>,
    pub email: Option<String>,
    pub password: Option<String>,
    pub mail_timeout: std::time::Duration,
    #[serde(default)]
    pub proxy: Option<String>,
}

impl Checked for LoginIn {
    type Valid = ValidLogin;

    fn check(self) -> Result<ValidLogin, FieldError> {
        let url = crate::inbox::auth_test::normalize_origin(&self.url).map(|_| self.url.trim().to_owned())?;
        let profile = match self.profile.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(p) if p.chars().count() > NAME_MAX => {
                return Err(FieldError::new("profile", "must be a profile's id or name (1 to 100 characters)"));
            }
            Some(p) => Some(p.to_owned()),
        };
        if let Some(e) = &self.email
            && (e.len() > 254 || !e.contains('@') || e.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(FieldError::new("email", "must be an e-mail address"));
        }
        if let Some(p) = &self.password
            && (p.is_empty() || p.len() > 256)
        {
            return Err(FieldError::new("password", "must be 1 to 256 characters"));
        }
        let secs = self.mail_timeout_s.unwrap_or(30);
        if !(5..=120).contains(&secs) {
            return Err(FieldError::new("mailTimeoutS", "must be 5 to 120 seconds"));
        }
        Ok(ValidLogin {
            url,
            profile,
            inbox: self.inbox.map(|i| i.trim().to_owned()).filter(|i| !i.is_empty()),
            email: self.email,
            password: self.password,
            mail_timeout: std::time::Duration::from_secs(secs),
            proxy: capture_core::options::proxy_ref(self.proxy)?,
        })
    }
}

/// What `login` did, step by step, and the profile it saved.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginOut {
    pub profile: Profile,
    /// The address it signed in with.
    pub email: String,
    /// Where the browser ended, and that page's title.
    pub final_url: String,
    pub title: String,
    /// What it did, in order (`filled the e-mail field`, `followed the verification link`…).
    pub steps: Vec<String>,
}
