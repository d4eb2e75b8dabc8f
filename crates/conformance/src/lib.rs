//! One shared conformance suite per port. Every adapter runs the same suite
//! against its real backend, so a backend that is wrong shows up in the same
//! tests as its siblings. Each suite uses fresh random dataset ids, so suites
//! may share one backend (one database, one LanceDB directory).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod postgres;
pub mod s3;
mod sessions;

pub use sessions::session_store_conformance;

use std::sync::Arc;

use recall_core::ports::{
    CredentialStore, DataStore, DatasetStore, EdgeKey, EdgeProjection, EmbeddingSpec, GraphStore, Mentions,
    NodeSetFilter, PipelineRunStore, RelationalStore, ScopeRead, SearchHistoryStore, UserStore, VectorRecord,
    VectorStore,
};
use recall_core::{
    now_millis, ApiKey, DataItem, DataStatus, Dataset, DatasetId, Edge, Grant, GraphBuildStatus, NewApiKey, Node,
    Permission, PipelineRun, PipelineRunStatus, RecallError, SearchRecord, User,
};
use serde_json::{json, Map, Value};
use uuid::Uuid;

fn fresh_dataset() -> DatasetId {
    DatasetId(Uuid::new_v4())
}

fn node(id: Uuid, node_type: &str, name: &str) -> Node {
    let mut properties = Map::new();
    properties.insert("name".into(), Value::String(name.into()));
    properties.insert("importance_weight".into(), json!(0.5));
    Node { id, node_type: node_type.into(), properties }
}

// ---------------------------------------------------------------------------
// Graph
// ---------------------------------------------------------------------------

/// Runs every graph-store check. `large_batch` is the size of the bulk-write check.
pub async fn graph_store_conformance(store: Arc<dyn GraphStore>, large_batch: usize) {
    graph_roundtrip_and_projection(store.as_ref()).await;
    graph_edge_properties(store.as_ref()).await;
    graph_edge_provenance(store.as_ref()).await;
    // The store's own ranking reads (where it has them) and the generic ones
    // over its primitives answer alike.
    graph_sketches_and_key_reads(store.as_ref(), false).await;
    graph_sketches_and_key_reads(store.as_ref(), true).await;
    graph_scope_isolation(store.as_ref()).await;
    graph_derived_index_reads(store.as_ref()).await;
    graph_pages(store.as_ref()).await;
    graph_deletes(store.as_ref()).await;
    graph_concurrent_writers(store.clone()).await;
    graph_large_batch(store.as_ref(), large_batch).await;
}

async fn graph_roundtrip_and_projection(store: &dyn GraphStore) {
    let ds = fresh_dataset();
    assert!(store.is_empty(ds).await.unwrap(), "a new dataset is empty");
    let (a, b, c, d) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    // Quotes, backslashes and newlines must round-trip exactly.
    let tricky = "O'Brien said \"hi\" \\ d'Artagnan\nnext line";
    let mut alice = node(a, "Entity", "alice");
    alice.properties.insert("description".into(), json!(tricky));
    let nodes = vec![alice, node(b, "Entity", "bob"), node(c, "EntityType", "person"), node(d, "Entity", "dave")];
    store.upsert_nodes(ds, &nodes).await.unwrap();
    let edges = vec![
        Edge::new(a, "knows", b).with_text("alice knows bob's \"friend\"."),
        Edge::new(a, "is_a", c),
        Edge::new(b, "is_a", c),
        Edge::new(c, "likes", d),
    ];
    store.upsert_edges(ds, &edges).await.unwrap();
    assert_eq!(store.count(ds).await.unwrap(), (4, 4));
    assert!(!store.is_empty(ds).await.unwrap());

    let mut got = store.get_nodes(ds, &[b, a, Uuid::new_v4()]).await.unwrap();
    got.sort_by_key(|n| n.id);
    let mut want = vec![nodes[0].clone(), nodes[1].clone()];
    want.sort_by_key(|n| n.id);
    assert_eq!(got, want, "get_nodes returns exactly the stored nodes, skipping unknown ids");

    // 1-hop around alice: alice, bob, person; edges among them only.
    let sub = store.neighborhood(ds, &[a], 1, EdgeProjection::All).await.unwrap();
    let mut ids: Vec<Uuid> = sub.nodes.iter().map(|n| n.id).collect();
    ids.sort();
    let mut expected = vec![a, b, c];
    expected.sort();
    assert_eq!(ids, expected, "1-hop projection");
    let mut rels: Vec<String> = sub.edges.iter().map(|e| e.relationship_name.clone()).collect();
    rels.sort();
    assert_eq!(rels, vec!["is_a", "is_a", "knows"]);
    let knows = sub.edges.iter().find(|e| e.relationship_name == "knows").unwrap();
    assert_eq!(knows.edge_text.as_deref(), Some("alice knows bob's \"friend\"."));
    let alice_back = store.get_nodes(ds, &[a]).await.unwrap();
    assert_eq!(alice_back[0].properties["description"], json!(tricky), "tricky strings round-trip");
    assert_eq!(knows.source_node_id, a);
    assert_eq!(knows.target_node_id, b);
    assert!(knows.properties.contains_key("edge_object_id"), "edge properties round-trip");

    // The ID-filtered projection keeps only edges touching the seeds: around
    // alice, bob's is_a edge (between two neighbours) is left out.
    let around = store.edges_around(ds, &[a, Uuid::new_v4()], EdgeProjection::All).await.unwrap();
    let mut ids: Vec<Uuid> = around.nodes.iter().map(|n| n.id).collect();
    ids.sort();
    assert_eq!(ids, expected, "the seeds and the other endpoints of their edges");
    let mut rels: Vec<(Uuid, String, Uuid)> =
        around.edges.iter().map(|e| (e.source_node_id, e.relationship_name.clone(), e.target_node_id)).collect();
    rels.sort();
    let mut want_rels = vec![(a, "is_a".to_string(), c), (a, "knows".to_string(), b)];
    want_rels.sort();
    assert_eq!(rels, want_rels);
    let around = store.edges_around(ds, &[d], EdgeProjection::All).await.unwrap();
    assert_eq!((around.nodes.len(), around.edges.len()), (2, 1), "incoming edges count");
    assert!(store.edges_around(ds, &[], EdgeProjection::All).await.unwrap().nodes.is_empty());

    // Incoming edges count too: 1-hop around dave reaches person.
    let sub = store.neighborhood(ds, &[d], 1, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.nodes.len(), 2);
    // 2 hops from dave reach everything.
    let sub = store.neighborhood(ds, &[d], 2, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.nodes.len(), 4);
    assert_eq!(sub.edges.len(), 4);

    // Whole-graph and by-type reads.
    let whole = store.get_graph(ds).await.unwrap();
    assert_eq!((whole.nodes.len(), whole.edges.len()), (4, 4));
    let mut entity_ids: Vec<Uuid> = store.nodes_by_type(ds, "Entity").await.unwrap().iter().map(|n| n.id).collect();
    entity_ids.sort();
    let mut want_entities = vec![a, b, d];
    want_entities.sort();
    assert_eq!(entity_ids, want_entities);
    assert!(store.nodes_by_type(ds, "Nope").await.unwrap().is_empty());
    let mut entity_ids = store.node_ids_by_type(ds, "Entity").await.unwrap();
    entity_ids.sort();
    assert_eq!(entity_ids, want_entities, "the ids alone, of the same nodes");
    assert!(store.node_ids_by_type(ds, "Nope").await.unwrap().is_empty());
    // Depth 0: the seeds and the edges among them.
    let sub = store.neighborhood(ds, &[a, b], 0, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.nodes.len(), 2);
    assert_eq!(sub.edges.len(), 1);

    // Upserting again replaces, never duplicates.
    let mut renamed = nodes[0].clone();
    renamed.properties.insert("name".into(), json!("alice smith"));
    store.upsert_nodes(ds, &[renamed.clone()]).await.unwrap();
    store.upsert_edges(ds, &edges[..1]).await.unwrap();
    assert_eq!(store.count(ds).await.unwrap(), (4, 4));
    assert_eq!(store.get_nodes(ds, &[a]).await.unwrap(), vec![renamed]);

    // In one call, a changed edge is rewritten and an unchanged one is kept
    // (a store may skip writing it again).
    let mut weighted = edges[1].clone();
    weighted.properties.insert("weight".into(), json!(0.5));
    store.upsert_edges(ds, &[weighted.clone(), edges[2].clone()]).await.unwrap();
    let stored = store.get_graph(ds).await.unwrap().edges;
    assert_eq!(stored.len(), 4);
    assert!(stored.contains(&weighted) && !stored.contains(&edges[1]), "the changed edge is rewritten");
    assert!(stored.contains(&edges[2]) && stored.contains(&edges[0]), "{stored:?}");
    store.delete_dataset(ds).await.unwrap();
}

