//! Request bodies from the edge inward, typed: a request type derives its shape (serde, and
//! the JSON Schema of the OpenAPI document and the MCP catalogue from the same type) and says
//! in [`Checked::check`] what its shape cannot (ranges, URLs, addresses, one field or another).
//! [`validate`] runs both and names the field a refusal is about by its serde path
//! (`recipients[3].recipientEmail`, `steps[2]`), so REST, MCP and the website refuse a bad
//! value with the same `VALIDATION_ERROR`. [`ValidatedJson`] is the extractor of a JSON body;
//! [`IdemCreate`] adds the `Idempotency-Key` of a create.

use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use capture_core::FieldError;
use capture_store::IdemClaim;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::json::JsonObject;
use crate::auth::Account;
use crate::state::AppState;

/// A request type: its derived shape, then the checks beyond it.
pub trait Checked: DeserializeOwned {
    /// The request once checked (with its defaults filled in).
    type Valid: Send + 'static;

    /// The checks the shape cannot express, each refusal naming its field.
    fn check(self) -> Result<Self::Valid, FieldError>;
}

/// Deserialise and check a request's JSON object (a body, an MCP tool's arguments).
pub fn validate<T: Checked>(body: &Map<String, Value>) -> Result<T::Valid, FieldError> {
    shape::<T>(body)?.check()
}

/// Deserialise a request's JSON object only (for a caller whose checks take more than the
/// body: an upload's options have no URL), refusals naming the field by its path.
pub fn shape<T: DeserializeOwned>(body: &Map<String, Value>) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(Value::Object(body.clone())).map_err(|e| shape_error(&e))
}

/// Longest field name echoed back in an error.
const FIELD_MAX: usize = 100;

/// A serde refusal as the API's field error: the field by its path, and a reason a client can
/// act on (`is required`, `must be a string`, `must be single_page or full_site`).
fn shape_error(e: &serde_path_to_error::Error<serde_json::Error>) -> FieldError {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let inner = e.inner().to_string();
    let join = |name: &str| {
        // Where the name is already the path's last part (an unknown field) it is not repeated;
        // inside an internally tagged enum (a run's step) the path stops at the element.
        let base = match path.strip_suffix(name) {
            Some(b) if b.is_empty() || b.ends_with('.') => b.trim_end_matches('.'),
            _ => path.as_str(),
        };
        let name: String = name.chars().take(FIELD_MAX).collect();
        if base.is_empty() { name } else { format!("{base}.{name}") }
    };
    if let Some(name) = quoted(&inner, "missing field `") {
        return FieldError::new(join(&name), "is required");
    }
    if let Some(name) = quoted(&inner, "unknown field `") {
        let known = inner.split_once(", expected ").map_or(String::new(), |(_, k)| names(k));
        return FieldError::new(join(&name), format!("is not a known field (known: {known})"));
    }
    let field = if path.is_empty() { "body".to_string() } else { path.clone() };
    if inner.starts_with("unknown variant `") {
        let allowed = inner.split_once(", expected ").map_or(String::new(), |(_, k)| k.replace('`', ""));
        return FieldError::new(field, format!("must be {allowed}"));
    }
    if inner.starts_with("invalid type: null,") {
        return FieldError::new(field, "is required");
    }
    if inner.starts_with("invalid type: ")
        || inner.starts_with("invalid value: ")
        || inner.starts_with("invalid length ")
    {
        let expected = inner.rsplit_once(", expected ").map_or("", |(_, x)| x);
        return FieldError::new(field, format!("must be {}", plain_expectation(expected)));
    }
    FieldError::new(field, inner)
}

/// The name between `prefix` and the next backtick.
fn quoted(s: &str, prefix: &str) -> Option<String> {
    let rest = s.strip_prefix(prefix)?;
    Some(rest.split('`').next().unwrap_or("").to_string())
}

/// serde's list of names (`` `a`, `b` `` / `` one of `a`, `b` `` / `` `a` or `b` ``), sorted.
fn names(expected: &str) -> String {
    let mut v: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    v.sort_unstable();
    v.join(", ")
}

/// serde's expectation in a client's words.
fn plain_expectation(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "an array".into(),
        "string or map" => "a string".into(),
        e if e.starts_with("struct ") || e == "a map" => "an object".into(),
        e => e.into(),
    }
}

/// A JSON object body deserialised as `T` and checked: the checked request and the hash of
/// the body in canonical form (keys sorted), which an idempotent create compares.
pub struct ValidatedJson<T: Checked> {
    pub valid: T::Valid,
    pub body_hash: String,
}

impl<S: Send + Sync, T: Checked> FromRequest<S> for ValidatedJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let JsonObject(body, _raw) = JsonObject::from_request(req, state).await?;
        let valid = validate::<T>(&body).map_err(ApiError::validation)?;
        // serde_json maps are ordered by key, so this is a canonical form of the body.
        let body_hash = crate::crypto::sha256_hex(Value::Object(body).to_string().as_bytes());
        Ok(ValidatedJson { valid, body_hash })
    }
}

/// A JSON object body that may be left out (no `Content-Length`, or 0, and no chunked
/// body): then `T::default()`, checked — the defaults `T` documents.
pub struct OptionalJson<T: Checked>(pub T::Valid);

impl<S: Send + Sync, T: Checked + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let h = req.headers();
        let has_body = h.get(axum::http::header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() != b"0")
            || h.contains_key(axum::http::header::TRANSFER_ENCODING);
        match has_body {
            true => Ok(OptionalJson(ValidatedJson::<T>::from_request(req, state).await?.valid)),
            false => T::default().check().map(OptionalJson).map_err(ApiError::validation),
        }
    }
}

