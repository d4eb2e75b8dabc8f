//! Session memory held in memory: the [`SessionStore`] port on one lock.

use std::collections::BTreeMap;

use async_trait::async_trait;
use recall_core::session::{
    ContextRecord, QaEntry, QaVector, SessionInfo, SessionKey, SessionStore, SessionVersion, StoredQaVector, TraceStep,
    WriteStamp,
};
use recall_core::{DatasetId, EpochMillis, Result};
use tokio::sync::RwLock;
use uuid::Uuid;

struct Row<T> {
    expires_at: Option<EpochMillis>,
    dataset: Option<DatasetId>,
    item: T,
    /// A QA entry's embedding and the session version it was written at.
    vector: Option<(QaVector, i64)>,
}

impl<T> Row<T> {
    fn live(&self, now: EpochMillis) -> bool {
        self.expires_at.is_none_or(|e| e > now)
    }
}

struct Session {
    version: i64,
    created_at: EpochMillis,
    updated_at: EpochMillis,
    dataset: Option<DatasetId>,
    expires_at: Option<EpochMillis>,
    qa: Vec<Row<QaEntry>>,
    traces: Vec<Row<TraceStep>>,
    records: Vec<Row<ContextRecord>>,
    node_set: Option<Vec<String>>,
}

impl Session {
    fn new(now: EpochMillis) -> Self {
        Self {
            version: 0,
            created_at: now,
            updated_at: now,
            dataset: None,
            expires_at: None,
            qa: Vec::new(),
            traces: Vec::new(),
            records: Vec::new(),
            node_set: None,
        }
    }

    /// A write at `at`: the session's activity, and every row's expiry slid
    /// (only rows more than 5 % stale are re-stamped, as the SQL store does).
    fn touch(&mut self, at: WriteStamp, dataset: Option<DatasetId>) {
        self.version += 1;
        self.updated_at = at.now;
        if dataset.is_some() {
            self.dataset = dataset;
        }
        let new = at.expires_at();
        let before = at.restamp_before();
        let slide = |e: &mut Option<EpochMillis>| match (before, *e) {
            (None, _) => *e = None,
            (Some(b), Some(old)) if old < b => *e = new,
            _ => {}
        };
        slide(&mut self.expires_at);
        if self.expires_at.is_none() {
            self.expires_at = new;
        }
        self.qa.iter_mut().for_each(|r| slide(&mut r.expires_at));
        self.traces.iter_mut().for_each(|r| slide(&mut r.expires_at));
        self.records.iter_mut().for_each(|r| slide(&mut r.expires_at));
    }

    fn live(&self, now: EpochMillis) -> bool {
        self.expires_at.is_none_or(|e| e > now)
    }
}

fn newest<T: Clone>(rows: &[Row<T>], last_n: Option<usize>, now: EpochMillis) -> Vec<T> {
    let live: Vec<T> = rows.iter().filter(|r| r.live(now)).map(|r| r.item.clone()).collect();
    match last_n {
        Some(n) if n < live.len() => live[live.len() - n..].to_vec(),
        _ => live,
    }
}

/// QA entries, trace steps and records of every session, in memory.
#[derive(Default)]
pub struct MemorySessionStore {
    sessions: RwLock<BTreeMap<SessionKey, Session>>,
}

impl MemorySessionStore {
    pub fn new() -> Self {
        Self::default()
    }

