//! Outbound mail: the campaign message ([`CampaignMail`] → [`OutgoingMail`]), the [`Mailer`]
//! trait the server holds as `Arc<dyn Mailer>`, and its SMTP implementation ([`SmtpMailer`]).

mod message;
mod smtp;

use futures_util::future::BoxFuture;

pub use message::{BuildError, CampaignMail, InlineImage, NoticeMail, OutgoingMail, Sender};
pub use smtp::{Security, SmtpMailer, SmtpSettings, UrlError};

/// What the receiving server said when it took the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The `Message-ID` of the mail (with angle brackets).
    pub message_id: String,
    /// The server's final reply (`250 2.0.0 Ok: queued as …`).
    pub response: String,
}

/// The SMTP step a permanent rejection came at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `RCPT TO`: the address itself was refused.
    Recipient,
    /// `DATA` or the message content.
    Data,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::Recipient => "RCPT",
            Stage::Data => "DATA",
        })
    }
}

/// Why a message was not delivered, sorted by what the caller should do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// A 5xx reply to `RCPT TO` or `DATA`: this recipient will not take the mail; suppress the
    /// address and do not retry.
    #[error("rejected permanently at {stage} ({code}): {message}")]
    Permanent { code: u16, stage: Stage, message: String },
    /// A 4xx reply, a refused or dropped connection, a timeout: retry later.
    #[error("temporarily failed{}: {message}", code.map(|c| format!(" ({c})")).unwrap_or_default())]
    Transient { code: Option<u16>, message: String },
    /// Our side is wrong (sign-in refused, sender refused, TLS not offered or not trusted): no
    /// retry will help until an operator fixes the settings; the recipient is not at fault.
    #[error("mail configuration problem: {message}")]
    Config { message: String },
}

impl SendError {
    /// Whether the recipient refused for good (suppress the address).
    pub fn is_permanent(&self) -> bool {
        matches!(self, SendError::Permanent { .. })
    }

    /// Whether trying again later may work.
    pub fn is_transient(&self) -> bool {
        matches!(self, SendError::Transient { .. })
    }
}

/// Something that delivers mail; the server holds one as `Arc<dyn Mailer>`.
pub trait Mailer: Send + Sync + 'static {
    /// Deliver `mail` to its recipient.
    fn send<'a>(&'a self, mail: &'a OutgoingMail) -> BoxFuture<'a, Result<Accepted, SendError>>;
    /// Check the mail server can be reached and signed in to (for `/readyz`).
    fn check(&self) -> BoxFuture<'_, Result<(), SendError>>;
}
