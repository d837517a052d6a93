//! The `inbound` role: `capture_mail`'s SMTP server on `CAPTURE_INBOUND_LISTEN`, taking
//! mail only for existing inbox addresses (others `550 5.1.1`) within the size and rate
//! bounds, parsing each message (`capture_mail::parse`: headers, bodies, links, codes) and
//! storing it for its inbox; and the retention sweep that deletes old messages.
//!
//! The listener is bound in `Application::build`, before the browser pool starts, so the
//! egress policy knows its address and no captured page can reach it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use capture_core::ids::new_id;
use capture_mail::inbound::{Envelope, SinkError};
use capture_mail::{InboundConfig, InboundServer, InboundSink};
use capture_store::{InboxMessageRow, Store};
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::service::{MESSAGE_ID, attachment_blob_name, delete_attachment_blobs};
use crate::blob::BlobStore;
use crate::config::InboxSettings;

/// Decides recipients and stores messages for the inbound server.
pub struct StoreSink {
    store: Store,
    blobs: Arc<dyn BlobStore>,
    settings: InboxSettings,
    clock: capture_core::clock::Clock,
    /// The app's inbox waits (its cluster's `inbox_arrived`).
    arrived: Arc<tokio::sync::Notify>,
}

impl StoreSink {
    fn domain_ok(&self, address: &str) -> bool {
        address.rsplit_once('@').is_some_and(|(_, d)| d.eq_ignore_ascii_case(&self.settings.domain))
    }
}

/// The sender's domain (lower-case) of an address.
fn domain_of(address: &str) -> Option<String> {
    address.rsplit_once('@').map(|(_, d)| d.trim_end_matches('>').to_ascii_lowercase()).filter(|d| !d.is_empty())
}

impl StoreSink {
    /// Delete attachment blobs of a message that was not stored after all.
    async fn forget(&self, names: &[String]) {
        for name in names {
            if let Err(e) = self.blobs.delete(name).await {
                tracing::warn!(blob = %name, error = %e, "inbound: deleting an attachment failed");
            }
        }
    }
}

impl InboundSink for StoreSink {
    fn accept<'a>(&'a self, recipient: &'a str) -> BoxFuture<'a, Result<bool, SinkError>> {
        Box::pin(async move {
            let address = recipient.trim().to_ascii_lowercase();
            if !self.domain_ok(&address) {
                return Ok(false);
            }
            match self.store.inbox_by_address(&address).await {
                Ok(found) => Ok(found.is_some()),
                Err(e) => {
                    tracing::warn!(error = %e, "inbound: looking up a recipient failed");
                    Err(SinkError("temporary lookup failure".into()))
                }
            }
        })
    }

