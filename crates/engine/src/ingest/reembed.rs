//! `reembed`: moving a dataset's vector collections to the configured
//! embedding model, from the texts stored with the vectors
//! (docs/ingestion.md, "Changing the embedding model").
//!
//! A collection records one model for all its rows, whatever dataset they
//! belong to, so a collection moves whole: every dataset with rows in it is
//! re-embedded with it (the caller must be able to write each). Per
//! collection:
//!
//! 1. rows already on the configured model: nothing to do;
//! 2. otherwise every row's `text` is embedded again into a staging
//!    collection (`<name>__reembed`) in batches — a crash loses at most the
//!    batch in flight, and the next run resumes after the rows already staged;
//! 3. the staging rows replace the collection in one step (readers see the
//!    old collection or the new one), and the staging collection is dropped.
//!
//! Running it again is harmless: a collection already on the model is left
//! alone (and a staging leftover of a finished run removed).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use recall_core::ports::{EmbeddingSpec, VectorRecord};
use recall_core::{DatasetId, DatasetRef, RecallError, Result, User};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ingest::graph_rows::EmbedRow;
use crate::Engine;

/// The suffix of a collection's staging copy while it is re-embedded.
pub const STAGING_SUFFIX: &str = "__reembed";

/// Rows embedded and written to the staging collection at a time.
const STAGE_ROWS: usize = 1_024;

/// What happened to one collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReembedCollection {
    pub name: String,
    /// The model the rows came from (the configured one when `status` is `current`).
    pub from_model: String,
    /// `current` (nothing to do) or `reembedded`.
    pub status: String,
    /// Rows in the collection (every dataset in it).
    pub rows: usize,
    /// Rows embedded by this run.
    pub embedded: usize,
    /// Rows an interrupted run had already staged, kept.
    pub resumed: usize,
    /// Datasets whose rows moved with the collection.
    pub datasets: Vec<DatasetId>,
}

/// What a reembed did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReembedOutcome {
    pub dataset_id: DatasetId,
    pub dataset_name: String,
    pub model: String,
    pub dimensions: usize,
    pub collections: Vec<ReembedCollection>,
}

/// Reports a reembed's progress (a CLI shows a bar).
pub trait ReembedProgress: Send + Sync {
    /// A collection starts: `total` rows, `done` of them staged already.
    fn collection(&self, _name: &str, _total: usize, _done: usize) {}
    /// `rows` more rows embedded.
    fn embedded(&self, _rows: usize) {}
}

impl ReembedProgress for crate::NoProgress {}

impl Engine {
    /// Re-embeds every collection the dataset has rows in that was built
    /// with another model than the configured one (see the module docs).
    pub async fn reembed(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        progress: &dyn ReembedProgress,
    ) -> Result<ReembedOutcome> {
        // An unknown name is a 404 (a write would create the dataset).
        let found = self.access.dataset(user, dataset).await?;
        let dataset = self.access.writable(user, &DatasetRef::Id(found.id)).await?;
        let spec = self.embedder.spec();
        let names = self.vectors.collections().await?;
        let mut collections = Vec::new();
        for name in names.iter().filter(|n| !n.ends_with(STAGING_SUFFIX)) {
            if !self.vectors.has_collection(dataset.id, name).await? {
                continue;
            }
            let Some(stored) = self.vectors.collection_spec(name).await? else { continue };
            let staging = format!("{name}{STAGING_SUFFIX}");
            if stored == spec {
                if names.contains(&staging) {
                    // Left by a run that replaced the collection, then stopped.
                    self.vectors.drop_collection(&staging).await?;
                }
                collections.push(ReembedCollection {
                    name: name.to_string(),
                    from_model: stored.model,
                    status: "current".into(),
                    rows: 0,
                    embedded: 0,
                    resumed: 0,
                    datasets: vec![dataset.id],
                });
                continue;
            }
            collections.push(self.reembed_collection(user, name, &staging, &stored, &spec, progress).await?);
        }
        let mut touched: BTreeSet<DatasetId> = BTreeSet::new();
        for c in collections.iter().filter(|c| c.status == "reembedded") {
            touched.extend(c.datasets.iter().copied());
        }
        for id in touched {
            // Other processes drop what they hold of the old vectors.
            self.bump_data_version(id).await?;
        }
        Ok(ReembedOutcome {
            dataset_id: dataset.id,
            dataset_name: dataset.name,
            model: spec.model,
            dimensions: spec.dimensions,
            collections,
        })
    }

    async fn reembed_collection(
        &self,
        user: &User,
        name: &str,
        staging: &str,
        stored: &EmbeddingSpec,
        spec: &EmbeddingSpec,
        progress: &dyn ReembedProgress,
    ) -> Result<ReembedCollection> {
        let rows = self.vectors.rows(name).await?;
        let datasets: BTreeSet<DatasetId> = rows.iter().map(|(d, _)| *d).collect();
        for other in &datasets {
            self.access.writable(user, &DatasetRef::Id(*other)).await.map_err(|_| {
                RecallError::PermissionDenied(format!(
                    "Collection '{name}' also holds dataset {other}, which you may not write: its vectors would be rewritten too, so the collection cannot be re-embedded by you."
                ))
            })?;
        }
        // A staging copy from an earlier model change is of no use.
        if let Some(old) = self.vectors.collection_spec(staging).await? {
            if old != *spec {
                self.vectors.drop_collection(staging).await?;
            }
        }
        let first = datasets.iter().next().copied().unwrap_or(DatasetId(Uuid::nil()));
        self.vectors.ensure_collection(first, staging, spec).await?;
        let staged: HashSet<(DatasetId, Uuid)> =
            self.vectors.rows(staging).await?.into_iter().map(|(d, r)| (d, r.id)).collect();
        let total = rows.len();
        let todo: Vec<(DatasetId, VectorRecord)> =
            rows.into_iter().filter(|(d, r)| !staged.contains(&(*d, r.id))).collect();
        let resumed = total - todo.len();
        progress.collection(name, total, resumed);
        for part in todo.chunks(STAGE_ROWS) {
            // Embedded as cognify embeds: in the embedder's batches, order kept.
            let rows = part
                .iter()
                .map(|(_, r)| {
                    let text = r.payload.get("text").and_then(|t| t.as_str()).ok_or_else(|| {
                        RecallError::invalid_input(format!(
                            "Row {} of collection '{name}' has no stored text to embed again.",
                            r.id
                        ))
                    })?;
                    Ok((r.id, text.to_string(), r.payload.clone(), r.belongs_to_set.clone()))
                })
                .collect::<Result<Vec<EmbedRow>>>()?;
            let mut by_dataset: BTreeMap<DatasetId, Vec<VectorRecord>> = BTreeMap::new();
            for ((dataset, _), record) in part.iter().zip(self.embed_rows(rows).await?) {
                by_dataset.entry(*dataset).or_default().push(record);
            }
            for (dataset, records) in by_dataset {
                self.vectors.upsert(dataset, staging, records).await?;
            }
            progress.embedded(part.len());
        }
        let finished = self.vectors.rows(staging).await?;
        if finished.len() != total {
            return Err(RecallError::backend_msg(format!(
                "re-embedding '{name}': {} rows staged for {total} (a concurrent write?); run reembed again",
                finished.len()
            )));
        }
        self.vectors.replace_collection(name, spec, finished).await?;
        self.vectors.drop_collection(staging).await?;
        Ok(ReembedCollection {
            name: name.to_string(),
            from_model: stored.model.clone(),
            status: "reembedded".into(),
            rows: total,
            embedded: total - resumed,
            resumed,
            datasets: datasets.into_iter().collect(),
        })
    }
}
