//! Mail for Capture, as libraries the server wires in:
//! - [`outbound`]: campaign mail built with `lettre` and delivered over SMTP (plain, STARTTLS or
//!   implicit TLS) through a small connection pool, with errors sorted into permanent (suppress
//!   the address), transient (retry later) and configuration;
//! - [`inbound`]: our own small SMTP server on tokio that receives mail for test inboxes, and
//!   [`inbound::parse`], which turns a raw message into headers, bodies, attachments, links and
//!   one-time codes.
//!
//! Nothing here knows about the store or the HTTP server: they meet through the [`outbound::Mailer`]
//! and [`inbound::InboundSink`] traits.

pub mod inbound;
pub mod outbound;

pub use inbound::{InboundConfig, InboundServer, InboundSink, ParsedMail, parse};
pub use outbound::{Accepted, CampaignMail, Mailer, OutgoingMail, SendError, SmtpMailer};
