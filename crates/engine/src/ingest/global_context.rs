//! The global context index (docs/ingestion.md), built without an LLM from the
//! entities already in the graph: one root summary per dataset (entity
//! types, the most widespread entities, the documents) and one bucket per
//! document (its characteristic entities by TF-IDF and the relations among
//! them). Rows are embedded once and mirrored into the shared routing
//! collection; their ids derive from the dataset id (root) and the data ids
//! (buckets), so routing can find a dataset's rows from relational metadata.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use recall_core::model::collections::{DATASET_ROUTING, GLOBAL_CONTEXT_SUMMARY_TEXT};
use recall_core::model::node_types;
use recall_core::{ids, Dataset, DatasetId, Edge, Node, Result, Subgraph};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::cognify::{default_edge_text, is_relation, payload, prop_str, EmbedRow};
use crate::Engine;

/// Characteristic entities kept per bucket.
const BUCKET_ENTITIES: usize = 10;
/// Relations listed per bucket.
const BUCKET_RELATIONS: usize = 8;
const ROOT_TYPES: usize = 10;
const ROOT_ENTITIES: usize = 15;
const ROOT_DOCUMENTS: usize = 25;

/// Id of a dataset's root summary.
pub fn root_summary_id(dataset: DatasetId) -> Uuid {
    ids::id_for("GlobalContextSummary", &[&format!("root:{dataset}")])
}

