//! `brute_force_triplet_search` (docs/retrievers.md): one query embedding,
//! every graph collection searched concurrently, a projection around the
//! seeds, distances mapped onto nodes and edges, triplets scored and the
//! `top_k` closest kept.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;
use recall_core::model::collections::{
    DOCUMENT_CHUNK_TEXT, EDGE_TYPE_RELATIONSHIP_NAME, ENTITY_NAME, ENTITY_TYPE_NAME, GLOBAL_CONTEXT_SUMMARY_TEXT,
    TEXT_DOCUMENT_NAME, TEXT_SUMMARY_TEXT,
};
use recall_core::ports::{EdgeKey, EdgeProjection, NodeSetFilter, NodeSketch, Sketch};
use recall_core::{Edge, Node, RecallError, Result, Subgraph};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{DatasetPorts, RetrieverOptions};

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

/// The edge properties of the memory fragment (docs/retrievers.md, "brute_force_triplet_search"; `relationship_name` and `edge_text` are fields of every edge). The last,
/// `feedback_weight`, is projected only when feedback_influence > 0.
const FRAGMENT_EDGE_PROPERTIES: &[&str] =
    &["edge_object_id", "conflict_marks", "conflict_marks_json", "effective_date", "feedback_weight"];

impl TripletSearch {
    /// Whether feedback weights enter the scores (influence > 0).
    pub fn uses_feedback(&self) -> bool {
        self.feedback_influence > 0.0
    }

    /// The edge properties this search projects.
    pub fn edge_projection(&self) -> EdgeProjection {
        let keys = FRAGMENT_EDGE_PROPERTIES.len() - usize::from(!self.uses_feedback());
        EdgeProjection::Only(&FRAGMENT_EDGE_PROPERTIES[..keys])
    }

    /// The search/recall defaults with the caller's options.
    pub fn from_options(options: &RetrieverOptions, default_top_k: usize) -> Result<Self> {
        let fi = options.search.feedback_influence;
        if !(0.0..=1.0).contains(&fi) || fi.is_nan() {
            return Err(RecallError::Validation {
                name: "InvalidFeedbackInfluenceError",
                message: "feedback_influence must be in range [0, 1]".into(),
            });
        }
        Ok(Self {
            top_k: options.top_k().unwrap_or(default_top_k),
            wide_search_top_k: options.search.wide_search_top_k().unwrap_or(DEFAULT_WIDE_SEARCH_TOP_K),
            penalty: options.search.triplet_distance_penalty.unwrap_or(DEFAULT_TRIPLET_DISTANCE_PENALTY),
            feedback_influence: fi,
            neighborhood_depth: options.search.neighborhood_depth(),
            neighborhood_seed_top_k: options.search.neighborhood_seed_top_k(),
            node_filter: options.node_set_filter(),
        })
    }
}