/// Edge properties round-trip on every read that returns edges, the
/// provenance list (`document_ids`, kept apart by some stores) included, and
/// a projected read returns exactly the keys asked for.
async fn graph_edge_properties(store: &dyn GraphStore) {
    let ds = fresh_dataset();
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let nodes = vec![node(a, "Entity", "alice"), node(b, "Entity", "bob"), node(c, "DocumentChunk", "chunk")];
    store.upsert_nodes(ds, &nodes).await.unwrap();
    // A real-size provenance list (about 15 KiB): kilobytes of ids per edge, as a hub relation has.
    let docs: Vec<String> = (0..400).map(|i| Uuid::from_u128(i).to_string()).collect();
    let mut taught = Edge::new(a, "taught", b).with_text("alice taught bob.");
    taught.properties.insert("document_ids".into(), json!(docs));
    taught.properties.insert("edge_object_id".into(), json!("e-1"));
    taught.properties.insert("feedback_weight".into(), json!(0.75));
    let contains = Edge::new(c, "contains", a);
    store.upsert_edges(ds, &[taught.clone(), contains.clone()]).await.unwrap();

    let find = |edges: &[Edge], rel: &str| edges.iter().find(|e| e.relationship_name == rel).cloned().unwrap();
    let whole = store.get_graph(ds).await.unwrap();
    assert_eq!(find(&whole.edges, "taught"), taught, "get_graph returns every property");
    assert_eq!(find(&whole.edges, "contains"), contains);
    let all = store.neighborhood(ds, &[a, b], 0, EdgeProjection::All).await.unwrap();
    assert_eq!(all.edges, vec![taught.clone()], "a full read returns the provenance");
    let around = store.edges_around(ds, &[b], EdgeProjection::All).await.unwrap();
    assert_eq!(around.edges, vec![taught.clone()]);

    let keys: &'static [&'static str] = &["edge_object_id", "effective_date"];
    let only = EdgeProjection::Only(keys);
    let project = |e: &Edge| {
        let mut e = e.clone();
        e.properties.retain(|k, _| keys.contains(&k.as_str()));
        e
    };
    let projected = project(&taught);
    assert!(projected.properties.contains_key("edge_object_id") && !projected.properties.contains_key("document_ids"));
    let sub = store.neighborhood(ds, &[a, b, c], 0, only).await.unwrap();
    assert_eq!(find(&sub.edges, "taught"), projected, "only the projected keys, absent ones stay absent");
    assert_eq!(find(&sub.edges, "contains"), project(&contains));
    let sub = store.neighborhood(ds, &[c], 2, only).await.unwrap();
    assert_eq!(sub.nodes.len(), 3, "two hops from the chunk reach bob");
    assert_eq!(find(&sub.edges, "taught"), projected);
    let around = store.edges_around(ds, &[a], EdgeProjection::Only(&[])).await.unwrap();
    assert_eq!(around.edges.len(), 2);
    assert!(around.edges.iter().all(|e| e.properties.is_empty()), "an empty projection returns no property");
    assert_eq!(find(&around.edges, "taught").edge_text.as_deref(), Some("alice taught bob."));

    // Rewriting an edge without provenance drops it; adding it back restores it.
    let mut plain = taught.clone();
    plain.properties.remove("document_ids");
    store.upsert_edges(ds, &[plain.clone()]).await.unwrap();
    assert_eq!(store.neighborhood(ds, &[a, b], 0, EdgeProjection::All).await.unwrap().edges, vec![plain]);
    store.upsert_edges(ds, &[taught.clone()]).await.unwrap();
    assert_eq!(find(&store.get_graph(ds).await.unwrap().edges, "taught"), taught);
    store.delete_dataset(ds).await.unwrap();
}

/// Provenance written a document at a time: a stated edge keeps the
/// documents it has and gains the new ones (sorted, each once), the edge's
/// other fields are replaced as an upsert replaces them; `stated_by`
/// answers per key; deleting an edge, a node or the dataset takes the
/// provenance with it, so an edge written again starts with none.
async fn graph_edge_provenance(store: &dyn GraphStore) {
    let ds = fresh_dataset();
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store
        .upsert_nodes(ds, &[node(a, "Entity", "ada"), node(b, "Entity", "bob"), node(c, "Entity", "cy")])
        .await
        .unwrap();
    let docs = |ids: &[&str]| ids.iter().map(|d| d.to_string()).collect::<Vec<_>>();
    let stated = |edge: &Edge, ids: &[&str]| (edge.clone(), docs(ids));
    let taught = Edge::new(a, "taught", b).with_text("ada taught bob.");
    let met = Edge::new(b, "met", c).with_text("bob met cy.");
    let plain = Edge::new(a, "knows", c);
    store.upsert_edges(ds, std::slice::from_ref(&plain)).await.unwrap();
    store.upsert_stated_edges(ds, &[stated(&taught, &["d2"]), stated(&met, &["d1"])]).await.unwrap();
    // The second batch states `taught` again, with a new text; a provenance
    // property on the edge itself is not what is written.
    let mut retold = taught.clone().with_text("ada taught bob cobol.");
    retold.properties.insert("document_ids".into(), json!(["ignored"]));
    store.upsert_stated_edges(ds, &[stated(&retold, &["d1", "d2"]), stated(&retold, &["d3"])]).await.unwrap();
    store.upsert_stated_edges(ds, &[stated(&met, &[])]).await.unwrap();

    let with_docs = |edge: &Edge, ids: &[&str]| {
        let mut e = edge.clone();
        e.properties.remove("document_ids");
        e.properties.insert("document_ids".into(), json!(ids));
        e
    };
    let mut edges = store.get_graph(ds).await.unwrap().edges;
    edges.sort_by(|x, y| x.relationship_name.cmp(&y.relationship_name));
    let expected = vec![plain.clone(), with_docs(&met, &["d1"]), with_docs(&retold, &["d1", "d2", "d3"])];
    assert_eq!(edges, expected, "documents added, sorted, once each; the rest of the edge replaced");
    let keyed = store.ranking().get_edges(ds, &[retold.key()], EdgeProjection::All).await.unwrap();
    assert_eq!(keyed, vec![with_docs(&retold, &["d1", "d2", "d3"])]);

    let unknown = (a, "taught".to_string(), c);
    let keys = [retold.key(), met.key(), plain.key(), unknown];
    let mut answer = store.stated_by(ds, &keys, "d2").await.unwrap();
    answer.sort_by(|x, y| x.0 .1.cmp(&y.0 .1));
    assert_eq!(answer, vec![(met.key(), false), (retold.key(), true)], "edges without provenance are left out");
    assert!(store.stated_by(ds, &[], "d2").await.unwrap().is_empty());
    assert!(store.stated_by(fresh_dataset(), &keys, "d2").await.unwrap().is_empty(), "another dataset's edges");

    // A plain upsert replaces the provenance as it replaces every property.
    store.upsert_edges(ds, &[with_docs(&met, &["d4"])]).await.unwrap();
    assert_eq!(store.stated_by(ds, &[met.key()], "d4").await.unwrap(), vec![(met.key(), true)]);
    // Deleting an edge, or a node, takes its provenance along.
    store.delete_edges(ds, &[met.key()]).await.unwrap();
    store.upsert_stated_edges(ds, &[stated(&met, &["d5"])]).await.unwrap();
    assert_eq!(store.stated_by(ds, &[met.key()], "d4").await.unwrap(), vec![(met.key(), false)], "d4 went with it");
    store.delete_nodes(ds, &[b]).await.unwrap();
    store.upsert_nodes(ds, &[node(b, "Entity", "bob")]).await.unwrap();
    store.upsert_stated_edges(ds, &[stated(&taught, &[]), stated(&met, &[])]).await.unwrap();
    assert!(store.stated_by(ds, &[taught.key(), met.key()], "d1").await.unwrap().is_empty(), "both ends' edges");
    store.upsert_stated_edges(ds, &[stated(&taught, &["d9"])]).await.unwrap();
    store.delete_dataset(ds).await.unwrap();
    store.upsert_nodes(ds, &[node(a, "Entity", "ada"), node(b, "Entity", "bob")]).await.unwrap();
    store.upsert_stated_edges(ds, &[stated(&taught, &[])]).await.unwrap();
    assert!(store.stated_by(ds, &[taught.key()], "d9").await.unwrap().is_empty(), "the dataset's went with it");
    store.delete_dataset(ds).await.unwrap();
}

