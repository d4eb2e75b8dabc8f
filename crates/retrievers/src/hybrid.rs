//! HYBRID_COMPLETION (docs/retrievers.md, "HYBRID_COMPLETION"): three
//! channels in one context — BM25 lexical chunks and vector chunks (with
//! chunk summaries as a ranking signal) fused by reciprocal rank and
//! de-duplicated to `chunks_top_k`; matched entities with ordered edge
//! bullets; and `## Related facts` from the edge-type index.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use recall_core::model::collections::{
    DOCUMENT_CHUNK_TEXT, EDGE_TYPE_RELATIONSHIP_NAME, ENTITY_NAME, TEXT_SUMMARY_TEXT,
};
use recall_core::ports::{EdgeProjection, NodeSetFilter, ScoredResult};
use recall_core::{ids, Node, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::chunks::hit_payload;
use crate::graph::search::empty_graph;
use crate::lexical::LexicalIndexCache;
use crate::rag::with_chunk_evidence;
use crate::RetrieverCall;
use crate::{completion, merge, prompts, DatasetPorts, LlmContext, PromptPreview, Retriever, RetrieverOptions};

/// Lane sizes and switches of one hybrid search.
#[derive(Debug, Clone, PartialEq)]
pub struct HybridParams {
    pub chunks_top_k: usize,
    pub entities_top_k: usize,
    pub facts_top_k: usize,
    pub max_edges_per_entity: usize,
    pub include_global_context_index: bool,
    pub global_context_index_top_k: usize,
    pub use_importance_weight: bool,
    /// How much each chunk channel counts in the rank fusion.
    pub weights: ChannelWeights,
}

/// Weights of the chunk channels in the reciprocal-rank fusion: a chunk's
/// score is `Σ weight / (k + rank)` over the channels that found it.
/// The defaults were chosen with `recall eval` on the HotpotQA subsets
/// (docs/quality.md, "Fusion weights").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelWeights {
    pub vector: f64,
    pub lexical: f64,
    pub summary: f64,
}

impl Default for ChannelWeights {
    /// BM25 up, summaries down: on both HotpotQA subsets and with both the
    /// local and the hashing embedder, at least as good as equal weights on
    /// MRR and recall@10, better on most (docs/quality.md, "Fusion weights").
    fn default() -> Self {
        Self { vector: 1.0, lexical: 1.5, summary: 0.5 }
    }
}

impl HybridParams {
    /// retriever_specific_config values uncapped, else `min(top_k, 10)`, else 5.
    pub fn from_options(options: &RetrieverOptions) -> Result<Self> {
        let lane = |key: &str| -> Result<usize> {
            Ok(options.rsc_usize(key)?.unwrap_or_else(|| options.top_k().map_or(5, |k| k.min(10))))
        };
        Ok(Self {
            chunks_top_k: lane("chunks_top_k")?,
            entities_top_k: lane("entities_top_k")?,
            facts_top_k: lane("facts_top_k")?,
            max_edges_per_entity: options.rsc_usize("max_edges_per_entity")?.unwrap_or(10),
            include_global_context_index: options.rsc_bool("include_global_context_index")?.unwrap_or(false),
            global_context_index_top_k: options.rsc_usize("global_context_index_top_k")?.unwrap_or(3),
            use_importance_weight: options.rsc_bool("use_importance_weight")?.unwrap_or(true),
            weights: {
                let d = ChannelWeights::default();
                ChannelWeights {
                    vector: options.rsc_weight("vector_weight")?.unwrap_or(d.vector),
                    lexical: options.rsc_weight("lexical_weight")?.unwrap_or(d.lexical),
                    summary: options.rsc_weight("summary_weight")?.unwrap_or(d.summary),
                }
            },
        })
    }
}

/// One matched entity as shown in the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HybridEntity {
    pub id: String,
    pub name: String,
    pub entity_type: Option<String>,
    pub description: Option<String>,
    pub bullets: Vec<String>,
}

/// The hybrid retriever's single retrieved object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HybridResult {
    pub prelude: String,
    /// Chunk payloads in fused order.
    pub chunks: Vec<Value>,
    pub entities: Vec<HybridEntity>,
    pub facts: Vec<String>,
}

impl HybridResult {
    pub fn from_objects(objects: &[Value]) -> HybridResult {
        objects.first().and_then(|o| serde_json::from_value(o.clone()).ok()).unwrap_or_default()
    }

