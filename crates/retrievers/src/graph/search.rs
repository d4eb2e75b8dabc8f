//! `brute_force_triplet_search` (retrievers.md §2.1): one query embedding,
//! every graph collection searched concurrently, a projection around the
//! seeds, distances mapped onto nodes and edges, triplets scored and the
//! `top_k` closest kept.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;
use recall_core::ids;
use recall_core::model::collections::{
    DOCUMENT_CHUNK_TEXT, EDGE_TYPE_RELATIONSHIP_NAME, ENTITY_NAME, ENTITY_TYPE_NAME, GLOBAL_CONTEXT_SUMMARY_TEXT,
    TEXT_DOCUMENT_NAME, TEXT_SUMMARY_TEXT,
};
use recall_core::ports::{NodeSetFilter, ScoredResult};
use recall_core::{Edge, Node, RecallError, Result, Subgraph};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{RetrievalContext, RetrieverOptions};

/// The node collections searched for seeds, then the edge collection.
pub const NODE_COLLECTIONS: &[&str] = &[
    ENTITY_NAME,
    ENTITY_TYPE_NAME,
    TEXT_SUMMARY_TEXT,
    DOCUMENT_CHUNK_TEXT,
    TEXT_DOCUMENT_NAME,
    GLOBAL_CONTEXT_SUMMARY_TEXT,
];

pub const DEFAULT_WIDE_SEARCH_TOP_K: usize = 100;
pub const DEFAULT_TRIPLET_DISTANCE_PENALTY: f64 = 6.5;

/// `NoDataError` for graph-family searches on an empty graph.
pub fn empty_graph() -> RecallError {
    RecallError::NoData("The knowledge graph is empty. Ingest data through Cognee before searching.".into())
}

/// One scored (node1, edge, node2) triplet: the graph family's retrieved object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Triplet {
    pub node1: Node,
    pub edge: Edge,
    pub node2: Node,
    /// Sum of the three weighted distances; lower is closer.
    pub score: f64,
}

impl Triplet {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Parses retrieved objects back; objects of another shape are skipped.
    pub fn from_values(objects: &[Value]) -> Vec<Triplet> {
        objects.iter().filter_map(|o| serde_json::from_value(o.clone()).ok()).collect()
    }
}

/// The knobs of one triplet search.
#[derive(Debug, Clone)]
pub struct TripletSearch {
    pub top_k: usize,
    pub wide_search_top_k: usize,
    pub penalty: f64,
    pub feedback_influence: f64,
    pub neighborhood_depth: Option<usize>,
    pub neighborhood_seed_top_k: Option<usize>,
    pub node_filter: Option<NodeSetFilter>,
}

impl TripletSearch {
    /// The search/recall defaults with the caller's options.
    pub fn from_options(options: &RetrieverOptions, default_top_k: usize) -> Result<Self> {
        let fi = options.feedback_influence;
        if !(0.0..=1.0).contains(&fi) || fi.is_nan() {
            return Err(RecallError::Validation {
                name: "InvalidFeedbackInfluenceError",
                message: "feedback_influence must be in range [0, 1]".into(),
            });
        }
        Ok(Self {
            top_k: options.top_k.unwrap_or(default_top_k),
            wide_search_top_k: options.wide_search_top_k.unwrap_or(DEFAULT_WIDE_SEARCH_TOP_K),
            penalty: options.triplet_distance_penalty.unwrap_or(DEFAULT_TRIPLET_DISTANCE_PENALTY),
            feedback_influence: fi,
            neighborhood_depth: options.neighborhood_depth,
            neighborhood_seed_top_k: options.neighborhood_seed_top_k,
            node_filter: options.node_set_filter(),
        })
    }
}