    fn deliver<'a>(&'a self, envelope: &'a Envelope, message: Vec<u8>) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let size = message.len() as i64;
            let parsed = tokio::task::spawn_blocking(move || capture_mail::parse(&message))
                .await
                .map_err(|_| SinkError("the message could not be parsed".into()))?;
            let value = serde_json::to_value(&parsed).map_err(|e| SinkError(e.to_string()))?;
            let from_address = parsed.from.as_ref().map(|a| a.address.to_ascii_lowercase());
            let from_domain = from_address.as_deref().and_then(domain_of).or_else(|| domain_of(&envelope.mail_from));
            let now = self.clock.now_ms();
            for rcpt in &envelope.rcpt_to {
                let address = rcpt.trim().to_ascii_lowercase();
                let inbox = match self.store.inbox_by_address(&address).await {
                    Ok(Some(i)) => i,
                    // Rotated away between RCPT and the end of DATA: nobody to give it to.
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "inbound: looking up a recipient failed");
                        return Err(SinkError("temporary storage failure".into()));
                    }
                };
                let id = new_id(MESSAGE_ID);
                // Each attachment's content goes to blob storage under a name scoped to the
                // account and the message; the parsed JSON keeps the (private) name.
                let mut value = value.clone();
                let mut names = Vec::new();
                for (i, a) in parsed.attachments.iter().enumerate() {
                    let name = attachment_blob_name(&inbox.user_id, &id, i);
                    // Stored as opaque bytes: never served with the sender's declared type.
                    if let Err(e) = self.blobs.put(&name, a.content.clone(), "application/octet-stream").await {
                        tracing::warn!(error = %e, "inbound: storing an attachment failed");
                        self.forget(&names).await;
                        return Err(SinkError("temporary storage failure".into()));
                    }
                    if let Some(slot) = value.pointer_mut(&format!("/attachments/{i}")).and_then(|v| v.as_object_mut())
                    {
                        slot.insert("blob".into(), name.clone().into());
                    }
                    names.push(name);
                }
                let json = value.to_string();
                let row = InboxMessageRow {
                    id,
                    user_id: inbox.user_id.clone(),
                    address,
                    mail_from: envelope.mail_from.clone(),
                    from_address: from_address.clone(),
                    from_domain: from_domain.clone(),
                    subject: parsed.subject.clone(),
                    size_bytes: size,
                    parsed: json.clone(),
                    received_at: now,
                    seen_at: None,
                };
                if let Err(e) = self.store.insert_inbox_message(&row).await {
                    tracing::warn!(error = %e, "inbound: storing a message failed");
                    self.forget(&names).await;
                    return Err(SinkError("temporary storage failure".into()));
                }
                match self.store.remove_inbox_overflow(&inbox.user_id, self.settings.max_messages).await {
                    Ok(removed) => delete_attachment_blobs(self.blobs.as_ref(), &removed.parsed).await,
                    Err(e) => tracing::warn!(error = %e, "inbound: trimming an inbox failed"),
                }
                tracing::info!(message = %row.id, peer = %envelope.peer, bytes = size, "inbound: message stored");
            }
            self.arrived.notify_waiters();
            Ok(())
        })
    }
}

/// Bind the inbound server of `settings` (None, with a warning, when the default port is
/// taken; an error when `CAPTURE_INBOUND_LISTEN` was set and cannot be bound).
pub async fn bind(
    store: &Store,
    blobs: &Arc<dyn BlobStore>,
    settings: &InboxSettings,
    clock: capture_core::clock::Clock,
    arrived: Arc<tokio::sync::Notify>,
) -> Result<Option<InboundServer>, crate::start_error::StartError> {
    let config = InboundConfig {
        hostname: settings.domain.clone(),
        max_message_bytes: settings.max_message_bytes,
        per_ip_rate: settings.rate_per_minute,
        ..InboundConfig::default()
    };
    let sink =
        Arc::new(StoreSink { store: store.clone(), blobs: blobs.clone(), settings: settings.clone(), clock, arrived });
    match InboundServer::bind(settings.listen, config, sink).await {
        Ok(server) => Ok(Some(server)),
        Err(e) if !settings.listen_explicit => {
            tracing::warn!(listen = %settings.listen, error = %e,
                "the inbound SMTP server's default address is taken; running without it (set CAPTURE_INBOUND_LISTEN)");
            Ok(None)
        }
        Err(e) => {
            Err(crate::start_error::StartError::setting(format!("CAPTURE_INBOUND_LISTEN {}", settings.listen), e))
        }
    }
}

/// The address of a bound server.
pub fn local_addr(server: &InboundServer) -> SocketAddr {
    server.local_addr()
}

/// Serve SMTP until `stop`, and delete messages past the retention once a minute.
pub async fn run(
    server: InboundServer,
    store: Store,
    blobs: Arc<dyn BlobStore>,
    settings: InboxSettings,
    clock: capture_core::clock::Clock,
    stop: CancellationToken,
) {
    tracing::info!(addr = %server.local_addr(), domain = %settings.domain, "inbound SMTP server listening");
    let sweep_stop = stop.clone();
    let sweep = async move {
        loop {
            let before = clock.now_ms() - settings.retention.as_millis() as i64;
            match store.remove_old_inbox_messages(before).await {
                Ok(removed) => {
                    delete_attachment_blobs(blobs.as_ref(), &removed.parsed).await;
                    if removed.deleted > 0 {
                        tracing::info!(deleted = removed.deleted, "inbox retention: old messages deleted");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "inbox retention sweep failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                _ = sweep_stop.cancelled() => return,
            }
        }
    };
    tokio::join!(server.run(stop), sweep);
}
