//! Structured evidence for the graph family (docs/retrievers.md): the nodes
//! and edges placed in the context, then the source chunks that support each
//! edge. Cognee reads those from an "edge-evidence sidecar" table; here they
//! come from the graph itself: a chunk endpoint supports its edge, and an
//! edge between entities is supported by the chunks that `contains` both
//! endpoints (else the source endpoint).

use std::collections::{HashMap, HashSet};

use recall_core::model::node_types::DOCUMENT_CHUNK;
use recall_core::ports::EdgeProjection;
use recall_core::{ids, Node};
use serde_json::Value;
use uuid::Uuid;

use super::search::Triplet;
use crate::evidence::{source_ref_key, EvidenceReference};
use crate::DatasetPorts;

fn edge_artifact_id(t: &Triplet) -> String {
    t.edge.properties.get("edge_object_id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| {
        ids::edge_object_id(t.edge.source_node_id, &t.edge.relationship_name, t.edge.target_node_id).to_string()
    })
}

/// The nodes and edges of the triplets, each once, in order:
/// `{"node_ids": [...], "edge_ids": [...]}`; `None` without triplets.
pub(crate) fn used_element_ids(triplets: &[Triplet]) -> Option<Value> {
    if triplets.is_empty() {
        return None;
    }
    let mut nodes: Vec<String> = Vec::new();
    let mut edges: Vec<String> = Vec::new();
    for t in triplets {
        for id in [t.node1.id, t.node2.id] {
            let id = id.to_string();
            if !nodes.contains(&id) {
                nodes.push(id);
            }
        }
        let edge = edge_artifact_id(t);
        if !edges.contains(&edge) {
            edges.push(edge);
        }
    }
    Some(serde_json::json!({"node_ids": nodes, "edge_ids": edges}))
}

fn label(node: &Node) -> String {
    super::render::node_name_and_content(node).0
}

/// Every reference, ranks continuing across kinds. Sidecar-equivalent
/// lookups that fail are logged and skipped.
pub(crate) async fn graph_evidence(ctx: &DatasetPorts, triplets: &[Triplet]) -> Vec<EvidenceReference> {
    let dataset_id = ctx.dataset.id.to_string();
    let mut out = Vec::new();
    let mut seen_nodes = HashSet::new();
    for t in triplets {
        for node in [&t.node1, &t.node2] {
            if seen_nodes.insert(node.id) {
                out.push(EvidenceReference {
                    kind: "graph_node".into(),
                    artifact_id: node.id.to_string(),
                    role: "used_as_context".into(),
                    dataset_id: Some(dataset_id.clone()),
                    label: Some(label(node)),
                    rank: Some(out.len()),
                    ..Default::default()
                });
            }
        }
    }
    let mut seen_edges = HashSet::new();
    for t in triplets {
        let id = edge_artifact_id(t);
        if seen_edges.insert(id.clone()) {
            out.push(EvidenceReference {
                kind: "graph_edge".into(),
                artifact_id: id,
                role: "used_as_context".into(),
                dataset_id: Some(dataset_id.clone()),
                source_node_id: Some(t.edge.source_node_id.to_string()),
                target_node_id: Some(t.edge.target_node_id.to_string()),
                relationship_name: Some(t.edge.relationship_name.clone()),
                rank: Some(out.len()),
                ..Default::default()
            });
        }
    }
    if triplets.is_empty() {
        return out;
    }
    match supporting_chunks(ctx, triplets).await {
        Ok(segments) => {
            for (edge_id, chunk) in segments {
                let p = &chunk.properties;
                let data_id = p.get("document_id").and_then(Value::as_str).map(str::to_string);
                out.push(EvidenceReference {
                    kind: "segment".into(),
                    artifact_id: chunk.id.to_string(),
                    role: "supports_assertion".into(),
                    dataset_id: Some(dataset_id.clone()),
                    source_ref_key: data_id.as_deref().map(|d| source_ref_key(&dataset_id, d)),
                    data_id,
                    chunk_id: Some(chunk.id.to_string()),
                    chunk_index: p.get("chunk_index").and_then(Value::as_i64),
                    document_name: p.get("document_name").and_then(Value::as_str).map(str::to_string),
                    assertion_id: Some(edge_id),
                    rank: Some(out.len()),
                    ..Default::default()
                });
            }
        }
        Err(e) => tracing::warn!(error = %e, "edge evidence lookup failed; no source chunks"),
    }
    out
}

