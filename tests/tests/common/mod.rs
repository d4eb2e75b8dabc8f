//! What the end-to-end tests share: an offline engine on fresh in-memory
//! ports, and the user the calls act for. Each test file takes what it uses.
#![allow(dead_code)]

use std::sync::Arc;

pub mod fake_llm;

use recall_core::ports::RelationalPorts;
use recall_core::User;
use recall_engine::extract::{ExtractiveSummarizer, RuleBasedExtractor};
use recall_engine::{Engine, EngineBuilder, EngineConfig};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};

/// The user most tests act for.
pub const DEFAULT_USER: &str = "default_user@example.com";

/// A builder on fresh in-memory ports, the offline embedder `dimensions`
/// wide, the rule-based extractor and the extractive summariser: remember
/// and recall with no model and no network.
pub fn offline_builder(config: EngineConfig, dimensions: usize) -> EngineBuilder {
    EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(dimensions).unwrap()),
    )
    .config(config)
    .extractor(Arc::new(RuleBasedExtractor))
    .summarizer(Arc::new(ExtractiveSummarizer::default()))
}

/// The user these calls act for (created on first use).
pub async fn me(engine: &Engine) -> User {
    engine.relational().users.ensure_user(DEFAULT_USER).await.unwrap()
}

/// An offline engine with a fake chat model (so completions run and record
/// their turns) and session memory in memory.
pub async fn engine_with_sessions() -> (Engine, Arc<recall_sessions::Sessions>) {
    let llm = fake_llm::fake_llm(Arc::new(fake_llm::Seen::default())).await;
    let chat =
        recall_openai::OpenAiChat::new(recall_openai::OpenAiConfig::new(llm, "gpt-test", Some("sk".into()))).unwrap();
    let store = Arc::new(recall_memory::MemorySessionStore::new());
    let sessions = Arc::new(recall_sessions::Sessions::new(store, recall_sessions::SessionConfig::default()));
    let engine = offline_builder(EngineConfig::default(), 64)
        .llm(Some(Arc::new(chat)))
        .sessions(sessions.clone())
        .build()
        .unwrap();
    (engine, sessions)
}

/// The accounts service on the engine's relational store, with the default
/// key derivation.
pub fn accounts(engine: &Engine) -> recall_accounts::Accounts {
    recall_accounts::Accounts::new(engine.relational().clone(), recall_accounts::CredentialsConfig::default())
}

/// The application layer on the engine, with [`accounts`].
pub fn app(engine: &Engine) -> recall_api::Application {
    recall_api::Application::new(engine.clone(), accounts(engine))
}