/// Id of a document's bucket summary.
pub fn bucket_summary_id(dataset: DatasetId, document: Uuid) -> Uuid {
    ids::id_for("GlobalContextSummary", &[&format!("bucket:{dataset}:{document}")])
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SummaryRow {
    pub id: Uuid,
    pub text: String,
    pub is_root: bool,
    pub document_id: Option<Uuid>,
    pub entity_ids: Vec<Uuid>,
}

/// A relation edge and the ids of the documents that stated it (none: every document).
type StatedRelation<'g> = (&'g Edge, HashSet<&'g str>);

/// Computes the index rows from a dataset's graph.
pub(crate) fn plan_index(dataset: &Dataset, graph: &Subgraph) -> Vec<SummaryRow> {
    let nodes: HashMap<Uuid, &Node> = graph.nodes.iter().map(|n| (n.id, n)).collect();
    let mut documents: Vec<&Node> = graph.nodes.iter().filter(|n| n.node_type == node_types::TEXT_DOCUMENT).collect();
    if documents.is_empty() {
        return Vec::new();
    }
    documents.sort_by(|a, b| prop_str(a, "name").cmp(&prop_str(b, "name")).then(a.id.cmp(&b.id)));
    let chunk_doc = chunk_documents(graph);
    // tf[doc][entity] = chunks of the document that mention the entity.
    let mut tf: HashMap<Uuid, HashMap<Uuid, usize>> = HashMap::new();
    for e in graph.edges.iter().filter(|e| e.relationship_name == "contains") {
        if let Some(doc) = chunk_doc.get(&e.source_node_id) {
            *tf.entry(*doc).or_default().entry(e.target_node_id).or_default() += 1;
        }
    }
    let mut df: HashMap<Uuid, usize> = HashMap::new();
    let mut mentions: HashMap<Uuid, usize> = HashMap::new();
    for per_doc in tf.values() {
        for (entity, n) in per_doc {
            *df.entry(*entity).or_default() += 1;
            *mentions.entry(*entity).or_default() += n;
        }
    }
    let name = |id: &Uuid| nodes.get(id).and_then(|n| prop_str(n, "name")).unwrap_or("").to_string();
    let n_docs = documents.len() as f64;
    // Relations by (source, target), each with the documents that stated it
    // (read once: a list can hold thousands of ids): a bucket looks up the
    // pairs of its top entities instead of scanning every relation.
    let mut relations: HashMap<(Uuid, Uuid), Vec<StatedRelation>> = HashMap::new();
    for e in graph.edges.iter().filter(|e| is_relation(e)) {
        let docs: HashSet<&str> = e
            .properties
            .get("document_ids")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        relations.entry((e.source_node_id, e.target_node_id)).or_default().push((e, docs));
    }

    let mut rows = Vec::new();
    for doc in &documents {
        let Some(per_doc) = tf.get(&doc.id) else { continue };
        let mut scored: Vec<(f64, String, Uuid)> = per_doc
            .iter()
            .map(|(entity, n)| {
                let idf = ((1.0 + n_docs) / (1.0 + df[entity] as f64)).ln() + 1.0;
                (*n as f64 * idf, name(entity), *entity)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(BUCKET_ENTITIES);
        let top: HashSet<Uuid> = scored.iter().map(|s| s.2).collect();
        let doc_key = doc.id.to_string();
        let mut facts: BTreeSet<String> = BTreeSet::new();
        let stated = top.iter().flat_map(|s| top.iter().map(move |t| (*s, *t)));
        for (e, docs) in stated.filter_map(|pair| relations.get(&pair)).flatten() {
            if docs.is_empty() || docs.contains(doc_key.as_str()) {
                let text = e.edge_text.clone().unwrap_or_else(|| {
                    default_edge_text(&name(&e.source_node_id), &e.relationship_name, &name(&e.target_node_id))
                });
                facts.insert(text);
            }
        }
        let entities: Vec<&str> = scored.iter().map(|s| s.1.as_str()).collect();
        let mut text = format!(
            "Document '{}'. Characteristic entities: {}.",
            prop_str(doc, "name").unwrap_or(""),
            entities.join(", ")
        );
        if !facts.is_empty() {
            let facts: Vec<String> = facts.into_iter().take(BUCKET_RELATIONS).collect();
            text.push_str(&format!(" Relations: {}", facts.join(" ")));
        }
        rows.push(SummaryRow {
            id: bucket_summary_id(dataset.id, doc.id),
            text,
            is_root: false,
            document_id: Some(doc.id),
            entity_ids: scored.iter().map(|s| s.2).collect(),
        });
    }

    // Root: entity types by count, widespread entities, documents.
    let mut type_counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in graph.edges.iter().filter(|e| e.relationship_name == "is_a") {
        *type_counts.entry(name(&e.target_node_id)).or_default() += 1;
    }
    let mut types: Vec<(String, usize)> = type_counts.into_iter().collect();
    types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut widespread: Vec<(usize, usize, String, Uuid)> =
        df.iter().map(|(id, d)| (*d, mentions[id], name(id), *id)).collect();
    widespread.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    widespread.truncate(ROOT_ENTITIES);
    let doc_names: Vec<&str> = documents.iter().take(ROOT_DOCUMENTS).filter_map(|d| prop_str(d, "name")).collect();
    let mut root = format!("Dataset '{}': {} document(s).", dataset.name, documents.len());
    if !types.is_empty() {
        let t: Vec<String> = types.iter().take(ROOT_TYPES).map(|(t, n)| format!("{t} ({n})")).collect();
        root.push_str(&format!(" Entity types: {}.", t.join(", ")));
    }
    if !widespread.is_empty() {
        let w: Vec<&str> = widespread.iter().map(|w| w.2.as_str()).collect();
        root.push_str(&format!(" Widespread entities: {}.", w.join(", ")));
    }
    root.push_str(&format!(" Documents: {}.", doc_names.join(", ")));
    rows.insert(
        0,
        SummaryRow {
            id: root_summary_id(dataset.id),
            text: root,
            is_root: true,
            document_id: None,
            entity_ids: widespread.iter().map(|w| w.3).collect(),
        },
    );
    rows
}

impl Engine {
    /// Writes the rows whose text changed, and removes rows that no longer
    /// belong to the index, from the graph and both collections.
    pub(crate) async fn rebuild_global_context_index(&self, dataset: &Dataset, graph: &Subgraph) -> Result<()> {
        let plan = plan_index(dataset, graph);
        let existing: HashMap<Uuid, &Node> = graph
            .nodes
            .iter()
            .filter(|n| n.node_type == node_types::GLOBAL_CONTEXT_SUMMARY)
            .map(|n| (n.id, n))
            .collect();
        let planned: HashSet<Uuid> = plan.iter().map(|r| r.id).collect();
        let stale: Vec<Uuid> = existing.keys().filter(|id| !planned.contains(id)).copied().collect();
        if !stale.is_empty() {
            self.vectors.delete(dataset.id, GLOBAL_CONTEXT_SUMMARY_TEXT, &stale).await?;
            self.vectors.delete(dataset.id, DATASET_ROUTING, &stale).await?;
            self.graph.delete_nodes(dataset.id, &stale).await?;
        }
        // A row is rewritten when its text changed, or when its edges are not
        // all there (a run killed between the row's node and its edges).
        let root_id = root_summary_id(dataset.id);
        let summaries_by_doc = summaries_by_document(graph);
        let linked: HashSet<(Uuid, Uuid)> = graph
            .edges
            .iter()
            .filter(|e| e.relationship_name == "summarized_in")
            .map(|e| (e.source_node_id, e.target_node_id))
            .collect();
        let linked_up = |r: &SummaryRow| match r.document_id {
            None => true,
            Some(doc) => {
                linked.contains(&(r.id, root_id))
                    && summaries_by_doc.get(&doc).into_iter().flatten().all(|s| linked.contains(&(*s, r.id)))
            }
        };
        let changed: Vec<&SummaryRow> = plan
            .iter()
            .filter(|r| existing.get(&r.id).and_then(|n| prop_str(n, "text")) != Some(r.text.as_str()) || !linked_up(r))
            .collect();
        if changed.is_empty() {
            return Ok(());
        }
        let rows: Vec<EmbedRow> = changed
            .iter()
            .map(|r| {
                let extra = [
                    ("dataset_id", json!(dataset.id.to_string())),
                    ("is_root", json!(r.is_root)),
                    ("level", json!(if r.is_root { 0 } else { 1 })),
                    ("document_id", json!(r.document_id.map(|d| d.to_string()))),
                    ("type", json!("GlobalContextSummary")),
                ];
                (r.id, r.text.clone(), payload(r.id, &r.text, &extra), vec![])
            })
            .collect();
        // Embedded once; the routing collection mirrors the same vectors.
        let spec = self.embedder.spec();
        let records = self.embed_rows(rows).await?;
        for collection in [GLOBAL_CONTEXT_SUMMARY_TEXT, DATASET_ROUTING] {
            self.vectors.ensure_collection(dataset.id, collection, &spec).await?;
            self.vectors.upsert(dataset.id, collection, records.clone()).await?;
        }

        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for r in &changed {
            let mut props = Map::new();
            props.insert("text".into(), json!(r.text));
            props.insert("dataset_id".into(), json!(dataset.id.to_string()));
            props.insert("level".into(), json!(if r.is_root { 0 } else { 1 }));
            props.insert("is_root".into(), json!(r.is_root));
            props.insert(
                "graph_bucket_entity_ids".into(),
                json!(r.entity_ids.iter().map(Uuid::to_string).collect::<Vec<_>>()),
            );
            if let Some(doc) = r.document_id {
                props.insert("document_id".into(), json!(doc.to_string()));
                edges.push(
                    Edge::new(r.id, "summarized_in", root_id)
                        .with_text("Document bucket summarized in the dataset root."),
                );
                for s in summaries_by_doc.get(&doc).into_iter().flatten() {
                    edges.push(
                        Edge::new(*s, "summarized_in", r.id)
                            .with_text("Chunk summary summarized in its document bucket."),
                    );
                }
            }
            nodes.push(Node { id: r.id, node_type: node_types::GLOBAL_CONTEXT_SUMMARY.into(), properties: props });
        }
        self.graph.upsert_nodes(dataset.id, &nodes).await?;
        // Bucket → root edges need the root to exist; it always does when a bucket does.
        self.graph.upsert_edges(dataset.id, &edges).await
    }
}

/// Each chunk's document id.
fn chunk_documents(graph: &Subgraph) -> HashMap<Uuid, Uuid> {
    graph
        .nodes
        .iter()
        .filter(|n| n.node_type == node_types::DOCUMENT_CHUNK)
        .filter_map(|n| Some((n.id, Uuid::parse_str(prop_str(n, "document_id")?).ok()?)))
        .collect()
}

/// TextSummary ids by the document of their chunk.
fn summaries_by_document(graph: &Subgraph) -> HashMap<Uuid, Vec<Uuid>> {
    let chunk_doc = chunk_documents(graph);
    let mut out: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for n in graph.nodes.iter().filter(|n| n.node_type == node_types::TEXT_SUMMARY) {
        if let Some(doc) =
            prop_str(n, "source_chunk_id").and_then(|c| Uuid::parse_str(c).ok()).and_then(|c| chunk_doc.get(&c))
        {
            out.entry(*doc).or_default().push(n.id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u128, node_type: &str, props: Value) -> Node {
        let Value::Object(properties) = props else { unreachable!() };
        Node { id: Uuid::from_u128(id), node_type: node_type.into(), properties }
    }

    fn relation(s: u128, r: &str, t: u128, docs: Option<&[&str]>) -> Edge {
        let (sn, tn) = (["", "A", "B", "C"][s as usize], ["", "A", "B", "C"][t as usize]);
        let mut e = Edge::new(Uuid::from_u128(s), r, Uuid::from_u128(t)).with_text(format!("{sn} {r} {tn}."));
        if let Some(docs) = docs {
            e.properties.insert("document_ids".into(), json!(docs));
        }
        e
    }

    /// A bucket lists the relations between two of its top entities that its
    /// document stated (or that name no document), sorted, whatever the
    /// order of the graph's edges.
    #[test]
    fn buckets_list_the_relations_their_document_stated() {
        let (d1, d2) = (Uuid::from_u128(101), Uuid::from_u128(102));
        let dataset = Dataset {
            id: DatasetId(Uuid::from_u128(9)),
            name: "ds".into(),
            owner_id: Uuid::nil(),
            tenant_id: None,
            created_at: 0,
        };
        let nodes = vec![
            node(1, "Entity", json!({"name": "A"})),
            node(2, "Entity", json!({"name": "B"})),
            node(3, "Entity", json!({"name": "C"})),
            node(101, node_types::TEXT_DOCUMENT, json!({"name": "one.txt"})),
            node(102, node_types::TEXT_DOCUMENT, json!({"name": "two.txt"})),
            node(201, node_types::DOCUMENT_CHUNK, json!({"document_id": d1.to_string()})),
            node(202, node_types::DOCUMENT_CHUNK, json!({"document_id": d2.to_string()})),
        ];
        let contains = |c: u128, e: u128| Edge::new(Uuid::from_u128(c), "contains", Uuid::from_u128(e));
        let (s1, s2) = (d1.to_string(), d2.to_string());
        let mut edges = vec![
            relation(2, "r2", 1, Some(&[&s2])),
            relation(1, "r4", 1, Some(&[&s1, &s2])),
            relation(1, "r3", 3, None),
            relation(1, "r1", 2, Some(&[&s1])),
            contains(201, 1),
            contains(201, 2),
            contains(201, 3),
            contains(202, 1),
            contains(202, 2),
        ];
        for _ in 0..2 {
            let graph = Subgraph { nodes: nodes.clone(), edges: edges.clone() };
            let rows = plan_index(&dataset, &graph);
            let bucket = |doc: Uuid| rows.iter().find(|r| r.document_id == Some(doc)).unwrap().text.clone();
            assert!(bucket(d1).ends_with(" Relations: A r1 B. A r3 C. A r4 A."), "{}", bucket(d1));
            assert!(bucket(d2).ends_with(" Relations: A r4 A. B r2 A."), "{}", bucket(d2));
            edges.reverse();
        }
    }
}
