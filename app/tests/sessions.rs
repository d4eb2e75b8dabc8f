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

/// The answer requests the fake server received, in order.
type Received = Arc<Mutex<Vec<Value>>>;

/// The turn analysis the fake model gives a message.
fn analysis_of(message: &str) -> Value {
    let mut analysis = json!({
        "response_to_user": null, "query_to_answer": message, "served_context_ratings": [],
        "candidate_context_updates": [], "previous_answer_rating": null
    });
    if message == TURNS[1] {
        // The second message also states a rule, and reacts to the first answer.
        analysis["candidate_context_updates"] =
            json!([{"section": "rules", "content": "Answer in one sentence.", "confidence": 0.9}]);
        analysis["previous_answer_rating"] = json!(4);
    }
    if message == THANKS {
        analysis = json!({
            "response_to_user": "Glad it helped!", "query_to_answer": null, "served_context_ratings": [],
            "candidate_context_updates": [], "previous_answer_rating": 5
        });
    }
    analysis
}

/// Answers the n-th answer call with "Answer n.", a turn-analysis call
/// (a structured one) with [`analysis_of`] its message; keeps every request.
async fn fake_llm(received: Received) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let received = received.clone();
            async move {
                let content = if body.get("response_format").is_some() {
                    let input = body["messages"][1]["content"].as_str().unwrap().to_string();
                    let message = input.strip_prefix("CURRENT USER MESSAGE:\n").unwrap().split("\n\n").next().unwrap();
                    analysis_of(message).to_string()
                } else {
                    let mut r = received.lock().unwrap();
                    r.push(body);
                    format!("Answer {}.", r.len())
                };
                Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
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
    with_llm_env(dir, endpoint, args, &[])
}

