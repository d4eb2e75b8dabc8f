//! A complete custom retriever: exact-phrase chunk search, registered in
//! place of the built-in CHUNKS_LEXICAL (see docs/custom-retriever.md).

use async_trait::async_trait;
use recall_core::model::node_types::DOCUMENT_CHUNK;
use recall_core::{RecallError, Result};
use recall_retrievers::{LlmContext, Retriever, RetrieverCall};
use serde_json::{json, Value};

/// Chunks that contain the query as an exact phrase (case-insensitive),
/// in graph order, at most `top_k` (default 10).
#[derive(Debug, Default)]
pub struct ExactPhraseRetriever;

#[async_trait]
impl Retriever for ExactPhraseRetriever {
    /// It reads chunks, never the graph's ranking: the engine need not load
    /// the dataset's sketch for it.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    /// Step 1: the raw objects — chunk payloads as JSON.
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let phrase = query.trim().trim_matches('"').to_lowercase();
        if phrase.is_empty() {
            return Err(RecallError::empty_query());
        }
        let chunks = ctx.graph.nodes_by_type(ctx.dataset.id, DOCUMENT_CHUNK).await?;
        if chunks.is_empty() {
            // "No data" errors let recall() explain which dataset was empty.
            return Err(RecallError::NoData("No chunks in this dataset.".into()));
        }
        let top_k = options.top_k().unwrap_or(10);
        Ok(chunks
            .into_iter()
            .filter(|n| {
                n.properties.get("text").and_then(Value::as_str).is_some_and(|t| t.to_lowercase().contains(&phrase))
            })
            .take(top_k)
            .map(|n| {
                let mut payload = n.properties;
                payload.insert("id".into(), json!(n.id.to_string()));
                Value::Object(payload)
            })
            .collect())
    }

    /// Step 2: what an LLM would read (and what `only_context` returns).
    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::List(
            objects.iter().filter_map(|o| o.get("text").and_then(Value::as_str)).map(str::to_string).collect(),
        ))
    }

    // Step 3 keeps the trait's default: a retrieval-only type returns its
    // objects, and each dict becomes one result item (its `text` is shown,
    // `score` kept if present).
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use recall_core::ports::RelationalPorts;
    use recall_core::{RecallResponse, SearchType};
    use recall_engine::{EngineBuilder, RecallRequest, RememberInput};
    use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};

    use super::*;

    #[tokio::test]
    async fn the_custom_retriever_replaces_chunks_lexical() {
        let engine = EngineBuilder::new(
            RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
            Arc::new(MemoryGraphStore::new()),
            Arc::new(MemoryVectorStore::new()),
            Arc::new(HashingEmbedder::new(64).unwrap_or_else(|e| panic!("{e}"))),
        )
        .register_retriever(SearchType::ChunksLexical, Arc::new(ExactPhraseRetriever))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let user = engine.relational().users.ensure_user("reader@example.com").await.unwrap_or_else(|e| panic!("{e}"));
        engine
            .remember(
                &user,
                "notes",
                &[RememberInput::text("Bees dance to share directions."), RememberInput::text("Ants follow trails.")],
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let results = engine
            .recall(&user, &RecallRequest::new("\"share directions\"").query_type(SearchType::ChunksLexical))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let texts: Vec<&str> = results.iter().map(RecallResponse::text).collect();
        assert_eq!(texts, vec!["Bees dance to share directions."]);
    }
}
