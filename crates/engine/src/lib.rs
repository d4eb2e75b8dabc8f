//! The engine: `remember()`, `recall()` and the dataset operations, running on
//! the ports of `recall-core`. It names no concrete backend; the composition
//! crate wires adapters in through [`EngineBuilder`].

mod access;
mod datasets;
pub mod export;
pub mod ingest;
pub mod query;
mod sessions;
mod sketch_cache;
pub mod skills;
pub(crate) mod visibility;

use std::path::PathBuf;
use std::sync::Arc;

use recall_core::ports::{Embedder, GraphExtractor, GraphStore, LlmClient, RelationalPorts, Summarizer, VectorStore};
use recall_core::session::SessionMemory;
use recall_core::{RecallError, Result, SearchType, User};
use recall_retrievers::{Retriever, RetrieverRegistry};

pub use access::{Access, DatasetListing};
pub use datasets::DatasetStatus;
pub use export::{GraphPages, EXPORT_PAGE};
pub use ingest::chunking::{chunk_text, TextChunk};
pub use ingest::cognify::INDEX_REFRESH_CHUNKS;
pub use ingest::extract;
pub use ingest::forget::ForgetOutcome;
pub use ingest::global_context::{bucket_summary_id, root_summary_id};
pub use ingest::improve::{ImproveOutcome, ImproveStage};
pub use ingest::progress::{NoProgress, RememberProgress};
pub use ingest::reembed::{ReembedCollection, ReembedOutcome, ReembedProgress};
pub use ingest::remember::{check_inputs, AddOutcome, RememberInput, RememberOutcome};
pub use ingest::update::UpdateOutcome;
pub use query::dataset_routing::{self, DatasetRoutingConfig};
pub use query::normalise::SearchResultPayload;
pub use query::recall::{RecallExplain, StageTiming};
pub use query::request::RecallRequest;
pub use query::scope;
pub use query::search::SearchRequest;
pub use recall_core::{SearchOptions, DEFAULT_SYSTEM_PROMPT, DEFAULT_TOP_K};
pub use recall_skills::SkillRunEntry;
pub use skills::RecordedSkillRun;

/// Engine settings that are not ports.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Chunk budget in words.
    pub chunk_size: usize,
    /// Where raw copies of remembered text are kept; `None` keeps none.
    pub raw_data_dir: Option<PathBuf>,
    /// Chunks per cognify batch (Cognee's `chunks_per_batch`).
    pub chunks_per_batch: usize,
    /// Chunks a remember writes between two refreshes of the derived
    /// indexes (bounds what one refresh holds; [`INDEX_REFRESH_CHUNKS`] by default).
    pub index_refresh_chunks: usize,
    /// Chunks extracted concurrently (bounds LLM calls in flight).
    pub extraction_concurrency: usize,
    /// Also embed each relation as a `Triplet_text` row (`TRIPLET_EMBEDDING`).
    pub triplet_embedding: bool,
    /// `ALLOW_CYPHER_QUERY`: CYPHER and NATURAL_LANGUAGE run only when true.
    pub allow_cypher_query: bool,
    /// `RECALL_WARMUP_SHORTCIRCUIT`: answer "still warming up" instead of
    /// searching datasets whose graph was never built.
    pub warmup_shortcircuit: bool,
    /// `RECALL_WARMUP_THRESHOLD` (≥ 1), reported in the marker.
    pub warmup_threshold: i64,
    /// `RECALL_WARMUP_CACHE_TTL`: how long a warm verdict is cached.
    pub warmup_cache_ttl: std::time::Duration,
    /// `RECALL_LOG_SEARCH_HISTORY` / `COGNEE_LOG_SEARCH_HISTORY`: record searches.
    pub log_search_history: bool,
    /// Automatic dataset routing (`DATASET_ROUTING_*`).
    pub dataset_routing: DatasetRoutingConfig,
    /// `SKILL_GATE_ENABLED`: recall also looks up skills when a question asks for a procedure.
    pub skill_gate_enabled: bool,
    /// `ENABLE_BACKEND_ACCESS_CONTROL`: legacy search returns one result per
    /// dataset (on) or the bare results (off).
    pub access_control: bool,
    /// `RECALL_PROMPT_DIRS`: the only directories a request's prompt file
    /// (`system_prompt_path`) may be read from. Empty: built-in prompts only.
    pub prompt_dirs: Vec<PathBuf>,
    /// `IMPROVE_FEEDBACK_ALPHA` (0, 1]: how far one rating moves an element's weight.
    pub improve_feedback_alpha: f64,
    /// The recall "tools" lane: text-to-SQL over the deployment's databases (docs/tools-lane.md).
    pub tools: recall_core::tools::ToolSettings,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            chunk_size: 512,
            raw_data_dir: None,
            chunks_per_batch: 500,
            index_refresh_chunks: ingest::cognify::INDEX_REFRESH_CHUNKS,
            extraction_concurrency: 8,
            triplet_embedding: false,
            allow_cypher_query: false,
            warmup_shortcircuit: true,
            warmup_threshold: 1,
            warmup_cache_ttl: std::time::Duration::from_secs(60),
            log_search_history: true,
            dataset_routing: DatasetRoutingConfig::default(),
            skill_gate_enabled: true,
            access_control: true,
            prompt_dirs: Vec::new(),
            improve_feedback_alpha: ingest::improve::DEFAULT_FEEDBACK_ALPHA,
            tools: recall_core::tools::ToolSettings::default(),
        }
    }
}

