//! Session memory on SQL tables (docs/sessions.md, "Storage"): QA entries,
//! trace steps and context records, each row in insertion order (`seq`) with
//! its expiry, and one `session_records` row per session. Every write is one
//! transaction that inserts its row, records the session's activity and
//! slides the expiry of the session's stale rows.

use async_trait::async_trait;
use recall_core::session::{
    vector_bytes, vector_from_bytes, ContextRecord, QaEntry, QaVector, SessionInfo, SessionKey, SessionStore,
    SessionVersion, StoredQaVector, TraceStep, WriteStamp,
};
use recall_core::{DatasetId, EpochMillis, RecallError, Result};
use sea_orm::{ConnectionTrait, DatabaseTransaction, QueryResult, TransactionTrait, Value};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::{db_err, SqlDatabase};

/// The tables whose rows belong to one session.
const ROW_TABLES: [&str; 3] = ["cache_qa_entries", "cache_trace_entries", "cache_session_context"];

/// A live row: no expiry, or one still ahead of `$n`.
fn live(n: usize) -> String {
    format!("(expires_at IS NULL OR expires_at > ${n})")
}

/// Session memory on the SQL database.
#[derive(Clone)]
pub struct SqlSessionStore {
    db: SqlDatabase,
}

impl SqlSessionStore {
    pub fn new(db: SqlDatabase) -> Self {
        Self { db }
    }

    fn key_values(key: &SessionKey) -> Vec<Value> {
        vec![key.user_id.to_string().into(), key.session_id.clone().into()]
    }

    /// After a row's insert, in its transaction: the session's activity, and
    /// the expiry of its other rows slid (only those more than 5 % stale).
    async fn touch(
        &self,
        txn: &DatabaseTransaction,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        at: WriteStamp,
    ) -> Result<()> {
        self.record_activity(txn, key, dataset, at).await?;
        self.slide(txn, key, at).await
    }

    /// The session's row upserted with this write's time, expiry and
    /// dataset, its version bumped (the row stays locked until the
    /// transaction ends); the new version.
    async fn record_activity(
        &self,
        txn: &DatabaseTransaction,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        at: WriteStamp,
    ) -> Result<i64> {
        let row = txn
            .query_one_raw(self.db.stmt(
                "INSERT INTO session_records (session_id, user_id, dataset_id, created_at, updated_at, expires_at, version) \
                 VALUES ($1, $2, $3, $4, $4, $5, 1) ON CONFLICT (session_id, user_id) DO UPDATE SET \
                 updated_at = excluded.updated_at, expires_at = excluded.expires_at, \
                 version = session_records.version + 1, \
                 dataset_id = COALESCE(excluded.dataset_id, session_records.dataset_id) RETURNING version",
                vec![
                    key.session_id.clone().into(),
                    key.user_id.to_string().into(),
                    dataset.map(|d| d.to_string()).into(),
                    at.now.into(),
                    at.expires_at().into(),
                ],
            ))
            .await
            .map_err(db_err)?
            .ok_or_else(|| RecallError::backend_msg("recording session activity returned no row"))?;
        row.try_get("", "version").map_err(db_err)
    }

    /// The expiry of the session's rows slid (only those more than 5 % stale).
    async fn slide(&self, txn: &DatabaseTransaction, key: &SessionKey, at: WriteStamp) -> Result<()> {
        let expires = at.expires_at();
        for table in ROW_TABLES {
            let mut values = Self::key_values(key);
            let sql = match at.restamp_before() {
                Some(before) => {
                    values.extend([expires.into(), before.into()]);
                    format!(
                        "UPDATE {table} SET expires_at = $3 WHERE user_id = $1 AND session_id = $2 AND expires_at < $4"
                    )
                }
                None => format!(
                    "UPDATE {table} SET expires_at = NULL WHERE user_id = $1 AND session_id = $2 \
                     AND expires_at IS NOT NULL"
                ),
            };
            txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        }
        Ok(())
    }

