//! AGENTIC_COMPLETION (docs/agentic.md): a step loop over one dataset's
//! memory. Each step the model answers one `AgentStep` — a tool call or the
//! final answer — as structured output; tool results are fed back into the
//! context; after `max_iter` steps (or a step with neither) one plain
//! completion forces the answer from everything gathered. Skills are the
//! caller's explicit list; every skill the model loads is recorded as a
//! `SkillRun`.

pub mod tools;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use recall_core::ports::ChatRequest;
use recall_core::{Permission, RecallError, Result};
use recall_skills::{Skill, SkillRunEntry, SKILL_NODE_TYPE};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::completion;
use crate::evidence::{append_block, segment_evidence_block, EvidenceReference};
use crate::graph::{self, Triplet, TripletSearch, GRAPH_DEFAULT_TOP_K};
use crate::prompts;
use crate::RetrieverCall;
use crate::{DatasetPorts, LlmContext, Retriever, RetrieverOptions};
pub use tools::{AgentTool, LoadSkill, MemorySearch, ToolContext, LOAD_SKILL, MEMORY_SEARCH};

/// Steps a loop takes before the forced answer, unless `max_iter` says otherwise.
pub const DEFAULT_MAX_ITER: usize = 6;
/// The longest tool result fed back, in characters.
pub const MAX_TOOL_RESULT_CHARS: usize = 8_000;
/// The part of a tool result a skill run's trace keeps, in characters.
const TRACE_OUTPUT_CHARS: usize = 1_000;
/// Attempts at one valid step: a reply that is not an `AgentStep` is asked
/// for again with the problem quoted.
const STEP_ATTEMPTS: usize = 3;
/// The wall-clock budget of the steps; past it the loop stops calling
/// tools and forces the answer.
pub const LOOP_BUDGET: Duration = Duration::from_secs(300);
/// The score of a run whose outcome nobody judged.
pub const UNSCORED_SKILL_RUN_SCORE: f64 = 0.5;

/// Who a loop acts for on its dataset, set by the engine for
/// AGENTIC_COMPLETION: the permissions every tool call is checked
/// against, and where the loop leaves the runs of the skills it loaded
/// (the engine stores them after the search).
#[derive(Debug, Clone, Default)]
pub struct AgentCaller {
    pub user_id: Uuid,
    /// The caller's permissions on the dataset.
    pub permissions: Vec<Permission>,
    /// The session the runs are recorded under (`"agentic"` when none).
    pub session_id: Option<String>,
    pub skill_runs: Arc<Mutex<Vec<SkillRunEntry>>>,
}

/// The JSON Schema of one step (Cognee's `AgentStep`): nothing required;
/// `arguments` is an open object, so the schema is not a strict one.
pub fn agent_step_schema() -> Value {
    json!({
        "title": "AgentStep",
        "type": "object",
        "properties": {
            "thought": {"type": "string", "default": ""},
            "tool_call": {"anyOf": [{"$ref": "#/$defs/ToolCall"}, {"type": "null"}], "default": null},
            "final_answer": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
        },
        "$defs": {
            "ToolCall": {
                "title": "ToolCall",
                "type": "object",
                "properties": {
                    "tool_name": {"type": "string"},
                    "arguments": {"type": "object", "additionalProperties": true, "default": {}}
                },
                "required": ["tool_name"]
            }
        }
    })
}

/// One step as the model answered it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct AgentStep {
    #[serde(default)]
    pub thought: Option<String>,
    #[serde(default)]
    pub tool_call: Option<ToolCall>,
    #[serde(default)]
    pub final_answer: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolCall {
    pub tool_name: String,
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

impl AgentStep {
    /// A reply read as a step; a reply of another shape says what is wrong.
    pub fn parse(reply: Value) -> std::result::Result<Self, String> {
        if !reply.is_object() {
            return Err(format!("expected a JSON object, got {reply}"));
        }
        serde_json::from_value(reply).map_err(|e| e.to_string())
    }

    /// The final answer, when it says something.
    fn answer(&self) -> Option<&str> {
        self.final_answer.as_deref().filter(|a| !a.trim().is_empty())
    }
}

/// The loop's settings from `retriever_specific_config`: the skills by
/// name, the tool filter, and `max_iter` (0 or less: straight to the
/// forced answer).
struct LoopConfig {
    skills: Vec<String>,
    tools: Option<Vec<String>>,
    max_iter: usize,
}

fn string_list(options: &RetrieverOptions, key: &str) -> Result<Option<Vec<String>>> {
    match options.search.retriever_specific_config.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| invalid_config(key, "a list of names")),
        Some(_) => Err(invalid_config(key, "a list of names")),
    }
}

