//! Store tests of the saved test inbox (inboxes, messages, auth history), each scenario on
//! SQLite and on PostgreSQL
//! (`<scenario>_sqlite`, `<scenario>_postgres`; PostgreSQL through
//! `CAPTURE_TEST_POSTGRES_URL`, skipped with `CAPTURE_SKIP_POSTGRES=1`), like `store.rs`.

#[macro_use]
mod common;

use capture_core::ids::{USER, new_id, random_string};
use capture_store::{AuthAttemptRow, InboxMessageRow, MessageFilter, Store, User};

const T0: i64 = 1_750_000_000_000;

on_both_backends! {
    store:
    an_inbox_is_made_once_and_its_address_is_unique => an_inbox_is_made_once_and_its_address_is_unique_sqlite, an_inbox_is_made_once_and_its_address_is_unique_postgres;
    messages_list_filter_wait_and_expire_per_account => messages_list_filter_wait_and_expire_per_account_sqlite, messages_list_filter_wait_and_expire_per_account_postgres;
    auth_history_is_kept_per_account_and_origin => auth_history_is_kept_per_account_and_origin_sqlite, auth_history_is_kept_per_account_and_origin_postgres;
    removing_messages_hands_back_their_attachment_blobs => removing_messages_hands_back_their_attachment_blobs_sqlite, removing_messages_hands_back_their_attachment_blobs_postgres;
}

async fn new_user(store: &Store) -> User {
    let user = User {
        id: new_id(USER),
        email: format!("{}@example.com", random_string(10)),
        plan: "free".into(),
        legacy_free: false,
        password_hash: None,
        created_at: T0,
    };
    store.create_user(&user).await.unwrap();
    user
}

fn msg(user: &User, address: &str, from: &str, at: i64, parsed: &str) -> InboxMessageRow {
    let domain = from.rsplit_once('@').map(|(_, d)| d.to_string());
    InboxMessageRow {
        id: new_id("eml"),
        user_id: user.id.clone(),
        address: address.into(),
        mail_from: from.into(),
        from_address: Some(from.into()),
        from_domain: domain,
        subject: Some(format!("at {at}")),
        size_bytes: 100,
        parsed: parsed.into(),
        received_at: at,
        seen_at: None,
    }
}

async fn an_inbox_is_made_once_and_its_address_is_unique(store: Store) {
    let (a, b) = (new_user(&store).await, new_user(&store).await);
    assert!(store.inbox_of(&a.id).await.unwrap().is_none());
    let first = store.ensure_inbox(&a.id, "ta@inbox.test", "enc1", T0).await.unwrap().unwrap();
    assert_eq!((first.address.as_str(), first.password_enc.as_str()), ("ta@inbox.test", "enc1"));
    // A second first use keeps the first inbox.
    let again = store.ensure_inbox(&a.id, "tother@inbox.test", "enc2", T0 + 1).await.unwrap().unwrap();
    assert_eq!(again, first);
    // Another account cannot take the address.
    assert!(store.ensure_inbox(&b.id, "ta@inbox.test", "enc3", T0).await.unwrap().is_none());
    assert!(store.inbox_of(&b.id).await.unwrap().is_none());
    assert_eq!(store.inbox_by_address("TA@inbox.test").await.unwrap().unwrap().user_id, a.id);
    // Concurrent first uses of one account end with one inbox.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..8 {
        let (s, id) = (store.clone(), b.id.clone());
        set.spawn(async move { s.ensure_inbox(&id, &format!("tb{i}@inbox.test"), "enc", T0).await });
    }
    let mut seen = std::collections::HashSet::new();
    while let Some(r) = set.join_next().await {
        if let Ok(Some(row)) = r.unwrap() {
            seen.insert(row.address);
        }
    }
    assert_eq!(seen.len(), 1, "{seen:?}");
    // Rotation: a taken address is refused, a free one replaces the old.
    assert!(!store.rotate_inbox_address(&a.id, seen.iter().next().unwrap(), T0 + 5).await.unwrap());
    assert!(store.rotate_inbox_address(&a.id, "tnew@inbox.test", T0 + 5).await.unwrap());
    assert!(store.inbox_by_address("ta@inbox.test").await.unwrap().is_none());
    assert!(store.rotate_inbox_password(&a.id, "enc9", T0 + 6).await.unwrap());
    let row = store.inbox_of(&a.id).await.unwrap().unwrap();
    assert_eq!(
        (row.address.as_str(), row.password_enc.as_str(), row.address_rotated_at, row.password_rotated_at),
        ("tnew@inbox.test", "enc9", T0 + 5, T0 + 6)
    );
}

