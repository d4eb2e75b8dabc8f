//! SUMMARIES: vector search over `TextSummary_text`, without a node filter
//! (docs/retrievers.md).

use async_trait::async_trait;
use recall_core::model::collections::TEXT_SUMMARY_TEXT;
use recall_core::Result;
use serde_json::Value;

use crate::chunks::vector_payloads;
use crate::Retriever;
use crate::RetrieverCall;

#[derive(Debug, Clone)]
pub struct SummariesRetriever {
    pub default_top_k: usize,
}

impl Default for SummariesRetriever {
    fn default() -> Self {
        Self { default_top_k: 5 }
    }
}

#[async_trait]
impl Retriever for SummariesRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        vector_payloads(ctx, TEXT_SUMMARY_TEXT, query, options.top_k().unwrap_or(self.default_top_k), None).await
    }
}
