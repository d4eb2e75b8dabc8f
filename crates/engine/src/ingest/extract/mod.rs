//! Extractors and summarizers behind the `GraphExtractor` and `Summarizer`
//! ports: LLM-backed ones (structured output through `LlmClient`) and offline
//! ones used when no LLM is configured.

mod extractive;
mod llm;
mod rule_based;

pub use extractive::ExtractiveSummarizer;
pub use llm::{LlmGraphExtractor, LlmSummarizer, GENERATE_GRAPH_PROMPT, SUMMARIZE_CONTENT_PROMPT};
pub use rule_based::RuleBasedExtractor;
