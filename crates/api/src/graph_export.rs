//! A dataset's graph as JSON or Graphviz DOT (`recall graph`, the graph endpoints).

use std::collections::{HashMap, HashSet, VecDeque};

use recall_core::Subgraph;
use serde_json::{json, Value};
use uuid::Uuid;

/// `{"nodes": [{"id", "type", "name", …properties}], "edges": [{"source", "target", "relationship_name", …}]}`.
pub fn graph_json(graph: &Subgraph) -> Value {
    let nodes: Vec<Value> = graph
        .nodes
        .iter()
        .map(|n| {
            let mut m = n.properties.clone();
            m.insert("id".into(), json!(n.id.to_string()));
            m.insert("type".into(), json!(n.node_type));
            m.entry("name").or_insert(Value::Null);
            Value::Object(m)
        })
        .collect();
    let edges: Vec<Value> = graph
        .edges
        .iter()
        .map(|e| {
            let mut m = e.properties.clone();
            m.insert("source".into(), json!(e.source_node_id.to_string()));
            m.insert("target".into(), json!(e.target_node_id.to_string()));
            m.insert("relationship_name".into(), json!(e.relationship_name));
            m.insert("edge_text".into(), json!(e.edge_text));
            Value::Object(m)
        })
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

/// A bounded piece of a graph for drawing: from the seed nodes (or, without
/// seeds, the `seed_top_k` best-connected nodes), breadth-first up to
/// `depth` hops, at most `max_nodes` nodes, with the edges among them.
pub fn bounded_subgraph(
    graph: &Subgraph,
    seeds: &[Uuid],
    depth: usize,
    seed_top_k: usize,
    max_nodes: usize,
) -> Subgraph {
    let mut adjacency: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for e in &graph.edges {
        adjacency.entry(e.source_node_id).or_default().push(e.target_node_id);
        adjacency.entry(e.target_node_id).or_default().push(e.source_node_id);
    }
    let known: HashSet<Uuid> = graph.nodes.iter().map(|n| n.id).collect();
    let mut start: Vec<Uuid> = seeds.iter().copied().filter(|s| known.contains(s)).collect();
    if start.is_empty() {
        let mut by_degree: Vec<(usize, Uuid)> =
            graph.nodes.iter().map(|n| (adjacency.get(&n.id).map_or(0, Vec::len), n.id)).collect();
        by_degree.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        start = by_degree.into_iter().take(seed_top_k.max(1)).map(|(_, id)| id).collect();
    }
    let mut kept: HashSet<Uuid> = HashSet::new();
    let mut queue: VecDeque<(Uuid, usize)> = VecDeque::new();
    for s in start {
        if kept.len() < max_nodes && kept.insert(s) {
            queue.push_back((s, 0));
        }
    }
    while let Some((id, hops)) = queue.pop_front() {
        if hops >= depth {
            continue;
        }
        for next in adjacency.get(&id).into_iter().flatten() {
            if kept.len() >= max_nodes {
                break;
            }
            if kept.insert(*next) {
                queue.push_back((*next, hops + 1));
            }
        }
    }
    Subgraph {
        nodes: graph.nodes.iter().filter(|n| kept.contains(&n.id)).cloned().collect(),
        edges: graph
            .edges
            .iter()
            .filter(|e| kept.contains(&e.source_node_id) && kept.contains(&e.target_node_id))
            .cloned()
            .collect(),
    }
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Graphviz DOT: nodes labelled "name (type)", edges by relationship name.
pub fn graph_dot(graph: &Subgraph) -> String {
    let mut out = String::from("digraph recall {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n");
    for n in &graph.nodes {
        let name = n
            .properties
            .get("name")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or_else(|| n.properties.get("text").and_then(|v| v.as_str()).map(|t| t.chars().take(40).collect()))
            .unwrap_or_default();
        out.push_str(&format!("  \"{}\" [label=\"{} ({})\"];\n", n.id, dot_escape(&name), n.node_type));
    }
    for e in &graph.edges {
        out.push_str(&format!(
            "  \"{}\" -> \"{}\" [label=\"{}\"];\n",
            e.source_node_id,
            e.target_node_id,
            dot_escape(&e.relationship_name)
        ));
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use recall_core::{Edge, Node};
    use serde_json::Map;

    use super::*;

    fn node(name: &str, node_type: &str) -> Node {
        let mut properties = Map::new();
        properties.insert("name".into(), json!(name));
        Node { id: Uuid::new_v4(), node_type: node_type.into(), properties }
    }

    #[test]
    fn exports_name_every_node_and_edge() {
        let a = node("Ada \"the\" first", "Entity");
        let b = node("Engine", "Entity");
        let edge = Edge {
            source_node_id: a.id,
            target_node_id: b.id,
            relationship_name: "designed".into(),
            edge_text: Some("Ada designed the engine".into()),
            properties: Map::new(),
        };
        let graph = Subgraph { nodes: vec![a.clone(), b.clone()], edges: vec![edge] };
        let j = graph_json(&graph);
        assert_eq!(j["nodes"][0]["id"], json!(a.id.to_string()));
        assert_eq!(j["nodes"][0]["type"], json!("Entity"));
        assert_eq!(j["edges"][0]["relationship_name"], json!("designed"));
        assert_eq!(j["edges"][0]["target"], json!(b.id.to_string()));
        let dot = graph_dot(&graph);
        assert!(dot.starts_with("digraph recall {"));
        assert!(dot.contains(r#"[label="Ada \"the\" first (Entity)"]"#), "{dot}");
        assert!(dot.contains(&format!("\"{}\" -> \"{}\" [label=\"designed\"]", a.id, b.id)));
    }

    #[test]
    fn a_bounded_subgraph_grows_from_its_seeds() {
        // A chain a - b - c - d, and a hub h linked to x, y, z.
        let [a, b, c, d, h, x, y, z] = ["a", "b", "c", "d", "h", "x", "y", "z"].map(|n| node(n, "Entity"));
        let link = |s: &Node, t: &Node| Edge::new(s.id, "rel", t.id);
        let edges = vec![link(&a, &b), link(&b, &c), link(&c, &d), link(&h, &x), link(&h, &y), link(&h, &z)];
        let graph = Subgraph { nodes: vec![a.clone(), b.clone(), c.clone(), d.clone(), h.clone(), x, y, z], edges };
        let names = |g: &Subgraph| {
            let mut v: Vec<String> =
                g.nodes.iter().map(|n| n.properties["name"].as_str().unwrap().to_string()).collect();
            v.sort();
            v
        };
        let around_a = bounded_subgraph(&graph, &[a.id], 2, 10, 100);
        assert_eq!(names(&around_a), ["a", "b", "c"]);
        assert_eq!(around_a.edges.len(), 2, "only edges among kept nodes");
        let unseeded = bounded_subgraph(&graph, &[], 1, 1, 100);
        assert_eq!(names(&unseeded), ["h", "x", "y", "z"], "without seeds, the best-connected node");
        assert_eq!(bounded_subgraph(&graph, &[a.id], 10, 10, 2).nodes.len(), 2, "max_nodes bounds it");
        assert_eq!(bounded_subgraph(&graph, &[Uuid::new_v4()], 1, 1, 100).nodes.len(), 4, "unknown seeds are ignored");
    }
}
