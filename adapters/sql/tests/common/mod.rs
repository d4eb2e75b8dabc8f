//! Checks shared by the SQLite and Postgres test files.

use recall_core::ports::{EdgeProjection, GraphStore, RankingReads};
use recall_core::{DatasetId, Edge, Node};
use recall_sql::{Migrator, SqlDatabase, SqlGraphStore};
use sea_orm::{ConnectionTrait, Statement};
use sea_orm_migration::MigratorTrait;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use uuid::Uuid;

/// A database written before edge provenance had a column of its own (its
/// `document_ids` inside `properties`) upgrades on connect: every edge reads
/// back as it was written, the provenance now in its column; and the
/// migration rolls back.
pub async fn edges_from_before_the_provenance_column_upgrade(url: &str) {
    let ds = DatasetId(Uuid::new_v4());
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let node = |id: Uuid, name: &str| {
        let mut n = Node { id, node_type: "Entity".into(), properties: Default::default() };
        n.properties.insert("name".into(), json!(name));
        n
    };
    let mut taught = Edge::new(a, "taught", b).with_text("ada taught bob.");
    taught.properties.insert("document_ids".into(), json!(["d1", "d2"]));
    taught.properties.insert("feedback_weight".into(), json!(0.25));
    let mut studied = Edge::new(b, "studied", c).with_text("bob studied cobol.");
    studied.properties.insert("document_ids".into(), json!(["d3"]));
    let plain = Edge::new(a, "knows", c);
    {
        let db = SqlDatabase::connect(url).await.unwrap();
        let store = SqlGraphStore::new(db.clone());
        store.upsert_nodes(ds, &[node(a, "ada"), node(b, "bob"), node(c, "cobol")]).await.unwrap();
        store.upsert_edges(ds, &[taught.clone(), plain.clone()]).await.unwrap();
        // Back to the old layout (migration 3 and every later one undone): the
        // provenance returns into `properties`.
        Migrator::down(db.connection(), Some(undo_from(3))).await.unwrap();
        // An edge as the old release wrote it.
        let props = Value::Object(studied.properties.clone()).to_string();
        let insert = format!(
            "INSERT INTO graph_edges (dataset_id, source_id, relationship_name, target_id, edge_text, properties) \
             VALUES ('{ds}', '{b}', 'studied', '{c}', 'bob studied cobol.', '{props}')"
        );
        db.connection().execute_unprepared(&insert).await.unwrap();
        let row = db
            .connection()
            .query_one_raw(Statement::from_string(
                db.backend(),
                format!(
                    "SELECT properties FROM graph_edges WHERE relationship_name = 'taught' AND dataset_id = '{ds}'"
                ),
            ))
            .await
            .unwrap()
            .unwrap();
        let old: String = row.try_get("", "properties").unwrap();
        let old: Value = serde_json::from_str(&old).unwrap();
        assert_eq!(old["document_ids"], json!(["d1", "d2"]), "down moves the provenance back");
    }
    let db = SqlDatabase::connect(url).await.unwrap();
    let store = SqlGraphStore::new(db.clone());
    let mut edges = store.get_graph(ds).await.unwrap().edges;
    edges.sort_by(|x, y| x.relationship_name.cmp(&y.relationship_name));
    assert_eq!(edges, vec![plain.clone(), studied.clone(), taught.clone()]);
    let projected = store.neighborhood(ds, &[a, b, c], 0, EdgeProjection::Only(&["feedback_weight"])).await.unwrap();
    assert!(projected.edges.iter().all(|e| !e.properties.contains_key("document_ids")));
    let query = |sql: String| {
        let db = db.clone();
        async move { db.connection().query_all_raw(Statement::from_string(db.backend(), sql)).await.unwrap() }
    };
    let rows = query(format!(
        "SELECT relationship_name, properties FROM graph_edges WHERE dataset_id = '{ds}' ORDER BY relationship_name"
    ))
    .await;
    let stored: Vec<(String, Value)> = rows
        .iter()
        .map(|r| {
            let props: String = r.try_get("", "properties").unwrap();
            (r.try_get("", "relationship_name").unwrap(), serde_json::from_str(&props).unwrap())
        })
        .collect();
    let without_provenance = |e: &Edge| {
        let mut props = e.properties.clone();
        props.remove("document_ids");
        Value::Object(props)
    };
    assert_eq!(
        stored,
        vec![
            ("knows".to_string(), without_provenance(&plain)),
            ("studied".to_string(), without_provenance(&studied)),
            ("taught".to_string(), without_provenance(&taught)),
        ],
        "no property holds the provenance"
    );
    let rows = query(format!(
        "SELECT relationship_name, document_id FROM graph_edge_documents WHERE dataset_id = '{ds}' \
         ORDER BY relationship_name, document_id"
    ))
    .await;
    let provenance: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.try_get("", "relationship_name").unwrap(), r.try_get("", "document_id").unwrap()))
        .collect();
    let row = |rel: &str, doc: &str| (rel.to_string(), doc.to_string());
    assert_eq!(
        provenance,
        vec![row("studied", "d3"), row("taught", "d1"), row("taught", "d2")],
        "the provenance lives in a table of its own, a row per document"
    );
}