/// The memory engine. Cheap to clone; every port is shared.
#[derive(Clone)]
pub struct Engine {
    pub(crate) config: EngineConfig,
    pub(crate) relational: RelationalPorts,
    /// Users, datasets and grants: every dataset rule.
    pub(crate) access: access::Access,
    pub(crate) graph: Arc<dyn GraphStore>,
    pub(crate) vectors: Arc<dyn VectorStore>,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) llm: Option<Arc<dyn LlmClient>>,
    pub(crate) extractor: Arc<dyn GraphExtractor>,
    pub(crate) summarizer: Arc<dyn Summarizer>,
    pub(crate) retrievers: RetrieverRegistry,
    /// The persisted data versions as this process last saw them.
    pub(crate) versions: Arc<Versions>,
    /// Session memory; `None` (caching off): the session lanes return
    /// nothing and no turn is recorded.
    pub(crate) sessions: Option<Arc<dyn SessionMemory>>,
    /// Warm verdicts of the warm-up probe, by (user, sorted dataset ids).
    pub(crate) warm_cache: moka::future::Cache<(uuid::Uuid, Vec<recall_core::DatasetId>), ()>,
    /// The embedder for questions: remembers recent query vectors, so a
    /// recall embeds its question once (routing, then every dataset).
    pub(crate) query_embedder: Arc<dyn Embedder>,
    /// Opens the tools lane's databases (`None`: the lane has no driver).
    pub(crate) sql_connector: Option<Arc<dyn recall_core::tools::SqlConnector>>,
    /// Each dataset's ranking sketch in memory, by data version.
    pub(crate) sketches: Arc<sketch_cache::SketchCache>,
}

/// The data versions one process has seen (docs/backends.md, "Data versions").
#[derive(Default)]
pub(crate) struct Versions {
    /// The highest store version seen (`None`: nothing read or written yet).
    store: std::sync::Mutex<Option<u64>>,
    /// Each dataset's version, as last read or written.
    datasets: std::sync::Mutex<std::collections::HashMap<recall_core::DatasetId, u64>>,
    /// One bump at a time: a bump that raced another of this process's
    /// would read as a foreign write.
    bump: tokio::sync::Mutex<()>,
    /// Each dataset's quarantined ids, with the data version they were read
    /// at (docs/reliability.md, "Crash-safe remember and forget").
    hidden: std::sync::Mutex<std::collections::HashMap<recall_core::DatasetId, (u64, visibility::Hidden)>>,
}

