//! The engine: `remember()`, `recall()` and the dataset operations, running on
//! the ports of `recall-core`. It names no concrete backend; the composition
//! crate wires adapters in through [`EngineBuilder`].

mod chunking;
mod normalise;
mod recall;
mod remember;

use std::path::PathBuf;
use std::sync::Arc;

use recall_core::ports::{Embedder, GraphStore, LlmClient, RelationalPorts, VectorStore};
use recall_core::{Dataset, RecallError, Result, SearchType};
use recall_retrievers::{Retriever, RetrieverRegistry};

pub use chunking::{chunk_text, TextChunk};
pub use recall::{RecallRequest, DEFAULT_TOP_K};
pub use remember::{NoProgress, RememberInput, RememberOutcome, RememberProgress};

/// Engine settings that are not ports.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The user every call acts as when none is given (`DEFAULT_USER_EMAIL`).
    pub default_user_email: String,
    /// Chunk budget in words.
    pub chunk_size: usize,
    /// Where raw copies of remembered text are kept; `None` keeps none.
    pub raw_data_dir: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self { default_user_email: "default_user@example.com".into(), chunk_size: 512, raw_data_dir: None }
    }
}

/// The memory engine. Cheap to clone; every port is shared.
#[derive(Clone)]
pub struct Engine {
    pub(crate) config: EngineConfig,
    pub(crate) relational: RelationalPorts,
    pub(crate) graph: Arc<dyn GraphStore>,
    pub(crate) vectors: Arc<dyn VectorStore>,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) llm: Option<Arc<dyn LlmClient>>,
    pub(crate) retrievers: RetrieverRegistry,
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
    retrievers: RetrieverRegistry,
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
            retrievers: RetrieverRegistry::with_builtins(),
        }
    }

    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    pub fn llm(mut self, llm: Option<Arc<dyn LlmClient>>) -> Self {
        self.llm = llm;
        self
    }

    /// Registers a retriever for a search type, replacing the built-in one.
    pub fn register_retriever(mut self, search_type: SearchType, retriever: Arc<dyn Retriever>) -> Self {
        self.retrievers.register(search_type, retriever);
        self
    }

    pub fn build(self) -> Result<Engine> {
        if self.config.chunk_size == 0 {
            return Err(RecallError::invalid_input("chunk_size must be positive"));
        }
        Ok(Engine {
            config: self.config,
            relational: self.relational,
            graph: self.graph,
            vectors: self.vectors,
            embedder: self.embedder,
            llm: self.llm,
            retrievers: self.retrievers,
        })
    }
}

impl Engine {
    /// Whether a usable LLM is configured (decides the no-`query_type` default).
    pub fn llm_available(&self) -> bool {
        self.llm.is_some()
    }

    /// The datasets the default user can read, oldest first. Empty when nothing
    /// was ever remembered.
    pub async fn datasets(&self) -> Result<Vec<Dataset>> {
        match self.relational.users.find_user(&self.config.default_user_email).await? {
            Some(user) => self.relational.datasets.readable_datasets(&user).await,
            None => Ok(Vec::new()),
        }
    }

    /// Deletes a dataset of the default user: its vectors, graph, data items,
    /// pipeline runs and finally the dataset row (so an interrupted forget can
    /// be repeated). Unknown names are `DatasetNotFoundError`.
    pub async fn forget_dataset(&self, name: &str) -> Result<Dataset> {
        let user = self
            .relational
            .users
            .find_user(&self.config.default_user_email)
            .await?
            .ok_or_else(|| RecallError::DatasetNotFound { missing: vec![name.to_string()] })?;
        let dataset = self
            .relational
            .datasets
            .owned_datasets_by_name(&user, &[name.to_string()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| RecallError::DatasetNotFound { missing: vec![name.to_string()] })?;
        self.vectors.delete_dataset(dataset.id).await?;
        self.graph.delete_dataset(dataset.id).await?;
        self.relational.data.delete_dataset_data(dataset.id).await?;
        self.relational.runs.delete_dataset_runs(dataset.id).await?;
        self.relational.datasets.delete_dataset(dataset.id).await?;
        Ok(dataset)
    }

    /// The ports, for tools and tests that inspect what was written.
    pub fn graph(&self) -> &Arc<dyn GraphStore> {
        &self.graph
    }

    pub fn vectors(&self) -> &Arc<dyn VectorStore> {
        &self.vectors
    }

    pub fn relational(&self) -> &RelationalPorts {
        &self.relational
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }
}