/// Runs the search. An empty graph is `NoDataError`; nothing found is `[]`.
pub async fn brute_force_triplet_search(
    ctx: &RetrievalContext,
    query: &str,
    params: &TripletSearch,
) -> Result<Vec<Triplet>> {
    if query.trim().is_empty() {
        return Err(RecallError::empty_query());
    }
    if params.top_k == 0 {
        return Err(RecallError::top_k_not_positive());
    }
    let dataset = ctx.dataset.id;
    if ctx.graph.is_empty(dataset).await? {
        return Err(empty_graph());
    }
    let started = std::time::Instant::now();
    let vector = ctx.embed_query(query).await?;
    // With a node-set filter there is no per-collection cap: hits are filtered instead.
    let limit = if params.node_filter.is_some() { None } else { Some(params.wide_search_top_k) };
    let searches = NODE_COLLECTIONS
        .iter()
        .map(|c| ctx.vectors.search(dataset, c, &vector, limit, params.node_filter.clone()))
        .chain(std::iter::once(ctx.vectors.search(dataset, EDGE_TYPE_RELATIONSHIP_NAME, &vector, limit, None)));
    let mut results = join_all(searches).await.into_iter().collect::<Result<Vec<_>>>()?;
    let edge_hits = results.pop().unwrap_or_default();
    let node_hits: Vec<ScoredResult> = results.into_iter().flatten().collect();
    if node_hits.is_empty() && edge_hits.is_empty() {
        return Ok(Vec::new());
    }

    // Best distance per node id (the minimum over collections).
    let mut node_distance: HashMap<Uuid, f64> = HashMap::new();
    for hit in &node_hits {
        let d = node_distance.entry(hit.id).or_insert(hit.score);
        if hit.score < *d {
            *d = hit.score;
        }
    }
    let edge_distance: HashMap<Uuid, f64> = edge_hits.iter().map(|h| (h.id, h.score)).collect();

    let searched = started.elapsed();
    let fragment = match project(ctx, params, &node_distance).await {
        Ok(f) => f,
        Err(e @ RecallError::InvalidInput(_)) => return Err(e),
        Err(e) => {
            tracing::warn!(error = %e, "graph projection failed; no triplets");
            Subgraph::default()
        }
    };
    let projected = started.elapsed();
    let (nodes, edges) = (fragment.nodes.len(), fragment.edges.len());
    let ranked = rank_triplets(fragment, &node_distance, &edge_distance, params);
    tracing::debug!(
        seeds = node_distance.len(),
        nodes,
        edges,
        vector_ms = searched.as_secs_f64() * 1e3,
        projection_ms = (projected - searched).as_secs_f64() * 1e3,
        ranking_ms = (started.elapsed() - projected).as_secs_f64() * 1e3,
        "brute_force_triplet_search"
    );
    Ok(ranked)
}

/// The memory fragment: k-hop around seeds, the node-set subgraph, or 1 hop
/// around every hit (the whole graph when that finds nothing).
async fn project(
    ctx: &RetrievalContext,
    params: &TripletSearch,
    node_distance: &HashMap<Uuid, f64>,
) -> Result<Subgraph> {
    let dataset = ctx.dataset.id;
    let mut seeds: Vec<(Uuid, f64)> = node_distance.iter().map(|(id, d)| (*id, *d)).collect();
    seeds.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    if let Some(depth) = params.neighborhood_depth {
        if seeds.is_empty() {
            return Err(RecallError::invalid_input(
                "neighborhood_depth requires seed node IDs from vector search (set wide_search_top_k to a positive integer)",
            ));
        }
        let take = params.neighborhood_seed_top_k.unwrap_or(seeds.len());
        let ids: Vec<Uuid> = seeds.iter().take(take).map(|s| s.0).collect();
        return ctx.graph.neighborhood(dataset, &ids, depth.max(1)).await;
    }
    if let Some(filter) = &params.node_filter {
        return ctx.graph.nodeset_subgraph(dataset, filter).await;
    }
    let ids: Vec<Uuid> = seeds.iter().map(|s| s.0).collect();
    let fragment = if ids.is_empty() { Subgraph::default() } else { ctx.graph.edges_around(dataset, &ids).await? };
    if fragment.edges.is_empty() {
        return ctx.graph.get_graph(dataset).await;
    }
    Ok(fragment)
}

fn weight(props: &serde_json::Map<String, Value>, key: &str) -> f64 {
    props.get(key).and_then(Value::as_f64).filter(|w| w.is_finite()).unwrap_or(0.5)
}

/// One element's contribution (retrievers.md §2.1 step 10).
fn element_score(distance: f64, importance: f64, feedback: f64, params: &TripletSearch) -> f64 {
    let mut d = (2.0 - importance) * distance;
    let fi = params.feedback_influence;
    if fi > 0.0 && (0.0..=2.0).contains(&d) && d < params.penalty {
        d = 2.0 * ((1.0 - fi) * d / 2.0 + fi * (1.0 - feedback.clamp(0.0, 1.0)));
    }
    d
}

