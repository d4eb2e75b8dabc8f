//! OpenAI-compatible chat and embeddings over HTTP: OpenAI itself, Ollama,
//! vLLM, a LiteLLM proxy, or anything else that speaks `/chat/completions`
//! and `/embeddings`.

use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::stream::BoxStream;
use futures::StreamExt;
use recall_core::ports::{ChatRequest, Embedder, LlmClient};
use recall_core::{RecallError, Result};
use serde::Deserialize;
use serde_json::{json, Value};

/// Where and how to reach an OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub endpoint: String,
    pub api_key: Option<recall_core::Secret>,
    pub model: String,
    pub timeout: Duration,
    /// Attempts for a request that failed with 429, 5xx or a transport error.
    pub max_attempts: u32,
}

impl OpenAiConfig {
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>, api_key: Option<String>) -> Self {
        let api_key = api_key.map(recall_core::Secret::from);
        Self {
            endpoint: endpoint.into(),
            api_key,
            model: model.into(),
            timeout: Duration::from_secs(120),
            max_attempts: 3,
        }
    }
}

/// Cognee model names carry a LiteLLM provider prefix (`openai/gpt-4o-mini`);
/// an OpenAI-compatible server wants the bare name.
fn wire_model(model: &str) -> &str {
    model.strip_prefix("openai/").unwrap_or(model)
}

struct Http {
    client: reqwest::Client,
    config: OpenAiConfig,
}

impl Http {
    fn new(config: OpenAiConfig) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| RecallError::Provider(format!("cannot build HTTP client: {e}")))?;
        Ok(Self { client, config })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.config.endpoint.trim_end_matches('/'), path)
    }

    fn request(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self.client.post(self.url(path)).json(body);
        if let Some(key) = self.config.api_key.as_ref().map(|k| k.expose()).filter(|k| !k.trim().is_empty()) {
            req = req.bearer_auth(key);
        }
        req
    }

    /// Sends with retries on 429/5xx/transport errors; maps the final failure.
    async fn send(&self, path: &str, body: &Value) -> Result<reqwest::Response> {
        let attempts = self.config.max_attempts.max(1);
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 * 2u64.pow(attempt - 1))).await;
            }
            match self.request(path, body).send().await {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp.text().await.unwrap_or_default();
                    if status == 402 {
                        return Err(RecallError::LlmPaymentRequired(
                            "LLM provider requires payment or token budget is exhausted.".into(),
                        ));
                    }
                    last = format!("{} returned HTTP {status}: {}", self.url(path), truncate(&text, 300));
                    if status != 429 && status < 500 {
                        break;
                    }
                }
                Err(e) => last = format!("{} unreachable: {e}", self.url(path)),
            }
        }
        Err(RecallError::Provider(last))
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

// ---------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------

/// Embeddings from `POST {endpoint}/embeddings`.
pub struct OpenAiEmbedder {
    http: Http,
    dimensions: usize,
    /// Send `dimensions` in the request (models that can shorten their output).
    send_dimensions: bool,
    batch_size: usize,
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingDatum>,
}

#[derive(Deserialize)]
struct EmbeddingDatum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbedder {
    pub fn new(config: OpenAiConfig, dimensions: usize, send_dimensions: bool, batch_size: usize) -> Result<Self> {
        if dimensions == 0 {
            return Err(RecallError::invalid_input("EMBEDDING_DIMENSIONS must be positive"));
        }
        Ok(Self { http: Http::new(config)?, dimensions, send_dimensions, batch_size: batch_size.max(1) })
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> String {
        self.http.config.model.clone()
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn batch_size(&self) -> usize {
        self.batch_size
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut body = json!({"model": wire_model(&self.http.config.model), "input": texts});
        if self.send_dimensions {
            body["dimensions"] = json!(self.dimensions);
        }
        let resp = self.http.send("embeddings", &body).await?;
        let parsed: EmbeddingResponse =
            resp.json().await.map_err(|e| RecallError::Provider(format!("unreadable embeddings response: {e}")))?;
        if parsed.data.len() != texts.len() {
            return Err(RecallError::Provider(format!(
                "embeddings endpoint returned {} vectors for {} inputs",
                parsed.data.len(),
                texts.len()
            )));
        }
        let mut data = parsed.data;
        // Servers may answer out of order; `index` says where each belongs.
        if data.iter().all(|d| d.index.is_some()) {
            data.sort_by_key(|d| d.index);
        }
        let vectors: Vec<Vec<f32>> = data.into_iter().map(|d| d.embedding).collect();
        if let Some(bad) = vectors.iter().find(|v| v.len() != self.dimensions) {
            return Err(RecallError::Provider(format!(
                "embedding model '{}' returned {} dimensions, but EMBEDDING_DIMENSIONS is {}",
                self.http.config.model,
                bad.len(),
                self.dimensions
            )));
        }
        Ok(vectors)
    }
}

// ---------------------------------------------------------------------------
// Chat
// ---------------------------------------------------------------------------

/// Chat completions from `POST {endpoint}/chat/completions`.
pub struct OpenAiChat {
    http: Http,
}

impl OpenAiChat {
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        Ok(Self { http: Http::new(config)? })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": wire_model(&self.http.config.model),
            "messages": request.messages,
        });
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = request.max_tokens {
            body["max_tokens"] = json!(m);
        }
        body
    }
}

