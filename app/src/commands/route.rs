//! `recall route` and `recall skill-gate`: what the rules decide for a
//! question, without asking memory.

use recall_core::Result;

use super::print_json;

/// Explains the automatic search-type choice.
pub(crate) fn route(query: &str) -> Result<()> {
    let decision = recall_routing::route_query(query);
    print_json(&serde_json::json!({"search_type": decision.search_type, "rule": decision.rule}))
}

/// Explains the skill gate.
pub(crate) fn skill_gate(query: &str) -> Result<()> {
    print_json(&recall_skills::should_search_skills(query))
}
