//! The shapes of what cognify writes, shared by everything that reads or
//! rewrites them (forget, the global context index, re-embedding, the
//! crash-safe visibility layer): vector rows and payloads, edge texts, the
//! structural relationship names and an entity's description.

use std::collections::HashSet;

use recall_core::{Edge, Node, Subgraph};
use serde_json::{json, Map, Value};
use uuid::Uuid;

/// A row to embed: id, embedded text, payload, node-set tags.
pub(crate) type EmbedRow = (Uuid, String, Map<String, Value>, Vec<String>);

/// Relationship names of the structural edges (everything else is an extracted relation).
pub(crate) const STRUCTURAL_EDGES: &[&str] = &["is_part_of", "contains", "is_a", "made_from", "summarized_in"];

/// The relation-edge property naming the document whose words the edge
/// text is (absent on edges written before it existed).
pub(crate) const TEXT_DOCUMENT_ID: &str = "text_document_id";

/// What a `contains` edge's text starts with when the chunk described the entity.
pub(crate) const MENTIONS_PREFIX: &str = "Document chunk mentions ";

/// A label for edge texts: whitespace-collapsed, at most 80 characters.
pub(crate) fn label(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect()
}

/// The default edge text: "<source label> <relationship with spaces> <target label>."
pub(crate) fn default_edge_text(source: &str, relationship: &str, target: &str) -> String {
    let rel = if relationship.trim().is_empty() { "related to".to_string() } else { relationship.replace('_', " ") };
    format!("{} {} {}.", label(source), rel, label(target))
}

pub(crate) fn prop_str<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.properties.get(key).and_then(Value::as_str)
}

/// An entity's `Entity_name` row: its name embedded, its description carried.
pub(crate) fn entity_row(id: Uuid, name: &str, description: &str, tags: &[String]) -> EmbedRow {
    let extra = [("name", json!(name)), ("description", json!(description)), ("type", json!("Entity"))];
    (id, name.to_string(), payload(id, name, &extra), tags.to_vec())
}

/// A vector payload: id, text, and extra fields.
pub(crate) fn payload(id: Uuid, text: &str, extra: &[(&str, Value)]) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("id".into(), json!(id.to_string()));
    p.insert("text".into(), json!(text));
    for (k, v) in extra {
        p.insert((*k).to_string(), v.clone());
    }
    p
}

/// An entity's description without the parts only `gone` chunks gave it,
/// or `None` when nothing changes. A chunk's part is the description its
/// `contains` edge quotes ("Document chunk mentions <name>: <part>"); a part
/// another chunk also gave stays.
pub(crate) fn description_without<'a>(
    entity: &Node,
    contains: impl IntoIterator<Item = &'a Edge>,
    gone: impl Fn(&Uuid) -> bool,
) -> Option<String> {
    let name = prop_str(entity, "name").unwrap_or("");
    let old = prop_str(entity, "description").unwrap_or("");
    let (mut dropped, mut kept) = (Vec::new(), Vec::new());
    for e in contains.into_iter().filter(|e| e.relationship_name == "contains" && e.target_node_id == entity.id) {
        let part = e
            .edge_text
            .as_deref()
            .and_then(|t| t.strip_prefix(MENTIONS_PREFIX))
            .and_then(|t| t.strip_prefix(name))
            .and_then(|t| t.strip_prefix(": "));
        if let Some(part) = part {
            if gone(&e.source_node_id) {
                dropped.push(part);
            } else {
                kept.push(part);
            }
        }
    }
    let mut description = old.to_string();
    for part in dropped.iter().filter(|p| !kept.iter().any(|k| k.contains(**p))) {
        description = description.replacen(part, "", 1);
    }
    let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
    (description != old).then_some(description)
}

/// The text an edge adds to its EdgeType row's count: any edge's but the
/// global context index's own `summarized_in` links (one text shared by
/// every chunk summary). Only a change to an edge with a counted text can
/// change a count, so a write collects these texts alone.
pub(crate) fn counted_text(edge: &Edge) -> Option<&String> {
    edge.edge_text.as_ref().filter(|_| edge.relationship_name != "summarized_in")
}

/// Whether an edge is an extracted relation (not structural).
pub(crate) fn is_relation(edge: &Edge) -> bool {
    !STRUCTURAL_EDGES.contains(&edge.relationship_name.as_str())
}

/// Node ids of a type within a subgraph.
pub(crate) fn ids_of_type(graph: &Subgraph, node_type: &str) -> HashSet<Uuid> {
    graph.nodes.iter().filter(|n| n.node_type == node_type).map(|n| n.id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_edge_texts() {
        assert_eq!(default_edge_text("alice", "is_a", "person"), "alice is a person.");
        assert_eq!(default_edge_text("a  b", "", "c"), "a b related to c.");
    }
}
