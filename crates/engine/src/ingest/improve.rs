//! `improve()` (docs/sessions.md, "Feedback that changes ranking"): ratings
//! of a dataset's answers move the `feedback_weight` of the graph elements
//! those answers used, so a recall with `feedback_influence > 0` ranks
//! well-rated triplets higher. Each element moves once per rating.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use recall_core::ports::EdgeProjection;
use recall_core::session::PendingRating;
use recall_core::{ids, Dataset, DatasetRef, Edge, Node, Permission, RecallError, Result, User};
use serde::Serialize;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::Engine;

/// The default strength of one rating (`IMPROVE_FEEDBACK_ALPHA`).
pub const DEFAULT_FEEDBACK_ALPHA: f64 = 0.1;

/// One stage of an improve run, as Cognee reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ImproveStage {
    pub stage: String,
    /// `completed`, `skipped` or `errored`.
    pub status: String,
    pub reason: Option<String>,
    pub error: Option<String>,
    pub counts: Map<String, Value>,
    pub duration_ms: u64,
    pub run: Option<Value>,
}

impl ImproveStage {
    /// A stage that ran, with nothing counted yet.
    fn completed(name: &str) -> Self {
        Self {
            stage: name.into(),
            status: "completed".into(),
            reason: None,
            error: None,
            counts: Map::new(),
            duration_ms: 0,
            run: None,
        }
    }

    fn skipped(self, reason: &str) -> Self {
        Self { status: "skipped".into(), reason: Some(reason.into()), ..self }
    }
}

/// What an improve run did (Cognee's `ImproveResult`).
#[derive(Debug, Clone, Serialize)]
pub struct ImproveOutcome {
    pub dataset_id: String,
    pub dataset_name: String,
    pub session_ids: Vec<String>,
    pub stages: Vec<ImproveStage>,
    pub background: bool,
    pub finished: bool,
    pub error: Option<String>,
    pub rerun_requested: bool,
    pub rerun_passes: Vec<Value>,
    pub memify_run: Map<String, Value>,
    pub status: String,
}

impl ImproveOutcome {
    fn new(dataset: &Dataset, stages: Vec<ImproveStage>, status: &str) -> Self {
        Self {
            dataset_id: dataset.id.to_string(),
            dataset_name: dataset.name.clone(),
            session_ids: Vec::new(),
            stages,
            background: false,
            finished: true,
            error: None,
            rerun_requested: false,
            rerun_passes: Vec::new(),
            memify_run: Map::new(),
            status: status.into(),
        }
    }

    /// What a background run answers at once: `running`, no stage yet.
    pub fn running(dataset: &Dataset, session_ids: Vec<String>) -> Self {
        Self { session_ids, background: true, finished: false, ..Self::new(dataset, Vec::new(), "running") }
    }
}

/// The stages Cognee runs after `feedback_weights` (`extract_agent_context`
/// is third); Recall runs `extract_agent_context` and says so of the others.
const STAGES_BEFORE_EXTRACTION: [&str; 2] = ["persist_session_qa", "persist_agent_traces"];
const STAGES_AFTER_EXTRACTION: [&str; 4] =
    ["distill_sessions", "update_user_preferences", "build_truth_subspace", "review_conflicts"];

/// `w + α·(r − w)`, kept in 0..1 and rounded to 4 decimals.
fn moved(weight: f64, rating: f64, alpha: f64) -> f64 {
    let w = (weight + alpha * (rating - weight)).clamp(0.0, 1.0);
    (w * 10_000.0).round() / 10_000.0
}

fn weight_of(properties: &Map<String, Value>) -> f64 {
    properties.get("feedback_weight").and_then(Value::as_f64).unwrap_or(0.5)
}

fn edge_id(e: &Edge) -> Uuid {
    e.properties
        .get("edge_object_id")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .unwrap_or_else(|| ids::edge_object_id(e.source_node_id, &e.relationship_name, e.target_node_id))
}

impl Engine {
    /// Applies the pending ratings of a dataset's answers to its graph (the
    /// caller needs `write` on it). `alpha` (0, 1] overrides
    /// `IMPROVE_FEEDBACK_ALPHA`; an implicit rating counts half.
    pub async fn improve(&self, user: &User, target: &DatasetRef, alpha: Option<f64>) -> Result<ImproveOutcome> {
        self.improve_sessions(user, target, alpha, &[]).await
    }

