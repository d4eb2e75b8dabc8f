#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use recall_conformance::{graph_store_conformance, relational_store_conformance, vector_store_conformance};
use recall_memory::{MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};

#[tokio::test]
async fn memory_graph_store_conforms() {
    graph_store_conformance(Arc::new(MemoryGraphStore::new()), 50_000).await;
}

#[tokio::test]
async fn memory_vector_store_conforms() {
    vector_store_conformance(Arc::new(MemoryVectorStore::new()), "Mem").await;
}

#[tokio::test]
async fn memory_relational_store_conforms() {
    relational_store_conformance(Arc::new(MemoryRelationalStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_session_store_conforms() {
    recall_conformance::session_store_conformance(Arc::new(recall_memory::MemorySessionStore::new())).await;
}
