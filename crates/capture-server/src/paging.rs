//! Cursor pages of every list (screenshots, audits, runs, campaigns, suppressions, inbox
//! messages, the dashboard's screenshots), written once: a [`Window`] reads the request's
//! `limit` and `before`, asks its store for one row more than the page holds (so it knows
//! whether another page follows), and cuts the rows into a [`Page`] whose `nextCursor` is
//! `<ISO time>~<id>` of its last row. A page that is exactly full is the last one when
//! nothing follows it, and its `nextCursor` is null instead of a link to an empty page.

use capture_core::FieldError;
use capture_core::time::{iso, parse_iso};
use schemars::JsonSchema;
use serde::Deserialize;

/// Rows in a page unless the request says otherwise.
pub const DEFAULT_PAGE: i64 = 20;
/// Most rows in a page.
pub const MAX_PAGE: i64 = 100;

// Kept as text so the service answers a bad value with the contract's `VALIDATION_ERROR`.
/// Which page of jobs, newest first: the query of `GET /v1/screenshots` (also the
/// `list_screenshots` tool's input).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ListQuery {
    /// How many to return.
    #[schemars(with = "Option<u32>", range(min = 1, max = MAX_PAGE), extend("default" = DEFAULT_PAGE))]
    pub limit: Option<String>,
    /// A nextCursor value, or an ISO 8601 time: list jobs created before it.
    pub before: Option<String>,
}

// The OpenAPI parameters are the JSON Schema above.
impl utoipa::IntoParams for ListQuery {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        crate::schema::query_params::<ListQuery>()
    }
}

/// Where a page starts: strictly before this time, and (at the same time) before this id.
pub type Before = (i64, Option<String>);

/// One page asked for: how many rows, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub limit: i64,
    pub before: Option<Before>,
}

/// A page of rows and the cursor of the next one (None on the last page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub rows: Vec<T>,
    pub next_cursor: Option<String>,
}

impl Window {
    /// The page a list query asks for; a cursor's id must satisfy `id_ok` (its resource's
    /// id shape), so a cursor of another list is refused rather than misread.
    pub fn of(q: &ListQuery, id_ok: impl Fn(&str) -> bool) -> Result<Window, FieldError> {
        Window::parse(q.limit.as_deref(), q.before.as_deref(), id_ok)
    }

    /// `limit` (empty: the default) and `before` (a nextCursor value or an ISO 8601 time;
    /// empty: the newest rows), each refused naming its field.
    pub fn parse(
        limit: Option<&str>,
        before: Option<&str>,
        id_ok: impl Fn(&str) -> bool,
    ) -> Result<Window, FieldError> {
        let limit = match limit.filter(|l| !l.is_empty()) {
            None => DEFAULT_PAGE,
            Some(s) => match s.parse::<i64>() {
                Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
                _ => return Err(FieldError::new("limit", format!("must be a whole number from 1 to {MAX_PAGE}"))),
            },
        };
        let before = match before.filter(|b| !b.is_empty()) {
            None => None,
            Some(b) => Some(
                parse_cursor(b, id_ok)
                    .ok_or_else(|| FieldError::new("before", "must be an ISO 8601 timestamp or a nextCursor value"))?,
            ),
        };
        Ok(Window { limit, before })
    }

    /// How many rows to ask the store for: one more than the page holds.
    pub fn fetch(&self) -> i64 {
        self.limit.saturating_add(1)
    }

    /// The page out of `rows` (fetched with [`Window::fetch`], newest first); `key` gives a
    /// row's time and id, from which the next page's cursor is made.
    pub fn page<T>(&self, mut rows: Vec<T>, key: impl Fn(&T) -> (i64, &str)) -> Page<T> {
        let limit = usize::try_from(self.limit).unwrap_or(0);
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if more {
            rows.last().map(|r| {
                let (at, id) = key(r);
                cursor(at, id)
            })
        } else {
            None
        };
        Page { rows, next_cursor }
    }
}

/// The cursor of a row: `<ISO time>~<id>`.
pub fn cursor(at: i64, id: &str) -> String {
    format!("{}~{id}", iso(at))
}

/// `ts~id` (our cursor) or a bare ISO timestamp.
fn parse_cursor(s: &str, id_ok: impl Fn(&str) -> bool) -> Option<Before> {
    match s.split_once('~') {
        Some((ts, id)) if id_ok(id) => Some((parse_iso(ts)?, Some(id.to_string()))),
        Some(_) => None,
        None => Some((parse_iso(s)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(limit: i64) -> Window {
        Window { limit, before: None }
    }

    #[test]
    fn a_full_last_page_has_no_next_cursor_and_a_longer_list_has_one() {
        fn key(n: &(i64, String)) -> (i64, &str) {
            (n.0, n.1.as_str())
        }
        let rows = |n: i64| (1..=n).map(|i| (i * 1000, format!("r{i}"))).collect::<Vec<_>>();
        let p = window(3).page(rows(3), key);
        assert_eq!((p.rows.len(), p.next_cursor), (3, None));
        let p = window(3).page(rows(4), key);
        assert_eq!((p.rows.len(), p.next_cursor.as_deref()), (3, Some("1970-01-01T00:00:03.000Z~r3")));
        assert_eq!(window(3).page(rows(1), key).next_cursor, None);
        assert_eq!(window(3).page(Vec::new(), key), Page { rows: vec![], next_cursor: None });
        assert_eq!(window(100).fetch(), 101);
    }

    #[test]
    fn limits_and_cursors_are_read_or_refused_naming_the_field() {
        let any = |_: &str| true;
        assert_eq!(Window::parse(None, None, any).unwrap(), window(DEFAULT_PAGE));
        assert_eq!(Window::parse(Some(""), Some(""), any).unwrap(), window(DEFAULT_PAGE));
        assert_eq!(Window::parse(Some("100"), None, any).unwrap().limit, 100);
        for bad in ["0", "101", "-1", "ten", "1.5", " 5"] {
            assert_eq!(Window::parse(Some(bad), None, any).unwrap_err().field, "limit", "{bad}");
        }
        let c = cursor(3000, "scr_abc");
        let w = Window::parse(None, Some(&c), |id| id.starts_with("scr_")).unwrap();
        assert_eq!(w.before, Some((3000, Some("scr_abc".to_string()))));
        let w = Window::parse(None, Some("1970-01-01T00:00:03Z"), any).unwrap();
        assert_eq!(w.before, Some((3000, None)));
        for bad in ["yesterday", "1970-01-01T00:00:03.000Z~aud_abc", "~"] {
            let e = Window::parse(None, Some(bad), |id| id.starts_with("scr_")).unwrap_err();
            assert_eq!(e.field, "before", "{bad}");
        }
    }
}
