//! `remember()`: store data items (`add`), then chunk, embed and write the
//! document graph and chunk vectors (`cognify`), with pipeline-run records.
//!
//! Every input is validated and read before anything is written, so bad input
//! writes nothing. Items are marked `completed` only after all their writes
//! succeed, so an interrupted run is redone on the next remember, never skipped.

use std::path::{Path, PathBuf};

use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::model::pipelines;
use recall_core::{
    ids, now_millis, DataItem, DataStatus, Dataset, DatasetId, DatasetRef, Permission, PipelineRun, PipelineRunStatus,
    RecallError, Result, User,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::progress::{NoProgress, RememberProgress};
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

/// What an `add` stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AddOutcome {
    pub dataset: Dataset,
    /// The items, as stored (pending until a cognify builds them).
    pub items: Vec<DataItem>,
    /// The `add_pipeline` run.
    pub pipeline_run_id: Uuid,
}

pub(crate) const SUPPORTED_EXTENSIONS: &[&str] = &["txt", "md"];

/// An input read and validated, ready to store.
pub(crate) struct LoadedInput {
    /// The data id to store it under; `None`: derived from the content and owner.
    pub id: Option<Uuid>,
    pub name: String,
    pub extension: String,
    pub mime_type: String,
    pub text: String,
    pub original_location: Option<String>,
}