fn invalid_config(key: &str, what: &str) -> RecallError {
    RecallError::Validation {
        name: "InvalidRetrieverConfig",
        message: format!("retriever_specific_config['{key}'] must be {what}."),
    }
}

impl LoopConfig {
    fn from_options(options: &RetrieverOptions) -> Result<Self> {
        let max_iter = match options.search.retriever_specific_config.get("max_iter") {
            None | Some(Value::Null) => DEFAULT_MAX_ITER,
            Some(v) => v
                .as_i64()
                .map(|n| usize::try_from(n).unwrap_or(0))
                .ok_or_else(|| invalid_config("max_iter", "an integer"))?,
        };
        Ok(Self {
            skills: string_list(options, "skills")?.unwrap_or_default(),
            tools: string_list(options, "tools")?,
            max_iter,
        })
    }
}

/// What one loop works from: the triplets of the question, the skills and
/// the tools it offers (the retrieved object).
struct Gathered {
    triplets: Vec<Triplet>,
    skills: Vec<Skill>,
    tools: Vec<Arc<dyn AgentTool>>,
}

/// AGENTIC_COMPLETION. Holds the tools it can offer: the built-ins, then
/// the registered ones.
#[derive(Clone)]
pub struct AgenticRetriever {
    tools: Vec<Arc<dyn AgentTool>>,
}

impl Default for AgenticRetriever {
    fn default() -> Self {
        Self { tools: vec![Arc::new(LoadSkill), Arc::new(MemorySearch)] }
    }
}

impl AgenticRetriever {
    /// The built-ins and `tool`; a tool with the name of an earlier one replaces it.
    pub fn with_tool(mut self, tool: Arc<dyn AgentTool>) -> Self {
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
        self
    }

    /// The caller's skills by exact name, active and scoped to this
    /// dataset, in request order, each once; a name that matches nothing
    /// is skipped (logged).
    async fn resolve_skills(&self, ctx: &DatasetPorts, names: &[String]) -> Result<Vec<Skill>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let dataset = ctx.dataset.id.to_string();
        let stored: Vec<Skill> = ctx
            .graph
            .nodes_by_type(ctx.dataset.id, SKILL_NODE_TYPE)
            .await?
            .into_iter()
            .filter_map(|n| serde_json::from_value(Value::Object(n.properties)).ok())
            .collect();
        let mut out: Vec<Skill> = Vec::new();
        for name in names {
            let found =
                stored.iter().find(|s| &s.name == name && s.is_active && s.dataset_scope.iter().any(|d| d == &dataset));
            match found {
                Some(skill) if !out.iter().any(|s| s.id == skill.id) => out.push(skill.clone()),
                Some(_) => {}
                None => tracing::warn!(skill = %name, "skill not found, inactive or out of scope; skipped"),
            }
        }
        Ok(out)
    }

    /// The tools offered: those for this dataset, restricted to the
    /// request's filter, and — when skills resolved — to `load_skill` and
    /// the tools the skills declare.
    fn offered(&self, ctx: &DatasetPorts, filter: Option<&[String]>, skills: &[Skill]) -> Vec<Arc<dyn AgentTool>> {
        self.tools
            .iter()
            .filter(|t| t.dataset_id().is_none_or(|d| d == ctx.dataset.id))
            .filter(|t| filter.is_none_or(|names| names.iter().any(|n| n == t.name())))
            .filter(|t| {
                skills.is_empty()
                    || t.name() == LOAD_SKILL
                    || skills.iter().any(|s| s.declared_tools.iter().any(|d| d == t.name()))
            })
            .cloned()
            .collect()
    }

    /// The loop's inputs back from the retrieved object — the tools
    /// resolved again from this retriever's (the object holds only their
    /// descriptions) — and `max_iter`.
    fn restore(&self, ctx: &DatasetPorts, objects: &[Value], options: &RetrieverOptions) -> Result<(Gathered, usize)> {
        let config = LoopConfig::from_options(options)?;
        let skills = skills_of(objects);
        let tools = self.offered(ctx, config.tools.as_deref(), &skills);
        Ok((Gathered { triplets: triplets_of(objects), skills, tools }, config.max_iter))
    }

    async fn gather(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<Gathered> {
        let config = LoopConfig::from_options(options)?;
        let skills = self.resolve_skills(ctx, &config.skills).await?;
        let tools = self.offered(ctx, config.tools.as_deref(), &skills);
        if query.trim().is_empty() {
            return Err(RecallError::empty_query());
        }
        // An empty graph is no error here: the loop runs with empty memory.
        let params = TripletSearch::from_options(options, GRAPH_DEFAULT_TOP_K)?;
        let triplets = match graph::brute_force_triplet_search(ctx, query, &params).await {
            Err(RecallError::NoData(_)) => Vec::new(),
            other => other?,
        };
        Ok(Gathered { triplets, skills, tools })
    }
}