/// Runs the search. An empty graph is `NoDataError`; nothing found is `[]`.
pub async fn brute_force_triplet_search(
    ctx: &DatasetPorts,
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
    // Ids and distances only: the ranking reads no payload.
    let searches = NODE_COLLECTIONS
        .iter()
        .map(|c| ctx.vectors.search_ids(dataset, c, &vector, limit, params.node_filter.clone()))
        .chain(std::iter::once(ctx.vectors.search_ids(dataset, EDGE_TYPE_RELATIONSHIP_NAME, &vector, limit, None)));
    let mut results = join_all(searches).await.into_iter().collect::<Result<Vec<_>>>()?;
    let edge_hits = results.pop().unwrap_or_default();
    let node_hits: Vec<(Uuid, f64)> = results.into_iter().flatten().collect();
    if node_hits.is_empty() && edge_hits.is_empty() {
        return Ok(Vec::new());
    }

    // Best distance per node id (the minimum over collections).
    let mut node_distance: HashMap<Uuid, f64> = HashMap::new();
    for &(id, score) in &node_hits {
        let d = node_distance.entry(id).or_insert(score);
        if score < *d {
            *d = score;
        }
    }
    let edge_distance: HashMap<Uuid, f64> = edge_hits.into_iter().collect();

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
/// The default projection (every edge touching a seed) is ranked lazily and
/// exactly, on sketches (keys, type keys and weights; no text): the edges
/// between two seeds first; then the edges of a hit type around the seeds
/// that could still reach the `top_k`-th score; then, around the seeds that
/// could reach it even through an unmatched edge, every edge. An edge left
/// unread scores above the final `top_k`-th score, so the result equals
/// ranking the whole 1-hop projection. Only the winners are read in full.
/// With the dataset's sketch in memory and no feedback, every sketch read
/// (between the seeds and around them) is answered from it.
async fn rank_projection(
    ctx: &DatasetPorts,
    params: &TripletSearch,
    node_distance: &HashMap<Uuid, f64>,
    edge_distance: &HashMap<Uuid, f64>,
) -> Result<Vec<Triplet>> {
    let feedback = params.uses_feedback();
    if params.neighborhood_depth.is_some() || params.node_filter.is_some() {
        let fragment = project(ctx, params, node_distance).await?;
        return Ok(triplets_of(&fragment, node_distance, edge_distance, params));
    }
    let dataset = ctx.dataset.id;
    let mut ids: Vec<Uuid> = node_distance.keys().copied().collect();
    ids.sort();
    // The sketch in memory answers every sketch read, except with feedback
    // weights (not cached).
    let cached = ctx.sketch.as_deref().filter(|_| !feedback);
    let read = std::time::Instant::now();
    let mut sketch = match cached {
        _ if ids.is_empty() => Sketch::default(),
        Some(index) => index.between(&ids),
        _ => ctx.graph.ranking().sketch_between(dataset, &ids, feedback).await?,
    };
    let read_ms = read.elapsed().as_secs_f64() * 1e3;
    let seeds: Vec<(Uuid, f64)> = sketch.nodes.iter().map(|n| (n.id, node_score(n, node_distance, params))).collect();
    let mut ranked = rank_sketch(&sketch, node_distance, edge_distance, params);
    let core_edges = sketch.edges.len();

    // Edges of a hit type: at least seed + unmatched node + best hit.
    let hit_floor = unmatched_node_floor(params) + best_hit_score(edge_distance, params);
    let reach = |floor: f64, ranked: &[(f64, usize)]| -> Vec<Uuid> {
        let threshold = kth_score(ranked, params.top_k);
        seeds.iter().filter(|(_, score)| score + floor <= threshold + TIE_EPSILON).map(|(id, _)| *id).collect()
    };
    let expanding = std::time::Instant::now();
    let by_type = reach(hit_floor, &ranked);
    if !by_type.is_empty() {
        let mut types: Vec<Uuid> = edge_distance.keys().copied().collect();
        types.sort();
        let around = match cached {
            Some(index) => index.around(&by_type, Some(types.as_slice())),
            None => Sketch::of(
                &ctx.graph.ranking().edges_around_of_types(dataset, &by_type, &types, params.edge_projection()).await?,
                feedback,
            ),
        };
        sketch.extend(around);
        ranked = rank_sketch(&sketch, node_distance, edge_distance, params);
    }
    // Any other edge: at least seed + unmatched node + unmatched edge.
    let miss_floor = unmatched_node_floor(params) + element_score(params.penalty, EDGE_IMPORTANCE, 0.5, params);
    let every = reach(miss_floor, &ranked);
    if !every.is_empty() {
        let around = match cached {
            Some(index) => index.around(&every, None),
            None => Sketch::of(&ctx.graph.edges_around(dataset, &every, params.edge_projection()).await?, feedback),
        };
        sketch.extend(around);
        ranked = rank_sketch(&sketch, node_distance, edge_distance, params);
    }
    tracing::debug!(
        seeds = seeds.len(),
        core_edges,
        expanded_by_type = by_type.len(),
        expanded = every.len(),
        sketch_edges = sketch.edges.len(),
        read_ms,
        expand_ms = expanding.elapsed().as_secs_f64() * 1e3,
        "pruned projection"
    );
    if sketch.edges.is_empty() {
        // Nothing touches the hits: Cognee ranks the whole graph.
        let fragment = ctx.graph.get_graph(dataset).await?;
        return Ok(triplets_of(&fragment, node_distance, edge_distance, params));
    }
    // The winners, read in full.
    let reading = std::time::Instant::now();
    let keys: Vec<EdgeKey> = ranked.iter().map(|(_, i)| sketch.edges[*i].key()).collect();
    let edges = ctx.graph.ranking().get_edges(dataset, &keys, params.edge_projection()).await?;
    let mut ends: Vec<Uuid> = keys.iter().flat_map(|k| [k.0, k.2]).collect();
    ends.sort();
    ends.dedup();
    let nodes: HashMap<Uuid, Node> =
        ctx.graph.get_nodes(dataset, &ends).await?.into_iter().map(|n| (n.id, n)).collect();
    let mut edges: HashMap<EdgeKey, Edge> = edges.into_iter().map(|e| (e.key(), e)).collect();
    tracing::debug!(winners = keys.len(), read_ms = reading.elapsed().as_secs_f64() * 1e3, "winners read");
    // A winner deleted since the sketch was read is left out.
    Ok(ranked
        .into_iter()
        .zip(keys)
        .filter_map(|((score, _), key)| {
            let edge = edges.remove(&key)?;
            let node1 = nodes.get(&key.0)?.clone();
            let node2 = nodes.get(&key.2)?.clone();
            Some(Triplet { node1, edge, node2, score })
        })
        .collect())
}

/// The `k`-th best score ranked so far; infinite while fewer are ranked.
fn kth_score(ranked: &[(f64, usize)], k: usize) -> f64 {
    match ranked.last() {
        Some((score, _)) if ranked.len() >= k => *score,
        _ => f64::INFINITY,
    }
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

/// The lowest score an edge of a hit type can have: its hit's distance with
/// the most favourable feedback; infinite without hits.
fn best_hit_score(edge_distance: &HashMap<Uuid, f64>, params: &TripletSearch) -> f64 {
    edge_distance.values().map(|d| element_score(*d, EDGE_IMPORTANCE, 1.0, params)).fold(f64::INFINITY, f64::min)
}

/// The memory fragment of the explicit projections: k hops around the
/// closest seeds, or the node-set subgraph.
async fn project(ctx: &DatasetPorts, params: &TripletSearch, node_distance: &HashMap<Uuid, f64>) -> Result<Subgraph> {
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

/// A weight in [0, 1] (Cognee's DataPoint bounds); 0.5 when absent or invalid.
fn weight(value: Option<&Value>) -> f64 {
    value.and_then(Value::as_f64).filter(|w| w.is_finite()).map_or(0.5, |w| w.clamp(0.0, 1.0))
}

fn node_score(n: &NodeSketch, node_distance: &HashMap<Uuid, f64>, params: &TripletSearch) -> f64 {
    let d = node_distance.get(&n.id).copied().unwrap_or(params.penalty);
    element_score(d, weight(n.importance_weight.as_ref()), weight(n.feedback_weight.as_ref()), params)
}

/// One element's contribution (docs/retrievers.mdstep 10).
fn element_score(distance: f64, importance: f64, feedback: f64, params: &TripletSearch) -> f64 {
    let mut d = (2.0 - importance) * distance;
    let fi = params.feedback_influence;
    if fi > 0.0 && (0.0..=2.0).contains(&d) && d < params.penalty {
        d = 2.0 * ((1.0 - fi) * d / 2.0 + fi * (1.0 - feedback.clamp(0.0, 1.0)));
    }
    d
}

/// Ranks a sketch's edges: the `top_k` lowest scores as (score, edge
/// index), best first. An edge repeated keeps its first occurrence; an edge
/// with an endpoint not in the sketch is skipped; ties go in edge-key order,
/// so every store ranks alike.
fn rank_sketch(
    sketch: &Sketch,
    node_distance: &HashMap<Uuid, f64>,
    edge_distance: &HashMap<Uuid, f64>,
    params: &TripletSearch,
) -> Vec<(f64, usize)> {
    let mut node_scores: HashMap<Uuid, f64> = HashMap::with_capacity(sketch.nodes.len());
    for n in &sketch.nodes {
        node_scores.entry(n.id).or_insert_with(|| node_score(n, node_distance, params));
    }
    let mut seen_edges = HashSet::with_capacity(sketch.edges.len());
    let mut scored: Vec<(f64, usize)> = Vec::with_capacity(sketch.edges.len());
    for (i, edge) in sketch.edges.iter().enumerate() {
        if !seen_edges.insert((edge.source_node_id, edge.relationship_name.as_str(), edge.target_node_id)) {
            continue;
        }
        let (Some(s1), Some(s2)) = (node_scores.get(&edge.source_node_id), node_scores.get(&edge.target_node_id))
        else {
            continue;
        };
        let ed = edge_distance.get(&edge.type_key).copied().unwrap_or(params.penalty);
        let es = element_score(ed, EDGE_IMPORTANCE, weight(edge.feedback_weight.as_ref()), params);
        scored.push((s1 + s2 + es, i));
    }
    let edges = &sketch.edges;
    let key = |i: usize| (edges[i].source_node_id, edges[i].relationship_name.as_str(), edges[i].target_node_id);
    let by_score = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then_with(|| key(a.1).cmp(&key(b.1)));
    if scored.len() > params.top_k && params.top_k > 0 {
        scored.select_nth_unstable_by(params.top_k - 1, by_score);
        scored.truncate(params.top_k);
    }
    scored.sort_by(by_score);
    scored.truncate(params.top_k);
    scored
}

/// Ranks a fully read fragment; only the `top_k` winners are cloned.
fn triplets_of(
    fragment: &Subgraph,
    node_distance: &HashMap<Uuid, f64>,
    edge_distance: &HashMap<Uuid, f64>,
    params: &TripletSearch,
) -> Vec<Triplet> {
    let sketch = Sketch::of(fragment, params.uses_feedback());
    let mut nodes: HashMap<Uuid, &Node> = HashMap::with_capacity(fragment.nodes.len());
    for n in &fragment.nodes {
        nodes.entry(n.id).or_insert(n);
    }
    rank_sketch(&sketch, node_distance, edge_distance, params)
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
        let out = triplets_of(&fragment, &nd, &HashMap::new(), &params());
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
