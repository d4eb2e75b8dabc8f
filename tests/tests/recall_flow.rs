#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! recall()'s decisions end to end on the in-memory stack: the warm-up
//! marker, scopes and lanes (with real in-memory session memory), and the retry-once
//! rule for routed guesses (against a fake OpenAI-compatible server).

mod common;

use common::{me, offline_builder};

use std::sync::Arc;

use async_trait::async_trait;
use axum::routing::post;
use axum::{Json, Router};
use recall_core::ports::{GraphExtractor, RelationalPorts};
use recall_core::session::{SessionEntry, SessionMemory};
use recall_core::{KnowledgeGraph, RecallError, RecallResponse, Result, SearchType};
use recall_engine::{Engine, EngineBuilder, EngineConfig, RecallRequest, RememberInput};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemorySessionStore, MemoryVectorStore};
use recall_openai::{OpenAiChat, OpenAiConfig};
use recall_sessions::guidance::Profile;
use recall_sessions::{SessionConfig, Sessions};
use serde_json::{json, Value};

const USER: &str = "default_user@example.com";

async fn remembered(engine: &Engine) {
    engine
        .remember(
            &me(engine).await,
            "bees",
            &[RememberInput::text("Honeybees share directions with the waggle dance.")],
        )
        .await
        .unwrap();
}

struct FailingExtractor;

#[async_trait]
impl GraphExtractor for FailingExtractor {
    fn name(&self) -> &'static str {
        "failing"
    }
    async fn extract(&self, _text: &str) -> Result<KnowledgeGraph> {
        Err(RecallError::Provider("the model is down".into()))
    }
}

fn marker(results: &[RecallResponse]) -> &recall_core::ResponseMarkerEntry {
    match results {
        [RecallResponse::System(m)] => m,
        other => panic!("expected one marker, got {other:?}"),
    }
}

#[tokio::test]
async fn never_built_memory_answers_with_the_warming_up_marker() {
    let engine = offline_builder(EngineConfig::default(), 64).build().unwrap();
    engine.relational().users.ensure_user(USER).await.unwrap();
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("anything")).await.unwrap();
    let m = marker(&results);
    assert_eq!(m.status, "memory_warming_up");
    assert_eq!(m.text, "Memory is still warming up: no knowledge graph data exists yet for the requested datasets.");
    assert_eq!((m.datapoint_count, m.threshold), (0, 1));
    assert_eq!(serde_json::to_value(&results[0]).unwrap()["source"], "system");
    // only_context bypasses the guard, and a caller who can read nothing is
    // then refused; a scope beyond graph gets no marker.
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("anything").only_context(true)).await.unwrap_err();
    assert_eq!(err.to_string(), "Request owner does not have permission: [read] for any dataset.");
    assert!(engine
        .recall(&me(&engine).await, &RecallRequest::new("anything").scope(["graph", "trace"]))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_failed_build_says_so_and_the_guard_can_be_turned_off() {
    let engine = offline_builder(EngineConfig::default(), 64).extractor(Arc::new(FailingExtractor)).build().unwrap();
    assert!(engine.remember(&me(&engine).await, "bees", &[RememberInput::text("Bees dance.")]).await.is_err());
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("bees")).await.unwrap();
    let m = marker(&results);
    assert_eq!(m.status, "build_failed");
    assert_eq!(m.error_class.as_deref(), Some("ProviderError"));
    assert_eq!(
        m.text,
        format!(
            "Memory build failed: the last ingestion for the requested datasets ended in an error (ProviderError: {}). Fix the cause and re-run remember() or cognify().",
            m.error_message.as_deref().unwrap()
        )
    );

    let config = EngineConfig { warmup_shortcircuit: false, ..Default::default() };
    let engine = offline_builder(config, 64).extractor(Arc::new(FailingExtractor)).build().unwrap();
    assert!(engine.remember(&me(&engine).await, "bees", &[RememberInput::text("Bees dance.")]).await.is_err());
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("bees")).await.unwrap_err();
    assert_eq!(err.http_status(), 404);
    assert!(err.to_string().contains("holds 1 data item(s) but its knowledge graph is empty"), "{err}");
}

