//! The three-step retriever interface (docs/retrievers.md) and what every
//! retriever receives: the stores bound to one dataset, and the request's options.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use recall_core::ports::{Embedder, GraphStore, LlmClient, NodeSetFilter, VectorStore};
use recall_core::{Dataset, FilterOperator, RecallError, Result, SearchOptions};
use serde_json::Value;

use crate::chunks::passages;
use crate::evidence;

/// The stores and models a retriever works with, bound to one dataset.
#[derive(Clone)]
pub struct DatasetPorts {
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
    /// Who an AGENTIC_COMPLETION loop acts for on this dataset (set by the
    /// engine for that type only; tool calls are checked against it).
    pub caller: Option<crate::AgentCaller>,
    /// The dataset's ranking sketch at `data_version`, when the engine has
    /// it in memory and nothing of the dataset is hidden: the triplet search
    /// ranks on it instead of reading the store (docs/retrievers.md, "The
    /// sketch cache").
    pub sketch: Option<Arc<crate::graph::SketchIndex>>,
}

impl DatasetPorts {
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

/// Per-call options every retriever receives (the retriever factory's
/// arguments): the request's options as the engine validated them, and the
/// prompt files it read for them.
#[derive(Debug, Clone)]
pub struct RetrieverOptions {
    /// The request's options, under Cognee's names.
    pub search: SearchOptions,
    /// Template sources of the prompt files this request names
    /// (`search.system_prompt_path`), by the path as given
    /// ([`crate::prompts::load_with`]). The engine reads them from its allowed
    /// prompt directories before any retriever runs; retrievers never read files.
    pub prompt_files: BTreeMap<String, String>,
    /// The conversation a session-aware completion carries (its history and
    /// guidance blocks), set by the engine for the completion types when
    /// session memory is on ([`crate::completion::preview`] places it).
    pub conversation: Option<recall_core::session::Conversation>,
}

/// No options given: every retriever uses its own defaults, `top_k` included
/// (unlike a request, whose `top_k` defaults to 15).
impl Default for RetrieverOptions {
    fn default() -> Self {
        Self::new(SearchOptions { top_k: None, ..SearchOptions::default() })
    }
}

impl RetrieverOptions {
    pub fn new(search: SearchOptions) -> Self {
        Self { search, prompt_files: BTreeMap::new(), conversation: None }
    }

    /// Options with only a `top_k` (the skill gate, tests).
    pub fn with_top_k(top_k: usize) -> Self {
        Self::new(SearchOptions { top_k: i64::try_from(top_k).ok(), ..SearchOptions::default() })
    }

    /// `None` lets the retriever use its own default.
    pub fn top_k(&self) -> Option<usize> {
        self.search.top_k()
    }

    /// The same options asking for a plain-text answer (a step whose
    /// output feeds another step, never the caller).
    pub fn without_response_schema(&self) -> Self {
        let mut plain = self.clone();
        plain.search.response_schema = None;
        plain
    }

    /// The vector-store filter for `node_name`, if one was given.
    pub fn node_set_filter(&self) -> Option<NodeSetFilter> {
        let names = self.search.node_name.clone().filter(|n| !n.is_empty())?;
        Some(match self.search.filter_operator() {
            FilterOperator::Or => NodeSetFilter::Any(names),
            FilterOperator::And => NodeSetFilter::All(names),
        })
    }

    /// A non-negative integer from `retriever_specific_config`; a wrong type is a typed error.
    pub fn rsc_usize(&self, key: &str) -> Result<Option<usize>> {
        match self.search.retriever_specific_config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                v.as_u64().and_then(|n| usize::try_from(n).ok()).map(Some).ok_or_else(|| RecallError::Validation {
                    name: "InvalidRetrieverConfig",
                    message: format!("retriever_specific_config['{key}'] must be a non-negative integer, got {v}."),
                })
            }
        }
    }

    /// A finite, non-negative number from `retriever_specific_config` (a weight).
    pub fn rsc_weight(&self, key: &str) -> Result<Option<f64>> {
        match self.search.retriever_specific_config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                v.as_f64().filter(|w| w.is_finite() && *w >= 0.0).map(Some).ok_or_else(|| RecallError::Validation {
                    name: "InvalidRetrieverConfig",
                    message: format!("retriever_specific_config['{key}'] must be a non-negative number, got {v}."),
                })
            }
        }
    }

    /// A boolean from `retriever_specific_config`.
    pub fn rsc_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.search.retriever_specific_config.get(key) {
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
        match self.search.retriever_specific_config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(RecallError::Validation {
                name: "InvalidRetrieverConfig",
                message: format!("retriever_specific_config['{key}'] must be a string, got {v}."),
            }),
        }
    }
}

