#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The OpenAI-compatible adapter against a fake server started by the test
//! (real HTTP on loopback).

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use futures::StreamExt;
use recall_core::ports::{ChatRequest, Embedder, LlmClient};
use recall_core::RecallError;
use recall_openai::{OpenAiChat, OpenAiConfig, OpenAiEmbedder};
use serde_json::{json, Value};

#[derive(Default)]
struct Seen {
    bodies: Vec<Value>,
    auth: Vec<Option<String>>,
    /// Status codes to answer with before succeeding.
    failures: Vec<u16>,
}

type Shared = Arc<Mutex<Seen>>;

async fn embeddings(State(seen): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> impl IntoResponse {
    let mut s = seen.lock().unwrap();
    s.auth.push(headers.get("authorization").map(|v| v.to_str().unwrap().to_string()));
    s.bodies.push(body.clone());
    if let Some(code) = s.failures.pop() {
        return (StatusCode::from_u16(code).unwrap(), Json(json!({"error": "nope"}))).into_response();
    }
    let inputs = body["input"].as_array().unwrap().clone();
    // Answer in reverse order with explicit indexes, as some servers do.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"index": i, "embedding": [t.as_str().unwrap().len() as f32, i as f32, 1.0]}))
        .collect();
    Json(json!({"data": data})).into_response()
}

async fn chat(State(seen): State<Shared>, Json(body): Json<Value>) -> impl IntoResponse {
    let mut s = seen.lock().unwrap();
    s.bodies.push(body.clone());
    if let Some(code) = s.failures.pop() {
        return (StatusCode::from_u16(code).unwrap(), "failure").into_response();
    }
    if body["stream"] == json!(true) {
        let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
                   data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
                   data: [DONE]\n\n";
        return ([("content-type", "text/event-stream")], sse).into_response();
    }
    let content = if body.get("response_format").is_some() {
        "```json\n{\"answer\": \"42\"}\n```".to_string()
    } else {
        format!("echo: {}", body["messages"][1]["content"].as_str().unwrap())
    };
    Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]})).into_response()
}

async fn start() -> (String, Shared) {
    let seen: Shared = Arc::default();
    let app = Router::new()
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/chat/completions", post(chat))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

#[tokio::test]
async fn embeddings_are_batched_ordered_and_authenticated() {
    let (url, seen) = start().await;
    let e = OpenAiEmbedder::new(
        OpenAiConfig::new(url, "openai/text-embedding-3-small", Some("sk-test".into())),
        3,
        true,
        16,
    )
    .unwrap();
    let v = e.embed(&["a".into(), "bbb".into()]).await.unwrap();
    assert_eq!(v, vec![vec![1.0, 0.0, 1.0], vec![3.0, 1.0, 1.0]]);
    let s = seen.lock().unwrap();
    assert_eq!(s.bodies[0]["model"], "text-embedding-3-small");
    assert_eq!(s.bodies[0]["dimensions"], 3);
    assert_eq!(s.auth[0].as_deref(), Some("Bearer sk-test"));
}

#[tokio::test]
async fn wrong_width_from_the_server_is_an_error() {
    let (url, _seen) = start().await;
    let e = OpenAiEmbedder::new(OpenAiConfig::new(url, "m", None), 8, false, 16).unwrap();
    let err = e.embed(&["a".into()]).await.unwrap_err();
    assert!(err.to_string().contains("returned 3 dimensions"), "{err}");
}

#[tokio::test]
async fn retries_server_errors_and_maps_payment_required() {
    let (url, seen) = start().await;
    let e = OpenAiEmbedder::new(OpenAiConfig::new(url.clone(), "m", None), 3, false, 16).unwrap();
    seen.lock().unwrap().failures = vec![503, 500];
    assert_eq!(e.embed(&["x".into()]).await.unwrap().len(), 1);
    assert_eq!(seen.lock().unwrap().bodies.len(), 3, "two failures, then success");

    seen.lock().unwrap().failures = vec![402];
    let err = e.embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(err, RecallError::LlmPaymentRequired(_)));
    assert_eq!(err.http_status(), 402);

    seen.lock().unwrap().failures = vec![400];
    let err = e.embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(err, RecallError::Provider(_)), "a 400 is not retried: {err:?}");
}

#[tokio::test]
async fn chat_structured_and_streaming() {
    let (url, seen) = start().await;
    let llm = OpenAiChat::new(OpenAiConfig::new(url, "gpt-test", None)).unwrap();
    let req = ChatRequest::new("be brief", "hi");
    assert_eq!(llm.chat(&req).await.unwrap(), "echo: hi");
    assert_eq!(seen.lock().unwrap().bodies[0]["messages"][0], json!({"role": "system", "content": "be brief"}));

    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
    let v = llm.structured(&req, "Answer", &schema).await.unwrap();
    assert_eq!(v, json!({"answer": "42"}));
    assert_eq!(seen.lock().unwrap().bodies[1]["response_format"]["json_schema"]["schema"], schema);

    let deltas: Vec<String> = llm.stream(&req).await.unwrap().map(|d| d.unwrap()).collect().await;
    assert_eq!(deltas, vec!["Hel", "lo"]);
}
