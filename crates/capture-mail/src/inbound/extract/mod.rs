//! Verification links and one-time codes in a received message.
//!
//! Links come from `href`s of the HTML part (with their anchor text) and from bare URLs in the
//! text; only absolute `http(s)` URLs with a host are kept, normalised by the URL parser and
//! de-duplicated in order of appearance. Each gets a score in 0–1 for how much it looks like a
//! verification, confirmation or sign-in link; `verification` is `score ≥ 0.5`.
//!
//! Codes are 4–8 digits (also written `123 456` or `123-456`) or 6–8 letters and digits with at
//! least one of each, kept only near a word such as code, verification, OTP, passcode or PIN,
//! and never when they read as a date, a time, a year, a phone number, a price, a percentage,
//! an order number or part of an address or URL.

mod codes;
mod html;
mod links;
mod text;

pub use codes::{OneTimeCode, extract_codes};
pub(crate) use html::visible_text;
pub use links::{Link, LinkSource, extract_links};
