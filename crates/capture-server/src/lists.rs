//! The envelope of every list the API answers, written once: a [`ListResponse`] is a page of a
//! cursor list (`{data, nextCursor}`: screenshots, audits, runs, campaigns, suppressions, inbox
//! messages), a [`Collection`] a whole, unpaged one (`{data}`: webhook endpoints, profiles,
//! devices, voices…).
//!
//! Each list keeps its own name and description in the OpenAPI document and the tools'
//! schemas (`JobList`, "A page of jobs, newest first."): [`list_type!`] declares the name as
//! an alias of the envelope over the list's item and gives that instance the list's schemas.

use serde::Serialize;

use crate::paging::Page;

/// A page of a cursor list, newest first, and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResponse<T> {
    pub data: Vec<T>,
    /// Pass as `before` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl<T> ListResponse<T> {
    /// `page`'s rows, each shown with `view`, and its cursor.
    pub fn of<R>(page: Page<R>, view: impl FnMut(R) -> T) -> ListResponse<T> {
        ListResponse { data: page.rows.into_iter().map(view).collect(), next_cursor: page.next_cursor }
    }
}

/// A whole collection (no paging).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Collection<T> {
    pub data: Vec<T>,
}

/// Name one list: `pub type JobList = ListResponse<Job>;` (or `Collection<Item>`) with the
/// list's description (its doc comment) and, for a page, the description of its
/// `nextCursor` (a doc comment after `cursor`). The schemas it gets are `both` (OpenAPI and
/// JSON Schema, each derived), `openapi` (OpenAPI only) or `json` (JSON Schema, the OpenAPI
/// schema made from it).
macro_rules! list_type {
    (
        $(#[doc = $doc:literal])*
        $vis:vis type $name:ident = ListResponse<$item:ty>;
        cursor $(#[doc = $cdoc:literal])*;
        schemas: $how:ident;
    ) => {
        $vis type $name = $crate::lists::ListResponse<$item>;
        const _: () = {
            $crate::lists::list_type!(@shadow $how
                $(#[doc = $doc])*
                #[serde(rename_all = "camelCase")]
                struct $name {
                    data: Vec<$item>,
                    $(#[doc = $cdoc])*
                    next_cursor: Option<String>,
                }
            );
            $crate::lists::list_type!(@delegate $how $name, $crate::lists::ListResponse<$item>);
        };
    };
    (
        $(#[doc = $doc:literal])*
        $vis:vis type $name:ident = Collection<$item:ty>;
        schemas: $how:ident;
    ) => {
        $vis type $name = $crate::lists::Collection<$item>;
        const _: () = {
            $crate::lists::list_type!(@shadow $how
                $(#[doc = $doc])*
                struct $name {
                    data: Vec<$item>,
                }
            );
            $crate::lists::list_type!(@delegate $how $name, $crate::lists::Collection<$item>);
        };
    };
    // The stand-in whose derives make the list's schemas (never built).
    (@shadow both $($def:tt)*) => {
        #[allow(dead_code)]
        #[derive(utoipa::ToSchema, schemars::JsonSchema)]
        $($def)*
    };
    (@shadow openapi $($def:tt)*) => {
        #[allow(dead_code)]
        #[derive(utoipa::ToSchema)]
        $($def)*
    };
    (@shadow json $($def:tt)*) => {
        #[allow(dead_code)]
        #[derive(schemars::JsonSchema)]
        $($def)*
    };
    (@delegate both $shadow:ident, $list:ty) => {
        $crate::lists::list_type!(@delegate openapi $shadow, $list);
        $crate::lists::list_type!(@delegate json_schema $shadow, $list);
    };
    (@delegate openapi $shadow:ident, $list:ty) => {
        impl utoipa::PartialSchema for $list {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                <$shadow as utoipa::PartialSchema>::schema()
            }
        }
        impl utoipa::ToSchema for $list {
            fn name() -> std::borrow::Cow<'static, str> {
                <$shadow as utoipa::ToSchema>::name()
            }
            fn schemas(
                schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>,
            ) {
                <$shadow as utoipa::ToSchema>::schemas(schemas)
            }
        }
    };
    (@delegate json $shadow:ident, $list:ty) => {
        $crate::lists::list_type!(@delegate json_schema $shadow, $list);
        impl utoipa::PartialSchema for $list {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::schema::openapi::<$shadow>()
            }
        }
        impl utoipa::ToSchema for $list {
            fn name() -> std::borrow::Cow<'static, str> {
                stringify!($shadow).into()
            }
        }
    };
    (@delegate json_schema $shadow:ident, $list:ty) => {
        impl schemars::JsonSchema for $list {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                <$shadow as schemars::JsonSchema>::schema_name()
            }
            fn schema_id() -> std::borrow::Cow<'static, str> {
                <$shadow as schemars::JsonSchema>::schema_id()
            }
            fn inline_schema() -> bool {
                <$shadow as schemars::JsonSchema>::inline_schema()
            }
            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <$shadow as schemars::JsonSchema>::json_schema(generator)
            }
        }
    };
}
pub(crate) use list_type;