/// The reads behind a pruned triplet search: sketches (keys, type keys and
/// weights), edges by key, and the edges of given types around some nodes.
async fn graph_sketches_and_key_reads(store: &dyn GraphStore, generic: bool) {
    let reads = if generic { store.generic_ranking() } else { store.ranking() };
    let ds = fresh_dataset();
    let (a, b, c, hub) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let mut alice = node(a, "Entity", "alice");
    alice.properties.insert("feedback_weight".into(), json!(0.9));
    let mut bob = node(b, "Entity", "bob");
    bob.properties.remove("importance_weight");
    let spokes: Vec<Uuid> = (0..30).map(|_| Uuid::new_v4()).collect();
    let mut nodes = vec![alice, bob, node(c, "EntityType", "person"), node(hub, "Entity", "hub")];
    nodes.extend(spokes.iter().map(|s| node(*s, "DocumentChunk", "spoke")));
    store.upsert_nodes(ds, &nodes).await.unwrap();
    let mut taught = Edge::new(a, "taught", b).with_text("Alice taught Bob.");
    taught.properties.insert("feedback_weight".into(), json!(0.75));
    let is_a = Edge::new(a, "is_a", c);
    let likes = Edge::new(c, "likes", hub).with_text("person likes hub.");
    let contains: Vec<Edge> = spokes
        .iter()
        .enumerate()
        .map(|(i, s)| Edge::new(*s, "contains", hub).with_text(format!("spoke {i} contains hub.")))
        .collect();
    let mut edges = vec![taught.clone(), is_a.clone(), likes.clone()];
    edges.extend(contains.iter().cloned());
    store.upsert_edges(ds, &edges).await.unwrap();

    let mut sketch = reads.sketch_between(ds, &[a, b, c, Uuid::new_v4()], false).await.unwrap();
    sketch.nodes.sort_by_key(|n| n.id);
    sketch.edges.sort_by_key(|e| e.key());
    let mut want_nodes = vec![(a, Some(json!(0.5))), (b, None), (c, Some(json!(0.5)))];
    want_nodes.sort_by_key(|n| n.0);
    let got: Vec<(Uuid, Option<Value>)> = sketch.nodes.iter().map(|n| (n.id, n.importance_weight.clone())).collect();
    assert_eq!(got, want_nodes, "the found seeds with their importance weights");
    assert!(sketch.nodes.iter().all(|n| n.feedback_weight.is_none()), "no feedback weight unless asked for");
    let mut want_edges = vec![(taught.key(), taught.type_key()), (is_a.key(), is_a.type_key())];
    want_edges.sort();
    let got: Vec<_> = sketch.edges.iter().map(|e| (e.key(), e.type_key)).collect();
    assert_eq!(got, want_edges, "the edges between two seeds, keyed by their type (text, else name)");
    assert!(sketch.edges.iter().all(|e| e.feedback_weight.is_none()));
    let with_feedback = reads.sketch_between(ds, &[a, b], true).await.unwrap();
    let alice = with_feedback.nodes.iter().find(|n| n.id == a).unwrap();
    assert_eq!(alice.feedback_weight, Some(json!(0.9)));
    assert_eq!(with_feedback.edges.len(), 1);
    assert_eq!(with_feedback.edges[0].feedback_weight, Some(json!(0.75)));
    assert_eq!(reads.sketch_between(ds, &[Uuid::new_v4()], false).await.unwrap(), Default::default());

    // Edges by key: unknown keys skipped, the projection applied, texts read.
    let only: &'static [&'static str] = &["edge_object_id"];
    let mut got = reads
        .get_edges(ds, &[taught.key(), contains[5].key(), (a, "taught".into(), c)], EdgeProjection::Only(only))
        .await
        .unwrap();
    got.sort_by_key(|e| e.key());
    let mut want: Vec<Edge> = [taught.clone(), contains[5].clone()]
        .into_iter()
        .map(|mut e| {
            e.properties.retain(|k, _| k == "edge_object_id");
            e
        })
        .collect();
    want.sort_by_key(|e| e.key());
    assert_eq!(got, want);
    assert!(reads.get_edges(ds, &[], EdgeProjection::All).await.unwrap().is_empty());

    // Edges of given types around the hub: two of its 31, and their endpoints.
    let sub = reads
        .edges_around_of_types(
            ds,
            &[hub],
            &[contains[7].type_key(), likes.type_key(), Uuid::new_v4()],
            EdgeProjection::All,
        )
        .await
        .unwrap();
    let mut got: Vec<Edge> = sub.edges.clone();
    got.sort_by_key(|e| e.key());
    let mut want = vec![contains[7].clone(), likes.clone()];
    want.sort_by_key(|e| e.key());
    assert_eq!(got, want);
    let mut ids: Vec<Uuid> = sub.nodes.iter().map(|n| n.id).collect();
    ids.sort();
    ids.dedup();
    let mut want_ids = vec![hub, spokes[7], c];
    want_ids.sort();
    assert_eq!(ids, want_ids, "the nodes asked about and the kept edges' other endpoints");
    let sub = reads.edges_around_of_types(ds, &[b], &[taught.type_key()], EdgeProjection::Only(&[])).await.unwrap();
    assert_eq!(sub.edges.len(), 1, "incoming edges count too");
    assert!(sub.edges[0].properties.is_empty());
    assert!(reads.edges_around_of_types(ds, &[hub], &[], EdgeProjection::All).await.unwrap().edges.is_empty());

    // A rewritten text re-keys the edge.
    let retold = taught.clone().with_text("Alice mentored Bob.");
    store.upsert_edges(ds, std::slice::from_ref(&retold)).await.unwrap();
    let sketch = reads.sketch_between(ds, &[a, b], false).await.unwrap();
    assert_eq!(sketch.edges[0].type_key, retold.type_key());
    assert_ne!(retold.type_key(), taught.type_key());

    // The whole dataset sketched: every node by id, every edge between two
    // of its nodes by key (one to a missing node is left out), no feedback.
    store.upsert_edges(ds, &[Edge::new(a, "knows", Uuid::new_v4())]).await.unwrap();
    let other = fresh_dataset();
    store.upsert_nodes(other, &nodes[..2]).await.unwrap();
    let whole = reads.whole_sketch(ds).await.unwrap();
    let mut want_ids: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
    want_ids.sort();
    assert_eq!(whole.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), want_ids, "every node, by id");
    let bob = whole.nodes.iter().find(|n| n.id == b).unwrap();
    assert_eq!(bob.importance_weight, None);
    assert!(whole.nodes.iter().all(|n| n.feedback_weight.is_none()));
    let mut stored = vec![retold.clone(), is_a.clone(), likes.clone()];
    stored.extend(contains.iter().cloned());
    let mut want: Vec<(EdgeKey, Uuid)> = stored.iter().map(|e| (e.key(), e.type_key())).collect();
    want.sort();
    let got: Vec<(EdgeKey, Uuid)> = whole.edges.iter().map(|e| (e.key(), e.type_key)).collect();
    assert_eq!(got, want, "every edge between two nodes, by key");
    assert!(whole.edges.iter().all(|e| e.feedback_weight.is_none()));
    let empty = reads.whole_sketch(fresh_dataset()).await.unwrap();
    assert_eq!(empty, Default::default());
    store.delete_dataset(other).await.unwrap();
    store.delete_dataset(ds).await.unwrap();
}

/// The reads the derived indexes follow a write with: edges by text,
/// entities' mentions per document, incoming edge counts — within one
/// dataset only.
async fn graph_derived_index_reads(store: &dyn GraphStore) {
    let (ds, other) = (fresh_dataset(), fresh_dataset());
    let id = |i: u128| Uuid::from_u128(i);
    let (d1, d2, c1, c2, c3, e1, e2, t) = (id(1), id(2), id(11), id(12), id(13), id(21), id(22), id(31));
    let nodes = vec![
        node(d1, "TextDocument", "one"),
        node(d2, "TextDocument", "two"),
        node(c1, "DocumentChunk", "c1"),
        node(c2, "DocumentChunk", "c2"),
        node(c3, "DocumentChunk", "c3"),
        node(e1, "Entity", "e1"),
        node(e2, "Entity", "e2"),
        node(t, "EntityType", "thing"),
    ];
    let edges = vec![
        Edge::new(c1, "is_part_of", d1).with_text("c1 of one"),
        Edge::new(c2, "is_part_of", d1).with_text("c2 of one"),
        Edge::new(c3, "is_part_of", d2).with_text("c3 of two"),
        Edge::new(c1, "contains", e1).with_text("mentions e1"),
        Edge::new(c2, "contains", e1).with_text("mentions e1"),
        Edge::new(c3, "contains", e1).with_text("mentions e1"),
        Edge::new(c1, "contains", e2).with_text("mentions e2"),
        Edge::new(e1, "is_a", t).with_text("e1 is a thing"),
        Edge::new(e2, "is_a", t).with_text("e2 is a thing"),
        Edge::new(e1, "knows", e2).with_text("e1 knows e2"),
    ];
    for dataset in [ds, other] {
        store.upsert_nodes(dataset, &nodes).await.unwrap();
    }
    store.upsert_edges(ds, &edges).await.unwrap();
    // The other dataset has fewer edges: counts must not mix.
    store.upsert_edges(other, &edges[..4]).await.unwrap();

    let texts = |edges: Vec<Edge>| {
        let mut keys: Vec<(Uuid, String, Uuid, Option<String>)> =
            edges.into_iter().map(|e| (e.source_node_id, e.relationship_name, e.target_node_id, e.edge_text)).collect();
        keys.sort();
        keys
    };
    let asked = ["mentions e1".to_string(), "e1 knows e2".to_string(), "no such text".to_string()];
    let found = texts(store.edges_with_texts(ds, &asked).await.unwrap());
    let want = texts(edges.iter().filter(|e| asked.contains(e.edge_text.as_ref().unwrap())).cloned().collect());
    assert_eq!(found.len(), 4, "three chunks mention e1, one relation: {found:?}");
    assert_eq!(found, want);
    assert_eq!(store.edges_with_texts(other, &asked).await.unwrap().len(), 1);
    assert!(store.edges_with_texts(ds, &[]).await.unwrap().is_empty());

    let mut mentions = store.document_mentions(ds, &[e1, e2, id(99)]).await.unwrap();
    mentions.sort();
    let m = |entity, document, chunks| Mentions { entity, document, chunks };
    assert_eq!(mentions, vec![m(e1, d1, 2), m(e1, d2, 1), m(e2, d1, 1)]);
    assert_eq!(store.document_mentions(other, &[e1, e2]).await.unwrap(), vec![m(e1, d1, 1)]);
    assert!(store.document_mentions(ds, &[]).await.unwrap().is_empty());

    let mut counts = store.count_edges_into(ds, &[t, e2, d1], "is_a").await.unwrap();
    counts.sort();
    assert_eq!(counts, vec![(t, 2)]);
    assert_eq!(store.count_edges_into(ds, &[e2, e1], "knows").await.unwrap(), vec![(e2, 1)]);
    assert!(store.count_edges_into(other, &[t], "is_a").await.unwrap().is_empty());
    for dataset in [ds, other] {
        store.delete_dataset(dataset).await.unwrap();
    }
    graph_nodes_by_name(store).await;
}

/// The count of a type's nodes and the first of them in name order: names
/// compared as bytes (upper case before lower, accents after both), nodes
/// without a string name first, ties by id.
async fn graph_nodes_by_name(store: &dyn GraphStore) {
    let (ds, other) = (fresh_dataset(), fresh_dataset());
    let id = |i: u128| Uuid::from_u128(i);
    let mut unnamed = node(id(7), "TextDocument", "");
    unnamed.properties.remove("name");
    let mut numbered = node(id(3), "TextDocument", "");
    numbered.properties.insert("name".into(), json!(42));
    let docs = vec![
        node(id(1), "TextDocument", "beta.txt"),
        node(id(2), "TextDocument", "Beta.txt"),
        node(id(9), "TextDocument", "alpha.txt"),
        node(id(4), "TextDocument", "alpha.txt"),
        node(id(5), "TextDocument", "\u{e9}t\u{e9}.txt"),
        node(id(6), "TextDocument", "a b.txt"),
        unnamed,
        numbered,
        node(id(8), "Entity", "aardvark"),
    ];
    store.upsert_nodes(ds, &docs).await.unwrap();
    store.upsert_nodes(other, &docs[..2]).await.unwrap();
    let ids = |nodes: Vec<Node>| nodes.into_iter().map(|n| n.id).collect::<Vec<_>>();
    let in_order = vec![id(3), id(7), id(2), id(6), id(4), id(9), id(1), id(5)];
    assert_eq!(ids(store.first_nodes_by_name(ds, "TextDocument", 100).await.unwrap()), in_order);
    assert_eq!(ids(store.first_nodes_by_name(ds, "TextDocument", 3).await.unwrap()), in_order[..3]);
    assert_eq!(ids(store.first_nodes_by_name(other, "TextDocument", 100).await.unwrap()), vec![id(2), id(1)]);
    assert!(store.first_nodes_by_name(ds, "Nope", 5).await.unwrap().is_empty());
    let first = store.first_nodes_by_name(ds, "TextDocument", 1).await.unwrap();
    assert_eq!(first, vec![docs[7].clone()], "whole nodes, properties included");
    assert_eq!(store.count_nodes_by_type(ds, "TextDocument").await.unwrap(), 8);
    assert_eq!(store.count_nodes_by_type(ds, "Entity").await.unwrap(), 1);
    assert_eq!(store.count_nodes_by_type(other, "TextDocument").await.unwrap(), 2);
    assert_eq!(store.count_nodes_by_type(ds, "Nope").await.unwrap(), 0);
    for dataset in [ds, other] {
        store.delete_dataset(dataset).await.unwrap();
    }
}

