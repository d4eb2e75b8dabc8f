//! Retrievers: one module per search type, each implementing the three-step
//! interface of docs/retrievers.md (`get_retrieved_objects` → `get_context_from_objects`
//! → `get_completion_from_context`), and the registry that maps a search type
//! to its retriever.

pub mod agentic;
mod chunks;
mod coding_rules;
pub mod completion;
mod cypher;
pub mod evidence;
pub mod graph;
mod hybrid;
pub mod lexical;
pub mod merge;
pub mod prompts;
mod rag;
mod registry;
mod retriever;
pub mod schema;
mod skills;
mod summaries;
mod temporal;
mod triplet;

pub use agentic::{AgentCaller, AgentTool, AgenticRetriever, ToolContext};
pub use chunks::ChunksRetriever;
pub use coding_rules::CodingRulesRetriever;
pub use cypher::{CypherRetriever, NaturalLanguageRetriever};
pub use graph::{
    brute_force_triplet_search, GraphCompletionContextExtensionRetriever, GraphCompletionCotRetriever,
    GraphCompletionDecompositionRetriever, GraphCompletionRetriever, GraphFamily, GraphStrategy,
    GraphSummaryCompletionRetriever, Triplet, TripletSearch,
};
pub use hybrid::{HybridFamily, HybridRetriever, HybridStrategy};
pub use lexical::{Bm25Index, LexicalChunksRetriever, LexicalIndexCache};
pub use rag::{CompletionRetriever, PassageFamily, PassageStrategy};
pub use recall_core::{FilterOperator, SearchOptions};
pub use registry::RetrieverRegistry;
pub use retriever::{DatasetPorts, LlmContext, PromptPreview, Retriever, RetrieverCall, RetrieverOptions};
pub use skills::SkillsRetriever;
pub use summaries::SummariesRetriever;
pub use temporal::TemporalRetriever;
pub use triplet::TripletRetriever;
