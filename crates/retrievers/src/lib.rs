//! Retrievers: one module per search type, each implementing the three-step
//! interface of docs/retrievers.md (`get_retrieved_objects` → `get_context_from_objects`
//! → `get_completion_from_context`), and the registry that maps a search type
//! to its retriever.

mod chunks;
mod coding_rules;
pub mod completion;
mod cypher;
pub mod evidence;
pub mod graph;
mod hybrid;
pub mod lexical;
pub mod prompts;
mod rag;
pub mod schema;
mod skills;
mod summaries;
mod temporal;
mod triplet;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use recall_core::ports::{Embedder, GraphStore, LlmClient, NodeSetFilter, VectorStore};
use recall_core::{Dataset, RecallError, Result, SearchType};
use serde_json::{Map, Value};

pub use chunks::ChunksRetriever;
pub use coding_rules::CodingRulesRetriever;
pub use cypher::{CypherRetriever, NaturalLanguageRetriever};
pub use graph::{
    brute_force_triplet_search, GraphCompletionContextExtensionRetriever, GraphCompletionCotRetriever,
    GraphCompletionDecompositionRetriever, GraphCompletionRetriever, GraphSummaryCompletionRetriever, Triplet,
    TripletSearch,
};
pub use hybrid::HybridRetriever;
pub use lexical::{Bm25Index, LexicalChunksRetriever, LexicalIndexCache};
pub use rag::CompletionRetriever;
pub use skills::SkillsRetriever;
pub use summaries::SummariesRetriever;
pub use temporal::TemporalRetriever;
pub use triplet::TripletRetriever;

/// The stores and models a retriever works with, bound to one dataset.
#[derive(Clone)]
pub struct RetrievalContext {
    pub dataset: Dataset,
    pub graph: Arc<dyn GraphStore>,
    pub vectors: Arc<dyn VectorStore>,
    pub embedder: Arc<dyn Embedder>,
    pub llm: Option<Arc<dyn LlmClient>>,
    /// Bumped by the engine whenever the dataset's graph changes, so
    /// per-dataset caches (the BM25 index) know when to rebuild.
    pub data_version: u64,
    /// Where the answer step reports its stage and tokens
    /// ([`completion::generate`] streams when the listener asks for deltas).
    pub events: Arc<dyn recall_core::RecallEvents>,
}

impl RetrievalContext {
    /// The configured LLM, or a typed error naming the search type that needs one.
    pub fn require_llm(&self, search_type: &str) -> Result<&Arc<dyn LlmClient>> {
        self.llm.as_ref().ok_or_else(|| {
            RecallError::Provider(format!(
                "{search_type} needs an LLM, and none is configured: set LLM_API_KEY (and LLM_ENDPOINT for a non-OpenAI server)."
            ))
        })
    }

    /// Embeds one query text.
    pub async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embedder
            .embed(&[query.to_string()])
            .await?
            .pop()
            .ok_or_else(|| RecallError::Provider("embedder returned no vector for the query".into()))
    }
}

/// `node_name_filter_operator`: OR (any) or AND (all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FilterOperator {
    #[default]
    Or,
    And,
}

/// Per-call options every retriever receives (the retriever factory's arguments).
#[derive(Debug, Clone, Default)]
pub struct RetrieverOptions {
    /// `None` lets the retriever use its own default.
    pub top_k: Option<usize>,
    pub node_name: Option<Vec<String>>,
    pub node_name_filter_operator: FilterOperator,
    pub only_context: bool,
    /// Overrides the system template of completion retrievers.
    pub system_prompt: Option<String>,
    /// A built-in prompt name (e.g. `answer_simple_question.txt`) or a file path,
    /// used when `system_prompt` is not given. A file is read by the engine
    /// (from its allowed prompt directories) into `prompt_files` before any
    /// retriever runs; retrievers never read files themselves.
    pub system_prompt_path: Option<String>,
    /// Template sources of the prompt files this request names, by the path
    /// as given ([`prompts::load_with`]).
    pub prompt_files: std::collections::BTreeMap<String, String>,
    /// Append the `Evidence:` block and fill `metadata.evidence` (docs/retrievers.md).
    pub include_references: bool,
    /// JSON Schema of a structured answer: completions are requested with it and
    /// validated against it before they are returned.
    pub response_schema: Option<Value>,
    /// Graph family: hits per collection (default 100).
    pub wide_search_top_k: Option<usize>,
    /// Graph family: distance of an element with no vector hit (default 6.5).
    pub triplet_distance_penalty: Option<f64>,
    /// Graph family: blend of stored feedback weights into triplet scores, in [0, 1].
    pub feedback_influence: f64,
    /// Graph family: project the k-hop neighbourhood of the seeds instead of 1 hop.
    pub neighborhood_depth: Option<usize>,
    /// Graph family: how many seeds grow the k-hop neighbourhood (`None`: all).
    pub neighborhood_seed_top_k: Option<usize>,
    /// Extra per-type settings (`chunks_top_k`, `max_iter`, …; docs/retrievers.md).
    pub retriever_specific_config: Map<String, Value>,
}

