//! Extraction and summaries by an LLM through the `LlmClient` port.

use std::sync::Arc;

use async_trait::async_trait;
use recall_core::ports::{ChatRequest, GraphExtractor, LlmClient, Summarizer};
use recall_core::{KnowledgeGraph, RecallError, Result};

/// System prompt for graph extraction (config/prompts/generate_graph_prompt.txt).
pub const GENERATE_GRAPH_PROMPT: &str = include_str!("../../../../../config/prompts/generate_graph_prompt.txt");
/// System prompt for chunk summaries (config/prompts/summarize_content.txt).
pub const SUMMARIZE_CONTENT_PROMPT: &str = include_str!("../../../../../config/prompts/summarize_content.txt");

/// Asks the LLM for a `KnowledgeGraph` as JSON-schema structured output,
/// retrying when the answer is not valid JSON of that shape.
pub struct LlmGraphExtractor {
    llm: Arc<dyn LlmClient>,
    /// Attempts per chunk when the answer does not parse.
    pub max_attempts: u32,
}

impl LlmGraphExtractor {
    pub fn new(llm: Arc<dyn LlmClient>) -> Self {
        Self { llm, max_attempts: 3 }
    }
}

/// Checks that every edge names nodes of the same answer, and drops the ones
/// that do not (models sometimes reference nodes they never listed).
fn sanitise(mut graph: KnowledgeGraph) -> KnowledgeGraph {
    graph.nodes.retain(|n| !n.name.trim().is_empty());
    let ids: std::collections::HashSet<&str> = graph.nodes.iter().map(|n| n.id.as_str()).collect();
    let edges = graph
        .edges
        .into_iter()
        .filter(|e| {
            ids.contains(e.source_node_id.as_str())
                && ids.contains(e.target_node_id.as_str())
                && !e.relationship_name.trim().is_empty()
        })
        .collect();
    graph.edges = edges;
    graph
}

#[async_trait]
impl GraphExtractor for LlmGraphExtractor {
    fn name(&self) -> &'static str {
        "llm"
    }

    async fn extract(&self, text: &str) -> Result<KnowledgeGraph> {
        let request = ChatRequest::new(GENERATE_GRAPH_PROMPT, text);
        let schema = KnowledgeGraph::json_schema();
        let mut last = String::new();
        for _ in 0..self.max_attempts.max(1) {
            match self.llm.structured(&request, "KnowledgeGraph", &schema).await {
                Ok(value) => match serde_json::from_value::<KnowledgeGraph>(value) {
                    Ok(graph) => return Ok(sanitise(graph)),
                    Err(e) => last = format!("answer does not match the KnowledgeGraph schema: {e}"),
                },
                // Only unusable answers are retried here; transport retries live in the client,
                // and budget exhaustion is final.
                Err(RecallError::Provider(msg)) if msg.contains("not valid JSON") => last = msg,
                Err(e) => return Err(e),
            }
        }
        Err(RecallError::Provider(format!(
            "graph extraction failed after {} attempts: {last}",
            self.max_attempts.max(1)
        )))
    }
}

/// One LLM summary per chunk.
pub struct LlmSummarizer {
    llm: Arc<dyn LlmClient>,
}

impl LlmSummarizer {
    pub fn new(llm: Arc<dyn LlmClient>) -> Self {
        Self { llm }
    }
}

#[async_trait]
impl Summarizer for LlmSummarizer {
    fn name(&self) -> &'static str {
        "llm"
    }

    async fn summarize(&self, text: &str) -> Result<String> {
        let summary = self.llm.chat(&ChatRequest::new(SUMMARIZE_CONTENT_PROMPT, text)).await?;
        let summary = summary.trim();
        if summary.is_empty() {
            return Err(RecallError::Provider("the LLM returned an empty summary".into()));
        }
        Ok(summary.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::{KgEdge, KgNode};

    #[test]
    fn edges_to_unknown_nodes_are_dropped() {
        let g = KnowledgeGraph {
            nodes: vec![KgNode {
                id: "a".into(),
                name: "Ada".into(),
                node_type: "person".into(),
                description: String::new(),
            }],
            edges: vec![KgEdge {
                source_node_id: "a".into(),
                target_node_id: "zzz".into(),
                relationship_name: "knows".into(),
                description: None,
            }],
        };
        let clean = sanitise(g);
        assert_eq!(clean.nodes.len(), 1);
        assert!(clean.edges.is_empty());
    }
}