    /// One row's write and the session's touch, in one transaction. The
    /// insert comes first, so an SQLite transaction takes the write lock at
    /// its first statement (waiting for another writer, never failing on an
    /// upgrade from a read lock).
    async fn write(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        at: WriteStamp,
        sql: &str,
        values: Vec<Value>,
    ) -> Result<()> {
        let txn = self.db.connection().begin().await.map_err(db_err)?;
        txn.execute_raw(self.db.stmt(sql, values)).await.map_err(db_err)?;
        self.touch(&txn, key, dataset, at).await?;
        txn.commit().await.map_err(db_err)
    }

    /// The payloads of a session's rows in `table` live at `now` (`$3`),
    /// oldest first; the newest `last_n` with one. `extra` filters further
    /// with `$4`, ….
    async fn payloads<T: DeserializeOwned>(
        &self,
        table: &str,
        key: &SessionKey,
        now: EpochMillis,
        (extra, extra_values): (&str, Vec<Value>),
        last_n: Option<usize>,
    ) -> Result<Vec<T>> {
        let order = match last_n {
            Some(n) => format!("ORDER BY seq DESC LIMIT {n}"),
            None => "ORDER BY seq".into(),
        };
        let sql = format!(
            "SELECT payload FROM {table} WHERE user_id = $1 AND session_id = $2 AND {}{extra} {order}",
            live(3)
        );
        let mut values = Self::key_values(key);
        values.push(now.into());
        values.extend(extra_values);
        let rows = self.db.connection().query_all_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        let mut out = rows.iter().map(payload).collect::<Result<Vec<T>>>()?;
        if last_n.is_some() {
            out.reverse();
        }
        Ok(out)
    }
}

impl SqlSessionStore {
    /// A QA entry's insert or replacement, with its vector when given (the
    /// vector stamped with the session version of this write), and the
    /// session's touch, in one transaction.
    async fn put_qa_row(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        vector: Option<&QaVector>,
        at: WriteStamp,
    ) -> Result<()> {
        let mut values = Self::key_values(key);
        values.extend([
            entry.qa_id.clone().into(),
            dataset.map(|d| d.to_string()).into(),
            json(entry)?.into(),
            at.now.into(),
            at.expires_at().into(),
        ]);
        let sql = |columns: &str, params: &str, update: &str| {
            format!(
                "INSERT INTO cache_qa_entries (user_id, session_id, qa_id, dataset_id, payload, created_at, expires_at{columns}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7{params}) ON CONFLICT (user_id, session_id, qa_id) DO UPDATE SET \
                 dataset_id = COALESCE(excluded.dataset_id, cache_qa_entries.dataset_id), payload = excluded.payload, \
                 expires_at = excluded.expires_at{update}"
            )
        };
        let txn = self.db.connection().begin().await.map_err(db_err)?;
        match vector {
            None => {
                txn.execute_raw(self.db.stmt(&sql("", "", ""), values)).await.map_err(db_err)?;
                self.touch(&txn, key, dataset, at).await?;
            }
            Some(v) => {
                // The session row first: locked until commit, so versions are
                // stamped in commit order and a reader that has seen version v
                // misses no vector of a version ≤ v.
                let version = self.record_activity(&txn, key, dataset, at).await?;
                values.extend([v.model.clone().into(), vector_bytes(&v.vector).into(), version.into()]);
                let sql = sql(
                    ", vector_model, vector, vector_version",
                    ", $8, $9, $10",
                    ", vector_model = excluded.vector_model, vector = excluded.vector, \
                     vector_version = excluded.vector_version",
                );
                txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
                self.slide(&txn, key, at).await?;
            }
        }
        txn.commit().await.map_err(db_err)
    }
}

fn payload<T: DeserializeOwned>(row: &QueryResult) -> Result<T> {
    let text: String = row.try_get("", "payload").map_err(db_err)?;
    serde_json::from_str(&text).map_err(|e| RecallError::backend_msg(format!("corrupt session payload: {e}")))
}

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(RecallError::backend)
}