/// Paged reads (what a streamed export walks): every node and edge of the
/// dataset once, whatever the page size; a page is short only at the end.
async fn graph_pages(store: &dyn GraphStore) {
    let (ds, other) = (fresh_dataset(), fresh_dataset());
    let nodes: Vec<Node> = (0..23).map(|i| node(Uuid::new_v4(), "Entity", &format!("n{i}"))).collect();
    // Edges sharing a source, and a source and relationship, so the keyset
    // compares every term of the key.
    let mut edges = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        for (rel, step) in [("likes", 1), ("likes", 2), ("knows", 3)] {
            edges.push(Edge::new(n.id, rel, nodes[(i + step) % nodes.len()].id).with_text(format!("{rel} {i}")));
        }
    }
    store.upsert_nodes(ds, &nodes).await.unwrap();
    store.upsert_edges(ds, &edges).await.unwrap();
    store.upsert_nodes(other, &nodes[..3]).await.unwrap();
    store.upsert_edges(other, &edges[..2]).await.unwrap();
    let whole = store.get_graph(ds).await.unwrap();
    let mut want_nodes: Vec<Uuid> = whole.nodes.iter().map(|n| n.id).collect();
    want_nodes.sort();
    let mut want_edges: Vec<EdgeKey> = whole.edges.iter().map(Edge::key).collect();
    want_edges.sort();
    assert_eq!((want_nodes.len(), want_edges.len()), (23, 69));
    for limit in [1, 4, 7, 23, 100] {
        let (mut got, mut after) = (Vec::new(), None);
        loop {
            let page = store.nodes_page(ds, after, limit).await.unwrap();
            assert!(page.items.len() <= limit, "a page holds at most its limit");
            assert!(page.items.len() == limit || page.next.is_none(), "a short page is the last");
            if let Some(n) = page.items.iter().find(|n| n.id == nodes[5].id) {
                assert_eq!(n, &nodes[5], "a paged node is read in full");
            }
            got.extend(page.items.iter().map(|n| n.id));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let count = got.len();
        got.sort();
        got.dedup();
        assert_eq!((count, &got), (want_nodes.len(), &want_nodes), "nodes in pages of {limit}");

        let (mut got, mut after) = (Vec::new(), None);
        loop {
            let page = store.edges_page(ds, after, limit).await.unwrap();
            assert!(page.items.len() <= limit);
            assert!(page.items.len() == limit || page.next.is_none(), "a short page is the last");
            if let Some(e) = page.items.iter().find(|e| e.key() == edges[4].key()) {
                assert_eq!(e.edge_text, edges[4].edge_text, "a paged edge is read in full");
            }
            got.extend(page.items.iter().map(Edge::key));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let count = got.len();
        got.sort();
        got.dedup();
        assert_eq!((count, &got), (want_edges.len(), &want_edges), "edges in pages of {limit}");
    }

    // Writes between two pages: every edge present throughout is read once
    // (an edge updated after it was read is not read again); what was added
    // or removed meanwhile may or may not show.
    let (mut got, mut after, mut wrote) = (Vec::new(), None, false);
    let added = Edge::new(nodes[0].id, "added", nodes[1].id);
    loop {
        let page = store.edges_page(ds, after, 10).await.unwrap();
        got.extend(page.items.iter().map(Edge::key));
        if !wrote {
            wrote = true;
            let mut updated = page.items[0].clone();
            updated.edge_text = Some("updated".into());
            store.upsert_edges(ds, &[updated, added.clone()]).await.unwrap();
            store.delete_edges(ds, &[edges[68].key()]).await.unwrap();
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    got.retain(|k| k != &added.key() && k != &edges[68].key());
    let count = got.len();
    got.sort();
    got.dedup();
    let mut kept = want_edges.clone();
    kept.retain(|k| k != &edges[68].key());
    assert_eq!((count, &got), (kept.len(), &kept), "edges read once across writes between pages");
    let empty = fresh_dataset();
    let page = store.nodes_page(empty, None, 10).await.unwrap();
    assert!(page.items.is_empty() && page.next.is_none());
    let page = store.edges_page(empty, None, 10).await.unwrap();
    assert!(page.items.is_empty() && page.next.is_none());
    store.delete_dataset(ds).await.unwrap();
    store.delete_dataset(other).await.unwrap();
}

async fn graph_scope_isolation(store: &dyn GraphStore) {
    let (ds1, ds2) = (fresh_dataset(), fresh_dataset());
    let shared = Uuid::new_v4();
    let other = Uuid::new_v4();
    store.upsert_nodes(ds1, &[node(shared, "Entity", "in-one"), node(other, "Entity", "x")]).await.unwrap();
    store.upsert_edges(ds1, &[Edge::new(shared, "r", other)]).await.unwrap();
    // The same id in another dataset is another node.
    store.upsert_nodes(ds2, &[node(shared, "Entity", "in-two")]).await.unwrap();

    assert_eq!(store.count(ds2).await.unwrap(), (1, 0), "no node or edge from another dataset");
    assert_eq!(store.get_graph(ds2).await.unwrap().nodes.len(), 1);
    assert_eq!(store.nodes_by_type(ds2, "Entity").await.unwrap().len(), 1);
    let seen = store.get_nodes(ds2, &[shared, other]).await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].name(), Some("in-two"));
    let sub = store.neighborhood(ds2, &[shared], 3, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.nodes.len(), 1, "projection never crosses datasets");
    assert!(sub.edges.is_empty());

    store.delete_dataset(ds2).await.unwrap();
    assert_eq!(store.count(ds1).await.unwrap(), (2, 1), "deleting one dataset leaves the other");
    assert_eq!(store.get_nodes(ds1, &[shared]).await.unwrap()[0].name(), Some("in-one"));
    store.delete_dataset(ds1).await.unwrap();
    assert!(store.is_empty(ds1).await.unwrap());
}

async fn graph_deletes(store: &dyn GraphStore) {
    let ds = fresh_dataset();
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store.upsert_nodes(ds, &[node(a, "T", "a"), node(b, "T", "b"), node(c, "T", "c")]).await.unwrap();
    store.upsert_edges(ds, &[Edge::new(a, "r", b), Edge::new(b, "r", c), Edge::new(a, "s", c)]).await.unwrap();
    store.delete_edges(ds, &[(a, "s".into(), c), (a, "missing".into(), c)]).await.unwrap();
    assert_eq!(store.count(ds).await.unwrap(), (3, 2), "delete_edges removes exactly the named edges");
    store.upsert_edges(ds, &[Edge::new(a, "s", c)]).await.unwrap();
    store.delete_nodes(ds, &[b]).await.unwrap();
    assert_eq!(store.count(ds).await.unwrap(), (2, 1), "deleting a node deletes its edges");
    let sub = store.neighborhood(ds, &[a], 1, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.edges.len(), 1);
    assert_eq!(sub.edges[0].relationship_name, "s");
    store.delete_dataset(ds).await.unwrap();
}

async fn graph_concurrent_writers(store: Arc<dyn GraphStore>) {
    let ds = fresh_dataset();
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let nodes: Vec<Node> = (0..50).map(|i| node(Uuid::new_v4(), "T", &format!("w{w}-{i}"))).collect();
            store.upsert_nodes(ds, &nodes).await.unwrap();
            let edges: Vec<Edge> = nodes.windows(2).map(|p| Edge::new(p[0].id, "next", p[1].id)).collect();
            store.upsert_edges(ds, &edges).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.count(ds).await.unwrap(), (400, 8 * 49), "concurrent writers lose nothing");
    store.delete_dataset(ds).await.unwrap();
}

async fn graph_large_batch(store: &dyn GraphStore, n: usize) {
    let ds = fresh_dataset();
    let nodes: Vec<Node> = (0..n).map(|i| node(Uuid::new_v4(), "DocumentChunk", &format!("n{i}"))).collect();
    store.upsert_nodes(ds, &nodes).await.unwrap();
    let edges: Vec<Edge> = nodes.windows(2).map(|p| Edge::new(p[0].id, "next", p[1].id)).collect();
    store.upsert_edges(ds, &edges).await.unwrap();
    assert_eq!(store.count(ds).await.unwrap(), (n as u64, n.saturating_sub(1) as u64));
    let mid = nodes[n / 2].id;
    let sub = store.neighborhood(ds, &[mid], 1, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.nodes.len(), 3);

    // Depth 0 over thousands of seeds (one id-set parameter in SQL, batched
    // lists elsewhere): exactly the edges with both ends seeded.
    let skips: Vec<Edge> = nodes.windows(3).map(|p| Edge::new(p[0].id, "skip", p[2].id)).collect();
    store.upsert_edges(ds, &skips).await.unwrap();
    let m = n.min(4_600);
    let evens: Vec<Uuid> = nodes[..m].iter().step_by(2).map(|x| x.id).collect();
    let sub = store.neighborhood(ds, &evens, 0, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.nodes.len(), evens.len());
    assert!(sub.edges.iter().all(|e| e.relationship_name == "skip"), "a `next` edge has an odd end");
    assert_eq!(sub.edges.len(), evens.len() - 1, "the skips between consecutive even seeds");
    let all: Vec<Uuid> = nodes[..m].iter().map(|x| x.id).collect();
    let sub = store.neighborhood(ds, &all, 0, EdgeProjection::All).await.unwrap();
    assert_eq!(sub.edges.len(), (m - 1) + (m - 2), "every `next` and `skip` among the first {m}");
    store.delete_dataset(ds).await.unwrap();
    assert!(store.is_empty(ds).await.unwrap());
}

