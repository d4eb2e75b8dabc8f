//! Retrievers: one module per search type, each implementing the three-step
//! interface of seed 002 (`get_retrieved_objects` → `get_context_from_objects`
//! → `get_completion_from_context`), and the registry that maps a search type
//! to its retriever.

mod chunks;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use recall_core::ports::{Embedder, GraphStore, LlmClient, NodeSetFilter, VectorStore};
use recall_core::{Dataset, RecallError, Result, SearchType};
use serde_json::{Map, Value};

pub use chunks::ChunksRetriever;

/// The stores and models a retriever works with, bound to one dataset.
#[derive(Clone)]
pub struct RetrievalContext {
    pub dataset: Dataset,
    pub graph: Arc<dyn GraphStore>,
    pub vectors: Arc<dyn VectorStore>,
    pub embedder: Arc<dyn Embedder>,
    pub llm: Option<Arc<dyn LlmClient>>,
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
    pub system_prompt: Option<String>,
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
        r.register(SearchType::Chunks, Arc::new(ChunksRetriever::default()));
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
