//! `remember()`: store data items (`add`), then chunk, embed and write the
//! document graph and chunk vectors (`cognify`), with pipeline-run records.
//!
//! Every input is validated and read before anything is written, so bad input
//! writes nothing. Items are marked `completed` only after all their writes
//! succeed, so an interrupted run is redone on the next remember, never skipped.

use std::path::{Path, PathBuf};

use recall_core::model::collections::{DOCUMENT_CHUNK_TEXT, TEXT_DOCUMENT_NAME};
use recall_core::model::pipelines;
use recall_core::ports::VectorRecord;
use recall_core::{
    ids, now_millis, DataItem, DataPointBase, DataStatus, Dataset, DatasetId, Document, DocumentChunk, Edge, Node,
    PipelineRun, PipelineRunStatus, RecallError, Result, User,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::chunking::chunk_text;
use crate::Engine;

/// One thing to remember.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RememberInput {
    /// Raw text, with an optional document name.
    Text { text: String, name: Option<String> },
    /// A `.txt` or `.md` file.
    File(PathBuf),
}

impl RememberInput {
    pub fn text(text: impl Into<String>) -> Self {
        RememberInput::Text { text: text.into(), name: None }
    }
}

/// What a remember call did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RememberOutcome {
    pub dataset_id: DatasetId,
    pub dataset_name: String,
    /// Items stored or processed by this call.
    pub items_added: usize,
    /// Items that were already fully remembered.
    pub items_unchanged: usize,
    pub chunks_written: usize,
    pub pipeline_run_id: Uuid,
}

/// Progress callbacks, e.g. for a progress bar.
pub trait RememberProgress: Send + Sync {
    fn item_done(&self, _name: &str) {}
}

/// No-op progress.
pub struct NoProgress;
impl RememberProgress for NoProgress {}

pub(crate) const SUPPORTED_EXTENSIONS: &[&str] = &["txt", "md"];

/// An input read and validated, ready to store.
pub(crate) struct LoadedInput {
    pub name: String,
    pub extension: String,
    pub mime_type: String,
    pub text: String,
    pub original_location: Option<String>,
}

fn load(input: &RememberInput) -> Result<LoadedInput> {
    match input {
        RememberInput::Text { text, name } => {
            if text.trim().is_empty() {
                return Err(RecallError::invalid_input("Cannot remember empty text."));
            }
            let hash = ids::content_hash(text.as_bytes());
            Ok(LoadedInput {
                name: name.clone().unwrap_or_else(|| format!("text_{hash}.txt")),
                extension: "txt".into(),
                mime_type: "text/plain".into(),
                text: text.clone(),
                original_location: None,
            })
        }
        RememberInput::File(path) => load_file(path),
    }
}

fn load_file(path: &Path) -> Result<LoadedInput> {
    let display = path.display().to_string();
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    if !SUPPORTED_EXTENSIONS.contains(&extension.as_str()) {
        return Err(RecallError::UnsupportedFileType {
            path: display,
            extension: if extension.is_empty() { "(none)".into() } else { format!(".{extension}") },
        });
    }
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RecallError::NotFound(format!("File not found: {display}")),
        _ => RecallError::invalid_input(format!("Cannot read {display}: {e}")),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| RecallError::invalid_input(format!("{display} is not valid UTF-8 text")))?;
    if text.trim().is_empty() {
        return Err(RecallError::invalid_input(format!("{display} is empty.")));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("document").to_string();
    let mime_type = if extension == "md" { "text/markdown" } else { "text/plain" };
    Ok(LoadedInput { name, extension, mime_type: mime_type.into(), text, original_location: Some(display) })
}

/// Validates a dataset name: non-blank, no control characters.
pub(crate) fn validate_dataset_name(name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(RecallError::invalid_input("Dataset name must be a non-empty string."));
    }
    if name.chars().any(char::is_control) {
        return Err(RecallError::invalid_input("Dataset name must not contain control characters."));
    }
    Ok(())
}

/// First non-blank text, whitespace-collapsed and cut to 80 characters: an edge label.
fn label(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect()
}