// ---------------------------------------------------------------------------
// Vectors
// ---------------------------------------------------------------------------

fn record(id: Uuid, vector: Vec<f32>, text: &str, sets: &[&str]) -> VectorRecord {
    let mut payload = Map::new();
    payload.insert("id".into(), json!(id.to_string()));
    payload.insert("text".into(), json!(text));
    payload.insert("chunk_index".into(), json!(0));
    VectorRecord { id, vector, payload, belongs_to_set: sets.iter().map(|s| s.to_string()).collect() }
}

/// Runs every vector-store check. `collection_prefix` keeps suites that share
/// a backend apart.
pub async fn vector_store_conformance(store: Arc<dyn VectorStore>, collection_prefix: &str) {
    let col = format!("{collection_prefix}Conformance_text");
    let spec = EmbeddingSpec { model: "conformance-model".into(), dimensions: 4 };
    vector_search_and_upsert(store.as_ref(), &col, &spec).await;
    vector_scope_isolation(store.as_ref(), &col, &spec).await;
    vector_dimension_mismatch(store.as_ref(), &col, &spec).await;
    vector_node_set_filter(store.as_ref(), &col, &spec).await;
    vector_concurrent_writers(store.clone(), &col, &spec).await;
    vector_large_batch(store.as_ref(), &col, &spec, 50_000).await;
    vector_replace_collection(store.as_ref(), &format!("{collection_prefix}Replaced_text"), &spec).await;
}

/// Whole-collection reads, replacement under another model, and dropping
/// (what `recall reembed` builds on).
async fn vector_replace_collection(store: &dyn VectorStore, col: &str, spec: &EmbeddingSpec) {
    let (ds1, ds2) = (fresh_dataset(), fresh_dataset());
    assert!(store.rows(col).await.unwrap().is_empty(), "a missing collection has no rows");
    store.ensure_collection(ds1, col, spec).await.unwrap();
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store.upsert(ds1, col, vec![record(a, vec![1.0, 0.0, 0.0, 0.0], "alpha", &["s"])]).await.unwrap();
    store
        .upsert(
            ds2,
            col,
            vec![record(b, vec![0.0, 1.0, 0.0, 0.0], "beta", &[]), record(c, vec![0.0, 0.0, 1.0, 0.0], "gamma", &[])],
        )
        .await
        .unwrap();
    assert!(store.collections().await.unwrap().iter().any(|n| n == col));
    let mut rows = store.rows(col).await.unwrap();
    rows.sort_by_key(|(_, r)| r.payload.get("text").and_then(Value::as_str).map(str::to_string));
    let seen: Vec<(DatasetId, &str, usize)> = rows
        .iter()
        .map(|(d, r)| (*d, r.payload.get("text").and_then(Value::as_str).unwrap_or(""), r.vector.len()))
        .collect();
    assert_eq!(seen, vec![(ds1, "alpha", 4), (ds2, "beta", 4), (ds2, "gamma", 4)], "every dataset's rows, whole");
    assert_eq!(rows[0].1.belongs_to_set, vec!["s".to_string()]);

    // Another model of the same width: every row rewritten, the new model recorded.
    let next = EmbeddingSpec { model: "conformance-model-2".into(), dimensions: spec.dimensions };
    let turned: Vec<(DatasetId, VectorRecord)> = rows
        .into_iter()
        .map(|(d, mut r)| {
            r.vector.rotate_left(1);
            (d, r)
        })
        .collect();
    store.replace_collection(col, &next, turned).await.unwrap();
    assert_eq!(store.collection_spec(col).await.unwrap(), Some(next.clone()));
    assert_eq!((store.count(ds1, col).await.unwrap(), store.count(ds2, col).await.unwrap()), (1, 2));
    // alpha's vector rotated from x to w: a query along w finds it first.
    let hits = store.search(ds1, col, &[0.0, 0.0, 0.0, 1.0], Some(1), None).await.unwrap();
    assert_eq!((hits[0].id, hits[0].score < 1e-6), (a, true), "the replaced vectors are searched");
    let filtered =
        store.search(ds1, col, &[0.0, 0.0, 0.0, 1.0], None, Some(NodeSetFilter::Any(vec!["s".into()]))).await.unwrap();
    assert_eq!(filtered.len(), 1, "node sets survive the replacement");
    let err = store.ensure_collection(ds1, col, spec).await.unwrap_err();
    assert_eq!(err.name(), "EmbeddingModelMismatchError", "the old model is now the other one");
    let bad = vec![(ds1, record(a, vec![1.0; 3], "short", &[]))];
    assert!(store.replace_collection(col, &next, bad).await.is_err(), "a wrong width is refused");
    assert_eq!(store.count(ds2, col).await.unwrap(), 2, "and changes nothing");

    store.drop_collection(col).await.unwrap();
    assert_eq!(store.collection_spec(col).await.unwrap(), None);
    assert!(!store.collections().await.unwrap().iter().any(|n| n == col));
    store.drop_collection(col).await.unwrap();
}

async fn vector_large_batch(store: &dyn VectorStore, col: &str, spec: &EmbeddingSpec, n: usize) {
    let ds = fresh_dataset();
    store.ensure_collection(ds, col, spec).await.unwrap();
    let target = Uuid::new_v4();
    let rows: Vec<VectorRecord> = (0..n)
        .map(|i| {
            let x = i as f32 / n as f32;
            if i == n / 2 {
                record(target, vec![0.0, 0.0, 0.0, 1.0], "needle", &[])
            } else {
                record(Uuid::new_v4(), vec![1.0, x, 1.0 - x, 0.0], "bulk", &[])
            }
        })
        .collect();
    store.upsert(ds, col, rows).await.unwrap();
    assert_eq!(store.count(ds, col).await.unwrap(), n as u64, "a large batch lands whole");
    let hits = store.search(ds, col, &[0.0, 0.0, 0.1, 1.0], Some(3), None).await.unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].id, target, "the exact match wins among {n} rows");
    store.delete_dataset(ds).await.unwrap();
}

async fn vector_search_and_upsert(store: &dyn VectorStore, col: &str, spec: &EmbeddingSpec) {
    let ds = fresh_dataset();
    assert!(!store.has_collection(ds, col).await.unwrap());
    store.ensure_collection(ds, col, spec).await.unwrap();
    store.ensure_collection(ds, col, spec).await.unwrap();
    assert_eq!(store.collection_spec(col).await.unwrap().as_ref(), Some(spec));
    let (x, y, z) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store
        .upsert(
            ds,
            col,
            vec![
                record(x, vec![1.0, 0.0, 0.0, 0.0], "x", &[]),
                record(y, vec![0.0, 1.0, 0.0, 0.0], "y", &[]),
                record(z, vec![1.0, 1.0, 0.0, 0.0], "z", &[]),
            ],
        )
        .await
        .unwrap();
    assert!(store.has_collection(ds, col).await.unwrap());
    assert_eq!(store.count(ds, col).await.unwrap(), 3);

    let hits = store.search(ds, col, &[1.0, 0.1, 0.0, 0.0], None, None).await.unwrap();
    let order: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
    assert_eq!(order, vec![x, z, y], "nearest first");
    // Cosine distance: 1 - cos. For x: cos = 1/sqrt(1.01).
    let expected = 1.0 - 1.0 / 1.01f64.sqrt();
    assert!((hits[0].score - expected).abs() < 1e-4, "raw cosine distance, got {}", hits[0].score);
    assert!(hits[2].score > 0.85 && hits[2].score < 0.95, "orthogonal-ish distance {}", hits[2].score);
    assert_eq!(hits[0].payload.get("text"), Some(&json!("x")), "payload round-trips");
    assert_eq!(hits[0].payload.get("chunk_index"), Some(&json!(0)));

    // Ids and distances alone rank as the full hits do, with or without a limit.
    for limit in [None, Some(2)] {
        let full = store.search(ds, col, &[1.0, 0.1, 0.0, 0.0], limit, None).await.unwrap();
        let bare = store.search_ids(ds, col, &[1.0, 0.1, 0.0, 0.0], limit, None).await.unwrap();
        assert_eq!(bare.iter().map(|h| h.0).collect::<Vec<_>>(), full.iter().map(|h| h.id).collect::<Vec<_>>());
        assert!(bare.iter().zip(&full).all(|(b, f)| (b.1 - f.score).abs() < 1e-6), "{bare:?}");
    }

    let top1 = store.search(ds, col, &[0.0, 1.0, 0.0, 0.0], Some(1), None).await.unwrap();
    assert_eq!(top1.len(), 1);
    assert_eq!(top1[0].id, y);
    assert!(top1[0].score.abs() < 1e-5);

    // Upsert replaces by id.
    store.upsert(ds, col, vec![record(y, vec![0.0, 0.0, 1.0, 0.0], "y2", &[])]).await.unwrap();
    assert_eq!(store.count(ds, col).await.unwrap(), 3);
    let hit = store.search(ds, col, &[0.0, 0.0, 1.0, 0.0], Some(1), None).await.unwrap();
    assert_eq!(hit[0].id, y);
    assert_eq!(hit[0].payload.get("text"), Some(&json!("y2")));

    store.delete(ds, col, &[x]).await.unwrap();
    assert_eq!(store.count(ds, col).await.unwrap(), 2);
    store.delete_dataset(ds).await.unwrap();
    assert_eq!(store.count(ds, col).await.unwrap(), 0);
    assert!(!store.has_collection(ds, col).await.unwrap());
}

async fn vector_scope_isolation(store: &dyn VectorStore, col: &str, spec: &EmbeddingSpec) {
    let (ds1, ds2) = (fresh_dataset(), fresh_dataset());
    store.ensure_collection(ds1, col, spec).await.unwrap();
    let id = Uuid::new_v4();
    store.upsert(ds1, col, vec![record(id, vec![0.5, 0.5, 0.5, 0.5], "secret", &[])]).await.unwrap();
    let hits = store.search(ds2, col, &[0.5, 0.5, 0.5, 0.5], None, None).await.unwrap();
    assert!(hits.is_empty(), "no hit from another dataset");
    assert!(!store.has_collection(ds2, col).await.unwrap());
    assert_eq!(store.count(ds2, col).await.unwrap(), 0);
    // The same id in another dataset is another row.
    store.upsert(ds2, col, vec![record(id, vec![0.5, 0.5, 0.5, 0.5], "mine", &[])]).await.unwrap();
    store.delete_dataset(ds2).await.unwrap();
    let hits = store.search(ds1, col, &[0.5, 0.5, 0.5, 0.5], None, None).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].payload.get("text"), Some(&json!("secret")));
    store.delete_dataset(ds1).await.unwrap();
}

