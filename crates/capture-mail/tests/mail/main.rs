//! The mail engine against real servers: outbound to aiosmtpd, inbound from lettre and raw TCP,
//! and parsing of real-looking verification mail.

mod inbound;
mod outbound;
mod parse;
mod support;