    /// Sections joined by blank lines; empty sections are left out.
    pub fn render(&self) -> String {
        let mut sections = Vec::new();
        if !self.prelude.is_empty() {
            sections.push(format!("## Global context\n{}", self.prelude));
        }
        let passages: Vec<String> = self
            .chunks
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        if !passages.is_empty() {
            sections.push(format!("## Relevant passages\n{}", passages.join("\n---\n")));
        }
        let blocks: Vec<String> = self
            .entities
            .iter()
            .map(|e| {
                let mut lines = vec![match &e.entity_type {
                    Some(t) => format!("### {} ({t})", e.name),
                    None => format!("### {}", e.name),
                }];
                if let Some(d) = e.description.as_deref().filter(|d| !d.is_empty()) {
                    lines.push(d.to_string());
                }
                lines.extend(e.bullets.iter().map(|b| format!("- {b}")));
                lines.join("\n")
            })
            .collect();
        if !blocks.is_empty() {
            sections.push(format!("## Relevant entities\n{}", blocks.join("\n\n")));
        }
        if !self.facts.is_empty() {
            let lines: Vec<String> = self.facts.iter().map(|f| format!("- {f}")).collect();
            sections.push(format!("## Related facts\n{}", lines.join("\n")));
        }
        sections.join("\n\n")
    }
}

#[derive(Debug, Default, Clone)]
struct Ranks {
    vector: Option<usize>,
    summary: Option<usize>,
    lexical: Option<usize>,
}

