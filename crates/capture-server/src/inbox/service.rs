//! The inbox operations, scoped to the calling account: the inbox itself (made on first use,
//! its password kept encrypted with the master key, revealed to its owner, rotatable),
//! listing, reading, waiting for and deleting messages. Shared by REST, the MCP tools, the
//! auth-test helper and the dashboard.

use std::time::{Duration, Instant};

use capture_core::FieldError;
use capture_core::ids::{looks_like, random_string};
use capture_core::time::{iso, parse_iso};
use capture_store::{InboxMessageRow, InboxRow, MessageFilter};
use serde::Deserialize;

use super::types::{
    Deleted, Inbox, InboxCounts, MailAddress, MailAttachment, MailCode, MailHeader, MailLink, Message, MessageList,
    MessageSummary, MessagesQuery, SmtpEndpoint, WaitQuery, WaitResult,
};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::Window;
use crate::state::AppState;

/// Prefix of message ids.
pub const MESSAGE_ID: &str = "eml";
/// What a message id names, in words.
pub const MESSAGE_NOUN: &str = "message";
/// Longest wait of one REST long-poll (clients call again; short enough for any proxy or
/// HTTP client timeout on the way).
pub const REST_MAX_WAIT_MS: u64 = 8_000;
/// Longest wait of the `inbox_wait` tool, and its default.
pub const TOOL_MAX_WAIT_MS: u64 = 60_000;
pub const TOOL_DEFAULT_WAIT_MS: u64 = 25_000;

/// A new inbox address at `domain`: `t` and 15 lower-case letters and digits.
pub fn new_address(domain: &str) -> String {
    format!("t{}@{domain}", random_string(15).to_ascii_lowercase())
}

/// A new password for sites under test: 20 random letters and digits, then a fixed tail
/// that satisfies the usual "upper, lower, digit and symbol" rules.
pub fn new_password() -> String {
    format!("{}-Qx7!", random_string(20))
}

/// The account's inbox, made on first use.
pub async fn ensure(state: &AppState, account: &Account) -> Result<InboxRow> {
    if let Some(row) = state.store.inbox_of(&account.user.id).await? {
        return Ok(row);
    }
    for _ in 0..5 {
        let address = new_address(&state.cfg.inbox.domain);
        let enc = state.master.encrypt(&new_password());
        if let Some(row) = state.store.ensure_inbox(&account.user.id, &address, &enc, state.clock.now_ms()).await? {
            return Ok(row);
        }
    }
    Err(Error::internal("five generated inbox addresses were all taken"))
}

/// The inbox's password in clear.
pub fn password(state: &AppState, row: &InboxRow) -> Result<String> {
    state.master.decrypt(&row.password_enc).ok_or_else(|| {
        Error::internal("the inbox password does not decrypt with this master key (CAPTURE_MASTER_KEY changed?)")
    })
}

/// The inbox as shown to its owner (address, password, counts).
pub async fn get(state: &AppState, account: &Account) -> Result<Inbox> {
    let row = ensure(state, account).await?;
    view(state, &row).await
}

async fn view(state: &AppState, row: &InboxRow) -> Result<Inbox> {
    let (total, unseen, newest) = state.store.inbox_counts(&row.user_id).await?;
    let smtp = state
        .mail
        .inbound_addr
        .or_else(|| (state.cfg.inbox.listen.port() != 0).then_some(state.cfg.inbox.listen))
        .map(|a| SmtpEndpoint { host: a.ip().to_string(), port: a.port() });
    Ok(Inbox {
        address: row.address.clone(),
        password: password(state, row)?,
        counts: InboxCounts { messages: total.max(0) as u64, unseen: unseen.max(0) as u64 },
        last_received_at: newest.map(iso),
        retention_hours: state.cfg.inbox.retention.as_secs() / 3600,
        smtp,
        created_at: iso(row.created_at),
        address_rotated_at: iso(row.address_rotated_at),
        password_rotated_at: iso(row.password_rotated_at),
    })
}

/// Replace the password, the address (mail to the old one is refused from now on) or both.
pub async fn rotate(state: &AppState, account: &Account, what: &str) -> Result<Inbox> {
    let (address, pass) = match what {
        "password" => (false, true),
        "address" => (true, false),
        "both" => (true, true),
        _ => return Err(FieldError::new("rotate", "must be password, address or both").into()),
    };
    ensure(state, account).await?;
    let now = state.clock.now_ms();
    if pass {
        state.store.rotate_inbox_password(&account.user.id, &state.master.encrypt(&new_password()), now).await?;
    }
    if address {
        let mut done = false;
        for _ in 0..5 {
            if state.store.rotate_inbox_address(&account.user.id, &new_address(&state.cfg.inbox.domain), now).await? {
                done = true;
                break;
            }
        }
        if !done {
            return Err(Error::internal("five generated inbox addresses were all taken"));
        }
    }
    get(state, account).await
}

