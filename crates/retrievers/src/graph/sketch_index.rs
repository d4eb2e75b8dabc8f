//! A dataset's ranking sketch held in memory: what
//! [`RankingReads::sketch_between`](recall_core::ports::RankingReads::sketch_between)
//! reads from the store on every graph search, answered without I/O.
//!
//! The engine loads one per dataset and data version in the background
//! (docs/retrievers.md, "The sketch cache") and hands it to a search in
//! [`crate::DatasetPorts::sketch`]; the search uses it for the ranking reads
//! without feedback weights, the default. Compact: the node ids sorted once,
//! the outgoing edges of each node in one array, and each node's incoming
//! edges and each type key's edges as positions in that array (about 32
//! bytes an edge). It also answers the expansions of a search's ranking
//! (the edges around some seeds, of some types or all), which on a store
//! read every neighbour of a hub node or probe an index per type.

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
    /// Node `i`'s incoming edges are `out[k]` for `k` in
    /// `incoming[in_starts[i]..in_starts[i + 1]]`, in ascending `k`.
    in_starts: Vec<u32>,
    incoming: Vec<u32>,
    /// The distinct type keys, sorted; type `t`'s edges are `out[k]` for
    /// `k` in `of_type[type_starts[t]..type_starts[t + 1]]`, ascending.
    types: Vec<Uuid>,
    type_starts: Vec<u32>,
    of_type: Vec<u32>,
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
        let out: Vec<Out> = edges.into_iter().map(|(_, o)| o).collect();
        // Counting sort of the edge positions by target.
        let mut in_starts = vec![0u32; ids.len() + 1];
        for o in &out {
            in_starts[o.target as usize + 1] += 1;
        }
        let mut sum = 0u32;
        for s in &mut in_starts {
            sum += *s;
            *s = sum;
        }
        let mut fill = in_starts.clone();
        let mut incoming = vec![0u32; out.len()];
        for (k, o) in out.iter().enumerate() {
            let slot = &mut fill[o.target as usize];
            incoming[*slot as usize] = u32::try_from(k).ok()?;
            *slot += 1;
        }
        // The edge positions by type key (a stable sort keeps them ascending).
        let mut of_type: Vec<u32> = (0..u32::try_from(out.len()).ok()?).collect();
        of_type.sort_by_key(|&k| out[k as usize].type_key);
        let mut types = Vec::new();
        let mut type_starts = Vec::new();
        for (i, &k) in of_type.iter().enumerate() {
            let key = out[k as usize].type_key;
            if types.last() != Some(&key) {
                types.push(key);
                type_starts.push(u32::try_from(i).ok()?);
            }
        }
        type_starts.push(u32::try_from(of_type.len()).ok()?);
        Some(Self { ids, importance, starts, out, in_starts, incoming, types, type_starts, of_type, relationships })
    }

    /// The positions of the seeds that are nodes, ascending, once each.
    fn positions(&self, seeds: &[Uuid]) -> Vec<u32> {
        let mut found: Vec<u32> =
            seeds.iter().filter_map(|id| self.ids.binary_search(id).ok().and_then(|i| u32::try_from(i).ok())).collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    fn node_sketch(&self, node: u32) -> NodeSketch {
        NodeSketch {
            id: self.ids[node as usize],
            importance_weight: self.importance[node as usize].clone(),
            feedback_weight: None,
        }
    }

    fn edge_sketch(&self, source: u32, e: &Out) -> EdgeSketch {
        EdgeSketch {
            source_node_id: self.ids[source as usize],
            relationship_name: self.relationships[e.relationship as usize].clone(),
            target_node_id: self.ids[e.target as usize],
            type_key: e.type_key,
            feedback_weight: None,
        }
    }

    /// Node `node`'s outgoing edges, as positions in `out`.
    fn outgoing(&self, node: u32) -> std::ops::Range<usize> {
        self.starts[node as usize] as usize..self.starts[node as usize + 1] as usize
    }

    /// Node `node`'s incoming edges, as positions in `out`.
    fn incoming_edges(&self, node: u32) -> impl ExactSizeIterator<Item = usize> + '_ {
        let (from, to) = (self.in_starts[node as usize] as usize, self.in_starts[node as usize + 1] as usize);
        self.incoming[from..to].iter().map(|&k| k as usize)
    }

    /// The source of the edge at position `k` of `out`.
    fn source_of(&self, k: usize) -> u32 {
        // The last node whose edges start at or before `k` owns it (nodes
        // without edges share their successor's start).
        let owner = self.starts.partition_point(|&s| s as usize <= k).saturating_sub(1);
        u32::try_from(owner).unwrap_or(u32::MAX)
    }

    /// The seeds that are nodes, and the edges between two of them: what
    /// the store's `sketch_between(dataset, seeds, false)` answers, in its
    /// order (nodes by id, edges by key).
    pub fn between(&self, seeds: &[Uuid]) -> Sketch {
        let found = self.positions(seeds);
        let mut edges = Vec::new();
        for &source in &found {
            for e in &self.out[self.outgoing(source)] {
                if found.binary_search(&e.target).is_ok() {
                    edges.push(self.edge_sketch(source, e));
                }
            }
        }
        Sketch { nodes: found.iter().map(|&i| self.node_sketch(i)).collect(), edges }
    }

    /// The seeds that are nodes, every edge touching one of them (only
    /// those whose type key is among `type_keys`, when given), and those
    /// edges' other ends: what the store's `edges_around` (or
    /// `edges_around_of_types`) answers, as a sketch. Nodes by id, edges by
    /// key, each once.
    pub fn around(&self, seeds: &[Uuid], type_keys: Option<&[Uuid]>) -> Sketch {
        let found = self.positions(seeds);
        let mut keys: Vec<usize> = Vec::new();
        match type_keys {
            None => {
                for &node in &found {
                    keys.extend(self.outgoing(node));
                    keys.extend(self.incoming_edges(node));
                }
            }
            Some(type_keys) => {
                // Walk whichever is shorter: the seeds' edges (a hub seed
                // has tens of thousands), or the edges of the types.
                let mut ranges: Vec<std::ops::Range<usize>> = type_keys
                    .iter()
                    .filter_map(|t| self.types.binary_search(t).ok())
                    .map(|t| self.type_starts[t] as usize..self.type_starts[t + 1] as usize)
                    .collect();
                ranges.sort_by_key(|r| r.start);
                ranges.dedup();
                let by_type: usize = ranges.iter().map(ExactSizeIterator::len).sum();
                let by_seed: usize = found.iter().map(|&n| self.outgoing(n).len() + self.incoming_edges(n).len()).sum();
                if by_type <= by_seed {
                    let touches = |k: usize| {
                        found.binary_search(&self.source_of(k)).is_ok()
                            || found.binary_search(&self.out[k].target).is_ok()
                    };
                    for range in ranges {
                        keys.extend(self.of_type[range].iter().map(|&k| k as usize).filter(|&k| touches(k)));
                    }
                } else {
                    let mut wanted: Vec<Uuid> = type_keys.to_vec();
                    wanted.sort_unstable();
                    let of_wanted = |k: &usize| wanted.binary_search(&self.out[*k].type_key).is_ok();
                    for &node in &found {
                        keys.extend(self.outgoing(node).filter(of_wanted));
                        keys.extend(self.incoming_edges(node).filter(of_wanted));
                    }
                }
            }
        }
        // Positions in `out` are in key order.
        keys.sort_unstable();
        keys.dedup();
        let mut nodes = found;
        let edges = keys
            .into_iter()
            .map(|k| {
                let source = self.source_of(k);
                nodes.push(source);
                nodes.push(self.out[k].target);
                self.edge_sketch(source, &self.out[k])
            })
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        Sketch { nodes: nodes.into_iter().map(|i| self.node_sketch(i)).collect(), edges }
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
        self.ids.len() * (size_of::<Uuid>() + size_of::<Option<Value>>() + 2 * size_of::<u32>())
            + self.out.len() * (size_of::<Out>() + 2 * size_of::<u32>())
            + self.types.len() * (size_of::<Uuid>() + size_of::<u32>())
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

    fn keys(sketch: &Sketch) -> Vec<(u128, String, u128)> {
        sketch
            .edges
            .iter()
            .map(|e| (e.source_node_id.as_u128(), e.relationship_name.clone(), e.target_node_id.as_u128()))
            .collect()
    }

    fn ids(sketch: &Sketch) -> Vec<u128> {
        sketch.nodes.iter().map(|n| n.id.as_u128()).collect()
    }

    #[test]
    fn answers_the_edges_around_seeds_with_their_other_ends() {
        let nodes = vec![node(1, None), node(2, None), node(3, Some(json!(0.9))), node(4, None), node(5, None)];
        let edges =
            vec![edge(2, "b", 1), edge(1, "knows", 2), edge(1, "knows", 3), edge(1, "is_a", 3), edge(3, "x", 4)];
        let index = SketchIndex::build(Sketch { nodes, edges }).unwrap();
        let around = index.around(&[Uuid::from_u128(3)], None);
        assert_eq!(ids(&around), [1, 3, 4], "the seed and the other ends, by id");
        assert_eq!(around.nodes[1].importance_weight, Some(json!(0.9)));
        assert_eq!(
            keys(&around),
            [(1, "is_a".into(), 3), (1, "knows".into(), 3), (3, "x".into(), 4)],
            "incoming and outgoing edges, by key"
        );
        let types: &[Uuid] = &[Uuid::from_u128(3004), Uuid::from_u128(77)];
        let typed = index.around(&[Uuid::from_u128(3)], Some(types));
        assert_eq!(keys(&typed), [(3, "x".into(), 4)], "only the edges of the given types");
        assert_eq!(ids(&typed), [3, 4]);
        let both = index.around(&[Uuid::from_u128(2), Uuid::from_u128(1), Uuid::from_u128(2)], None);
        assert_eq!(keys(&both).len(), 4, "an edge between two seeds comes once: {:?}", keys(&both));
        assert_eq!(ids(&both), [1, 2, 3]);
        assert_eq!(ids(&index.around(&[Uuid::from_u128(5)], None)), [5], "a seed without edges is still a node");
        assert!(index.around(&[Uuid::from_u128(9)], None).nodes.is_empty(), "an unknown seed is no node");
        assert!(index.around(&[Uuid::from_u128(3)], Some(&types[..0])).edges.is_empty());
    }

    /// On a graph with hubs, nodes without edges and repeated names, every
    /// `around` equals filtering the whole edge list.
    #[test]
    fn around_equals_filtering_every_edge() {
        let mut state = 7u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let nodes: Vec<NodeSketch> = (1..=60).map(|i| node(i, None)).collect();
        let edges: Vec<EdgeSketch> = (0..400)
            .map(|_| {
                // Node 1 and 2 are hubs; 50..=60 never have edges.
                let source = if next(4) == 0 { 1 } else { 1 + u128::from(next(49)) };
                let target = if next(3) == 0 { 2 } else { 1 + u128::from(next(49)) };
                let mut e = edge(source, ["r", "s", "t"][next(3) as usize], target);
                e.type_key = Uuid::from_u128(u128::from(next(5)));
                e
            })
            .collect();
        let index = SketchIndex::build(Sketch { nodes: nodes.clone(), edges: edges.clone() }).unwrap();
        let whole = Sketch { nodes, edges }.in_whole_dataset_order();
        let mut unique = whole.edges.clone();
        unique.dedup_by(|a, b| {
            (a.source_node_id, &a.relationship_name, a.target_node_id)
                == (b.source_node_id, &b.relationship_name, b.target_node_id)
        });
        for round in 0..200 {
            let seeds: Vec<Uuid> = (0..1 + next(6)).map(|_| Uuid::from_u128(1 + u128::from(next(62)))).collect();
            let types: Vec<Uuid> = (0..next(3)).map(|_| Uuid::from_u128(u128::from(next(5)))).collect();
            let filter = if round % 2 == 0 { None } else { Some(types.as_slice()) };
            let touches = |e: &&EdgeSketch| {
                (seeds.contains(&e.source_node_id) || seeds.contains(&e.target_node_id))
                    && filter.is_none_or(|t| t.contains(&e.type_key))
            };
            let expected: Vec<&EdgeSketch> = unique.iter().filter(touches).collect();
            let got = index.around(&seeds, filter);
            assert_eq!(
                keys(&got),
                expected
                    .iter()
                    .map(|e| (e.source_node_id.as_u128(), e.relationship_name.clone(), e.target_node_id.as_u128()))
                    .collect::<Vec<_>>(),
                "seeds {seeds:?}, types {filter:?}"
            );
            let got_types: Vec<Uuid> = got.edges.iter().map(|e| e.type_key).collect();
            assert_eq!(got_types, expected.iter().map(|e| e.type_key).collect::<Vec<_>>());
            let mut nodes: Vec<u128> = expected
                .iter()
                .flat_map(|e| [e.source_node_id.as_u128(), e.target_node_id.as_u128()])
                .chain(seeds.iter().map(|s| s.as_u128()).filter(|s| *s <= 60))
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            assert_eq!(ids(&got), nodes, "seeds {seeds:?}");
        }
    }
}