/// The node-set tags (`belongs_to_set`) of a payload or of a node's properties.
fn tags(props: &Map<String, Value>) -> Vec<String> {
    props
        .get("belongs_to_set")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn passes(filter: &Option<NodeSetFilter>, payload: &Value) -> bool {
    filter.as_ref().is_none_or(|f| f.matches(&payload.as_object().map(tags).unwrap_or_default()))
}

fn parse_id(v: Option<&Value>) -> Option<Uuid> {
    v.and_then(Value::as_str).and_then(|s| Uuid::parse_str(s).ok())
}

/// Reciprocal-rank fusion of the chunk channels, `chunks_top_k` kept.
pub(crate) fn fuse_chunks(
    vector_hits: Vec<ScoredResult>,
    summary_hits: &[ScoredResult],
    lexical: Vec<Value>,
    extra_chunks: &HashMap<Uuid, Value>,
    params: &HybridParams,
    filter: &Option<NodeSetFilter>,
) -> Vec<Value> {
    let mut ranks: HashMap<Uuid, Ranks> = HashMap::new();
    let mut payloads: HashMap<Uuid, Value> = HashMap::new();
    let touch = |ranks: &mut HashMap<Uuid, Ranks>, id: Uuid| {
        ranks.entry(id).or_default();
    };
    for (r, hit) in vector_hits.into_iter().enumerate() {
        touch(&mut ranks, hit.id);
        if let Some(x) = ranks.get_mut(&hit.id) {
            x.vector.get_or_insert(r);
        }
        payloads.entry(hit.id).or_insert_with(|| hit_payload(hit));
    }
    for (r, chunk) in lexical.into_iter().enumerate() {
        let Some(id) = parse_id(chunk.get("id")) else { continue };
        touch(&mut ranks, id);
        if let Some(x) = ranks.get_mut(&id) {
            x.lexical.get_or_insert(r);
        }
        payloads.entry(id).or_insert(chunk);
    }
    for (r, hit) in summary_hits.iter().enumerate() {
        let payload = Value::Object(hit.payload.clone());
        if !passes(filter, &payload) {
            continue;
        }
        let Some(chunk_id) = parse_id(hit.payload.get("source_chunk_id")) else { continue };
        touch(&mut ranks, chunk_id);
        if let Some(x) = ranks.get_mut(&chunk_id) {
            x.summary.get_or_insert(r);
        }
        if let Some(p) = extra_chunks.get(&chunk_id) {
            payloads.entry(chunk_id).or_insert_with(|| p.clone());
        }
    }
    let rrf_k = (20 + 2 * params.chunks_top_k).clamp(30, 60) as f64;
    let mut scored: Vec<(f64, f64, usize, Uuid)> = ranks
        .iter()
        .filter(|(id, _)| payloads.contains_key(id))
        .map(|(id, r)| {
            let w = params.weights;
            let channels = [(r.vector, w.vector), (r.summary, w.summary), (r.lexical, w.lexical)];
            let rrf: f64 =
                channels.iter().filter_map(|(rank, weight)| rank.map(|k| weight / (rrf_k + k as f64 + 1.0))).sum();
            let present: Vec<usize> = channels.iter().filter_map(|(rank, _)| *rank).collect();
            let importance =
                payloads[id].get("importance_weight").and_then(Value::as_f64).unwrap_or(0.5).clamp(0.0, 1.0);
            let fin = if params.use_importance_weight { rrf * (0.75 + 0.5 * importance) } else { rrf };
            let min_rank = present.iter().copied().min().unwrap_or(usize::MAX);
            (fin, rrf, min_rank, *id)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
    scored.into_iter().take(params.chunks_top_k).filter_map(|(_, _, _, id)| payloads.remove(&id)).collect()
}

fn node_label(n: Option<&Node>, id: Uuid) -> String {
    n.and_then(|n| n.properties.get("name").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| id.to_string())
}

/// Entities with ordered, de-duplicated edge bullets; also returns the
/// edge-type ids shown as bullets.
pub(crate) fn build_entities(
    entity_hits: &[ScoredResult],
    around: &recall_core::Subgraph,
    edge_rank: &HashMap<Uuid, usize>,
    params: &HybridParams,
    filter: &Option<NodeSetFilter>,
) -> (Vec<HybridEntity>, HashSet<Uuid>) {
    let nodes: HashMap<Uuid, &Node> = around.nodes.iter().map(|n| (n.id, n)).collect();
    let scoped = filter.is_some();
    let mut shown = HashSet::new();
    let mut out = Vec::new();
    for hit in entity_hits.iter().take(params.entities_top_k) {
        let node = nodes.get(&hit.id).copied();
        let name = node
            .and_then(|n| n.name())
            .or_else(|| hit.payload.get("text").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let mut entity_type = None;
        // (group, rank, graph order, text, edge-type id)
        let mut bullets: Vec<(u8, usize, usize, String, Uuid)> = Vec::new();
        let mut seen = HashSet::new();
        for (pos, e) in around.edges.iter().enumerate() {
            if e.source_node_id != hit.id && e.target_node_id != hit.id {
                continue;
            }
            if e.relationship_name.starts_with("conflict_") {
                continue;
            }
            let other = if e.source_node_id == hit.id { e.target_node_id } else { e.source_node_id };
            let is_a = e.relationship_name == "is_a";
            if is_a && e.source_node_id == hit.id {
                entity_type = nodes.get(&e.target_node_id).and_then(|n| n.name()).map(str::to_string);
            }
            if scoped && !is_a {
                let in_scope =
                    nodes.get(&other).is_some_and(|n| filter.as_ref().is_some_and(|f| f.matches(&tags(&n.properties))));
                if !in_scope {
                    continue;
                }
            }
            if !seen.insert((e.source_node_id, e.relationship_name.clone(), e.target_node_id)) {
                continue;
            }
            let text = e.edge_text.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| {
                format!(
                    "{} -- {} -- {}",
                    node_label(nodes.get(&e.source_node_id).copied(), e.source_node_id),
                    e.relationship_name,
                    node_label(nodes.get(&e.target_node_id).copied(), e.target_node_id)
                )
            });
            let type_id = ids::id_for("EdgeType", &[e.edge_text.as_deref().unwrap_or(&e.relationship_name)]);
            let (group, rank) = if is_a || text.contains(" is a ") {
                (0, 0)
            } else if let Some(r) = edge_rank.get(&type_id) {
                (1, *r)
            } else {
                (2, 0)
            };
            bullets.push((group, rank, pos, text, type_id));
        }
        bullets.sort_by_key(|a| (a.0, a.1, a.2));
        bullets.dedup_by(|a, b| a.3 == b.3);
        bullets.truncate(params.max_edges_per_entity);
        shown.extend(bullets.iter().map(|b| b.4));
        let entity_type = entity_type
            .or_else(|| node.and_then(|n| n.properties.get("type_name").and_then(Value::as_str)).map(str::to_string));
        let description = if scoped {
            None
        } else {
            node.and_then(|n| n.properties.get("description").and_then(Value::as_str)).map(str::to_string)
        };
        out.push(HybridEntity {
            id: hit.id.to_string(),
            name,
            entity_type,
            description,
            bullets: bullets.into_iter().map(|b| b.3).collect(),
        });
    }
    (out, shown)
}

/// `## Related facts`: edge-type texts by rank, not already shown, ≥ 3 words.
pub(crate) fn select_facts(
    edge_hits: &[ScoredResult],
    shown: &HashSet<Uuid>,
    reachable: Option<&HashSet<Uuid>>,
    budget: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    for hit in edge_hits {
        if out.len() >= budget {
            break;
        }
        if shown.contains(&hit.id) || reachable.is_some_and(|r| !r.contains(&hit.id)) {
            continue;
        }
        let Some(text) = hit
            .payload
            .get("text")
            .and_then(Value::as_str)
            .or_else(|| hit.payload.get("relationship_name").and_then(Value::as_str))
        else {
            continue;
        };
        if text.split_whitespace().count() < 3 {
            continue;
        }
        out.push(match text.strip_prefix("Document chunk mentions ") {
            Some(rest) => {
                let mut c = rest.chars();
                c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
            }
            None => text.to_string(),
        });
    }
    out
}

/// The candidates of one hybrid search (also used by TEMPORAL, uncut).
pub(crate) async fn hybrid_candidates(
    ctx: &DatasetPorts,
    lexical: &LexicalIndexCache,
    query: &str,
    params: &HybridParams,
    options: &RetrieverOptions,
) -> Result<HybridResult> {
    let dataset = ctx.dataset.id;
    let filter = options.node_set_filter();
    let vector = ctx.embed_query(query).await?;
    let edge_limit = params.entities_top_k * params.max_edges_per_entity + params.facts_top_k;
    let (chunk_hits, summary_hits, entity_hits, edge_hits, lexical_hits) = tokio::join!(
        ctx.vectors.search(dataset, DOCUMENT_CHUNK_TEXT, &vector, Some(2 * params.chunks_top_k), filter.clone()),
        ctx.vectors.search(dataset, TEXT_SUMMARY_TEXT, &vector, Some(params.chunks_top_k), filter.clone()),
        ctx.vectors.search(dataset, ENTITY_NAME, &vector, Some(params.entities_top_k), filter.clone()),
        ctx.vectors.search(dataset, EDGE_TYPE_RELATIONSHIP_NAME, &vector, Some(edge_limit), None),
        async {
            // The lexical channel is best effort: any failure skips it.
            match lexical.search(ctx, query, 2 * params.chunks_top_k).await {
                Ok(hits) => {
                    hits.into_iter().filter(|(p, s)| *s > 0.0 && passes(&filter, p)).map(|(p, _)| p).collect::<Vec<_>>()
                }
                Err(e) => {
                    tracing::debug!(error = %e, "hybrid: lexical channel skipped");
                    Vec::new()
                }
            }
        }
    );
    let chunk_hits = chunk_hits?;
    let summary_hits = summary_hits?;
    let entity_hits = entity_hits.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "hybrid: entity search failed; no entities");
        Vec::new()
    });
    let edge_hits = edge_hits?;

    // Chunks found only through their summary are loaded from the graph.
    let known: HashSet<Uuid> =
        chunk_hits.iter().map(|h| h.id).chain(lexical_hits.iter().filter_map(|p| parse_id(p.get("id")))).collect();
    let summary_only: Vec<Uuid> = summary_hits
        .iter()
        .filter_map(|h| parse_id(h.payload.get("source_chunk_id")))
        .filter(|id| !known.contains(id))
        .collect();
    let mut extra = HashMap::new();
    if !summary_only.is_empty() {
        for n in ctx.graph.get_nodes(dataset, &summary_only).await? {
            let mut p: Map<String, Value> = n.properties;
            p.insert("id".into(), json!(n.id.to_string()));
            let v = Value::Object(p);
            if passes(&filter, &v) {
                extra.insert(n.id, v);
            }
        }
    }
    let chunks = fuse_chunks(chunk_hits, &summary_hits, lexical_hits, &extra, params, &filter);

    let edge_rank: HashMap<Uuid, usize> = edge_hits.iter().enumerate().map(|(r, h)| (h.id, r)).collect();
    let entity_ids: Vec<Uuid> = entity_hits.iter().take(params.entities_top_k).map(|h| h.id).collect();
    let around = if entity_ids.is_empty() {
        Default::default()
    } else {
        ctx.graph.edges_around(dataset, &entity_ids, EdgeProjection::Only(&[])).await?
    };
    let (entities, shown) = build_entities(&entity_hits, &around, &edge_rank, params, &filter);
    let reachable: Option<HashSet<Uuid>> = filter.as_ref().map(|_| shown.clone());
    let budget = if entities.is_empty() && filter.is_none() {
        params.entities_top_k * params.max_edges_per_entity
    } else {
        params.facts_top_k
    };
    let facts = if params.facts_top_k == 0 || params.entities_top_k == 0 {
        Vec::new()
    } else {
        select_facts(&edge_hits, &shown, reachable.as_ref(), budget)
    };
    let prelude = if params.include_global_context_index {
        crate::graph::global_prelude(ctx, &vector, params.global_context_index_top_k).await?
    } else {
        String::new()
    };
    Ok(HybridResult { prelude, chunks, entities, facts })
}

