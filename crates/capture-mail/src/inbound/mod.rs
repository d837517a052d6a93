//! The inbound SMTP server of test inboxes: a small RFC 5321 subset on tokio that takes mail
//! for addresses its [`InboundSink`] accepts, and [`parse`] for what arrives.
//!
//! Supported: greeting, `EHLO` (advertising `SIZE`, `8BITMIME`, `PIPELINING`, `SMTPUTF8`,
//! `ENHANCEDSTATUSCODES`) and `HELO`, `MAIL FROM` (with `SIZE=`, `BODY=`, `SMTPUTF8`), `RCPT TO`,
//! `DATA` (dot-unstuffing, the size bound enforced while reading), `RSET`, `NOOP`, `VRFY` (252),
//! `HELP`, `QUIT`. Not supported, on purpose: `AUTH` and relaying (the server only takes mail
//! for its own mailboxes), `STARTTLS` (it listens on loopback or behind the operator's MX;
//! verification mail carries nothing the open internet has not seen), `BDAT`, `ETRN`, `EXPN`
//! (all 502).
//!
//! Bounds: a line length for commands, a deadline for every command and for the whole message,
//! a message size, recipients per message, messages per minute per client address (an IPv6
//! client counts per /64), connections at once, and errors per session. The end of the message
//! must be `<CRLF>.<CRLF>` exactly (a bare-LF dot does not end it, which closes the "SMTP
//! smuggling" trick of hiding a second message behind a different line ending).
//!
//! Why our own (~450 lines) rather than a crate: `mailin` (a sans-I/O state machine) rejects
//! `MAIL FROM` parameters other than `BODY=` (so `SIZE=`, which lettre and most MTAs send,
//! fails) and the null sender `<>` that bounces use, and offers no SIZE, PIPELINING or SMTPUTF8,
//! so we would still write all the I/O, bounds and limits around patched parsing; `samotop` is
//! built on async-std and unmaintained since 2022; `smtp-server` (kannader) is unmaintained and
//! pulls its own executor abstractions. The protocol subset is small; the bounds are the work.

mod extract;
mod parse;
mod server;

pub use extract::{Link, LinkSource, OneTimeCode, extract_codes, extract_links};
pub use parse::{AttachmentInfo, HeaderField, MailAddress, ParsedMail, parse};
pub use server::{Envelope, InboundConfig, InboundServer, InboundSink, SinkError};
