//! The query router: picks a search type for a question when the caller pins
//! none. The full rule set (quoted phrase → CHUNKS_LEXICAL, coding-rules
//! phrases → CODING_RULES, dated questions → TEMPORAL) lands with the recall
//! issue; until then every question takes the default rule.

use recall_core::SearchType;

/// The router's decision and the name of the rule that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteDecision {
    pub search_type: SearchType,
    pub rule: &'static str,
}

/// Chooses a search type for `query`.
pub fn route_query(_query: &str) -> RouteDecision {
    RouteDecision { search_type: SearchType::HybridCompletion, rule: "default" }
}
