#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The shared vector-store conformance suite against a real LanceDB directory.

use std::sync::Arc;

use recall_conformance::vector_store_conformance;
use recall_lancedb::LanceVectorStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_vector_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LanceVectorStore::connect(dir.path().to_str().expect("utf8 path")).await.expect("lancedb opens");
    vector_store_conformance(Arc::new(store), "Lance").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancedb_collection_spec_survives_reopen() {
    use recall_core::ports::{EmbeddingSpec, VectorStore};
    use recall_core::DatasetId;
    let dir = tempfile::tempdir().expect("tempdir");
    let uri = dir.path().to_str().expect("utf8 path").to_string();
    let spec = EmbeddingSpec { model: "m".into(), dimensions: 3 };
    {
        let store = LanceVectorStore::connect(&uri).await.unwrap();
        store.ensure_collection(DatasetId(uuid::Uuid::new_v4()), "Thing_text", &spec).await.unwrap();
    }
    let store = LanceVectorStore::connect(&uri).await.unwrap();
    assert_eq!(store.collection_spec("Thing_text").await.unwrap(), Some(spec));
    let err = store
        .ensure_collection(
            DatasetId(uuid::Uuid::new_v4()),
            "Thing_text",
            &EmbeddingSpec { model: "m".into(), dimensions: 5 },
        )
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), 409);
}