/// A database written before edges had a type-key column upgrades on
/// connect: every edge, over several keying pages, gets the key of its text
/// (else its name); sketches read it; and the migration rolls back.
pub async fn edges_from_before_the_type_key_upgrade(url: &str) {
    let ds = DatasetId(Uuid::new_v4());
    let hub = Uuid::new_v4();
    let spokes: Vec<Uuid> = (0..4_500).map(|_| Uuid::new_v4()).collect();
    let nodes: Vec<Node> = std::iter::once(hub)
        .chain(spokes.iter().copied())
        .map(|id| Node { id, node_type: "Entity".into(), properties: Default::default() })
        .collect();
    // Every third edge has no text: keyed by its relationship name.
    let edges: Vec<Edge> = spokes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let e = Edge::new(*s, "contains", hub);
            if i % 3 == 0 {
                e
            } else {
                e.with_text(format!("spoke {i} contains the hub."))
            }
        })
        .collect();
    {
        let db = SqlDatabase::connect(url).await.unwrap();
        let store = SqlGraphStore::new(db.clone());
        store.upsert_nodes(ds, &nodes).await.unwrap();
        store.upsert_edges(ds, &edges).await.unwrap();
        Migrator::down(db.connection(), Some(undo_from(4))).await.unwrap();
        let schema = sea_orm_migration::SchemaManager::new(db.connection());
        assert!(!schema.has_column("graph_edges", "type_key").await.unwrap(), "down drops the column");
        assert!(!schema.has_index("graph_edges", "graph_edges_type_key").await.unwrap(), "and its indexes");
    }
    let db = SqlDatabase::connect(url).await.unwrap();
    let schema = sea_orm_migration::SchemaManager::new(db.connection());
    assert!(schema.has_index("graph_edges", "graph_edges_sketch").await.unwrap());
    let rows = db
        .connection()
        .query_all_raw(Statement::from_string(
            db.backend(),
            format!("SELECT source_id, type_key FROM graph_edges WHERE dataset_id = '{ds}'"),
        ))
        .await
        .unwrap();
    let stored: BTreeMap<String, Option<String>> =
        rows.iter().map(|r| (r.try_get("", "source_id").unwrap(), r.try_get("", "type_key").unwrap())).collect();
    let want: BTreeMap<String, Option<String>> =
        edges.iter().map(|e| (e.source_node_id.to_string(), Some(e.type_key().to_string()))).collect();
    assert_eq!(stored, want, "every edge keyed by its text, else its name");
    let store = SqlGraphStore::new(db.clone());
    let seeds = [hub, spokes[0], spokes[1]];
    let sketched = |store: SqlGraphStore| async move {
        let sketch = store.sketch_between(ds, &seeds, false).await.unwrap();
        let mut keys: Vec<Uuid> = sketch.edges.iter().map(|e| e.type_key).collect();
        keys.sort();
        keys
    };
    let mut want = vec![edges[0].type_key(), edges[1].type_key()];
    want.sort();
    assert_eq!(sketched(store.clone()).await, want);
    assert_ne!(edges[0].type_key(), edges[1].type_key());
    // A row without a key (written by hand): the sketch keys it from its text.
    db.connection()
        .execute_unprepared(&format!(
            "UPDATE graph_edges SET type_key = NULL WHERE dataset_id = '{ds}' AND source_id = '{}'",
            spokes[1]
        ))
        .await
        .unwrap();
    assert_eq!(sketched(store).await, want);
}

/// How many steps `Migrator::down` takes to undo migration `n` (1-based) and
/// every later one.
fn undo_from(n: u32) -> u32 {
    u32::try_from(Migrator::migrations().len()).unwrap() + 1 - n
}
