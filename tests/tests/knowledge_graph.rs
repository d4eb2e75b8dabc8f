#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Knowledge-graph ingestion end to end: the exact graph and collections the
//! offline extractor writes (on the in-memory stack and on the embedded
//! default), de-duplication, idempotence, forget, pipeline-run states, and the
//! LLM extractor against a fake OpenAI-compatible server (real HTTP).

mod common;

use common::me;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::routing::post;
use axum::{Json, Router};
use recall::{build_engine, OpenMode, Settings};
use recall_api::{render_graph, GraphExport, GraphShape};
use recall_core::model::collections as col;
use recall_core::ports::{GraphExtractor, RelationalPorts, VectorStore};
use recall_core::{
    DataStatus, DatasetId, KgEdge, KgNode, KnowledgeGraph, PipelineRunStatus, RecallError, Result, Subgraph,
};
use recall_engine::{root_summary_id, Engine, EngineBuilder, NoProgress, RecallRequest, RememberInput};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};
use serde_json::{json, Value};
use uuid::Uuid;

const ALPHA: &str = "Ada Lovelace worked with Charles Babbage. Charles Babbage designed the Analytical Engine.";
const BETA: &str = "The Analytical Engine inspired Alan Turing.";

fn corpus() -> Vec<RememberInput> {
    vec![
        RememberInput::Text { text: ALPHA.into(), name: Some("alpha.txt".into()) },
        RememberInput::Text { text: BETA.into(), name: Some("beta.txt".into()) },
    ]
}

fn memory_builder() -> EngineBuilder {
    EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(64).unwrap()),
    )
}

async fn embedded(dir: &std::path::Path) -> Engine {
    build_engine(&Settings::embedded(dir).unwrap(), OpenMode::Create).await.unwrap().0
}

fn name_of(graph: &Subgraph, id: uuid::Uuid) -> String {
    let n = graph.nodes.iter().find(|n| n.id == id).unwrap();
    n.properties.get("name").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| n.node_type.clone())
}

fn nodes_of(graph: &Subgraph, t: &str) -> BTreeSet<String> {
    graph.nodes.iter().filter(|n| n.node_type == t).map(|n| name_of(graph, n.id)).collect()
}

fn count_of(graph: &Subgraph, t: &str) -> usize {
    graph.nodes.iter().filter(|n| n.node_type == t).count()
}

fn edge_count(graph: &Subgraph, rel: &str) -> usize {
    graph.edges.iter().filter(|e| e.relationship_name == rel).count()
}

