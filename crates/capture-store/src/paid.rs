//! The paid create every job-like resource shares (screenshots, audits, ads, runs), written
//! once: one write transaction holds the resource's admission (its account gate or lock, the
//! quota reservation through the ledger, its queue or active bound), its row, task and first
//! event, and then the end every create has — the API key marked used, the row read back and
//! the Idempotency-Key's response stored with it. A refusal at any step rolls the whole
//! transaction back, so a refused create writes nothing (no action used, no task queued).
//!
//! A resource opens the transaction, runs its own steps in an async block that gives the
//! account's usage after its reservation (inside it `?` ends the create with a refusal —
//! [`Refused`] and the ledger's and admission's refusal types convert — or an error alike),
//! and hands both to [`finish`].

use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};

use crate::admission::QueueFull;
use crate::db::{Result, StoreError};
use crate::gate::NeedExact;
use crate::ledger::QuotaExceeded;
use crate::shape::{IdemResponse, Table, created};

/// Why a paid create was not made: nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The monthly action cap would be passed.
    Quota(QuotaExceeded),
    /// Too many jobs are waiting for or in capture (the account's or everyone's).
    QueueFull(QueueFull),
    /// The account has `limit` of this resource pending or running already (runs).
    TooManyActive { active: i64, limit: i64 },
    /// The request's Idempotency-Key was taken over by a later request (this one outlived
    /// its lease): that request answers for the key.
    IdempotencyTakenOver,
}

impl From<QuotaExceeded> for Refused {
    fn from(q: QuotaExceeded) -> Self {
        Refused::Quota(q)
    }
}

impl From<QueueFull> for Refused {
    fn from(q: QueueFull) -> Self {
        Refused::QueueFull(q)
    }
}

/// How a paid create's steps end early: refused, undecided on the fast way (PostgreSQL's
/// per-slot gate: the caller retries the exact way), or failed.
#[derive(Debug)]
pub(crate) enum Stop {
    Refused(Refused),
    NeedExact,
    Failed(StoreError),
}

/// What a paid create's steps give: the value, or why they stopped.
pub(crate) type Step<T> = std::result::Result<T, Stop>;

impl From<Refused> for Stop {
    fn from(r: Refused) -> Self {
        Stop::Refused(r)
    }
}

impl From<QuotaExceeded> for Stop {
    fn from(q: QuotaExceeded) -> Self {
        Stop::Refused(q.into())
    }
}

impl From<QueueFull> for Stop {
    fn from(q: QueueFull) -> Self {
        Stop::Refused(q.into())
    }
}

impl From<NeedExact> for Stop {
    fn from(_: NeedExact) -> Self {
        Stop::NeedExact
    }
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Failed(e)
    }
}

impl From<sqlx::Error> for Stop {
    fn from(e: sqlx::Error) -> Self {
        Stop::Failed(e.into())
    }
}

/// A paid create's outcome for its caller: made (the row and the usage after it), or refused.
/// The fast way's "undecided" cannot reach here (only a create that asked for it sees it).
pub(crate) fn settle<T>(step: Step<T>) -> Result<std::result::Result<T, Refused>> {
    match step {
        Ok(made) => Ok(Ok(made)),
        Err(Stop::Refused(r)) => Ok(Err(r)),
        Err(Stop::Failed(e)) => Err(e),
        Err(Stop::NeedExact) => Err(StoreError::Conflict("a create holding every slot was still undecided".into())),
    }
}

/// The row a paid create makes, as its end reads it back: the resource's table and row
/// reader, the new id, the API key that asked (marked used at `now`) and the idempotent
/// response to store.
pub(crate) struct Made<'a, T> {
    pub table: &'a Table<'a>,
    pub id: &'a str,
    pub key_id: Option<&'a str>,
    pub now: i64,
    pub from_row: fn(&AnyRow) -> Result<T>,
    pub idem: Option<IdemResponse<'a, T>>,
}

/// End a paid create whose `steps` ran in `tx` (they locked or gated the account, reserved,
/// admitted and inserted the row, its task and first event, and gave the usage after the
/// reservation): on a stop, roll everything back; else mark the key used, read the row back,
/// store the idempotent response and commit.
pub(crate) async fn finish<T>(
    mut tx: Transaction<'static, Any>,
    made: Made<'_, T>,
    steps: Step<i64>,
) -> Step<(T, i64)> {
    let used = match steps {
        Ok(used) => used,
        Err(stop) => {
            tx.rollback().await?;
            return Err(stop);
        }
    };
    let key = made.key_id.map(|k| (k, made.now));
    let Some(row) = created(&mut tx, made.table, made.id, key, made.from_row, made.idem).await? else {
        tx.rollback().await?;
        return Err(Refused::IdempotencyTakenOver.into());
    };
    tx.commit().await?;
    Ok((row, used))
}
