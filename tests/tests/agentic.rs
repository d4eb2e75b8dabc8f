#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! AGENTIC_COMPLETION end to end against a scripted OpenAI-compatible
//! server over real HTTP (docs/agentic.md): the step loop with tool calls
//! whose results reach the next prompt, the forced answer, malformed steps,
//! skill runs, tool permissions, search()'s one-dataset rule and recall()'s
//! loop per dataset.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::fake_llm::{scripted_llm, Script};
use common::offline_builder;
use recall_core::{Permission, RecallError, SearchType, User};
use recall_engine::{Engine, EngineConfig, RecallRequest, RememberInput, SearchRequest};
use recall_openai::{OpenAiChat, OpenAiConfig};
use recall_retrievers::{AgentTool, ToolContext};
use serde_json::{json, Map, Value};

const ROTATE: &str = "---\nname: Rotate API keys\ndescription: Rotate the service API keys without downtime.\nallowed-tools: [memory_search]\n---\n1. Create a new API key.\n2. Deploy the new key.\n3. Revoke the old API key.\n";
const FACTS: &str = "The billing service runs on three nodes. API keys expire every 90 days.";

/// A tool that needs `write` and echoes its arguments.
struct Annotate;

#[async_trait]
impl AgentTool for Annotate {
    fn name(&self) -> &str {
        "annotate"
    }
    fn description(&self) -> &str {
        "Adds a note to the dataset."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"note": {"type": "string"}}})
    }
    fn permission_required(&self) -> Permission {
        Permission::Write
    }
    async fn call(&self, ctx: &ToolContext<'_>, arguments: &Map<String, Value>) -> recall_core::Result<String> {
        Ok(format!("noted in {}: {}", ctx.ports.dataset.name, arguments["note"].as_str().unwrap_or("")))
    }
}

async fn engine(script: Arc<Script>) -> Engine {
    let chat = OpenAiChat::new(OpenAiConfig::new(scripted_llm(script).await, "gpt-test", Some("sk".into()))).unwrap();
    offline_builder(EngineConfig::default(), 64)
        .llm(Some(Arc::new(chat)))
        .register_agent_tool(Arc::new(Annotate))
        .build()
        .unwrap()
}

async fn user(engine: &Engine, email: &str) -> User {
    engine.relational().users.ensure_user(email).await.unwrap()
}

/// `ops` holds the facts and the rotation skill.
async fn ops(engine: &Engine, owner: &User, tmp: &std::path::Path) {
    engine.remember(owner, "ops", &[RememberInput::text(FACTS)]).await.unwrap();
    let dir = tmp.join("rotate");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), ROTATE).unwrap();
    engine.add_skills(owner, "ops", &[dir]).await.unwrap();
}

fn step(v: Value) -> String {
    v.to_string()
}

fn agentic(query: &str, skills: &[&str]) -> SearchRequest {
    let mut r = SearchRequest::new(query).query_type(SearchType::AgenticCompletion).datasets(["ops"]);
    r.skills = Some(skills.iter().map(|s| s.to_string()).collect());
    r
}

