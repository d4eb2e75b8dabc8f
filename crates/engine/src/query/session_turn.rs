//! A completion's turn in a session (docs/sessions.md, "Completion through
//! sessions"): the conversation carried into the prompts, the turn analysis
//! beside retrieval (or before it), and the turn recorded — or replaced by
//! an acknowledgement when the message asked nothing.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use recall_core::session::{CompletedTurn, SessionMemory, TurnAnalysis, TurnMode};
use recall_core::{Dataset, Result, User};
use recall_retrievers::{DatasetPorts, LlmContext, PromptPreview, Retriever, RetrieverCall, RetrieverOptions};
use serde_json::Value;

use super::request::RecallRequest;
use crate::Engine;

/// How long a turn analysis may take before the turn goes on without it.
const TURN_ANALYSIS_TIMEOUT: Duration = Duration::from_secs(30);

/// What the retriever's steps produced on one dataset.
pub(crate) struct Steps {
    pub(crate) objects: Vec<Value>,
    pub(crate) context: LlmContext,
    pub(crate) completion: Option<Vec<Value>>,
    pub(crate) preview: Option<PromptPreview>,
}

impl Steps {
    /// The answer to a message that asked nothing.
    fn acknowledged(ack: String) -> Self {
        Steps {
            objects: Vec::new(),
            context: LlmContext::Text(ack.clone()),
            completion: Some(vec![Value::String(ack)]),
            preview: None,
        }
    }
}

/// The three retriever steps over `query` (the prompt instead of the answer
/// for `only_context`).
pub(crate) async fn run_steps(
    ctx: &DatasetPorts,
    retriever: &dyn Retriever,
    query: &str,
    options: &RetrieverOptions,
) -> Result<Steps> {
    let objects = retriever.get_retrieved_objects(&RetrieverCall::new(ctx, query, options)).await?;
    finish_steps(ctx, retriever, query, objects, options).await
}

/// Steps two and three over retrieved objects.
async fn finish_steps(
    ctx: &DatasetPorts,
    retriever: &dyn Retriever,
    query: &str,
    objects: Vec<Value>,
    options: &RetrieverOptions,
) -> Result<Steps> {
    let call = RetrieverCall::new(ctx, query, options);
    let context = retriever.get_context_from_objects(&call, &objects).await?;
    let (completion, preview) = if options.search.only_context {
        (None, retriever.prompt_preview(&call, &context).await?)
    } else {
        (retriever.get_completion_from_context(&call, &objects, &context).await?, None)
    };
    Ok(Steps { objects, context, completion, preview })
}

/// The steps of a session turn with a second retrieval lane: the question
/// and the conversational `second` query retrieve side by side, the
/// retriever merges the two, and the context and answer are built from the
/// merge with the question. A failing second lane is left out (logged).
async fn run_two_lane_steps(
    ctx: &DatasetPorts,
    retriever: &dyn Retriever,
    query: &str,
    second: &str,
    options: &RetrieverOptions,
) -> Result<Steps> {
    let (primary, secondary) = futures::future::join(
        retriever.get_retrieved_objects(&RetrieverCall::new(ctx, query, options)),
        retriever.get_retrieved_objects(&RetrieverCall::new(ctx, second, options)),
    )
    .await;
    let secondary = secondary.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the conversational retrieval lane failed; the question's lane answers alone");
        Vec::new()
    });
    let objects = retriever.merge_retrieved_objects(primary?, secondary, options)?;
    finish_steps(ctx, retriever, query, objects, options).await
}

/// The answer a turn records: the text, or a structured answer's JSON;
/// `None` for an empty completion (nothing was answered).
fn answer_text(completion: &[Value]) -> Option<String> {
    match completion {
        [] => None,
        [Value::String(s)] if s.is_empty() => None,
        [Value::String(s)] => Some(s.clone()),
        [other] => Some(other.to_string()),
        items => Some(Value::Array(items.to_vec()).to_string()),
    }
}

/// The turn analysis, bounded in time; it fails open (an empty analysis
/// answers the message as asked).
async fn analyze(
    sessions: &Arc<dyn SessionMemory>,
    user: &User,
    session_id: &str,
    message: &str,
) -> (TurnAnalysis, bool) {
    match tokio::time::timeout(TURN_ANALYSIS_TIMEOUT, sessions.analyze_turn(user, session_id, message)).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the turn analysis failed");
            (TurnAnalysis::default(), false)
        }
        Err(_) => {
            tracing::warn!(seconds = TURN_ANALYSIS_TIMEOUT.as_secs(), "the turn analysis timed out");
            (TurnAnalysis::default(), false)
        }
    }
}

