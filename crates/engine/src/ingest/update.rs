//! `update()`: a document's content replaced in place (docs/ingestion.md,
//! "Updating a document"). The document keeps its data id; its old version
//! is forgotten as `forget_document` would, and the new one is built. Recall
//! always rebuilds the whole document (Cognee's incremental, chunk-level
//! update is reported as not available).

use std::time::Instant;

use recall_core::{ids, DataStatus, DatasetId, DatasetRef, Permission, RecallError, Result, User};
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::progress::NoProgress;
use super::remember::{load, RememberInput};
use crate::Engine;

/// What an update did (Cognee's `UpdateResult`). The chunk counts are null
/// for a full rebuild.
#[derive(Debug, Clone, Serialize)]
pub struct UpdateOutcome {
    /// `unchanged` (same content) or `full_rebuild`.
    pub status: String,
    pub regions: Option<u64>,
    pub deleted_chunks: Option<u64>,
    pub added_chunks: Option<u64>,
    pub reused_chunks: Option<u64>,
    pub redated_chunks: Option<u64>,
    pub kept_chunks: Option<u64>,
    pub reindexed_chunks: Option<u64>,
    pub total_chunks: Option<u64>,
    pub data_id: Uuid,
    pub dataset_id: DatasetId,
    pub duration_seconds: f64,
    pub pipeline_run_id: Option<Uuid>,
    /// Why the update was not incremental: `{"reason", "detail"}`.
    pub fallback: Option<Value>,
    pub error: Option<Value>,
}

impl Engine {
    /// Replaces document `data_id` of `dataset` with `input` (the caller
    /// needs `write`). Unknown document: `UpdateTargetNotFoundError` (404).
    /// The same content is `unchanged` and touches nothing.
    ///
    /// The old version is forgotten before the new one is stored: a crash
    /// in between leaves the dataset without the document (remember it
    /// again); nothing else is lost.
    pub async fn update_document(
        &self,
        user: &User,
        dataset: DatasetId,
        data_id: Uuid,
        input: RememberInput,
    ) -> Result<UpdateOutcome> {
        let started = Instant::now();
        let mut loaded = crate::blocking(move || load(&input).map(|l| vec![l])).await?;
        let dataset = self.access.authorize(user, &DatasetRef::Id(dataset), Permission::Write).await?;
        let old = self.relational.data.list_data(dataset.id).await?.into_iter().find(|i| i.id == data_id).ok_or_else(
            || RecallError::UpdateTargetNotFound(format!("Data item {data_id} not found in dataset {}.", dataset.id)),
        )?;
        let outcome = |status: &str, run: Option<Uuid>, fallback: Option<Value>| UpdateOutcome {
            status: status.into(),
            regions: None,
            deleted_chunks: None,
            added_chunks: None,
            reused_chunks: None,
            redated_chunks: None,
            kept_chunks: None,
            reindexed_chunks: None,
            total_chunks: None,
            data_id,
            dataset_id: dataset.id,
            duration_seconds: started.elapsed().as_secs_f64(),
            pipeline_run_id: run,
            fallback,
            error: None,
        };
        let Some(new) = loaded.first_mut() else {
            return Err(RecallError::invalid_input("An update needs the document's new content."));
        };
        if ids::content_hash(new.text.as_bytes()) == old.content_hash && old.status == DataStatus::Completed {
            return Ok(outcome("unchanged", None, None));
        }
        new.id = Some(data_id);
        self.forget_item(dataset.clone(), old).await?;
        let (_, items) = self.add(user, &dataset, &loaded, &NoProgress).await?;
        let items = items.into_iter().zip(loaded.into_iter().map(|l| l.text)).collect();
        let built = self.cognify_stage(&dataset, items, &NoProgress).await?;
        let fallback = json!({
            "reason": "disabled",
            "detail": "Recall rebuilds an updated document in full; chunk-level incremental updates are not available."
        });
        Ok(outcome("full_rebuild", Some(built.pipeline_run_id), Some(fallback)))
    }
}
