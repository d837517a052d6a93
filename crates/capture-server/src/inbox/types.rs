//! The wire types of the saved test inbox and the auth-test helper: the inbox, its
//! messages (a summary in listings, everything in `GET /v1/inbox/messages/{id}`), the
//! long-poll's answer, the check and the record. One definition behind the handlers, the
//! OpenAPI document and the MCP tools.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::lists::list_type;

/// The account's saved test inbox: the address and password to use on sites under test.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Inbox {
    /// Mail to this address lands here (`CAPTURE_INBOX_DOMAIN`).
    pub address: String,
    /// A generated password for sign-ups on sites under test (not a credential of this
    /// service). Rotating it does not change accounts already made with it.
    pub password: String,
    pub counts: InboxCounts,
    pub last_received_at: Option<String>,
    /// Messages older than this many hours are deleted.
    pub retention_hours: u64,
    /// Where this service's inbound SMTP server listens (null when no node of this process runs it).
    pub smtp: Option<SmtpEndpoint>,
    pub created_at: String,
    pub address_rotated_at: String,
    pub password_rotated_at: String,
}

/// Message counts of an inbox.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxCounts {
    pub messages: u64,
    /// Not yet read through `GET /v1/inbox/messages/{id}` or a wait.
    pub unseen: u64,
}

/// An SMTP listener.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SmtpEndpoint {
    pub host: String,
    pub port: u16,
}

/// A mail address with its display name.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailAddress {
    pub name: Option<String>,
    pub address: String,
}

/// A link found in a message, scored for how likely it verifies or signs in.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailLink {
    pub url: String,
    /// The anchor text (HTML links).
    pub text: Option<String>,
    /// `html` or `text`.
    pub source: String,
    /// 0–1.
    pub score: f32,
    /// `score ≥ 0.5`: a verification, confirmation or magic sign-in link.
    pub verification: bool,
}

/// A one-time code found in a message.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailCode {
    pub code: String,
    /// The words around it.
    pub context: String,
    /// 0–1.
    pub score: f32,
}

/// A header field.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailHeader {
    pub name: String,
    pub value: String,
}

/// An attachment. Its content is kept with the message (deleted with it) and downloaded
/// from `GET /v1/inbox/messages/{id}/attachments/{index}`, or given to a page's file input
/// by the `upload_file` automation tool (`inboxAttachment`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailAttachment {
    /// Its place among the message's attachments, from 0.
    #[serde(default)]
    pub index: u32,
    pub name: Option<String>,
    pub content_type: String,
    /// Decoded size in bytes.
    pub size: u64,
    /// Whether its content is kept (false for mail stored before contents were kept).
    #[serde(default)]
    pub downloadable: bool,
}

/// A message in a listing or a wait's answer (without bodies and headers).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageSummary {
    pub id: String,
    pub from: Option<MailAddress>,
    /// The envelope sender (`MAIL FROM`; empty for bounces).
    pub mail_from: String,
    /// The inbox address it was delivered to.
    pub to: String,
    pub subject: Option<String>,
    pub received_at: String,
    /// Read through `GET /v1/inbox/messages/{id}` or a wait.
    pub seen: bool,
    pub size_bytes: u64,
    /// The best verification or magic sign-in link, if any.
    pub verification_link: Option<String>,
    /// The best one-time code, if any.
    pub code: Option<String>,
}

/// A whole message.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(flatten)]
    pub summary: MessageSummary,
    pub to_header: Vec<MailAddress>,
    pub cc: Vec<MailAddress>,
    pub reply_to: Option<MailAddress>,
    /// The `Date:` header.
    pub date: Option<String>,
    pub message_id: Option<String>,
    pub headers: Vec<MailHeader>,
    /// The text part (made from the HTML when there is none).
    pub text: Option<String>,
    /// The HTML part, as sent (never rendered by this service).
    pub html: Option<String>,
    pub links: Vec<MailLink>,
    pub codes: Vec<MailCode>,
    pub attachments: Vec<MailAttachment>,
    /// What could not be parsed (a malformed message is stored with what did parse).
    pub problems: Vec<String>,
}

list_type! {
    /// A page of messages, newest first.
    pub type MessageList = ListResponse<MessageSummary>;
    cursor
    /// Pass as `before` for the next page; null on the last.
    ;
    schemas: both;
}

/// The answer of a long-poll.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitResult {
    /// The message that arrived (marked seen), or null when the wait timed out.
    pub message: Option<Message>,
    pub waited_ms: u64,
}