impl Engine {
    /// Stores the inputs in `dataset` and builds their chunks, graph and vectors.
    pub async fn remember(&self, dataset: &str, inputs: &[RememberInput]) -> Result<RememberOutcome> {
        self.remember_with_progress(dataset, inputs, &NoProgress).await
    }

    pub async fn remember_with_progress(
        &self,
        dataset_name: &str,
        inputs: &[RememberInput],
        progress: &dyn RememberProgress,
    ) -> Result<RememberOutcome> {
        validate_dataset_name(dataset_name)?;
        if inputs.is_empty() {
            return Err(RecallError::invalid_input("Nothing to remember: pass at least one text or file."));
        }
        // Validate and read everything first: bad input writes nothing.
        let loaded: Vec<LoadedInput> = inputs.iter().map(load).collect::<Result<_>>()?;

        // A store filled by another embedding model cannot take these vectors:
        // refuse before writing anything.
        let configured = self.embedder.spec();
        if let Some(stored) = self.vectors.collection_spec(DOCUMENT_CHUNK_TEXT).await? {
            if stored != configured {
                return Err(RecallError::EmbeddingDimensionMismatch {
                    dataset_id: dataset_name.to_string(),
                    stored_model: stored.model,
                    stored_dimensions: stored.dimensions,
                    configured_model: configured.model,
                    configured_dimensions: configured.dimensions,
                });
            }
        }

        let user = self.relational.users.ensure_user(&self.config.default_user_email).await?;
        let dataset = self.relational.datasets.ensure_dataset(&user, dataset_name).await?;

        let items = self.add(&user, &dataset, &loaded).await?;
        self.cognify(&dataset, items, &loaded, progress).await
    }

    /// The `add` stage: raw data items, recorded as an `add_pipeline` run.
    async fn add(&self, user: &User, dataset: &Dataset, loaded: &[LoadedInput]) -> Result<Vec<DataItem>> {
        let run_id = Uuid::new_v4();
        self.record_run(dataset.id, run_id, pipelines::ADD, PipelineRunStatus::Started, None, json!({})).await?;
        let result = async {
            let mut items = Vec::with_capacity(loaded.len());
            for input in loaded {
                let hash = ids::content_hash(input.text.as_bytes());
                let location = self.store_raw(&hash, input)?;
                let item = DataItem {
                    id: ids::data_id(&hash, user.id),
                    dataset_id: dataset.id,
                    name: input.name.clone(),
                    extension: input.extension.clone(),
                    mime_type: input.mime_type.clone(),
                    content_hash: hash,
                    raw_data_location: location,
                    owner_id: user.id,
                    status: DataStatus::Pending,
                    created_at: now_millis(),
                };
                items.push(self.relational.data.upsert_data(&item).await?);
            }
            Ok(items)
        }
        .await;
        self.finish_run(dataset.id, run_id, pipelines::ADD, &result, json!({"items": loaded.len()})).await?;
        result
    }

    /// Keeps a copy of the raw text under the data directory, written atomically.
    fn store_raw(&self, hash: &str, input: &LoadedInput) -> Result<String> {
        let Some(dir) = &self.config.raw_data_dir else {
            return Ok(input.original_location.clone().unwrap_or_else(|| format!("text://{hash}")));
        };
        std::fs::create_dir_all(dir).map_err(RecallError::backend)?;
        let path = dir.join(format!("{hash}.{}", input.extension));
        if !path.exists() {
            let tmp = dir.join(format!(".{hash}.{}.tmp", Uuid::new_v4()));
            std::fs::write(&tmp, input.text.as_bytes()).map_err(RecallError::backend)?;
            std::fs::rename(&tmp, &path).map_err(RecallError::backend)?;
        }
        Ok(path.display().to_string())
    }

