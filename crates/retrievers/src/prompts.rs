//! Prompt templates: the files under `config/prompts/`, compiled into the
//! binary so it runs from anywhere, rendered with MiniJinja (Jinja2 semantics:
//! no autoescaping for text, one trailing newline removed).

use std::collections::BTreeMap;

use minijinja::Environment;
use recall_core::{RecallError, Result};
use serde::Serialize;

macro_rules! builtin {
    ($($name:literal),* $(,)?) => {
        /// Every built-in template, by file name.
        pub const BUILTIN: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../../config/prompts/", $name)))),*
        ];
    };
}

builtin!(
    "answer_simple_question.txt",
    "graph_context_for_question.txt",
    "hybrid_context_for_question.txt",
    "context_for_question.txt",
    "summarize_search_results.txt",
    "cot_validation_system_prompt.txt",
    "cot_validation_user_prompt.txt",
    "cot_followup_system_prompt.txt",
    "cot_followup_user_prompt.txt",
    "natural_language_retriever_system.txt",
    "search_type_selector_prompt.txt",
    "decompose_query.txt",
    "answer_from_subanswers.txt",
    "extract_query_time.txt",
    "agentic_system.txt",
    "agentic_user.txt",
    "text_to_sql_system.txt",
);

pub const ANSWER_SIMPLE_QUESTION: &str = "answer_simple_question.txt";
pub const GRAPH_CONTEXT_FOR_QUESTION: &str = "graph_context_for_question.txt";
pub const HYBRID_CONTEXT_FOR_QUESTION: &str = "hybrid_context_for_question.txt";
pub const CONTEXT_FOR_QUESTION: &str = "context_for_question.txt";
pub const SUMMARIZE_SEARCH_RESULTS: &str = "summarize_search_results.txt";
pub const COT_VALIDATION_SYSTEM: &str = "cot_validation_system_prompt.txt";
pub const COT_VALIDATION_USER: &str = "cot_validation_user_prompt.txt";
pub const COT_FOLLOWUP_SYSTEM: &str = "cot_followup_system_prompt.txt";
pub const COT_FOLLOWUP_USER: &str = "cot_followup_user_prompt.txt";
pub const NATURAL_LANGUAGE_SYSTEM: &str = "natural_language_retriever_system.txt";
pub const SEARCH_TYPE_SELECTOR: &str = "search_type_selector_prompt.txt";
pub const DECOMPOSE_QUERY: &str = "decompose_query.txt";
pub const ANSWER_FROM_SUBANSWERS: &str = "answer_from_subanswers.txt";
pub const EXTRACT_QUERY_TIME: &str = "extract_query_time.txt";
pub const AGENTIC_SYSTEM: &str = "agentic_system.txt";
pub const AGENTIC_USER: &str = "agentic_user.txt";
pub const TEXT_TO_SQL_SYSTEM: &str = "text_to_sql_system.txt";

/// Whether `name` is a built-in template.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN.iter().any(|(n, _)| *n == name)
}

/// The source of a built-in template.
pub fn load(name: &str) -> Result<String> {
    load_with(name, &BTreeMap::new())
}

/// The source of a template: a built-in name, else a file the engine read
/// for this request (`files`, by the path as given). Nothing here reads a
/// file: a path from a request is only ever read by the engine, inside its
/// allowed prompt directories.
pub fn load_with(name_or_path: &str, files: &BTreeMap<String, String>) -> Result<String> {
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return Ok((*text).to_string());
    }
    files.get(name_or_path).cloned().ok_or_else(|| {
        RecallError::NotFound(format!("Prompt template '{name_or_path}' is neither built in nor a loaded prompt file."))
    })
}
/// Renders a template source with named string variables.
pub fn render_source(source: &str, vars: &[(&str, &str)]) -> Result<String> {
    let env = Environment::new();
    let ctx: BTreeMap<&str, &str> = vars.iter().copied().collect();
    env.render_str(source, ctx).map_err(|e| RecallError::invalid_input(format!("prompt template error: {e}")))
}

/// Loads and renders a template.
pub fn render(name_or_path: &str, vars: &[(&str, &str)]) -> Result<String> {
    render_source(&load(name_or_path)?, vars)
}

/// Renders a template with any serialisable context.
pub fn render_with<S: Serialize>(name_or_path: &str, ctx: S) -> Result<String> {
    let env = Environment::new();
    env.render_str(&load(name_or_path)?, ctx)
        .map_err(|e| RecallError::invalid_input(format!("prompt template error: {e}")))
}

/// A system prompt as a Jinja template is read: loaded, one trailing newline removed.
pub fn system(name_or_path: &str) -> Result<String> {
    render(name_or_path, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_renders_and_loses_one_trailing_newline() {
        for (name, source) in BUILTIN {
            let out = render(name, &[("question", "Q"), ("context", "C")]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!out.ends_with('\n'), "{name}");
            assert!(source.ends_with('\n'), "{name} should end with a newline on disk");
        }
    }

    #[test]
    fn user_templates_snapshot() {
        for name in [GRAPH_CONTEXT_FOR_QUESTION, HYBRID_CONTEXT_FOR_QUESTION, CONTEXT_FOR_QUESTION] {
            let out = render(name, &[("question", "Who wrote it?"), ("context", "Ada wrote it.")]).unwrap_or_default();
            insta::assert_snapshot!(name, out);
        }
        insta::assert_snapshot!("answer_simple_question", system(ANSWER_SIMPLE_QUESTION).unwrap_or_default());
        let cot = render(COT_VALIDATION_USER, &[("query", "q"), ("answer", "a"), ("context", "c")]).unwrap_or_default();
        insta::assert_snapshot!("cot_validation_user", cot);
    }

    #[test]
    fn no_autoescape_and_missing_file_is_typed() {
        let out = render(CONTEXT_FOR_QUESTION, &[("question", "<a & 'b'>"), ("context", "\"x\"")]).unwrap_or_default();
        assert!(out.contains("<a & 'b'>") && out.contains("\"x\""));
        assert!(matches!(load("/nonexistent/prompt.txt"), Err(RecallError::NotFound(_))));
    }
}
