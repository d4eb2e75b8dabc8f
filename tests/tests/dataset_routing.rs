#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Automatic dataset routing (docs/recall.md, "The graph lane", step 3) end to end on
//! a three-dataset fixture: the real routing rows of the global context
//! index pick the dataset a question is about; controlled distances pin the
//! selection rule, the tie margin, and every widening fallback.

mod common;

use common::me;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use recall_core::model::collections::DATASET_ROUTING;
use recall_core::ports::{
    Embedder, EmbeddingSpec, NodeSetFilter, RelationalPorts, ScoredResult, VectorRecord, VectorStore,
};
use recall_core::{DatasetId, RecallError, RecallResponse, Result, SearchType};
use recall_engine::dataset_routing::RoutingOutcome;
use recall_engine::extract::{ExtractiveSummarizer, RuleBasedExtractor};
use recall_engine::{
    DatasetRoutingConfig, Engine, EngineBuilder, EngineConfig, RecallExplain, RecallRequest, RememberInput,
};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};
use uuid::Uuid;

/// How the routing collection answers.
#[derive(Clone)]
enum Routing {
    /// The stored rows.
    Real,
    /// These distances (datasets not listed have no routing rows).
    Fixed(HashMap<String, f64>),
    /// Scoring raises.
    Fail,
    /// The rows were written with another vector width.
    Width(usize),
}

/// The in-memory vector store, with the routing collection under the test's control.
struct ControlledVectors {
    inner: MemoryVectorStore,
    routing: Mutex<Routing>,
    /// Dataset name → id, to key fixed distances by name.
    names: Mutex<HashMap<DatasetId, String>>,
    /// Datasets whose other searches find nothing.
    blind: Mutex<Vec<String>>,
}

#[async_trait]
impl VectorStore for ControlledVectors {
    async fn ensure_collection(&self, dataset: DatasetId, collection: &str, spec: &EmbeddingSpec) -> Result<()> {
        self.inner.ensure_collection(dataset, collection, spec).await
    }
    async fn collection_spec(&self, collection: &str) -> Result<Option<EmbeddingSpec>> {
        let routing = self.routing.lock().unwrap().clone();
        match routing {
            Routing::Width(dimensions) if collection == DATASET_ROUTING => {
                Ok(Some(EmbeddingSpec { model: "another-model".into(), dimensions }))
            }
            _ => self.inner.collection_spec(collection).await,
        }
    }
    async fn has_collection(&self, dataset: DatasetId, collection: &str) -> Result<bool> {
        self.inner.has_collection(dataset, collection).await
    }
    async fn upsert(&self, dataset: DatasetId, collection: &str, records: Vec<VectorRecord>) -> Result<()> {
        self.inner.upsert(dataset, collection, records).await
    }
    async fn search(
        &self,
        dataset: DatasetId,
        collection: &str,
        query: &[f32],
        limit: Option<usize>,
        filter: Option<NodeSetFilter>,
    ) -> Result<Vec<ScoredResult>> {
        if collection == DATASET_ROUTING {
            let routing = self.routing.lock().unwrap().clone();
            match routing {
                Routing::Fixed(distances) => {
                    let name = self.names.lock().unwrap().get(&dataset).cloned().unwrap_or_default();
                    return Ok(distances
                        .get(&name)
                        .map(|d| ScoredResult { id: Uuid::new_v4(), score: *d, payload: Default::default() })
                        .into_iter()
                        .collect());
                }
                Routing::Fail => return Err(RecallError::backend_msg("routing collection unreachable")),
                Routing::Real | Routing::Width(_) => {}
            }
        } else {
            let name = self.names.lock().unwrap().get(&dataset).cloned().unwrap_or_default();
            if self.blind.lock().unwrap().contains(&name) {
                return Ok(Vec::new());
            }
        }
        self.inner.search(dataset, collection, query, limit, filter).await
    }
    async fn count(&self, dataset: DatasetId, collection: &str) -> Result<u64> {
        self.inner.count(dataset, collection).await
    }
    async fn delete(&self, dataset: DatasetId, collection: &str, ids: &[Uuid]) -> Result<()> {
        self.inner.delete(dataset, collection, ids).await
    }
    async fn delete_dataset(&self, dataset: DatasetId) -> Result<()> {
        self.inner.delete_dataset(dataset).await
    }
}

