//! `forget`: one document (by name or data id), a whole dataset, or
//! everything the caller may delete, with everything derived from it.

use recall_core::{Dataset, DatasetRef, Result, User};
use recall_engine::ForgetOutcome;

use super::Application;

/// What to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForgetRequest {
    /// One document of a dataset: its name or its data id.
    Document { dataset: DatasetRef, document: String },
    /// A dataset, by name among the caller's own or by id.
    Dataset(DatasetRef),
    /// Every dataset the caller may delete.
    Everything,
}

/// What a forget removed.
#[derive(Debug, Clone)]
pub enum ForgetReport {
    Document { dataset: Dataset, outcome: ForgetOutcome },
    Dataset(Dataset),
    Everything { datasets_removed: usize },
}

impl Application {
    /// Deletes for `caller`, who needs `delete` on the dataset (a name is
    /// looked up among the caller's own: 404; an id without the grant: 403).
    pub async fn forget(&self, caller: &User, request: ForgetRequest) -> Result<ForgetReport> {
        match request {
            ForgetRequest::Document { dataset, document } => {
                let dataset = self.engine.access().deletable(caller, &dataset).await?;
                let outcome = self.engine.forget_document(caller, DatasetRef::Id(dataset.id), &document).await?;
                Ok(ForgetReport::Document { dataset, outcome })
            }
            ForgetRequest::Dataset(target) => {
                Ok(ForgetReport::Dataset(self.engine.forget_dataset(caller, target).await?))
            }
            ForgetRequest::Everything => {
                Ok(ForgetReport::Everything { datasets_removed: self.engine.forget_everything(caller).await? })
            }
        }
    }
}
