//! CYPHER and NATURAL_LANGUAGE (docs/retrievers.md). Both need a graph store
//! that speaks Cypher; the engine refuses them unless ALLOW_CYPHER_QUERY is
//! set. Queries run with the parameter `$dataset_id` bound to the dataset
//! being searched.

use async_trait::async_trait;
use recall_core::ports::CypherQueries;
use recall_core::{RecallError, Result};
use serde_json::{Map, Value};

use crate::RetrieverCall;
use crate::{completion, prompts, DatasetPorts, LlmContext, Retriever};

/// The store's Cypher capability, or `SearchTypeNotSupported` naming the type and the store.
fn require_cypher<'a>(ctx: &'a DatasetPorts, who: &str) -> Result<&'a dyn CypherQueries> {
    ctx.graph.cypher().ok_or_else(|| {
        RecallError::SearchTypeNotSupported(format!(
            "{who} needs a graph store that runs Cypher queries (Neo4j); the configured graph store '{}' does not.",
            ctx.graph.name()
        ))
    })
}

fn rows_to_values(rows: Vec<Map<String, Value>>) -> Vec<Value> {
    rows.into_iter().map(Value::Object).collect()
}

/// Runs the query text verbatim.
#[derive(Debug, Clone, Copy, Default)]
pub struct CypherRetriever;

#[async_trait]
impl Retriever for CypherRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query) = (call.ctx, call.query);
        let cypher = require_cypher(ctx, "CYPHER")?;
        if ctx.graph.is_empty(ctx.dataset.id).await? {
            return Ok(Vec::new());
        }
        match cypher.query_cypher(ctx.dataset.id, query).await {
            Ok(rows) => Ok(rows_to_values(rows)),
            Err(e) => {
                tracing::warn!(error = %e, "Cypher query failed");
                Err(RecallError::CypherSearch)
            }
        }
    }

    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, _objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::Text(String::new()))
    }
}

/// The LLM writes Cypher from the graph's schema; up to `max_attempts` tries.
#[derive(Debug, Clone, Default)]
pub struct NaturalLanguageRetriever;

const SCHEMA_QUERY: &str =
    "MATCH (a:RecallNode {dataset_id: $dataset_id})-[r]->(b:RecallNode {dataset_id: $dataset_id}) \
RETURN DISTINCT a.node_type AS source, type(r) AS relationship, b.node_type AS target LIMIT 500";

/// Strips markdown fences and a leading "Query:" from the model's answer.
fn clean_cypher(answer: &str) -> String {
    let trimmed = answer.trim();
    let body = trimmed
        .strip_prefix("```cypher")
        .or_else(|| trimmed.strip_prefix("```"))
        .map(|s| s.trim_end_matches("```"))
        .unwrap_or(trimmed)
        .trim();
    body.strip_prefix("Query:").unwrap_or(body).trim().to_string()
}

#[async_trait]
impl Retriever for NaturalLanguageRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        const WHO: &str = "NATURAL_LANGUAGE";
        let graph = require_cypher(ctx, WHO)?;
        if ctx.graph.is_empty(ctx.dataset.id).await? {
            return Ok(Vec::new());
        }
        let max_attempts = options.rsc_usize("max_attempts")?.unwrap_or(3);
        let template =
            options.rsc_str("system_prompt_path")?.unwrap_or_else(|| prompts::NATURAL_LANGUAGE_SYSTEM.into());
        let source = prompts::load_with(&template, &options.prompt_files)?;
        let schema_rows = graph.query_cypher(ctx.dataset.id, SCHEMA_QUERY).await.unwrap_or_default();
        let edge_schemas: Vec<String> = schema_rows
            .iter()
            .map(|r| {
                let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
                format!("- ({})-[:{}]->({})", f("source"), f("relationship"), f("target"))
            })
            .collect();
        let edge_schemas = edge_schemas.join("\n");
        let mut previous = String::new();
        for attempt in 0..max_attempts {
            let system = prompts::render_source(
                &source,
                &[
                    ("edge_schemas", edge_schemas.as_str()),
                    ("previous_attempts", if previous.is_empty() { "No attempts yet" } else { previous.as_str() }),
                ],
            )?;
            let cypher = clean_cypher(&completion::chat(ctx, WHO, &system, query).await?);
            match graph.query_cypher(ctx.dataset.id, &cypher).await {
                Ok(rows) if !rows.is_empty() => return Ok(rows_to_values(rows)),
                Ok(_) => previous.push_str(&format!("Query: {cypher} -> Result: None\n")),
                Err(e) => previous.push_str(&format!("Query: {cypher} -> Executed with error: {e}\n")),
            }
            tracing::debug!(attempt, "natural-language Cypher attempt returned nothing");
        }
        Ok(Vec::new())
    }

    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, _objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::Text(String::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::clean_cypher;

    #[test]
    fn fences_are_stripped() {
        assert_eq!(clean_cypher("```cypher\nMATCH (n) RETURN n\n```"), "MATCH (n) RETURN n");
        assert_eq!(clean_cypher("Query: MATCH (n) RETURN n"), "MATCH (n) RETURN n");
    }
}