    async fn put_qa_row(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        vector: Option<&QaVector>,
        at: WriteStamp,
    ) {
        let mut sessions = self.sessions.write().await;
        let session = sessions.entry(key.clone()).or_insert_with(|| Session::new(at.now));
        session.touch(at, dataset);
        let vector = vector.map(|v| (v.clone(), session.version));
        let row = Row { expires_at: at.expires_at(), dataset, item: entry.clone(), vector };
        match session.qa.iter_mut().find(|r| r.item.qa_id == entry.qa_id) {
            Some(existing) => {
                let vector = row.vector.or_else(|| existing.vector.take());
                *existing = Row { dataset: dataset.or(existing.dataset), vector, ..row }
            }
            None => session.qa.push(row),
        }
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn put_qa(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        at: WriteStamp,
    ) -> Result<()> {
        self.put_qa_row(key, dataset, entry, None, at).await;
        Ok(())
    }

    async fn put_qa_embedded(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        vector: &QaVector,
        at: WriteStamp,
    ) -> Result<()> {
        self.put_qa_row(key, dataset, entry, Some(vector), at).await;
        Ok(())
    }

    async fn qa_vectors(
        &self,
        key: &SessionKey,
        model: &str,
        after: i64,
        now: EpochMillis,
    ) -> Result<Vec<StoredQaVector>> {
        let sessions = self.sessions.read().await;
        let mut out: Vec<StoredQaVector> = sessions
            .get(key)
            .map(|s| {
                s.qa.iter()
                    .filter(|r| r.live(now))
                    .filter_map(|r| {
                        let (v, version) = r.vector.as_ref()?;
                        (v.model == model && *version > after).then(|| StoredQaVector {
                            qa_id: r.item.qa_id.clone(),
                            vector: v.vector.clone(),
                            version: *version,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|v| v.version);
        Ok(out)
    }

    async fn pin_node_set(&self, key: &SessionKey, node_set: &[String], at: WriteStamp) -> Result<Vec<String>> {
        let mut sessions = self.sessions.write().await;
        let session = sessions.entry(key.clone()).or_insert_with(|| Session::new(at.now));
        if session.expires_at.is_none() {
            session.expires_at = at.expires_at();
        }
        Ok(session.node_set.get_or_insert_with(|| node_set.to_vec()).clone())
    }

    async fn qa_entries(&self, key: &SessionKey, last_n: Option<usize>, now: EpochMillis) -> Result<Vec<QaEntry>> {
        Ok(self.sessions.read().await.get(key).map(|s| newest(&s.qa, last_n, now)).unwrap_or_default())
    }

    async fn qa_entry(&self, key: &SessionKey, qa_id: &str, now: EpochMillis) -> Result<Option<QaEntry>> {
        let sessions = self.sessions.read().await;
        Ok(sessions
            .get(key)
            .and_then(|s| s.qa.iter().find(|r| r.item.qa_id == qa_id && r.live(now)))
            .map(|r| r.item.clone()))
    }

    async fn delete_qa(&self, key: &SessionKey, qa_ids: &[String]) -> Result<u64> {
        let mut sessions = self.sessions.write().await;
        let Some(session) = sessions.get_mut(key) else { return Ok(0) };
        let before = session.qa.len();
        session.qa.retain(|r| !qa_ids.contains(&r.item.qa_id));
        session.version += 1;
        Ok((before - session.qa.len()) as u64)
    }

    async fn append_trace(&self, key: &SessionKey, step: &TraceStep, at: WriteStamp) -> Result<()> {
        let mut sessions = self.sessions.write().await;
        let session = sessions.entry(key.clone()).or_insert_with(|| Session::new(at.now));
        session.touch(at, None);
        session.traces.push(Row { expires_at: at.expires_at(), dataset: None, item: step.clone(), vector: None });
        Ok(())
    }

    async fn trace_steps(&self, key: &SessionKey, last_n: Option<usize>, now: EpochMillis) -> Result<Vec<TraceStep>> {
        Ok(self.sessions.read().await.get(key).map(|s| newest(&s.traces, last_n, now)).unwrap_or_default())
    }

    async fn put_record(&self, key: &SessionKey, record: &ContextRecord, at: WriteStamp) -> Result<()> {
        let mut sessions = self.sessions.write().await;
        let session = sessions.entry(key.clone()).or_insert_with(|| Session::new(at.now));
        session.touch(at, None);
        let row = Row { expires_at: at.expires_at(), dataset: None, item: record.clone(), vector: None };
        match session.records.iter_mut().find(|r| r.item.id == record.id) {
            Some(existing) => *existing = row,
            None => session.records.push(row),
        }
        Ok(())
    }

    async fn records(&self, key: &SessionKey, kind: &str, now: EpochMillis) -> Result<Vec<ContextRecord>> {
        let sessions = self.sessions.read().await;
        Ok(sessions
            .get(key)
            .map(|s| s.records.iter().filter(|r| r.live(now) && r.item.kind == kind).map(|r| r.item.clone()).collect())
            .unwrap_or_default())
    }

    async fn sessions(&self, user_id: Uuid, now: EpochMillis) -> Result<Vec<SessionInfo>> {
        let sessions = self.sessions.read().await;
        let mut out: Vec<SessionInfo> = sessions
            .iter()
            .filter(|(k, s)| k.user_id == user_id && s.live(now))
            .map(|(k, s)| SessionInfo {
                session_id: k.session_id.clone(),
                dataset_id: s.dataset,
                created_at: s.created_at,
                updated_at: s.updated_at,
                qa_count: s.qa.iter().filter(|r| r.live(now)).count() as u64,
                trace_count: s.traces.iter().filter(|r| r.live(now)).count() as u64,
            })
            .collect();
        out.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.session_id.cmp(&b.session_id)));
        Ok(out)
    }

    async fn session_version(&self, key: &SessionKey, now: EpochMillis) -> Result<Option<SessionVersion>> {
        let sessions = self.sessions.read().await;
        Ok(sessions
            .get(key)
            .filter(|s| s.live(now))
            .map(|s| SessionVersion { version: s.version, updated_at: s.updated_at }))
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<bool> {
        Ok(self.sessions.write().await.remove(key).is_some())
    }

    async fn dataset_qa(&self, dataset: DatasetId, now: EpochMillis) -> Result<Vec<(SessionKey, QaEntry)>> {
        let sessions = self.sessions.read().await;
        Ok(sessions
            .iter()
            .flat_map(|(k, s)| {
                s.qa.iter().filter(|r| r.dataset == Some(dataset) && r.live(now)).map(|r| (k.clone(), r.item.clone()))
            })
            .collect())
    }

    async fn forget_dataset(&self, dataset: DatasetId, session_ids: &[String]) -> Result<u64> {
        let mut sessions = self.sessions.write().await;
        let mut deleted = 0u64;
        sessions.retain(|k, s| {
            if session_ids.contains(&k.session_id) {
                deleted += (s.qa.len() + s.traces.len() + s.records.len()) as u64;
                return false;
            }
            let before = s.qa.len();
            s.qa.retain(|r| r.dataset != Some(dataset));
            if s.qa.len() < before {
                s.version += 1;
            }
            deleted += (before - s.qa.len()) as u64;
            true
        });
        Ok(deleted)
    }

    async fn purge_expired(&self, now: EpochMillis) -> Result<u64> {
        let mut sessions = self.sessions.write().await;
        let mut deleted = 0u64;
        sessions.retain(|_, s| {
            let before = s.qa.len() + s.traces.len() + s.records.len();
            s.qa.retain(|r| r.live(now));
            s.traces.retain(|r| r.live(now));
            s.records.retain(|r| r.live(now));
            deleted += (before - s.qa.len() - s.traces.len() - s.records.len()) as u64;
            s.live(now)
        });
        Ok(deleted)
    }
}