    /// [`Engine::improve`], and for each of the caller's `session_ids` the
    /// agent lessons of its trace steps not read yet (the
    /// `extract_agent_context` stage; docs/sessions.md).
    pub async fn improve_sessions(
        &self,
        user: &User,
        target: &DatasetRef,
        alpha: Option<f64>,
        session_ids: &[String],
    ) -> Result<ImproveOutcome> {
        let alpha = alpha.unwrap_or(self.config.improve_feedback_alpha);
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err(RecallError::Validation {
                name: "ImproveValidationError",
                message: format!("feedback_alpha must be in (0, 1], got {alpha}."),
            });
        }
        let dataset = self.access.authorize(user, target, Permission::Write).await?;
        let started = Instant::now();
        let mut stage = ImproveStage::completed("feedback_weights");
        match self.apply_ratings(dataset.id, alpha).await {
            Ok((rated, nodes, edges)) => {
                stage.counts.insert("rated".into(), json!(rated));
                stage.counts.insert("nodes".into(), json!(nodes));
                stage.counts.insert("edges".into(), json!(edges));
                if self.sessions.is_none() {
                    stage.status = "skipped".into();
                    stage.reason = Some("session_memory_off".into());
                }
            }
            Err(e) => {
                stage.status = "errored".into();
                stage.error = Some(e.to_string());
            }
        }
        stage.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let errored = stage.status == "errored";
        let not_available = |name: &str| ImproveStage::completed(name).skipped("not_available");
        let mut stages = vec![stage];
        stages.extend(STAGES_BEFORE_EXTRACTION.iter().map(|name| not_available(name)));
        stages.push(self.extract_agent_context(user, session_ids).await);
        stages.extend(STAGES_AFTER_EXTRACTION.iter().map(|name| not_available(name)));
        let index = self.global_context_stage(&dataset).await;
        let errored = errored || index.status == "errored";
        stages.push(index);
        let mut outcome = ImproveOutcome::new(&dataset, stages, if errored { "errored" } else { "completed" });
        outcome.session_ids = session_ids.to_vec();
        Ok(outcome)
    }

    /// The `extract_agent_context` stage: each session's unread trace steps
    /// read for agent lessons. A session that fails is logged and counted;
    /// the others go on.
    async fn extract_agent_context(&self, user: &User, session_ids: &[String]) -> ImproveStage {
        let started = Instant::now();
        let mut stage = ImproveStage::completed("extract_agent_context");
        let Some(sessions) = &self.sessions else { return stage.skipped("session_memory_off") };
        if session_ids.is_empty() {
            return stage.skipped("no_session_ids");
        }
        let (mut lessons, mut failed) = (0, 0);
        for session_id in session_ids {
            match sessions.extract_agent_context(user, session_id).await {
                Ok(Some(n)) => lessons += n,
                Ok(None) => return stage.skipped("auto_feedback_off"),
                Err(e) => {
                    tracing::warn!(session_id, error = %e, "agent-context extraction failed for a session");
                    stage.error = Some(e.to_string());
                    failed += 1;
                }
            }
        }
        stage.counts.insert("lessons".into(), json!(lessons));
        stage.counts.insert("failed_sessions".into(), json!(failed));
        stage.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        stage
    }

    /// The `global_context_index` stage: the dataset's derived indexes
    /// rebuilt from the whole graph (a remember or forget refreshes only
    /// the buckets of the documents it wrote or removed, and the root).
    async fn global_context_stage(&self, dataset: &recall_core::Dataset) -> ImproveStage {
        let started = Instant::now();
        let mut stage = ImproveStage::completed("global_context_index");
        let change = super::global_context::IndexChange::default();
        if let Err(e) = self.refresh_derived_indexes(dataset, &change, true, None).await {
            stage.status = "errored".into();
            stage.error = Some(e.to_string());
        }
        stage.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        stage
    }

    /// The feedback-weights stage: (ratings applied, node moves, edge moves).
    async fn apply_ratings(&self, dataset: recall_core::DatasetId, alpha: f64) -> Result<(usize, usize, usize)> {
        let Some(sessions) = &self.sessions else { return Ok((0, 0, 0)) };
        let pending = sessions.pending_ratings(dataset).await?;
        let (mut rated, mut node_moves, mut edge_moves) = (0, 0, 0);
        for rating in &pending {
            match self.apply_rating(dataset, rating, alpha).await {
                Ok((nodes, edges)) => {
                    sessions.settle_rating(rating, true).await?;
                    rated += 1;
                    node_moves += nodes;
                    edge_moves += edges;
                }
                Err(e) => {
                    tracing::warn!(qa_id = %rating.qa_id, error = %e, "a rating could not be applied");
                    sessions.settle_rating(rating, false).await?;
                }
            }
        }
        if node_moves + edge_moves > 0 {
            self.bump_data_version(dataset).await?;
        }
        Ok((rated, node_moves, edge_moves))
    }

    /// Moves the weights of one rating's elements that still exist.
    async fn apply_rating(
        &self,
        dataset: recall_core::DatasetId,
        rating: &PendingRating,
        alpha: f64,
    ) -> Result<(usize, usize)> {
        let r = (rating.score - 1) as f64 / 4.0;
        let alpha = if rating.implicit { alpha / 2.0 } else { alpha };
        let mut nodes: Vec<Node> = self.graph.get_nodes(dataset, &rating.node_ids).await?;
        for n in &mut nodes {
            let w = moved(weight_of(&n.properties), r, alpha);
            n.properties.insert("feedback_weight".into(), json!(w));
        }
        // A used edge joins two used nodes (the triplets' endpoints).
        let wanted: HashSet<Uuid> = rating.edge_ids.iter().copied().collect();
        let mut edges: Vec<Edge> = if wanted.is_empty() {
            Vec::new()
        } else {
            let between = self.graph.edges_between(dataset, &rating.node_ids, EdgeProjection::All).await?;
            let mut unique: HashMap<Uuid, Edge> = HashMap::new();
            for e in between {
                let id = edge_id(&e);
                if wanted.contains(&id) {
                    unique.entry(id).or_insert(e);
                }
            }
            unique.into_values().collect()
        };
        for e in &mut edges {
            let w = moved(weight_of(&e.properties), r, alpha);
            e.properties.insert("feedback_weight".into(), json!(w));
        }
        self.graph.upsert_nodes(dataset, &nodes).await?;
        // Written back without their documents, which stay as stored.
        let edges: Vec<(Edge, Vec<String>)> = edges.into_iter().map(|e| (e, Vec::new())).collect();
        self.graph.upsert_stated_edges(dataset, &edges).await?;
        Ok((nodes.len(), edges.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rating_pulls_the_weight_toward_it() {
        assert_eq!(moved(0.5, 1.0, 0.1), 0.55);
        assert_eq!(moved(0.5, 0.0, 0.1), 0.45);
        assert_eq!(moved(0.5, 0.5, 0.1), 0.5);
        assert_eq!(moved(0.99999, 1.0, 1.0), 1.0);
        assert_eq!(moved(0.123456, 0.0, 0.05), 0.1173);
    }
}
