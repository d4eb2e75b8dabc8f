//! SKILLS (docs/recall.md, "Skills"): the dataset's skill playbooks nearest to the
//! question, as metadata only. Non-generative: no LLM call.

use std::collections::HashSet;

use async_trait::async_trait;
use recall_core::Result;
use recall_skills::{project_metadata, SKILL_SEARCH_TEXT};
use serde_json::{json, Value};

use crate::RetrieverCall;
use crate::{LlmContext, Retriever};

/// The retriever's own default `top_k`.
pub const DEFAULT_SKILLS_TOP_K: usize = 5;

#[derive(Debug, Clone, Copy, Default)]
pub struct SkillsRetriever;

#[async_trait]
impl Retriever for SkillsRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let top_k = options.top_k().unwrap_or(DEFAULT_SKILLS_TOP_K);
        if top_k == 0 {
            return Err(recall_core::RecallError::top_k_not_positive());
        }
        let vector = ctx.embed_query(query).await?;
        // A dataset with no skills has no rows: [] (not NoDataError).
        let hits =
            ctx.vectors.search(ctx.dataset.id, SKILL_SEARCH_TEXT, &vector, Some((top_k * 4).max(20)), None).await?;
        let dataset = ctx.dataset.id.to_string();
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for hit in hits {
            let active = hit.payload.get("is_active").and_then(Value::as_bool).unwrap_or(true);
            let in_scope = hit
                .payload
                .get("dataset_scope")
                .and_then(Value::as_array)
                .is_some_and(|scope| scope.iter().any(|s| s.as_str() == Some(dataset.as_str())));
            if !active || !in_scope {
                continue;
            }
            let mut skill = project_metadata(&hit.payload, &hit.id.to_string());
            let id = skill.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            if !seen.insert(id) {
                continue;
            }
            skill.insert("score".into(), json!(hit.score));
            out.push(Value::Object(skill));
            if out.len() == top_k {
                break;
            }
        }
        Ok(out)
    }

    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        let lines: Vec<String> = objects
            .iter()
            .map(|o| {
                let name = o.get("name").and_then(Value::as_str).unwrap_or_default();
                let description = o.get("description").and_then(Value::as_str).unwrap_or_default();
                format!("- `{name}`: {description}")
            })
            .collect();
        Ok(LlmContext::Text(lines.join("\n")))
    }
}