impl RetrieverOptions {
    /// The vector-store filter for `node_name`, if one was given.
    pub fn node_set_filter(&self) -> Option<NodeSetFilter> {
        let names = self.node_name.clone().filter(|n| !n.is_empty())?;
        Some(match self.node_name_filter_operator {
            FilterOperator::Or => NodeSetFilter::Any(names),
            FilterOperator::And => NodeSetFilter::All(names),
        })
    }

    /// A non-negative integer from `retriever_specific_config`; a wrong type is a typed error.
    pub fn rsc_usize(&self, key: &str) -> Result<Option<usize>> {
        match self.retriever_specific_config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                v.as_u64().and_then(|n| usize::try_from(n).ok()).map(Some).ok_or_else(|| RecallError::Validation {
                    name: "InvalidRetrieverConfig",
                    message: format!("retriever_specific_config['{key}'] must be a non-negative integer, got {v}."),
                })
            }
        }
    }

    /// A boolean from `retriever_specific_config`.
    pub fn rsc_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.retriever_specific_config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(RecallError::Validation {
                name: "InvalidRetrieverConfig",
                message: format!("retriever_specific_config['{key}'] must be true or false, got {v}."),
            }),
        }
    }

    /// A string from `retriever_specific_config`.
    pub fn rsc_str(&self, key: &str) -> Result<Option<String>> {
        match self.retriever_specific_config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(RecallError::Validation {
                name: "InvalidRetrieverConfig",
                message: format!("retriever_specific_config['{key}'] must be a string, got {v}."),
            }),
        }
    }
}

/// What an `only_context` call shows for a single-prompt completion type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptPreview {
    pub user_prompt: String,
    pub system_prompt: String,
}

/// What a retriever hands the LLM: one string or a list of passages.
#[derive(Debug, Clone, PartialEq)]
pub enum RetrievedContext {
    Text(String),
    List(Vec<String>),
}

impl RetrievedContext {
    pub fn is_empty(&self) -> bool {
        match self {
            RetrievedContext::Text(s) => s.is_empty(),
            RetrievedContext::List(l) => l.is_empty(),
        }
    }

    /// The truthy entries, as `only_context` returns them.
    pub fn entries(&self) -> Vec<String> {
        match self {
            RetrievedContext::Text(s) if s.is_empty() => Vec::new(),
            RetrievedContext::Text(s) => vec![s.clone()],
            RetrievedContext::List(l) => l.iter().filter(|s| !s.is_empty()).cloned().collect(),
        }
    }

    pub fn as_text(&self) -> String {
        match self {
            RetrievedContext::Text(s) => s.clone(),
            RetrievedContext::List(l) => l.join("\n"),
        }
    }
}