async fn vector_dimension_mismatch(store: &dyn VectorStore, col: &str, spec: &EmbeddingSpec) {
    let ds = fresh_dataset();
    store.ensure_collection(ds, col, spec).await.unwrap();
    let wider = EmbeddingSpec { model: "other-model".into(), dimensions: 8 };
    let err = store.ensure_collection(ds, col, &wider).await.unwrap_err();
    assert!(
        matches!(err, RecallError::EmbeddingDimensionMismatch { stored_dimensions: 4, configured_dimensions: 8, .. }),
        "ensure_collection with another width: {err:?}"
    );
    assert_eq!(err.http_status(), 409);
    // The same width from another model is caught too, and not called a width problem.
    let same_width = EmbeddingSpec { model: "other-model".into(), dimensions: spec.dimensions };
    let err = store.ensure_collection(ds, col, &same_width).await.unwrap_err();
    assert!(
        matches!(&err, RecallError::EmbeddingModelMismatch { configured_model, .. } if configured_model == "other-model"),
        "ensure_collection with another model of the same width: {err:?}"
    );
    assert_eq!(err.http_status(), 409);
    let err = store.upsert(ds, col, vec![record(Uuid::new_v4(), vec![1.0; 3], "bad", &[])]).await.unwrap_err();
    assert!(matches!(err, RecallError::EmbeddingDimensionMismatch { .. }), "upsert of a wrong width: {err:?}");
    let err = store.search(ds, col, &[1.0; 5], None, None).await.unwrap_err();
    assert!(matches!(err, RecallError::EmbeddingDimensionMismatch { .. }), "search with a wrong width: {err:?}");
    assert_eq!(store.count(ds, col).await.unwrap(), 0, "a rejected write stores nothing");
}

async fn vector_node_set_filter(store: &dyn VectorStore, col: &str, spec: &EmbeddingSpec) {
    let ds = fresh_dataset();
    store.ensure_collection(ds, col, spec).await.unwrap();
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store
        .upsert(
            ds,
            col,
            vec![
                record(a, vec![1.0, 0.0, 0.0, 0.0], "a", &["red"]),
                record(b, vec![1.0, 0.1, 0.0, 0.0], "b", &["red", "blue"]),
                record(c, vec![1.0, 0.2, 0.0, 0.0], "c", &[]),
            ],
        )
        .await
        .unwrap();
    let q = [1.0, 0.0, 0.0, 0.0];
    let any =
        store.search(ds, col, &q, None, Some(NodeSetFilter::Any(vec!["blue".into(), "red".into()]))).await.unwrap();
    assert_eq!(any.iter().map(|h| h.id).collect::<Vec<_>>(), vec![a, b]);
    let all =
        store.search(ds, col, &q, None, Some(NodeSetFilter::All(vec!["blue".into(), "red".into()]))).await.unwrap();
    assert_eq!(all.iter().map(|h| h.id).collect::<Vec<_>>(), vec![b]);
    let bare =
        store.search_ids(ds, col, &q, Some(5), Some(NodeSetFilter::Any(vec!["blue".into(), "red".into()]))).await;
    assert_eq!(bare.unwrap().iter().map(|h| h.0).collect::<Vec<_>>(), vec![a, b], "search_ids filters alike");
    let none = store.search(ds, col, &q, None, Some(NodeSetFilter::Any(vec!["green".into()]))).await.unwrap();
    assert!(none.is_empty());
    store.delete_dataset(ds).await.unwrap();
}

