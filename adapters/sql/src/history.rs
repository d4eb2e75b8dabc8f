//! Search history written by group commit: concurrent recalls hand their
//! records to one writer task, which commits whatever has queued up in one
//! transaction and answers each caller once its record is committed. A
//! caller still returns only after its record is in the table (a history
//! read that follows sees it), but N concurrent recalls cost one commit and
//! never contend for SQLite's write lock among themselves.

use std::sync::{Arc, OnceLock};

use recall_core::{now_millis, RecallError, Result, SearchRecord};
use sea_orm::{ConnectionTrait, TransactionTrait};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::{db_err, SqlDatabase};

/// Records committed in one transaction at most: a burst is split so no
/// transaction holds the write lock for long.
const MAX_BATCH: usize = 256;

/// A record waiting for its commit, and where to say how it went.
type Pending = (SearchRecord, oneshot::Sender<std::result::Result<(), String>>);

/// The writer task's queue, started on first use (inside the runtime that
/// first records a search). Clones of a store share it.
#[derive(Clone, Default)]
pub(crate) struct HistoryWriter(Arc<OnceLock<mpsc::UnboundedSender<Pending>>>);

impl HistoryWriter {
    /// Commits `record`, together with whatever other records are waiting.
    pub(crate) async fn record(&self, db: &SqlDatabase, record: &SearchRecord) -> Result<()> {
        let queue = self.0.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(write_batches(db.clone(), rx));
            tx
        });
        let (done, outcome) = oneshot::channel();
        if queue.send((record.clone(), done)).is_err() {
            // The writer's runtime has ended (a store outliving the runtime
            // that started it): commit this record alone.
            return insert(db, &[record]).await;
        }
        match outcome.await {
            Ok(committed) => committed.map_err(RecallError::backend_msg),
            Err(_) => Err(RecallError::backend_msg("the search history writer stopped before committing")),
        }
    }
}

/// The writer task: waits for a record, takes every other one already
/// queued (up to [`MAX_BATCH`]), commits them together and answers each.
async fn write_batches(db: SqlDatabase, mut queue: mpsc::UnboundedReceiver<Pending>) {
    let mut batch: Vec<Pending> = Vec::new();
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let records: Vec<&SearchRecord> = batch.iter().map(|(record, _)| record).collect();
        let outcome = insert(&db, &records).await.map_err(|e| e.to_string());
        if let Err(e) = &outcome {
            tracing::warn!(error = %e, records = batch.len(), "search history commit failed");
        }
        for (_, done) in batch.drain(..) {
            // A caller that went away needs no answer; its record is committed anyway.
            let _ = done.send(outcome.clone());
        }
    }
}

/// One transaction: per record, a `queries` row and a `results` row for
/// each answer.
async fn insert(db: &SqlDatabase, records: &[&SearchRecord]) -> Result<()> {
    let now = now_millis();
    let txn = db.conn.begin().await.map_err(db_err)?;
    for record in records {
        let user = record.user_id.to_string();
        for (dataset, answer) in &record.answers {
            let query_id = Uuid::now_v7();
            let dataset = dataset.map(|d| d.to_string());
            txn.execute_raw(db.stmt(
                "INSERT INTO queries (id, text, query_type, user_id, dataset_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                vec![
                    query_id.to_string().into(),
                    record.query_text.clone().into(),
                    record.query_type.clone().into(),
                    user.clone().into(),
                    dataset.clone().into(),
                    now.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
            txn.execute_raw(db.stmt(
                "INSERT INTO results (id, value, query_id, user_id, dataset_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                vec![
                    Uuid::now_v7().to_string().into(),
                    answer.clone().into(),
                    query_id.to_string().into(),
                    user.clone().into(),
                    dataset.into(),
                    now.into(),
                ],
            ))
            .await
            .map_err(db_err)?;
        }
    }
    txn.commit().await.map_err(db_err)
}
