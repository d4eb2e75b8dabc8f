//! A dataset's graph as JSON or Graphviz DOT (`recall graph`, the graph
//! endpoints), written a page at a time: an export holds one page of nodes
//! or edges in memory, whatever the graph's size.

use std::collections::{HashMap, HashSet, VecDeque};

use recall_core::{Edge, Node, Result, Subgraph};
use recall_engine::GraphPages;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use uuid::Uuid;

use crate::dto::{edge_dto, node_dto};

/// The documents a graph export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphShape {
    /// `recall graph`: `{"nodes": [{"id", "type", "name", …properties}],
    /// "edges": [{"source", "target", "relationship_name", "edge_text", …}]}`,
    /// one node or edge per line.
    Json,
    /// `GET /api/v1/datasets/{id}/graph`: [`crate::graph_dto`]'s shape.
    Dto,
    /// Graphviz DOT: nodes labelled "name (type)", edges by relationship name.
    Dot,
}

/// A node of [`GraphShape::Json`]: its properties in their stored order, with
/// `id` and `type` (set in place where a property had the key, else after
/// them) and a `name` (null when it has none). Serialised straight from the
/// node, with no copy of its properties.
struct NodeJson<'a>(&'a Node);

impl Serialize for NodeJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let n = self.0;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &n.properties {
            match key.as_str() {
                "id" => map.serialize_entry(key, &n.id)?,
                "type" => map.serialize_entry(key, &n.node_type)?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        if !n.properties.contains_key("id") {
            map.serialize_entry("id", &n.id)?;
        }
        if !n.properties.contains_key("type") {
            map.serialize_entry("type", &n.node_type)?;
        }
        if !n.properties.contains_key("name") {
            map.serialize_entry("name", &Value::Null)?;
        }
        map.end()
    }
}

/// An edge of [`GraphShape::Json`]: its properties, then (in place where a
/// property had the key) `source`, `target`, `relationship_name` and
/// `edge_text`.
struct EdgeJson<'a>(&'a Edge);

impl Serialize for EdgeJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let e = self.0;
        let own = |map: &mut S::SerializeMap, key: &str| match key {
            "source" => map.serialize_entry(key, &e.source_node_id).map(|()| true),
            "target" => map.serialize_entry(key, &e.target_node_id).map(|()| true),
            "relationship_name" => map.serialize_entry(key, &e.relationship_name).map(|()| true),
            "edge_text" => map.serialize_entry(key, &e.edge_text).map(|()| true),
            _ => Ok(false),
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &e.properties {
            if !own(&mut map, key)? {
                map.serialize_entry(key, value)?;
            }
        }
        for key in EDGE_KEYS {
            if !e.properties.contains_key(key) {
                own(&mut map, key)?;
            }
        }
        map.end()
    }
}

/// The keys an edge of [`GraphShape::Json`] always has, in order.
const EDGE_KEYS: [&str; 4] = ["source", "target", "relationship_name", "edge_text"];

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn node_dot(n: &Node) -> String {
    let name = n
        .properties
        .get("name")
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .or_else(|| n.properties.get("text").and_then(|v| v.as_str()).map(|t| t.chars().take(40).collect()))
        .unwrap_or_default();
    format!("  \"{}\" [label=\"{} ({})\"];\n", n.id, dot_escape(&name), n.node_type)
}

fn edge_dot(e: &Edge) -> String {
    format!(
        "  \"{}\" -> \"{}\" [label=\"{}\"];\n",
        e.source_node_id,
        e.target_node_id,
        dot_escape(&e.relationship_name)
    )
}

/// Where a [`GraphWriter`] stands in its document, in document order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    Head,
    Nodes,
    Edges,
    Done,
}

/// Renders an export piece by piece: pages of nodes, then pages of edges,
/// then [`GraphWriter::finish`]; the pieces concatenated are the document.
#[derive(Debug)]
pub struct GraphWriter {
    shape: GraphShape,
    section: Section,
    /// Whether the open JSON array has an element (a comma goes before the next).
    wrote_item: bool,
    /// Where each element is serialised (kept between elements).
    buffer: Vec<u8>,
}

impl GraphWriter {
    pub fn new(shape: GraphShape) -> Self {
        Self { shape, section: Section::Head, wrote_item: false, buffer: Vec::new() }
    }

