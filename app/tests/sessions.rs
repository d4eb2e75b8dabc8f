#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! A conversation through the `recall` binary against a fake
//! OpenAI-compatible server (real HTTP): each completion carries the earlier
//! turns, the turns are listed, rated and forgotten (docs/sessions.md).

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// The chat requests the fake server received, in order.
type Received = Arc<Mutex<Vec<Value>>>;

/// Answers the n-th chat call with "Answer n." and keeps every request.
async fn fake_llm(received: Received) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let received = received.clone();
            async move {
                let n = {
                    let mut r = received.lock().unwrap();
                    r.push(body);
                    r.len()
                };
                Json(json!({"choices": [{"message": {"role": "assistant", "content": format!("Answer {n}.")}}]}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// `recall` with the fake server as its LLM.
fn with_llm(dir: &Path, endpoint: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env("LLM_API_KEY", "test-key")
        .env("LLM_ENDPOINT", endpoint)
        .env("LLM_MODEL", "fake-model")
        // The key would otherwise select remote embeddings; the store was built offline.
        .env("EMBEDDING_PROVIDER", "hashing")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_USER")
        .env_remove("CACHING")
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn system_prompt(request: &Value) -> String {
    request["messages"].as_array().unwrap().iter().find(|m| m["role"] == "system").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

const TURNS: [&str; 3] =
    ["How do honeybees share directions?", "What does the waggle dance encode?", "Why do bees dance at all?"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_turn_conversation_carries_its_history() {
    let received: Received = Arc::default();
    let endpoint = fake_llm(received.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Remembered without an LLM (rule-based extraction): the fake only answers questions.
    ok(common::recall(
        d,
        &[
            "remember",
            "--dataset",
            "bees",
            "--text",
            "Honeybees share directions with the waggle dance. The dance encodes distance and direction to flowers.",
        ],
    ));

    for question in TURNS {
        let out = ok(with_llm(
            d,
            &endpoint,
            &["recall", question, "--type", "GRAPH_COMPLETION", "--session-id", "chat", "--json"],
        ));
        let results: Value = serde_json::from_str(&out).unwrap();
        assert!(results[0]["text"].as_str().unwrap().starts_with("Answer"), "{out}");
    }
    let calls = received.lock().unwrap().clone();
    assert_eq!(calls.len(), 3, "one LLM call per turn");
    let first = system_prompt(&calls[0]);
    assert!(!first.contains("Previous conversation"), "the first turn has no history: {first}");
    let second = system_prompt(&calls[1]);
    assert!(second.starts_with("Previous conversation:\n\n["), "{second}");
    assert!(second.contains(&format!("QUESTION: {}\nANSWER: Answer 1.", TURNS[0])), "{second}");
    let third = system_prompt(&calls[2]);
    let one = third.find(&format!("QUESTION: {}\nANSWER: Answer 1.", TURNS[0])).expect("turn 1 in turn 3");
    let two = third.find(&format!("QUESTION: {}\nANSWER: Answer 2.", TURNS[1])).expect("turn 2 in turn 3");
    assert!(one < two, "oldest first");
    assert!(!third.contains(TURNS[2]), "the current question is not history");

    // The turns, listed and shown.
    let listed: Value = serde_json::from_str(&ok(common::recall(d, &["session", "list", "--json"]))).unwrap();
    assert_eq!(listed[0]["session_id"], "chat");
    assert_eq!(listed[0]["qa_count"], 3);
    let shown: Value = serde_json::from_str(&ok(common::recall(d, &["session", "show", "chat", "--json"]))).unwrap();
    let shown = shown.as_array().unwrap();
    assert_eq!(shown.iter().map(|e| e["question"].as_str().unwrap()).collect::<Vec<_>>(), TURNS);
    assert_eq!(shown[1]["answer"], "Answer 2.");
    assert!(shown[0]["used_graph_element_ids"]["node_ids"].as_array().is_some_and(|ids| !ids.is_empty()));
    let last: Value =
        serde_json::from_str(&ok(common::recall(d, &["session", "show", "chat", "--last", "1", "--json"]))).unwrap();
    assert_eq!(last.as_array().unwrap().len(), 1);

    // Rating an answer.
    let qa_id = shown[0]["qa_id"].as_str().unwrap();
    ok(common::recall(d, &["session", "feedback", "chat", qa_id, "--score", "5", "--text", "spot on"]));
    let text = ok(common::recall(d, &["session", "show", "chat"]));
    assert!(text.contains("feedback: 5/5 spot on"), "{text}");
    let bad = common::recall(d, &["session", "feedback", "chat", qa_id, "--score", "9"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("[SessionParameterValidationError] (HTTP 422)"));
    let missing = common::recall(d, &["session", "feedback", "chat", "no-such-turn", "--score", "3"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("(HTTP 404)"));
    ok(common::recall(d, &["session", "delete-feedback", "chat", qa_id]));
    assert!(!ok(common::recall(d, &["session", "show", "chat"])).contains("feedback:"));

    // The session lane finds the turns by keyword; it never calls the LLM.
    let hits: Value = serde_json::from_str(&ok(with_llm(
        d,
        &endpoint,
        &["recall", "waggle dance encode", "--session-id", "chat", "--scope", "session", "--json"],
    )))
    .unwrap();
    assert_eq!(hits[0]["source"], "session");
    assert_eq!(hits[0]["question"], TURNS[1]);

    // A preview and a non-generative type record nothing; a completion
    // without a session id records in the dataset's default session.
    ok(with_llm(
        d,
        &endpoint,
        &["recall", "bees?", "--type", "GRAPH_COMPLETION", "--session-id", "chat", "--only-context"],
    ));
    ok(with_llm(d, &endpoint, &["recall", "bees?", "--type", "CHUNKS", "--session-id", "chat"]));
    let shown: Value = serde_json::from_str(&ok(common::recall(d, &["session", "show", "chat", "--json"]))).unwrap();
    assert_eq!(shown.as_array().unwrap().len(), 3);
    ok(with_llm(d, &endpoint, &["recall", "Do bees dance?", "--type", "GRAPH_COMPLETION"]));
    let listed: Value = serde_json::from_str(&ok(common::recall(d, &["session", "list", "--json"]))).unwrap();
    let default = listed[0]["session_id"].as_str().unwrap().to_string();
    assert!(default.starts_with("default_session_"), "{listed}");

    // Forgetting the dataset forgets what its searches left in sessions.
    ok(common::recall(d, &["forget", "--dataset", "bees"]));
    let listed: Value = serde_json::from_str(&ok(common::recall(d, &["session", "list", "--json"]))).unwrap();
    assert!(listed.as_array().unwrap().iter().all(|s| s["session_id"] != default.as_str()), "{listed}");
    let shown: Value = serde_json::from_str(&ok(common::recall(d, &["session", "show", "chat", "--json"]))).unwrap();
    assert!(shown.as_array().unwrap().is_empty(), "{shown}");
}

#[test]
fn caching_off_keeps_no_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(common::recall(d, &["remember", "--dataset", "bees", "--text", "Bees dance."]));
    let o = Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(d)
        .args(["session", "list"])
        .env("CACHING", "false")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("[SessionPreconditionError]"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