fn rank_triplets(
    fragment: Subgraph,
    node_distance: &HashMap<Uuid, f64>,
    edge_distance: &HashMap<Uuid, f64>,
    params: &TripletSearch,
) -> Vec<Triplet> {
    let mut nodes: HashMap<Uuid, Node> = HashMap::with_capacity(fragment.nodes.len());
    for n in fragment.nodes {
        nodes.entry(n.id).or_insert(n);
    }
    let node_scores: HashMap<Uuid, f64> = nodes
        .values()
        .map(|n| {
            let d = node_distance.get(&n.id).copied().unwrap_or(params.penalty);
            let w = weight(&n.properties, "importance_weight");
            (n.id, element_score(d, w, weight(&n.properties, "feedback_weight"), params))
        })
        .collect();
    // Score every edge by reference; clone only the winners.
    let mut seen_edges = HashSet::with_capacity(fragment.edges.len());
    let mut scored: Vec<(f64, usize)> = Vec::with_capacity(fragment.edges.len());
    for (i, edge) in fragment.edges.iter().enumerate() {
        if !seen_edges.insert((edge.source_node_id, edge.relationship_name.as_str(), edge.target_node_id)) {
            continue;
        }
        let (Some(s1), Some(s2)) = (node_scores.get(&edge.source_node_id), node_scores.get(&edge.target_node_id))
        else {
            continue;
        };
        let edge_type_id = ids::id_for("EdgeType", &[edge.edge_text.as_deref().unwrap_or(&edge.relationship_name)]);
        let ed = edge_distance.get(&edge_type_id).copied().unwrap_or(params.penalty);
        let es = element_score(ed, 0.5, weight(&edge.properties, "feedback_weight"), params);
        scored.push((s1 + s2 + es, i));
    }
    // Lowest first; ties keep projection order (a stable selection).
    let by_score = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if scored.len() > params.top_k && params.top_k > 0 {
        scored.select_nth_unstable_by(params.top_k - 1, by_score);
        scored.truncate(params.top_k);
    }
    scored.sort_by(by_score);
    scored.truncate(params.top_k);
    scored
        .into_iter()
        .filter_map(|(score, i)| {
            let edge = fragment.edges[i].clone();
            let node1 = nodes.get(&edge.source_node_id)?.clone();
            let node2 = nodes.get(&edge.target_node_id)?.clone();
            Some(Triplet { node1, edge, node2, score })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TripletSearch {
        TripletSearch {
            top_k: 2,
            wide_search_top_k: 100,
            penalty: 6.5,
            feedback_influence: 0.0,
            neighborhood_depth: None,
            neighborhood_seed_top_k: None,
            node_filter: None,
        }
    }

    #[test]
    fn unmatched_elements_score_the_weighted_penalty_and_top_k_is_stable() {
        let a = Node { id: Uuid::from_u128(1), node_type: "Entity".into(), properties: Default::default() };
        let b = Node { id: Uuid::from_u128(2), node_type: "Entity".into(), properties: Default::default() };
        let c = Node { id: Uuid::from_u128(3), node_type: "Entity".into(), properties: Default::default() };
        let fragment = Subgraph {
            nodes: vec![a.clone(), b.clone(), c.clone()],
            edges: vec![Edge::new(a.id, "x", c.id), Edge::new(a.id, "knows", b.id), Edge::new(b.id, "y", c.id)],
        };
        let mut nd = HashMap::new();
        nd.insert(a.id, 0.2);
        nd.insert(b.id, 0.4);
        let out = rank_triplets(fragment, &nd, &HashMap::new(), &params());
        assert_eq!(out.len(), 2);
        // a–b: 1.5·0.2 + 1.5·0.4 + 1.5·6.5
        assert!((out[0].score - (0.3 + 0.6 + 9.75)).abs() < 1e-9);
        assert_eq!(out[0].edge.relationship_name, "knows");
        // a–c (0.3 + 9.75 + 9.75) comes before b–c (0.6 + …).
        assert_eq!(out[1].edge.relationship_name, "x");
    }

    #[test]
    fn feedback_blends_only_matched_elements() {
        let mut p = params();
        p.feedback_influence = 0.5;
        // d = 1.5·0.4 = 0.6 → 2·(0.5·0.3 + 0.5·(1 − 1.0)) = 0.3
        assert!((element_score(0.4, 0.5, 1.0, &p) - 0.3).abs() < 1e-9);
        // the penalty is not blended
        assert!((element_score(6.5, 0.5, 1.0, &p) - 9.75).abs() < 1e-9);
    }
}