pub(crate) fn load(input: &RememberInput) -> Result<LoadedInput> {
    match input {
        RememberInput::Text { text, name } => {
            if text.trim().is_empty() {
                return Err(RecallError::invalid_input("Cannot remember empty text."));
            }
            let hash = ids::content_hash(text.as_bytes());
            Ok(LoadedInput {
                id: None,
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
    Ok(LoadedInput { id: None, name, extension, mime_type: mime_type.into(), text, original_location: Some(display) })
}

/// Checks every input as `remember` would (supported type, readable UTF-8,
/// non-empty) without writing anything: lets a caller refuse bad input before
/// it even opens storage.
pub fn check_inputs(inputs: &[RememberInput]) -> Result<()> {
    inputs.iter().try_for_each(|i| load(i).map(|_| ()))
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

impl Engine {
    /// A collection filled by another embedding model cannot take this
    /// model's vectors: `EmbeddingDimensionMismatch`, before anything is written.
    pub(crate) async fn check_collection_model(&self, collection: &str, dataset_name: &str) -> Result<()> {
        let configured = self.embedder.spec();
        match self.vectors.collection_spec(collection).await? {
            Some(stored) if stored != configured => {
                Err(RecallError::embedding_mismatch(dataset_name, &stored, &configured.model, configured.dimensions))
            }
            _ => Ok(()),
        }
    }

    /// Stores the inputs in `dataset` and builds their chunks, graph and vectors.
    /// A name is the caller's own dataset (created when missing); an id is
    /// any dataset the caller may write to.
    pub async fn remember(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        inputs: &[RememberInput],
    ) -> Result<RememberOutcome> {
        self.remember_with_progress(user, dataset, inputs, &NoProgress).await
    }

    pub async fn remember_with_progress(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        inputs: &[RememberInput],
        progress: &dyn RememberProgress,
    ) -> Result<RememberOutcome> {
        let target = dataset.into();
        if let DatasetRef::Name(name) = &target {
            validate_dataset_name(name)?;
        }
        if inputs.is_empty() {
            return Err(RecallError::invalid_input("Nothing to remember: pass at least one text or file."));
        }
        // Validate and read everything first: bad input writes nothing.
        let owned = inputs.to_vec();
        let loaded: Vec<LoadedInput> = crate::blocking(move || owned.iter().map(load).collect()).await?;

        // A store filled by another embedding model cannot take these vectors:
        // refuse before writing anything.
        self.check_collection_model(DOCUMENT_CHUNK_TEXT, &target.label()).await?;

        let dataset = self.access.writable(user, &target).await?;

        progress.stage("add", loaded.len());
        let (_, items) = self.add(user, &dataset, &loaded, progress).await?;
        let items = items.into_iter().zip(loaded.into_iter().map(|l| l.text)).collect();
        self.cognify_stage(&dataset, items, progress).await
    }

    /// Stores the inputs as data items of `dataset` without building
    /// anything from them (Cognee's `add`): a later [`Engine::cognify`]
    /// builds them. The same validation as `remember`.
    pub async fn add_data(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        inputs: &[RememberInput],
    ) -> Result<AddOutcome> {
        let target = dataset.into();
        if inputs.is_empty() {
            return Err(RecallError::invalid_input("Nothing to add: pass at least one text or file."));
        }
        let owned = inputs.to_vec();
        let loaded: Vec<LoadedInput> = crate::blocking(move || owned.iter().map(load).collect()).await?;
        let dataset = self.access.writable(user, &target).await?;
        let (pipeline_run_id, items) = self.add(user, &dataset, &loaded, &NoProgress).await?;
        Ok(AddOutcome { dataset, items, pipeline_run_id })
    }

    /// The `add` stage: raw data items, recorded as an `add_pipeline` run.
    pub(crate) async fn add(
        &self,
        user: &User,
        dataset: &Dataset,
        loaded: &[LoadedInput],
        progress: &dyn RememberProgress,
    ) -> Result<(Uuid, Vec<DataItem>)> {
        let run_id = Uuid::new_v4();
        self.record_run(dataset.id, run_id, pipelines::ADD, PipelineRunStatus::Started, None, json!({})).await?;
        let result = async {
            let mut items: Vec<DataItem> = Vec::with_capacity(loaded.len());
            for input in loaded {
                let hash = ids::content_hash(input.text.as_bytes());
                let location = self.store_raw(&hash, input).await?;
                let item = DataItem {
                    id: input.id.unwrap_or_else(|| ids::data_id(&hash, user.id)),
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
                progress.item_done(&input.name);
            }
            Ok(items)
        }
        .await;
        self.finish_run(dataset.id, run_id, pipelines::ADD, &result, json!({"items": loaded.len()})).await?;
        result.map(|items| (run_id, items))
    }

    /// Keeps a copy of the raw text under the data directory, written atomically.
    async fn store_raw(&self, hash: &str, input: &LoadedInput) -> Result<String> {
        let Some(dir) = &self.config.raw_data_dir else {
            return Ok(input.original_location.clone().unwrap_or_else(|| format!("text://{hash}")));
        };
        tokio::fs::create_dir_all(dir).await.map_err(RecallError::backend)?;
        let path = dir.join(format!("{hash}.{}", input.extension));
        if !tokio::fs::try_exists(&path).await.map_err(RecallError::backend)? {
            let tmp = dir.join(format!(".{hash}.{}.tmp", Uuid::new_v4()));
            tokio::fs::write(&tmp, input.text.as_bytes()).await.map_err(RecallError::backend)?;
            tokio::fs::rename(&tmp, &path).await.map_err(RecallError::backend)?;
        }
        Ok(path.display().to_string())
    }

    /// The graph-writing stage (`cognify_pipeline` run) for the given items:
    /// those not yet completed are processed in batches; completed ones are
    /// counted as unchanged.
    pub(crate) async fn cognify_stage(
        &self,
        dataset: &Dataset,
        items: Vec<(DataItem, String)>,
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
            let mut pending = Vec::new();
            for (item, text) in items {
                if item.status == DataStatus::Completed || !seen.insert(item.id) {
                    outcome.items_unchanged += 1;
                } else {
                    pending.push(super::cognify::PendingItem { item, text });
                }
            }
            progress.stage("cognify", pending.len());
            let repair = !self.interrupted_runs(dataset.id, run_id, pipelines::COGNIFY).await?.is_empty();
            let stats = self.cognify_pending(dataset, pending, progress, repair).await?;
            outcome.items_added = stats.items;
            outcome.chunks_written = stats.chunks;
            Ok(())
        }
        .await;
        // Written or partly written (and compensated): either way caches are stale.
        let bumped = self.bump_data_version(dataset.id).await;
        let info = json!({"items_added": outcome.items_added, "chunks": outcome.chunks_written});
        self.finish_run(dataset.id, run_id, pipelines::COGNIFY, &result, info).await?;
        result?;
        bumped.map(|()| outcome)
    }

    /// Re-runs cognify on a dataset: items not yet completed are processed
    /// from their raw copies, and the derived indexes are refreshed. On
    /// unchanged, completed data it changes nothing.
    pub async fn cognify(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        progress: &dyn RememberProgress,
    ) -> Result<RememberOutcome> {
        let dataset = self.access.authorize(user, &dataset.into(), Permission::Write).await?;
        let mut items = Vec::new();
        // An item whose forget was interrupted is finished by forgetting it
        // again, not rebuilt.
        for item in
            self.relational.data.list_data(dataset.id).await?.into_iter().filter(|i| i.status != DataStatus::Forgetting)
        {
            let text = if item.status == DataStatus::Completed {
                String::new()
            } else {
                tokio::fs::read_to_string(&item.raw_data_location).await.map_err(|e| {
                    RecallError::NotFound(format!(
                        "Raw data of '{}' is missing at {}: {e}. Remember it again.",
                        item.name, item.raw_data_location
                    ))
                })?
            };
            items.push((item, text));
        }
        self.cognify_stage(&dataset, items, progress).await
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
                // v7: time-ordered and monotonic in-process, so (created_at, id) keeps insertion order.
                id: Uuid::now_v7(),
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
            Ok(_) => {
                // Before this run's own row, so the latest row of the pipeline stays this one.
                if let Err(e) = self.close_interrupted_runs(dataset, run_id, pipeline).await {
                    tracing::warn!(error = %e, "interrupted pipeline runs could not be marked");
                }
                self.record_run(dataset, run_id, pipeline, PipelineRunStatus::Completed, None, info).await
            }
            Err(e) => self.record_run(dataset, run_id, pipeline, PipelineRunStatus::Errored, Some(e), info).await,
        }
    }

    /// Runs of `pipeline` on the dataset that started before `run_id` and
    /// never finished (their process was killed) are marked errored when a
    /// later run finishes, instead of reading `started` forever. A run
    /// that was only slow, not dead, still records its own end afterwards,
    /// which is the row that counts.
    async fn close_interrupted_runs(&self, dataset: DatasetId, run_id: Uuid, pipeline: &str) -> Result<()> {
        let interrupted = RecallError::Validation {
            name: "PipelineRunInterrupted",
            message: "The run stopped before it finished (its process ended); a later run of the pipeline completed the work.".into(),
        };
        for last in self.interrupted_runs(dataset, run_id, pipeline).await? {
            let info = last.run_info.clone();
            self.record_run(
                dataset,
                last.pipeline_run_id,
                pipeline,
                PipelineRunStatus::Errored,
                Some(&interrupted),
                info,
            )
            .await?;
        }
        Ok(())
    }

    /// The last row of each run of `pipeline` on the dataset that started
    /// before `run_id` and never finished: its process was killed, or it is
    /// still running in another process.
    pub(crate) async fn interrupted_runs(
        &self,
        dataset: DatasetId,
        run_id: Uuid,
        pipeline: &str,
    ) -> Result<Vec<PipelineRun>> {
        let runs = self.relational.runs.list_runs(dataset).await?;
        let runs: Vec<&PipelineRun> = runs.iter().filter(|r| r.pipeline_name == pipeline).collect();
        let Some(started) = runs.iter().filter(|r| r.pipeline_run_id == run_id).map(|r| r.created_at).min() else {
            return Ok(Vec::new());
        };
        let mut latest: std::collections::HashMap<Uuid, &PipelineRun> = std::collections::HashMap::new();
        for run in &runs {
            let entry = latest.entry(run.pipeline_run_id).or_insert(run);
            if (run.created_at, run.id) >= (entry.created_at, entry.id) {
                *entry = run;
            }
        }
        Ok(latest
            .into_iter()
            .filter(|(id, last)| {
                *id != run_id && last.status == PipelineRunStatus::Started && last.created_at <= started
            })
            .map(|(_, last)| last.clone())
            .collect())
    }
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
}