/// How many messages were deleted.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deleted {
    pub deleted: u64,
}

/// `GET /v1/inbox/messages` (also the `inbox_messages` tool's input).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct MessagesQuery {
    /// How many to return (1–100, default 20).
    #[schemars(with = "Option<u32>", range(min = 1, max = 100))]
    pub limit: Option<String>,
    /// A nextCursor value, or an ISO 8601 time: messages received before it.
    pub before: Option<String>,
    /// Only from this sender: an address, or a domain (and its subdomains).
    pub from: Option<String>,
    /// Only received after this ISO 8601 time.
    pub since: Option<String>,
}

impl IntoParams for MessagesQuery {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        crate::schema::query_params::<MessagesQuery>()
    }
}

/// `GET /v1/inbox/messages/wait`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct WaitQuery {
    /// Wait for a message received after this ISO 8601 time; without it, the oldest message
    /// not yet seen (or the next to arrive).
    pub since: Option<String>,
    /// Only from this sender: an address, or a domain (and its subdomains).
    pub from: Option<String>,
    /// How long to wait, 0–8000 ms (default 8000); call again to wait longer.
    #[schemars(with = "Option<u32>", range(min = 0, max = 8000))]
    pub timeout_ms: Option<String>,
}

/// The `inbox_wait` tool's input: as `GET /v1/inbox/messages/wait`, waiting up to a minute.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct WaitArgs {
    /// Wait for a message received after this ISO 8601 time; without it, the oldest message
    /// not yet seen (or the next to arrive).
    pub since: Option<String>,
    /// Only from this sender: an address, or a domain (and its subdomains).
    pub from: Option<String>,
    /// How long to wait, 0–60000 ms (default 25000).
    #[schemars(with = "Option<u32>", range(min = 0, max = 60000))]
    pub timeout_ms: Option<String>,
}

impl IntoParams for WaitQuery {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        crate::schema::query_params::<WaitQuery>()
    }
}

/// `POST /v1/inbox/rotate`: what to replace.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotateIn {
    /// `password`, `address` or `both`.
    pub rotate: String,
}

/// `POST /v1/auth-test/check` (also the `auth_test_check` tool's input).
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckIn {
    /// The site (any page of it; its normalized origin keys the history).
    pub url: String,
    /// Load the page in the browser to look at its forms: `auto` (default: when history and
    /// mail do not settle the method), `always` or `never`.
    pub probe: Option<String>,
}

/// `POST /v1/auth-test/record` (also the `auth_test_record` tool's input).
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordIn {
    pub url: String,
    /// `sign_up`, `sign_in`, `verify` or `reset_password`.
    pub action: String,
    /// `success`, `failure`, `verification_sent`, `account_exists`, `no_account`,
    /// `invalid_credentials`, `blocked` or `error`.
    pub outcome: String,
    /// How it was done: `password`, `magic_link`, `email_code`, `oauth`, `passkey` or `unknown`.
    pub method: Option<String>,
    /// Free text, at most 1000 characters.
    pub note: Option<String>,
}

/// One recorded attempt.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthAttempt {
    pub id: String,
    pub origin: String,
    pub action: String,
    pub outcome: String,
    pub method: Option<String>,
    pub note: Option<String>,
    pub at: String,
}

/// A reason behind the check's answer.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// `history`, `inbox` or `probe`.
    pub source: String,
    /// What was seen, in words.
    pub detail: String,
}

/// The inbox address of a check.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckInbox {
    pub address: String,
}

/// The answer of `POST /v1/auth-test/check`.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// The normalized origin (lower-case scheme and host, no default port, no `www.`).
    pub origin: String,
    /// `sign_in`, `sign_up` or `expect_verification`.
    pub recommendation: String,
    /// 0–1: how sure it is that an account exists for the inbox address on this site.
    pub account_exists_confidence: f64,
    /// `password`, `magic_link`, `email_code`, `oauth` or `unknown`.
    pub likely_auth_method: String,
    /// `none`, `email_verification`, `email_code` or `magic_link`.
    pub expected_follow_up: String,
    /// Recorded attempts on this origin, newest first (at most 20).
    pub history: Vec<AuthAttempt>,
    pub inbox: CheckInbox,
    pub evidence: Vec<Evidence>,
    /// Whether the page was loaded in the browser for this answer.
    pub probed: bool,
}