fn first_content(v: &Value) -> Result<String> {
    v.pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RecallError::Provider("chat completion has no choices[0].message.content".into()))
}

#[async_trait]
impl LlmClient for OpenAiChat {
    fn model(&self) -> String {
        self.http.config.model.clone()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<String> {
        let resp = self.http.send("chat/completions", &self.body(request)).await?;
        let v: Value =
            resp.json().await.map_err(|e| RecallError::Provider(format!("unreadable chat response: {e}")))?;
        first_content(&v)
    }

    async fn structured(&self, request: &ChatRequest, schema_name: &str, schema: &Value) -> Result<Value> {
        let mut body = self.body(request);
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": schema, "strict": strict_compatible(schema)}
        });
        let resp = self.http.send("chat/completions", &body).await?;
        let v: Value =
            resp.json().await.map_err(|e| RecallError::Provider(format!("unreadable chat response: {e}")))?;
        let content = first_content(&v)?;
        serde_json::from_str(strip_code_fence(&content))
            .map_err(|e| RecallError::Provider(format!("structured output is not valid JSON: {e}")))
    }

    async fn stream(&self, request: &ChatRequest) -> Result<BoxStream<'static, Result<String>>> {
        let mut body = self.body(request);
        body["stream"] = json!(true);
        let resp = self.http.send("chat/completions", &body).await?;
        let events = resp.bytes_stream().eventsource();
        let deltas = events
            .take_while(|ev| futures::future::ready(!matches!(ev, Ok(e) if e.data.trim() == "[DONE]")))
            .filter_map(|ev| async move {
                match ev {
                    Err(e) => Some(Err(RecallError::Provider(format!("chat stream broke: {e}")))),
                    Ok(e) => match serde_json::from_str::<Value>(&e.data) {
                        Err(err) => Some(Err(RecallError::Provider(format!("bad stream chunk: {err}")))),
                        Ok(v) => v
                            .pointer("/choices/0/delta/content")
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty())
                            .map(|s| Ok(s.to_string())),
                    },
                }
            });
        Ok(deltas.boxed())
    }
}

/// Whether OpenAI's strict mode can take the schema: every object closed
/// (`additionalProperties: false`) with all its properties required. A
/// schema with an open object (an agent step's free-form arguments) is sent
/// non-strict, which strict mode would refuse.
fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("object")) || map.contains_key("properties") {
                let props = map.get("properties").and_then(Value::as_object);
                let required = map.get("required").and_then(Value::as_array);
                let all_required = props.is_none_or(|p| {
                    p.keys().all(|k| required.is_some_and(|r| r.iter().any(|v| v.as_str() == Some(k))))
                });
                if map.get("additionalProperties") != Some(&json!(false)) || !all_required {
                    return false;
                }
            }
            map.values().all(strict_compatible)
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

/// Some models wrap JSON in a ```json fence even when asked not to.
fn strip_code_fence(s: &str) -> &str {
    let t = s.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_prefix_and_fences() {
        assert_eq!(wire_model("openai/gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(wire_model("llama3"), "llama3");
        assert_eq!(strip_code_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_code_fence(" {\"a\":1} "), "{\"a\":1}");
    }

    #[test]
    fn only_closed_schemas_are_strict() {
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}},
                            "required": ["a", "b"], "additionalProperties": false});
        assert!(strict_compatible(&closed));
        let mut optional = closed.clone();
        optional["required"] = json!(["a"]);
        assert!(!strict_compatible(&optional));
        let mut open = closed.clone();
        open["properties"]["b"]["additionalProperties"] = json!(true);
        assert!(!strict_compatible(&open));
    }
}
