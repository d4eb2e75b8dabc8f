//! The registry that maps a search type to its retriever.

use std::collections::HashMap;
use std::sync::Arc;

use recall_core::{RecallError, Result, SearchType};

use crate::{
    AgenticRetriever, ChunksRetriever, CodingRulesRetriever, CompletionRetriever, CypherRetriever,
    GraphCompletionContextExtensionRetriever, GraphCompletionCotRetriever, GraphCompletionDecompositionRetriever,
    GraphCompletionRetriever, GraphSummaryCompletionRetriever, HybridRetriever, LexicalChunksRetriever,
    LexicalIndexCache, NaturalLanguageRetriever, Retriever, SkillsRetriever, SummariesRetriever, TemporalRetriever,
    TripletRetriever,
};

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
        r.register(SearchType::GraphCompletion, Arc::new(GraphCompletionRetriever::default()));
        r.register(SearchType::GraphCompletionCot, Arc::new(GraphCompletionCotRetriever::default()));
        r.register(
            SearchType::GraphCompletionContextExtension,
            Arc::new(GraphCompletionContextExtensionRetriever::default()),
        );
        r.register(SearchType::GraphSummaryCompletion, Arc::new(GraphSummaryCompletionRetriever::default()));
        r.register(SearchType::GraphCompletionDecomposition, Arc::new(GraphCompletionDecompositionRetriever));
        r.register(SearchType::TripletCompletion, Arc::new(TripletRetriever::default()));
        r.register(SearchType::HybridCompletion, Arc::new(HybridRetriever::new(lexical.clone())));
        r.register(SearchType::Temporal, Arc::new(TemporalRetriever::new(lexical)));
        r.register(SearchType::CodingRules, Arc::new(CodingRulesRetriever));
        r.register(SearchType::Cypher, Arc::new(CypherRetriever));
        r.register(SearchType::NaturalLanguage, Arc::new(NaturalLanguageRetriever));
        r.register(SearchType::AgenticCompletion, Arc::new(AgenticRetriever::default()));
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