#[tokio::test]
async fn a_built_graph_is_warm() {
    let engine = offline_builder(EngineConfig::default(), 64).build().unwrap();
    remembered(&engine).await;
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("waggle dance")).await.unwrap();
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| r.source() == "graph"));
}

/// Real session memory (in memory) holding one QA turn about bees and one
/// preference, in session "s1".
async fn seed_bee_session(engine: &Engine, sessions: &Sessions) {
    let user = me(engine).await;
    let turn = serde_json::from_value::<SessionEntry>(
        json!({"type": "qa", "question": "How do bees talk?", "answer": "They dance."}),
    )
    .unwrap();
    sessions.remember_entry(&user, "s1", None, turn).await.unwrap();
    sessions.add_guidance(&user, "s1", Profile::Qa, "preferences", "Prefer short answers.", 0.9).await.unwrap();
}

#[tokio::test]
async fn scopes_pick_the_lanes_and_a_session_hit_short_circuits() {
    let sessions = Arc::new(Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig::default()));
    let engine = offline_builder(EngineConfig::default(), 64).sessions(sessions.clone()).build().unwrap();
    seed_bee_session(&engine, &sessions).await;
    remembered(&engine).await;
    let sources = |r: &[RecallResponse]| r.iter().map(|x| x.source()).collect::<Vec<_>>();

    // auto + session id + no datasets: a session hit skips the graph.
    let r = engine.recall(&me(&engine).await, &RecallRequest::new("how do bees talk").session_id("s1")).await.unwrap();
    assert_eq!(sources(&r), vec!["session"]);
    assert_eq!(r[0].text(), "They dance.");
    // No session hit: the graph answers.
    let r = engine.recall(&me(&engine).await, &RecallRequest::new("waggle directions").session_id("s1")).await.unwrap();
    assert!(!r.is_empty() && r.iter().all(|x| x.source() == "graph"));
    // With datasets both contribute, session first.
    let r = engine
        .recall(&me(&engine).await, &RecallRequest::new("how do bees talk").session_id("s1").datasets(["bees"]))
        .await
        .unwrap();
    assert_eq!(sources(&r)[0], "session");
    assert!(sources(&r)[1..].iter().all(|s| *s == "graph") && r.len() > 1);
    // Explicit lanes, in order.
    let r = engine
        .recall(
            &me(&engine).await,
            &RecallRequest::new("how do bees talk").session_id("s1").scope(["session_context", "session", "trace"]),
        )
        .await
        .unwrap();
    assert_eq!(sources(&r), vec!["session_context", "session"]);
    assert!(r[0].text().ends_with("] Prefer short answers."), "{}", r[0].text());
    // Session lanes need a session id.
    assert!(engine
        .recall(&me(&engine).await, &RecallRequest::new("bees").scope(["session", "trace"]))
        .await
        .unwrap()
        .is_empty());
    // An empty scope runs nothing.
    assert!(engine
        .recall(&me(&engine).await, &RecallRequest::new("bees").scope(Vec::<String>::new()))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn bad_scopes_and_unavailable_lanes_are_typed_errors() {
    let engine = offline_builder(EngineConfig::default(), 64).build().unwrap();
    remembered(&engine).await;
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("q").scope(["graph", "web"])).await.unwrap_err();
    assert_eq!(err.name(), "ValueError");
    assert!(err.to_string().starts_with("Unknown recall scope(s): ['web']. Valid values: ['all', 'auto', "));
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("q").scope(["tools"])).await.unwrap_err();
    assert_eq!(err.name(), "ToolCallsDisabledError");
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("q").scope(["code"])).await.unwrap_err();
    assert_eq!(err.to_string(), "Unsupported search type: SearchType.CODE");
    let mut request = RecallRequest::new("q");
    request.tools_trigger = "sometimes".into();
    assert_eq!(engine.recall(&me(&engine).await, &request).await.unwrap_err().name(), "InvalidToolsTriggerError");
    let mut request = RecallRequest::new("q");
    request.code_query = Some(json!({"operation": "explore"}));
    assert_eq!(engine.recall(&me(&engine).await, &request).await.unwrap_err().name(), "InvalidCodeQueryError");
    // "graph_context" is the deprecated spelling of "graph".
    assert!(!engine
        .recall(&me(&engine).await, &RecallRequest::new("waggle").scope(["graph_context"]))
        .await
        .unwrap()
        .is_empty());
}