/// What sets a hybrid-family type apart: how it gathers its candidates
/// (one [`HybridResult`] as the single object). The context, the answer and
/// the preview are the family's, in [`HybridFamily`].
#[async_trait]
pub trait HybridStrategy: Send + Sync {
    /// The type's name in logs and provider errors.
    const NAME: &'static str;

    /// Step 1: the candidates (the family serialises them as the single object).
    async fn candidates(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<HybridResult>;
}

/// A hybrid-family retriever: its strategy's candidates, rendered as
/// passages, entities and facts, answered with the hybrid-context prompt.
#[derive(Debug, Clone)]
pub struct HybridFamily<S>(pub S);

#[async_trait]
impl<S: HybridStrategy> Retriever for HybridFamily<S> {
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        if query.trim().is_empty() {
            return Err(recall_core::RecallError::empty_query());
        }
        let result = self.0.candidates(ctx, query, options).await?;
        Ok(vec![serde_json::to_value(result).unwrap_or(Value::Null)])
    }

    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::Text(HybridResult::from_objects(objects).render()))
    }

    /// Each channel merged under its own budget; the prelude is the primary's.
    fn merge_retrieved_objects(
        &self,
        primary: Vec<Value>,
        secondary: Vec<Value>,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        let params = HybridParams::from_options(options)?;
        let (p, s) = (HybridResult::from_objects(&primary), HybridResult::from_objects(&secondary));
        let lane = |p: Vec<Value>, s: Vec<Value>, limit: usize, identity: fn(&Value) -> Option<String>| {
            merge::merge_lanes(p, s, Some(limit), identity)
        };
        let values =
            |items: Vec<HybridEntity>| items.into_iter().filter_map(|e| serde_json::to_value(e).ok()).collect();
        let entities = lane(values(p.entities), values(s.entities), params.entities_top_k, merge::payload_identity);
        let facts = lane(
            p.facts.into_iter().map(Value::String).collect(),
            s.facts.into_iter().map(Value::String).collect(),
            params.facts_top_k,
            |v| v.as_str().map(str::to_string),
        );
        let merged = HybridResult {
            prelude: if p.prelude.is_empty() { s.prelude } else { p.prelude },
            chunks: lane(p.chunks, s.chunks, params.chunks_top_k, merge::payload_identity),
            entities: entities.into_iter().filter_map(|v| serde_json::from_value(v).ok()).collect(),
            facts: facts.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        };
        Ok(vec![serde_json::to_value(merged).unwrap_or(Value::Null)])
    }

    async fn get_completion_from_context(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
        context: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        let (ctx, options) = (call.ctx, call.options);
        let Some(prompt) = self.prompt_preview(call, context).await? else {
            return Ok(Some(Vec::new()));
        };
        let answer = completion::final_answer(ctx, S::NAME, &prompt, options).await?;
        Ok(Some(vec![with_chunk_evidence(answer, &HybridResult::from_objects(objects).chunks, options)]))
    }

    async fn prompt_preview(&self, call: &RetrieverCall<'_>, context: &LlmContext) -> Result<Option<PromptPreview>> {
        let (query, options) = (call.query, call.options);
        completion::preview(prompts::HYBRID_CONTEXT_FOR_QUESTION, query, context, options)
    }

    fn is_generative(&self) -> bool {
        true
    }
}

