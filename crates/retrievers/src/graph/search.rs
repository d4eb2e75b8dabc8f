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
use recall_core::ports::{EdgeProjection, NodeSetFilter, ScoredResult};
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

/// The edge properties of the memory fragment (spec/retrievers.md §2.1 step
/// 7; `relationship_name` and `edge_text` are fields of every edge). The last,
/// `feedback_weight`, is projected only when feedback_influence > 0.
const FRAGMENT_EDGE_PROPERTIES: &[&str] =
    &["edge_object_id", "conflict_marks", "conflict_marks_json", "effective_date", "feedback_weight"];

impl TripletSearch {
    /// The edge properties this search projects.
    pub fn edge_projection(&self) -> EdgeProjection {
        let keys = FRAGMENT_EDGE_PROPERTIES.len() - usize::from(self.feedback_influence <= 0.0);
        EdgeProjection::Only(&FRAGMENT_EDGE_PROPERTIES[..keys])
    }

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
    let ranked = match rank_projection(ctx, params, &node_distance, &edge_distance).await {
        Ok(r) => r,
        Err(e @ RecallError::InvalidInput(_)) => return Err(e),
        Err(e) => {
            tracing::warn!(error = %e, "graph projection failed; no triplets");
            Vec::new()
        }
    };
    tracing::debug!(
        seeds = node_distance.len(),
        vector_ms = searched.as_secs_f64() * 1e3,
        projection_and_ranking_ms = (started.elapsed() - searched).as_secs_f64() * 1e3,
        "brute_force_triplet_search"
    );
    Ok(ranked)
}

/// Projects the memory fragment and ranks its triplets.
///
/// The default projection (every edge touching a seed) is computed lazily
/// and exactly: the edges between two seeds are ranked first, and a seed's
/// other edges are read only when they could still beat (or tie) the
/// `top_k`-th score found so far — an edge with a non-seed endpoint scores
/// at least `seed score + unmatched-node floor + best edge score`. The
/// result equals ranking the whole 1-hop projection.
async fn rank_projection(
    ctx: &RetrievalContext,
    params: &TripletSearch,
    node_distance: &HashMap<Uuid, f64>,
    edge_distance: &HashMap<Uuid, f64>,
) -> Result<Vec<Triplet>> {
    if params.neighborhood_depth.is_some() || params.node_filter.is_some() {
        let fragment = project(ctx, params, node_distance).await?;
        return Ok(rank_triplets(&fragment, node_distance, edge_distance, params));
    }
    let dataset = ctx.dataset.id;
    let mut ids: Vec<Uuid> = node_distance.keys().copied().collect();
    ids.sort();
    let read = std::time::Instant::now();
    let core = if ids.is_empty() {
        Subgraph::default()
    } else {
        ctx.graph.neighborhood(dataset, &ids, 0, params.edge_projection()).await?
    };
    let read_ms = read.elapsed().as_secs_f64() * 1e3;
    let first = rank_triplets(&core, node_distance, edge_distance, params);
    let threshold = match first.last() {
        Some(last) if first.len() >= params.top_k => last.score,
        _ => f64::INFINITY,
    };
    let floor = unmatched_node_floor(params) + best_edge_score(edge_distance, params);
    let expand: Vec<Uuid> = core
        .nodes
        .iter()
        .filter(|n| node_score(n, node_distance, params) + floor <= threshold + TIE_EPSILON)
        .map(|n| n.id)
        .collect();
    tracing::debug!(
        seeds = ids.len(),
        core_edges = core.edges.len(),
        expanded = expand.len(),
        threshold,
        read_ms,
        "pruned projection"
    );
    if expand.is_empty() && !first.is_empty() {
        return Ok(first);
    }
    let mut fragment = core;
    if !expand.is_empty() {
        let around = ctx.graph.edges_around(dataset, &expand, params.edge_projection()).await?;
        fragment.nodes.extend(around.nodes);
        fragment.edges.extend(around.edges);
    }
    if fragment.edges.is_empty() {
        // Nothing touches the hits: Cognee ranks the whole graph.
        fragment = ctx.graph.get_graph(dataset).await?;
    }
    Ok(rank_triplets(&fragment, node_distance, edge_distance, params))
}