/// The retrieved object: `{"triplets", "skills", "tools"}` (tools as
/// their name, description, schema and permission).
fn gathered_value(g: &Gathered) -> Value {
    let tools: Vec<Value> = g
        .tools
        .iter()
        .map(|t| {
            json!({"name": t.name(), "description": t.description(), "input_schema": t.input_schema(),
                   "permission_required": t.permission_required().as_str(), "dataset_id": t.dataset_id()})
        })
        .collect();
    json!({
        "triplets": g.triplets.iter().map(Triplet::to_value).collect::<Vec<_>>(),
        "skills": g.skills,
        "tools": tools,
    })
}

fn triplets_of(objects: &[Value]) -> Vec<Triplet> {
    objects
        .first()
        .and_then(|o| o.get("triplets"))
        .and_then(Value::as_array)
        .map(|t| Triplet::from_values(t))
        .unwrap_or_default()
}

fn skills_of(objects: &[Value]) -> Vec<Skill> {
    objects
        .first()
        .and_then(|o| o.get("skills"))
        .cloned()
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default()
}

/// The composed context: the memory, the skills and the tools, each under
/// its heading (never empty).
fn compose(Gathered { triplets, skills, tools }: &Gathered) -> String {
    let memory = graph::resolve_edges_to_text(triplets);
    let memory = if memory.is_empty() { "(empty)".to_string() } else { memory };
    let skills = if skills.is_empty() {
        "(no skills loaded for this turn)".to_string()
    } else {
        skills.iter().map(|s| format!("- `{}`: {}", s.name, s.description)).collect::<Vec<_>>().join("\n")
    };
    let tools = if tools.is_empty() {
        "(no tools available for this turn)".to_string()
    } else {
        tools.iter().map(|t| tools::tool_line(t.as_ref())).collect::<Vec<_>>().join("\n")
    };
    format!("# Memory\n{memory}\n\n# Available skills\n{skills}\n\n# Available tools\n{tools}")
}

/// `history`, `prompt` and `guidance` joined by blank lines, empty parts left out.
fn with_conversation(prompt: String, options: &RetrieverOptions) -> String {
    let Some(c) = &options.conversation else { return prompt };
    [c.history.as_str(), prompt.as_str(), c.guidance.as_str()]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One call the loop made, as a skill run's trace keeps it.
fn trace_entry(tool: &str, arguments: &Map<String, Value>, result: &str, duration: Duration) -> Value {
    json!({
        "tool_name": tool,
        "tool_input": arguments,
        "tool_output": result.chars().take(TRACE_OUTPUT_CHARS).collect::<String>(),
        "success": !result.starts_with("ERROR:"),
        "duration_ms": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    })
}

/// A loop in progress: the skills it may load, the tools it offers, what
/// it opened and called.
struct Run<'a> {
    ctx: &'a DatasetPorts,
    skills: Vec<Skill>,
    tools: Vec<Arc<dyn AgentTool>>,
    opened: Vec<Skill>,
    trace: Vec<Value>,
}

