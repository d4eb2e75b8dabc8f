//! RAG_COMPLETION (CompletionRetriever, docs/retrievers.md): chunk vector
//! search, passages joined by newlines, one LLM answer.

use async_trait::async_trait;
use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::Result;
use serde_json::Value;

use crate::chunks::{passages, vector_payloads};
use crate::evidence::{append_block, chunk_evidence_block, chunk_segments, EvidenceReference};
use crate::{completion, prompts, PromptPreview, RetrievalContext, RetrievedContext, Retriever, RetrieverOptions};

#[derive(Debug, Clone)]
pub struct CompletionRetriever {
    /// Direct-construction default (recall passes 15).
    pub default_top_k: usize,
}

impl Default for CompletionRetriever {
    fn default() -> Self {
        Self { default_top_k: 1 }
    }
}

#[async_trait]
impl Retriever for CompletionRetriever {
    async fn get_retrieved_objects(
        &self,
        ctx: &RetrievalContext,
        query: &str,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        let limit = options.top_k.unwrap_or(self.default_top_k);
        vector_payloads(ctx, DOCUMENT_CHUNK_TEXT, query, limit, options.node_set_filter()).await
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
        passage_answer(ctx, "RAG_COMPLETION", query, objects, context, options).await
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

    async fn get_context_evidence(
        &self,
        ctx: &RetrievalContext,
        objects: &[Value],
        _options: &RetrieverOptions,
    ) -> Result<Vec<EvidenceReference>> {
        Ok(chunk_segments(objects, &ctx.dataset.id.to_string()))
    }

    fn is_generative(&self) -> bool {
        true
    }
}

/// The answer over passages (`context_for_question.txt`), shared by RAG and
/// TRIPLET completion: nothing for an empty context, the chunk Evidence block
/// when references are asked for.
pub(crate) async fn passage_answer(
    ctx: &RetrievalContext,
    who: &str,
    query: &str,
    objects: &[Value],
    context: &RetrievedContext,
    options: &RetrieverOptions,
) -> Result<Option<Vec<Value>>> {
    let Some(prompt) = completion::preview(prompts::CONTEXT_FOR_QUESTION, query, context, options)? else {
        return Ok(Some(Vec::new()));
    };
    let answer = completion::final_answer(ctx, who, &prompt, options).await?;
    Ok(Some(vec![with_chunk_evidence(answer, objects, options)]))
}

/// Appends the chunk Evidence block to a string answer when references are asked for.
pub(crate) fn with_chunk_evidence(answer: Value, chunks: &[Value], options: &RetrieverOptions) -> Value {
    match answer {
        Value::String(text) if options.include_references => {
            Value::String(append_block(&text, chunk_evidence_block(&text, chunks)))
        }
        other => other,
    }
}