/// HYBRID_COMPLETION: chunks (vector and BM25, fused), entities and facts.
pub type HybridRetriever = HybridFamily<HybridSearch>;

/// HYBRID_COMPLETION's candidates: one hybrid search.
#[derive(Debug, Clone)]
pub struct HybridSearch {
    lexical: Arc<LexicalIndexCache>,
}

impl HybridRetriever {
    pub fn new(lexical: Arc<LexicalIndexCache>) -> Self {
        HybridFamily(HybridSearch { lexical })
    }
}

#[async_trait]
impl HybridStrategy for HybridSearch {
    const NAME: &'static str = "HYBRID_COMPLETION";

    async fn candidates(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<HybridResult> {
        if ctx.graph.is_empty(ctx.dataset.id).await? {
            return Err(empty_graph());
        }
        let params = HybridParams::from_options(options)?;
        hybrid_candidates(ctx, &self.lexical, query, &params, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_sections_and_glossary_facts() {
        let r = HybridResult {
            prelude: String::new(),
            chunks: vec![json!({"text": "A"}), json!({"text": "B"})],
            entities: vec![HybridEntity {
                id: "1".into(),
                name: "ada".into(),
                entity_type: Some("person".into()),
                description: Some("A mathematician.".into()),
                bullets: vec!["ada is a person.".into()],
            }],
            facts: vec!["Ada: wrote notes".into()],
        };
        assert_eq!(
            r.render(),
            "## Relevant passages\nA\n---\nB\n\n## Relevant entities\n### ada (person)\nA mathematician.\n- ada is a person.\n\n## Related facts\n- Ada: wrote notes"
        );
        let hit = |t: &str, id: u128| ScoredResult {
            id: Uuid::from_u128(id),
            score: 0.1,
            payload: json!({"text": t}).as_object().cloned().unwrap_or_default(),
        };
        let facts = select_facts(
            &[hit("Document chunk mentions ada lovelace: a mathematician", 1), hit("too short", 2), hit("x y z", 3)],
            &HashSet::from([Uuid::from_u128(3)]),
            None,
            5,
        );
        assert_eq!(facts, vec!["Ada lovelace: a mathematician"]);
    }

    #[test]
    fn lane_sizes() {
        let mut o = RetrieverOptions::with_top_k(15);
        let p = HybridParams::from_options(&o).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.chunks_top_k, p.entities_top_k, p.facts_top_k, p.max_edges_per_entity), (10, 10, 10, 10));
        o.search.retriever_specific_config.insert("chunks_top_k".into(), json!(25));
        assert_eq!(HybridParams::from_options(&o).map(|p| p.chunks_top_k).ok(), Some(25));
        o.search.retriever_specific_config.insert("facts_top_k".into(), json!("many"));
        assert!(HybridParams::from_options(&o).is_err());
    }

    #[test]
    fn channel_weights_steer_the_fusion() {
        /// Plain reciprocal-rank fusion.
        const EQUAL: ChannelWeights = ChannelWeights { vector: 1.0, lexical: 1.0, summary: 1.0 };
        let hit = |id: u128| ScoredResult {
            id: Uuid::from_u128(id),
            score: 0.1,
            payload: json!({"id": Uuid::from_u128(id).to_string(), "text": format!("chunk {id}")})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let lexical = |id: u128| json!({"id": Uuid::from_u128(id).to_string(), "text": format!("chunk {id}")});
        // Vector ranks 1 then 2; the lexical channel ranks 2 then 3.
        let fuse = |weights: ChannelWeights| {
            let mut o = RetrieverOptions::with_top_k(3);
            o.search.retriever_specific_config.insert("use_importance_weight".into(), json!(false));
            let params = HybridParams { weights, ..HybridParams::from_options(&o).unwrap_or_else(|e| panic!("{e}")) };
            fuse_chunks(vec![hit(1), hit(2)], &[], vec![lexical(2), lexical(3)], &HashMap::new(), &params, &None)
                .iter()
                .filter_map(|c| c.get("text").and_then(Value::as_str).map(str::to_string))
                .collect::<Vec<_>>()
        };
        // Equal weights: the chunk both channels found comes first.
        assert_eq!(fuse(EQUAL), ["chunk 2", "chunk 1", "chunk 3"]);
        // Lexical weighted out: the vector order, the lexical-only chunk last.
        let vector_only = ChannelWeights { lexical: 0.0, ..EQUAL };
        assert_eq!(fuse(vector_only), ["chunk 1", "chunk 2", "chunk 3"]);
        // Lexical weighted up: its first pick leads, its second passes the vector's first.
        let lexical_heavy = ChannelWeights { lexical: 3.0, ..EQUAL };
        assert_eq!(fuse(lexical_heavy), ["chunk 2", "chunk 3", "chunk 1"]);
        // The defaults lean to BM25: 1.5/32 for its second pick beats 1/31 for the vector's first.
        assert_eq!(fuse(ChannelWeights::default()), ["chunk 2", "chunk 3", "chunk 1"]);
        let mut o = RetrieverOptions::with_top_k(3);
        o.search.retriever_specific_config.insert("lexical_weight".into(), json!(-1));
        assert!(HybridParams::from_options(&o).is_err(), "a negative weight is refused");
    }
}
