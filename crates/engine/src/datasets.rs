//! Dataset operations front ends offer beside remember and recall: create
//! one, page through its data items, read its pipelines' latest status.
//! Every call checks the caller's permission through the access module.

use recall_core::{DataItem, Dataset, DatasetId, DatasetRef, Permission, PipelineRunStatus, Result, User};

use crate::Engine;

/// The latest status of each asked pipeline, for one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetStatus {
    pub dataset: Dataset,
    /// `(pipeline name, latest status)`; a pipeline that never ran is absent.
    pub pipelines: Vec<(String, PipelineRunStatus)>,
}

impl Engine {
    /// A readable dataset's data items, oldest first: `limit` of them from
    /// `offset`. An unreadable or unknown id is 403.
    pub async fn dataset_data(
        &self,
        user: &User,
        dataset: DatasetId,
        limit: usize,
        offset: usize,
    ) -> Result<(Dataset, Vec<DataItem>)> {
        let dataset = self.access.authorize(user, &DatasetRef::Id(dataset), Permission::Read).await?;
        let mut items = self.relational.data.list_data(dataset.id).await?;
        items.sort_by_key(|i| i.created_at);
        let page = items.into_iter().skip(offset).take(limit).collect();
        Ok((dataset, page))
    }

    /// The number of data items in a readable dataset.
    pub async fn dataset_data_count(&self, user: &User, dataset: DatasetId) -> Result<u64> {
        let dataset = self.access.authorize(user, &DatasetRef::Id(dataset), Permission::Read).await?;
        self.relational.data.count_data(dataset.id).await
    }

    /// The latest run status of each of `pipelines` for these datasets (each
    /// readable, else 403), or for every readable dataset when `ids` is empty.
    pub async fn dataset_statuses(
        &self,
        user: &User,
        ids: &[DatasetId],
        pipelines: &[String],
    ) -> Result<Vec<DatasetStatus>> {
        let datasets = if ids.is_empty() {
            self.access.permitted(user, Permission::Read).await?
        } else {
            self.access.authorize_ids(user, ids, Permission::Read).await?
        };
        let mut out = Vec::with_capacity(datasets.len());
        for dataset in datasets {
            let runs = self.relational.runs.list_runs(dataset.id).await?;
            let pipelines = pipelines
                .iter()
                .filter_map(|p| {
                    runs.iter()
                        .filter(|r| &r.pipeline_name == p)
                        .max_by_key(|r| r.created_at)
                        .map(|r| (p.clone(), r.status))
                })
                .collect();
            out.push(DatasetStatus { dataset, pipelines });
        }
        Ok(out)
    }

    /// Deletes every dataset the caller may delete; the number deleted.
    pub async fn forget_everything(&self, user: &User) -> Result<usize> {
        let deletable = self.access.permitted(user, Permission::Delete).await?;
        for dataset in &deletable {
            self.forget_dataset(user, DatasetRef::Id(dataset.id)).await?;
        }
        Ok(deletable.len())
    }

    /// This engine with another chunk budget (words), for one request that
    /// asks for its own; the ports and caches stay shared.
    pub fn with_chunk_size(&self, words: usize) -> Result<Engine> {
        if words == 0 {
            return Err(recall_core::RecallError::invalid_input("chunk_size must be positive"));
        }
        let mut engine = self.clone();
        engine.config.chunk_size = words;
        Ok(engine)
    }
}
