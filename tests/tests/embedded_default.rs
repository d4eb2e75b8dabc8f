#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! End to end on the embedded default (SQLite + SQL graph tables + LanceDB on
//! local disk, offline embedder): remember → recall CHUNKS, idempotence,
//! typed errors that write nothing, forget, and the embedding-width check.

mod common;

use common::me;

use std::path::{Path, PathBuf};

use recall::{build_engine, OpenMode, Settings};
use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::{PipelineRunStatus, RecallError, RecallResponse, SearchType};
use recall_engine::{Engine, RecallRequest, RememberInput};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples")
}

fn sample_files() -> Vec<RememberInput> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(samples()).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.into_iter().map(RememberInput::File).collect()
}

async fn engine(dir: &Path, mode: OpenMode) -> Result<Engine, RecallError> {
    build_engine(&Settings::embedded(dir).unwrap(), mode).await.map(|(e, _)| e)
}

fn graph_entries(results: &[RecallResponse]) -> Vec<&recall_core::ResponseGraphEntry> {
    results
        .iter()
        .map(|r| match r {
            RecallResponse::Graph(e) => e,
            other => panic!("unexpected source {}", other.source()),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_then_recall_chunks_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), OpenMode::Create).await.unwrap();
    let outcome = engine.remember(&me(&engine).await, "science", &sample_files()).await.unwrap();
    assert_eq!(outcome.items_added, 4);
    assert_eq!(outcome.items_unchanged, 0);
    assert!(outcome.chunks_written >= 4);

    // No LLM configured: the default type is CHUNKS.
    let results = engine
        .recall(&me(&engine).await, &RecallRequest::new("How does a sourdough starter stay alive?"))
        .await
        .unwrap();
    let items = graph_entries(&results);
    assert_eq!(items.len(), outcome.chunks_written.min(15), "top_k 15 caps the chunks");
    let top = items[0];
    assert_eq!(top.search_type, SearchType::Chunks);
    assert_eq!(top.kind, "chunk");
    assert_eq!(top.dataset_name.as_deref(), Some("science"));
    assert_eq!(top.metadata["document_name"], "sourdough.txt");
    assert!(top.text.to_lowercase().contains("starter"), "{}", top.text);
    for key in ["data_id", "chunk_id", "chunk_index", "document_name"] {
        assert!(top.metadata.contains_key(key), "metadata has {key}");
    }
    assert_eq!(top.raw["chunk_size"].as_u64().unwrap() as usize, top.text.split_whitespace().count());
    assert!(top.raw.contains_key("cut_type"));
    // Scores are raw cosine distances, best (lowest) first.
    let scores: Vec<f64> = items.iter().map(|i| i.score.unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    assert!(scores[0] >= 0.0 && scores[0] < 1.0);

    let planets =
        engine.recall(&me(&engine).await, &RecallRequest::new("largest planet Jupiter moons").top_k(2)).await.unwrap();
    let planets = graph_entries(&planets);
    assert_eq!(planets.len(), 2);
    assert_eq!(planets[0].metadata["document_name"], "solar-system.md");

    // The chunk id in metadata names a real chunk node in the graph.
    let ds = my_datasets(&engine).await;
    assert_eq!(ds.len(), 1);
    let chunk_id = uuid::Uuid::parse_str(top.metadata["chunk_id"].as_str().unwrap()).unwrap();
    let nodes = engine.graph().get_nodes(ds[0].id, &[chunk_id]).await.unwrap();
    assert_eq!(nodes[0].node_type, "DocumentChunk");
    assert_eq!(nodes[0].properties["text"], top.text.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembering_the_same_content_twice_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), OpenMode::Create).await.unwrap();
    let first = engine.remember(&me(&engine).await, "docs", &sample_files()).await.unwrap();
    let ds = my_datasets(&engine).await[0].clone();
    let graph_before = engine.graph().get_graph(ds.id).await.unwrap();
    let vectors_before = engine.vectors().count(ds.id, DOCUMENT_CHUNK_TEXT).await.unwrap();
    assert_eq!(engine.graph().nodes_by_type(ds.id, "TextDocument").await.unwrap().len(), 4);
    assert_eq!(engine.graph().nodes_by_type(ds.id, "DocumentChunk").await.unwrap().len(), first.chunks_written);
    assert_eq!(vectors_before as usize, first.chunks_written);

    let again = engine.remember(&me(&engine).await, "docs", &sample_files()).await.unwrap();
    assert_eq!(again.items_added, 0);
    assert_eq!(again.items_unchanged, 4);
    assert_eq!(again.chunks_written, 0);
    assert_eq!(engine.graph().get_graph(ds.id).await.unwrap(), graph_before, "the graph is unchanged, byte for byte");
    assert_eq!(engine.vectors().count(ds.id, DOCUMENT_CHUNK_TEXT).await.unwrap(), vectors_before);
    assert_eq!(engine.relational().data.count_data(ds.id).await.unwrap(), 4);

    // Each remember records add and cognify runs: started, then completed.
    let runs = engine.relational().runs.list_runs(ds.id).await.unwrap();
    assert_eq!(runs.len(), 8);
    let statuses: Vec<(&str, PipelineRunStatus)> = runs.iter().map(|r| (r.pipeline_name.as_str(), r.status)).collect();
    assert_eq!(
        &statuses[..4],
        &[
            ("add_pipeline", PipelineRunStatus::Started),
            ("add_pipeline", PipelineRunStatus::Completed),
            ("cognify_pipeline", PipelineRunStatus::Started),
            ("cognify_pipeline", PipelineRunStatus::Completed),
        ]
    );

    // A run whose process died reads `started` until a later run of its
    // pipeline finishes; then it is errored, and the dataset reads completed.
    let dead = uuid::Uuid::new_v4();
    engine
        .relational()
        .runs
        .record_run(&recall_core::PipelineRun {
            id: uuid::Uuid::now_v7(),
            pipeline_run_id: dead,
            pipeline_name: "cognify_pipeline".into(),
            dataset_id: ds.id,
            status: PipelineRunStatus::Started,
            error_class: None,
            error_message: None,
            run_info: serde_json::json!({}),
            created_at: recall_core::now_millis(),
        })
        .await
        .unwrap();
    let user = me(&engine).await;
    let statuses = engine.dataset_statuses(&user, &[ds.id], &["cognify_pipeline".to_string()]).await.unwrap();
    assert_eq!(statuses[0].pipelines[0].1, PipelineRunStatus::Started, "the dead run is the latest");
    engine.remember(&user, "docs", &[recall_engine::RememberInput::text("One more document.")]).await.unwrap();
    let runs = engine.relational().runs.list_runs(ds.id).await.unwrap();
    let dead_rows: Vec<_> = runs.iter().filter(|r| r.pipeline_run_id == dead).collect();
    assert_eq!(dead_rows.len(), 2);
    assert_eq!(dead_rows[1].status, PipelineRunStatus::Errored);
    assert_eq!(dead_rows[1].error_class.as_deref(), Some("PipelineRunInterrupted"));
    let statuses = engine.dataset_statuses(&user, &[ds.id], &["cognify_pipeline".to_string()]).await.unwrap();
    assert_eq!(statuses[0].pipelines[0].1, PipelineRunStatus::Completed, "the finished run is the latest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_typed_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();

    // Nothing ever remembered: recall is a precondition error and creates no database.
    let err = engine(dir.path(), OpenMode::ExistingOnly).await.err().unwrap();
    assert!(matches!(err, RecallError::RecallPrecondition));
    assert_eq!(err.http_status(), 422);
    assert!(err.to_string().starts_with("Recall prerequisites not met: no database/default user found."));
    assert!(!dir.path().join("recall.db").exists());

    let engine = engine(dir.path(), OpenMode::Create).await.unwrap();
    // A database with no user yet: the default caller does not exist (the
    // CLI answers RecallPreconditionError); reads do not create it.
    let settings = Settings::embedded(dir.path()).unwrap();
    assert!(recall::caller(&engine, &settings, None, false).await.unwrap().is_none());
    assert!(engine.relational().users.find_user("default_user@example.com").await.unwrap().is_none());

    // An unsupported file among good ones: rejected before anything is written.
    let bad = dir.path().join("report.pdf");
    std::fs::write(&bad, b"%PDF-1.4").unwrap();
    let mut inputs = sample_files();
    inputs.push(RememberInput::File(bad));
    let err = engine.remember(&me(&engine).await, "docs", &inputs).await.unwrap_err();
    assert!(matches!(err, RecallError::UnsupportedFileType { .. }), "{err:?}");
    assert!(err.to_string().contains(".pdf"));
    assert!(my_datasets(&engine).await.is_empty(), "no dataset was created");

    engine.remember(&me(&engine).await, "docs", &sample_files()).await.unwrap();

    let err = engine.recall(&me(&engine).await, &RecallRequest::new("   ")).await.unwrap_err();
    assert!(matches!(&err, RecallError::QueryValidation(m) if m == "The query must be a non-empty string."));
    for k in [0, -3] {
        let err = engine.recall(&me(&engine).await, &RecallRequest::new("bees").top_k(k)).await.unwrap_err();
        assert_eq!(err.to_string(), "top_k must be a positive integer.");
        assert_eq!(err.http_status(), 422);
    }

    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("bees").datasets(["docs", "nope", "also-missing", "nope"]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Dataset(s) not found: 'nope', 'also-missing'. Dataset names resolve only among the datasets you own in the current tenant; pass dataset_ids for datasets shared with you."
    );
    assert_eq!(err.http_status(), 404);

    // A type with no retriever yet is an error, never an empty result.
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("bees").query_type(SearchType::GraphReport))
        .await
        .unwrap_err();
    assert!(matches!(err, RecallError::UnsupportedSearchType(_)), "{err:?}");
    // CYPHER is off unless ALLOW_CYPHER_QUERY is set.
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("bees").query_type(SearchType::Cypher))
        .await
        .unwrap_err();
    assert!(matches!(err, RecallError::SearchTypeDisabled(SearchType::Cypher)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datasets_scope_results_and_forget_removes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), OpenMode::Create).await.unwrap();
    engine.remember(&me(&engine).await, "bees", &[RememberInput::File(samples().join("honeybees.txt"))]).await.unwrap();
    engine
        .remember(&me(&engine).await, "bread", &[RememberInput::File(samples().join("sourdough.txt"))])
        .await
        .unwrap();

    let only_bread =
        engine.recall(&me(&engine).await, &RecallRequest::new("waggle dance").datasets(["bread"])).await.unwrap();
    assert!(!only_bread.is_empty());
    assert!(graph_entries(&only_bread).iter().all(|e| e.dataset_name.as_deref() == Some("bread")));

    let both = engine.recall(&me(&engine).await, &RecallRequest::new("waggle dance").top_k(1)).await.unwrap();
    let names: Vec<_> = graph_entries(&both).iter().map(|e| e.dataset_name.clone().unwrap()).collect();
    assert_eq!(names, vec!["bees", "bread"], "one payload per dataset, in dataset order");
    assert_eq!(graph_entries(&both)[0].metadata["document_name"], "honeybees.txt");

    let bees = my_datasets(&engine).await.into_iter().find(|d| d.name == "bees").unwrap();
    engine.forget_dataset(&me(&engine).await, "bees").await.unwrap();
    assert_eq!(engine.graph().count(bees.id).await.unwrap(), (0, 0));
    assert_eq!(engine.vectors().count(bees.id, DOCUMENT_CHUNK_TEXT).await.unwrap(), 0);
    assert_eq!(engine.relational().data.count_data(bees.id).await.unwrap(), 0);
    assert!(engine.relational().runs.list_runs(bees.id).await.unwrap().is_empty());
    let left: Vec<String> = my_datasets(&engine).await.into_iter().map(|d| d.name).collect();
    assert_eq!(left, vec!["bread"]);
    let err = engine.recall(&me(&engine).await, &RecallRequest::new("waggle").datasets(["bees"])).await.unwrap_err();
    assert!(matches!(err, RecallError::DatasetNotFound { .. }));
    assert!(matches!(
        engine.forget_dataset(&me(&engine).await, "bees").await.unwrap_err(),
        RecallError::DatasetNotAccessible(name) if name == "bees"
    ));

    // Remembering it again brings back exactly the same ids.
    engine.remember(&me(&engine).await, "bees", &[RememberInput::File(samples().join("honeybees.txt"))]).await.unwrap();
    let again = engine
        .recall(&me(&engine).await, &RecallRequest::new("waggle dance").datasets(["bees"]).top_k(1))
        .await
        .unwrap();
    assert_eq!(graph_entries(&again)[0].metadata["document_name"], "honeybees.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_different_embedding_width_is_a_conflict_not_an_empty_result() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), OpenMode::Create).await.unwrap();
    engine
        .remember(&me(&engine).await, "docs", &[RememberInput::text("Honey resists spoilage for years.")])
        .await
        .unwrap();

    // The store was built by the default (local) model; the hashing embedder
    // at the same width is another model, and says so.
    let mut hashing = Settings::embedded(dir.path()).unwrap();
    hashing.embedding_provider = "hashing".into();
    let (other, _) = build_engine(&hashing, OpenMode::ExistingOnly).await.unwrap();
    let err = other.recall(&me(&other).await, &RecallRequest::new("honey")).await.unwrap_err();
    assert_eq!(err.name(), "EmbeddingModelMismatchError", "{err:?}");
    assert_eq!(err.http_status(), 409);
    assert!(err.to_string().contains("Both produce 384-dimensional vectors"), "{err}");

    let mut narrow = Settings::embedded(dir.path()).unwrap();
    narrow.embedding_provider = "hashing".into();
    narrow.embedding_dimensions = 128;
    let (other, _) = build_engine(&narrow, OpenMode::ExistingOnly).await.unwrap();
    let err = other.recall(&me(&other).await, &RecallRequest::new("honey")).await.unwrap_err();
    assert!(
        matches!(
            err,
            RecallError::EmbeddingDimensionMismatch { stored_dimensions: 384, configured_dimensions: 128, .. }
        ),
        "{err:?}"
    );
    assert_eq!(err.http_status(), 409);
    let err = other.remember(&me(&other).await, "docs", &[RememberInput::text("Another fact.")]).await.unwrap_err();
    assert_eq!(err.http_status(), 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopening_the_store() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = engine(dir.path(), OpenMode::Create).await.unwrap();
        engine.remember(&me(&engine).await, "docs", &sample_files()).await.unwrap();
    }
    let engine = engine(dir.path(), OpenMode::ExistingOnly).await.unwrap();
    let results = engine
        .recall(&me(&engine).await, &RecallRequest::new("borrow checker mutable reference").top_k(1))
        .await
        .unwrap();
    assert_eq!(graph_entries(&results)[0].metadata["document_name"], "rust-ownership.md");
}

