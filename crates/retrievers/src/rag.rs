//! The passage-answer family (docs/retrievers.md): passages joined by
//! newlines, one LLM answer. RAG_COMPLETION (`CompletionRetriever`) searches
//! the chunk vectors; TRIPLET_COMPLETION (triplet.rs) the triplet texts.

use async_trait::async_trait;
use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::Result;
use serde_json::Value;

use crate::chunks::vector_payloads;
use crate::evidence::{append_block, chunk_evidence_block, chunk_segments, EvidenceReference};
use crate::RetrieverCall;
use crate::{completion, merge, prompts, DatasetPorts, LlmContext, PromptPreview, Retriever, RetrieverOptions};

/// What sets a passage-answer type apart: where its passages come from.
/// The context (the passages' texts), the answer over
/// `context_for_question.txt` and the preview are the family's, in
/// [`PassageFamily`].
#[async_trait]
pub trait PassageStrategy: Send + Sync {
    /// The type's name in logs and provider errors.
    const NAME: &'static str;
    /// Whether `include_references` lists the passages as chunk evidence.
    const CHUNK_EVIDENCE: bool;

    /// Step 1: the passages, as payload dicts with `text`.
    async fn passages(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Value>>;
}

/// A passage-answer retriever: its strategy's passages, joined by newlines,
/// answered in one LLM call.
#[derive(Debug, Clone, Default)]
pub struct PassageFamily<S>(pub S);

#[async_trait]
impl<S: PassageStrategy> Retriever for PassageFamily<S> {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        self.0.passages(ctx, query, options).await
    }

    async fn get_completion_from_context(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
        context: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let Some(prompt) = completion::preview(prompts::CONTEXT_FOR_QUESTION, query, context, options)? else {
            return Ok(Some(Vec::new()));
        };
        let answer = completion::final_answer(ctx, S::NAME, &prompt, options).await?;
        Ok(Some(vec![with_chunk_evidence(answer, objects, options)]))
    }

    async fn prompt_preview(&self, call: &RetrieverCall<'_>, context: &LlmContext) -> Result<Option<PromptPreview>> {
        let (query, options) = (call.query, call.options);
        completion::preview(prompts::CONTEXT_FOR_QUESTION, query, context, options)
    }

    async fn get_context_evidence(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
    ) -> Result<Vec<EvidenceReference>> {
        let ctx = call.ctx;
        Ok(if S::CHUNK_EVIDENCE { chunk_segments(objects, &ctx.dataset.id.to_string()) } else { Vec::new() })
    }

    /// Passages merged by id, within what one lane returns.
    fn merge_retrieved_objects(
        &self,
        primary: Vec<Value>,
        secondary: Vec<Value>,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        Ok(merge::merge_lanes(primary, secondary, options.top_k(), merge::payload_identity))
    }

    fn is_generative(&self) -> bool {
        true
    }
}

/// RAG_COMPLETION: chunk vector search, one LLM answer.
pub type CompletionRetriever = PassageFamily<ChunkPassages>;

/// RAG_COMPLETION's passages: the nearest chunks.
#[derive(Debug, Clone)]
pub struct ChunkPassages {
    /// Direct-construction default (recall passes 15).
    pub default_top_k: usize,
}

impl Default for ChunkPassages {
    fn default() -> Self {
        Self { default_top_k: 1 }
    }
}

#[async_trait]
impl PassageStrategy for ChunkPassages {
    const NAME: &'static str = "RAG_COMPLETION";
    const CHUNK_EVIDENCE: bool = true;

    async fn passages(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Value>> {
        let limit = options.top_k().unwrap_or(self.default_top_k);
        vector_payloads(ctx, DOCUMENT_CHUNK_TEXT, query, limit, options.node_set_filter()).await
    }
}

/// Appends the chunk Evidence block to a string answer when references are asked for.
pub(crate) fn with_chunk_evidence(answer: Value, chunks: &[Value], options: &RetrieverOptions) -> Value {
    match answer {
        Value::String(text) if options.search.include_references => {
            Value::String(append_block(&text, chunk_evidence_block(&text, chunks)))
        }
        other => other,
    }
}