/// A list of strings as the JSON array text an `id_set` parameter takes.
fn string_array(items: &[String]) -> Value {
    Value::from(serde_json::Value::from(items.to_vec()).to_string())
}

#[async_trait]
impl SessionStore for SqlSessionStore {
    async fn put_qa(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        at: WriteStamp,
    ) -> Result<()> {
        self.put_qa_row(key, dataset, entry, None, at).await
    }

    async fn put_qa_embedded(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        vector: &QaVector,
        at: WriteStamp,
    ) -> Result<()> {
        self.put_qa_row(key, dataset, entry, Some(vector), at).await
    }

    async fn qa_vectors(
        &self,
        key: &SessionKey,
        model: &str,
        after: i64,
        now: EpochMillis,
    ) -> Result<Vec<StoredQaVector>> {
        let sql = format!(
            "SELECT qa_id, vector, vector_version FROM cache_qa_entries WHERE user_id = $1 AND session_id = $2 \
             AND vector_model = $3 AND vector_version > $4 AND {} ORDER BY vector_version, seq",
            live(5)
        );
        let mut values = Self::key_values(key);
        values.extend([model.into(), after.into(), now.into()]);
        let rows = self.db.connection().query_all_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let bytes: Vec<u8> = r.try_get("", "vector").map_err(db_err)?;
                Ok(StoredQaVector {
                    qa_id: r.try_get("", "qa_id").map_err(db_err)?,
                    vector: vector_from_bytes(&bytes)
                        .ok_or_else(|| RecallError::backend_msg("corrupt session QA vector"))?,
                    version: r.try_get("", "vector_version").map_err(db_err)?,
                })
            })
            .collect()
    }

    async fn pin_node_set(&self, key: &SessionKey, node_set: &[String], at: WriteStamp) -> Result<Vec<String>> {
        let values = vec![
            key.session_id.clone().into(),
            key.user_id.to_string().into(),
            at.now.into(),
            at.expires_at().into(),
            json(&node_set)?.into(),
        ];
        let row = self
            .db
            .connection()
            .query_one_raw(self.db.stmt(
                "INSERT INTO session_records (session_id, user_id, created_at, updated_at, expires_at, version, node_set) \
                 VALUES ($1, $2, $3, $3, $4, 0, $5) ON CONFLICT (session_id, user_id) DO UPDATE SET \
                 node_set = COALESCE(session_records.node_set, excluded.node_set) RETURNING node_set",
                values,
            ))
            .await
            .map_err(db_err)?
            .ok_or_else(|| RecallError::backend_msg("pinning a node set returned no row"))?;
        let pinned: String = row.try_get("", "node_set").map_err(db_err)?;
        serde_json::from_str(&pinned).map_err(|e| RecallError::backend_msg(format!("corrupt session node set: {e}")))
    }

    async fn qa_entries(&self, key: &SessionKey, last_n: Option<usize>, now: EpochMillis) -> Result<Vec<QaEntry>> {
        self.payloads("cache_qa_entries", key, now, ("", vec![]), last_n).await
    }

    async fn qa_entry(&self, key: &SessionKey, qa_id: &str, now: EpochMillis) -> Result<Option<QaEntry>> {
        let found: Vec<QaEntry> =
            self.payloads("cache_qa_entries", key, now, (" AND qa_id = $4", vec![qa_id.into()]), None).await?;
        Ok(found.into_iter().next())
    }

    async fn delete_qa(&self, key: &SessionKey, qa_ids: &[String]) -> Result<u64> {
        let mut values = Self::key_values(key);
        values.push(string_array(qa_ids));
        let sql = format!(
            "DELETE FROM cache_qa_entries WHERE user_id = $1 AND session_id = $2 AND qa_id IN ({})",
            self.db.id_set(3)
        );
        let txn = self.db.connection().begin().await.map_err(db_err)?;
        let deleted = txn.execute_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?.rows_affected();
        txn.execute_raw(self.db.stmt(
            "UPDATE session_records SET version = version + 1 WHERE user_id = $1 AND session_id = $2",
            Self::key_values(key),
        ))
        .await
        .map_err(db_err)?;
        txn.commit().await.map_err(db_err)?;
        Ok(deleted)
    }

    async fn append_trace(&self, key: &SessionKey, step: &TraceStep, at: WriteStamp) -> Result<()> {
        let mut values = Self::key_values(key);
        values.extend([step.trace_id.clone().into(), json(step)?.into(), at.now.into(), at.expires_at().into()]);
        self.write(
            key,
            None,
            at,
            "INSERT INTO cache_trace_entries (user_id, session_id, trace_id, payload, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            values,
        )
        .await
    }

    async fn trace_steps(&self, key: &SessionKey, last_n: Option<usize>, now: EpochMillis) -> Result<Vec<TraceStep>> {
        self.payloads("cache_trace_entries", key, now, ("", vec![]), last_n).await
    }

    async fn put_record(&self, key: &SessionKey, record: &ContextRecord, at: WriteStamp) -> Result<()> {
        let mut values = Self::key_values(key);
        values.extend([
            record.id.clone().into(),
            record.kind.clone().into(),
            json(&record.payload)?.into(),
            at.now.into(),
            at.expires_at().into(),
        ]);
        self.write(
            key,
            None,
            at,
            "INSERT INTO cache_session_context (user_id, session_id, entry_id, kind, payload, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id, session_id, entry_id) DO UPDATE SET \
             kind = excluded.kind, payload = excluded.payload, expires_at = excluded.expires_at",
            values,
        )
        .await
    }

    async fn records(&self, key: &SessionKey, kind: &str, now: EpochMillis) -> Result<Vec<ContextRecord>> {
        let sql = format!(
            "SELECT entry_id, kind, payload FROM cache_session_context WHERE user_id = $1 AND session_id = $2 \
             AND kind = $3 AND {} ORDER BY seq",
            live(4)
        );
        let mut values = Self::key_values(key);
        values.extend([kind.into(), now.into()]);
        let rows = self.db.connection().query_all_raw(self.db.stmt(&sql, values)).await.map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(ContextRecord {
                    id: r.try_get("", "entry_id").map_err(db_err)?,
                    kind: r.try_get("", "kind").map_err(db_err)?,
                    payload: payload(r)?,
                })
            })
            .collect()
    }

    async fn sessions(&self, user_id: Uuid, now: EpochMillis) -> Result<Vec<SessionInfo>> {
        let count = |table: &str| {
            format!(
                "(SELECT COUNT(*) FROM {table} t WHERE t.user_id = r.user_id AND t.session_id = r.session_id \
                 AND (t.expires_at IS NULL OR t.expires_at > $2))"
            )
        };
        let sql = format!(
            "SELECT r.session_id, r.dataset_id, r.created_at, r.updated_at, {} AS qa_count, {} AS trace_count \
             FROM session_records r WHERE r.user_id = $1 AND (r.expires_at IS NULL OR r.expires_at > $2) \
             ORDER BY r.updated_at DESC, r.session_id",
            count("cache_qa_entries"),
            count("cache_trace_entries")
        );
        let rows = self
            .db
            .connection()
            .query_all_raw(self.db.stmt(&sql, vec![user_id.to_string().into(), now.into()]))
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let dataset: Option<String> = r.try_get("", "dataset_id").map_err(db_err)?;
                let qa: i64 = r.try_get("", "qa_count").map_err(db_err)?;
                let traces: i64 = r.try_get("", "trace_count").map_err(db_err)?;
                Ok(SessionInfo {
                    session_id: r.try_get("", "session_id").map_err(db_err)?,
                    dataset_id: dataset.and_then(|d| Uuid::parse_str(&d).ok()).map(DatasetId),
                    created_at: r.try_get("", "created_at").map_err(db_err)?,
                    updated_at: r.try_get("", "updated_at").map_err(db_err)?,
                    qa_count: u64::try_from(qa).unwrap_or(0),
                    trace_count: u64::try_from(traces).unwrap_or(0),
                })
            })
            .collect()
    }

    async fn session_version(&self, key: &SessionKey, now: EpochMillis) -> Result<Option<SessionVersion>> {
        let sql = format!(
            "SELECT version, updated_at FROM session_records WHERE user_id = $1 AND session_id = $2 AND {}",
            live(3)
        );
        let mut values = Self::key_values(key);
        values.push(now.into());
        let Some(row) = self.db.connection().query_one_raw(self.db.stmt(&sql, values)).await.map_err(db_err)? else {
            return Ok(None);
        };
        Ok(Some(SessionVersion {
            version: row.try_get("", "version").map_err(db_err)?,
            updated_at: row.try_get("", "updated_at").map_err(db_err)?,
        }))
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<bool> {
        let txn = self.db.connection().begin().await.map_err(db_err)?;
        let mut deleted = 0;
        for table in ROW_TABLES.iter().chain(&["session_records"]) {
            let sql = format!("DELETE FROM {table} WHERE user_id = $1 AND session_id = $2");
            deleted +=
                txn.execute_raw(self.db.stmt(&sql, Self::key_values(key))).await.map_err(db_err)?.rows_affected();
        }
        txn.commit().await.map_err(db_err)?;
        Ok(deleted > 0)
    }

    async fn dataset_qa(&self, dataset: DatasetId, now: EpochMillis) -> Result<Vec<(SessionKey, QaEntry)>> {
        let sql = format!(
            "SELECT user_id, session_id, payload FROM cache_qa_entries WHERE dataset_id = $1 AND {} ORDER BY seq",
            live(2)
        );
        let rows = self
            .db
            .connection()
            .query_all_raw(self.db.stmt(&sql, vec![dataset.to_string().into(), now.into()]))
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let user: String = r.try_get("", "user_id").map_err(db_err)?;
                let user_id =
                    Uuid::parse_str(&user).map_err(|e| RecallError::backend_msg(format!("corrupt user id: {e}")))?;
                let session_id: String = r.try_get("", "session_id").map_err(db_err)?;
                Ok((SessionKey { user_id, session_id }, payload(r)?))
            })
            .collect()
    }

    async fn forget_dataset(&self, dataset: DatasetId, session_ids: &[String]) -> Result<u64> {
        let txn = self.db.connection().begin().await.map_err(db_err)?;
        // The sessions that lose rows read as changed.
        txn.execute_raw(self.db.stmt(
            "UPDATE session_records SET version = version + 1 WHERE EXISTS (SELECT 1 FROM cache_qa_entries q \
             WHERE q.dataset_id = $1 AND q.user_id = session_records.user_id \
             AND q.session_id = session_records.session_id)",
            vec![dataset.to_string().into()],
        ))
        .await
        .map_err(db_err)?;
        let mut deleted = txn
            .execute_raw(
                self.db.stmt("DELETE FROM cache_qa_entries WHERE dataset_id = $1", vec![dataset.to_string().into()]),
            )
            .await
            .map_err(db_err)?
            .rows_affected();
        for table in ROW_TABLES.iter().chain(&["session_records"]) {
            let sql = format!("DELETE FROM {table} WHERE session_id IN ({})", self.db.id_set(1));
            let n = txn.execute_raw(self.db.stmt(&sql, vec![string_array(session_ids)])).await.map_err(db_err)?;
            if *table != "session_records" {
                deleted += n.rows_affected();
            }
        }
        txn.commit().await.map_err(db_err)?;
        Ok(deleted)
    }

    async fn purge_expired(&self, now: EpochMillis) -> Result<u64> {
        let txn = self.db.connection().begin().await.map_err(db_err)?;
        let mut deleted = 0;
        for table in ROW_TABLES.iter().chain(&["session_records"]) {
            let sql = format!("DELETE FROM {table} WHERE expires_at IS NOT NULL AND expires_at <= $1");
            let n = txn.execute_raw(self.db.stmt(&sql, vec![now.into()])).await.map_err(db_err)?.rows_affected();
            if *table != "session_records" {
                deleted += n;
            }
        }
        txn.commit().await.map_err(db_err)?;
        Ok(deleted)
    }
}
