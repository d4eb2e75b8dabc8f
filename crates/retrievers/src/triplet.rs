//! TRIPLET_COMPLETION (docs/retrievers.md, "The types"): vector search over the
//! precomputed `Triplet_text` collection, no graph expansion, one LLM answer.

use async_trait::async_trait;
use recall_core::model::collections::TRIPLET_TEXT;
use recall_core::{RecallError, Result};
use serde_json::Value;

use crate::chunks::{hit_payload, passages};
use crate::rag::passage_answer;
use crate::{completion, prompts, PromptPreview, RetrievalContext, RetrievedContext, Retriever, RetrieverOptions};

#[derive(Debug, Clone)]
pub struct TripletRetriever {
    pub default_top_k: usize,
}

impl Default for TripletRetriever {
    fn default() -> Self {
        Self { default_top_k: 5 }
    }
}

#[async_trait]
impl Retriever for TripletRetriever {
    async fn get_retrieved_objects(
        &self,
        ctx: &RetrievalContext,
        query: &str,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        if !ctx.vectors.has_collection(ctx.dataset.id, TRIPLET_TEXT).await? {
            return Err(RecallError::NoData(
                "In order to use TRIPLET_COMPLETION, triplet embeddings must exist: set TRIPLET_EMBEDDING=true and run cognify on this dataset.".into(),
            ));
        }
        let vector = ctx.embed_query(query).await?;
        let limit = options.top_k.unwrap_or(self.default_top_k);
        let hits =
            ctx.vectors.search(ctx.dataset.id, TRIPLET_TEXT, &vector, Some(limit), options.node_set_filter()).await?;
        Ok(hits.into_iter().map(hit_payload).collect())
    }

    async fn get_context_from_objects(
        &self,
        _ctx: &RetrievalContext,
        _query: &str,
        objects: &[Value],
        _options: &RetrieverOptions,
    ) -> Result<RetrievedContext> {
        Ok(RetrievedContext::Text(passages(objects)))
    }

    async fn get_completion_from_context(
        &self,
        ctx: &RetrievalContext,
        query: &str,
        objects: &[Value],
        context: &RetrievedContext,
        options: &RetrieverOptions,
    ) -> Result<Option<Vec<Value>>> {
        passage_answer(ctx, "TRIPLET_COMPLETION", query, objects, context, options).await
    }

    async fn prompt_preview(
        &self,
        _ctx: &RetrievalContext,
        query: &str,
        context: &RetrievedContext,
        options: &RetrieverOptions,
    ) -> Result<Option<PromptPreview>> {
        completion::preview(prompts::CONTEXT_FOR_QUESTION, query, context, options)
    }

    fn is_generative(&self) -> bool {
        true
    }
}
