//! Session memory as the front ends reach it (docs/sessions.md): typed
//! entries stored into a session bound to a dataset, skill runs recorded
//! beside their skill, and the caller's own sessions. Every call is keyed
//! by the caller: no one reaches another user's sessions.

use std::sync::Arc;

use recall_core::session::{QaEntry, SessionEntry, SessionInfo, SessionMemory, StoredEntry, TraceStep};
use recall_core::{Dataset, DatasetRef, ResponseSessionContextEntry, Result, User};
use recall_engine::{RecordedSkillRun, SkillRunEntry};

use super::Application;

impl Application {
    /// Session memory, or `SessionPreconditionError` when it is off (`CACHING=false`).
    fn session_memory(&self) -> Result<Arc<dyn SessionMemory>> {
        self.engine.session_memory()
    }

    /// Whether session memory is on (`CACHING`).
    pub fn sessions_on(&self) -> bool {
        self.session_memory().is_ok()
    }

    /// The caller's sessions, most recently written first.
    pub async fn sessions(&self, caller: &User) -> Result<Vec<SessionInfo>> {
        self.session_memory()?.list_sessions(caller).await
    }

    /// A session's QA turns, oldest first (the newest `last` with one).
    pub async fn session_turns(&self, caller: &User, session_id: &str, last: Option<usize>) -> Result<Vec<QaEntry>> {
        self.session_memory()?.qa_entries(caller, session_id, last).await
    }

    /// A session's agent-trace steps, oldest first (the newest `last` with one).
    pub async fn session_traces(&self, caller: &User, session_id: &str, last: Option<usize>) -> Result<Vec<TraceStep>> {
        self.session_memory()?.trace_steps(caller, session_id, last).await
    }

    /// Rates an answer (a score from 1 to 5, a comment, or both; the next
    /// improve applies it); `false` when the session has no such answer.
    pub async fn rate_answer(
        &self,
        caller: &User,
        session_id: &str,
        qa_id: &str,
        text: Option<String>,
        score: Option<i64>,
    ) -> Result<bool> {
        self.session_memory()?.add_feedback(caller, session_id, qa_id, text, score).await
    }

    /// Removes an answer's rating and comment; `false` when there is no such answer.
    pub async fn unrate_answer(&self, caller: &User, session_id: &str, qa_id: &str) -> Result<bool> {
        self.session_memory()?.delete_feedback(caller, session_id, qa_id).await
    }

    /// The session's active guidance of a profile (`qa` or `agent`), as a completion reads it.
    pub async fn session_guidance(
        &self,
        caller: &User,
        session_id: &str,
        profile: &str,
    ) -> Result<Vec<ResponseSessionContextEntry>> {
        self.session_memory()?.session_context(caller, session_id, "", profile).await
    }

    /// Deletes a session and everything in it; whether it existed.
    pub async fn delete_session(&self, caller: &User, session_id: &str) -> Result<bool> {
        self.session_memory()?.delete_session(caller, session_id).await
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
