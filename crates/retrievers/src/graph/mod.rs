//! The graph-completion family (docs/retrievers.md): GRAPH_COMPLETION,
//! GRAPH_COMPLETION_COT, GRAPH_COMPLETION_CONTEXT_EXTENSION,
//! GRAPH_SUMMARY_COMPLETION and GRAPH_COMPLETION_DECOMPOSITION.

pub(crate) mod evidence;
pub mod render;
pub mod search;
pub mod sketch_index;

use std::collections::HashSet;

use async_trait::async_trait;
use recall_core::model::collections::GLOBAL_CONTEXT_SUMMARY_TEXT;
use recall_core::{RecallError, Result};
use serde_json::{json, Value};

pub use render::resolve_edges_to_text;
pub use search::{brute_force_triplet_search, Triplet, TripletSearch};
pub use sketch_index::SketchIndex;

use crate::completion::{self, answer_text};
use crate::evidence::{append_block, segment_evidence_block, EvidenceReference};
use crate::prompts;
use crate::RetrieverCall;
use crate::{DatasetPorts, LlmContext, PromptPreview, Retriever, RetrieverOptions};

/// Direct-construction default of `top_k` for the graph family (recall passes 15).
pub const GRAPH_DEFAULT_TOP_K: usize = 5;

async fn search_triplets(ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Triplet>> {
    let params = TripletSearch::from_options(options, GRAPH_DEFAULT_TOP_K)?;
    brute_force_triplet_search(ctx, query, &params).await
}

fn to_values(triplets: &[Triplet]) -> Vec<Value> {
    triplets.iter().map(Triplet::to_value).collect()
}

/// Appends the triplets not already present (by edge key); returns how many were new.
fn merge_triplets(into: &mut Vec<Triplet>, more: Vec<Triplet>) -> usize {
    let mut keys: HashSet<_> =
        into.iter().map(|t| (t.edge.source_node_id, t.edge.relationship_name.clone(), t.edge.target_node_id)).collect();
    let before = into.len();
    for t in more {
        if keys.insert((t.edge.source_node_id, t.edge.relationship_name.clone(), t.edge.target_node_id)) {
            into.push(t);
        }
    }
    into.len() - before
}

/// The optional global-context prelude (`include_global_context_index`):
/// `World summary:` (the root) and `Relevant areas:` (the top-k buckets).
async fn global_context_prelude(ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<String> {
    if !options.rsc_bool("include_global_context_index")?.unwrap_or(false) || query.trim().is_empty() {
        return Ok(String::new());
    }
    let top_k = options.rsc_usize("global_context_index_top_k")?.unwrap_or(3);
    global_prelude(ctx, &ctx.embed_query(query).await?, top_k).await
}

/// `World summary:` (the root summary) and `Relevant areas:` (the `top_k`
/// nearest bucket summaries), joined by a blank line; shared by the graph
/// family and the hybrid retrievers.
pub(crate) async fn global_prelude(ctx: &DatasetPorts, vector: &[f32], top_k: usize) -> Result<String> {
    let hits = ctx.vectors.search(ctx.dataset.id, GLOBAL_CONTEXT_SUMMARY_TEXT, vector, None, None).await?;
    let text = |h: &recall_core::ports::ScoredResult| h.payload.get("text").and_then(Value::as_str).map(str::to_string);
    let is_root =
        |h: &recall_core::ports::ScoredResult| h.payload.get("is_root").and_then(Value::as_bool) == Some(true);
    let mut blocks = Vec::new();
    if let Some(root) = hits.iter().find(|h| is_root(h)).and_then(text) {
        blocks.push(format!("World summary:\n{root}"));
    }
    let areas: Vec<String> = hits.iter().filter(|h| !is_root(h)).filter_map(text).take(top_k).collect();
    if !areas.is_empty() {
        blocks.push(format!("Relevant areas:\n{}", areas.join("\n\n")));
    }
    Ok(blocks.join("\n\n"))
}

/// Prelude and graph context: `prelude + "\n\n" + graph`, either alone when the other is empty.
async fn graph_context(
    ctx: &DatasetPorts,
    query: &str,
    triplets: &[Triplet],
    options: &RetrieverOptions,
) -> Result<String> {
    let prelude = global_context_prelude(ctx, query, options).await?;
    let body = resolve_edges_to_text(triplets);
    Ok(match (prelude.is_empty(), body.is_empty()) {
        (true, _) => body,
        (false, true) => prelude,
        (false, false) => format!("{prelude}\n\n{body}"),
    })
}

/// The final answer of a graph-family type from its context, with the
/// Evidence block when asked for. An empty context answers nothing (no LLM call).
async fn answer(
    ctx: &DatasetPorts,
    who: &str,
    user_template: &str,
    query: &str,
    triplets: &[Triplet],
    context: &LlmContext,
    options: &RetrieverOptions,
) -> Result<Option<Vec<Value>>> {
    let Some(prompt) = completion::preview(user_template, query, context, options)? else {
        return Ok(Some(Vec::new()));
    };
    let mut answer = completion::final_answer(ctx, who, &prompt, options).await?;
    if options.search.include_references {
        if let Value::String(text) = &answer {
            let refs = evidence::graph_evidence(ctx, triplets).await;
            answer = Value::String(append_block(text, segment_evidence_block(&refs)));
        }
    }
    Ok(Some(vec![answer]))
}

/// What sets one graph-family type apart: how it gathers its triplets and
/// how its context reads. The retriever steps, the preview and the evidence
/// are the family's, in [`GraphFamily`].
#[async_trait]
pub trait GraphStrategy: Send + Sync {
    /// The type's name in logs and provider errors.
    const NAME: &'static str;
    /// Whether the answer takes a `response_schema`'s shape.
    const STRUCTURED: bool = true;

    /// Step 1: the triplets the context is built from.
    async fn triplets(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Triplet>>;

    /// Step 2: the context; by default the global-context prelude and the
    /// Nodes/Connections text.
    async fn context(
        &self,
        ctx: &DatasetPorts,
        query: &str,
        triplets: &[Triplet],
        options: &RetrieverOptions,
    ) -> Result<String> {
        graph_context(ctx, query, triplets, options).await
    }
}

/// A graph-family retriever: its strategy's triplets and context, answered
/// with the graph-context prompt.
#[derive(Debug, Clone, Default)]
pub struct GraphFamily<S>(pub S);

#[async_trait]
impl<S: GraphStrategy> Retriever for GraphFamily<S> {
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        Ok(to_values(&self.0.triplets(ctx, query, options).await?))
    }

    async fn get_context_from_objects(&self, call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        Ok(LlmContext::Text(self.0.context(ctx, query, &Triplet::from_values(objects), options).await?))
    }

    async fn get_completion_from_context(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
        context: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let triplets = Triplet::from_values(objects);
        let template = prompts::GRAPH_CONTEXT_FOR_QUESTION;
        if S::STRUCTURED {
            answer(ctx, S::NAME, template, query, &triplets, context, options).await
        } else {
            answer(ctx, S::NAME, template, query, &triplets, context, &options.without_response_schema()).await
        }
    }

    async fn prompt_preview(&self, call: &RetrieverCall<'_>, context: &LlmContext) -> Result<Option<PromptPreview>> {
        let (query, options) = (call.query, call.options);
        completion::preview(prompts::GRAPH_CONTEXT_FOR_QUESTION, query, context, options)
    }

    fn used_graph_element_ids(&self, objects: &[Value]) -> Option<Value> {
        evidence::used_element_ids(&Triplet::from_values(objects))
    }

    /// Triplets merged by edge, within what one lane returns.
    fn merge_retrieved_objects(
        &self,
        primary: Vec<Value>,
        secondary: Vec<Value>,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        Ok(crate::merge::merge_lanes(primary, secondary, options.top_k(), crate::merge::edge_identity))
    }

    async fn get_context_evidence(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
    ) -> Result<Vec<EvidenceReference>> {
        let ctx = call.ctx;
        Ok(evidence::graph_evidence(ctx, &Triplet::from_values(objects)).await)
    }

    fn is_generative(&self) -> bool {
        true
    }

    fn structured_output(&self) -> bool {
        S::STRUCTURED
    }
}

// ---------------------------------------------------------------------------
// GRAPH_COMPLETION
// ---------------------------------------------------------------------------

/// Triplet search, the Nodes/Connections context, one LLM answer.
pub type GraphCompletionRetriever = GraphFamily<OneSearch>;

/// GRAPH_COMPLETION's triplets: one search.
#[derive(Debug, Clone, Default)]
pub struct OneSearch;

#[async_trait]
impl GraphStrategy for OneSearch {
    const NAME: &'static str = "GRAPH_COMPLETION";

    async fn triplets(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Triplet>> {
        search_triplets(ctx, query, options).await
    }
}

// ---------------------------------------------------------------------------
// GRAPH_COMPLETION_COT
// ---------------------------------------------------------------------------

/// Chain of thought: `max_iter` rounds of validate → follow-up question →
/// more triplets → new answer; the last round's answer is the completion.
pub type GraphCompletionCotRetriever = GraphFamily<ChainOfThought>;

#[derive(Debug, Clone, Default)]
pub struct ChainOfThought;

async fn intermediate_answer(
    ctx: &DatasetPorts,
    who: &str,
    query: &str,
    context: &str,
    options: &RetrieverOptions,
) -> Result<Value> {
    let prompt = completion::build_prompts(
        prompts::GRAPH_CONTEXT_FOR_QUESTION,
        prompts::ANSWER_SIMPLE_QUESTION,
        query,
        context,
        options,
    )?;
    completion::generate(ctx, who, &prompt, options).await
}

#[async_trait]
impl GraphStrategy for ChainOfThought {
    const NAME: &'static str = "GRAPH_COMPLETION_COT";

    async fn triplets(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Triplet>> {
        const WHO: &str = ChainOfThought::NAME;
        let max_iter = options.rsc_usize("max_iter")?.unwrap_or(4);
        let mut triplets = search_triplets(ctx, query, options).await?;
        if max_iter == 0 || triplets.is_empty() {
            return Ok(triplets);
        }
        let validation_system = prompts::system(prompts::COT_VALIDATION_SYSTEM)?;
        let followup_system = prompts::system(prompts::COT_FOLLOWUP_SYSTEM)?;
        let mut context = graph_context(ctx, query, &triplets, options).await?;
        let mut answer = answer_text(&intermediate_answer(ctx, WHO, query, &context, options).await?);
        for round in 0..max_iter {
            let reasoning = completion::chat(
                ctx,
                WHO,
                &validation_system,
                &prompts::render(
                    prompts::COT_VALIDATION_USER,
                    &[("query", query), ("answer", &answer), ("context", &context)],
                )?,
            )
            .await?;
            let followup = completion::chat(
                ctx,
                WHO,
                &followup_system,
                &prompts::render(
                    prompts::COT_FOLLOWUP_USER,
                    &[("query", query), ("answer", &answer), ("reasoning", &reasoning)],
                )?,
            )
            .await?;
            tracing::debug!(round, followup = %followup, "COT follow-up question");
            if !followup.trim().is_empty() {
                merge_triplets(&mut triplets, search_triplets(ctx, &followup, options).await?);
            }
            context = graph_context(ctx, query, &triplets, options).await?;
            if round + 1 < max_iter {
                answer = answer_text(&intermediate_answer(ctx, WHO, query, &context, options).await?);
            }
        }
        Ok(triplets)
    }
}

// ---------------------------------------------------------------------------
// GRAPH_COMPLETION_CONTEXT_EXTENSION
// ---------------------------------------------------------------------------

/// Up to `context_extension_rounds` rounds: answer, search with the answer
/// as the query, merge new triplets; stops when a round adds nothing.
pub type GraphCompletionContextExtensionRetriever = GraphFamily<ContextExtension>;

#[derive(Debug, Clone, Default)]
pub struct ContextExtension;

#[async_trait]
impl GraphStrategy for ContextExtension {
    const NAME: &'static str = "GRAPH_COMPLETION_CONTEXT_EXTENSION";

    async fn triplets(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Triplet>> {
        let rounds = options.rsc_usize("context_extension_rounds")?.unwrap_or(4);
        let mut triplets = search_triplets(ctx, query, options).await?;
        for round in 0..rounds {
            if triplets.is_empty() {
                break;
            }
            let context = graph_context(ctx, query, &triplets, options).await?;
            let answer = answer_text(&intermediate_answer(ctx, Self::NAME, query, &context, options).await?);
            if answer.trim().is_empty() {
                break;
            }
            let added = merge_triplets(&mut triplets, search_triplets(ctx, &answer, options).await?);
            tracing::debug!(round, added, "context extension round");
            if added == 0 {
                break;
            }
        }
        Ok(triplets)
    }
}

// ---------------------------------------------------------------------------
// GRAPH_SUMMARY_COMPLETION
// ---------------------------------------------------------------------------

/// As GRAPH_COMPLETION, but the context is an LLM summary of the triplets,
/// and the answer is always text (a response schema is ignored).
pub type GraphSummaryCompletionRetriever = GraphFamily<SummarisedContext>;

#[derive(Debug, Clone, Default)]
pub struct SummarisedContext;

#[async_trait]
impl GraphStrategy for SummarisedContext {
    const NAME: &'static str = "GRAPH_SUMMARY_COMPLETION";
    const STRUCTURED: bool = false;

    async fn triplets(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Vec<Triplet>> {
        search_triplets(ctx, query, options).await
    }

    async fn context(
        &self,
        ctx: &DatasetPorts,
        query: &str,
        triplets: &[Triplet],
        options: &RetrieverOptions,
    ) -> Result<String> {
        let text = graph_context(ctx, query, triplets, options).await?;
        if text.is_empty() {
            return Ok(text);
        }
        let summarize_path =
            options.rsc_str("summarize_prompt_path")?.unwrap_or_else(|| prompts::SUMMARIZE_SEARCH_RESULTS.to_string());
        let system = completion::system_prompt(options, &summarize_path)?;
        completion::chat(ctx, Self::NAME, &system, &text).await
    }
}

// ---------------------------------------------------------------------------
// GRAPH_COMPLETION_DECOMPOSITION
// ---------------------------------------------------------------------------

/// Splits the question into sub-questions. `answer_per_subquery` (default)
/// answers each from its own triplets, then the question from the
/// sub-answers; `combined_triplets_context` merges every sub-question's
/// triplets into one context.
#[derive(Debug, Clone, Default)]
pub struct GraphCompletionDecompositionRetriever;

const DECOMPOSITION_MODES: &[&str] = &["answer_per_subquery", "combined_triplets_context"];

fn decomposition_mode(options: &RetrieverOptions) -> Result<String> {
    let mode = options.rsc_str("decomposition_mode")?.unwrap_or_else(|| DECOMPOSITION_MODES[0].to_string());
    if !DECOMPOSITION_MODES.contains(&mode.as_str()) {
        return Err(RecallError::Validation {
            name: "InvalidRetrieverConfig",
            message: format!("decomposition_mode must be one of {DECOMPOSITION_MODES:?}, got '{mode}'."),
        });
    }
    Ok(mode)
}

/// Objects of `answer_per_subquery`: `{subquery, answer, triplets}` per sub-question.
fn subanswer_triplets(objects: &[Value]) -> Vec<Triplet> {
    if objects.iter().all(|o| o.get("subquery").is_none()) {
        return Triplet::from_values(objects);
    }
    objects
        .iter()
        .flat_map(|o| Triplet::from_values(o.get("triplets").and_then(Value::as_array).map_or(&[][..], |v| v)))
        .collect()
}

#[async_trait]
impl Retriever for GraphCompletionDecompositionRetriever {
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        const WHO: &str = "GRAPH_COMPLETION_DECOMPOSITION";
        let mode = decomposition_mode(options)?;
        let max_subqueries = options.rsc_usize("max_subqueries")?.unwrap_or(3).max(1);
        if ctx.graph.is_empty(ctx.dataset.id).await? {
            return Err(search::empty_graph());
        }
        let system = prompts::render(prompts::DECOMPOSE_QUERY, &[("max_subqueries", &max_subqueries.to_string())])?;
        let split = completion::chat(ctx, WHO, &system, query).await?;
        let mut subqueries: Vec<String> = split
            .lines()
            .map(|l| {
                l.trim().trim_start_matches(|c: char| c == '-' || c == '*' || c.is_ascii_digit() || c == '.').trim()
            })
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .take(max_subqueries)
            .collect();
        if subqueries.is_empty() {
            subqueries.push(query.to_string());
        }
        let searches = subqueries.iter().map(|q| search_triplets(ctx, q, options));
        let results = futures::future::join_all(searches).await.into_iter().collect::<Result<Vec<_>>>()?;
        if mode == "combined_triplets_context" {
            let mut all = Vec::new();
            for r in results {
                merge_triplets(&mut all, r);
            }
            return Ok(to_values(&all));
        }
        let mut out = Vec::new();
        for (q, triplets) in subqueries.iter().zip(results) {
            let context = graph_context(ctx, q, &triplets, options).await?;
            let answer = if context.is_empty() {
                String::new()
            } else {
                let prompt = completion::build_prompts(
                    prompts::GRAPH_CONTEXT_FOR_QUESTION,
                    prompts::ANSWER_SIMPLE_QUESTION,
                    q,
                    &context,
                    &options.without_response_schema(),
                )?;
                // Sub-answers are free text even when the final answer is structured.
                answer_text(&completion::generate(ctx, WHO, &prompt, &RetrieverOptions::default()).await?)
            };
            out.push(json!({"subquery": q, "answer": answer, "triplets": to_values(&triplets)}));
        }
        Ok(out)
    }

    async fn get_context_from_objects(&self, call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        if objects.iter().any(|o| o.get("subquery").is_some()) {
            let parts: Vec<String> = objects
                .iter()
                .filter(|o| o.get("answer").and_then(Value::as_str).is_some_and(|a| !a.is_empty()))
                .map(|o| {
                    format!(
                        "Q: {}\nA: {}",
                        o.get("subquery").and_then(Value::as_str).unwrap_or_default(),
                        o.get("answer").and_then(Value::as_str).unwrap_or_default()
                    )
                })
                .collect();
            return Ok(LlmContext::Text(parts.join("\n\n")));
        }
        Ok(LlmContext::Text(graph_context(ctx, query, &Triplet::from_values(objects), options).await?))
    }

    async fn get_completion_from_context(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
        context: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let template = self.template(objects);
        answer(ctx, "GRAPH_COMPLETION_DECOMPOSITION", template, query, &subanswer_triplets(objects), context, options)
            .await
    }

    async fn prompt_preview(&self, call: &RetrieverCall<'_>, context: &LlmContext) -> Result<Option<PromptPreview>> {
        let (query, options) = (call.query, call.options);
        let template = if decomposition_mode(options)? == "combined_triplets_context" {
            prompts::GRAPH_CONTEXT_FOR_QUESTION
        } else {
            prompts::ANSWER_FROM_SUBANSWERS
        };
        completion::preview(template, query, context, options)
    }

    async fn get_context_evidence(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
    ) -> Result<Vec<EvidenceReference>> {
        let ctx = call.ctx;
        Ok(evidence::graph_evidence(ctx, &subanswer_triplets(objects)).await)
    }

    fn is_generative(&self) -> bool {
        true
    }
}

impl GraphCompletionDecompositionRetriever {
    fn template(&self, objects: &[Value]) -> &'static str {
        if objects.iter().any(|o| o.get("subquery").is_some()) {
            prompts::ANSWER_FROM_SUBANSWERS
        } else {
            prompts::GRAPH_CONTEXT_FOR_QUESTION
        }
    }
}