impl Run<'_> {
    /// Runs one call: out of scope or failing, the result is an `ERROR:`
    /// text the model reads; a permission the caller lacks fails the request.
    async fn call(&mut self, call: &ToolCall, deadline: Instant) -> Result<String> {
        let arguments = call.arguments.clone().unwrap_or_default();
        let started = Instant::now();
        let Some(tool) = self.tools.iter().find(|t| t.name() == call.tool_name).cloned() else {
            let result = format!("ERROR: Tool '{}' is not in the active skill/tool scope", call.tool_name);
            self.trace.push(trace_entry(&call.tool_name, &arguments, &result, started.elapsed()));
            return Ok(result);
        };
        let permission = tool.permission_required();
        let caller = self.ctx.caller.as_ref();
        if !caller.is_some_and(|c| c.permissions.contains(&permission)) {
            return Err(RecallError::permission_denied(permission));
        }
        let tool_ctx = ToolContext { ports: self.ctx, skills: &self.skills };
        let remaining = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
        let outcome = match tokio::time::timeout(remaining, tool.call(&tool_ctx, &arguments)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(RecallError::Provider(format!("timed out after {} s", remaining.as_secs()))),
        };
        let result = match outcome {
            Ok(text) => {
                if tool.name() == LOAD_SKILL {
                    self.mark_opened(&arguments);
                }
                tools::truncate(&text, MAX_TOOL_RESULT_CHARS)
            }
            Err(e) => format!("ERROR: {} failed: {e}", tool.name()),
        };
        self.trace.push(trace_entry(tool.name(), &arguments, &result, started.elapsed()));
        Ok(result)
    }

    fn mark_opened(&mut self, arguments: &Map<String, Value>) {
        let name = arguments.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Some(skill) = self.skills.iter().find(|s| s.name == name) {
            if !self.opened.iter().any(|s| s.id == skill.id) {
                self.opened.push(skill.clone());
            }
        }
    }

    /// One run per opened skill, left for the engine to store.
    fn record(&self, task: &str, started: (i64, Instant), outcome: std::result::Result<&str, &RecallError>) {
        let Some(caller) = self.ctx.caller.as_ref() else { return };
        let (score, summary, error_type, error_message) = match outcome {
            Ok(answer) => (UNSCORED_SKILL_RUN_SCORE, answer.chars().take(500).collect(), String::new(), String::new()),
            Err(e) => (0.0, String::new(), e.name().to_string(), e.to_string()),
        };
        let latency = i64::try_from(started.1.elapsed().as_millis()).unwrap_or(i64::MAX);
        let runs = self.opened.iter().map(|skill| SkillRunEntry {
            selected_skill_id: skill.id.to_string(),
            run_id: Some(format!("agentic:{}:{}", skill.id, Uuid::new_v4())),
            task_text: task.to_string(),
            result_summary: summary.clone(),
            error_type: error_type.clone(),
            error_message: error_message.clone(),
            task_pattern_id: String::new(),
            router_version: String::new(),
            success_score: Some(score),
            feedback: 0.0,
            started_at_ms: started.0,
            latency_ms: latency,
            candidate_skill_ids: vec![skill.id.to_string()],
            tool_trace: self.trace.clone(),
            node_set: "skills".into(),
        });
        if let Ok(mut sink) = caller.skill_runs.lock() {
            sink.extend(runs);
        }
    }
}

/// Asks for one step: up to [`STEP_ATTEMPTS`] replies, each retry quoting
/// why the last one was not a step.
async fn next_step(ctx: &DatasetPorts, system: &str, user: &str) -> Result<AgentStep> {
    let llm = ctx.require_llm("AGENTIC_COMPLETION")?;
    let schema = agent_step_schema();
    let mut problem = String::new();
    for _ in 0..STEP_ATTEMPTS {
        let text = if problem.is_empty() {
            user.to_string()
        } else {
            format!("{user}\n\nYour previous reply was not a valid AgentStep ({problem}). Reply with one JSON object matching the schema.")
        };
        let reply = llm.structured(&ChatRequest::new(system, text), "AgentStep", &schema).await;
        match reply {
            Ok(value) => match AgentStep::parse(value) {
                Ok(step) => return Ok(step),
                Err(e) => problem = e,
            },
            // A reply that is not JSON at all is retried like a malformed one.
            Err(RecallError::Provider(e)) => problem = e,
            Err(e) => return Err(e),
        }
    }
    Err(RecallError::Provider(format!(
        "The LLM did not produce a valid agent step in {STEP_ATTEMPTS} attempts: {problem}"
    )))
}

#[async_trait]
impl Retriever for AgenticRetriever {
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        Ok(vec![gathered_value(&self.gather(ctx, query, options).await?)])
    }

    async fn get_context_from_objects(&self, call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        let (ctx, options) = (call.ctx, call.options);
        let (gathered, _) = self.restore(ctx, objects, options)?;
        Ok(LlmContext::Text(compose(&gathered)))
    }

    async fn get_completion_from_context(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
        context: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let (Gathered { triplets, skills, tools }, max_iter) = self.restore(ctx, objects, options)?;
        let mut run = Run { ctx, skills, tools, opened: Vec::new(), trace: Vec::new() };
        let started = (chrono::Utc::now().timestamp_millis(), Instant::now());
        let outcome = run_loop(&mut run, query, context.as_text(), max_iter, options).await;
        run.record(query, started, outcome.as_deref());
        let mut answer = outcome?;
        if options.search.include_references {
            let refs = graph::evidence::graph_evidence(ctx, &triplets).await;
            answer = append_block(&answer, segment_evidence_block(&refs));
        }
        Ok(Some(vec![Value::String(answer)]))
    }

    fn used_graph_element_ids(&self, objects: &[Value]) -> Option<Value> {
        graph::evidence::used_element_ids(&triplets_of(objects))
    }

    async fn get_context_evidence(
        &self,
        call: &RetrieverCall<'_>,
        objects: &[Value],
    ) -> Result<Vec<EvidenceReference>> {
        let ctx = call.ctx;
        Ok(graph::evidence::graph_evidence(ctx, &triplets_of(objects)).await)
    }

    fn is_generative(&self) -> bool {
        true
    }

    /// The loop answers in text: a response schema is accepted and ignored.
    fn structured_output(&self) -> bool {
        false
    }
}

