//! Routes and their OpenAPI operations registered together. An [`Api`] is a router whose
//! every route is added with its documentation (the `__path_<handler>` that
//! `#[utoipa::path]` makes): the route's path and methods are the ones documented, and the
//! operation (with its tags and the schemas it refers to) goes into the document. A route of
//! the JSON API cannot be served undocumented, nor documented at another path than it is
//! served; the document is made from the same routers the app serves ([`crate::routes::apis`]).

use axum::Router;
use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter, on};
use utoipa::openapi::path::{HttpMethod, PathItem, PathsBuilder};
use utoipa::openapi::{Components, OpenApi, OpenApiBuilder};

use crate::state::AppState;

/// A documented router (see the module's docs). It becomes a [`Router`] where it is merged.
#[derive(Default)]
pub struct Api {
    router: Router<AppState>,
    doc: Option<OpenApi>,
}

/// What a handler's documentation gives: its path, methods and operation, its tags and the
/// schemas it refers to (what `#[utoipa::path]` implements for `__path_<handler>`).
pub trait Documented: utoipa::Path + for<'t> utoipa::__dev::Tags<'t> + utoipa::__dev::SchemaReferences {}

impl<D> Documented for D where D: utoipa::Path + for<'t> utoipa::__dev::Tags<'t> + utoipa::__dev::SchemaReferences {}

impl Api {
    pub fn new() -> Api {
        Api::default()
    }

    /// Serve `handler` at the path and for the methods its documentation `D` gives.
    pub fn op<D: Documented, H: Handler<T, AppState>, T: 'static>(self, handler: H) -> Api {
        self.op_with::<D, H, T>(handler, |m| m)
    }

    /// [`Api::op`], with `wrap` applied to the route (a layer of its own, say).
    pub fn op_with<D: Documented, H: Handler<T, AppState>, T: 'static>(
        mut self,
        handler: H,
        wrap: impl FnOnce(MethodRouter<AppState>) -> MethodRouter<AppState>,
    ) -> Api {
        let path = D::path();
        let methods = D::methods();
        let filter =
            methods.iter().map(method_filter).reduce(MethodFilter::or).expect("a documented operation has a method");
        self.router = self.router.route(&path, wrap(on(filter, handler)));

        // The operation as `#[derive(OpenApi)]`'s `paths(…)` would add it: its tags, and the
        // schemas its request and responses refer to among the components.
        let mut operation = D::operation();
        operation.tags.get_or_insert_with(Vec::new).extend(D::tags().iter().map(ToString::to_string));
        let item = match methods.as_slice() {
            [one] => PathItem::new(one.clone(), operation),
            _ => methods
                .into_iter()
                .fold(utoipa::openapi::path::PathItemBuilder::new(), |item, m| item.operation(m, operation.clone()))
                .build(),
        };
        let mut schemas = Vec::new();
        D::schemas(&mut schemas);
        let doc = self.doc.get_or_insert_with(|| OpenApiBuilder::new().build());
        doc.paths.merge(PathsBuilder::new().path(path, item).build());
        doc.components.get_or_insert_with(Components::new).schemas.extend(schemas);
        self
    }

    /// The operations of these routes (and the schemas they refer to), to merge into the document.
    pub fn openapi(&self) -> OpenApi {
        self.doc.clone().unwrap_or_else(|| OpenApiBuilder::new().build())
    }

    /// The documented `(method, path)` of every route, for checks.
    pub fn routes(&self) -> Vec<(String, String)> {
        let doc = serde_json::to_value(self.openapi()).unwrap_or_default();
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, _) in item.as_object().into_iter().flatten() {
                out.push((method.clone(), path.clone()));
            }
        }
        out
    }
}

impl From<Api> for Router<AppState> {
    fn from(api: Api) -> Router<AppState> {
        api.router
    }
}

fn method_filter(m: &HttpMethod) -> MethodFilter {
    match m {
        HttpMethod::Get => MethodFilter::GET,
        HttpMethod::Post => MethodFilter::POST,
        HttpMethod::Put => MethodFilter::PUT,
        HttpMethod::Delete => MethodFilter::DELETE,
        HttpMethod::Options => MethodFilter::OPTIONS,
        HttpMethod::Head => MethodFilter::HEAD,
        HttpMethod::Patch => MethodFilter::PATCH,
        HttpMethod::Trace => MethodFilter::TRACE,
    }
}