/// Rounding slack when comparing a bound with a ranked score (sums of the
/// same terms in another order can differ in the last bit).
const TIE_EPSILON: f64 = 1e-9;

/// The lowest score a node with no vector hit can have: its distance is the
/// penalty, weighted by an importance of at most 1 (never blended, since the
/// blend applies below the penalty only).
fn unmatched_node_floor(params: &TripletSearch) -> f64 {
    let p = params.penalty;
    p.min(2.0 * p)
}

/// The lowest score any edge can have: the best of its possible distances
/// (each hit, or the penalty) with the most favourable feedback.
fn best_edge_score(edge_distance: &HashMap<Uuid, f64>, params: &TripletSearch) -> f64 {
    edge_distance
        .values()
        .copied()
        .chain(std::iter::once(params.penalty))
        .map(|d| element_score(d, EDGE_IMPORTANCE, 1.0, params))
        .fold(f64::INFINITY, f64::min)
}

/// The memory fragment of the explicit projections: k hops around the
/// closest seeds, or the node-set subgraph.
async fn project(
    ctx: &RetrievalContext,
    params: &TripletSearch,
    node_distance: &HashMap<Uuid, f64>,
) -> Result<Subgraph> {
    let dataset = ctx.dataset.id;
    if let Some(depth) = params.neighborhood_depth {
        if node_distance.is_empty() {
            return Err(RecallError::invalid_input(
                "neighborhood_depth requires seed node IDs from vector search (set wide_search_top_k to a positive integer)",
            ));
        }
        let mut seeds: Vec<(Uuid, f64)> = node_distance.iter().map(|(id, d)| (*id, *d)).collect();
        seeds.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let take = params.neighborhood_seed_top_k.unwrap_or(seeds.len());
        let ids: Vec<Uuid> = seeds.iter().take(take).map(|s| s.0).collect();
        return ctx.graph.neighborhood(dataset, &ids, depth.max(1), params.edge_projection()).await;
    }
    match &params.node_filter {
        Some(filter) => ctx.graph.nodeset_subgraph(dataset, filter).await,
        None => Ok(Subgraph::default()),
    }
}

/// Edges carry no importance of their own: the neutral weight.
const EDGE_IMPORTANCE: f64 = 0.5;

/// A weight property in [0, 1] (Cognee's DataPoint bounds); 0.5 when absent.
fn weight(props: &serde_json::Map<String, Value>, key: &str) -> f64 {
    props.get(key).and_then(Value::as_f64).filter(|w| w.is_finite()).map_or(0.5, |w| w.clamp(0.0, 1.0))
}

fn node_score(n: &Node, node_distance: &HashMap<Uuid, f64>, params: &TripletSearch) -> f64 {
    let d = node_distance.get(&n.id).copied().unwrap_or(params.penalty);
    element_score(d, weight(&n.properties, "importance_weight"), weight(&n.properties, "feedback_weight"), params)
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

/// Ranks a fragment's triplets by reference; only the `top_k` winners are cloned.
fn rank_triplets(
    fragment: &Subgraph,
    node_distance: &HashMap<Uuid, f64>,
    edge_distance: &HashMap<Uuid, f64>,
    params: &TripletSearch,
) -> Vec<Triplet> {
    let mut nodes: HashMap<Uuid, &Node> = HashMap::with_capacity(fragment.nodes.len());
    for n in &fragment.nodes {
        nodes.entry(n.id).or_insert(n);
    }
    let node_scores: HashMap<Uuid, f64> =
        nodes.values().map(|n| (n.id, node_score(n, node_distance, params))).collect();
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
        let es = element_score(ed, EDGE_IMPORTANCE, weight(&edge.properties, "feedback_weight"), params);
        scored.push((s1 + s2 + es, i));
    }
    // Lowest first; ties in edge-key order, so every store ranks alike.
    let edges = &fragment.edges;
    let key = |i: usize| (edges[i].source_node_id, edges[i].relationship_name.as_str(), edges[i].target_node_id);
    let by_score = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then_with(|| key(a.1).cmp(&key(b.1)));
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
            let node1 = (*nodes.get(&edge.source_node_id)?).clone();
            let node2 = (*nodes.get(&edge.target_node_id)?).clone();
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
        let out = rank_triplets(&fragment, &nd, &HashMap::new(), &params());
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