    /// Moves the document forward to `to` (never back: a page of nodes
    /// after the edges began is written among them).
    fn enter(&mut self, out: &mut String, to: Section) {
        while self.section < to {
            let json = self.shape != GraphShape::Dot;
            match self.section {
                Section::Head if json => out.push_str("{\"nodes\": ["),
                Section::Head => {
                    out.push_str("digraph recall {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n");
                }
                Section::Nodes if json => out.push_str("\n],\n\"edges\": ["),
                Section::Edges if json => out.push_str("\n]}\n"),
                Section::Edges => out.push_str("}\n"),
                Section::Nodes | Section::Done => {}
            }
            self.section = match self.section {
                Section::Head => Section::Nodes,
                Section::Nodes => Section::Edges,
                Section::Edges | Section::Done => Section::Done,
            };
            self.wrote_item = false;
        }
    }

    /// Writes one element of the open JSON array.
    fn item(&mut self, out: &mut String, value: &impl Serialize) {
        out.push_str(if self.wrote_item { ",\n" } else { "\n" });
        self.buffer.clear();
        // Serialising a map of JSON values into memory cannot fail, and
        // serde_json writes UTF-8 only.
        if serde_json::to_writer(&mut self.buffer, value).is_ok() {
            if let Ok(text) = std::str::from_utf8(&self.buffer) {
                out.push_str(text);
            }
        }
        self.wrote_item = true;
    }

    /// A page of nodes (before any edge).
    pub fn nodes(&mut self, nodes: &[Node]) -> String {
        let mut out = String::new();
        self.enter(&mut out, Section::Nodes);
        for n in nodes {
            match self.shape {
                GraphShape::Json => self.item(&mut out, &NodeJson(n)),
                GraphShape::Dto => self.item(&mut out, &node_dto(n)),
                GraphShape::Dot => out.push_str(&node_dot(n)),
            }
        }
        out
    }

    /// A page of edges (after every node).
    pub fn edges(&mut self, edges: &[Edge]) -> String {
        let mut out = String::new();
        self.enter(&mut out, Section::Edges);
        for e in edges {
            match self.shape {
                GraphShape::Json => self.item(&mut out, &EdgeJson(e)),
                GraphShape::Dto => self.item(&mut out, &edge_dto(e)),
                GraphShape::Dot => out.push_str(&edge_dot(e)),
            }
        }
        out
    }

    /// What closes the document (what it still lacks, for an empty graph).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.enter(&mut out, Section::Done);
        out
    }
}

/// A whole graph held in memory as one document of `shape`.
pub fn render_graph(graph: &Subgraph, shape: GraphShape) -> String {
    let mut writer = GraphWriter::new(shape);
    let mut out = writer.nodes(&graph.nodes);
    out.push_str(&writer.edges(&graph.edges));
    out.push_str(&writer.finish());
    out
}

/// A dataset's graph export read and rendered a page at a time.
pub struct GraphExport {
    pages: GraphPages,
    writer: GraphWriter,
}

impl GraphExport {
    pub fn new(pages: GraphPages, shape: GraphShape) -> Self {
        Self { pages, writer: GraphWriter::new(shape) }
    }