/// A create under the `Idempotency-Key` of its request: the caller, the checked body and the
/// key's scope (`POST /v1/audits`: the method and the route's pattern). The handler hands its
/// operation to [`IdemCreate::run`].
pub struct IdemCreate<T: Checked> {
    state: AppState,
    account: Account,
    headers: HeaderMap,
    route: String,
    pub input: ValidatedJson<T>,
}

impl<T: Checked> FromRequest<AppState> for IdemCreate<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let account =
            axum::Extension::<Account>::from_request_parts(&mut parts, state).await.map_err(ApiError::internal)?.0;
        let pattern = MatchedPath::from_request_parts(&mut parts, state)
            .await
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|_| parts.uri.path().to_string());
        let route = format!("{} {pattern}", parts.method);
        let headers = parts.headers.clone();
        let input = ValidatedJson::<T>::from_request(Request::from_parts(parts, body), state).await?;
        Ok(IdemCreate { state: state.clone(), account, headers, route, input })
    }
}

impl<T: Checked> IdemCreate<T>
where
    T::Valid: Sync,
{
    /// Run the create once per `Idempotency-Key` (see [`crate::idempotency::idempotent`]):
    /// `f` gets the state, the caller, the checked request and the key it owns, and answers
    /// the body and the caller's usage after it; the answer's status is `status`.
    pub async fn run<B, F, Fut>(self, status: StatusCode, f: F) -> Response
    where
        B: Serialize + Send + 'static,
        F: FnOnce(AppState, Account, T::Valid, Option<IdemClaim>) -> Fut + Send + 'static,
        Fut: Future<Output = crate::http::ApiResult<(B, i64)>> + Send + 'static,
    {
        let IdemCreate { state, account, headers, route, input } = self;
        let (st, acc) = (state.clone(), account.clone());
        let valid = input.valid;
        crate::idempotency::idempotent(&state, &account, &headers, &route, input.body_hash, move |claim| async move {
            let (body, used) = f(st, acc, valid, claim).await?;
            Ok((status, body, used))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        SinglePage,
        FullSite,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
    enum Step {
        Click { selector: String },
        Wait { ms: u64 },
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Item {
        website_url: String,
        report_type: Option<Kind>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Req {
        url: String,
        report_type: Option<Kind>,
        max_pages: Option<u32>,
        #[serde(default)]
        items: Vec<Item>,
        steps: Option<Vec<Step>>,
        on: Option<bool>,
    }

    impl Checked for Req {
        type Valid = Req;
        fn check(self) -> Result<Req, FieldError> {
            match self.max_pages {
                Some(n) if !(1..=50).contains(&n) => Err(FieldError::new("maxPages", "must be from 1 to 50")),
                _ => Ok(self),
            }
        }
    }

    fn refusal(body: Value) -> (String, String) {
        let e = validate::<Req>(body.as_object().unwrap()).unwrap_err();
        (e.field, e.reason)
    }

    #[test]
    fn each_refusal_names_its_field_by_path_with_a_plain_reason() {
        use serde_json::json;
        let cases = [
            (json!({}), "url", "is required"),
            (json!({"url": null}), "url", "is required"),
            (json!({"url": 3}), "url", "must be a string"),
            (
                json!({"url": "x", "bogus": 1}),
                "bogus",
                "is not a known field (known: items, maxPages, on, reportType, steps, url)",
            ),
            (json!({"url": "x", "reportType": "site"}), "reportType", "must be single_page or full_site"),
            (json!({"url": "x", "reportType": 3}), "reportType", "must be a string"),
            (json!({"url": "x", "maxPages": -1}), "maxPages", "must be a whole number, 0 or more"),
            (json!({"url": "x", "maxPages": "5"}), "maxPages", "must be a whole number, 0 or more"),
            (json!({"url": "x", "maxPages": 51}), "maxPages", "must be from 1 to 50"),
            (json!({"url": "x", "on": "yes"}), "on", "must be true or false"),
            (json!({"url": "x", "items": {}}), "items", "must be an array"),
            (json!({"url": "x", "items": [{"websiteUrl": "a"}, {}]}), "items[1].websiteUrl", "is required"),
            (
                json!({"url": "x", "items": [{"websiteUrl": "a", "x": 1}]}),
                "items[0].x",
                "is not a known field (known: reportType, websiteUrl)",
            ),
            (
                json!({"url": "x", "items": [{"websiteUrl": "a", "reportType": "z"}]}),
                "items[0].reportType",
                "must be single_page or full_site",
            ),
            (
                json!({"url": "x", "steps": [{"action": "wait", "ms": 1}, {"action": "click"}]}),
                "steps[1].selector",
                "is required",
            ),
            (
                json!({"url": "x", "steps": [{"action": "click", "selector": "a", "zz": 1}]}),
                "steps[0].zz",
                "is not a known field (known: selector)",
            ),
            (json!({"url": "x", "steps": [{"action": "fly"}]}), "steps[0].action", "must be click or wait"),
            (json!({"url": "x", "steps": [{}]}), "steps[0].action", "is required"),
        ];
        for (body, field, reason) in cases {
            assert_eq!(refusal(body.clone()), (field.to_string(), reason.to_string()), "{body}");
        }
        let ok = validate::<Req>(json!({"url": "x", "reportType": "full_site"}).as_object().unwrap()).unwrap();
        assert_eq!((ok.url.as_str(), ok.report_type), ("x", Some(Kind::FullSite)));
    }

    #[test]
    fn a_long_unknown_field_name_is_cut_in_the_answer() {
        let long = "f".repeat(500);
        let (field, _) = refusal(serde_json::json!({"url": "x", long.clone(): 1}));
        assert_eq!(field, "f".repeat(FIELD_MAX));
    }
}
