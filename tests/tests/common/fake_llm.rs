//! A fake OpenAI-compatible chat server over real HTTP: it answers a
//! streamed call with `TOKENS` as Server-Sent Events (or breaks the stream
//! when asked), and a plain call with the whole answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

pub const TOKENS: [&str; 3] = ["Bees ", "dance to ", "share directions."];

/// What the fake server saw.
#[derive(Default)]
pub struct Seen {
    pub streamed: AtomicUsize,
    pub plain: AtomicUsize,
    /// Streams to break after one token (then answer normally).
    pub break_streams: AtomicUsize,
}

fn sse_chunk(text: &str) -> String {
    format!("data: {}\n\n", json!({"choices": [{"delta": {"content": text}}]}))
}

/// Starts the server; its base URL (`http://…/v1`).
pub async fn fake_llm(seen: Arc<Seen>) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let seen = seen.clone();
            async move {
                if body["stream"] == json!(true) {
                    seen.streamed.fetch_add(1, Ordering::SeqCst);
                    let broken = seen
                        .break_streams
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    let body = if broken {
                        // One token, then a chunk the client cannot read.
                        format!("{}data: {{not json\n\n", sse_chunk(TOKENS[0]))
                    } else {
                        let mut body: String = TOKENS.iter().map(|t| sse_chunk(t)).collect();
                        body.push_str("data: [DONE]\n\n");
                        body
                    };
                    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
                } else {
                    seen.plain.fetch_add(1, Ordering::SeqCst);
                    Json(json!({"choices": [{"message": {"role": "assistant", "content": TOKENS.concat()}}]}))
                        .into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// A scripted chat server: each call (plain or structured, never streamed)
/// gets the next reply of the script as the message content — or, once the
/// script is spent, `fallback`. Every request body is kept, in arrival order.
#[derive(Default)]
pub struct Script {
    pub replies: std::sync::Mutex<std::collections::VecDeque<String>>,
    pub fallback: String,
    /// When set, only calls for this structured-output schema take the
    /// script's replies; every other call gets `fallback`.
    pub only_schema: Option<String>,
    pub requests: std::sync::Mutex<Vec<Value>>,
}

impl Script {
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(replies: I, fallback: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            replies: std::sync::Mutex::new(replies.into_iter().map(Into::into).collect()),
            fallback: fallback.into(),
            only_schema: None,
            requests: Default::default(),
        })
    }

    /// The same script, its replies kept for calls of one schema.
    pub fn only_for(self: Arc<Self>, schema: &str) -> Arc<Self> {
        let mut script = Arc::try_unwrap(self).ok().expect("a fresh script");
        script.only_schema = Some(schema.to_string());
        Arc::new(script)
    }

    /// The request bodies so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The user message of request `i`.
    pub fn user_prompt(&self, i: usize) -> String {
        let requests = self.requests();
        let messages = requests[i]["messages"].as_array().cloned().unwrap_or_default();
        messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    }

    /// The system message of request `i`.
    pub fn system_prompt(&self, i: usize) -> String {
        let requests = self.requests();
        let messages = requests[i]["messages"].as_array().cloned().unwrap_or_default();
        messages.iter().find(|m| m["role"] == "system").and_then(|m| m["content"].as_str()).unwrap_or("").to_string()
    }
}

/// Starts a scripted server; its base URL (`http://…/v1`).
pub async fn scripted_llm(script: Arc<Script>) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let script = script.clone();
            async move {
                let scripted = script
                    .only_schema
                    .as_deref()
                    .is_none_or(|name| body["response_format"]["json_schema"]["name"] == name);
                script.requests.lock().unwrap().push(body);
                let next = if scripted { script.replies.lock().unwrap().pop_front() } else { None };
                let reply = next.unwrap_or_else(|| script.fallback.clone());
                Json(json!({"choices": [{"message": {"role": "assistant", "content": reply}}]}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}
