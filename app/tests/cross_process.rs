#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! One long-lived engine and a second `recall` process on the same data
//! directory: the engine's next recall sees what the other process
//! remembered, through the vector search cache and the BM25 index alike, and
//! never returns what it forgot (docs/backends.md, "Data versions").

mod common;

use std::path::Path;

use recall::{build_engine, caller, OpenMode, Settings};
use recall_core::{RecallResponse, SearchType};
use recall_engine::{RecallRequest, RememberInput};

fn other_process(data_dir: &Path, args: &[&str]) {
    let out = common::recall(data_dir, args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn texts(results: &[RecallResponse]) -> String {
    results.iter().map(RecallResponse::text).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_engine_sees_another_process_remember_and_forget() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::embedded(dir.path()).unwrap();
    let (engine, _) = build_engine(&settings, OpenMode::Create).await.unwrap();
    let me = caller(&engine, &settings, None, true).await.unwrap().unwrap();
    engine
        .remember(&me, "sea", &[RememberInput::text("Kelp forests shelter sea otters along the rocky coast.")])
        .await
        .unwrap();
    let chunks = |q: &str| RecallRequest::new(q).query_type(SearchType::Chunks).top_k(5);
    let lexical = |q: &str| RecallRequest::new(q).query_type(SearchType::ChunksLexical).top_k(5);
    // Load the search cache and build the BM25 index before the other process writes.
    assert!(texts(&engine.recall(&me, &chunks("lanternfish glow")).await.unwrap()).contains("Kelp"));
    assert!(!texts(&engine.recall(&me, &lexical("kelp otters")).await.unwrap()).is_empty());
    assert!(!texts(&engine.recall(&me, &lexical("lanternfish")).await.unwrap()).contains("Lanternfish"));

    let file = dir.path().join("lanternfish.txt");
    std::fs::write(&file, "Lanternfish glow in the twilight zone of the deep ocean.").unwrap();
    other_process(dir.path(), &["remember", "--dataset", "sea", file.to_str().unwrap()]);

    let found = texts(&engine.recall(&me, &chunks("lanternfish glow twilight")).await.unwrap());
    assert!(found.contains("Lanternfish"), "CHUNKS sees the other process's document: {found}");
    let found = texts(&engine.recall(&me, &lexical("lanternfish")).await.unwrap());
    assert!(found.contains("Lanternfish"), "CHUNKS_LEXICAL sees it too: {found}");

    other_process(dir.path(), &["forget", "--dataset", "sea", "--document", "lanternfish.txt"]);
    for request in [chunks("lanternfish glow twilight"), lexical("lanternfish"), chunks("kelp")] {
        let after = texts(&engine.recall(&me, &request).await.unwrap());
        assert!(!after.contains("Lanternfish"), "a forgotten document never comes back: {after}");
    }
    assert!(texts(&engine.recall(&me, &chunks("kelp otters")).await.unwrap()).contains("Kelp"));

    // The engine's own write after the other process's: still consistent.
    engine.remember(&me, "sea", &[RememberInput::text("Anglerfish lure prey with a glowing esca.")]).await.unwrap();
    let mine = texts(&engine.recall(&me, &lexical("anglerfish esca")).await.unwrap());
    assert!(mine.contains("Anglerfish"), "{mine}");
}
