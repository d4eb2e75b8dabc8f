//! Session memory as the engine offers it to its front ends (docs/sessions.md):
//! the CLI and the server call it with their caller, who only ever reaches
//! their own sessions (each call is keyed by the caller's id).

use std::sync::Arc;

use recall_core::session::{SessionEntry, SessionMemory};
use recall_core::{Dataset, DatasetRef, RecallError, Result, User};

use crate::ingest::remember::{load, RememberInput};
use crate::Engine;

impl Engine {
    /// Session memory, or `SessionPreconditionError` when it is off.
    pub fn session_memory(&self) -> Result<Arc<dyn SessionMemory>> {
        self.sessions.clone().ok_or_else(|| RecallError::Validation {
            name: "SessionPreconditionError",
            message: "Session prerequisites not met: session memory is off (CACHING=false), so no session is kept."
                .into(),
        })
    }

    /// `remember` with a session id: the inputs' texts become **one** QA
    /// turn of the session (an empty question, the texts as the answer,
    /// joined by blank lines), bound to the dataset (created when missing);
    /// nothing is built into the graph. With session memory off, nothing is
    /// stored (as Cognee does) and the dataset is still returned.
    pub async fn remember_in_session(
        &self,
        user: &User,
        target: &DatasetRef,
        session_id: &str,
        inputs: &[RememberInput],
    ) -> Result<Dataset> {
        recall_core::session::validate_session_id(session_id)?;
        let texts = inputs.iter().map(|i| load(i).map(|l| l.text)).collect::<Result<Vec<_>>>()?;
        if texts.is_empty() {
            return Err(RecallError::invalid_input("Nothing to remember: give text or files."));
        }
        let dataset = self.access.writable(user, target).await?;
        if let Some(sessions) = &self.sessions {
            let entry = SessionEntry::Qa {
                question: String::new(),
                answer: texts.join("\n\n"),
                context: String::new(),
                qa_id: None,
                feedback_text: None,
                feedback_score: None,
                used_graph_element_ids: None,
                node_set: None,
            };
            sessions.remember_entry(user, session_id, Some(dataset.id), entry).await?;
        }
        Ok(dataset)
    }
}