async fn vector_concurrent_writers(store: Arc<dyn VectorStore>, col: &str, spec: &EmbeddingSpec) {
    let ds = fresh_dataset();
    store.ensure_collection(ds, col, spec).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..4 {
        let store = store.clone();
        let col = col.to_string();
        tasks.push(tokio::spawn(async move {
            let rows: Vec<VectorRecord> =
                (0..25).map(|i| record(Uuid::new_v4(), vec![1.0, w as f32, i as f32, 1.0], "c", &[])).collect();
            store.upsert(ds, &col, rows).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.count(ds, col).await.unwrap(), 100, "concurrent writers lose nothing");
    store.delete_dataset(ds).await.unwrap();
}

// ---------------------------------------------------------------------------
// Relational
// ---------------------------------------------------------------------------

/// Runs every relational-store check.
pub async fn relational_store_conformance<S: RelationalStore + 'static>(store: Arc<S>) {
    let users: &dyn UserStore = store.as_ref();
    let datasets: &dyn DatasetStore = store.as_ref();
    let data: &dyn DataStore = store.as_ref();
    let runs: &dyn PipelineRunStore = store.as_ref();
    let history: &dyn SearchHistoryStore = store.as_ref();

    let email = format!("{}@example.com", Uuid::new_v4());
    assert!(users.find_user(&email).await.unwrap().is_none());
    let owner = users.ensure_user(&email).await.unwrap();
    assert_eq!(users.ensure_user(&email).await.unwrap(), owner, "ensure_user is idempotent");
    assert_eq!(users.find_user(&email).await.unwrap(), Some(owner.clone()));
    let stranger = users.ensure_user(&format!("{}@example.com", Uuid::new_v4())).await.unwrap();

    let docs = datasets.ensure_dataset(&owner, "docs").await.unwrap();
    assert_eq!(datasets.ensure_dataset(&owner, "docs").await.unwrap(), docs);
    let notes = datasets.ensure_dataset(&owner, "notes").await.unwrap();
    let theirs = datasets.ensure_dataset(&stranger, "docs").await.unwrap();
    assert_ne!(theirs.id, docs.id, "names are unique per owner, not globally");

    let found = datasets.owned_datasets_by_name(&owner, &["docs".into(), "missing".into()]).await.unwrap();
    assert_eq!(found, vec![docs.clone()]);
    let readable: Vec<DatasetId> =
        datasets.permitted_datasets(&owner, Permission::Read).await.unwrap().iter().map(|d| d.id).collect();
    assert_eq!(readable.len(), 2);
    assert!(readable.contains(&docs.id) && readable.contains(&notes.id));
    assert!(!readable.contains(&theirs.id), "another user's dataset is not readable");
    assert_eq!(datasets.get_datasets(&[notes.id]).await.unwrap(), vec![notes.clone()]);
    grants_conformance(users, datasets, &owner, &stranger, &docs, &notes, &theirs).await;
    data_versions_conformance(datasets, &docs, &notes).await;
    credentials_conformance(store.clone(), &owner, &stranger).await;

    let item = DataItem {
        id: Uuid::new_v4(),
        dataset_id: docs.id,
        name: "a.txt".into(),
        extension: "txt".into(),
        mime_type: "text/plain".into(),
        content_hash: "h".into(),
        raw_data_location: "/tmp/a.txt".into(),
        owner_id: owner.id,
        status: DataStatus::Pending,
        created_at: now_millis(),
    };
    assert_eq!(data.upsert_data(&item).await.unwrap(), item);
    let mut again = item.clone();
    again.name = "renamed.txt".into();
    assert_eq!(data.upsert_data(&again).await.unwrap(), item, "an existing item is kept as it is");
    data.set_data_status(docs.id, item.id, DataStatus::Completed).await.unwrap();
    let listed = data.list_data(docs.id).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, DataStatus::Completed);
    assert_eq!(data.count_data(docs.id).await.unwrap(), 1);
    assert_eq!(data.count_data(notes.id).await.unwrap(), 0, "data is scoped to its dataset");
    quarantine_conformance(data, &item, &notes).await;

    let run_id = Uuid::new_v4();
    let started = PipelineRun {
        id: Uuid::new_v4(),
        pipeline_run_id: run_id,
        pipeline_name: "cognify_pipeline".into(),
        dataset_id: docs.id,
        status: PipelineRunStatus::Started,
        error_class: None,
        error_message: None,
        run_info: json!({"items": 1}),
        created_at: now_millis(),
    };
    let errored = PipelineRun {
        id: Uuid::new_v4(),
        status: PipelineRunStatus::Errored,
        error_class: Some("ValueError".into()),
        error_message: Some("bad".into()),
        created_at: started.created_at + 1,
        ..started.clone()
    };
    runs.record_run(&started).await.unwrap();
    runs.record_run(&errored).await.unwrap();
    assert_eq!(runs.list_runs(docs.id).await.unwrap(), vec![started.clone(), errored.clone()]);
    assert!(runs.list_runs(notes.id).await.unwrap().is_empty());

    // The warm-up probe (docs/recall.md, "The graph lane", step 4), against the same rules as GraphBuildStatus::from_runs.
    let failed =
        GraphBuildStatus::BuildFailed { error_class: Some("ValueError".into()), error_message: Some("bad".into()) };
    assert_eq!(runs.graph_build_status(&[]).await.unwrap(), GraphBuildStatus::NeverBuilt);
    assert_eq!(runs.graph_build_status(&[notes.id]).await.unwrap(), GraphBuildStatus::NeverBuilt);
    assert_eq!(runs.graph_build_status(&[docs.id]).await.unwrap(), failed, "errored, nothing completed");
    assert_eq!(runs.graph_build_status(&[notes.id, docs.id]).await.unwrap(), failed);
    let staged = PipelineRun {
        id: Uuid::new_v4(),
        pipeline_run_id: Uuid::new_v4(),
        pipeline_name: "add_pipeline".into(),
        dataset_id: notes.id,
        status: PipelineRunStatus::Errored,
        created_at: errored.created_at + 1,
        ..errored.clone()
    };
    runs.record_run(&staged).await.unwrap();
    assert_eq!(
        runs.graph_build_status(&[notes.id]).await.unwrap(),
        GraphBuildStatus::Warm,
        "staged only: fail-safe warm"
    );
    let newer_error = PipelineRun {
        id: Uuid::new_v4(),
        error_class: Some("KeyError".into()),
        error_message: None,
        created_at: errored.created_at + 2,
        ..errored.clone()
    };
    runs.record_run(&newer_error).await.unwrap();
    assert_eq!(
        runs.graph_build_status(&[docs.id]).await.unwrap(),
        GraphBuildStatus::BuildFailed { error_class: Some("KeyError".into()), error_message: None },
        "the newest errored run"
    );
    let completed = PipelineRun {
        id: Uuid::new_v4(),
        status: PipelineRunStatus::Completed,
        error_class: None,
        error_message: None,
        created_at: errored.created_at - 5,
        ..errored.clone()
    };
    runs.record_run(&completed).await.unwrap();
    assert_eq!(runs.graph_build_status(&[docs.id]).await.unwrap(), GraphBuildStatus::Warm, "any completed run is warm");
    runs.delete_dataset_runs(notes.id).await.unwrap();

    // Search history: a question and an answer row per answer, per user, oldest first.
    let record = SearchRecord {
        user_id: owner.id,
        query_text: "Who wrote it? 'quoted' \\ \"double\"".into(),
        query_type: "GRAPH_COMPLETION".into(),
        answers: vec![(Some(docs.id), "Ada.".into()), (Some(notes.id), String::new())],
    };
    history.record_search(&record).await.unwrap();
    let empty = SearchRecord { answers: vec![(None, String::new())], query_text: "later".into(), ..record.clone() };
    history.record_search(&empty).await.unwrap();
    let rows = history.search_history(owner.id).await.unwrap();
    let view: Vec<(&str, &str, Option<DatasetId>)> =
        rows.iter().map(|r| (r.user.as_str(), r.text.as_str(), r.dataset_id)).collect();
    assert_eq!(
        view,
        vec![
            ("user", record.query_text.as_str(), Some(docs.id)),
            ("system", "Ada.", Some(docs.id)),
            ("user", record.query_text.as_str(), Some(notes.id)),
            ("system", "", Some(notes.id)),
            ("user", "later", None),
            ("system", "", None),
        ]
    );
    assert!(history.search_history(Uuid::new_v4()).await.unwrap().is_empty(), "history is per user");
    // Concurrent recalls: each record is readable once its call returns, its
    // answer right after its question.
    let busy = Uuid::new_v4();
    let writes = (0..40).map(|i| {
        let record = SearchRecord {
            user_id: busy,
            query_text: format!("q{i}"),
            answers: vec![(Some(docs.id), format!("a{i}"))],
            ..record.clone()
        };
        async move {
            history.record_search(&record).await.unwrap();
            history.search_history(busy).await.unwrap().iter().any(|r| r.text == record.query_text)
        }
    });
    assert!(futures::future::join_all(writes).await.into_iter().all(|seen| seen), "read after its own write");
    let rows = history.search_history(busy).await.unwrap();
    assert_eq!(rows.len(), 80);
    for pair in rows.chunks(2) {
        assert_eq!((pair[0].user.as_str(), pair[1].user.as_str()), ("user", "system"));
        assert_eq!(pair[1].text, pair[0].text.replacen('q', "a", 1));
    }

    let other = DataItem { id: Uuid::new_v4(), ..item.clone() };
    data.upsert_data(&other).await.unwrap();
    data.delete_data(docs.id, other.id).await.unwrap();
    assert_eq!(data.count_data(docs.id).await.unwrap(), 1, "delete_data removes one item");

    data.delete_dataset_data(docs.id).await.unwrap();
    runs.delete_dataset_runs(docs.id).await.unwrap();
    datasets.delete_dataset(docs.id).await.unwrap();
    assert_eq!(data.count_data(docs.id).await.unwrap(), 0);
    assert!(runs.list_runs(docs.id).await.unwrap().is_empty());
    let readable = datasets.permitted_datasets(&owner, Permission::Read).await.unwrap();
    assert_eq!(readable, vec![notes], "a deleted dataset is gone");
    assert!(datasets.grants(docs.id).await.unwrap().is_empty(), "a deleted dataset's grants are gone");
    let shared: Vec<DatasetId> =
        datasets.accessible_datasets(&stranger).await.unwrap().iter().map(|a| a.dataset.id).collect();
    assert!(!shared.contains(&docs.id), "a deleted dataset is shared with nobody");
}

/// Data versions: every bump raises the store version by one and stamps
/// the dataset with it; a bump from a stale `seen` reports unseen writes;
/// concurrent bumps lose none.
/// Quarantine rows: per dataset, each id once, lifted with the item's
/// completion or deletion, many rows in one call.
async fn quarantine_conformance(data: &dyn DataStore, item: &DataItem, other: &Dataset) {
    let docs = item.dataset_id;
    let sorted = |mut v: Vec<Uuid>| {
        v.sort();
        v
    };
    let building = DataItem { id: Uuid::new_v4(), name: "b.txt".into(), status: DataStatus::Pending, ..item.clone() };
    data.upsert_data(&building).await.unwrap();
    let (a, b, shared) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    // More rows than one statement takes.
    let many: Vec<Uuid> = (0..1_200).map(|_| Uuid::new_v4()).collect();
    data.quarantine(docs, building.id, &[a, shared]).await.unwrap();
    data.quarantine(docs, building.id, &[a, shared]).await.unwrap();
    data.quarantine(docs, item.id, &[b, shared]).await.unwrap();
    data.quarantine(docs, item.id, &many).await.unwrap();
    let mut expected = vec![a, b, shared];
    expected.extend(&many);
    assert_eq!(sorted(data.quarantined(docs).await.unwrap()), sorted(expected), "each id once");
    assert!(data.quarantined(other.id).await.unwrap().is_empty(), "quarantine is scoped to its dataset");
    // What other items hide: `shared` stays, being the building item's too.
    assert_eq!(
        sorted(data.quarantined_except(docs, item.id).await.unwrap()),
        sorted(vec![a, shared]),
        "the other items' rows, each once"
    );
    let mut all_but_building = vec![b, shared];
    all_but_building.extend(&many);
    assert_eq!(sorted(data.quarantined_except(docs, building.id).await.unwrap()), sorted(all_but_building));
    assert!(data.quarantined_except(other.id, item.id).await.unwrap().is_empty());

    data.complete_data(docs, &[item.id]).await.unwrap();
    assert_eq!(sorted(data.quarantined(docs).await.unwrap()), sorted(vec![a, shared]), "the other item's rows stay");
    let statuses: Vec<(Uuid, DataStatus)> =
        data.list_data(docs).await.unwrap().into_iter().map(|i| (i.id, i.status)).collect();
    assert!(statuses.contains(&(item.id, DataStatus::Completed)));
    assert!(statuses.contains(&(building.id, DataStatus::Pending)), "only the named items complete");

    data.delete_data(docs, building.id).await.unwrap();
    assert!(data.quarantined(docs).await.unwrap().is_empty(), "deleting an item lifts its quarantine");
    data.quarantine(docs, item.id, &[a]).await.unwrap();
    data.delete_dataset_data(other.id).await.unwrap();
    assert_eq!(data.quarantined(docs).await.unwrap(), vec![a], "another dataset's deletion leaves it");
    data.complete_data(docs, &[item.id]).await.unwrap();
    assert!(data.quarantined(docs).await.unwrap().is_empty());

    // A forget's start: the status and the rows land together.
    data.begin_forget(docs, item.id, &[a, b]).await.unwrap();
    assert_eq!(sorted(data.quarantined(docs).await.unwrap()), sorted(vec![a, b]));
    let status = data.list_data(docs).await.unwrap().into_iter().find(|i| i.id == item.id).map(|i| i.status);
    assert_eq!(status, Some(DataStatus::Forgetting));
    data.complete_data(docs, &[item.id]).await.unwrap();
    assert!(data.quarantined(docs).await.unwrap().is_empty());
}

async fn data_versions_conformance(datasets: &dyn DatasetStore, docs: &Dataset, notes: &Dataset) {
    let start = datasets.data_versions(&[docs.id, notes.id]).await.unwrap();
    let version_of = |v: &recall_core::ports::DataVersions, d: DatasetId| {
        v.datasets.iter().find(|(id, _)| *id == d).map(|(_, version)| *version)
    };
    assert_eq!(version_of(&start, docs.id), Some(0), "a new dataset starts at 0: {start:?}");
    let s0 = start.store;

    let bump = datasets.bump_data_version(docs.id, Some(s0)).await.unwrap();
    assert_eq!((bump.version, bump.unseen_writes), (s0 + 1, false));
    let now = datasets.data_versions(&[docs.id, notes.id]).await.unwrap();
    assert_eq!((now.store, version_of(&now, docs.id), version_of(&now, notes.id)), (s0 + 1, Some(s0 + 1), Some(0)));
    let owner = User { id: docs.owner_id, email: "owner".into(), tenant_id: docs.tenant_id };
    let read = datasets.scope_read(&owner, &["notes".into()], Permission::Read).await.unwrap();
    assert_eq!(read.versions.store, s0 + 1, "{read:?}");
    assert_eq!(version_of(&read.versions, docs.id), Some(s0 + 1), "a bump is seen by the next scope read");
    assert_eq!(read.named, vec![notes.clone()]);
    assert_scope_read(datasets, &owner, &["notes"], Permission::Read).await;

    // A writer that missed the last bump is told so.
    let stale = datasets.bump_data_version(notes.id, Some(s0)).await.unwrap();
    assert_eq!((stale.version, stale.unseen_writes), (s0 + 2, true));
    assert!(datasets.bump_data_version(notes.id, None).await.unwrap().unseen_writes, "nothing seen yet");

    // A dataset that is gone still moves the store, and is not reported.
    let gone = DatasetId(Uuid::new_v4());
    let before = datasets.data_versions(&[]).await.unwrap().store;
    datasets.bump_data_version(gone, Some(before)).await.unwrap();
    let after = datasets.data_versions(&[gone]).await.unwrap();
    assert_eq!((after.store, after.datasets.len()), (before + 1, 0));

    // Concurrent bumps: each gets its own version.
    let bumps = futures::future::join_all((0..16).map(|_| datasets.bump_data_version(docs.id, None))).await;
    let mut versions: Vec<u64> = bumps.into_iter().map(|b| b.unwrap().version).collect();
    versions.sort_unstable();
    versions.dedup();
    assert_eq!(versions.len(), 16, "no bump is lost or repeated");
    let end = datasets.data_versions(&[docs.id]).await.unwrap();
    assert_eq!(end.store, before + 17);
    assert_eq!(version_of(&end, docs.id), versions.last().copied());
}

/// [`DatasetStore::scope_read`] answers what its three parts answer: the
/// permitted datasets in order, the user's own datasets among `names`, and
/// the data versions of the store and of each of those datasets.
async fn assert_scope_read(datasets: &dyn DatasetStore, user: &User, names: &[&str], permission: Permission) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let read = datasets.scope_read(user, &names, permission).await.unwrap();
    let permitted = datasets.permitted_datasets(user, permission).await.unwrap();
    assert_eq!(read.permitted, permitted, "{permission} for {}", user.email);
    let mut named = datasets.owned_datasets_by_name(user, &names).await.unwrap();
    let mut got_named = read.named.clone();
    named.sort_by_key(|d| d.id);
    got_named.sort_by_key(|d| d.id);
    assert_eq!(got_named, named, "{names:?} for {}", user.email);
    let ids = ScopeRead::dataset_ids(&permitted, &named);
    let mut expected = datasets.data_versions(&ids).await.unwrap();
    let mut got = read.versions;
    expected.datasets.sort_unstable();
    got.datasets.sort_unstable();
    assert_eq!(got, expected, "the versions of {ids:?}");
}