const ASTRONOMY: &[&str] = &[
    "Jupiter is the largest planet. Jupiter has the Great Red Spot and many moons such as Europa and Ganymede.",
    "Saturn has bright rings. Titan is the largest moon of Saturn.",
];
const BAKING: &[&str] = &[
    "The Sourdough Starter needs Rye Flour every day. The Sourdough Starter ferments with Wild Yeast.",
    "Bread Dough rises with Wild Yeast. Bakers bake Bread Dough in a Dutch Oven.",
];
const RUST: &[&str] = &[
    "The Borrow Checker enforces Ownership Rules in Rust. Cargo builds Rust Crates.",
    "Rust Traits define shared behaviour. Tokio runs asynchronous Rust code.",
];

async fn fixture(config: EngineConfig) -> (Engine, Arc<ControlledVectors>) {
    let vectors = Arc::new(ControlledVectors {
        inner: MemoryVectorStore::new(),
        routing: Mutex::new(Routing::Real),
        names: Mutex::new(HashMap::new()),
        blind: Mutex::new(Vec::new()),
    });
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        vectors.clone(),
        Arc::new(HashingEmbedder::new(256).unwrap()),
    )
    .config(config)
    .extractor(Arc::new(RuleBasedExtractor))
    .summarizer(Arc::new(ExtractiveSummarizer::default()))
    .build()
    .unwrap();
    for (name, docs) in [("astronomy", ASTRONOMY), ("baking", BAKING), ("rust", RUST)] {
        let inputs: Vec<RememberInput> = docs.iter().map(|t| RememberInput::text(*t)).collect();
        engine.remember(&me(&engine).await, name, &inputs).await.unwrap();
        let ds = engine.access().dataset(&me(&engine).await, name).await.unwrap();
        vectors.names.lock().unwrap().insert(ds.id, name.to_string());
    }
    (engine, vectors)
}

fn config(routing: DatasetRoutingConfig) -> EngineConfig {
    EngineConfig { dataset_routing: routing, ..EngineConfig::default() }
}