/// [`with_llm`] with more environment (set last, so it wins).
fn with_llm_env(dir: &Path, endpoint: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env("LLM_API_KEY", "test-key")
        .env("LLM_ENDPOINT", endpoint)
        .env("LLM_MODEL", "fake-model")
        // The key would otherwise select remote embeddings; the store was built
        // with the default local model.
        .env("EMBEDDING_PROVIDER", "local")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_USER")
        .env_remove("CACHING")
        .envs(env.iter().copied())
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

const TURNS: [&str; 3] = [
    "How do honeybees share directions?",
    "What does the waggle dance encode? Answer in one sentence from now on.",
    "Why do bees dance at all?",
];
const THANKS: &str = "Thanks, that was perfect!";

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
    assert_eq!(calls.len(), 3, "one answer call per turn (and a turn analysis beside each)");
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
    // The rule the second message stated guides the third answer.
    let third_user = calls[2]["messages"][1]["content"].as_str().unwrap();
    assert!(
        third_user.contains("## Active session guidance") && third_user.contains("] Answer in one sentence."),
        "{third_user}"
    );
    let guidance = ok(common::recall(d, &["session", "guidance", "chat"]));
    assert!(guidance.contains("### Rules") && guidance.contains("Answer in one sentence."), "{guidance}");

    // A message that asks nothing is acknowledged, not answered, and rates the answer before it.
    let out =
        ok(with_llm(d, &endpoint, &["recall", THANKS, "--type", "GRAPH_COMPLETION", "--session-id", "chat", "--json"]));
    let results: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(results[0]["text"], "Glad it helped!", "{out}");
    let shown: Value = serde_json::from_str(&ok(common::recall(d, &["session", "show", "chat", "--json"]))).unwrap();
    let shown = shown.as_array().unwrap();
    assert_eq!(shown.len(), 4);
    assert_eq!((shown[3]["question"].as_str(), shown[3]["answer"].as_str()), (Some(THANKS), Some("Glad it helped!")));
    assert_eq!(shown[0]["memify_metadata"]["previous_answer_rating"], 4, "the second message rated the first answer");
    assert_eq!(shown[2]["memify_metadata"]["previous_answer_rating"], 5);
    let improved: Value =
        serde_json::from_str(&ok(common::recall(d, &["improve", "--dataset", "bees", "--json"]))).unwrap();
    assert_eq!(improved["stages"][0]["counts"]["rated"], 2, "two implicit ratings: {improved}");

    // The turns, listed and shown.
    let listed: Value = serde_json::from_str(&ok(common::recall(d, &["session", "list", "--json"]))).unwrap();
    assert_eq!(listed[0]["session_id"], "chat");
    assert_eq!(listed[0]["qa_count"], 4);
    let shown: Value = serde_json::from_str(&ok(common::recall(d, &["session", "show", "chat", "--json"]))).unwrap();
    let shown = shown.as_array().unwrap();
    assert_eq!(shown.iter().take(3).map(|e| e["question"].as_str().unwrap()).collect::<Vec<_>>(), TURNS);
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
    assert_eq!(shown.as_array().unwrap().len(), 4);
    ok(with_llm(d, &endpoint, &["recall", "Do bees dance?", "--type", "GRAPH_COMPLETION"]));
    let listed: Value = serde_json::from_str(&ok(common::recall(d, &["session", "list", "--json"]))).unwrap();
    let default = listed[0]["session_id"].as_str().unwrap().to_string();
    assert!(default.starts_with("default_session_"), "{listed}");

    // remember --session-id stores the text as one turn; nothing is built.
    let out = ok(common::recall(
        d,
        &["remember", "--dataset", "notes", "--session-id", "scratch", "--text", "Queens can live for years."],
    ));
    assert!(out.contains("one turn of session 'scratch'"), "{out}");
    let shown: Value = serde_json::from_str(&ok(common::recall(d, &["session", "show", "scratch", "--json"]))).unwrap();
    assert_eq!((&shown[0]["question"], &shown[0]["answer"]), (&json!(""), &json!("Queens can live for years.")));
    let hits: Value = serde_json::from_str(&ok(common::recall(
        d,
        &["recall", "queens", "--session-id", "scratch", "--scope", "session", "--json"],
    )))
    .unwrap();
    assert_eq!(hits[0]["answer"], "Queens can live for years.");
    let bad = common::recall(d, &["remember", "--dataset", "notes", "--session-id", " ", "--text", "x"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("SessionParameterValidationError"), "a blank session id");

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

fn user_prompt(request: &Value) -> String {
    request["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A follow-up that names nothing ("it") still finds its subject: in the
/// concurrent mode the second retrieval lane quotes the earlier turn, and
/// what only that lane found reaches the answer's context; in the
/// sequential mode it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_retrieves_with_the_earlier_turn_in_view() {
    const SUBJECT: &str = "Jupiter, the largest planet, has ninety-five known satellites.";
    for (mode, second_lane) in [("concurrent", true), ("sequential", false)] {
        let received: Received = Arc::default();
        let endpoint = fake_llm(received.clone()).await;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let hashing = [("EMBEDDING_PROVIDER", "hashing"), ("SESSION_SEARCH_MODE", mode)];
        let mut remember = vec!["remember", "--dataset", "planets"];
        for text in [
            SUBJECT,
            "Mars has two small moons.",
            "Saturn has many moons, more than any other.",
            "How many moons does Neptune have? Sixteen moons.",
            "Uranus has many moons named after characters.",
        ] {
            remember.extend(["--text", text]);
        }
        // Remembered without an LLM call (the fake server only answers questions).
        ok(with_llm_env(d, &endpoint, &remember, &[("EMBEDDING_PROVIDER", "hashing"), ("LLM_API_KEY", "")]));
        for question in ["Which planet is the largest?", "How many moons does it have?"] {
            let args = ["recall", question, "--type", "RAG_COMPLETION", "--top-k", "3", "--session-id", "chat"];
            ok(with_llm_env(d, &endpoint, &args, &hashing));
        }
        let calls = received.lock().unwrap().clone();
        assert_eq!(calls.len(), 2, "{mode}");
        let follow_up = user_prompt(&calls[1]);
        assert_eq!(follow_up.contains(SUBJECT), second_lane, "{mode}: {follow_up}");
        assert!(follow_up.matches(" moons").count() >= 2, "{mode}: the question's own finds stay: {follow_up}");
    }
}