impl Versions {
    fn store_seen(&self) -> Option<u64> {
        self.store.lock().ok().and_then(|s| *s)
    }

    /// Records a reading or a write: the store version (versions only go
    /// up, so an older reading never replaces a newer one) and datasets'.
    fn record(&self, store: u64, datasets: impl IntoIterator<Item = (recall_core::DatasetId, u64)>) {
        if let Ok(mut s) = self.store.lock() {
            *s = Some(s.map_or(store, |old| old.max(store)));
        }
        if let Ok(mut m) = self.datasets.lock() {
            m.extend(datasets);
        }
    }
}

/// Builds an [`Engine`] from its ports. Retriever registration is explicit and
/// happens here, once.
pub struct EngineBuilder {
    config: EngineConfig,
    relational: RelationalPorts,
    graph: Arc<dyn GraphStore>,
    vectors: Arc<dyn VectorStore>,
    embedder: Arc<dyn Embedder>,
    llm: Option<Arc<dyn LlmClient>>,
    extractor: Option<Arc<dyn GraphExtractor>>,
    summarizer: Option<Arc<dyn Summarizer>>,
    retrievers: RetrieverRegistry,
    agentic: recall_retrievers::AgenticRetriever,
    sessions: Option<Arc<dyn SessionMemory>>,
    sql_connector: Option<Arc<dyn recall_core::tools::SqlConnector>>,
}

impl EngineBuilder {
    pub fn new(
        relational: RelationalPorts,
        graph: Arc<dyn GraphStore>,
        vectors: Arc<dyn VectorStore>,
        embedder: Arc<dyn Embedder>,
    ) -> Self {
        Self {
            config: EngineConfig::default(),
            relational,
            graph,
            vectors,
            embedder,
            llm: None,
            extractor: None,
            summarizer: None,
            retrievers: RetrieverRegistry::with_builtins(),
            agentic: recall_retrievers::AgenticRetriever::default(),
            sql_connector: None,
            sessions: None,
        }
    }

