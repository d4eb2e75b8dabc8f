//! A dataset's ranking sketch held in memory: what
//! [`RankingReads::sketch_between`](recall_core::ports::RankingReads::sketch_between)
//! reads from the store on every graph search, answered without I/O.
//!
//! The engine loads one per dataset and data version in the background
//! (docs/retrievers.md, "The sketch cache") and hands it to a search in
//! [`crate::DatasetPorts::sketch`]; the search uses it for the ranking reads
//! without feedback weights, the default. Compact: the node ids sorted once,
//! the outgoing edges of each node in one array (about 24 bytes an edge).

use std::collections::HashMap;

use recall_core::ports::{EdgeSketch, NodeSketch, Sketch};
use serde_json::Value;
use uuid::Uuid;

/// One outgoing edge: its target's position, relationship and type key.
#[derive(Debug, Clone, Copy)]
struct Out {
    target: u32,
    relationship: u32,
    type_key: Uuid,
}

/// A whole dataset's nodes and edges as a triplet ranking reads them.
#[derive(Debug, Default)]
pub struct SketchIndex {
    /// Node ids, sorted; a node's position is its number.
    ids: Vec<Uuid>,
    /// Each node's `importance_weight` (never a JSON null).
    importance: Vec<Option<Value>>,
    /// Node `i`'s outgoing edges are `out[starts[i]..starts[i + 1]]`, in
    /// (relationship name, target id) order.
    starts: Vec<u32>,
    out: Vec<Out>,
    relationships: Vec<String>,
}

impl SketchIndex {
    /// The index of a whole-dataset sketch (`RankingReads::whole_sketch`).
    /// Edges with an endpoint that is not among the nodes are left out, as
    /// the store's reads leave them out. `None` past `u32::MAX` nodes or edges.
    pub fn build(sketch: Sketch) -> Option<Self> {
        let mut nodes = sketch.nodes;
        nodes.sort_by_key(|n| n.id);
        nodes.dedup_by_key(|n| n.id);
        let ids: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
        let importance = nodes.into_iter().map(|n| n.importance_weight.filter(|v| !v.is_null())).collect();
        let position = |id: &Uuid| ids.binary_search(id).ok().and_then(|i| u32::try_from(i).ok());
        let mut names: HashMap<String, u32> = HashMap::new();
        let mut relationships = Vec::new();
        let mut edges: Vec<(u32, Out)> = Vec::with_capacity(sketch.edges.len());
        for e in sketch.edges {
            let (Some(source), Some(target)) = (position(&e.source_node_id), position(&e.target_node_id)) else {
                continue;
            };
            let relationship = match names.get(&e.relationship_name) {
                Some(r) => *r,
                None => {
                    let r = u32::try_from(relationships.len()).ok()?;
                    names.insert(e.relationship_name.clone(), r);
                    relationships.push(e.relationship_name);
                    r
                }
            };
            edges.push((source, Out { target, relationship, type_key: e.type_key }));
        }
        edges.sort_by(|(sa, a), (sb, b)| {
            sa.cmp(sb)
                .then_with(|| relationships[a.relationship as usize].cmp(&relationships[b.relationship as usize]))
                .then(a.target.cmp(&b.target))
        });
        edges.dedup_by(|(sa, a), (sb, b)| sa == sb && a.relationship == b.relationship && a.target == b.target);
        let mut starts = Vec::with_capacity(ids.len() + 1);
        let mut next = 0usize;
        for node in 0..ids.len() {
            starts.push(u32::try_from(next).ok()?);
            while next < edges.len() && edges[next].0 as usize == node {
                next += 1;
            }
        }
        starts.push(u32::try_from(edges.len()).ok()?);
        let out = edges.into_iter().map(|(_, o)| o).collect();
        Some(Self { ids, importance, starts, out, relationships })
    }

