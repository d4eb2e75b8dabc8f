#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! A request's `system_prompt_path` is read only inside the configured prompt
//! directories: built-in names always work, files elsewhere (by `..`, by a
//! symlink, or simply outside) are refused with a typed error, before any
//! retrieval.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use recall_core::ports::RelationalPorts;
use recall_core::{RecallResponse, SearchType, User};
use recall_engine::{Engine, EngineBuilder, EngineConfig, RecallRequest, RememberInput};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};

async fn prompt_engine(prompt_dirs: Vec<PathBuf>) -> (Engine, User) {
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(64).unwrap()),
    )
    .config(EngineConfig { prompt_dirs, ..EngineConfig::default() })
    .build()
    .unwrap();
    let user = engine.relational().users.ensure_user("prompts@example.com").await.unwrap();
    engine.remember(&user, "bees", &[RememberInput::text("Honeybees dance to share directions.")]).await.unwrap();
    (engine, user)
}

fn request(path: &Path) -> RecallRequest {
    let mut r =
        RecallRequest::new("How do bees share directions?").query_type(SearchType::RagCompletion).only_context(true);
    r.options.system_prompt_path = Some(path.display().to_string());
    r
}

fn system_prompt(results: &[RecallResponse]) -> String {
    match results.first() {
        Some(RecallResponse::Graph(e)) => e.system_prompt.clone().expect("only_context carries the system prompt"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn prompt_files_are_read_only_inside_the_allowed_directories() {
    let allowed = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(allowed.path().join("pirate.txt"), "Answer like a pirate.\n").unwrap();
    std::fs::write(outside.path().join("hidden.txt"), "the server private words\n").unwrap();
    let (engine, user) = prompt_engine(vec![allowed.path().to_path_buf()]).await;

    let ok = engine.recall(&user, &request(&allowed.path().join("pirate.txt"))).await.unwrap();
    assert_eq!(system_prompt(&ok), "Answer like a pirate.");

    let traversal = allowed.path().join("..").join(outside.path().file_name().unwrap()).join("hidden.txt");
    std::os::unix::fs::symlink(outside.path().join("hidden.txt"), allowed.path().join("link.txt")).unwrap();
    for path in [
        outside.path().join("hidden.txt"),
        traversal,
        allowed.path().join("link.txt"),
        allowed.path().join("missing.txt"),
        allowed.path().to_path_buf(),
        PathBuf::from("/etc/passwd"),
    ] {
        let err = engine.recall(&user, &request(&path)).await.unwrap_err();
        assert_eq!(err.name(), "InvalidInputError", "{}", path.display());
        assert!(err.to_string().contains("not a readable file inside an allowed prompt directory"), "{err}");
        assert!(!err.to_string().contains("private words"), "no content leaks: {err}");
    }

    // Built-in names need no directory.
    let (bare, user) = prompt_engine(Vec::new()).await;
    let builtin = bare.recall(&user, &request(Path::new("answer_simple_question.txt"))).await.unwrap();
    assert!(!system_prompt(&builtin).is_empty());
    let err = bare.recall(&user, &request(&allowed.path().join("pirate.txt"))).await.unwrap_err();
    assert_eq!(err.name(), "InvalidInputError");
}