/// The stored form of a parsed message (what `capture_mail::parse` serialises).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Stored {
    from: Option<MailAddress>,
    to: Vec<MailAddress>,
    cc: Vec<MailAddress>,
    reply_to: Option<MailAddress>,
    date: Option<String>,
    message_id: Option<String>,
    headers: Vec<MailHeader>,
    text: Option<String>,
    html: Option<String>,
    attachments: Vec<StoredAttachment>,
    links: Vec<MailLink>,
    codes: Vec<MailCode>,
    problems: Vec<String>,
}

/// An attachment as stored: what the API shows, and the private blob name of its content.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct StoredAttachment {
    name: Option<String>,
    content_type: String,
    size: u64,
    blob: Option<String>,
}

impl StoredAttachment {
    fn public(&self, index: usize) -> MailAttachment {
        MailAttachment {
            index: index as u32,
            name: self.name.clone(),
            content_type: self.content_type.clone(),
            size: self.size,
            downloadable: self.blob.is_some(),
        }
    }
}

/// The blob name of attachment `index` of message `message_id` of `user_id`: scoped to the
/// account and the message, with a random tail so it cannot be guessed.
pub fn attachment_blob_name(user_id: &str, message_id: &str, index: usize) -> String {
    format!("inbox-{user_id}-{message_id}-{index}-{}.bin", random_string(16))
}

/// The attachment blob names a stored message's parsed JSON names.
pub fn attachment_blobs(parsed: &str) -> Vec<String> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Only {
        attachments: Vec<StoredAttachment>,
    }
    serde_json::from_str::<Only>(parsed)
        .map(|o| o.attachments.into_iter().filter_map(|a| a.blob).collect())
        .unwrap_or_default()
}

/// Delete the attachment blobs of removed messages (failures are logged: the message is
/// gone either way).
pub async fn delete_attachment_blobs(blobs: &dyn crate::blob::BlobStore, parsed: &[String]) {
    for name in parsed.iter().flat_map(|p| attachment_blobs(p)) {
        if let Err(e) = blobs.delete(&name).await {
            tracing::warn!(blob = %name, error = %e, "deleting an inbox attachment failed");
        }
    }
}

fn stored(row: &InboxMessageRow) -> Stored {
    serde_json::from_str(&row.parsed).unwrap_or_else(|e| {
        tracing::error!(message = %row.id, error = %e, "a stored message does not read back");
        Stored { problems: vec!["the stored message could not be read".into()], ..Stored::default() }
    })
}

fn summary_of(row: &InboxMessageRow, s: &Stored) -> MessageSummary {
    MessageSummary {
        id: row.id.clone(),
        from: s.from.clone(),
        mail_from: row.mail_from.clone(),
        to: row.address.clone(),
        subject: row.subject.clone(),
        received_at: iso(row.received_at),
        seen: row.seen_at.is_some(),
        size_bytes: row.size_bytes.max(0) as u64,
        verification_link: s.links.iter().find(|l| l.verification).map(|l| l.url.clone()),
        code: s.codes.first().map(|c| c.code.clone()),
    }
}

/// A message as listed.
pub fn summary(row: &InboxMessageRow) -> MessageSummary {
    summary_of(row, &stored(row))
}

/// A whole message.
pub fn message(row: &InboxMessageRow) -> Message {
    let s = stored(row);
    Message {
        summary: summary_of(row, &s),
        to_header: s.to,
        cc: s.cc,
        reply_to: s.reply_to,
        date: s.date,
        message_id: s.message_id,
        headers: s.headers,
        text: s.text,
        html: s.html,
        links: s.links,
        codes: s.codes,
        attachments: s.attachments.iter().enumerate().map(|(i, a)| a.public(i)).collect(),
        problems: s.problems,
    }
}

fn parse_from(from: Option<&str>) -> Result<Option<String>> {
    match from.map(str::trim).filter(|f| !f.is_empty()) {
        None => Ok(None),
        Some(f) if f.len() <= 254 && !f.contains(char::is_whitespace) => Ok(Some(f.to_ascii_lowercase())),
        Some(_) => Err(FieldError::new("from", "must be a mail address or a domain").into()),
    }
}

fn parse_time(field: &str, v: Option<&str>) -> Result<Option<i64>> {
    match v.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => parse_iso(s).map(Some).ok_or_else(|| FieldError::new(field, "must be an ISO 8601 time").into()),
    }
}

/// The account's messages, newest first, a page at a time.
pub async fn list(state: &AppState, account: &Account, q: &MessagesQuery) -> Result<MessageList> {
    let w = Window::parse(q.limit.as_deref(), q.before.as_deref(), |id| looks_like(MESSAGE_ID, id))?;
    let filter =
        MessageFilter { since: parse_time("since", q.since.as_deref())?, from: parse_from(q.from.as_deref())? };
    let rows = state.store.list_inbox_messages(&account.user.id, w.before.clone(), &filter, w.fetch()).await?;
    let page = w.page(rows, |r| (r.received_at, r.id.as_str()));
    Ok(MessageList::of(page, |r| summary(&r)))
}