async fn fake_llm(answer: &'static str) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(_body): Json<Value>| async move {
            Json(json!({"choices": [{"message": {"role": "assistant", "content": answer}}]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_routed_guess_that_finds_nothing_is_retried_once_as_hybrid() {
    let endpoint = fake_llm("Bees dance.").await;
    let chat = OpenAiChat::new(OpenAiConfig::new(endpoint, "gpt-test", Some("sk".into()))).unwrap();
    let engine = offline_builder(EngineConfig::default(), 64).llm(Some(Arc::new(chat))).build().unwrap();
    remembered(&engine).await;

    // Routed to CODING_RULES (no rules stored): retried as HYBRID_COMPLETION.
    let r =
        engine.recall(&me(&engine).await, &RecallRequest::new("What are our coding rules for bees?")).await.unwrap();
    let RecallResponse::Graph(item) = &r[0] else { panic!("{r:?}") };
    assert_eq!(item.search_type, SearchType::HybridCompletion);
    assert_eq!(item.text, "Bees dance.");
    // Pinned, it is never retried.
    let r = engine
        .recall(
            &me(&engine).await,
            &RecallRequest::new("What are our coding rules for bees?").query_type(SearchType::CodingRules),
        )
        .await
        .unwrap();
    assert!(r.is_empty());
    // A routed quoted phrase that finds chunks stays lexical.
    let r = engine.recall(&me(&engine).await, &RecallRequest::new("\"waggle dance\"")).await.unwrap();
    let RecallResponse::Graph(item) = &r[0] else { panic!("{r:?}") };
    assert_eq!(item.search_type, SearchType::ChunksLexical);
    // The default route is HYBRID_COMPLETION.
    let r = engine.recall(&me(&engine).await, &RecallRequest::new("How do bees share directions?")).await.unwrap();
    let RecallResponse::Graph(item) = &r[0] else { panic!("{r:?}") };
    assert_eq!(item.search_type, SearchType::HybridCompletion);
}

#[tokio::test]
async fn graph_searches_are_recorded_in_history() {
    let engine = offline_builder(EngineConfig::default(), 64).build().unwrap();
    engine.relational().users.ensure_user(USER).await.unwrap();
    // A warm-up marker records nothing.
    engine.recall(&me(&engine).await, &RecallRequest::new("nothing yet")).await.unwrap();
    assert!(engine.search_history(&me(&engine).await).await.unwrap().is_empty());

    remembered(&engine).await;
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("waggle dance").top_k(1)).await.unwrap();
    let history = engine.search_history(&me(&engine).await).await.unwrap();
    let rows: Vec<(&str, &str)> = history.iter().map(|r| (r.user.as_str(), r.text.as_str())).collect();
    let answer = serde_json::to_value(vec![serde_json::to_value(&results[0]).unwrap()["raw"].clone()]).unwrap();
    assert_eq!(rows, vec![("user", "waggle dance"), ("system", answer.to_string().as_str())]);
    assert!(history[0].dataset_id.is_some());

    let quiet = offline_builder(EngineConfig { log_search_history: false, ..Default::default() }, 64).build().unwrap();
    remembered(&quiet).await;
    quiet.recall(&me(&quiet).await, &RecallRequest::new("waggle dance")).await.unwrap();
    assert!(quiet.search_history(&me(&quiet).await).await.unwrap().is_empty());
}

struct BrokenHistory;

#[async_trait]
impl recall_core::ports::SearchHistoryStore for BrokenHistory {
    async fn record_search(&self, _record: &recall_core::SearchRecord) -> Result<()> {
        Err(RecallError::backend_msg("history table is gone"))
    }
    async fn search_history(&self, _user: uuid::Uuid) -> Result<Vec<recall_core::HistoryRow>> {
        Ok(vec![])
    }
}

#[tokio::test]
async fn a_failing_history_write_fails_the_recall() {
    let mut relational = RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new()));
    relational.history = Arc::new(BrokenHistory);
    let engine = EngineBuilder::new(
        relational,
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(64).unwrap()),
    )
    .build()
    .unwrap();
    remembered(&engine).await;
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("waggle dance")).await.unwrap_err();
    assert!(err.to_string().contains("history table is gone"), "{err}");
}