async fn messages_list_filter_wait_and_expire_per_account(store: Store) {
    let (a, b) = (new_user(&store).await, new_user(&store).await);
    let mut ids = Vec::new();
    for i in 0..5 {
        let from = if i % 2 == 0 { "no-reply@mail.shop.test" } else { "hello@other.test" };
        let m = msg(&a, "ta@inbox.test", from, T0 + i, r#"{"links":[{"url":"http://127.0.0.1:4000/verify"}]}"#);
        store.insert_inbox_message(&m).await.unwrap();
        ids.push(m.id);
    }
    store.insert_inbox_message(&msg(&b, "tb@inbox.test", "no-reply@mail.shop.test", T0 + 2, "{}")).await.unwrap();
    // Newest first, a stable cursor.
    let all = MessageFilter::default();
    let page = store.list_inbox_messages(&a.id, None, &all, 2).await.unwrap();
    assert_eq!(page.iter().map(|m| m.id.clone()).collect::<Vec<_>>(), vec![ids[4].clone(), ids[3].clone()]);
    let last = &page[1];
    let rest =
        store.list_inbox_messages(&a.id, Some((last.received_at, Some(last.id.clone()))), &all, 10).await.unwrap();
    assert_eq!(rest.len(), 3);
    // From a domain (and subdomains) or an address; since.
    let shop = MessageFilter { since: None, from: Some("shop.test".into()) };
    assert_eq!(store.list_inbox_messages(&a.id, None, &shop, 10).await.unwrap().len(), 3);
    let addr = MessageFilter { since: Some(T0 + 1), from: Some("hello@other.test".into()) };
    assert_eq!(store.list_inbox_messages(&a.id, None, &addr, 10).await.unwrap().len(), 1);
    // The wait's next message: the oldest unseen, or the first after since.
    let next = store.next_inbox_message(&a.id, &all).await.unwrap().unwrap();
    assert_eq!(next.id, ids[0]);
    store.mark_inbox_message_seen(&a.id, &ids[0], T0 + 10).await.unwrap();
    store.mark_inbox_message_seen(&b.id, &ids[1], T0 + 10).await.unwrap(); // not b's: no effect
    assert_eq!(store.next_inbox_message(&a.id, &all).await.unwrap().unwrap().id, ids[1]);
    let after = MessageFilter { since: Some(T0 + 3), from: None };
    assert_eq!(store.next_inbox_message(&a.id, &after).await.unwrap().unwrap().id, ids[4]);
    assert_eq!(store.inbox_counts(&a.id).await.unwrap(), (5, 4, Some(T0 + 4)));
    // Mail about a site: by sender domain or by a link to its origin.
    assert_eq!(store.inbox_messages_about(&a.id, "shop.test", "https://shop.test", 10).await.unwrap().len(), 3);
    assert_eq!(store.inbox_messages_about(&a.id, "127.0.0.1", "http://127.0.0.1:4000", 10).await.unwrap().len(), 5);
    assert_eq!(store.inbox_messages_about(&b.id, "127.0.0.1", "http://127.0.0.1:4000", 10).await.unwrap().len(), 0);
    // Accounts apart: b cannot read or delete a's.
    assert!(store.inbox_message(&b.id, &ids[0]).await.unwrap().is_none());
    assert!(!store.delete_inbox_message(&b.id, &ids[0]).await.unwrap());
    assert!(store.delete_inbox_message(&a.id, &ids[0]).await.unwrap());
    // Trim keeps the newest; retention deletes the old, whoever owns them.
    assert_eq!(store.trim_inbox(&a.id, 3).await.unwrap(), 1);
    assert_eq!(store.inbox_counts(&a.id).await.unwrap().0, 3);
    // Before T0+3: a's at T0+2 and b's at T0+2.
    assert_eq!(store.purge_inbox_messages(T0 + 3).await.unwrap(), 2);
    assert_eq!(store.inbox_counts(&b.id).await.unwrap(), (0, 0, None));
    assert_eq!(store.delete_inbox_messages(&a.id).await.unwrap(), 2);
}

async fn auth_history_is_kept_per_account_and_origin(store: Store) {
    let (a, b) = (new_user(&store).await, new_user(&store).await);
    let att = |u: &User, origin: &str, action: &str, at: i64| AuthAttemptRow {
        id: new_id("ath"),
        user_id: u.id.clone(),
        origin: origin.into(),
        action: action.into(),
        outcome: "success".into(),
        method: Some("password".into()),
        note: Some("n".into()),
        created_at: at,
    };
    for (i, action) in ["sign_up", "verify", "sign_in"].iter().enumerate() {
        store.insert_auth_attempt(&att(&a, "https://shop.test", action, T0 + i as i64)).await.unwrap();
    }
    store.insert_auth_attempt(&att(&a, "https://other.test", "sign_in", T0 + 9)).await.unwrap();
    store.insert_auth_attempt(&att(&b, "https://shop.test", "sign_up", T0 + 9)).await.unwrap();
    let h = store.auth_history(&a.id, "https://shop.test", 10).await.unwrap();
    assert_eq!(h.iter().map(|x| x.action.as_str()).collect::<Vec<_>>(), ["sign_in", "verify", "sign_up"]);
    assert_eq!(h[0].method.as_deref(), Some("password"));
    assert_eq!(store.auth_history(&a.id, "https://shop.test", 2).await.unwrap().len(), 2);
    assert_eq!(store.auth_history(&b.id, "https://shop.test", 10).await.unwrap().len(), 1);
    let recent = store.recent_auth_attempts(&a.id, 10).await.unwrap();
    assert_eq!(recent.len(), 4);
    assert_eq!(recent[0].origin, "https://other.test");
}

/// Every way messages are deleted (one, all of an account, the overflow past a limit, by
/// age) hands back the parsed JSON of exactly the deleted messages that name attachment
/// blobs, so their content can be deleted too; others' messages are untouched.
async fn removing_messages_hands_back_their_attachment_blobs(store: Store) {
    let (a, b) = (new_user(&store).await, new_user(&store).await);
    let with = |n: i64| format!(r#"{{"attachments":[{{"name":"f{n}.pdf","size":3,"blob":"inbox-x-{n}.bin"}}]}}"#);
    let plain = r#"{"attachments":[{"name":"old.pdf","size":3}],"text":"\"blob\":\"not a key\""}"#;
    let mut ids = Vec::new();
    for i in 0..6 {
        let parsed = if i == 1 { plain.to_string() } else { with(i) };
        let m = msg(&a, "ta@inbox.test", "x@shop.test", T0 + i, &parsed);
        store.insert_inbox_message(&m).await.unwrap();
        ids.push(m.id);
    }
    let theirs = msg(&b, "tb@inbox.test", "x@shop.test", T0, &with(9));
    store.insert_inbox_message(&theirs).await.unwrap();
    let blobs = |r: &capture_store::RemovedMessages| {
        let mut v: Vec<String> = r
            .parsed
            .iter()
            .map(|p| p.split("inbox-x-").nth(1).unwrap().split('.').next().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    // Not b's to delete; then a's one.
    let r = store.remove_inbox_message(&b.id, &ids[5]).await.unwrap();
    assert_eq!((r.deleted, r.parsed.len()), (0, 0));
    let r = store.remove_inbox_message(&a.id, &ids[5]).await.unwrap();
    assert_eq!((r.deleted, blobs(&r)), (1, vec!["5".to_string()]));
    // Age: T0 and T0+1 of a (only T0 names a blob) and b's at T0.
    let r = store.remove_old_inbox_messages(T0 + 2).await.unwrap();
    assert_eq!((r.deleted, blobs(&r)), (3, vec!["0".to_string(), "9".to_string()]));
    // Keep the newest one of a's three left (T0+2..T0+4).
    let r = store.remove_inbox_overflow(&a.id, 1).await.unwrap();
    assert_eq!((r.deleted, blobs(&r)), (2, vec!["2".to_string(), "3".to_string()]));
    let r = store.remove_inbox_messages(&a.id).await.unwrap();
    assert_eq!((r.deleted, blobs(&r)), (1, vec!["4".to_string()]));
    assert_eq!(store.inbox_counts(&a.id).await.unwrap().0, 0);
}
