//! TRIPLET_COMPLETION (docs/retrievers.md, "The types"): vector search over the
//! precomputed `Triplet_text` collection, no graph expansion, one LLM answer.

use async_trait::async_trait;
use recall_core::model::collections::TRIPLET_TEXT;
use recall_core::{RecallError, Result};
use serde_json::Value;

use crate::chunks::hit_payload;
use crate::rag::{PassageFamily, PassageStrategy};
use crate::{DatasetPorts, RetrieverOptions};

/// TRIPLET_COMPLETION: the nearest precomputed triplet texts, one LLM answer.
pub type TripletRetriever = PassageFamily<TripletPassages>;

/// TRIPLET_COMPLETION's passages: `Triplet_text` hits.
#[derive(Debug, Clone)]
pub struct TripletPassages {
    pub default_top_k: usize,
}

impl Default for TripletPassages {
    fn default() -> Self {
        Self { default_top_k: 5 }
    }
}

#[async_trait]
impl PassageStrategy for TripletPassages {
    const NAME: &'static str = "TRIPLET_COMPLETION";
    const CHUNK_EVIDENCE: bool = false;

    async fn passages(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Value>> {
        if !ctx.vectors.has_collection(ctx.dataset.id, TRIPLET_TEXT).await? {
            return Err(RecallError::NoData(
                "In order to use TRIPLET_COMPLETION, triplet embeddings must exist: set TRIPLET_EMBEDDING=true and run cognify on this dataset.".into(),
            ));
        }
        let vector = ctx.embed_query(query).await?;
        let limit = options.top_k().unwrap_or(self.default_top_k);
        let hits =
            ctx.vectors.search(ctx.dataset.id, TRIPLET_TEXT, &vector, Some(limit), options.node_set_filter()).await?;
        Ok(hits.into_iter().map(hit_payload).collect())
    }
}