/// One search of one dataset, as every step of a retriever receives it:
/// the dataset's stores, the question, and the request's options.
#[derive(Clone, Copy)]
pub struct RetrieverCall<'a> {
    pub ctx: &'a DatasetPorts,
    pub query: &'a str,
    pub options: &'a RetrieverOptions,
}

impl<'a> RetrieverCall<'a> {
    pub fn new(ctx: &'a DatasetPorts, query: &'a str, options: &'a RetrieverOptions) -> Self {
        Self { ctx, query, options }
    }

    /// The same call with another question (a sub-query, a second retrieval lane).
    pub fn with_query(self, query: &'a str) -> Self {
        Self { query, ..self }
    }

    /// The same call with other options.
    pub fn with_options(self, options: &'a RetrieverOptions) -> Self {
        Self { options, ..self }
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
pub enum LlmContext {
    Text(String),
    List(Vec<String>),
}

impl LlmContext {
    pub fn is_empty(&self) -> bool {
        match self {
            LlmContext::Text(s) => s.is_empty(),
            LlmContext::List(l) => l.is_empty(),
        }
    }

    /// The truthy entries, as `only_context` returns them.
    pub fn entries(&self) -> Vec<String> {
        match self {
            LlmContext::Text(s) if s.is_empty() => Vec::new(),
            LlmContext::Text(s) => vec![s.clone()],
            LlmContext::List(l) => l.iter().filter(|s| !s.is_empty()).cloned().collect(),
        }
    }

    pub fn as_text(&self) -> String {
        match self {
            LlmContext::Text(s) => s.clone(),
            LlmContext::List(l) => l.join("\n"),
        }
    }
}

/// The three-step retriever interface. Objects are JSON values (payload dicts),
/// so custom retrievers can return whatever shape they like. Only step 1 is
/// required: steps 2 and 3 default to what a retrieval-only type does (the
/// objects' `text`s as the context, the objects themselves as the output).
#[async_trait]
pub trait Retriever: Send + Sync {
    /// Whether the retriever ranks the dataset's graph (the triplet search
    /// of [`crate::graph`]), so the engine hands it the sketch cache
    /// ([`DatasetPorts::sketch`]) and keeps that cache loaded. A retriever
    /// that never ranks the graph answers `false`, and a process that only
    /// runs such searches never loads a sketch (hundreds of MiB at a
    /// million chunks). The default is `true`: a retriever that says nothing
    /// gets the sketch, as every retriever did before this existed.
    fn ranks_the_graph(&self) -> bool {
        true
    }

    /// Step 1: fetch raw objects.
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>>;

    /// Step 2: build the context the LLM would see. Default: the objects'
    /// `text` fields, joined by newlines.
    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::Text(passages(objects)))
    }

    /// Step 3: the final output (an answer, or the payloads themselves for
    /// non-generative types). Skipped when `only_context` is set. Default:
    /// the objects, each one result item.
    async fn get_completion_from_context(
        &self,
        _call: &RetrieverCall<'_>,
        objects: &[Value],
        _context: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        Ok(Some(objects.to_vec()))
    }

    /// For types that send exactly one templated prompt: the (user, system)
    /// prompt pair `only_context` returns instead of calling the LLM.
    async fn prompt_preview(&self, _call: &RetrieverCall<'_>, _context: &LlmContext) -> Result<Option<PromptPreview>> {
        Ok(None)
    }

    /// Structured references to what was placed in the context
    /// (`metadata.evidence`, docs/retrievers.md). Default: none.
    async fn get_context_evidence(
        &self,
        _call: &RetrieverCall<'_>,
        _objects: &[Value],
    ) -> Result<Vec<evidence::EvidenceReference>> {
        Ok(Vec::new())
    }

    /// Merges the objects of a session turn's two retrievals — with the
    /// question (`primary`) and with the conversational query (`secondary`)
    /// — into the objects its context is built from. Default: the primary
    /// objects, or the secondary ones when there are none.
    fn merge_retrieved_objects(
        &self,
        primary: Vec<Value>,
        secondary: Vec<Value>,
        _options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        Ok(if primary.is_empty() { secondary } else { primary })
    }

    /// The graph elements the objects hold, recorded on a session's QA
    /// entry (`{"node_ids": [...], "edge_ids": [...]}`) so that feedback on
    /// the answer reaches them. Default: none.
    fn used_graph_element_ids(&self, _objects: &[Value]) -> Option<Value> {
        None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_leave_top_k_to_each_retriever() {
        assert_eq!(RetrieverOptions::default().top_k(), None);
        assert_eq!(RetrieverOptions::with_top_k(7).top_k(), Some(7));
        // A request's options keep the request default.
        assert_eq!(RetrieverOptions::new(SearchOptions::default()).top_k(), Some(15));
    }
}
