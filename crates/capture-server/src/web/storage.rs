//! Storage destinations on the website: list, add (checked by a probe object, the key pair
//! never shown again), delete. Every operation is the REST API's service function
//! (`storage::service`).

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::StorageDestinationId;
use serde_json::{Map, json};

use super::base::forms::{Signed, SignedForm, account, web_id};
use super::base::layout::{Chrome, Nav, WebResult, page, see_other, sentence};
use super::base::session::WebSession;
use crate::error::Error;
use crate::http::Path;
use crate::http::validated::validate;
use crate::state::AppState;
use crate::storage::service as storage;
use crate::storage::types::{StorageDestination, StorageDestinationIn};

/// `templates/web/storage.html`: the destinations, the form to add one, how captures use them.
#[derive(Template)]
#[template(path = "web/storage.html")]
struct StoragePage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    destinations: Vec<StorageDestination>,
    error: Option<&'a str>,
}

/// `GET /dashboard/storage`
pub async fn list(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    render_list(&state, &s, StatusCode::OK, None).await
}

async fn render_list(state: &AppState, s: &WebSession, status: StatusCode, error: Option<&str>) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let p = StoragePage {
        chrome: Chrome::signed("Storage", s, Nav::Dashboard),
        csrf: &s.csrf,
        destinations: storage::list(state, &acc).await?.data,
        error,
    };
    Ok(page(status, &p, None))
}

/// `POST /dashboard/storage`: check and add a destination.
pub async fn create(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let acc = account(&state, s).await?;
    let mut body = Map::new();
    for (field, name) in [
        ("name", "name"),
        ("url", "url"),
        ("endpoint", "endpoint"),
        ("region", "region"),
        ("accessKeyId", "access_key_id"),
        ("secretAccessKey", "secret_access_key"),
    ] {
        let v = f.form.text(name);
        if !v.trim().is_empty() || matches!(field, "name" | "url" | "accessKeyId" | "secretAccessKey") {
            body.insert(field.into(), json!(v));
        }
    }
    let valid = match validate::<StorageDestinationIn>(&body) {
        Ok(v) => v,
        Err(e) => return render_list(&state, s, StatusCode::BAD_REQUEST, Some(&sentence(&e.to_string()))).await,
    };
    match storage::create(&state, &acc, valid).await {
        Ok(_) => Ok(see_other("/dashboard/storage", None)),
        Err(e @ (Error::Invalid(_) | Error::StorageCheck { .. })) => {
            let status =
                if matches!(e, Error::Invalid(_)) { StatusCode::BAD_REQUEST } else { StatusCode::UNPROCESSABLE_ENTITY };
            render_list(&state, s, status, Some(&sentence(&e.to_string()))).await
        }
        Err(e) => Err(e.into()),
    }
}

/// `POST /dashboard/storage/{id}/delete`
pub async fn delete(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: StorageDestinationId = web_id(&id)?;
    storage::delete(&state, &acc, &id).await?;
    Ok(see_other("/dashboard/storage", None))
}
