//! CODING_RULES (docs/retrievers.md): the `text` of every node in the named
//! node sets (default `coding_agent_rules`), in node-set order. The query
//! is not used.

use async_trait::async_trait;
use futures::future::join_all;
use recall_core::ports::NodeSetFilter;
use recall_core::Result;
use serde_json::Value;

use crate::RetrieverCall;
use crate::{LlmContext, Retriever};

pub const DEFAULT_RULES_NODE_SET: &str = "coding_agent_rules";

#[derive(Debug, Clone, Copy, Default)]
pub struct CodingRulesRetriever;

#[async_trait]
impl Retriever for CodingRulesRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, options) = (call.ctx, call.options);
        let sets = options
            .search
            .node_name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| vec![DEFAULT_RULES_NODE_SET.into()]);
        let lookups = sets.iter().map(|set| async move {
            let sub = ctx.graph.nodeset_subgraph(ctx.dataset.id, &NodeSetFilter::Any(vec![set.clone()])).await?;
            Ok::<_, recall_core::RecallError>(
                sub.nodes
                    .into_iter()
                    .filter(|n| {
                        n.properties
                            .get("belongs_to_set")
                            .and_then(Value::as_array)
                            .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some(set)))
                    })
                    .filter_map(|n| {
                        n.properties.get("text").and_then(Value::as_str).map(|t| Value::String(t.to_string()))
                    })
                    .collect::<Vec<_>>(),
            )
        });
        let mut out = Vec::new();
        for rules in join_all(lookups).await {
            out.extend(rules?);
        }
        Ok(out)
    }

    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::List(objects.iter().filter_map(Value::as_str).map(str::to_string).collect()))
    }
}
