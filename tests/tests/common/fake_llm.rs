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
