use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use recall_core::ports::{EmbeddingSpec, NodeSetFilter, ScoredResult, VectorRecord, VectorStore};
use recall_core::{DatasetId, RecallError, Result};
use tokio::sync::RwLock;
use uuid::Uuid;

struct Collection {
    spec: EmbeddingSpec,
    rows: HashMap<DatasetId, BTreeMap<Uuid, VectorRecord>>,
}

/// Vector collections held in memory, searched exactly by cosine distance.
#[derive(Default)]
pub struct MemoryVectorStore {
    collections: RwLock<HashMap<String, Collection>>,
}

impl MemoryVectorStore {
    pub fn new() -> Self {
        Self::default()
    }
}

/// 1 − cosine similarity; 1.0 when either vector is all zeros.
pub fn cosine_distance(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 1.0;
    }
    1.0 - dot / (na.sqrt() * nb.sqrt())
}

fn mismatch(dataset: DatasetId, stored: &EmbeddingSpec, model: &str, dims: usize) -> RecallError {
    RecallError::embedding_mismatch(dataset, stored, model, dims)
}

#[async_trait]
impl VectorStore for MemoryVectorStore {
    fn name(&self) -> &'static str {
        "memory-vector"
    }

    async fn ensure_collection(&self, dataset: DatasetId, collection: &str, spec: &EmbeddingSpec) -> Result<()> {
        let mut cols = self.collections.write().await;
        match cols.get(collection) {
            Some(existing) if existing.spec != *spec => {
                Err(mismatch(dataset, &existing.spec, &spec.model, spec.dimensions))
            }
            Some(_) => Ok(()),
            None => {
                cols.insert(collection.to_string(), Collection { spec: spec.clone(), rows: HashMap::new() });
                Ok(())
            }
        }
    }

    async fn collection_spec(&self, collection: &str) -> Result<Option<EmbeddingSpec>> {
        Ok(self.collections.read().await.get(collection).map(|c| c.spec.clone()))
    }

    async fn has_collection(&self, dataset: DatasetId, collection: &str) -> Result<bool> {
        Ok(self
            .collections
            .read()
            .await
            .get(collection)
            .and_then(|c| c.rows.get(&dataset))
            .is_some_and(|rows| !rows.is_empty()))
    }

    async fn upsert(&self, dataset: DatasetId, collection: &str, records: Vec<VectorRecord>) -> Result<()> {
        let mut cols = self.collections.write().await;
        let col = cols
            .get_mut(collection)
            .ok_or_else(|| RecallError::NotFound(format!("Vector collection '{collection}' does not exist.")))?;
        if let Some(bad) = records.iter().find(|r| r.vector.len() != col.spec.dimensions) {
            return Err(mismatch(dataset, &col.spec, "<input vectors>", bad.vector.len()));
        }
        let rows = col.rows.entry(dataset).or_default();
        for record in records {
            rows.insert(record.id, record);
        }
        Ok(())
    }

    async fn search(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<ScoredResult>> {
        let cols = self.collections.read().await;
        let Some(col) = cols.get(collection) else {
            return Ok(Vec::new());
        };
        if query.len() != col.spec.dimensions {
            return Err(mismatch(dataset, &col.spec, "<query vector>", query.len()));
        }
        let Some(rows) = col.rows.get(&dataset) else {
            return Ok(Vec::new());
        };
        let mut hits: Vec<ScoredResult> = rows
            .values()
            .filter(|r| filter.as_ref().is_none_or(|f| f.matches(&r.belongs_to_set)))
            .map(|r| ScoredResult { id: r.id, score: cosine_distance(query, &r.vector), payload: r.payload.clone() })
            .collect();
        hits.sort_by(|a, b| a.score.total_cmp(&b.score));
        if let Some(limit) = limit {
            hits.truncate(limit);
        }
        Ok(hits)
    }

    async fn count(&self, dataset: DatasetId, collection: &str) -> Result<u64> {
        Ok(self
            .collections
            .read()
            .await
            .get(collection)
            .and_then(|c| c.rows.get(&dataset))
            .map_or(0, |rows| rows.len() as u64))
    }

    async fn delete(&self, dataset: DatasetId, collection: &str, ids: &[Uuid]) -> Result<()> {
        let mut cols = self.collections.write().await;
        if let Some(rows) = cols.get_mut(collection).and_then(|c| c.rows.get_mut(&dataset)) {
            for id in ids {
                rows.remove(id);
            }
        }
        Ok(())
    }

    async fn collections(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self.collections.read().await.keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    async fn rows(&self, collection: &str) -> Result<Vec<(DatasetId, VectorRecord)>> {
        let cols = self.collections.read().await;
        Ok(cols
            .get(collection)
            .map(|c| c.rows.iter().flat_map(|(dataset, rows)| rows.values().map(|r| (*dataset, r.clone()))).collect())
            .unwrap_or_default())
    }

    async fn replace_collection(
        &self,
        collection: &str,
        spec: &EmbeddingSpec,
        rows: Vec<(DatasetId, VectorRecord)>,
    ) -> Result<()> {
        spec.check_rows(&rows)?;
        let mut replacement = Collection { spec: spec.clone(), rows: HashMap::new() };
        for (dataset, record) in rows {
            replacement.rows.entry(dataset).or_default().insert(record.id, record);
        }
        // One write lock: readers see the old collection or the new one.
        self.collections.write().await.insert(collection.to_string(), replacement);
        Ok(())
    }

    async fn drop_collection(&self, collection: &str) -> Result<()> {
        self.collections.write().await.remove(collection);
        Ok(())
    }

    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        let mut cols = self.collections.write().await;
        for col in cols.values_mut() {
            col.rows.remove(&dataset);
        }
        Ok(())
    }
}
