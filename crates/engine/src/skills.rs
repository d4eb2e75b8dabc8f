//! Skills: ingestion of `SKILL.md` playbooks into a dataset, and the skill
//! gate's SKILLS lookup during recall (docs/recall.md, "Skills").

use std::path::{Path, PathBuf};

use recall_core::{
    Dataset, DatasetRef, Edge, Node, RecallError, RecallResponse, ResponseSkillEntry, Result, SearchType, User,
};
use recall_retrievers::{RetrieverCall, RetrieverOptions};
use recall_skills::{
    parse_skill, Skill, SkillRunEntry, DEFAULT_SKILL_GATE_TOP_K, SKILL_NODE_TYPE, SKILL_RUN_NODE_TYPE,
    SKILL_RUN_TASK_TEXT, SKILL_SEARCH_TEXT,
};
use serde::Serialize;
use serde_json::Value;

use crate::ingest::graph_rows::EmbedRow;
use crate::query::request::RecallRequest;
use crate::Engine;

/// The file name a skill directory holds (matched case-insensitively).
pub const SKILL_FILE: &str = "SKILL.md";

/// One skill written by [`Engine::add_skills`].
#[derive(Debug, Clone, Serialize)]
pub struct AddedSkill {
    pub id: String,
    pub name: String,
    pub source_file: String,
}

/// A run recorded by [`Engine::record_skill_run`] (the `items` entry of
/// `remember/entry`'s answer).
#[derive(Debug, Clone, Serialize)]
pub struct RecordedSkillRun {
    pub kind: &'static str,
    pub run_id: String,
    pub selected_skill_id: String,
    pub selected_skill_name: String,
    pub success_score: Option<f64>,
}

/// The skill files under `path`: the file itself, or every `SKILL.md` below
/// a directory, sorted.
fn skill_files(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path)
        .map_err(|e| RecallError::invalid_input(format!("cannot read '{}': {e}", path.display())))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| RecallError::invalid_input(format!("cannot read '{}': {e}", dir.display())))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| RecallError::invalid_input(format!("cannot read '{}': {e}", dir.display())))?;
            let p = entry.path();
            let file_type = entry.file_type().map_err(|e| RecallError::invalid_input(e.to_string()))?;
            if file_type.is_dir() {
                stack.push(p);
            } else if p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.eq_ignore_ascii_case(SKILL_FILE)) {
                out.push(p);
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(RecallError::invalid_input(format!("no {SKILL_FILE} file under '{}'", path.display())));
    }
    Ok(out)
}

