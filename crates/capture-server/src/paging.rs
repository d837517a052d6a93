//! Cursor pages of every list (screenshots, audits, runs, campaigns, suppressions, inbox
//! messages, the dashboard's screenshots): the list asks its store for one row more than the
//! page holds, so it knows whether another page follows. A page that is exactly full is the
//! last one when nothing follows it, and its `nextCursor` is null instead of a link to an
//! empty page.

/// How many rows to ask the store for to show a page of `limit`.
pub fn fetch_limit(limit: i64) -> i64 {
    limit.saturating_add(1)
}

/// The page of `limit` rows out of `rows` (fetched with [`fetch_limit`]) and the cursor of the
/// next page: `cursor` of the page's last row when more rows follow, None otherwise.
pub fn page<T>(mut rows: Vec<T>, limit: i64, cursor: impl Fn(&T) -> String) -> (Vec<T>, Option<String>) {
    let limit = usize::try_from(limit).unwrap_or(0);
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = if more { rows.last().map(cursor) } else { None };
    (rows, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_last_page_has_no_next_cursor_and_a_longer_list_has_one() {
        let cur = |n: &i32| n.to_string();
        assert_eq!(page(vec![1, 2, 3], 3, cur), (vec![1, 2, 3], None));
        assert_eq!(page(vec![1, 2, 3, 4], 3, cur), (vec![1, 2, 3], Some("3".to_string())));
        assert_eq!(page(vec![1], 3, cur), (vec![1], None));
        assert_eq!(page(Vec::<i32>::new(), 3, cur), (vec![], None));
        assert_eq!(fetch_limit(100), 101);
    }
}