/// Grant rows: owners hold all four permissions; grants to another user are
/// exact (one permission gives that one only), idempotent, revocable, and
/// seen in `accessible_datasets` with the dataset's owner unchanged. Two
/// users with same-named datasets never see each other's.
async fn grants_conformance(
    users: &dyn UserStore,
    datasets: &dyn DatasetStore,
    owner: &User,
    stranger: &User,
    docs: &Dataset,
    notes: &Dataset,
    theirs: &Dataset,
) {
    let all = Permission::ALL.to_vec();
    let owner_view = datasets.accessible_datasets(owner).await.unwrap();
    assert_eq!(owner_view.len(), 2, "{owner_view:?}");
    assert_eq!((&owner_view[0].dataset, &owner_view[1].dataset), (docs, notes), "oldest first");
    assert!(owner_view.iter().all(|a| a.permissions == all), "owners hold every permission: {owner_view:?}");
    let stranger_view = datasets.accessible_datasets(stranger).await.unwrap();
    assert_eq!(stranger_view.iter().map(|a| &a.dataset).collect::<Vec<_>>(), vec![theirs]);

    // One permission gives that permission only; twice is a no-op.
    datasets.grant(docs.id, stranger.id, Permission::Read).await.unwrap();
    datasets.grant(docs.id, stranger.id, Permission::Read).await.unwrap();
    let view = datasets.accessible_datasets(stranger).await.unwrap();
    let shared = view.iter().find(|a| a.dataset.id == docs.id).expect("the shared dataset is accessible");
    assert_eq!(shared.permissions, vec![Permission::Read]);
    assert_eq!(shared.dataset.owner_id, owner.id, "sharing does not change the owner");
    for (permission, expected) in
        [(Permission::Read, 2), (Permission::Write, 1), (Permission::Delete, 1), (Permission::Share, 1)]
    {
        let got = datasets.permitted_datasets(stranger, permission).await.unwrap();
        assert_eq!(got.len(), expected, "{permission}: {got:?}");
        assert_scope_read(datasets, stranger, &["docs", "notes", "missing"], permission).await;
    }
    let read = datasets.scope_read(stranger, &["docs".into()], Permission::Read).await.unwrap();
    assert_eq!(read.named, vec![theirs.clone()], "a shared dataset never answers to a name");
    assert_eq!(read.permitted.len(), 2, "{read:?}");
    assert!(!datasets.permitted_datasets(stranger, Permission::Read).await.unwrap().contains(notes));
    let mut expected_grants: Vec<Grant> = Permission::ALL
        .into_iter()
        .map(|permission| Grant { dataset: docs.id, principal: owner.id, permission })
        .chain([Grant { dataset: docs.id, principal: stranger.id, permission: Permission::Read }])
        .collect();
    expected_grants.sort();
    assert_eq!(datasets.grants(docs.id).await.unwrap(), expected_grants);

    // Name resolution stays among owned datasets, whatever is shared.
    let by_name = datasets.owned_datasets_by_name(stranger, &["docs".into()]).await.unwrap();
    assert_eq!(by_name, vec![theirs.clone()], "a shared dataset never answers to a name");

    // Revoking takes exactly that grant away; revoking again is a no-op.
    datasets.grant(docs.id, stranger.id, Permission::Write).await.unwrap();
    datasets.revoke(docs.id, stranger.id, Permission::Read).await.unwrap();
    datasets.revoke(docs.id, stranger.id, Permission::Read).await.unwrap();
    let view = datasets.accessible_datasets(stranger).await.unwrap();
    let shared = view.iter().find(|a| a.dataset.id == docs.id).expect("write is still held");
    assert_eq!(shared.permissions, vec![Permission::Write]);
    assert!(!datasets.permitted_datasets(stranger, Permission::Read).await.unwrap().contains(docs));
    datasets.revoke(docs.id, stranger.id, Permission::Write).await.unwrap();
    let view = datasets.accessible_datasets(stranger).await.unwrap();
    assert!(view.iter().all(|a| a.dataset.id != docs.id), "no grant left, no access: {view:?}");
    let read = datasets.scope_read(stranger, &[], Permission::Read).await.unwrap();
    assert_eq!(read.permitted, vec![theirs.clone()], "a revoke is seen by the next read");
    assert_scope_read(datasets, stranger, &[], Permission::Write).await;
    assert_scope_read(datasets, owner, &["docs", "notes", "docs"], Permission::Share).await;
    assert_eq!(datasets.accessible_datasets(owner).await.unwrap(), owner_view, "the owner's grants are untouched");

    // get_users finds existing users only.
    let mut found = users.get_users(&[owner.id, stranger.id, Uuid::new_v4()]).await.unwrap();
    found.sort_by_key(|u| u.id);
    let mut expected = vec![owner.clone(), stranger.clone()];
    expected.sort_by_key(|u| u.id);
    assert_eq!(found, expected);
    assert!(users.get_users(&[]).await.unwrap().is_empty());

    // Leave one grant, so the caller's delete_dataset must remove it.
    datasets.grant(docs.id, stranger.id, Permission::Read).await.unwrap();
}

fn new_key(user: &User, n: usize) -> NewApiKey {
    NewApiKey {
        id: Uuid::new_v4(),
        user_id: user.id,
        key_hash: format!("hash-{}-{n}", Uuid::new_v4()),
        label: format!("{n:08}****"),
        name: Some(format!("key {n}")),
        created_at: now_millis() + n as i64,
    }
}

/// API keys (hashes only) and password hashes: per-user lists, the limit
/// held under concurrent adds, deletes only by the owner, lookups by hash.
async fn credentials_conformance<S: RelationalStore + 'static>(store: Arc<S>, owner: &User, stranger: &User) {
    let creds: &dyn CredentialStore = store.as_ref();
    assert_eq!(creds.password_hash(owner.id).await.unwrap(), None, "no password until one is set");
    creds.set_password_hash(owner.id, "$argon2id$first").await.unwrap();
    creds.set_password_hash(owner.id, "$argon2id$second").await.unwrap();
    assert_eq!(creds.password_hash(owner.id).await.unwrap().as_deref(), Some("$argon2id$second"));
    assert_eq!(creds.password_hash(stranger.id).await.unwrap(), None);

    let first = new_key(owner, 1);
    let listed = creds.add_api_key(&first, 3).await.unwrap().expect("under the limit");
    assert_eq!(listed, first.listed());
    let second = new_key(owner, 2);
    creds.add_api_key(&second, 3).await.unwrap().unwrap();
    let theirs = new_key(stranger, 1);
    creds.add_api_key(&theirs, 3).await.unwrap().unwrap();
    let ids = |keys: Vec<ApiKey>| keys.into_iter().map(|k| k.id).collect::<Vec<_>>();
    assert_eq!(ids(creds.api_keys(owner.id).await.unwrap()), vec![first.id, second.id], "oldest first, own only");

    // The limit holds under concurrent adds: 8 tasks race for the last slot.
    let racers: Vec<_> = (10..18)
        .map(|n| {
            let store = store.clone();
            let key = new_key(owner, n);
            tokio::spawn(async move { store.add_api_key(&key, 3).await })
        })
        .collect();
    let mut added = 0;
    for r in racers {
        if r.await.unwrap().unwrap().is_some() {
            added += 1;
        }
    }
    assert_eq!(added, 1, "exactly one racer took the last slot");
    assert_eq!(creds.api_keys(owner.id).await.unwrap().len(), 3);
    assert!(creds.add_api_key(&new_key(owner, 20), 3).await.unwrap().is_none(), "a full user adds nothing");

    let found = creds.api_key_by_hash(&second.key_hash).await.unwrap().unwrap();
    assert_eq!((found.id, found.user_id, found.last_used_at), (second.id, owner.id, None));
    assert!(creds.api_key_by_hash("no such hash").await.unwrap().is_none());
    creds.touch_api_key(second.id, 1_234).await.unwrap();
    assert_eq!(creds.api_key_by_hash(&second.key_hash).await.unwrap().unwrap().last_used_at, Some(1_234));

    assert!(!creds.delete_api_key(stranger.id, first.id).await.unwrap(), "only the owner deletes a key");
    assert!(creds.delete_api_key(owner.id, first.id).await.unwrap());
    assert!(!creds.delete_api_key(owner.id, first.id).await.unwrap(), "a deleted key is gone");
    assert!(creds.api_key_by_hash(&first.key_hash).await.unwrap().is_none());
    assert_eq!(ids(creds.api_keys(stranger.id).await.unwrap()), vec![theirs.id]);
}
