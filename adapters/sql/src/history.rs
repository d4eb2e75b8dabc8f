//! Search history written by group commit: concurrent recalls hand their
//! records to one writer task, which commits whatever has queued up in one
//! transaction and answers each caller once its record is committed. A
//! caller still returns only after its record is in the table (a history
//! read that follows sees it), but N concurrent recalls cost one commit and
//! never contend for SQLite's write lock among themselves.

use std::sync::{Arc, OnceLock};

use recall_core::{now_millis, RecallError, Result, SearchRecord};
use sea_orm::{ConnectionTrait, TransactionTrait, Value};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::{db_err, placeholders, SqlDatabase};

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

/// Rows per multi-row INSERT: six parameters a row keeps a statement far
/// under SQLite's (32 766) and Postgres's (65 535) parameter limits.
const ROWS_PER_INSERT: usize = 1_000;

/// One transaction: per record, a `queries` row and a `results` row for
/// each answer, written as one multi-row INSERT per table (per
/// [`ROWS_PER_INSERT`] rows), so a batch costs the same round trips as one
/// record.
async fn insert(db: &SqlDatabase, records: &[&SearchRecord]) -> Result<()> {
    let now = now_millis();
    let mut queries: Vec<[Value; 6]> = Vec::new();
    let mut results: Vec<[Value; 6]> = Vec::new();
    for record in records {
        let user = record.user_id.to_string();
        for (dataset, answer) in &record.answers {
            let query_id = Uuid::now_v7().to_string();
            let dataset = dataset.map(|d| d.to_string());
            queries.push([
                query_id.clone().into(),
                record.query_text.clone().into(),
                record.query_type.clone().into(),
                user.clone().into(),
                dataset.clone().into(),
                now.into(),
            ]);
            results.push([
                Uuid::now_v7().to_string().into(),
                answer.clone().into(),
                query_id.into(),
                user.clone().into(),
                dataset.into(),
                now.into(),
            ]);
        }
    }
    let txn = db.conn.begin().await.map_err(db_err)?;
    let tables = [
        ("INSERT INTO queries (id, text, query_type, user_id, dataset_id, created_at) VALUES ", queries),
        ("INSERT INTO results (id, value, query_id, user_id, dataset_id, created_at) VALUES ", results),
    ];
    for (head, rows) in tables {
        // The rows move into their statements: no value is copied.
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<[Value; 6]> = rows.by_ref().take(ROWS_PER_INSERT).collect();
            let sql = format!("{head}{}", placeholders(chunk.len(), 6));
            txn.execute_raw(db.stmt(&sql, chunk.into_iter().flatten().collect())).await.map_err(db_err)?;
        }
    }
    txn.commit().await.map_err(db_err)
}
