//! What the engine does around an AGENTIC_COMPLETION loop (docs/agentic.md):
//! tells it who it acts for — the caller's permissions on the dataset,
//! which every tool call is checked against — and stores the runs of the
//! skills it loaded, once the loop is over.

use recall_core::{Dataset, RecallError, Result, User};
use recall_retrievers::AgentCaller;

use super::request::RecallRequest;
use crate::Engine;

/// The session a run is recorded under when the request names none.
const AGENTIC_SESSION: &str = "agentic";

impl Engine {
    /// The caller of a loop on `dataset`: the permissions held on it.
    pub(crate) async fn agent_caller(
        &self,
        user: &User,
        dataset: &Dataset,
        request: &RecallRequest,
    ) -> Result<AgentCaller> {
        let access = self.relational.datasets.accessible_datasets(user).await?;
        let permissions = access
            .into_iter()
            .find(|a| a.dataset.id == dataset.id)
            .map(|a| a.permissions)
            .ok_or_else(|| RecallError::permission_denied(recall_core::Permission::Read))?;
        Ok(AgentCaller {
            user_id: user.id,
            permissions,
            session_id: request.options.session_id.clone(),
            skill_runs: Default::default(),
        })
    }

    /// Stores the runs a loop left (a read that writes: each run is a
    /// `SkillRun` node and its task vector). A failing write is logged and
    /// the search goes on.
    pub(crate) async fn record_agent_runs(&self, dataset: &Dataset, caller: &AgentCaller) {
        let runs = match caller.skill_runs.lock() {
            Ok(mut runs) => std::mem::take(&mut *runs),
            Err(_) => return,
        };
        let session = caller.session_id.as_deref().unwrap_or(AGENTIC_SESSION);
        for run in runs {
            if let Err(e) = self.store_skill_run(dataset, &dataset.name, Some(session), run).await {
                tracing::warn!(error = %e, dataset = %dataset.id, "an agentic skill run could not be recorded");
            }
        }
    }
}
