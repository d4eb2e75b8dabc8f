//! `cargo run -p custom-retriever-example`: remember two notes in memory,
//! then recall with the custom retriever registered for CHUNKS_LEXICAL.

use std::sync::Arc;

use custom_retriever_example::ExactPhraseRetriever;
use recall_core::ports::RelationalPorts;
use recall_core::SearchType;
use recall_engine::{EngineBuilder, RecallRequest, RememberInput};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};

#[tokio::main]
async fn main() -> recall_core::Result<()> {
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(384)?),
    )
    // Explicit and once: this replaces the built-in BM25 retriever.
    .register_retriever(SearchType::ChunksLexical, Arc::new(ExactPhraseRetriever))
    .build()?;
    // Every call acts for an explicit user.
    let user = engine.relational().users.ensure_user("reader@example.com").await?;
    engine
        .remember(
            &user,
            "notes",
            &[RememberInput::text("Bees dance to share directions."), RememberInput::text("Ants follow trails.")],
        )
        .await?;
    let request = RecallRequest::new("\"share directions\"").query_type(SearchType::ChunksLexical);
    for item in engine.recall(&user, &request).await? {
        println!("{}", item.text());
    }
    Ok(())
}