/// One message of the caller (marked seen), or `NotFound`.
pub async fn get_message(state: &AppState, account: &Account, id: &str) -> Result<Message> {
    if !looks_like(MESSAGE_ID, id) {
        return Err(Error::not_found(MESSAGE_NOUN));
    }
    let row = state.store.inbox_message(&account.user.id, id).await?.ok_or_else(|| Error::not_found(MESSAGE_NOUN))?;
    if row.seen_at.is_none() {
        state.store.mark_inbox_message_seen(&account.user.id, id, state.clock.now_ms()).await?;
    }
    Ok(message(&row))
}

/// Delete one message (and its attachments' content), or `NotFound`.
pub async fn delete_message(state: &AppState, account: &Account, id: &str) -> Result<()> {
    if !looks_like(MESSAGE_ID, id) {
        return Err(Error::not_found(MESSAGE_NOUN));
    }
    let removed = state.store.remove_inbox_message(&account.user.id, id).await?;
    delete_attachment_blobs(state.blobs.as_ref(), &removed.parsed).await;
    if removed.deleted == 0 {
        return Err(Error::not_found(MESSAGE_NOUN));
    }
    Ok(())
}

/// Delete every message of the caller's inbox (and their attachments' content).
pub async fn delete_all(state: &AppState, account: &Account) -> Result<Deleted> {
    let removed = state.store.remove_inbox_messages(&account.user.id).await?;
    delete_attachment_blobs(state.blobs.as_ref(), &removed.parsed).await;
    Ok(Deleted { deleted: removed.deleted })
}

/// What an attachment names, in words.
pub const ATTACHMENT_NOUN: &str = "attachment";

/// Attachment `index` of one message of the caller, with its content; `NotFound` for a
/// message that is not the caller's, an index past the last, or content no longer kept.
/// Does not mark the message seen.
pub async fn attachment(
    state: &AppState,
    account: &Account,
    message_id: &str,
    index: &str,
) -> Result<(MailAttachment, Vec<u8>)> {
    if !looks_like(MESSAGE_ID, message_id) {
        return Err(Error::not_found(MESSAGE_NOUN));
    }
    let row =
        state.store.inbox_message(&account.user.id, message_id).await?.ok_or_else(|| Error::not_found(MESSAGE_NOUN))?;
    let s = stored(&row);
    let i = index.parse::<usize>().ok().filter(|i| *i < s.attachments.len() && !index.starts_with('+'));
    let Some(i) = i else { return Err(Error::not_found(ATTACHMENT_NOUN)) };
    let a = &s.attachments[i];
    let name = a.blob.as_deref().ok_or_else(|| Error::not_found(ATTACHMENT_NOUN))?;
    let bytes =
        state.blobs.get(name).await.map_err(Error::internal)?.ok_or_else(|| Error::not_found(ATTACHMENT_NOUN))?;
    Ok((a.public(i), bytes))
}

/// Wait until a matching message is there (the oldest unseen one without `since`, else the
/// first received after it) and return it marked seen; `message: null` when the time is up.
/// `timeoutMs` may be at most `max_ms` (the default).
pub async fn wait(
    state: &AppState,
    account: &Account,
    q: &WaitQuery,
    default_ms: u64,
    max_ms: u64,
) -> Result<WaitResult> {
    let timeout_ms = match q.timeout_ms.as_deref() {
        None | Some("") => default_ms,
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n <= max_ms => n,
            _ => return Err(FieldError::new("timeoutMs", format!("must be a whole number from 0 to {max_ms}")).into()),
        },
    };
    let filter =
        MessageFilter { since: parse_time("since", q.since.as_deref())?, from: parse_from(q.from.as_deref())? };
    ensure(state, account).await?;
    let started = Instant::now();
    let deadline = started + Duration::from_millis(timeout_ms);
    let _waiting = state.metrics.inbox_waiting();
    loop {
        let arrived = state.cluster.inbox_arrived.notified();
        tokio::pin!(arrived);
        arrived.as_mut().enable();
        if let Some(row) = state.store.next_inbox_message(&account.user.id, &filter).await? {
            state.store.mark_inbox_message_seen(&account.user.id, &row.id, state.clock.now_ms()).await?;
            let mut m = message(&row);
            m.summary.seen = true;
            return Ok(WaitResult { message: Some(m), waited_ms: started.elapsed().as_millis() as u64 });
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(WaitResult { message: None, waited_ms: started.elapsed().as_millis() as u64 });
        }
        // Messages stored by another node's inbound server are seen by polling.
        let nap = (deadline - now).min(Duration::from_millis(500));
        tokio::select! {
            _ = arrived => {}
            _ = tokio::time::sleep(nap) => {}
            _ = state.shutdown.cancelled() => {
                return Ok(WaitResult { message: None, waited_ms: started.elapsed().as_millis() as u64 });
            }
        }
    }
}