/// The datasets the test user can see.
async fn my_datasets(engine: &recall_engine::Engine) -> Vec<recall_core::Dataset> {
    let user = me(engine).await;
    engine.access().datasets(&user).await.unwrap().into_iter().map(|l| l.dataset).collect()
}

/// A store built with the hashing embedder, opened with the default (local)
/// model: recall says the models differ, `reembed` moves every collection to
/// the local model from the stored texts — resuming after what an interrupted
/// run had staged — and a second run finds nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reembed_moves_a_dataset_to_the_configured_model_and_resumes() {
    use recall_core::ports::VectorRecord;
    use recall_engine::NoProgress;

    let dir = tempfile::tempdir().unwrap();
    let mut hashing = Settings::embedded(dir.path()).unwrap();
    hashing.embedding_provider = "hashing".into();
    let counts = |engine: &Engine, ds| {
        let engine = engine.clone();
        async move {
            let mut out = Vec::new();
            for name in engine.vectors().collections().await.unwrap() {
                out.push((name.clone(), engine.vectors().count(ds, &name).await.unwrap()));
            }
            out.sort();
            out
        }
    };
    let (before, ds) = {
        let (old, _) = build_engine(&hashing, OpenMode::Create).await.unwrap();
        old.remember(&me(&old).await, "docs", &sample_files()).await.unwrap();
        let ds = old.access().dataset(&me(&old).await, "docs").await.unwrap().id;
        (counts(&old, ds).await, ds)
    };
    assert!(before.iter().any(|(n, c)| n == DOCUMENT_CHUNK_TEXT && *c > 2), "{before:?}");

    let new = engine(dir.path(), OpenMode::ExistingOnly).await.unwrap();
    let user = me(&new).await;
    let bees = RecallRequest::new("Which insect dances to show where flowers are?").query_type(SearchType::Chunks);
    let err = new.recall(&user, &bees).await.unwrap_err();
    assert_eq!(err.name(), "EmbeddingModelMismatchError", "{err}");

    // An interrupted run: two chunk rows already staged with the new model.
    let spec = new.embedder().spec();
    let staging = format!("{DOCUMENT_CHUNK_TEXT}__reembed");
    let rows = new.vectors().rows(DOCUMENT_CHUNK_TEXT).await.unwrap();
    new.vectors().ensure_collection(ds, &staging, &spec).await.unwrap();
    let texts: Vec<String> = rows[..2].iter().map(|(_, r)| r.payload["text"].as_str().unwrap().to_string()).collect();
    let vectors = new.embedder().embed(&texts).await.unwrap();
    let staged: Vec<VectorRecord> =
        rows[..2].iter().zip(vectors).map(|((_, r), vector)| VectorRecord { vector, ..r.clone() }).collect();
    new.vectors().upsert(ds, &staging, staged).await.unwrap();

    let outcome = new.reembed(&user, "docs", &NoProgress).await.unwrap();
    assert_eq!(outcome.model, spec.model);
    let chunks = outcome.collections.iter().find(|c| c.name == DOCUMENT_CHUNK_TEXT).unwrap();
    assert_eq!((chunks.status.as_str(), chunks.resumed, chunks.rows), ("reembedded", 2, rows.len()));
    assert_eq!(chunks.embedded, rows.len() - 2);
    assert!(chunks.from_model.starts_with("recall-hashing"), "{chunks:?}");
    for name in new.vectors().collections().await.unwrap() {
        assert!(!name.ends_with("__reembed"), "staging collections are dropped: {name}");
        assert_eq!(new.vectors().collection_spec(&name).await.unwrap(), Some(spec.clone()), "{name}");
    }
    assert_eq!(counts(&new, ds).await, before, "every row kept, none added");
    // The vectors are the new model's embeddings of the stored texts.
    let (_, row) = new.vectors().rows(DOCUMENT_CHUNK_TEXT).await.unwrap().into_iter().next().unwrap();
    let fresh = new.embedder().embed(&[row.payload["text"].as_str().unwrap().to_string()]).await.unwrap();
    let cosine: f32 = fresh[0].iter().zip(&row.vector).map(|(a, b)| a * b).sum();
    assert!(cosine > 0.999, "{cosine}");

    let results = new.recall(&user, &bees).await.unwrap();
    let first = graph_entries(&results)[0];
    assert!(first.text.to_lowercase().contains("bee"), "{}", first.text);

    let again = new.reembed(&user, "docs", &NoProgress).await.unwrap();
    assert!(again.collections.iter().all(|c| c.status == "current" && c.embedded == 0), "{again:?}");
    let err = new.reembed(&user, "nope", &NoProgress).await.unwrap_err();
    assert_eq!(err.http_status(), 404);
}
