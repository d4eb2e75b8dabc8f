//! The tools an agentic loop offers its model (docs/agentic.md, "Tools"):
//! the two built-ins — `load_skill` over the loop's skills and
//! `memory_search` over the dataset's graph — and the tools a library user
//! registers ([`AgentTool`]).

use async_trait::async_trait;
use recall_core::{DatasetId, Permission, RecallError, Result};
use recall_skills::Skill;
use serde_json::{json, Map, Value};

use crate::graph::{brute_force_triplet_search, resolve_edges_to_text, TripletSearch};
use crate::{DatasetPorts, RetrieverOptions};

/// The built-in tool that reads a skill's procedure.
pub const LOAD_SKILL: &str = "load_skill";
/// The built-in tool that searches the dataset's graph.
pub const MEMORY_SEARCH: &str = "memory_search";
/// The longest procedure `load_skill` returns, in characters.
pub const MAX_PROCEDURE_CHARS: usize = 12_000;
/// `memory_search`'s `top_k` when the model gives none.
const MEMORY_SEARCH_TOP_K: usize = 5;

/// What a tool sees of the loop it runs in.
pub struct ToolContext<'a> {
    /// The dataset the loop searches, with its stores.
    pub ports: &'a DatasetPorts,
    /// The skills of this loop (the caller's, resolved in the dataset).
    pub skills: &'a [Skill],
}

/// A tool the agentic loop can offer: registered on the engine
/// (`EngineBuilder::register_agent_tool`), offered on every dataset or on
/// one, run with the model's arguments. Arguments are not checked against
/// `input_schema` before `call`: each tool checks its own.
#[async_trait]
pub trait AgentTool: Send + Sync {
    /// The name the model calls it by (unique: a later registration with the
    /// same name replaces the earlier one).
    fn name(&self) -> &str;

    /// One line the model reads to decide whether to call it.
    fn description(&self) -> &str;

    /// The JSON Schema of its arguments; the model sees the property names.
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    /// The permission on the loop's dataset the caller needs; a caller
    /// without it fails the whole request with 403 when the model calls
    /// the tool.
    fn permission_required(&self) -> Permission {
        Permission::Read
    }

    /// The one dataset it is offered on; `None`: every dataset.
    fn dataset_id(&self) -> Option<DatasetId> {
        None
    }

    /// Runs the tool. An error becomes the result text
    /// `ERROR: <name> failed: <message>`, which the model reads.
    async fn call(&self, ctx: &ToolContext<'_>, arguments: &Map<String, Value>) -> Result<String>;
}

/// `load_skill`: a loop skill's procedure, by exact name.
pub struct LoadSkill;

#[async_trait]
impl AgentTool for LoadSkill {
    fn name(&self) -> &str {
        LOAD_SKILL
    }

    fn description(&self) -> &str {
        "Loads a listed skill's full procedure by name; use it when a skill's description fits the task."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string", "description": "The skill's name, exactly as listed."}}, "required": ["name"]})
    }

    async fn call(&self, ctx: &ToolContext<'_>, arguments: &Map<String, Value>) -> Result<String> {
        let name = arguments.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            return Err(RecallError::invalid_input("load_skill requires a 'name' argument"));
        }
        let Some(skill) = ctx.skills.iter().find(|s| s.name == name) else {
            let mut names: Vec<&str> = ctx.skills.iter().map(|s| s.name.as_str()).collect();
            names.sort_unstable();
            let available = if names.is_empty() { "(none in scope)".to_string() } else { names.join(", ") };
            return Err(RecallError::invalid_input(format!(
                "Skill '{name}' is not in the active skill set. Available: {available}"
            )));
        };
        let body = if skill.procedure.trim().is_empty() {
            "(this skill has no procedure body)".to_string()
        } else {
            truncate(&skill.procedure, MAX_PROCEDURE_CHARS)
        };
        Ok(format!("# Skill: {}\n{body}", skill.name))
    }
}