fn answer(payloads: &[recall_engine::SearchResultPayload]) -> String {
    payloads[0].completion.as_ref().unwrap()[0].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_multi_step_run_feeds_tool_results_back_and_records_the_loaded_skill() {
    let script = Script::new(
        [
            step(
                json!({"thought": "read it", "tool_call": {"tool_name": "load_skill", "arguments": {"name": "Rotate API keys"}}, "final_answer": null}),
            ),
            step(
                json!({"tool_call": {"tool_name": "memory_search", "arguments": {"query": "API keys expire", "top_k": "3"}}}),
            ),
            step(json!({"tool_call": {"tool_name": "drop_database", "arguments": {}}})),
            step(
                json!({"final_answer": "Every 90 days: create a key, deploy it, revoke the old one.", "tool_call": {"tool_name": "load_skill"}}),
            ),
        ],
        "unused",
    );
    let engine = engine(script.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let owner = user(&engine, "owner@example.com").await;
    ops(&engine, &owner, tmp.path()).await;

    let payloads =
        engine.search(&owner, &agentic("How do I rotate our API keys?", &["Rotate API keys"])).await.unwrap();
    assert_eq!(answer(&payloads), "Every 90 days: create a key, deploy it, revoke the old one.");
    assert_eq!(script.requests().len(), 4, "three tool steps and the answer; no forced answer");

    // Every step is one structured call of the agent-step schema (not strict: its arguments are open).
    let first = &script.requests()[0];
    assert_eq!(first["response_format"]["json_schema"]["name"], "AgentStep");
    assert_eq!(first["response_format"]["json_schema"]["strict"], false);
    assert!(script.system_prompt(0).contains("Never call a tool or load a skill that is not listed"));
    // The composed context: memory, the one skill, and the tools it allows.
    let p0 = script.user_prompt(0);
    assert!(p0.contains("# Memory\n") && p0.contains("API keys"), "{p0}");
    assert!(p0.contains("# Available skills\n- `Rotate API keys`: Rotate the service API keys without downtime."));
    assert!(p0.contains("- `load_skill` (perm: read)") && p0.contains("- `memory_search` (perm: read)"));
    assert!(!p0.contains("`annotate`"), "a skill that does not declare a tool narrows it away: {p0}");
    // Each result reaches the next prompt, numbered.
    let p1 = script.user_prompt(1);
    assert!(p1.contains("# Tool call 1: load_skill\nArgs: {\"name\":\"Rotate API keys\"}\nResult:\n# Skill: Rotate API keys\n1. Create a new API key."));
    let p2 = script.user_prompt(2);
    assert!(p2.contains("# Tool call 2: memory_search") && p2.contains("expire"), "{p2}");
    let p3 = script.user_prompt(3);
    assert!(p3.contains("# Tool call 3: drop_database\nArgs: {}\nResult:\nERROR: Tool 'drop_database' is not in the active skill/tool scope"));

    // The opened skill's run, with the three calls.
    let runs = engine.skill_runs(&owner, "ops").await.unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert!(run["run_id"].as_str().unwrap().starts_with("agentic:"));
    assert_eq!(run["selected_skill_name"], "Rotate API keys");
    assert_eq!(run["success_score"], 0.5);
    assert_eq!(run["session_id"], "agentic");
    assert_eq!(run["task_text"], "How do I rotate our API keys?");
    let trace = run["tool_trace"].as_array().unwrap();
    let calls: Vec<(&str, bool)> =
        trace.iter().map(|t| (t["tool_name"].as_str().unwrap(), t["success"].as_bool().unwrap())).collect();
    assert_eq!(calls, [("load_skill", true), ("memory_search", true), ("drop_database", false)]);
}

#[tokio::test]
async fn without_a_final_answer_the_loop_forces_one_from_everything_gathered() {
    let call = step(json!({"tool_call": {"tool_name": "memory_search", "arguments": {"query": "nodes"}}}));
    let script = Script::new([call.clone(), call], "Three nodes.");
    let engine = engine(script.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let owner = user(&engine, "owner@example.com").await;
    ops(&engine, &owner, tmp.path()).await;

    let mut request = agentic("How many nodes does billing run on?", &[]);
    request.max_iter = Some(2);
    let payloads = engine.search(&owner, &request).await.unwrap();
    assert_eq!(answer(&payloads), "Three nodes.");
    let requests = script.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[2].get("response_format").is_none(), "the forced answer is plain text");
    let forced = script.user_prompt(2);
    assert!(forced.starts_with("The question is: `How many nodes does billing run on?`"), "{forced}");
    assert!(forced.contains("# Tool call 2: memory_search"));
    assert!(engine.skill_runs(&owner, "ops").await.unwrap().is_empty(), "no skill was loaded");

    // A step with neither a call nor an answer also goes straight to the forced answer.
    let script = Script::new([step(json!({"thought": "hmm"}))], "Forced.");
    let engine = crate::engine(script.clone()).await;
    let owner = user(&engine, "owner@example.com").await;
    ops(&engine, &owner, tmp.path()).await;
    assert_eq!(answer(&engine.search(&owner, &agentic("How many nodes?", &[])).await.unwrap()), "Forced.");
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn malformed_steps_are_asked_for_again_then_fail_with_a_typed_error() {
    let script = Script::new(["not json at all", "[1, 2]"], step(json!({"tool_call": {"arguments": {}}})));
    let engine = engine(script.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let owner = user(&engine, "owner@example.com").await;
    ops(&engine, &owner, tmp.path()).await;

    let err = engine.search(&owner, &agentic("How do I rotate keys?", &["Rotate API keys"])).await.unwrap_err();
    assert!(matches!(err, RecallError::Provider(_)), "{err:?}");
    assert!(err.to_string().contains("did not produce a valid agent step in 3 attempts"), "{err}");
    assert!(err.to_string().contains("tool_name"), "the last problem is named: {err}");
    assert_eq!(script.requests().len(), 3);
    assert!(script.user_prompt(1).contains("Your previous reply was not a valid AgentStep"));
    assert!(engine.skill_runs(&owner, "ops").await.unwrap().is_empty());

    // A good reply after a bad one is used.
    let script = Script::new(["{oops"], step(json!({"final_answer": "Rotate."})));
    let engine = crate::engine(script.clone()).await;
    let owner = user(&engine, "owner@example.com").await;
    ops(&engine, &owner, tmp.path()).await;
    assert_eq!(answer(&engine.search(&owner, &agentic("How do I rotate keys?", &[])).await.unwrap()), "Rotate.");
}

#[tokio::test]
async fn a_tool_needing_a_permission_the_caller_lacks_fails_the_request_with_403() {
    let call = step(json!({"tool_call": {"tool_name": "annotate", "arguments": {"note": "checked"}}}));
    let script = Script::new([call.clone(), step(json!({"final_answer": "Noted."})), call], "unused");
    let engine = engine(script.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let owner = user(&engine, "owner@example.com").await;
    let reader = user(&engine, "reader@example.com").await;
    ops(&engine, &owner, tmp.path()).await;
    let dataset = engine.access().dataset(&owner, "ops").await.unwrap();
    engine.access().share(&owner, dataset.id, &reader, Permission::Read).await.unwrap();

    // The owner holds write: the registered tool runs and its result reaches the model.
    let mut request = agentic("Note that keys were checked.", &[]);
    assert_eq!(answer(&engine.search(&owner, &request).await.unwrap()), "Noted.");
    assert!(script.user_prompt(1).contains("Result:\nnoted in ops: checked"));

    // A reader does not: 403, as when a search asks for a verb it lacks.
    request.datasets = None;
    request.dataset_ids = Some(vec![dataset.id]);
    let err = engine.search(&reader, &request).await.unwrap_err();
    assert_eq!(err.http_status(), 403);
    assert_eq!(
        err.to_string(),
        "Request owner does not have necessary permission: [write] for all datasets requested."
    );
}

#[tokio::test]
async fn search_needs_one_dataset_recall_runs_a_loop_per_dataset_and_only_context_calls_no_model() {
    let script = Script::new(Vec::<String>::new(), step(json!({"final_answer": "From memory."})));
    let engine = engine(script.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let owner = user(&engine, "owner@example.com").await;
    ops(&engine, &owner, tmp.path()).await;
    engine.remember(&owner, "hr", &[RememberInput::text("Holidays are booked in the portal.")]).await.unwrap();

    let mut two = agentic("What do we know?", &[]).datasets(["ops", "hr"]);
    assert_eq!(engine.search(&owner, &two).await.unwrap_err().name(), "InvalidAgenticDatasetScope");
    two = SearchRequest::new("q").query_type(SearchType::GraphCompletion).datasets(["ops"]);
    two.tools = Some(vec![]);
    assert_eq!(engine.search(&owner, &two).await.unwrap_err().name(), "InvalidAgenticSearchConfig");

    // recall() has no one-dataset rule: one loop, one answer per dataset.
    let request =
        RecallRequest::new("What do we know?").query_type(SearchType::AgenticCompletion).datasets(["ops", "hr"]);
    let results = engine.recall(&owner, &request).await.unwrap();
    let mut datasets: Vec<&str> = results
        .iter()
        .filter_map(|r| match r {
            recall_core::RecallResponse::Graph(g) => g.dataset_name.as_deref(),
            _ => None,
        })
        .collect();
    datasets.sort_unstable();
    assert_eq!(datasets, ["hr", "ops"]);
    assert!(results.iter().all(|r| r.text() == "From memory."));
    assert_eq!(script.requests().len(), 2);

    // only_context: the composed context, no model call.
    let mut preview = agentic("How do I rotate keys?", &["Rotate API keys", "No such skill"]);
    preview.options.only_context = true;
    let payloads = engine.search(&owner, &preview).await.unwrap();
    let context = payloads[0].context.as_ref().unwrap().as_text();
    assert!(context.contains("# Available skills\n- `Rotate API keys`"), "{context}");
    assert!(context.contains("# Available tools\n- `load_skill`"), "{context}");
    assert_eq!(script.requests().len(), 2);

    // An empty tool filter offers nothing, not even load_skill.
    let mut none = agentic("How do I rotate keys?", &[]);
    none.tools = Some(vec![]);
    none.options.only_context = true;
    let context = engine.search(&owner, &none).await.unwrap()[0].context.as_ref().unwrap().as_text();
    assert!(context.ends_with("# Available tools\n(no tools available for this turn)"), "{context}");
}
