//! Session memory as the front ends reach it (docs/sessions.md): typed
//! entries stored into a session bound to a dataset, skill runs recorded
//! beside their skill, and the caller's own sessions. Every call is keyed
//! by the caller: no one reaches another user's sessions.

use std::sync::Arc;

use recall_core::session::{SessionEntry, SessionMemory, StoredEntry};
use recall_core::{Dataset, DatasetRef, Result, User};
use recall_engine::{RecordedSkillRun, SkillRunEntry};

use super::Application;

impl Application {
    /// The caller-keyed session memory, or `SessionPreconditionError` when
    /// it is off (`CACHING=false`).
    pub fn session_memory(&self) -> Result<Arc<dyn SessionMemory>> {
        self.engine.session_memory()
    }

    /// Stores a typed entry (a QA turn, a trace step, feedback) into a
    /// session bound to the dataset (created when missing). The dataset is
    /// resolved first; what the store then refuses is the inner error.
    pub async fn remember_entry(
        &self,
        caller: &User,
        dataset: &DatasetRef,
        session_id: &str,
        entry: SessionEntry,
    ) -> Result<(Dataset, Result<StoredEntry>)> {
        let sessions = self.session_memory()?;
        let dataset = self.engine.access().writable(caller, dataset).await?;
        let stored = sessions.remember_entry(caller, session_id, Some(dataset.id), entry).await;
        Ok((dataset, stored))
    }

    /// Records a run of a skill in the dataset's graph, beside the skill.
    pub async fn record_skill_run(
        &self,
        caller: &User,
        dataset: &DatasetRef,
        session_id: Option<&str>,
        entry: SkillRunEntry,
    ) -> Result<(Dataset, RecordedSkillRun)> {
        self.engine.record_skill_run(caller, dataset, session_id, entry).await
    }
}