    /// The graph-writing stage for items not yet completed.
    async fn cognify(
        &self,
        dataset: &Dataset,
        items: Vec<DataItem>,
        loaded: &[LoadedInput],
        progress: &dyn RememberProgress,
    ) -> Result<RememberOutcome> {
        let run_id = Uuid::new_v4();
        self.record_run(dataset.id, run_id, pipelines::COGNIFY, PipelineRunStatus::Started, None, json!({})).await?;
        let mut outcome = RememberOutcome {
            dataset_id: dataset.id,
            dataset_name: dataset.name.clone(),
            items_added: 0,
            items_unchanged: 0,
            chunks_written: 0,
            pipeline_run_id: run_id,
        };
        let result = async {
            let mut seen = std::collections::HashSet::new();
            for (item, input) in items.iter().zip(loaded) {
                if item.status == DataStatus::Completed || !seen.insert(item.id) {
                    outcome.items_unchanged += 1;
                    progress.item_done(&item.name);
                    continue;
                }
                outcome.chunks_written += self.cognify_item(dataset.id, item, &input.text).await?;
                self.relational.data.set_data_status(dataset.id, item.id, DataStatus::Completed).await?;
                outcome.items_added += 1;
                progress.item_done(&item.name);
            }
            Ok(())
        }
        .await;
        let info = json!({"items_added": outcome.items_added, "chunks": outcome.chunks_written});
        self.finish_run(dataset.id, run_id, pipelines::COGNIFY, &result, info).await?;
        result.map(|()| outcome)
    }