    /// The seeds that are nodes, and the edges between two of them: what
    /// the store's `sketch_between(dataset, seeds, false)` answers, in its
    /// order (nodes by id, edges by key).
    pub fn between(&self, seeds: &[Uuid]) -> Sketch {
        let mut found: Vec<u32> =
            seeds.iter().filter_map(|id| self.ids.binary_search(id).ok().and_then(|i| u32::try_from(i).ok())).collect();
        found.sort_unstable();
        found.dedup();
        let nodes = found
            .iter()
            .map(|&i| NodeSketch {
                id: self.ids[i as usize],
                importance_weight: self.importance[i as usize].clone(),
                feedback_weight: None,
            })
            .collect();
        let mut edges = Vec::new();
        for &source in &found {
            let (from, to) = (self.starts[source as usize] as usize, self.starts[source as usize + 1] as usize);
            for e in &self.out[from..to] {
                if found.binary_search(&e.target).is_ok() {
                    edges.push(EdgeSketch {
                        source_node_id: self.ids[source as usize],
                        relationship_name: self.relationships[e.relationship as usize].clone(),
                        target_node_id: self.ids[e.target as usize],
                        type_key: e.type_key,
                        feedback_weight: None,
                    });
                }
            }
        }
        Sketch { nodes, edges }
    }

    /// Nodes and edges held.
    pub fn len(&self) -> (usize, usize) {
        (self.ids.len(), self.out.len())
    }

    /// Whether it holds no node.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// About the memory it takes, in bytes.
    pub fn bytes(&self) -> usize {
        self.ids.len() * (size_of::<Uuid>() + size_of::<Option<Value>>() + size_of::<u32>())
            + self.out.len() * size_of::<Out>()
            + self.relationships.iter().map(|r| r.len() + size_of::<String>()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(id: u128, weight: Option<Value>) -> NodeSketch {
        NodeSketch { id: Uuid::from_u128(id), importance_weight: weight, feedback_weight: None }
    }

    fn edge(source: u128, relationship: &str, target: u128) -> EdgeSketch {
        EdgeSketch {
            source_node_id: Uuid::from_u128(source),
            relationship_name: relationship.into(),
            target_node_id: Uuid::from_u128(target),
            type_key: Uuid::from_u128(source * 1000 + target),
            feedback_weight: None,
        }
    }

    #[test]
    fn answers_the_edges_between_seeds_in_key_order() {
        let nodes = vec![node(3, Some(json!(0.5))), node(1, Some(Value::Null)), node(2, None), node(4, None)];
        // Unsorted, a duplicate, and an edge to a node that is not there.
        let edges = vec![
            edge(2, "b", 1),
            edge(1, "knows", 3),
            edge(1, "knows", 2),
            edge(1, "is_a", 3),
            edge(1, "knows", 2),
            edge(2, "a", 9),
            edge(3, "x", 4),
        ];
        let index = SketchIndex::build(Sketch { nodes, edges }).unwrap();
        assert_eq!(index.len(), (4, 5));
        let sketch = index.between(&[Uuid::from_u128(3), Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(7)]);
        let ids: Vec<u128> = sketch.nodes.iter().map(|n| n.id.as_u128()).collect();
        assert_eq!(ids, [1, 2, 3], "only the seeds that are nodes, by id");
        assert_eq!(sketch.nodes[0].importance_weight, None, "a null weight is no weight");
        assert_eq!(sketch.nodes[2].importance_weight, Some(json!(0.5)));
        let keys: Vec<(u128, &str, u128)> = sketch
            .edges
            .iter()
            .map(|e| (e.source_node_id.as_u128(), e.relationship_name.as_str(), e.target_node_id.as_u128()))
            .collect();
        assert_eq!(keys, [(1, "is_a", 3), (1, "knows", 2), (1, "knows", 3), (2, "b", 1)]);
        assert_eq!(sketch.edges[0].type_key, Uuid::from_u128(1003));
        assert!(index.between(&[Uuid::from_u128(4)]).edges.is_empty(), "an edge needs both ends among the seeds");
        assert_eq!(index.between(&[Uuid::from_u128(3), Uuid::from_u128(4)]).edges.len(), 1);
        assert!(index.between(&[]).nodes.is_empty());
    }
}