/// The three-step retriever interface. Objects are JSON values (payload dicts),
/// so custom retrievers can return whatever shape they like.
#[async_trait]
pub trait Retriever: Send + Sync {
    /// Step 1: fetch raw objects.
    async fn get_retrieved_objects(
        &self,
        ctx: &RetrievalContext,
        query: &str,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>>;

    /// Step 2: build the context the LLM would see.
    async fn get_context_from_objects(
        &self,
        ctx: &RetrievalContext,
        query: &str,
        objects: &[Value],
        options: &RetrieverOptions,
    ) -> Result<RetrievedContext>;

    /// Step 3: the final output (an answer, or the payloads themselves for
    /// non-generative types). Skipped when `only_context` is set.
    async fn get_completion_from_context(
        &self,
        ctx: &RetrievalContext,
        query: &str,
        objects: &[Value],
        context: &RetrievedContext,
        options: &RetrieverOptions,
    ) -> Result<Option<Vec<Value>>>;

    /// For types that send exactly one templated prompt: the (user, system)
    /// prompt pair `only_context` returns instead of calling the LLM.
    async fn prompt_preview(
        &self,
        _ctx: &RetrievalContext,
        _query: &str,
        _context: &RetrievedContext,
        _options: &RetrieverOptions,
    ) -> Result<Option<PromptPreview>> {
        Ok(None)
    }

    /// Structured references to what was placed in the context
    /// (`metadata.evidence`, docs/retrievers.md). Default: none.
    async fn get_context_evidence(
        &self,
        _ctx: &RetrievalContext,
        _objects: &[Value],
        _options: &RetrieverOptions,
    ) -> Result<Vec<evidence::EvidenceReference>> {
        Ok(Vec::new())
    }

    /// Whether completion entries are answers (so a response schema applies).
    fn is_generative(&self) -> bool {
        false
    }

    /// Whether the type answers in a `response_schema`'s shape. A type that
    /// does not (GRAPH_SUMMARY_COMPLETION, every non-generative type)
    /// ignores the schema and answers as usual.
    fn structured_output(&self) -> bool {
        self.is_generative()
    }
}

/// Retrievers by search type. Built once, with explicit registrations; a
/// registration for a type replaces the built-in retriever for it.
#[derive(Clone, Default)]
pub struct RetrieverRegistry {
    retrievers: HashMap<SearchType, Arc<dyn Retriever>>,
}

impl RetrieverRegistry {
    /// An empty registry.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Every built-in retriever.
    pub fn with_builtins() -> Self {
        let mut r = Self::empty();
        let lexical = Arc::new(LexicalIndexCache::default());
        r.register(SearchType::Chunks, Arc::new(ChunksRetriever::default()));
        r.register(SearchType::Skills, Arc::new(SkillsRetriever));
        r.register(SearchType::Summaries, Arc::new(SummariesRetriever::default()));
        r.register(SearchType::ChunksLexical, Arc::new(LexicalChunksRetriever::new(lexical.clone())));
        r.register(SearchType::RagCompletion, Arc::new(CompletionRetriever::default()));
        r.register(SearchType::GraphCompletion, Arc::new(GraphCompletionRetriever));
        r.register(SearchType::GraphCompletionCot, Arc::new(GraphCompletionCotRetriever));
        r.register(SearchType::GraphCompletionContextExtension, Arc::new(GraphCompletionContextExtensionRetriever));
        r.register(SearchType::GraphSummaryCompletion, Arc::new(GraphSummaryCompletionRetriever));
        r.register(SearchType::GraphCompletionDecomposition, Arc::new(GraphCompletionDecompositionRetriever));
        r.register(SearchType::TripletCompletion, Arc::new(TripletRetriever::default()));
        r.register(SearchType::HybridCompletion, Arc::new(HybridRetriever::new(lexical.clone())));
        r.register(SearchType::Temporal, Arc::new(TemporalRetriever::new(lexical)));
        r.register(SearchType::CodingRules, Arc::new(CodingRulesRetriever));
        r.register(SearchType::Cypher, Arc::new(CypherRetriever));
        r.register(SearchType::NaturalLanguage, Arc::new(NaturalLanguageRetriever));
        r
    }

    pub fn register(&mut self, search_type: SearchType, retriever: Arc<dyn Retriever>) {
        self.retrievers.insert(search_type, retriever);
    }

    /// The retriever for a type; an unregistered type is an error, never an empty result.
    pub fn get(&self, search_type: SearchType) -> Result<Arc<dyn Retriever>> {
        self.retrievers.get(&search_type).cloned().ok_or_else(|| RecallError::unsupported_search_type(search_type))
    }

    pub fn contains(&self, search_type: SearchType) -> bool {
        self.retrievers.contains_key(&search_type)
    }
}
