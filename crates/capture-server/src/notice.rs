//! Notices mailed to an account's people (a monitor's change, a hand-off asking for a
//! person): built with `capture_mail`'s notice mail and sent over the service's outgoing
//! mail, each bounded in time; a notice that cannot go is logged, never an error of the
//! operation that sent it.

use capture_mail::outbound::{InlineImage, NoticeMail, Sender};

use crate::state::AppState;

/// Send one notice to each of `to` (the same text, HTML and inline images), when the service
/// has outgoing mail (`CAPTURE_SMTP_URL`); `what` names it in the log when it cannot go.
pub async fn send(
    state: &AppState,
    to: &[String],
    subject: String,
    text: String,
    html: String,
    images: Vec<InlineImage>,
    what: &str,
) {
    let Some(mailer) = &state.mail.mailer else { return };
    let from = match Sender::parse(&state.cfg.mail.from) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(error = %e, what, "CAPTURE_MAIL_FROM does not parse; a notice was not sent");
            return;
        }
    };
    for addr in to {
        let mail = NoticeMail {
            from: from.clone(),
            to: addr.clone(),
            subject: subject.clone(),
            text: text.clone(),
            html: html.clone(),
            images: images.clone(),
        };
        let sent = match mail.build(chrono::Utc::now()) {
            Ok(m) => tokio::time::timeout(std::time::Duration::from_secs(30), mailer.send(&m))
                .await
                .map_err(|_| "timed out".to_string())
                .and_then(|r| r.map(|_| ()).map_err(|e| e.to_string())),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = sent {
            tracing::warn!(to = %addr, error = %e, what, "a notice was not sent");
        }
    }
}
