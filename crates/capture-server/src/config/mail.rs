//! Outgoing mail: the SMTP server, the From of the service's own mail, and how campaigns send.

use std::time::Duration;

use super::parse::{ConfigError, Reader, err};

/// How the service sends mail.
#[derive(Debug, Clone)]
pub struct MailSettings {
    /// `CAPTURE_SMTP_URL`: `smtp://…` or `smtps://…`; None: no mail is sent.
    pub smtp_url: Option<String>,
    /// The From of the mail the service sends (`CAPTURE_MAIL_FROM`), e.g. e-mail verification.
    pub from: String,
    /// Campaign mails per recipient domain per UTC day (`CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP`).
    pub campaign_domain_daily_cap: i64,
    /// Campaign sending loops per node with the scheduler or worker role
    /// (`CAPTURE_CAMPAIGN_SENDERS`; 0 = this node sends no campaign mail).
    pub campaign_senders: usize,
    /// How often the campaign loops look for due rows (`CAPTURE_CAMPAIGN_POLL`).
    pub campaign_poll: Duration,
}

impl MailSettings {
    pub(super) fn read(r: &Reader) -> Result<MailSettings, ConfigError> {
        let smtp_url = r.get("CAPTURE_SMTP_URL");
        if let Some(u) = &smtp_url
            && !(u.starts_with("smtp://") || u.starts_with("smtps://"))
        {
            return Err(err("CAPTURE_SMTP_URL", "must be smtp://… or smtps://…"));
        }
        let from = r.get("CAPTURE_MAIL_FROM").unwrap_or_else(|| "Capture <no-reply@capture.localhost>".into());
        if let Err(e) = capture_mail::outbound::Sender::parse(&from) {
            return Err(err("CAPTURE_MAIL_FROM", format!("'{from}': {e}")));
        }
        let campaign_domain_daily_cap = r.num("CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP", 50, 1, 1_000_000)? as i64;
        let campaign_senders = r.num("CAPTURE_CAMPAIGN_SENDERS", 2, 0, 64)? as usize;
        let campaign_poll = r.dur_in(
            "CAPTURE_CAMPAIGN_POLL",
            "1s",
            Duration::from_millis(50),
            Duration::from_secs(600),
            "must be between 50ms and 10m",
        )?;
        Ok(MailSettings { smtp_url, from, campaign_domain_daily_cap, campaign_senders, campaign_poll })
    }
}