    /// The next piece of the document, one page of the graph; `None` after
    /// the last.
    pub async fn next_piece(&mut self) -> Result<Option<String>> {
        match self.writer.section {
            Section::Head | Section::Nodes => {
                if let Some(nodes) = self.pages.next_nodes().await? {
                    return Ok(Some(self.writer.nodes(&nodes)));
                }
                let mut piece = self.writer.nodes(&[]);
                piece.push_str(&self.writer.edges(&[]));
                Ok(Some(piece))
            }
            Section::Edges => match self.pages.next_edges().await? {
                Some(edges) => Ok(Some(self.writer.edges(&edges))),
                None => Ok(Some(self.writer.finish())),
            },
            Section::Done => Ok(None),
        }
    }
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

#[cfg(test)]
mod tests {
    use recall_core::{Edge, Node};
    use serde_json::{json, Map};

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
        let j: Value = serde_json::from_str(&render_graph(&graph, GraphShape::Json)).unwrap();
        assert_eq!(j["nodes"][0]["id"], json!(a.id.to_string()));
        assert_eq!(j["nodes"][0]["type"], json!("Entity"));
        assert_eq!(j["edges"][0]["relationship_name"], json!("designed"));
        assert_eq!(j["edges"][0]["target"], json!(b.id.to_string()));
        let dto: Value = serde_json::from_str(&render_graph(&graph, GraphShape::Dto)).unwrap();
        assert_eq!(dto, crate::graph_dto(&graph), "the streamed DTO is the whole one");
        let dot = render_graph(&graph, GraphShape::Dot);
        assert!(dot.starts_with("digraph recall {"));
        assert!(dot.contains(r#"[label="Ada \"the\" first (Entity)"]"#), "{dot}");
        assert!(dot.contains(&format!("\"{}\" -> \"{}\" [label=\"designed\"]", a.id, b.id)));
    }

    #[test]
    fn json_elements_keep_the_properties_and_set_their_own_keys() {
        // What the elements were before they were serialised in place: a
        // copy of the properties with the export's keys set on it (in place
        // where a property had the key). The same document; byte for byte
        // where serde_json keeps insertion order (as it is built in the
        // workspace; a crate tested alone may get sorted maps).
        fn copied_node(n: &Node) -> String {
            let mut m = n.properties.clone();
            m.insert("id".into(), json!(n.id.to_string()));
            m.insert("type".into(), json!(n.node_type));
            m.entry("name").or_insert(Value::Null);
            Value::Object(m).to_string()
        }
        fn copied_edge(e: &Edge) -> String {
            let mut m = e.properties.clone();
            m.insert("source".into(), json!(e.source_node_id.to_string()));
            m.insert("target".into(), json!(e.target_node_id.to_string()));
            m.insert("relationship_name".into(), json!(e.relationship_name));
            m.insert("edge_text".into(), json!(e.edge_text));
            Value::Object(m).to_string()
        }
        let insertion_order = serde_json::from_str::<Map<String, Value>>(r#"{"b": 1, "a": 2}"#)
            .unwrap()
            .keys()
            .next()
            .is_some_and(|k| k == "b");
        let same = |ours: String, copied: String| {
            if insertion_order {
                assert_eq!(ours, copied);
            } else {
                assert_eq!(
                    serde_json::from_str::<Value>(&ours).unwrap(),
                    serde_json::from_str::<Value>(&copied).unwrap()
                );
            }
        };
        let props = |v: Value| v.as_object().cloned().unwrap();
        let mut n = node("Ada", "Entity");
        n.properties = props(json!({"type": "stale", "zeta": 1, "id": "old", "alpha": [true, null]}));
        let mut full = node("Ada", "Entity");
        full.properties.insert("id".into(), json!(1));
        full.properties.insert("type".into(), json!(2));
        for n in [n, full, node("Bo", "Entity"), Node { properties: Map::new(), ..node("x", "DocumentChunk") }] {
            same(serde_json::to_string(&NodeJson(&n)).unwrap(), copied_node(&n));
        }
        let mut e = Edge::new(Uuid::new_v4(), "knows", Uuid::new_v4());
        e.properties = props(json!({"weight": 0.5, "target": "x", "nested": {"edge_text": 1}, "a": null}));
        let texted = Edge::new(Uuid::new_v4(), "is_a", Uuid::new_v4()).with_text("Ada is a person");
        for e in [e, texted] {
            same(serde_json::to_string(&EdgeJson(&e)).unwrap(), copied_edge(&e));
        }
    }

    #[test]
    fn pieces_of_any_split_make_one_document() {
        let nodes: Vec<Node> = (0..5).map(|i| node(&format!("n{i}"), "Entity")).collect();
        let edges: Vec<Edge> = nodes.windows(2).map(|w| Edge::new(w[0].id, "next", w[1].id)).collect();
        let graph = Subgraph { nodes: nodes.clone(), edges: edges.clone() };
        for shape in [GraphShape::Json, GraphShape::Dto, GraphShape::Dot] {
            let whole = render_graph(&graph, shape);
            for page in 1..=3 {
                let mut w = GraphWriter::new(shape);
                let mut out: String = nodes.chunks(page).map(|p| w.nodes(p)).collect();
                out.push_str(&w.nodes(&[]));
                out.extend(edges.chunks(page).map(|p| w.edges(p)));
                out.push_str(&w.finish());
                out.push_str(&w.finish());
                assert_eq!(out, whole, "{shape:?} in pages of {page}");
            }
            let empty = render_graph(&Subgraph::default(), shape);
            if shape == GraphShape::Dot {
                assert!(empty.starts_with("digraph recall {") && empty.ends_with("}\n"), "{empty}");
            } else {
                let v: Value = serde_json::from_str(&empty).unwrap();
                assert_eq!(v, json!({"nodes": [], "edges": []}));
            }
        }
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
