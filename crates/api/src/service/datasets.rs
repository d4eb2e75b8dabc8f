//! Datasets: listing, creating, reading their items, statuses and graph,
//! and grants on them. Every read checks the caller's permission on the
//! dataset (docs/access.md).

use recall_core::{DataItem, Dataset, DatasetId, DatasetRef, Permission, Result, Subgraph, User};
use recall_engine::{DatasetListing, DatasetStatus, EXPORT_PAGE};

use super::Application;
use crate::{GraphExport, GraphShape};

/// A permission given to (or taken from) a user on datasets.
#[derive(Debug, Clone)]
pub struct GrantRequest {
    pub datasets: Vec<DatasetRef>,
    pub grantee: User,
    pub permission: Permission,
    /// `true` gives the permission, `false` takes it away.
    pub give: bool,
}

impl Application {
    /// The datasets the caller owns or was shared, with the owner and the
    /// caller's permissions.
    pub async fn datasets(&self, caller: &User) -> Result<Vec<DatasetListing>> {
        self.engine.access().datasets(caller).await
    }

    /// The caller's dataset of this name, created when missing.
    pub async fn create_dataset(&self, caller: &User, name: &str) -> Result<Dataset> {
        self.engine.access().create_dataset(caller, name).await
    }

    /// A dataset the caller may read: by name among the caller's own (404), by id (403).
    pub async fn dataset(&self, caller: &User, target: &DatasetRef) -> Result<Dataset> {
        self.engine.access().dataset(caller, target).await
    }

    /// A readable dataset's data items, oldest first: `limit` from `offset`.
    pub async fn dataset_data(
        &self,
        caller: &User,
        id: DatasetId,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<DataItem>> {
        Ok(self.engine.dataset_data(caller, id, limit, offset).await?.1)
    }

    /// How many data items a readable dataset holds.
    pub async fn dataset_data_count(&self, caller: &User, id: DatasetId) -> Result<u64> {
        self.engine.dataset_data_count(caller, id).await
    }

    /// Each dataset's latest run of each pipeline (every readable dataset when `ids` is empty).
    pub async fn dataset_statuses(
        &self,
        caller: &User,
        ids: &[DatasetId],
        pipelines: &[String],
    ) -> Result<Vec<DatasetStatus>> {
        self.engine.dataset_statuses(caller, ids, pipelines).await
    }

    /// A readable dataset's whole graph in memory (the graph page draws a part of it).
    pub async fn dataset_graph(&self, caller: &User, target: &DatasetRef) -> Result<(Dataset, Subgraph)> {
        self.engine.dataset_graph(caller, target).await
    }

    /// A readable dataset's graph as an export that streams a page at a time.
    pub async fn export_graph(&self, caller: &User, target: &DatasetRef, shape: GraphShape) -> Result<GraphExport> {
        let (_, pages) = self.engine.dataset_graph_pages(caller, target, EXPORT_PAGE).await?;
        Ok(GraphExport::new(pages, shape))
    }

    /// Gives or takes a permission on datasets: the caller needs `share`
    /// on every one before anything changes (403, or 404 for a name).
    pub async fn grant(&self, caller: &User, request: GrantRequest) -> Result<Vec<Dataset>> {
        let GrantRequest { datasets, grantee, permission, give } = request;
        self.engine.access().set_permission(caller, &datasets, &grantee, permission, give).await
    }
}