/// (edge artifact id, supporting chunk) pairs, in triplet order.
///
/// Reads the `contains` edges of the entities of the triplets between
/// entities (names only, no properties), then the chosen chunks alone: not
/// every neighbour of every entity, which for a widespread entity is
/// thousands of chunk texts. A result whose triplets all touch a chunk reads
/// no edge at all.
async fn supporting_chunks(ctx: &DatasetPorts, triplets: &[Triplet]) -> recall_core::Result<Vec<(String, Node)>> {
    // Only a triplet with no chunk endpoint needs the chunks containing its
    // entities: a chunk endpoint supports its edge by itself.
    let entity_ids: HashSet<Uuid> = triplets
        .iter()
        .filter(|t| t.node1.node_type != DOCUMENT_CHUNK && t.node2.node_type != DOCUMENT_CHUNK)
        .flat_map(|t| [t.node1.id, t.node2.id])
        .collect();
    let edges = if entity_ids.is_empty() {
        Vec::new()
    } else {
        let ids: Vec<Uuid> = entity_ids.iter().copied().collect();
        ctx.graph.edges_touching(ctx.dataset.id, &ids, EdgeProjection::Only(&[])).await?
    };
    // entity → chunks that contain it, in graph order (a `contains` edge
    // runs from a chunk to an entity; the chunk's type is checked on read).
    let mut containing: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for e in &edges {
        if e.relationship_name == "contains" && entity_ids.contains(&e.target_node_id) {
            containing.entry(e.target_node_id).or_default().push(e.source_node_id);
        }
    }
    // Per triplet: its chunk endpoints, else the chunks containing both
    // entities, else those containing the source.
    let mut picks: Vec<(String, Vec<Uuid>)> = Vec::new();
    let mut wanted: HashSet<Uuid> = HashSet::new();
    let mut direct: HashMap<Uuid, Node> = HashMap::new();
    for t in triplets {
        let ends: Vec<&Node> = [&t.node1, &t.node2].into_iter().filter(|n| n.node_type == DOCUMENT_CHUNK).collect();
        let support: Vec<Uuid> = if !ends.is_empty() {
            for n in &ends {
                direct.insert(n.id, (*n).clone());
            }
            ends.iter().map(|n| n.id).collect()
        } else {
            let a = containing.get(&t.node1.id).cloned().unwrap_or_default();
            let b = containing.get(&t.node2.id).cloned().unwrap_or_default();
            let both: Vec<Uuid> = a.iter().filter(|c| b.contains(c)).copied().collect();
            let pick = if both.is_empty() { a } else { both };
            wanted.extend(pick.iter().copied());
            pick
        };
        picks.push((edge_artifact_id(t), support));
    }
    wanted.retain(|id| !direct.contains_key(id));
    let wanted: Vec<Uuid> = wanted.into_iter().collect();
    let mut chunks: HashMap<Uuid, Node> = ctx
        .graph
        .get_nodes(ctx.dataset.id, &wanted)
        .await?
        .into_iter()
        .filter(|n| n.node_type == DOCUMENT_CHUNK)
        .map(|n| (n.id, n))
        .collect();
    chunks.extend(direct);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (edge_id, support) in picks {
        for id in support {
            if let Some(chunk) = chunks.get(&id) {
                if seen.insert((edge_id.clone(), id)) {
                    out.push((edge_id.clone(), chunk.clone()));
                }
            }
        }
    }
    Ok(out)
}