/// `memory_search`: a triplet search over the dataset's graph with the
/// library defaults (no node filter, the request's knobs ignored).
pub struct MemorySearch;

/// `top_k` as the model gave it: an integer, a numeric string or a number
/// (cut to an integer); at least 1.
fn top_k_argument(value: Option<&Value>) -> Result<usize> {
    let invalid = |m: &str| RecallError::invalid_input(format!("memory_search {m}"));
    let n = match value {
        None | Some(Value::Null) => return Ok(MEMORY_SEARCH_TOP_K),
        Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        Some(_) => None,
    }
    .ok_or_else(|| invalid("'top_k' must be an integer"))?;
    usize::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| invalid("'top_k' must be greater than 0"))
}

#[async_trait]
impl AgentTool for MemorySearch {
    fn name(&self) -> &str {
        MEMORY_SEARCH
    }

    fn description(&self) -> &str {
        "Searches this dataset's knowledge graph for relationships about a query (another angle than the question)."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "top_k": {"type": "integer", "default": MEMORY_SEARCH_TOP_K, "description": "How many relationships."}
        }, "required": ["query"]})
    }

    async fn call(&self, ctx: &ToolContext<'_>, arguments: &Map<String, Value>) -> Result<String> {
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default();
        if query.trim().is_empty() {
            return Err(RecallError::invalid_input("memory_search requires a 'query' argument"));
        }
        let top_k = top_k_argument(arguments.get("top_k"))?;
        let params = TripletSearch::from_options(&RetrieverOptions::with_top_k(top_k), top_k)?;
        let triplets = match brute_force_triplet_search(ctx.ports, query, &params).await {
            Err(RecallError::NoData(_)) => Vec::new(),
            other => other?,
        };
        Ok(if triplets.is_empty() { "(no results)".to_string() } else { resolve_edges_to_text(&triplets) })
    }
}

/// `text` cut to `max` characters, marked when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}\n... [truncated]", &text[..at]),
        None => text.to_string(),
    }
}

/// A tool's line in the prompt: name, permission, description and the
/// names of its arguments (never their types).
pub(crate) fn tool_line(tool: &dyn AgentTool) -> String {
    let schema = tool.input_schema();
    let args: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let args = if args.is_empty() { "no args".to_string() } else { args.join(", ") };
    format!("- `{}` (perm: {}): {} [args: {args}]", tool.name(), tool.permission_required(), tool.description())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn top_k_reads_like_an_integer() {
        assert_eq!(top_k_argument(None).unwrap(), 5);
        assert_eq!(top_k_argument(Some(&json!("7"))).unwrap(), 7);
        assert_eq!(top_k_argument(Some(&json!(7.9))).unwrap(), 7);
        assert_eq!(top_k_argument(Some(&json!(true))).unwrap(), 1);
        assert_eq!(
            top_k_argument(Some(&json!("x"))).unwrap_err().to_string(),
            "memory_search 'top_k' must be an integer"
        );
        assert_eq!(
            top_k_argument(Some(&json!(0))).unwrap_err().to_string(),
            "memory_search 'top_k' must be greater than 0"
        );
        assert!(top_k_argument(Some(&json!([1]))).is_err());
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("ééé", 2), "éé\n... [truncated]");
    }

    #[test]
    fn a_tool_line_names_its_arguments() {
        assert_eq!(
            tool_line(&MemorySearch),
            format!("- `memory_search` (perm: read): {} [args: query, top_k]", MemorySearch.description())
        );
        struct Bare;
        #[async_trait]
        impl AgentTool for Bare {
            fn name(&self) -> &str {
                "bare"
            }
            fn description(&self) -> &str {
                "Does nothing."
            }
            async fn call(&self, _: &ToolContext<'_>, _: &Map<String, Value>) -> Result<String> {
                Ok(String::new())
            }
        }
        assert_eq!(tool_line(&Bare), "- `bare` (perm: read): Does nothing. [args: no args]");
    }
}
