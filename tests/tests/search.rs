#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The legacy search() end to end on the in-memory stack: Cognee's check
//! order, strict datasets, the backwards-compatible result shapes (per
//! dataset, verbose, access control off) and history under the requested type.

mod common;

use common::{me, offline_builder};

use recall_core::{RecallError, SearchType};
use recall_engine::{Engine, EngineConfig, RememberInput, SearchRequest, DEFAULT_SYSTEM_PROMPT};
use serde_json::Value;

fn engine(config: EngineConfig) -> Engine {
    offline_builder(config, 64).build().unwrap()
}

async fn fixture(config: EngineConfig) -> Engine {
    let engine = engine(config);
    engine
        .remember(
            &me(&engine).await,
            "space",
            &[RememberInput::text("Jupiter is the largest planet. Saturn has rings.")],
        )
        .await
        .unwrap();
    engine
}

#[tokio::test]
async fn one_result_per_dataset_with_the_prompt_context_or_objects() {
    let engine = fixture(EngineConfig::default()).await;
    // only_context on the default GRAPH_COMPLETION: the user prompt, built with search()'s system prompt.
    let out = search(&engine, &SearchRequest::new("Which planet is the largest?").only_context(true)).await.unwrap();
    assert_eq!(out.len(), 1);
    let ds = engine.access().dataset(&me(&engine).await, "space").await.unwrap();
    assert_eq!(out[0]["dataset_id"], ds.id.to_string());
    assert_eq!(out[0]["dataset_name"], "space");
    assert_eq!(out[0]["dataset_tenant_id"], Value::Null);
    let prompt = out[0]["search_result"].as_str().unwrap();
    assert!(prompt.contains("Connections:") && prompt.contains("Which planet is the largest?"), "{prompt}");
    assert!(out[0].get("error").is_none());

    // CHUNKS: the payload dicts with their distances.
    let out = search(&engine, &SearchRequest::new("Jupiter").query_type(SearchType::Chunks).top_k(1)).await.unwrap();
    let hits = out[0]["search_result"].as_array().unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0]["text"].as_str().unwrap().contains("Jupiter"));
    assert!(hits[0]["score"].as_f64().is_some());

    // Verbose: every part of the search, the system prompt included.
    let mut verbose = SearchRequest::new("Which planet is the largest?").only_context(true);
    verbose.verbose = true;
    let out = search(&engine, &verbose).await.unwrap();
    for key in
        ["text_result", "context_result", "objects_result", "user_prompt_result", "system_prompt_result", "evidence"]
    {
        assert!(out[0].get(key).is_some(), "{key}: {}", out[0]);
    }
    assert_eq!(out[0]["system_prompt_result"], DEFAULT_SYSTEM_PROMPT);
    assert!(!out[0]["objects_result"].as_array().unwrap().is_empty());
    assert!(out[0].get("search_result").is_none());

    // History is recorded under the requested type.
    let history = engine.search_history(&me(&engine).await).await.unwrap();
    assert!(history.iter().any(|h| h.text == "Jupiter"), "{history:?}");
}

#[tokio::test]
async fn without_access_control_a_single_list_result_is_returned_bare() {
    let engine = fixture(EngineConfig { access_control: false, ..Default::default() }).await;
    engine
        .remember(&me(&engine).await, "space", &[RememberInput::text("Jupiter has a Great Red Spot.")])
        .await
        .unwrap();
    let out = search(&engine, &SearchRequest::new("Jupiter").query_type(SearchType::Chunks).top_k(2)).await.unwrap();
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out.iter().all(|hit| hit["score"].is_number() && hit.get("dataset_id").is_none()));
}

#[tokio::test]
async fn datasets_users_and_single_dataset_types_are_checked_in_order() {
    let fresh = engine(EngineConfig::default());
    // Validation comes before any dataset lookup.
    let mut bad = SearchRequest::new("q");
    bad.max_iter = Some(0);
    assert_eq!(search(&fresh, &bad).await.unwrap_err().name(), "InvalidMaxIter");

    // A user with no dataset at all: unscoped is 403 "for any dataset", an
    // explicitly empty list is "No datasets found.".
    let err = search(&fresh, &SearchRequest::new("q")).await.unwrap_err();
    assert_eq!(err.to_string(), "Request owner does not have permission: [read] for any dataset.");
    assert_eq!((err.name(), err.http_status()), ("PermissionDeniedError", 403));
    let mut empty = SearchRequest::new("q");
    empty.datasets = Some(Vec::new());
    assert_eq!(search(&fresh, &empty).await.unwrap_err().to_string(), "No datasets found.");

    let engine = fixture(EngineConfig::default()).await;
    engine.remember(&me(&engine).await, "other", &[RememberInput::text("Mars is red.")]).await.unwrap();
    let err = search(&engine, &SearchRequest::new("q").datasets(["space", "nope"])).await.unwrap_err();
    assert!(matches!(err, RecallError::DatasetNotFound { ref missing } if missing == &["nope".to_string()]));
    // SKILLS needs exactly one explicit dataset.
    let skills = SearchRequest::new("how do I deploy").query_type(SearchType::Skills);
    let err = search(&engine, &skills).await.unwrap_err();
    assert_eq!(
        (err.name(), err.to_string().as_str()),
        ("InvalidSkillsDatasetScope", "SKILLS search requires exactly one explicit dataset.")
    );
    let out = search(&engine, &skills.clone().datasets(["space"])).await.unwrap();
    assert_eq!(out[0]["search_result"], serde_json::json!([]), "no skills in the dataset");
    // A dataset id wins over names.
    let mut by_id = SearchRequest::new("Mars").query_type(SearchType::Chunks).datasets(["space"]);
    by_id.dataset_ids = Some(vec![engine.access().dataset(&me(&engine).await, "other").await.unwrap().id]);
    let out = search(&engine, &by_id).await.unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["dataset_name"], "other");
}

/// The legacy search's JSON, shaped as a front end shapes it.
async fn search(engine: &Engine, request: &SearchRequest) -> recall_core::Result<Vec<Value>> {
    let payloads = engine.search(&me(engine).await, request).await?;
    Ok(recall_api::search_results(&payloads, request.verbose, engine.settings().access_control))
}