    /// Session memory (the sessions crate's implementation of the port);
    /// without it (`CACHING=false`) nothing is remembered per session.
    pub fn sessions(mut self, sessions: Arc<dyn SessionMemory>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The graph extractor; by default the LLM one when an LLM is set, else the rule-based one.
    pub fn extractor(mut self, extractor: Arc<dyn GraphExtractor>) -> Self {
        self.extractor = Some(extractor);
        self
    }

    /// The chunk summarizer; by default the LLM one when an LLM is set, else the extractive one.
    pub fn summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// The driver of the tools lane's SQL databases (docs/tools-lane.md).
    pub fn sql_connector(mut self, connector: Arc<dyn recall_core::tools::SqlConnector>) -> Self {
        self.sql_connector = Some(connector);
        self
    }

    pub fn llm(mut self, llm: Option<Arc<dyn LlmClient>>) -> Self {
        self.llm = llm;
        self
    }

    /// Registers a retriever for a search type, replacing the built-in one
    /// (Cognee's `use_retriever`). Registration happens once, at build time.
    pub fn register_retriever(mut self, search_type: SearchType, retriever: Arc<dyn Retriever>) -> Self {
        self.retrievers.register(search_type, retriever);
        self
    }

    /// Registers a tool AGENTIC_COMPLETION loops may offer their model
    /// (docs/agentic.md, "Tools"), beside `load_skill` and `memory_search`;
    /// a tool with the name of an earlier one replaces it. This resets
    /// AGENTIC_COMPLETION to the built-in loop with every tool registered so far.
    pub fn register_agent_tool(mut self, tool: Arc<dyn recall_retrievers::AgentTool>) -> Self {
        self.agentic = self.agentic.with_tool(tool);
        self.retrievers.register(SearchType::AgenticCompletion, Arc::new(self.agentic.clone()));
        self
    }

    pub fn build(self) -> Result<Engine> {
        if self.config.chunk_size == 0 {
            return Err(RecallError::invalid_input("chunk_size must be positive"));
        }
        if self.config.warmup_threshold < 1 {
            return Err(RecallError::invalid_input("recall_warmup_threshold must be at least 1"));
        }
        let warmup_ttl = self.config.warmup_cache_ttl;
        let extractor: Arc<dyn GraphExtractor> = match (self.extractor, &self.llm) {
            (Some(e), _) => e,
            (None, Some(llm)) => Arc::new(extract::LlmGraphExtractor::new(llm.clone())),
            (None, None) => Arc::new(extract::RuleBasedExtractor),
        };
        let summarizer: Arc<dyn Summarizer> = match (self.summarizer, &self.llm) {
            (Some(s), _) => s,
            (None, Some(llm)) => Arc::new(extract::LlmSummarizer::new(llm.clone())),
            (None, None) => Arc::new(extract::ExtractiveSummarizer::default()),
        };
        let query_embedder = Arc::new(query::query_embedder::QueryEmbedder::new(self.embedder.clone()));
        if let Some(sessions) = &self.sessions {
            sessions.attach_embedder(query_embedder.clone());
        }
        Ok(Engine {
            extractor,
            summarizer,
            config: self.config,
            access: access::Access::new(self.relational.clone()),
            relational: self.relational,
            graph: self.graph,
            vectors: self.vectors,
            query_embedder,
            embedder: self.embedder,
            llm: self.llm,
            retrievers: self.retrievers,
            versions: Default::default(),
            warm_cache: moka::future::Cache::builder().max_capacity(1024).time_to_live(warmup_ttl).build(),
            sessions: self.sessions,
            sql_connector: self.sql_connector,
            sketches: Arc::new(sketch_cache::SketchCache::new()),
        })
    }
}

/// One store's answer to a health check.
#[derive(Debug, Clone)]
pub struct ComponentHealth {
    /// `relational_db`, `vector_db` or `graph_db`.
    pub component: &'static str,
    pub provider: String,
    pub outcome: std::result::Result<(), String>,
    pub elapsed: std::time::Duration,
}

/// Runs blocking file work off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RecallError::backend_msg(format!("a blocking task failed: {e}")))?
}

impl Engine {
    /// The dataset's data version as last observed (docs/backends.md, "Data
    /// versions"); caches such as the BM25 index key on it.
    pub(crate) fn data_version(&self, dataset: recall_core::DatasetId) -> u64 {
        self.versions.datasets.lock().map(|m| m.get(&dataset).copied().unwrap_or(0)).unwrap_or(0)
    }

    /// Records a write to the dataset in the store. When the store shows
    /// writes this process did not make, the vector store drops what it
    /// holds in memory.
    pub(crate) async fn bump_data_version(&self, dataset: recall_core::DatasetId) -> Result<()> {
        let _one_writer = self.versions.bump.lock().await;
        let seen = self.versions.store_seen();
        let bump = self.relational.datasets.bump_data_version(dataset, seen).await?;
        self.versions.record(bump.version, [(dataset, bump.version)]);
        self.refresh_if(bump.unseen_writes && seen.is_some()).await
    }

    /// Reads the persisted data versions (the store's, and these datasets');
    /// when the store moved past what this process knows, another process
    /// wrote, and the vector store drops what it holds in memory.
    pub(crate) async fn observe_data_versions(&self, datasets: &[recall_core::DatasetId]) -> Result<()> {
        self.observe(self.relational.datasets.data_versions(datasets).await?).await?;
        self.read_quarantine(datasets).await
    }

    /// Records versions just read; a store version past what this process
    /// knows means another process wrote.
    pub(crate) async fn observe(&self, versions: recall_core::ports::DataVersions) -> Result<()> {
        let seen = self.versions.store_seen();
        self.versions.record(versions.store, versions.datasets);
        self.refresh_if(seen.is_some_and(|seen| versions.store > seen)).await
    }