fn edges_named(graph: &Subgraph, rel: &str) -> BTreeSet<(String, String)> {
    graph
        .edges
        .iter()
        .filter(|e| e.relationship_name == rel)
        .map(|e| (name_of(graph, e.source_node_id), name_of(graph, e.target_node_id)))
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn pairs(items: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

async fn dataset_id(engine: &Engine, name: &str) -> DatasetId {
    engine
        .access()
        .datasets(&me(engine).await)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.dataset)
        .collect::<Vec<_>>()
        .into_iter()
        .find(|d| d.name == name)
        .unwrap()
        .id
}

/// The exact graph and collections of the two-document corpus.
async fn assert_exact_corpus_graph(engine: &Engine) {
    engine.remember(&me(engine).await, "kg", &corpus()).await.unwrap();
    let ds = dataset_id(engine, "kg").await;
    let g = engine.graph().get_graph(ds).await.unwrap();

    assert_eq!(nodes_of(&g, "TextDocument"), set(&["alpha.txt", "beta.txt"]));
    assert_eq!(count_of(&g, "DocumentChunk"), 2);
    assert_eq!(count_of(&g, "TextSummary"), 2);
    assert_eq!(
        nodes_of(&g, "Entity"),
        set(&["ada lovelace", "charles babbage", "analytical engine", "alan turing"]),
        "one node per entity across documents"
    );
    assert_eq!(nodes_of(&g, "EntityType"), set(&["concept"]));
    assert_eq!(g.nodes.iter().filter(|n| n.node_type == "GlobalContextSummary").count(), 3, "root + 2 buckets");
    assert_eq!(g.nodes.len(), 2 + 2 + 2 + 4 + 1 + 3);

    assert_eq!(edges_named(&g, "worked"), pairs(&[("ada lovelace", "charles babbage")]));
    assert_eq!(edges_named(&g, "designed"), pairs(&[("charles babbage", "analytical engine")]));
    assert_eq!(edges_named(&g, "inspired"), pairs(&[("analytical engine", "alan turing")]));
    assert_eq!(edge_count(&g, "is_a"), 4);
    assert_eq!(edge_count(&g, "is_part_of"), 2);
    assert_eq!(edge_count(&g, "made_from"), 2);
    let contains: Vec<_> = g.edges.iter().filter(|e| e.relationship_name == "contains").collect();
    assert_eq!(contains.len(), 5, "alpha mentions 3 entities, beta 2");
    assert_eq!(edge_count(&g, "summarized_in"), 4, "2 buckets → root, 2 summaries → bucket");
    assert_eq!(g.edges.len(), 2 + 5 + 4 + 3 + 2 + 4);

    // Edge texts: always set; relations carry the sentence and their documents.
    assert!(g.edges.iter().all(|e| e.edge_text.as_deref().is_some_and(|t| !t.trim().is_empty())));
    let inspired = g.edges.iter().find(|e| e.relationship_name == "inspired").unwrap();
    assert_eq!(inspired.edge_text.as_deref(), Some("The Analytical Engine inspired Alan Turing."));
    assert_eq!(inspired.properties["document_ids"].as_array().unwrap().len(), 1);
    let is_a = g.edges.iter().find(|e| e.relationship_name == "is_a").unwrap();
    assert!(is_a.edge_text.as_deref().unwrap().ends_with(" is a concept."));
    let engine_node = g.nodes.iter().find(|n| n.properties.get("name") == Some(&json!("analytical engine"))).unwrap();
    assert_eq!(
        engine_node.properties["description"],
        "Charles Babbage designed the Analytical Engine. The Analytical Engine inspired Alan Turing.",
        "descriptions merge across documents"
    );

    // Collections.
    let count = |c: &'static str| async move { engine.vectors().count(ds, c).await.unwrap() };
    assert_eq!(count(col::DOCUMENT_CHUNK_TEXT).await, 2);
    assert_eq!(count(col::TEXT_DOCUMENT_NAME).await, 2);
    assert_eq!(count(col::ENTITY_NAME).await, 4);
    assert_eq!(count(col::ENTITY_TYPE_NAME).await, 1);
    assert_eq!(count(col::TEXT_SUMMARY_TEXT).await, 2);
    let cognify_texts: BTreeSet<&str> = g
        .edges
        .iter()
        .filter(|e| e.relationship_name != "summarized_in")
        .filter_map(|e| e.edge_text.as_deref())
        .collect();
    assert_eq!(
        count(col::EDGE_TYPE_RELATIONSHIP_NAME).await as usize,
        cognify_texts.len(),
        "one row per distinct edge text"
    );
    assert_eq!(count(col::TRIPLET_TEXT).await, 0, "TRIPLET_EMBEDDING is off by default");
    assert_eq!(count(col::GLOBAL_CONTEXT_SUMMARY_TEXT).await, 3);
    assert_eq!(count(col::DATASET_ROUTING).await, 3, "the routing collection mirrors the index");

    // The root summary names the types, the widespread entity and the documents.
    let root = g.nodes.iter().find(|n| n.id == root_summary_id(ds)).unwrap();
    let root_text = root.properties["text"].as_str().unwrap();
    assert!(
        root_text.starts_with(
            "Dataset 'kg': 2 document(s). Entity types: concept (4). Widespread entities: analytical engine,"
        ),
        "{root_text}"
    );
    assert!(root_text.ends_with("Documents: alpha.txt, beta.txt."), "{root_text}");

    // An edge-text search finds the fact.
    let q = engine.embedder().embed(&["Analytical Engine inspired Alan Turing".into()]).await.unwrap().pop().unwrap();
    let hits = engine.vectors().search(ds, col::EDGE_TYPE_RELATIONSHIP_NAME, &q, Some(1), None).await.unwrap();
    assert_eq!(hits[0].payload["text"], "The Analytical Engine inspired Alan Turing.");
    assert_eq!(hits[0].payload["number_of_edges"], 1);
}

/// An export read in pages of three holds every node and edge of the
/// graph once, and is, byte for byte, the document of those nodes and edges
/// in the order the pages came (the store's choice), in every shape; a
/// stranger gets none.
async fn assert_export_streams(engine: &Engine) {
    let user = me(engine).await;
    let (_, mut whole) = engine.dataset_graph(&user, "kg").await.unwrap();
    whole.nodes.sort_by_key(|n| n.id);
    whole.edges.sort_by_key(recall_core::Edge::key);
    assert!(whole.nodes.len() > 3 && whole.edges.len() > 3, "more than one page of each");
    let (_, mut pages) = engine.dataset_graph_pages(&user, "kg", 3).await.unwrap();
    let mut paged = recall_core::Subgraph::default();
    while let Some(nodes) = pages.next_nodes().await.unwrap() {
        assert!(nodes.len() <= 3);
        paged.nodes.extend(nodes);
    }
    while let Some(edges) = pages.next_edges().await.unwrap() {
        paged.edges.extend(edges);
    }
    let mut sorted = paged.clone();
    sorted.nodes.sort_by_key(|n| n.id);
    sorted.edges.sort_by_key(recall_core::Edge::key);
    assert_eq!(sorted, whole, "every node and edge once");
    for shape in [GraphShape::Json, GraphShape::Dto, GraphShape::Dot] {
        let (_, pages) = engine.dataset_graph_pages(&user, "kg", 3).await.unwrap();
        let mut export = GraphExport::new(pages, shape);
        let mut pieces = Vec::new();
        while let Some(piece) = export.next_piece().await.unwrap() {
            pieces.push(piece);
        }
        assert!(pieces.len() > 4, "{shape:?}: one piece per page, not one document");
        assert_eq!(pieces.concat(), render_graph(&paged, shape), "{shape:?}");
    }
    let stranger = engine.relational().users.ensure_user("stranger@example.com").await.unwrap();
    let ds = dataset_id(engine, "kg").await;
    assert!(engine.dataset_graph_pages(&stranger, ds, 3).await.is_err(), "no read permission, no pages");
}

#[tokio::test]
async fn offline_extractor_writes_the_exact_graph_in_memory() {
    let engine = memory_builder().build().unwrap();
    assert_exact_corpus_graph(&engine).await;
    assert_export_streams(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_extractor_writes_the_exact_graph_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let engine = embedded(dir.path()).await;
    assert_exact_corpus_graph(&engine).await;
    assert_export_streams(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerunning_cognify_on_unchanged_data_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = embedded(dir.path()).await;
    engine.remember(&me(&engine).await, "kg", &corpus()).await.unwrap();
    let ds = dataset_id(&engine, "kg").await;
    let before = engine.graph().get_graph(ds).await.unwrap();
    let counts = |e: Engine| async move {
        let mut out = Vec::new();
        for c in col::ALL {
            out.push(e.vectors().count(ds, c).await.unwrap());
        }
        out
    };
    let vectors_before = counts(engine.clone()).await;
    let outcome = engine.cognify(&me(&engine).await, "kg", &NoProgress).await.unwrap();
    assert_eq!((outcome.items_added, outcome.items_unchanged), (0, 2));
    assert_eq!(engine.graph().get_graph(ds).await.unwrap(), before);
    assert_eq!(counts(engine.clone()).await, vectors_before);
    let err = engine.cognify(&me(&engine).await, "nope", &NoProgress).await.unwrap_err();
    assert!(matches!(err, RecallError::DatasetNotFound { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_document_removes_what_only_it_supports() {
    let dir = tempfile::tempdir().unwrap();
    let engine = embedded(dir.path()).await;
    engine.remember(&me(&engine).await, "kg", &corpus()).await.unwrap();
    let ds = dataset_id(&engine, "kg").await;

    let outcome = engine.forget_document(&me(&engine).await, "kg", "beta.txt").await.unwrap();
    assert_eq!(outcome.document_name.as_deref(), Some("beta.txt"));
    let g = engine.graph().get_graph(ds).await.unwrap();
    assert_eq!(nodes_of(&g, "TextDocument"), set(&["alpha.txt"]));
    assert_eq!(
        nodes_of(&g, "Entity"),
        set(&["ada lovelace", "charles babbage", "analytical engine"]),
        "alan turing was only in beta; the analytical engine is still in alpha"
    );
    assert!(edges_named(&g, "inspired").is_empty(), "a relation only beta asserted is gone");
    assert_eq!(count_of(&g, "DocumentChunk"), 1);
    assert_eq!(g.nodes.iter().filter(|n| n.node_type == "GlobalContextSummary").count(), 2, "beta's bucket is gone");
    let root = g.nodes.iter().find(|n| n.id == root_summary_id(ds)).unwrap();
    assert!(root.properties["text"].as_str().unwrap().contains("1 document(s)"), "the root is rewritten at once");
    assert!(!root.properties["text"].as_str().unwrap().contains("beta.txt"));
    assert_eq!(engine.vectors().count(ds, col::DOCUMENT_CHUNK_TEXT).await.unwrap(), 1);
    assert_eq!(engine.vectors().count(ds, col::ENTITY_NAME).await.unwrap(), 3);
    assert_eq!(engine.vectors().count(ds, col::TEXT_SUMMARY_TEXT).await.unwrap(), 1);
    assert_eq!(engine.vectors().count(ds, col::DATASET_ROUTING).await.unwrap(), 2);
    assert_eq!(engine.relational().data.count_data(ds).await.unwrap(), 1);
    let q = engine.embedder().embed(&["Analytical Engine inspired Alan Turing".into()]).await.unwrap().pop().unwrap();
    let texts: Vec<Value> = engine
        .vectors()
        .search(ds, col::EDGE_TYPE_RELATIONSHIP_NAME, &q, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.payload["text"].clone())
        .collect();
    assert!(!texts.contains(&json!("The Analytical Engine inspired Alan Turing.")), "its EdgeType row is gone");

    // Nothing of beta comes back in a recall.
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("Alan Turing inspired")).await.unwrap();
    assert!(results.iter().all(|r| !r.text().contains("Turing")));
    let err = engine.forget_document(&me(&engine).await, "kg", "beta.txt").await.unwrap_err();
    assert_eq!(err.http_status(), 404);

    // Remembering it again restores the same graph as before.
    engine.remember(&me(&engine).await, "kg", &corpus()).await.unwrap();
    let g = engine.graph().get_graph(ds).await.unwrap();
    assert_eq!(nodes_of(&g, "Entity").len(), 4);
    assert_eq!(edges_named(&g, "inspired").len(), 1);
}

/// Returns a fixed graph; can be told to fail.
struct ScriptedExtractor {
    graph: KnowledgeGraph,
    fail: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl GraphExtractor for ScriptedExtractor {
    fn name(&self) -> &'static str {
        "scripted"
    }
    async fn extract(&self, _text: &str) -> Result<KnowledgeGraph> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(RecallError::Provider("extraction timed out".into()));
        }
        Ok(self.graph.clone())
    }
}

fn kg_node(id: &str, name: &str, t: &str, d: &str) -> KgNode {
    KgNode { id: id.into(), name: name.into(), node_type: t.into(), description: d.into() }
}

#[tokio::test]
async fn same_name_same_type_is_one_node_and_a_different_type_in_one_chunk_is_another() {
    let graph = KnowledgeGraph {
        nodes: vec![
            kg_node("1", "Mercury", "planet", "The closest planet."),
            kg_node("2", "Mercury", "element", "A liquid metal."),
            kg_node("3", "mercury", "planet", "Closest to the Sun."),
        ],
        edges: vec![],
    };
    let extractor = Arc::new(ScriptedExtractor { graph, fail: false.into() });
    let engine = memory_builder().extractor(extractor).build().unwrap();
    engine.remember(&me(&engine).await, "d", &[RememberInput::text("Mercury.")]).await.unwrap();
    let ds = dataset_id(&engine, "d").await;
    let entities = engine.graph().nodes_by_type(ds, "Entity").await.unwrap();
    assert_eq!(entities.len(), 2, "{entities:?}");
    let planet = entities.iter().find(|e| e.properties["type_name"] == "planet").unwrap();
    assert_eq!(planet.id, recall_core::ids::id_for("Entity", &["mercury"]), "ids are uuid5 of the normalised name");
    assert_eq!(planet.properties["description"], "The closest planet. Closest to the Sun.");
    assert_eq!(engine.graph().nodes_by_type(ds, "EntityType").await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_failing_extractor_errors_the_run_and_leaves_nothing_searchable() {
    let graph = KnowledgeGraph { nodes: vec![kg_node("1", "Ada", "person", "")], edges: vec![] };
    let extractor = Arc::new(ScriptedExtractor { graph, fail: true.into() });
    let engine = memory_builder().extractor(extractor.clone()).build().unwrap();
    let err = engine.remember(&me(&engine).await, "d", &[RememberInput::text("Ada wrote notes.")]).await.unwrap_err();
    assert!(matches!(err, RecallError::Provider(_)));
    let ds = dataset_id(&engine, "d").await;
    let runs = engine.relational().runs.list_runs(ds).await.unwrap();
    let states: Vec<(&str, PipelineRunStatus)> = runs.iter().map(|r| (r.pipeline_name.as_str(), r.status)).collect();
    assert_eq!(
        states,
        vec![
            ("add_pipeline", PipelineRunStatus::Started),
            ("add_pipeline", PipelineRunStatus::Completed),
            ("cognify_pipeline", PipelineRunStatus::Started),
            ("cognify_pipeline", PipelineRunStatus::Errored),
        ]
    );
    assert_eq!(runs[3].error_message.as_deref(), Some("extraction timed out"));
    assert_eq!(engine.vectors().count(ds, col::DOCUMENT_CHUNK_TEXT).await.unwrap(), 0, "no half-written chunk");
    assert!(engine.graph().is_empty(ds).await.unwrap());
    assert_eq!(engine.relational().data.list_data(ds).await.unwrap()[0].status, DataStatus::Pending);

    extractor.fail.store(false, Ordering::SeqCst);
    let outcome = engine.cognify(&me(&engine).await, "d", &NoProgress).await;
    // The in-memory engine keeps no raw copies: re-cognify needs the text again.
    assert!(matches!(outcome, Err(RecallError::NotFound(_))), "{outcome:?}");
    let outcome = engine.remember(&me(&engine).await, "d", &[RememberInput::text("Ada wrote notes.")]).await.unwrap();
    assert_eq!(outcome.items_added, 1);
    assert_eq!(engine.graph().nodes_by_type(ds, "Entity").await.unwrap().len(), 1);
}

#[derive(Default)]
struct FakeLlm {
    requests: Mutex<Vec<Value>>,
    structured_calls: AtomicUsize,
}

async fn fake_llm_server(state: Arc<FakeLlm>) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let state = state.clone();
            async move {
                state.requests.lock().unwrap().push(body.clone());
                let content = if body.get("response_format").is_some() {
                    // The first structured answer is broken JSON: the extractor must retry.
                    if state.structured_calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        "{\"nodes\": [".to_string()
                    } else {
                        json!({
                            "nodes": [
                                {"id": "a", "name": "Grace Hopper", "type": "Person", "description": "A computer scientist."},
                                {"id": "b", "name": "COBOL", "type": "Programming Language", "description": "A business language."}
                            ],
                            "edges": [{"source_node_id": "a", "target_node_id": "b", "relationship_name": "Influenced Design Of",
                                       "description": "Grace Hopper influenced the design of COBOL."}]
                        })
                        .to_string()
                    }
                } else {
                    "Grace Hopper shaped COBOL.".to_string()
                };
                Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_extractor_builds_the_graph_through_structured_output() {
    let state = Arc::new(FakeLlm::default());
    let endpoint = fake_llm_server(state.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::embedded(dir.path()).unwrap();
    settings.llm_api_key = "sk-test".into();
    settings.llm_endpoint = endpoint;
    // Without this, LLM_API_KEY would also select the OpenAI embeddings endpoint (as in Cognee).
    settings.embedding_provider = "hashing".into();
    let (engine, active) = build_engine(&settings, OpenMode::Create).await.unwrap();
    assert!(active.llm.is_some());
    engine
        .remember(&me(&engine).await, "cs", &[RememberInput::text("Grace Hopper helped design COBOL in 1959.")])
        .await
        .unwrap();
    let ds = dataset_id(&engine, "cs").await;
    let g = engine.graph().get_graph(ds).await.unwrap();
    assert_eq!(nodes_of(&g, "Entity"), set(&["grace hopper", "cobol"]));
    assert_eq!(nodes_of(&g, "EntityType"), set(&["person", "programming language"]));
    let rel = g.edges.iter().find(|e| e.relationship_name == "influenced_design_of").unwrap();
    assert_eq!(rel.edge_text.as_deref(), Some("Grace Hopper influenced the design of COBOL."));
    let summary = g.nodes.iter().find(|n| n.node_type == "TextSummary").unwrap();
    assert_eq!(summary.properties["text"], "Grace Hopper shaped COBOL.");

    let requests = state.requests.lock().unwrap();
    let structured: Vec<&Value> = requests.iter().filter(|r| r.get("response_format").is_some()).collect();
    assert_eq!(structured.len(), 2, "one retry after invalid JSON");
    assert_eq!(structured[1]["response_format"]["json_schema"]["name"], "KnowledgeGraph");
    assert_eq!(structured[1]["response_format"]["json_schema"]["schema"], KnowledgeGraph::json_schema());
    assert_eq!(
        structured[1]["messages"][0]["content"].as_str().unwrap(),
        recall_engine::extract::GENERATE_GRAPH_PROMPT
    );
    assert_eq!(structured[1]["messages"][1]["content"], "Grace Hopper helped design COBOL in 1959.");
}

#[tokio::test]
async fn edges_from_the_extractor_to_unknown_nodes_are_ignored() {
    let graph = KnowledgeGraph {
        nodes: vec![kg_node("1", "Ada", "person", "")],
        edges: vec![KgEdge {
            source_node_id: "1".into(),
            target_node_id: "404".into(),
            relationship_name: "knows".into(),
            description: None,
        }],
    };
    let engine = memory_builder().extractor(Arc::new(ScriptedExtractor { graph, fail: false.into() })).build().unwrap();
    engine.remember(&me(&engine).await, "d", &[RememberInput::text("Ada.")]).await.unwrap();
    let ds = dataset_id(&engine, "d").await;
    let g = engine.graph().get_graph(ds).await.unwrap();
    assert!(g.edges.iter().all(|e| e.relationship_name != "knows"));
    let contains = g.edges.iter().find(|e| e.relationship_name == "contains").unwrap();
    assert!(contains.edge_text.as_deref().unwrap().ends_with("contains ada."), "default edge text when no description");
}

/// Delegates to an in-memory store but fails upserts into one collection.
struct FailingVectors {
    inner: MemoryVectorStore,
    fail_on: &'static str,
    armed: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl VectorStore for FailingVectors {
    async fn ensure_collection(&self, d: DatasetId, c: &str, s: &recall_core::ports::EmbeddingSpec) -> Result<()> {
        self.inner.ensure_collection(d, c, s).await
    }
    async fn collection_spec(&self, c: &str) -> Result<Option<recall_core::ports::EmbeddingSpec>> {
        self.inner.collection_spec(c).await
    }
    async fn has_collection(&self, d: DatasetId, c: &str) -> Result<bool> {
        self.inner.has_collection(d, c).await
    }
    async fn upsert(&self, d: DatasetId, c: &str, r: Vec<recall_core::ports::VectorRecord>) -> Result<()> {
        if c == self.fail_on && self.armed.load(Ordering::SeqCst) {
            return Err(RecallError::backend_msg("disk full"));
        }
        self.inner.upsert(d, c, r).await
    }
    async fn search(
        &self,
        d: DatasetId,
        c: &str,
        q: &[f32],
        l: Option<usize>,
        f: Option<recall_core::ports::NodeSetFilter>,
    ) -> Result<Vec<recall_core::ports::ScoredResult>> {
        self.inner.search(d, c, q, l, f).await
    }
    async fn count(&self, d: DatasetId, c: &str) -> Result<u64> {
        self.inner.count(d, c).await
    }
    async fn delete(&self, d: DatasetId, c: &str, ids: &[uuid::Uuid]) -> Result<()> {
        self.inner.delete(d, c, ids).await
    }
    async fn delete_dataset(&self, d: DatasetId) -> Result<()> {
        self.inner.delete_dataset(d).await
    }
}

#[tokio::test]
async fn a_store_failing_mid_batch_leaves_no_searchable_chunk_and_retries_cleanly() {
    let vectors = Arc::new(FailingVectors {
        inner: MemoryVectorStore::new(),
        fail_on: col::TEXT_SUMMARY_TEXT,
        armed: true.into(),
    });
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        vectors.clone(),
        Arc::new(HashingEmbedder::new(64).unwrap()),
    )
    .build()
    .unwrap();
    let err = engine.remember(&me(&engine).await, "kg", &corpus()).await.unwrap_err();
    assert_eq!(err.name(), "BackendError");
    let ds = dataset_id(&engine, "kg").await;
    assert_eq!(vectors.count(ds, col::DOCUMENT_CHUNK_TEXT).await.unwrap(), 0, "chunk rows were removed again");
    // The warm-up guard says the build failed…
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("Analytical Engine")).await.unwrap();
    assert!(
        matches!(results.as_slice(), [recall_core::RecallResponse::System(m)] if m.status == "build_failed"),
        "{results:?}"
    );
    // …and past it (only_context skips the guard) nothing half-written is searchable.
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("Analytical Engine").only_context(true))
        .await
        .unwrap_err();
    assert!(matches!(err, RecallError::NoData(_)), "nothing half-written is searchable: {err:?}");
    let runs = engine.relational().runs.list_runs(ds).await.unwrap();
    assert_eq!(runs.last().unwrap().status, PipelineRunStatus::Errored);
    assert_eq!(runs.last().unwrap().error_class.as_deref(), Some("BackendError"));

    vectors.armed.store(false, Ordering::SeqCst);
    engine.remember(&me(&engine).await, "kg", &corpus()).await.unwrap();
    let g = engine.graph().get_graph(ds).await.unwrap();
    assert_eq!(nodes_of(&g, "Entity").len(), 4, "the retry converges with no duplicates");
    assert_eq!(count_of(&g, "DocumentChunk"), 2);
    assert_eq!(vectors.count(ds, col::DOCUMENT_CHUNK_TEXT).await.unwrap(), 2);
}

#[tokio::test]
async fn binary_and_empty_files_are_typed_errors_that_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("blob.txt");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x9f]).unwrap();
    let empty = dir.path().join("empty.md");
    std::fs::write(&empty, "  \n").unwrap();
    let engine = memory_builder().build().unwrap();
    for (path, needle) in [(binary, "not valid UTF-8"), (empty, "is empty")] {
        let err = engine.remember(&me(&engine).await, "d", &[RememberInput::File(path)]).await.unwrap_err();
        assert_eq!(err.http_status(), 400);
        assert!(err.to_string().contains(needle), "{err}");
    }
    assert!(my_datasets(&engine).await.is_empty());
}

/// The same exact-graph check with the Neo4j graph adapter (FalkorDB's Bolt
/// server in CI) beside SQLite and LanceDB, selected by `graph_url`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_extractor_writes_the_exact_graph_on_neo4j() {
    let Ok(uri) = std::env::var("NEO4J_URI") else {
        assert!(!std::env::var("CI").is_ok_and(|v| v == "true"), "NEO4J_URI must be set in CI");
        eprintln!("SKIPPED: ingestion on Neo4j: NEO4J_URI is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::embedded(dir.path()).unwrap();
    settings.graph_url = uri;
    settings.graph_user = std::env::var("NEO4J_USER").unwrap_or_else(|_| "neo4j".into());
    settings.graph_password = std::env::var("NEO4J_PASSWORD").unwrap_or_default().into();
    settings.graph_schema = std::env::var("NEO4J_SCHEMA").unwrap_or_else(|_| "falkordb".into());
    let (engine, active) = build_engine(&settings, OpenMode::Create).await.unwrap();
    assert!(active.graph.starts_with("neo4j"), "{}", active.graph);
    let run = async {
        assert_exact_corpus_graph(&engine).await;
        // Clean up: the Bolt server is shared by every test run on this machine.
        engine.forget_dataset(&me(&engine).await, "kg").await.unwrap();
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), run).await.expect("timed out against the Bolt server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_graph_backend_is_an_error_not_a_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::embedded(dir.path()).unwrap();
    settings.graph_url = "bolt://127.0.0.1:9".into();
    let err = build_engine(&settings, OpenMode::Create).await.err().unwrap();
    assert!(err.to_string().contains("cannot use the Neo4j graph store at bolt://127.0.0.1:9"), "{err}");
    settings.graph_url = "gremlin://x".into();
    let err = build_engine(&settings, OpenMode::Create).await.err().unwrap();
    assert!(err.to_string().contains("Unsupported graph_url"), "{err}");
}

/// The datasets the test user can see.
async fn my_datasets(engine: &recall_engine::Engine) -> Vec<recall_core::Dataset> {
    let user = me(engine).await;
    engine.access().datasets(&user).await.unwrap().into_iter().map(|l| l.dataset).collect()
}

/// A made-up capitalised name (the offline extractor's entities).
fn made_up_name(n: usize) -> String {
    const SYLLABLES: [&str; 10] = ["Ba", "Ko", "Li", "Mu", "Ne", "Ro", "Sa", "Ti", "Vo", "Zu"];
    let tail = format!("{}{}", SYLLABLES[(n / 10) % 10], SYLLABLES[(n / 100) % 10]).to_lowercase();
    format!("{}{tail}", SYLLABLES[n % 10])
}

/// Document `i` of a corpus where twenty entities are spread unevenly over
/// the documents (a few in most, most in a few) and each document has
/// eight of its own: more entities than the root's kept ranking holds.
fn spread_document(i: usize) -> RememberInput {
    let mut names: Vec<String> = (0..20)
        .filter(|k| (i + k).is_multiple_of(k / 4 + 2))
        .map(|k| {
            let name = made_up_name(500 + k);
            if k % 3 == 0 {
                format!("{name} University")
            } else {
                name
            }
        })
        .collect();
    names.extend((0..8).map(|j| made_up_name(i * 8 + j)));
    let sentences: Vec<String> = names
        .chunks(3)
        .map(|c| match c {
            [a, b, c] => format!("{a} met {b} near {c}."),
            [a, b] => format!("{a} met {b}."),
            [a] => format!("{a} slept."),
            _ => String::new(),
        })
        .collect();
    RememberInput::Text { text: sentences.join(" "), name: Some(format!("doc{i:02}.txt")) }
}

/// The global context rows (id → text) and the EdgeType counts (text → n).
async fn derived_rows(engine: &Engine, ds: DatasetId) -> (BTreeMap<Uuid, String>, BTreeMap<String, u64>) {
    let g = engine.graph().get_graph(ds).await.unwrap();
    let rows = g
        .nodes
        .iter()
        .filter(|n| n.node_type == "GlobalContextSummary")
        .map(|n| (n.id, n.properties["text"].as_str().unwrap().to_string()))
        .collect();
    let probe = vec![1.0; engine.embedder().dimensions()];
    let counts = engine
        .vectors()
        .search(ds, col::EDGE_TYPE_RELATIONSHIP_NAME, &probe, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|h| (h.payload["text"].as_str().unwrap().to_string(), h.payload["number_of_edges"].as_u64().unwrap()))
        .collect();
    (rows, counts)
}

/// After each write, what the write left equals what a full build from the
/// whole graph (improve's `global_context_index` stage) makes of it: the
/// EdgeType counts, the root, and the written document's bucket (the other
/// buckets may wait for the full build: their IDF moved).
async fn writes_follow_as_a_full_build_would(engine: &Engine) {
    let user = me(engine).await;
    let check = |what: String, written: Option<Uuid>| async move {
        let ds = dataset_id(engine, "spread").await;
        let (rows, counts) = derived_rows(engine, ds).await;
        let outcome = engine.improve(&me(engine).await, &"spread".into(), None).await.unwrap();
        let stage = outcome.stages.iter().find(|s| s.stage == "global_context_index").unwrap();
        assert_eq!(stage.status, "completed", "{what}: {stage:?}");
        let (full_rows, full_counts) = derived_rows(engine, ds).await;
        assert_eq!(counts, full_counts, "{what}: EdgeType counts");
        let root = root_summary_id(ds);
        assert_eq!(rows.get(&root), full_rows.get(&root), "{what}: the root");
        if let Some(doc) = written {
            let bucket = recall_engine::bucket_summary_id(ds, doc);
            assert!(full_rows.contains_key(&bucket), "{what}");
            assert_eq!(rows.get(&bucket), full_rows.get(&bucket), "{what}: its bucket");
        }
        let full_ids: BTreeSet<&Uuid> = full_rows.keys().collect();
        assert!(rows.keys().filter(|id| !full_ids.contains(id)).count() == 0, "{what}: a row the full build dropped");
        full_rows
    };
    let mut ids = Vec::new();
    for i in 0..12 {
        engine.remember(&user, "spread", &[spread_document(i)]).await.unwrap();
        let ds = dataset_id(engine, "spread").await;
        let item = engine.relational().data.list_data(ds).await.unwrap();
        let doc = item.iter().find(|d| d.name == format!("doc{i:02}.txt")).unwrap().id;
        ids.push(doc);
        check(format!("remember doc{i:02}"), Some(doc)).await;
    }
    // Forgetting the documents that carry the most widespread entities
    // lowers them below entities the kept ranking left out.
    for i in [0, 4, 8, 2, 6] {
        engine.forget_document(&user, "spread", &format!("doc{i:02}.txt")).await.unwrap();
        let rows = check(format!("forget doc{i:02}"), None).await;
        let ds = dataset_id(engine, "spread").await;
        assert!(!rows.contains_key(&recall_engine::bucket_summary_id(ds, ids[i])));
        let root = &rows[&root_summary_id(ds)];
        assert!(root.contains("Widespread entities: "), "{root}");
        assert!(!root.contains(&format!("doc{i:02}.txt")), "{root}");
    }
}

/// One remember larger than the refresh window refreshes the derived
/// indexes window by window, counting an entity's mentions from the store
/// once and adding its own documents' after that: the EdgeType counts and
/// the root end as a full build makes them, every document has its bucket,
/// and the last document's bucket (written with the final document
/// frequencies) is the full build's. The second remember starts on a
/// dataset that already mentions the entities.
#[tokio::test]
async fn a_remember_refreshed_window_by_window_ends_as_a_full_build() {
    let config = recall_engine::EngineConfig { chunks_per_batch: 1, index_refresh_chunks: 3, ..Default::default() };
    let engine = memory_builder().config(config).build().unwrap();
    let user = me(&engine).await;
    let first: Vec<RememberInput> = (0..5).map(spread_document).collect();
    assert_eq!(engine.remember(&user, "spread", &first).await.unwrap().items_added, 5);
    let second: Vec<RememberInput> = (5..12).map(spread_document).collect();
    assert_eq!(engine.remember(&user, "spread", &second).await.unwrap().items_added, 7);
    let ds = dataset_id(&engine, "spread").await;
    let (rows, counts) = derived_rows(&engine, ds).await;
    assert!(!counts.is_empty());
    engine.improve(&user, &"spread".into(), None).await.unwrap();
    let (full_rows, full_counts) = derived_rows(&engine, ds).await;
    assert_eq!(counts, full_counts, "EdgeType counts");
    let root = root_summary_id(ds);
    assert!(rows.contains_key(&root));
    assert_eq!(rows.get(&root), full_rows.get(&root), "the root");
    for item in engine.relational().data.list_data(ds).await.unwrap() {
        let bucket = recall_engine::bucket_summary_id(ds, item.id);
        assert!(rows.contains_key(&bucket), "{}'s bucket", item.name);
        if item.name == "doc11.txt" {
            assert_eq!(rows.get(&bucket), full_rows.get(&bucket), "{}'s bucket", item.name);
        }
    }
}

#[tokio::test]
async fn writes_follow_the_derived_indexes_in_memory() {
    writes_follow_as_a_full_build_would(&memory_builder().build().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_follow_the_derived_indexes_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    writes_follow_as_a_full_build_would(&embedded(dir.path()).await).await;
}

/// A text that recurs across a remember's windows (the same sentence in
/// several documents: one `contains` text per entity it names) is counted
/// from the store in the first window that touches it and then grows by each
/// window's new edges; the last window here does not touch it, so only that
/// running count can be right, and it must equal a full recount.
#[tokio::test]
async fn a_text_recurring_across_windows_is_counted_as_a_full_build_would() {
    let config = recall_engine::EngineConfig { chunks_per_batch: 1, index_refresh_chunks: 1, ..Default::default() };
    let engine = memory_builder().config(config).build().unwrap();
    let user = me(&engine).await;
    let mut docs: Vec<RememberInput> = (0..6)
        .map(|i| RememberInput::Text {
            text: format!("Ada Lovelace met Alan Turing.\n\n{} slept.", made_up_name(700 + i)),
            name: Some(format!("same{i}.txt")),
        })
        .collect();
    docs.push(RememberInput::Text { text: format!("{} slept.", made_up_name(799)), name: Some("last.txt".into()) });
    assert_eq!(engine.remember(&user, "recur", &docs).await.unwrap().items_added, 7);
    let ds = dataset_id(&engine, "recur").await;
    let (_, counts) = derived_rows(&engine, ds).await;
    assert!(counts.values().any(|n| *n >= 6), "a text counted in every window: {counts:?}");
    engine.improve(&user, &"recur".into(), None).await.unwrap();
    let (_, full_counts) = derived_rows(&engine, ds).await;
    assert_eq!(counts, full_counts, "EdgeType counts");
}
