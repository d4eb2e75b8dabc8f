//! The single-prompt completion step shared by every generative retriever
//! (docs/retrievers.md): the system prompt, the rendered user prompt, the LLM
//! call, structured output validated against its schema, and references.

use recall_core::ports::{ChatRequest, LlmClient};
use recall_core::{RecallError, RecallEvent, RecallEvents, Result, Stage};
use serde_json::Value;

use crate::prompts;
use crate::{DatasetPorts, PromptPreview, RetrieverOptions};

/// The system prompt: the caller's `system_prompt` if non-blank, else the
/// template at `system_prompt_path`, else the retriever's default template.
pub fn system_prompt(options: &RetrieverOptions, default_path: &str) -> Result<String> {
    if let Some(s) = options.search.system_prompt.as_deref().filter(|s| !s.trim().is_empty()) {
        return Ok(s.to_string());
    }
    let name = options.search.system_prompt_path.as_deref().unwrap_or(default_path);
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
/// when the context is empty (no prompt is sent then). A session-aware
/// completion carries its conversation (docs/sessions.md, "Completion
/// through sessions"): the history leads the system prompt and the guidance
/// block follows the rendered question; an `only_context` preview shows
/// both in the user prompt (history, question, guidance).
pub fn preview(
    user_template: &str,
    question: &str,
    context: &crate::LlmContext,
    options: &RetrieverOptions,
) -> Result<Option<PromptPreview>> {
    if context.is_empty() {
        return Ok(None);
    }
    let mut prompt =
        build_prompts(user_template, prompts::ANSWER_SIMPLE_QUESTION, question, &context.as_text(), options)?;
    if let Some(conversation) = &options.conversation {
        let join = |parts: &[&str]| parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("\n\n");
        let history = conversation.history.as_str();
        let guidance = conversation.guidance.as_str();
        if options.search.only_context {
            prompt.user_prompt = join(&[history, &prompt.user_prompt, guidance]);
        } else {
            prompt.system_prompt = join(&[history, &prompt.system_prompt]);
            prompt.user_prompt = join(&[&prompt.user_prompt, guidance]);
        }
    }
    Ok(Some(prompt))
}

/// A free-text LLM call.
pub async fn chat(ctx: &DatasetPorts, who: &str, system: &str, user: &str) -> Result<String> {
    ctx.require_llm(who)?.chat(&ChatRequest::new(system, user)).await
}

/// Asks the LLM and returns the answer: a string, or (with a response schema)
/// a JSON value that validates against it. An answer that does not validate
/// is asked for once more, then rejected with a typed error.
pub async fn generate(
    ctx: &DatasetPorts,
    who: &str,
    prompt: &PromptPreview,
    options: &RetrieverOptions,
) -> Result<Value> {
    let llm = ctx.require_llm(who)?;
    let request = ChatRequest::new(prompt.system_prompt.clone(), prompt.user_prompt.clone());
    let Some(schema) = options.search.response_schema.as_ref() else {
        return Ok(Value::String(llm.chat(&request).await?));
    };
    let model = crate::schema::compile(schema)?;
    let mut last_error = String::new();
    for _ in 0..2 {
        let value = llm.structured(&request, &model.name, schema).await?;
        match model.validate(&value) {
            Ok(valid) => return Ok(valid),
            Err(e) => last_error = e,
        }
    }
    Err(RecallError::Provider(format!("The LLM's structured answer does not match the response schema: {last_error}")))
}

/// The answer a user reads (GRAPH_COMPLETION, RAG_COMPLETION,
/// HYBRID_COMPLETION): streamed as `Delta` events when the listener asks for
/// them and the answer is plain text, else [`generate`]. Intermediate calls
/// (chain-of-thought rounds, sub-answers) use [`generate`] and never stream.
pub async fn final_answer(
    ctx: &DatasetPorts,
    who: &str,
    prompt: &PromptPreview,
    options: &RetrieverOptions,
) -> Result<Value> {
    if options.search.response_schema.is_none() && ctx.events.wants_deltas() {
        let llm = ctx.require_llm(who)?;
        let request = ChatRequest::new(prompt.system_prompt.clone(), prompt.user_prompt.clone());
        return streamed(ctx.events.as_ref(), llm.as_ref(), &request).await.map(Value::String);
    }
    generate(ctx, who, prompt, options).await
}

/// Attempts of a streamed answer: a stream that breaks is asked for once
/// more, after a `Reset`.
const STREAM_ATTEMPTS: usize = 2;

/// A plain-text answer through `LlmClient::stream`: `Stage(Generating)`,
/// then each chunk as a `Delta`, then `AnswerDone`. The answer returned is
/// the chunks joined, the same text a non-streamed call gives.
async fn streamed(events: &dyn RecallEvents, llm: &dyn LlmClient, request: &ChatRequest) -> Result<String> {
    use futures::StreamExt;
    events.emit(RecallEvent::Stage { stage: Stage::Generating });
    let mut last_error = None;
    for attempt in 0..STREAM_ATTEMPTS {
        if attempt > 0 {
            events.emit(RecallEvent::Reset);
        }
        let mut answer = String::new();
        let outcome = async {
            let mut chunks = llm.stream(request).await?;
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk?;
                answer.push_str(&chunk);
                events.emit(RecallEvent::Delta { text: chunk });
            }
            Ok::<_, RecallError>(())
        }
        .await;
        match outcome {
            Ok(()) => {
                events.emit(RecallEvent::AnswerDone);
                return Ok(answer);
            }
            Err(e) => {
                tracing::warn!(attempt, error = %e, "the answer stream failed");
                last_error = Some(e);
            }
        }
    }
    Err(last_error.unwrap_or_else(|| RecallError::Provider("the answer stream failed".into())))
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
    use super::*;

    #[test]
    fn system_prompt_precedence() {
        let mut o = RetrieverOptions::default();
        assert_eq!(
            system_prompt(&o, prompts::ANSWER_SIMPLE_QUESTION).unwrap_or_default(),
            "Answer the question using the provided context. Be as brief as possible."
        );
        o.search.system_prompt = Some("  ".into());
        o.search.system_prompt_path = Some(prompts::SUMMARIZE_SEARCH_RESULTS.into());
        assert!(system_prompt(&o, prompts::ANSWER_SIMPLE_QUESTION)
            .unwrap_or_default()
            .starts_with("You are a summarisation"));
        o.search.system_prompt = Some("Be terse.".into());
        assert_eq!(system_prompt(&o, prompts::ANSWER_SIMPLE_QUESTION).unwrap_or_default(), "Be terse.");
    }
}