/// The steps, then (without a final answer) the forced answer.
async fn run_loop(
    run: &mut Run<'_>,
    query: &str,
    mut context: String,
    max_iter: usize,
    options: &RetrieverOptions,
) -> Result<String> {
    let system = prompts::render_source(&prompts::load(prompts::AGENTIC_SYSTEM)?, &[])?;
    let deadline = Instant::now() + LOOP_BUDGET;
    for i in 0..max_iter {
        if Instant::now() >= deadline {
            tracing::warn!(steps = i, "the agentic loop ran out of time; forcing an answer");
            break;
        }
        let user = prompts::render(prompts::AGENTIC_USER, &[("question", query), ("context", &context)])?;
        let step = next_step(run.ctx, &system, &with_conversation(user, options)).await?;
        if let Some(answer) = step.answer() {
            return Ok(answer.to_string());
        }
        let Some(call) = step.tool_call else {
            tracing::warn!(step = i + 1, "an agent step with neither a tool call nor an answer; forcing an answer");
            break;
        };
        let result = run.call(&call, deadline).await?;
        let arguments = Value::Object(call.arguments.unwrap_or_default());
        context.push_str(&format!(
            "\n\n# Tool call {}: {}\nArgs: {arguments}\nResult:\n{result}",
            i + 1,
            call.tool_name
        ));
    }
    let system = completion::system_prompt(options, prompts::ANSWER_SIMPLE_QUESTION)?;
    let user = prompts::render(prompts::GRAPH_CONTEXT_FOR_QUESTION, &[("question", query), ("context", &context)])?;
    completion::chat(run.ctx, "AGENTIC_COMPLETION", &system, &with_conversation(user, options)).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn steps_parse_with_defaults_and_name_what_is_wrong() {
        let step = AgentStep::parse(json!({"tool_call": {"tool_name": "memory_search"}})).unwrap();
        assert_eq!(step.tool_call.unwrap().tool_name, "memory_search");
        assert_eq!(AgentStep::parse(json!({})).unwrap(), AgentStep::default());
        let blank = AgentStep::parse(json!({"final_answer": "  ", "thought": null})).unwrap();
        assert_eq!(blank.answer(), None);
        assert!(AgentStep::parse(json!({"tool_call": {"arguments": {}}})).unwrap_err().contains("tool_name"));
        assert!(AgentStep::parse(json!({"final_answer": 3})).is_err());
        assert!(AgentStep::parse(json!(["x"])).unwrap_err().starts_with("expected a JSON object"));
    }

    #[test]
    fn max_iter_and_lists_come_from_the_config() {
        let mut o = RetrieverOptions::default();
        assert_eq!(LoopConfig::from_options(&o).unwrap().max_iter, DEFAULT_MAX_ITER);
        o.search.retriever_specific_config.insert("max_iter".into(), json!(-2));
        o.search.retriever_specific_config.insert("tools".into(), json!([]));
        let c = LoopConfig::from_options(&o).unwrap();
        assert_eq!((c.max_iter, c.tools, c.skills), (0, Some(vec![]), vec![]));
        o.search.retriever_specific_config.insert("skills".into(), json!("deploy"));
        assert_eq!(LoopConfig::from_options(&o).err().map(|e| e.name()), Some("InvalidRetrieverConfig"));
    }

    #[test]
    fn the_context_is_never_empty() {
        assert_eq!(
            compose(&Gathered { triplets: vec![], skills: vec![], tools: vec![] }),
            "# Memory\n(empty)\n\n# Available skills\n(no skills loaded for this turn)\n\n# Available tools\n(no tools available for this turn)"
        );
    }
}
