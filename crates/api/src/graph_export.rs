//! A dataset's graph as JSON or Graphviz DOT (`recall graph`, the graph endpoints).

use recall_core::Subgraph;
use serde_json::{json, Value};

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
    use uuid::Uuid;

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
}