    /// Chunks one item, writes its Document and DocumentChunk nodes and edges,
    /// and its chunk vectors. Every write is an upsert by deterministic id, so
    /// redoing it after a crash converges to the same state.
    async fn cognify_item(&self, dataset: DatasetId, item: &DataItem, text: &str) -> Result<usize> {
        let document = Document {
            base: DataPointBase::new(item.id),
            document_type: "TextDocument".into(),
            name: item.name.clone(),
            raw_data_location: item.raw_data_location.clone(),
            mime_type: item.mime_type.clone(),
            external_metadata: None,
        };
        let mut occurrences: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let chunks: Vec<DocumentChunk> = chunk_text(text, self.config.chunk_size)
            .into_iter()
            .map(|c| {
                let hash = ids::text_sha256(&c.text);
                let n = occurrences.entry(hash.clone()).or_insert(0);
                let id = ids::chunk_id(document.base.id, &hash, *n);
                *n += 1;
                DocumentChunk {
                    base: DataPointBase::new(id),
                    text: c.text,
                    chunk_size: c.chunk_size,
                    chunk_index: c.chunk_index,
                    cut_type: c.cut_type,
                    content_hash: hash,
                    document_id: document.base.id,
                    document_name: document.name.clone(),
                }
            })
            .collect();

        // Vectors first: embedding is the step most likely to fail, and the
        // graph should not advertise chunks that cannot be searched.
        let spec = self.embedder.spec();
        self.vectors.ensure_collection(dataset, DOCUMENT_CHUNK_TEXT, &spec).await?;
        self.vectors.ensure_collection(dataset, TEXT_DOCUMENT_NAME, &spec).await?;
        for batch in chunks.chunks(self.embedder.batch_size().max(1)) {
            let texts: Vec<String> = batch.iter().map(|c| c.text.clone()).collect();
            let vectors = self.embedder.embed(&texts).await?;
            if vectors.len() != batch.len() {
                return Err(RecallError::Provider(format!(
                    "embedder returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            let records = batch.iter().zip(vectors).map(|(c, v)| chunk_record(c, v)).collect();
            self.vectors.upsert(dataset, DOCUMENT_CHUNK_TEXT, records).await?;
        }
        let doc_vector = self
            .embedder
            .embed(std::slice::from_ref(&document.name))
            .await?
            .pop()
            .ok_or_else(|| RecallError::Provider("embedder returned no vector for the document name".into()))?;
        let mut doc_payload = Map::new();
        doc_payload.insert("id".into(), json!(document.base.id.to_string()));
        doc_payload.insert("text".into(), json!(document.name));
        doc_payload.insert("type".into(), json!(document.document_type));
        self.vectors
            .upsert(
                dataset,
                TEXT_DOCUMENT_NAME,
                vec![VectorRecord {
                    id: document.base.id,
                    vector: doc_vector,
                    payload: doc_payload,
                    belongs_to_set: vec![],
                }],
            )
            .await?;

        let mut nodes = vec![Node::from_data_point(document.base.id, &document.document_type, &document)?];
        let mut edges = Vec::with_capacity(chunks.len());
        for chunk in &chunks {
            nodes.push(Node::from_data_point(chunk.base.id, "DocumentChunk", chunk)?);
            edges.push(Edge::new(chunk.base.id, "is_part_of", document.base.id).with_text(format!(
                "{} is part of {}.",
                label(&chunk.text),
                label(&document.name)
            )));
        }
        self.graph.upsert_nodes(dataset, &nodes).await?;
        self.graph.upsert_edges(dataset, &edges).await?;
        Ok(chunks.len())
    }

    async fn record_run(
        &self,
        dataset: DatasetId,
        run_id: Uuid,
        pipeline: &str,
        status: PipelineRunStatus,
        error: Option<&RecallError>,
        run_info: Value,
    ) -> Result<()> {
        self.relational
            .runs
            .record_run(&PipelineRun {
                id: Uuid::new_v4(),
                pipeline_run_id: run_id,
                pipeline_name: pipeline.into(),
                dataset_id: dataset,
                status,
                error_class: error.map(|e| e.name().to_string()),
                error_message: error.map(|e| scrub(&e.to_string())),
                run_info,
                created_at: now_millis(),
            })
            .await
    }

    async fn finish_run<T>(
        &self,
        dataset: DatasetId,
        run_id: Uuid,
        pipeline: &str,
        result: &Result<T>,
        info: Value,
    ) -> Result<()> {
        match result {
            Ok(_) => self.record_run(dataset, run_id, pipeline, PipelineRunStatus::Completed, None, info).await,
            Err(e) => self.record_run(dataset, run_id, pipeline, PipelineRunStatus::Errored, Some(e), info).await,
        }
    }
}

fn chunk_record(chunk: &DocumentChunk, vector: Vec<f32>) -> VectorRecord {
    let mut payload = Map::new();
    payload.insert("id".into(), json!(chunk.base.id.to_string()));
    payload.insert("text".into(), json!(chunk.text));
    payload.insert("document_id".into(), json!(chunk.document_id.to_string()));
    payload.insert("document_name".into(), json!(chunk.document_name));
    payload.insert("chunk_index".into(), json!(chunk.chunk_index));
    payload.insert("chunk_size".into(), json!(chunk.chunk_size));
    payload.insert("cut_type".into(), json!(chunk.cut_type.as_str()));
    payload.insert("importance_weight".into(), json!(chunk.base.importance_weight));
    payload.insert("belongs_to_set".into(), json!(chunk.base.belongs_to_set));
    payload.insert("type".into(), json!("DocumentChunk"));
    VectorRecord { id: chunk.base.id, vector, payload, belongs_to_set: chunk.base.belongs_to_set.clone() }
}

/// Removes what looks like secrets or personal data from an error message
/// before it is stored: e-mail addresses, bearer tokens and API keys.
pub(crate) fn scrub(message: &str) -> String {
    message
        .split_inclusive(char::is_whitespace)
        .map(|word| {
            let core = word.trim_end();
            let trailing = &word[core.len()..];
            let secret = core.contains('@') && core.contains('.')
                || core.starts_with("sk-")
                || core.to_ascii_lowercase().starts_with("bearer") && core.len() > "bearer".len();
            if secret {
                format!("[redacted]{trailing}")
            } else {
                word.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_emails_and_keys() {
        assert_eq!(scrub("user bob@example.com key sk-abc123 failed"), "user [redacted] key [redacted] failed");
        assert_eq!(scrub("plain failure"), "plain failure");
    }

    #[test]
    fn rejects_unsupported_files_before_reading() {
        let err = load(&RememberInput::File(PathBuf::from("/nonexistent/report.pdf"))).err();
        assert!(matches!(err, Some(RecallError::UnsupportedFileType { .. })), "{err:?}");
        let err = load(&RememberInput::File(PathBuf::from("/nonexistent/notes.md"))).err();
        assert!(matches!(err, Some(RecallError::NotFound(_))), "{err:?}");
        assert!(load(&RememberInput::text("   ")).is_err());
    }

    #[test]
    fn labels_collapse_whitespace_and_cut_at_80() {
        assert_eq!(label("a  b\n c"), "a b c");
        assert_eq!(label(&"x".repeat(100)).len(), 80);
    }
}