/// One turn of a session, from its conversation to its record.
struct Turn<'a> {
    sessions: Arc<dyn SessionMemory>,
    user: &'a User,
    session_id: String,
    dataset: &'a Dataset,
    raw: &'a str,
}

impl Turn<'_> {
    /// Applies the analysis (failing open) and records the turn.
    async fn close(
        &self,
        analysis: &TurnAnalysis,
        answer: String,
        used: Option<Value>,
        served: Vec<String>,
    ) -> Result<()> {
        if let Err(e) = self.sessions.apply_turn(self.user, &self.session_id, self.raw, analysis).await {
            tracing::warn!(error = %e, "the turn analysis could not be applied");
        }
        let turn = CompletedTurn {
            question: self.raw.to_string(),
            answer,
            used_graph_element_ids: used,
            used_session_context_ids: served,
        };
        self.sessions.record_turn(self.user, &self.session_id, Some(self.dataset.id), turn).await?;
        Ok(())
    }
}

impl Engine {
    /// The steps of a completion type with session memory on: the session's
    /// conversation in the prompts; with turn analysis, the analysis before
    /// retrieval (sequential: a rewritten question steers it, a message
    /// that asks nothing is acknowledged without retrieval) or beside it
    /// (concurrent: it only decides whether the answer is kept); then the
    /// turn recorded. Nothing is recorded for `only_context` or when nothing
    /// was answered. With `two_lanes` (the types that merge two retrievals)
    /// and a conversational query from the session (concurrent mode, after
    /// a first turn), the question is retrieved a second time with the last
    /// turns in view.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn session_steps<'o>(
        &self,
        sessions: Arc<dyn SessionMemory>,
        user: &User,
        dataset: &Dataset,
        ctx: &DatasetPorts,
        retriever: &dyn Retriever,
        request: &RecallRequest,
        options: &'o RetrieverOptions,
        two_lanes: bool,
    ) -> Result<(Steps, Cow<'o, RetrieverOptions>)> {
        let raw = request.query_text.as_str();
        let session_id = sessions.resolve_session_id(request.options.session_id.as_deref(), Some(dataset.id));
        let preview = options.search.only_context;
        let conversation = sessions.conversation(user, &session_id, raw, preview).await?;
        let served = conversation.served_context_ids.clone();
        let second_lane = conversation.retrieval_query.clone().filter(|_| two_lanes);
        let mut with = options.clone();
        with.conversation = Some(conversation);
        let options = with;
        if preview {
            return Ok((run_steps(ctx, retriever, raw, &options).await?, Cow::Owned(options)));
        }
        let mode = sessions.turn_mode();
        let turn = Turn { sessions: sessions.clone(), user, session_id, dataset, raw };

        let mut analysis = None;
        let mut query = raw.to_string();
        if mode == Some(TurnMode::Sequential) {
            let (a, has_previous) = analyze(&sessions, user, &turn.session_id, raw).await;
            if !a.should_answer(has_previous) {
                let ack = a.acknowledgement();
                turn.close(&a, ack.clone(), None, Vec::new()).await?;
                return Ok((Steps::acknowledged(ack), Cow::Owned(options)));
            }
            if let Some(rewritten) = &a.query_to_answer {
                query = rewritten.clone();
            }
            analysis = Some((a, has_previous));
        }
        let retrieve = async {
            match &second_lane {
                Some(second) => run_two_lane_steps(ctx, retriever, &query, second, &options).await,
                None => run_steps(ctx, retriever, &query, &options).await,
            }
        };
        let steps = if mode == Some(TurnMode::Concurrent) {
            let (steps, a) = futures::future::join(retrieve, analyze(&sessions, user, &turn.session_id, raw)).await;
            analysis = Some(a);
            steps?
        } else {
            retrieve.await?
        };
        let Some(answer) = steps.completion.as_deref().and_then(answer_text) else {
            return Ok((steps, Cow::Owned(options)));
        };
        let (analysis, has_previous) = analysis.unwrap_or_default();
        if !analysis.should_answer(has_previous) {
            let ack = analysis.acknowledgement();
            turn.close(&analysis, ack.clone(), None, Vec::new()).await?;
            return Ok((Steps::acknowledged(ack), Cow::Owned(options)));
        }
        turn.close(&analysis, answer, retriever.used_graph_element_ids(&steps.objects), served).await?;
        Ok((steps, Cow::Owned(options)))
    }
}