fn read_skill(file: &Path) -> Result<Skill> {
    let bytes = std::fs::read(file)
        .map_err(|e| RecallError::invalid_input(format!("cannot read '{}': {e}", file.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| RecallError::invalid_input(format!("skill file '{}' is not UTF-8 text", file.display())))?;
    let source_dir = file.parent().map(|p| p.display().to_string()).unwrap_or_default();
    parse_skill(&text, &file.display().to_string(), &source_dir, "")
}

/// The stored vector payload: the data point without its bodies.
fn vector_payload(skill: &Skill) -> serde_json::Map<String, Value> {
    let mut p = skill.to_payload();
    for body in ["procedure", "skill_text", "search_text"] {
        p.remove(body);
    }
    p
}

impl Engine {
    /// Reads the skill files under `paths` (files, or directories searched
    /// for `SKILL.md`) and stores them in the dataset: a `Skill` graph node
    /// with every field, and its `search_text` embedded in
    /// `Skill_search_text`. Every file is parsed before anything is written;
    /// adding a skill again (same name and directory) replaces it.
    pub async fn add_skills(
        &self,
        user: &User,
        dataset: impl Into<DatasetRef>,
        paths: &[PathBuf],
    ) -> Result<(Dataset, Vec<AddedSkill>)> {
        let target = dataset.into();
        if let DatasetRef::Name(name) = &target {
            crate::ingest::remember::validate_dataset_name(name)?;
        }
        if paths.is_empty() {
            return Err(RecallError::invalid_input("Nothing to add: pass at least one skill file or directory."));
        }
        // Every file is read and parsed before anything is written: a bad
        // file writes nothing, not even the dataset. The scope is set below.
        let paths = paths.to_vec();
        let mut skills: Vec<Skill> = crate::blocking(move || {
            let mut files = Vec::new();
            for path in &paths {
                files.extend(skill_files(path)?);
            }
            files.iter().map(|f| read_skill(f)).collect()
        })
        .await?;
        self.check_collection_model(SKILL_SEARCH_TEXT, &target.label()).await?;
        let dataset = self.access.writable(user, &target).await?;
        for skill in &mut skills {
            skill.dataset_scope = vec![dataset.id.to_string()];
        }

        let nodes: Vec<Node> = skills
            .iter()
            .map(|s| Node { id: s.id, node_type: SKILL_NODE_TYPE.into(), properties: s.to_payload() })
            .collect();
        self.graph.upsert_nodes(dataset.id, &nodes).await?;
        let rows: Vec<EmbedRow> =
            skills.iter().map(|s| (s.id, s.search_text.clone(), vector_payload(s), Vec::new())).collect();
        self.embed_and_upsert(dataset.id, SKILL_SEARCH_TEXT, &self.embedder.spec(), rows).await?;
        self.bump_data_version(dataset.id).await?;
        let added = skills
            .into_iter()
            .map(|s| AddedSkill { id: s.id.to_string(), name: s.name, source_file: s.source_file })
            .collect();
        Ok((dataset, added))
    }

    /// Records a run of a skill in a dataset the caller may write: a
    /// `SkillRun` node (replacing the run with the same `run_id`), linked
    /// `selected_skill` to the skill when the dataset has it, and its task
    /// text embedded in `SkillRun_task_text`. A skill id the dataset does
    /// not hold is recorded all the same, without a name.
    pub async fn record_skill_run(
        &self,
        user: &User,
        target: &DatasetRef,
        session_id: Option<&str>,
        entry: SkillRunEntry,
    ) -> Result<(Dataset, RecordedSkillRun)> {
        // A bad entry writes nothing, not even the dataset its name would create.
        entry.check()?;
        let dataset = self.access.writable(user, target).await?;
        let recorded = self.store_skill_run(&dataset, &target.label(), session_id, entry).await?;
        Ok((dataset, recorded))
    }

    /// Stores a checked run in `dataset` (the caller's right to is settled).
    pub(crate) async fn store_skill_run(
        &self,
        dataset: &Dataset,
        label: &str,
        session_id: Option<&str>,
        entry: SkillRunEntry,
    ) -> Result<RecordedSkillRun> {
        let skill = match uuid::Uuid::parse_str(entry.selected_skill_id.trim()) {
            Ok(id) => {
                self.graph.get_nodes(dataset.id, &[id]).await?.into_iter().find(|n| n.node_type == SKILL_NODE_TYPE)
            }
            Err(_) => None,
        };
        let name = skill.as_ref().and_then(|n| n.properties.get("name")).and_then(Value::as_str).map(str::to_string);
        let success_score = entry.success_score;
        let run = entry.into_run(&dataset.id.to_string(), session_id, name.as_deref())?;
        let task_text = run.payload.get("task_text").and_then(Value::as_str).unwrap_or_default().to_string();
        if !task_text.is_empty() {
            self.check_collection_model(SKILL_RUN_TASK_TEXT, label).await?;
        }
        let recorded = RecordedSkillRun {
            kind: "skill_run",
            run_id: run.run_id.clone(),
            selected_skill_id: run.payload["selected_skill_id"].as_str().unwrap_or_default().to_string(),
            selected_skill_name: name.unwrap_or_default(),
            success_score,
        };
        let node = Node { id: run.id, node_type: SKILL_RUN_NODE_TYPE.into(), properties: run.payload.clone() };
        self.graph.upsert_nodes(dataset.id, &[node]).await?;
        if let Some(skill) = &skill {
            let edge = Edge::new(run.id, recall_skills::run::SELECTED_SKILL, skill.id).with_text("selected skill");
            self.graph.upsert_edges(dataset.id, &[edge]).await?;
        }
        if !task_text.is_empty() {
            let mut payload = run.payload;
            payload.remove("tool_trace");
            let rows = vec![(run.id, task_text, payload, Vec::new())];
            self.embed_and_upsert(dataset.id, SKILL_RUN_TASK_TEXT, &self.embedder.spec(), rows).await?;
        }
        self.bump_data_version(dataset.id).await?;
        Ok(recorded)
    }

    /// The dataset's recorded skill runs (each node's payload), oldest first
    /// by start time, then by run id.
    pub async fn skill_runs(&self, user: &User, dataset: impl Into<DatasetRef>) -> Result<Vec<Value>> {
        let dataset = self.access.dataset(user, dataset).await?;
        let mut runs: Vec<Value> = self
            .graph
            .nodes_by_type(dataset.id, SKILL_RUN_NODE_TYPE)
            .await?
            .into_iter()
            .map(|n| Value::Object(n.properties))
            .collect();
        let key =
            |v: &Value| (v["started_at_ms"].as_i64().unwrap_or(0), v["run_id"].as_str().unwrap_or("").to_string());
        runs.sort_by_key(key);
        Ok(runs)
    }

    /// The dataset's skills, by name (every stored field, bodies included).
    pub async fn list_skills(&self, user: &User, dataset: impl Into<DatasetRef>) -> Result<Vec<Skill>> {
        let dataset = self.access.dataset(user, dataset).await?;
        let mut skills: Vec<Skill> = self
            .graph
            .nodes_by_type(dataset.id, SKILL_NODE_TYPE)
            .await?
            .into_iter()
            .filter_map(|n| serde_json::from_value(Value::Object(n.properties)).ok())
            .collect();
        skills.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        Ok(skills)
    }

    /// Whether the skill gate runs for this request (docs/recall.md, "When the gate fires"):
    /// enabled, graph in scope, not only_context, the caller's type not
    /// SKILLS or AGENTIC_COMPLETION, and the rules fire.
    pub(crate) fn skill_gate_applies(&self, request: &RecallRequest, graph_in_scope: bool) -> bool {
        self.config.skill_gate_enabled
            && graph_in_scope
            && !request.options.only_context
            && !matches!(request.query_type, Some(SearchType::Skills | SearchType::AgenticCompletion))
            && recall_skills::should_search_skills(&request.query_text).fired
    }

    /// The skill gate's lookup: up to three skills of the single targeted
    /// dataset, as `skills` entries. Fail-safe: any error is logged and
    /// contributes nothing.
    pub(crate) async fn skill_gate(&self, user: &User, request: &RecallRequest) -> Vec<RecallResponse> {
        match self.skill_gate_lookup(user, request).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(error = %e, "skill gate lookup failed; no skills added");
                Vec::new()
            }
        }
    }

    async fn skill_gate_lookup(&self, user: &User, request: &RecallRequest) -> Result<Vec<RecallResponse>> {
        let Some(dataset) = self.skill_gate_dataset(user, request).await? else {
            return Ok(Vec::new());
        };
        self.observe_data_versions(&[dataset.id]).await?;
        let retriever = self.retrievers.get(SearchType::Skills)?;
        let ctx =
            self.retrieval_context(&dataset, std::sync::Arc::new(recall_core::NoEvents), retriever.ranks_the_graph());
        let options = RetrieverOptions::with_top_k(DEFAULT_SKILL_GATE_TOP_K);
        let objects = retriever.get_retrieved_objects(&RetrieverCall::new(&ctx, &request.query_text, &options)).await?;
        Ok(objects
            .into_iter()
            .filter_map(|o| match o {
                Value::Object(mut skill) => {
                    let score = skill.remove("score").and_then(|s| s.as_f64());
                    let name = skill.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                    let description = skill.get("description").and_then(Value::as_str).unwrap_or_default();
                    let text = if description.is_empty() { name } else { format!("{name}: {description}") };
                    Some(RecallResponse::Skills(ResponseSkillEntry { text, skill, score }))
                }
                _ => None,
            })
            .collect())
    }

    /// Exactly one dataset: `dataset_ids` with one element (readable), else
    /// `datasets` with one name, resolved non-strictly among the caller's
    /// own datasets. Anything else skips the gate.
    async fn skill_gate_dataset(&self, user: &User, request: &RecallRequest) -> Result<Option<Dataset>> {
        let target = match (request.dataset_ids.as_deref(), request.datasets.as_deref()) {
            (Some([id]), _) => DatasetRef::Id(*id),
            (_, Some([name])) => DatasetRef::Name(name.clone()),
            _ => return Ok(None),
        };
        match self.access.dataset(user, target).await {
            Ok(dataset) => Ok(Some(dataset)),
            Err(RecallError::DatasetNotFound { .. } | RecallError::PermissionDenied(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