fn datasets_answering(results: &[RecallResponse]) -> Vec<String> {
    let mut names: Vec<String> = results
        .iter()
        .filter_map(|r| match r {
            RecallResponse::Graph(e) => e.dataset_name.clone(),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn distances(explain: &RecallExplain) -> HashMap<String, Option<f64>> {
    explain.dataset_routing.as_ref().unwrap().scores.iter().map(|s| (s.dataset.name.clone(), s.distance)).collect()
}

fn chunks(query: &str) -> RecallRequest {
    RecallRequest::new(query).query_type(SearchType::Chunks).top_k(3)
}

#[tokio::test]
async fn the_global_context_rows_route_a_question_to_its_dataset() {
    let routing = DatasetRoutingConfig { top_k: 1, max_distance: 2.0, ..Default::default() };
    let (engine, _) = fixture(config(routing)).await;
    for (query, want) in [
        ("Jupiter Saturn Titan Europa Ganymede moons", "astronomy"),
        ("Sourdough Starter, Wild Yeast and Bread Dough", "baking"),
        ("Borrow Checker, Ownership Rules and Rust Traits", "rust"),
    ] {
        let (results, explain) = engine.recall_explained(&me(&engine).await, &chunks(query)).await.unwrap();
        let routing = explain.dataset_routing.as_ref().unwrap();
        assert_eq!(routing.outcome, RoutingOutcome::Routed, "{query}");
        // Every dataset was scored on its own rows, and the nearest one won.
        let d = distances(&explain);
        assert_eq!(d.len(), 3);
        let nearest = d.iter().min_by(|a, b| a.1.unwrap().total_cmp(&b.1.unwrap())).unwrap().0.clone();
        assert_eq!(nearest, want, "{query}: {d:?}");
        assert_eq!(explain.datasets_searched, vec![want.to_string()]);
        assert_eq!(datasets_answering(&results), vec![want.to_string()], "{query}");
    }
}

#[tokio::test]
async fn top_k_and_the_tie_margin_choose_the_selection_and_rowless_datasets_are_always_searched() {
    let (engine, vectors) = fixture(config(DatasetRoutingConfig { top_k: 1, ..Default::default() })).await;
    let fixed = |pairs: &[(&str, f64)]| Routing::Fixed(pairs.iter().map(|(n, d)| (n.to_string(), *d)).collect());

    *vectors.routing.lock().unwrap() = fixed(&[("astronomy", 0.30), ("baking", 0.31), ("rust", 0.60)]);
    let (results, explain) = engine.recall_explained(&me(&engine).await, &chunks("anything at all")).await.unwrap();
    // baking is within 0.02 of the last kept (astronomy), rust is not.
    assert_eq!(explain.datasets_searched, vec!["astronomy".to_string(), "baking".to_string()]);
    assert_eq!(datasets_answering(&results), vec!["astronomy".to_string(), "baking".to_string()]);

    *vectors.routing.lock().unwrap() = fixed(&[("astronomy", 0.30), ("baking", 0.35)]);
    let (_, explain) = engine.recall_explained(&me(&engine).await, &chunks("anything at all")).await.unwrap();
    // rust has no routing rows: never narrowed out.
    assert_eq!(explain.datasets_searched, vec!["astronomy".to_string(), "rust".to_string()]);
    assert_eq!(distances(&explain)["rust"], None);

    // An explicit scope is never routed.
    let (_, explain) =
        engine.recall_explained(&me(&engine).await, &chunks("anything").datasets(["baking", "rust"])).await.unwrap();
    assert_eq!(explain.dataset_routing.unwrap().outcome, RoutingOutcome::NotApplicable);
    assert_eq!(explain.datasets_searched, vec!["baking".to_string(), "rust".to_string()]);
}

#[tokio::test]
async fn nothing_within_the_cutoff_or_failed_scoring_or_another_width_searches_every_dataset() {
    let (engine, vectors) = fixture(config(DatasetRoutingConfig { top_k: 1, ..Default::default() })).await;
    let all = vec!["astronomy".to_string(), "baking".to_string(), "rust".to_string()];
    let cases = [
        (
            Routing::Fixed([("astronomy", 0.81), ("baking", 0.95), ("rust", 1.3)].map(|(n, d)| (n.into(), d)).into()),
            RoutingOutcome::NothingWithinCutoff,
        ),
        (Routing::Fail, RoutingOutcome::ScoringFailed),
        (Routing::Width(12), RoutingOutcome::WidthMismatch),
    ];
    for (routing, outcome) in cases {
        *vectors.routing.lock().unwrap() = routing;
        let (results, explain) = engine.recall_explained(&me(&engine).await, &chunks("Jupiter")).await.unwrap();
        assert_eq!(explain.dataset_routing.as_ref().unwrap().outcome, outcome);
        assert_eq!(explain.datasets_searched, all, "{outcome:?}");
        assert_eq!(datasets_answering(&results), all, "{outcome:?}");
        assert!(!explain.widened);
    }
    // The cutoff is inclusive.
    *vectors.routing.lock().unwrap() =
        Routing::Fixed([("astronomy", 0.81), ("baking", 0.8), ("rust", 0.9)].map(|(n, d)| (n.into(), d)).into());
    let (_, explain) = engine.recall_explained(&me(&engine).await, &chunks("Jupiter")).await.unwrap();
    assert_eq!(explain.datasets_searched, vec!["baking".to_string()]);
}

#[tokio::test]
async fn a_selection_that_retrieves_nothing_widens_to_the_remaining_datasets() {
    let (engine, vectors) = fixture(config(DatasetRoutingConfig { top_k: 1, ..Default::default() })).await;
    *vectors.routing.lock().unwrap() =
        Routing::Fixed([("astronomy", 0.1), ("baking", 0.5), ("rust", 0.6)].map(|(n, d)| (n.into(), d)).into());
    // The routed selection (astronomy) retrieves nothing: its chunk search comes back empty.
    vectors.blind.lock().unwrap().push("astronomy".into());
    let (results, explain) = engine.recall_explained(&me(&engine).await, &chunks("Jupiter")).await.unwrap();
    assert!(explain.widened, "{explain:?}");
    assert_eq!(explain.datasets_searched, vec!["astronomy".to_string(), "baking".to_string(), "rust".to_string()]);
    // The remaining datasets' results replace the empty ones.
    assert_eq!(datasets_answering(&results), vec!["baking".to_string(), "rust".to_string()]);
    vectors.blind.lock().unwrap().clear();

    // A selection that retrieves something is not widened.
    let (results, explain) = engine.recall_explained(&me(&engine).await, &chunks("Jupiter")).await.unwrap();
    assert!(!explain.widened);
    assert_eq!(datasets_answering(&results), vec!["astronomy".to_string()]);
}

#[tokio::test]
async fn routing_can_be_turned_off_and_a_single_dataset_is_never_routed() {
    let off = DatasetRoutingConfig { enabled: false, top_k: 1, ..Default::default() };
    let (engine, _) = fixture(config(off)).await;
    let (results, explain) = engine.recall_explained(&me(&engine).await, &chunks("Jupiter")).await.unwrap();
    assert_eq!(explain.dataset_routing.unwrap().outcome, RoutingOutcome::NotApplicable);
    assert_eq!(datasets_answering(&results).len(), 3);

    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(64).unwrap()),
    )
    .extractor(Arc::new(RuleBasedExtractor))
    .summarizer(Arc::new(ExtractiveSummarizer::default()))
    .build()
    .unwrap();
    engine.remember(&me(&engine).await, "only", &[RememberInput::text(ASTRONOMY[0])]).await.unwrap();
    let (_, explain) = engine.recall_explained(&me(&engine).await, &chunks("Jupiter")).await.unwrap();
    assert_eq!(explain.dataset_routing.unwrap().outcome, RoutingOutcome::NotApplicable);
    assert_eq!(explain.lanes, vec!["graph".to_string()]);
    assert!(explain.timings_ms.iter().any(|t| t.stage == "search"));
}

/// Counts the single-text (query) embedding calls that reach the model.
struct CountingEmbedder {
    inner: HashingEmbedder,
    queries: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl Embedder for CountingEmbedder {
    fn model(&self) -> String {
        self.inner.model()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.len() == 1 && texts[0].starts_with("QUERY") {
            self.queries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.embed(texts).await
    }
}

#[tokio::test]
async fn a_routed_recall_embeds_its_question_once() {
    let embedder = Arc::new(CountingEmbedder {
        inner: HashingEmbedder::new(256).unwrap(),
        queries: std::sync::atomic::AtomicUsize::new(0),
    });
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        embedder.clone(),
    )
    .config(config(DatasetRoutingConfig { top_k: 3, max_distance: 2.0, ..Default::default() }))
    .extractor(Arc::new(RuleBasedExtractor))
    .summarizer(Arc::new(ExtractiveSummarizer::default()))
    .build()
    .unwrap();
    for (name, docs) in [("astronomy", ASTRONOMY), ("baking", BAKING), ("rust", RUST)] {
        let inputs: Vec<RememberInput> = docs.iter().map(|t| RememberInput::text(*t)).collect();
        engine.remember(&me(&engine).await, name, &inputs).await.unwrap();
    }
    let (results, explain) =
        engine.recall_explained(&me(&engine).await, &chunks("QUERY Jupiter and Sourdough Starter")).await.unwrap();
    assert_eq!(explain.dataset_routing.unwrap().outcome, RoutingOutcome::Routed);
    assert_eq!(datasets_answering(&results).len(), 3);
    // Routing and the three datasets' CHUNKS searches shared one embedding.
    assert_eq!(embedder.queries.load(std::sync::atomic::Ordering::SeqCst), 1);
}
