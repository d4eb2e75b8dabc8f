//! CHUNKS: vector search over `DocumentChunk_text` (docs/retrievers.md, "The types").

use async_trait::async_trait;
use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::{RecallError, Result};

use serde_json::{json, Value};

use crate::RetrieverCall;
use crate::{DatasetPorts, Retriever};

/// Plain vector search over chunks; no LLM.
#[derive(Debug, Clone)]
pub struct ChunksRetriever {
    /// Used when the caller passes no `top_k`.
    pub default_top_k: usize,
}

impl Default for ChunksRetriever {
    fn default() -> Self {
        Self { default_top_k: 5 }
    }
}

/// The hits of one collection as payload dicts with `id` and `score` (the
/// raw distance). A collection the dataset has no rows in is `NoDataError`.
pub(crate) async fn vector_payloads(
    ctx: &DatasetPorts,
    collection: &str,
    query: &str,
    limit: usize,
    filter: Option<recall_core::ports::NodeSetFilter>,
) -> Result<Vec<Value>> {
    let dataset = ctx.dataset.id;
    let vector = ctx.embed_query(query).await?;
    let hits = ctx.vectors.search(dataset, collection, &vector, Some(limit), filter).await?;
    // Only an empty answer needs to know whether the dataset has rows at all
    // (a node-set filter may have excluded them all): one row count less on the hot path.
    if hits.is_empty() && limit > 0 && !ctx.vectors.has_collection(dataset, collection).await? {
        return Err(no_chunks());
    }
    Ok(hits.into_iter().map(hit_payload).collect())
}

/// A hit's payload with `id` filled in and `score` set.
pub(crate) fn hit_payload(hit: recall_core::ports::ScoredResult) -> Value {
    let mut payload = hit.payload;
    payload.entry("id").or_insert_with(|| json!(hit.id.to_string()));
    payload.insert("score".into(), json!(hit.score));
    Value::Object(payload)
}

/// The `text` of each object, joined by newlines.
pub(crate) fn passages(objects: &[Value]) -> String {
    objects.iter().filter_map(|o| o.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
}

/// Raised when the dataset has no chunk vectors at all.
pub(crate) fn no_chunks() -> RecallError {
    RecallError::NoData("No data found in the system, please add data first.".into())
}

#[async_trait]
impl Retriever for ChunksRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let limit = options.top_k().unwrap_or(self.default_top_k);
        vector_payloads(ctx, DOCUMENT_CHUNK_TEXT, query, limit, options.node_set_filter()).await
    }
}
