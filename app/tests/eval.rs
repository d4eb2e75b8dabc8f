#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `recall eval` through the binary (docs/quality.md): a small corpus on the
//! embedded default, scored per search type; with a fake OpenAI-compatible
//! server (real HTTP) as the reader, exact match and F1 of its answers.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

const CORPUS: &[&str] = &[
    "The honey bee tells its hive where flowers are with the waggle dance, a figure-eight walk on the comb.",
    "Jupiter is the largest planet of the Solar System; its moon Ganymede is bigger than Mercury.",
    "A sourdough starter is a culture of flour and water that must be fed every day to stay alive.",
    "The Rust borrow checker enforces that a value has either one mutable reference or many shared ones.",
    "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa at 5,895 metres.",
];

/// Each question's answer is in exactly one paragraph; the second one shares
/// no content word with it (only meaning links them).
const QUESTIONS: &[(&str, &str)] = &[
    ("Which insect performs the waggle dance?", "honey bee"),
    ("What is the biggest world orbiting our sun?", "Jupiter"),
    ("In which country is the highest mountain in Africa?", "Tanzania"),
];

fn write_inputs(dir: &Path) -> (String, String) {
    let corpus = dir.join("corpus.json");
    std::fs::write(&corpus, serde_json::to_string(CORPUS).unwrap()).unwrap();
    let questions = dir.join("questions.jsonl");
    let lines: Vec<String> =
        QUESTIONS.iter().map(|(q, a)| json!({"question": q, "answer": a, "level": "easy"}).to_string()).collect();
    std::fs::write(&questions, lines.join("\n")).unwrap();
    (corpus.display().to_string(), questions.display().to_string())
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

fn scores(report: &Value, search_type: &str) -> Value {
    report["results"].as_array().unwrap().iter().find(|r| r["search_type"] == search_type).unwrap().clone()
}

#[test]
fn eval_scores_every_type_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, questions) = write_inputs(dir.path());
    let data = dir.path().join("store");
    let out = ok(common::recall(&data, &["eval", "--corpus", &corpus, "--questions", &questions, "--json"]));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((report["documents"].as_u64(), report["questions"].as_u64()), (Some(5), Some(3)));
    assert_eq!(report["chunks"].as_u64(), Some(5), "one chunk per paragraph");
    assert!(report["embedder"].as_str().unwrap().starts_with("pocket-encoder/"), "the local model is the default");
    let types: Vec<&str> =
        report["results"].as_array().unwrap().iter().map(|r| r["search_type"].as_str().unwrap()).collect();
    assert_eq!(types, ["CHUNKS", "CHUNKS_LEXICAL", "SUMMARIES", "HYBRID_COMPLETION", "GRAPH_COMPLETION"]);
    for r in report["results"].as_array().unwrap() {
        let at = |k: &str| r["recall_at"][k].as_f64().unwrap();
        assert!(at("1") <= at("5") + 1e-9 && (0.0..=1.0).contains(&at("10")), "{r}");
        assert!(r["latency_p50_ms"].as_f64().unwrap() > 0.0);
    }
    // Five paragraphs, three questions: semantic search ranks the right
    // paragraph first for all three, including the one that shares no word.
    let chunks = scores(&report, "CHUNKS");
    assert_eq!(chunks["recall_at"]["1"].as_f64(), Some(1.0), "{chunks}");
    assert_eq!(chunks["mrr"].as_f64(), Some(1.0));
    // The fused context finds every answer within ten.
    assert_eq!(scores(&report, "HYBRID_COMPLETION")["recall_at"]["10"].as_f64(), Some(1.0));
    assert!(report["results"][0].get("exact_match").is_none(), "no EM without --answers");

    // A second run reuses the remembered corpus, and the table form prints.
    let eval = |extra: &[&str]| {
        let mut args = vec!["eval", "--corpus", &corpus, "--questions", &questions];
        args.extend_from_slice(extra);
        common::recall(&data, &args)
    };
    let table =
        ok(eval(&["--types", "CHUNKS,HYBRID_COMPLETION", "--limit", "2", "--config", r#"{"lexical_weight": 0.5}"#]));
    assert!(
        table.contains("recall@1") && table.contains("HYBRID_COMPLETION") && table.contains("questions: 2"),
        "{table}"
    );
    let bad_config = eval(&["--config", "[1]"]);
    assert!(String::from_utf8_lossy(&bad_config.stderr).contains("--config takes a JSON object"));
    let bad_weight = eval(&["--types", "HYBRID_COMPLETION", "--config", r#"{"vector_weight": "high"}"#]);
    let stderr = String::from_utf8_lossy(&bad_weight.stderr);
    assert!(!bad_weight.status.success() && stderr.contains("vector_weight"), "{stderr}");

    // Bad input is a typed error, not a panic.
    let bad = common::recall(&data, &["eval", "--corpus", &questions, "--questions", &questions, "--types", "NOPE"]);
    assert!(!bad.status.success());
    let missing = common::recall(&data, &["eval", "--corpus", "/nonexistent.json", "--questions", &questions]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read /nonexistent.json"));
}

/// Answers "The honey bee." to the waggle-dance question and "Saturn" to
/// every other question.
async fn fake_reader() -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|Json(body): Json<Value>| async move {
            let prompt = body["messages"].to_string();
            let content = if prompt.contains("waggle dance") && prompt.contains("Which insect") {
                "The honey bee."
            } else {
                "Saturn"
            };
            Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_reader_eval_scores_exact_match_and_f1() {
    let endpoint = fake_reader().await;
    let dir = tempfile::tempdir().unwrap();
    let (corpus, questions) = write_inputs(dir.path());
    let data = dir.path().join("store");
    // Remembered without an LLM (rule-based extraction): the fake only answers questions.
    ok(common::recall(&data, &["eval", "--corpus", &corpus, "--questions", &questions, "--types", "CHUNKS"]));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_recall"))
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .env("LLM_API_KEY", "test-key")
            .env("LLM_ENDPOINT", &endpoint)
            .env("LLM_MODEL", "fake-reader")
            .env("EMBEDDING_PROVIDER", "local")
            .env_remove("EMBEDDING_API_KEY")
            .env_remove("EMBEDDING_ENDPOINT")
            .env_remove("RECALL_USER")
            .output()
            .unwrap()
    };
    let out = ok(run(&[
        "eval",
        "--corpus",
        &corpus,
        "--questions",
        &questions,
        "--types",
        "CHUNKS,GRAPH_COMPLETION",
        "--answers",
        "--json",
    ]));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["llm"], "fake-reader");
    assert!(scores(&report, "CHUNKS").get("exact_match").is_none(), "CHUNKS generates no answer");
    let graph = scores(&report, "GRAPH_COMPLETION");
    // One of three answers right ("The honey bee." normalises to "honey bee").
    assert!((graph["exact_match"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9, "{graph}");
    assert!((graph["f1"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9, "{graph}");
}
