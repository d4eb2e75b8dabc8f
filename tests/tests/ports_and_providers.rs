#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The engine on in-memory ports (failing embedder → errored pipeline run,
//! custom retriever registration) and on an OpenAI-compatible embeddings
//! endpoint served by a fake server started by the test (real HTTP).

mod common;

use common::me;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use axum::routing::post;
use axum::{Json, Router};
use recall::{build_engine, OpenMode, Settings};
use recall_core::ports::{Embedder, RelationalPorts};
use recall_core::{DataStatus, PipelineRunStatus, RecallError, RecallResponse, Result, SearchType};
use recall_engine::{Engine, EngineBuilder, RecallRequest, RememberInput};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};
use recall_retrievers::{LlmContext, Retriever, RetrieverCall};
use serde_json::{json, Value};

/// Fails while `broken` is set, otherwise embeds offline.
struct FlakyEmbedder {
    broken: AtomicBool,
    inner: HashingEmbedder,
}

#[async_trait]
impl Embedder for FlakyEmbedder {
    fn model(&self) -> String {
        "flaky".into()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(RecallError::Provider("embedding service for ops@example.com is down".into()));
        }
        self.inner.embed(texts).await
    }
}

fn memory_engine(embedder: Arc<dyn Embedder>) -> EngineBuilder {
    EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        embedder,
    )
}

#[tokio::test]
async fn a_failed_build_is_recorded_and_redone_on_the_next_remember() {
    let embedder = Arc::new(FlakyEmbedder { broken: AtomicBool::new(true), inner: HashingEmbedder::new(64).unwrap() });
    let engine: Engine = memory_engine(embedder.clone()).build().unwrap();
    let err = engine
        .remember(&me(&engine).await, "docs", &[RememberInput::text("Bees dance to share directions.")])
        .await
        .unwrap_err();
    assert!(matches!(err, RecallError::Provider(_)));

    let ds = my_datasets(&engine).await[0].clone();
    let runs = engine.relational().runs.list_runs(ds.id).await.unwrap();
    let cognify: Vec<_> = runs.iter().filter(|r| r.pipeline_name == "cognify_pipeline").collect();
    assert_eq!(cognify.len(), 2);
    assert_eq!(cognify[1].status, PipelineRunStatus::Errored);
    assert_eq!(cognify[1].error_class.as_deref(), Some("ProviderError"));
    assert_eq!(cognify[1].error_message.as_deref(), Some("embedding service for [redacted] is down"), "PII scrubbed");
    let items = engine.relational().data.list_data(ds.id).await.unwrap();
    assert_eq!(items[0].status, DataStatus::Pending, "not marked done");

    embedder.broken.store(false, Ordering::SeqCst);
    let outcome = engine
        .remember(&me(&engine).await, "docs", &[RememberInput::text("Bees dance to share directions.")])
        .await
        .unwrap();
    assert_eq!(outcome.items_added, 1, "the pending item is redone, not skipped");
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("bee dance")).await.unwrap();
    assert_eq!(results.len(), 1);
}

/// Answers every query with the query itself, reversed.
struct ReverseRetriever {
    calls: AtomicUsize,
}

#[async_trait]
impl Retriever for ReverseRetriever {
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let query = call.query;
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(vec![json!({"text": query.chars().rev().collect::<String>(), "score": 0.0})])
    }
    async fn get_context_from_objects(&self, _call: &RetrieverCall<'_>, objects: &[Value]) -> Result<LlmContext> {
        Ok(LlmContext::List(objects.iter().map(|o| o["text"].as_str().unwrap().to_string()).collect()))
    }
    async fn get_completion_from_context(
        &self,
        _call: &RetrieverCall<'_>,
        objects: &[Value],
        _: &LlmContext,
    ) -> Result<Option<Vec<Value>>> {
        Ok(Some(objects.to_vec()))
    }
}

#[tokio::test]
async fn a_registered_retriever_replaces_the_built_in_one() {
    let custom = Arc::new(ReverseRetriever { calls: AtomicUsize::new(0) });
    let engine = memory_engine(Arc::new(HashingEmbedder::new(32).unwrap()))
        .register_retriever(SearchType::Chunks, custom.clone())
        .build()
        .unwrap();
    engine.remember(&me(&engine).await, "a", &[RememberInput::text("alpha")]).await.unwrap();
    engine.remember(&me(&engine).await, "b", &[RememberInput::text("beta")]).await.unwrap();
    let results = engine.recall(&me(&engine).await, &RecallRequest::new("abc")).await.unwrap();
    let texts: Vec<&str> = results.iter().map(RecallResponse::text).collect();
    assert_eq!(texts, vec!["cba", "cba"], "once per dataset");
    assert_eq!(custom.calls.load(Ordering::SeqCst), 2);
}

async fn fake_embeddings_server(calls: Arc<AtomicUsize>) -> String {
    let app = Router::new().route(
        "/v1/embeddings",
        post(move |Json(body): Json<Value>| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                // A toy model: 8 buckets of letter counts.
                let data: Vec<Value> = body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let mut v = vec![0f32; 8];
                        for c in t.as_str().unwrap().chars().filter(|c| c.is_ascii_alphabetic()) {
                            v[(c.to_ascii_lowercase() as usize) % 8] += 1.0;
                        }
                        json!({"index": i, "embedding": v})
                    })
                    .collect();
                Json(json!({"data": data, "model": body["model"]}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_and_recall_through_an_openai_compatible_embedding_endpoint() {
    let calls = Arc::new(AtomicUsize::new(0));
    let endpoint = fake_embeddings_server(calls.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::embedded(dir.path()).unwrap();
    settings.embedding_endpoint = endpoint;
    settings.embedding_model = "toy-embedder".into();
    settings.embedding_dimensions = 8;
    settings.embedding_batch_size = 2;
    let (engine, active) = build_engine(&settings, OpenMode::Create).await.unwrap();
    assert_eq!(active.embedder, "toy-embedder (8 dimensions)");
    let texts = ["aaaa aaaa", "bbbb bbbb", "cccc cccc"];
    let inputs: Vec<RememberInput> = texts.iter().map(|t| RememberInput::text(*t)).collect();
    engine.remember(&me(&engine).await, "docs", &inputs).await.unwrap();
    let after_remember = calls.load(Ordering::SeqCst);
    assert!(after_remember >= 3, "batched calls went to the endpoint");

    let results = engine.recall(&me(&engine).await, &RecallRequest::new("bbb").top_k(1)).await.unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].text(), "bbbb bbbb");
    assert_eq!(calls.load(Ordering::SeqCst), after_remember + 1, "one query embedding");
}

/// The datasets the test user can see.
async fn my_datasets(engine: &recall_engine::Engine) -> Vec<recall_core::Dataset> {
    let user = me(engine).await;
    engine.access().datasets(&user).await.unwrap().into_iter().map(|l| l.dataset).collect()
}
