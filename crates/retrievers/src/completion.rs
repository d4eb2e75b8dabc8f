//! The single-prompt completion step shared by every generative retriever
//! (retrievers.md §1.6): the system prompt, the rendered user prompt, the LLM
//! call, structured output validated against its schema, and references.

use recall_core::ports::ChatRequest;
use recall_core::{RecallError, Result};
use serde_json::Value;

use crate::prompts;
use crate::{PromptPreview, RetrievalContext, RetrieverOptions};

/// The system prompt: the caller's `system_prompt` if non-blank, else the
/// template at `system_prompt_path`, else the retriever's default template.
pub fn system_prompt(options: &RetrieverOptions, default_path: &str) -> Result<String> {
    if let Some(s) = options.system_prompt.as_deref().filter(|s| !s.trim().is_empty()) {
        return Ok(s.to_string());
    }
    let name = options.system_prompt_path.as_deref().unwrap_or(default_path);
    prompts::render_source(&prompts::load_with(name, &options.prompt_files)?, &[])
}

/// The (user, system) prompt pair of a single-prompt completion.
pub fn build_prompts(
    user_template: &str,
    default_system: &str,
    question: &str,
    context: &str,
    options: &RetrieverOptions,
) -> Result<PromptPreview> {
    Ok(PromptPreview {
        user_prompt: prompts::render(user_template, &[("question", question), ("context", context)])?,
        system_prompt: system_prompt(options, default_system)?,
    })
}

/// The prompt pair of a single-prompt completion over `context`, or `None`
/// when the context is empty (no prompt is sent then).
pub fn preview(
    user_template: &str,
    question: &str,
    context: &crate::RetrievedContext,
    options: &RetrieverOptions,
) -> Result<Option<PromptPreview>> {
    if context.is_empty() {
        return Ok(None);
    }
    build_prompts(user_template, prompts::ANSWER_SIMPLE_QUESTION, question, &context.as_text(), options).map(Some)
}

/// A free-text LLM call.
pub async fn chat(ctx: &RetrievalContext, who: &str, system: &str, user: &str) -> Result<String> {
    ctx.require_llm(who)?.chat(&ChatRequest::new(system, user)).await
}

/// Asks the LLM and returns the answer: a string, or (with a response schema)
/// a JSON value that validates against it. An answer that does not validate
/// is asked for once more, then rejected with a typed error.
pub async fn generate(
    ctx: &RetrievalContext,
    who: &str,
    prompt: &PromptPreview,
    options: &RetrieverOptions,
) -> Result<Value> {
    let llm = ctx.require_llm(who)?;
    let request = ChatRequest::new(prompt.system_prompt.clone(), prompt.user_prompt.clone());
    let Some(schema) = options.response_schema.as_ref() else {
        return Ok(Value::String(llm.chat(&request).await?));
    };
    let validator = compile_schema(schema)?;
    let mut last_error = String::new();
    for _ in 0..2 {
        let value = llm.structured(&request, "ResponseModel", schema).await?;
        match validation_errors(&validator, &value) {
            None => return Ok(value),
            Some(e) => last_error = e,
        }
    }
    Err(RecallError::Provider(format!("The LLM's structured answer does not match the response schema: {last_error}")))
}

/// Compiles a response schema; an invalid schema is a 422 validation error.
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator> {
    if !schema.is_object() {
        return Err(invalid_schema("the schema must be a JSON object"));
    }
    jsonschema::validator_for(schema).map_err(|e| invalid_schema(&e.to_string()))
}

fn invalid_schema(why: &str) -> RecallError {
    RecallError::Validation { name: "InvalidResponseSchemaError", message: format!("Invalid response schema: {why}") }
}

fn validation_errors(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{} at '{}'", e, e.instance_path)).collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// A structured answer as text for follow-up prompts (COT): `[Structured Response]\n<json>`.
pub fn answer_text(answer: &Value) -> String {
    match answer {
        Value::String(s) => s.clone(),
        other => format!("[Structured Response]\n{other}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schema_validation_reports_what_is_wrong() {
        let schema = json!({"type": "object", "properties": {"year": {"type": "integer"}}, "required": ["year"]});
        let v = compile_schema(&schema).unwrap_or_else(|e| panic!("{e}"));
        assert!(validation_errors(&v, &json!({"year": 1843})).is_none());
        let err = validation_errors(&v, &json!({"year": "x"})).unwrap_or_default();
        assert!(err.contains("year"), "{err}");
        assert!(matches!(
            compile_schema(&json!("nope")),
            Err(RecallError::Validation { name: "InvalidResponseSchemaError", .. })
        ));
        assert!(compile_schema(&json!({"type": 12})).is_err());
    }

    #[test]
    fn system_prompt_precedence() {
        let mut o = RetrieverOptions::default();
        assert_eq!(
            system_prompt(&o, prompts::ANSWER_SIMPLE_QUESTION).unwrap_or_default(),
            "Answer the question using the provided context. Be as brief as possible."
        );
        o.system_prompt = Some("  ".into());
        o.system_prompt_path = Some(prompts::SUMMARIZE_SEARCH_RESULTS.into());
        assert!(system_prompt(&o, prompts::ANSWER_SIMPLE_QUESTION)
            .unwrap_or_default()
            .starts_with("You are a summarisation"));
        o.system_prompt = Some("Be terse.".into());
        assert_eq!(system_prompt(&o, prompts::ANSWER_SIMPLE_QUESTION).unwrap_or_default(), "Be terse.");
    }
}
