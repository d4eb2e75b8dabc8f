//! Every search type of Cognee 1.6.5 (docs/retrievers.md, "The types"), serialised as its
//! SCREAMING_SNAKE name.

use serde::{Deserialize, Serialize};

use crate::RecallError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SearchType {
    Summaries,
    Chunks,
    RagCompletion,
    HybridCompletion,
    GraphCompletion,
    GraphCompletionDecomposition,
    GraphSummaryCompletion,
    Cypher,
    NaturalLanguage,
    GraphCompletionCot,
    GraphCompletionContextExtension,
    FeelingLucky,
    Temporal,
    CodingRules,
    ChunksLexical,
    AgenticCompletion,
    Code,
    GraphReport,
    Broad,
    Skills,
    TripletCompletion,
}

impl SearchType {
    pub const ALL: [SearchType; 21] = [
        SearchType::Summaries,
        SearchType::Chunks,
        SearchType::RagCompletion,
        SearchType::HybridCompletion,
        SearchType::GraphCompletion,
        SearchType::GraphCompletionDecomposition,
        SearchType::GraphSummaryCompletion,
        SearchType::Cypher,
        SearchType::NaturalLanguage,
        SearchType::GraphCompletionCot,
        SearchType::GraphCompletionContextExtension,
        SearchType::FeelingLucky,
        SearchType::Temporal,
        SearchType::CodingRules,
        SearchType::ChunksLexical,
        SearchType::AgenticCompletion,
        SearchType::Code,
        SearchType::GraphReport,
        SearchType::Broad,
        SearchType::Skills,
        SearchType::TripletCompletion,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SearchType::Summaries => "SUMMARIES",
            SearchType::Chunks => "CHUNKS",
            SearchType::RagCompletion => "RAG_COMPLETION",
            SearchType::HybridCompletion => "HYBRID_COMPLETION",
            SearchType::GraphCompletion => "GRAPH_COMPLETION",
            SearchType::GraphCompletionDecomposition => "GRAPH_COMPLETION_DECOMPOSITION",
            SearchType::GraphSummaryCompletion => "GRAPH_SUMMARY_COMPLETION",
            SearchType::Cypher => "CYPHER",
            SearchType::NaturalLanguage => "NATURAL_LANGUAGE",
            SearchType::GraphCompletionCot => "GRAPH_COMPLETION_COT",
            SearchType::GraphCompletionContextExtension => "GRAPH_COMPLETION_CONTEXT_EXTENSION",
            SearchType::FeelingLucky => "FEELING_LUCKY",
            SearchType::Temporal => "TEMPORAL",
            SearchType::CodingRules => "CODING_RULES",
            SearchType::ChunksLexical => "CHUNKS_LEXICAL",
            SearchType::AgenticCompletion => "AGENTIC_COMPLETION",
            SearchType::Code => "CODE",
            SearchType::GraphReport => "GRAPH_REPORT",
            SearchType::Broad => "BROAD",
            SearchType::Skills => "SKILLS",
            SearchType::TripletCompletion => "TRIPLET_COMPLETION",
        }
    }

    /// The `kind` of a result item produced by this type (docs/retrievers.md, "Result items").
    pub fn result_kind(self) -> &'static str {
        match self {
            SearchType::GraphCompletion
            | SearchType::GraphCompletionCot
            | SearchType::GraphCompletionDecomposition
            | SearchType::GraphCompletionContextExtension
            | SearchType::GraphSummaryCompletion
            | SearchType::HybridCompletion
            | SearchType::AgenticCompletion => "graph_completion",
            SearchType::RagCompletion => "rag_completion",
            SearchType::Cypher => "cypher",
            SearchType::NaturalLanguage => "natural_language",
            SearchType::Temporal => "temporal",
            SearchType::CodingRules => "coding_rule",
            SearchType::Code => "code",
            SearchType::Chunks | SearchType::ChunksLexical => "chunk",
            SearchType::Summaries => "summary",
            SearchType::Skills => "skill",
            _ => "unknown",
        }
    }
}

impl std::fmt::Display for SearchType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SearchType {
    type Err = RecallError;

    /// Accepts the SCREAMING_SNAKE name, case-insensitively (`chunks` works on the CLI).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let upper = s.trim().to_ascii_uppercase().replace('-', "_");
        SearchType::ALL.into_iter().find(|t| t.as_str() == upper).ok_or_else(|| {
            RecallError::invalid_input(format!(
                "Unknown search type '{s}'. Valid values: {}",
                SearchType::ALL.map(|t| t.as_str()).join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_screaming_snake_names() {
        for t in SearchType::ALL {
            let json = serde_json::to_string(&t).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            let back: SearchType = serde_json::from_str(&json).unwrap_or(SearchType::Broad);
            assert_eq!(back, t);
        }
    }

    #[test]
    fn parses_case_insensitively_and_rejects_unknown() {
        assert_eq!("chunks".parse::<SearchType>().ok(), Some(SearchType::Chunks));
        assert_eq!("graph-completion-cot".parse::<SearchType>().ok(), Some(SearchType::GraphCompletionCot));
        assert!("NOPE".parse::<SearchType>().is_err());
    }
}