    /// Re-reads the quarantine of the datasets whose data version moved
    /// since it was last read: every write that quarantines bumps the
    /// version first, so an unchanged version means an unchanged quarantine.
    pub(crate) async fn read_quarantine(&self, datasets: &[recall_core::DatasetId]) -> Result<()> {
        for dataset in datasets {
            let version = self.data_version(*dataset);
            let read_at = self.versions.hidden.lock().ok().and_then(|m| m.get(dataset).map(|(v, _)| *v));
            if read_at != Some(version) {
                let hidden = visibility::Hidden::new(self.relational.data.quarantined(*dataset).await?);
                if let Ok(mut m) = self.versions.hidden.lock() {
                    m.insert(*dataset, (version, hidden));
                }
            }
        }
        Ok(())
    }

    /// What searches of the dataset must not see, as last read.
    pub(crate) fn hidden(&self, dataset: recall_core::DatasetId) -> visibility::Hidden {
        self.versions.hidden.lock().ok().and_then(|m| m.get(&dataset).map(|(_, h)| h.clone())).unwrap_or_default()
    }

    /// When another process wrote, the vector store drops what it holds.
    async fn refresh_if(&self, another_writer: bool) -> Result<()> {
        if another_writer {
            tracing::debug!("another process wrote: refreshing the vector store");
            self.vectors.refresh().await?;
        }
        Ok(())
    }

    /// The settings this engine runs with (front ends read `access_control`
    /// to shape legacy search results).
    /// The access service: datasets, grants and the dataset rule.
    pub fn access(&self) -> &Access {
        &self.access
    }

    pub fn settings(&self) -> &EngineConfig {
        &self.config
    }

    /// Whether a usable LLM is configured (decides the no-`query_type` default).
    pub fn llm_available(&self) -> bool {
        self.llm.is_some()
    }

    /// The ports, for tools and tests that inspect what was written.
    pub fn graph(&self) -> &Arc<dyn GraphStore> {
        &self.graph
    }

    pub fn vectors(&self) -> &Arc<dyn VectorStore> {
        &self.vectors
    }

    /// Waits for the caches' background loads under way: the vector store's
    /// search caches and the sketch cache's (for benchmarks of the steady state).
    pub async fn settle_caches(&self) {
        self.vectors.settle().await;
        self.sketches.wait_for_loads().await;
    }

    /// A dataset's whole graph in memory (the graph page draws a part of
    /// it; exports stream with [`Engine::dataset_graph_pages`]); the caller
    /// needs `read` on it.
    pub async fn dataset_graph(
        &self,
        user: &User,
        dataset: impl Into<recall_core::DatasetRef>,
    ) -> Result<(recall_core::Dataset, recall_core::Subgraph)> {
        let dataset = self.access.dataset(user, dataset).await?;
        let graph = self.graph.get_graph(dataset.id).await?;
        Ok((dataset, graph))
    }

    /// The caller's search history (questions and answers), oldest first.
    pub async fn search_history(&self, user: &User) -> Result<Vec<recall_core::HistoryRow>> {
        self.relational.history.search_history(user.id).await
    }

    /// Checks each store answers: `(component, provider, outcome, milliseconds)`
    /// for the relational, vector and graph stores (`recall doctor`, `/health`).
    pub async fn component_health(&self) -> Vec<ComponentHealth> {
        async fn timed(
            component: &'static str,
            provider: String,
            check: impl std::future::Future<Output = Result<()>>,
        ) -> ComponentHealth {
            let started = std::time::Instant::now();
            let outcome = check.await.map_err(|e| e.to_string());
            ComponentHealth { component, provider, outcome, elapsed: started.elapsed() }
        }
        let relational = timed("relational_db", "relational".into(), async {
            self.relational.users.find_user("healthcheck@recall.invalid").await.map(|_| ())
        });
        let vector = timed("vector_db", self.vectors.name().to_string(), self.vectors.healthcheck());
        let graph = timed("graph_db", self.graph.name().to_string(), self.graph.healthcheck());
        let (r, v, g) = tokio::join!(relational, vector, graph);
        vec![r, v, g]
    }

    pub fn relational(&self) -> &RelationalPorts {
        &self.relational
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }
}
