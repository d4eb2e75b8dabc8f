//! The steps of remember on their own — `add` (store items), `cognify`
//! (build them), `improve` (apply ratings, learn agent lessons) — and the
//! document-level `update` and the dataset-level `reembed`.

use recall_core::{Dataset, DatasetId, DatasetRef, Permission, Result, User};
use recall_engine::{
    AddOutcome, ImproveOutcome, ReembedOutcome, ReembedProgress, RememberInput, RememberOutcome, RememberProgress,
    UpdateOutcome,
};
use uuid::Uuid;

use super::Application;

/// A cognify of one dataset: its outcome, or `None` while it runs in the background.
#[derive(Debug)]
pub struct CognifyRun {
    pub dataset: Dataset,
    pub outcome: Option<RememberOutcome>,
}

/// What `improve` applies, and whether it waits.
#[derive(Debug, Clone)]
pub struct ImproveRequest {
    pub dataset: DatasetRef,
    /// How far one rating moves a weight, in (0, 1] (default: configured).
    pub alpha: Option<f64>,
    /// Sessions whose trace steps to read for agent lessons.
    pub session_ids: Vec<String>,
    pub background: bool,
}

impl Application {
    /// Stores the inputs as pending items of the dataset (created when
    /// missing, by name) without building them.
    pub async fn add(&self, caller: &User, dataset: DatasetRef, inputs: &[RememberInput]) -> Result<AddOutcome> {
        self.engine.add_data(caller, dataset, inputs).await
    }

    /// Builds the datasets' pending items and refreshes their indexes. The
    /// caller needs `write` on every dataset before any work starts; in the
    /// background each build is tracked work.
    pub async fn cognify(
        &self,
        caller: &User,
        datasets: &[DatasetRef],
        background: bool,
        progress: &dyn RememberProgress,
    ) -> Result<Vec<CognifyRun>> {
        let mut checked = Vec::with_capacity(datasets.len());
        for target in datasets {
            checked.push(self.engine.access().writable(caller, target).await?);
        }
        let mut runs = Vec::with_capacity(checked.len());
        for dataset in checked {
            let target = DatasetRef::Id(dataset.id);
            if background {
                let (engine, user) = (self.engine.clone(), caller.clone());
                self.background.spawn(caller, &dataset.name, "cognify", async move {
                    engine.cognify(&user, &target, &recall_engine::NoProgress).await.map(|_| ())
                });
                runs.push(CognifyRun { dataset, outcome: None });
            } else {
                let outcome = self.engine.cognify(caller, &target, progress).await?;
                runs.push(CognifyRun { dataset, outcome: Some(outcome) });
            }
        }
        Ok(runs)
    }

    /// Applies the dataset's pending answer ratings to its graph and reads
    /// the sessions' trace steps for agent lessons. In the background the
    /// caller's `write` is checked first and the answer says `running`.
    pub async fn improve(&self, caller: &User, request: ImproveRequest) -> Result<ImproveOutcome> {
        let ImproveRequest { dataset, alpha, session_ids, background } = request;
        if !background {
            return self.engine.improve_sessions(caller, &dataset, alpha, &session_ids).await;
        }
        let dataset = self.engine.access().authorize(caller, &dataset, Permission::Write).await?;
        let running = ImproveOutcome::running(&dataset, session_ids.clone());
        let (engine, user, target) = (self.engine.clone(), caller.clone(), DatasetRef::Id(dataset.id));
        self.background.spawn(caller, &dataset.name, "improve", async move {
            engine.improve_sessions(&user, &target, alpha, &session_ids).await.map(|_| ())
        });
        Ok(running)
    }

    /// Rebuilds one document of a dataset in place from new content; it keeps its id.
    pub async fn update(
        &self,
        caller: &User,
        dataset: DatasetId,
        data_id: Uuid,
        input: RememberInput,
    ) -> Result<UpdateOutcome> {
        self.engine.update_document(caller, dataset, data_id, input).await
    }

    /// Re-embeds a dataset's vectors with the configured model.
    pub async fn reembed(
        &self,
        caller: &User,
        dataset: &DatasetRef,
        progress: &dyn ReembedProgress,
    ) -> Result<ReembedOutcome> {
        self.engine.reembed(caller, dataset, progress).await
    }
}
