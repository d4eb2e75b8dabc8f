//! Skill runs (docs/sessions.md, "Skill runs"): what an agent reports after
//! using a skill — which skill, for what task, how well it went — kept as a
//! `SkillRun` node beside the skill in the dataset's graph, its task text
//! embedded so runs can be found by task.

use recall_core::{ids, RecallError, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// The graph node type of a run.
pub const SKILL_RUN_NODE_TYPE: &str = "SkillRun";
/// The vector collection of the runs' task texts.
pub const SKILL_RUN_TASK_TEXT: &str = "SkillRun_task_text";
/// The relationship from a run to the skill it used.
pub const SELECTED_SKILL: &str = "selected_skill";
/// The longest text field kept, in characters (longer ones are cut).
pub const MAX_TEXT_CHARS: usize = 8_192;
/// The most tool calls a run keeps (the first ones).
pub const MAX_TOOL_TRACE: usize = 100;

fn skills_node_set() -> String {
    "skills".into()
}

/// A `skill_run` entry as `remember/entry` takes it (Cognee's
/// `SkillRunEntry`); unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillRunEntry {
    pub selected_skill_id: String,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub task_text: String,
    #[serde(default)]
    pub result_summary: String,
    #[serde(default)]
    pub error_type: String,
    #[serde(default)]
    pub error_message: String,
    #[serde(default)]
    pub task_pattern_id: String,
    #[serde(default)]
    pub router_version: String,
    /// 0..1; none: not scored.
    #[serde(default)]
    pub success_score: Option<f64>,
    /// −1..1.
    #[serde(default)]
    pub feedback: f64,
    #[serde(default)]
    pub started_at_ms: i64,
    #[serde(default)]
    pub latency_ms: i64,
    #[serde(default)]
    pub candidate_skill_ids: Vec<String>,
    #[serde(default)]
    pub tool_trace: Vec<Value>,
    #[serde(default = "skills_node_set")]
    pub node_set: String,
}

fn invalid(message: impl Into<String>) -> RecallError {
    RecallError::Validation { name: "SkillRunValidationError", message: message.into() }
}

fn cut(text: &str) -> String {
    text.trim().chars().take(MAX_TEXT_CHARS).collect()
}

/// A run as stored: its node id and payload.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillRun {
    pub id: Uuid,
    pub run_id: String,
    pub payload: Map<String, Value>,
}

impl SkillRunEntry {
    /// Checks the entry: a skill id, a score in 0..1, feedback in −1..1,
    /// times not negative, a node set, a non-blank run id when given.
    pub fn check(&self) -> Result<()> {
        if self.selected_skill_id.trim().is_empty() {
            return Err(invalid("selected_skill_id must be a non-empty string."));
        }
        if let Some(score) = self.success_score.filter(|s| !(0.0..=1.0).contains(s)) {
            return Err(invalid(format!("success_score must be between 0 and 1, got {score}.")));
        }
        if !(-1.0..=1.0).contains(&self.feedback) {
            return Err(invalid(format!("feedback must be between -1 and 1, got {}.", self.feedback)));
        }
        if self.started_at_ms < 0 || self.latency_ms < 0 {
            return Err(invalid("started_at_ms and latency_ms must not be negative."));
        }
        if self.node_set.trim().is_empty() {
            return Err(invalid("node_set must be a non-empty string."));
        }
        if self.run_id.as_deref().is_some_and(|id| id.trim().is_empty()) {
            return Err(invalid("run_id must be a non-empty string when given."));
        }
        Ok(())
    }

    /// The run as stored in `dataset` ([`SkillRunEntry::check`]ed first;
    /// text fields trimmed and cut, at most [`MAX_TOOL_TRACE`] tool calls),
    /// naming the skill when it is known.
    pub fn into_run(self, dataset: &str, session_id: Option<&str>, skill_name: Option<&str>) -> Result<SkillRun> {
        self.check()?;
        let run_id = match self.run_id.as_deref() {
            Some(id) => cut(id),
            None => Uuid::new_v4().to_string(),
        };
        let id = ids::id_for(SKILL_RUN_NODE_TYPE, &[dataset, &run_id]);
        let mut tool_trace = self.tool_trace;
        tool_trace.truncate(MAX_TOOL_TRACE);
        let text = |s: &str| Value::String(cut(s));
        let mut p = Map::new();
        p.insert("id".into(), Value::String(id.to_string()));
        p.insert("type".into(), Value::String(SKILL_RUN_NODE_TYPE.into()));
        p.insert("run_id".into(), Value::String(run_id.clone()));
        p.insert("selected_skill_id".into(), text(&self.selected_skill_id));
        p.insert("selected_skill_name".into(), Value::String(skill_name.unwrap_or_default().to_string()));
        p.insert("task_text".into(), text(&self.task_text));
        p.insert("result_summary".into(), text(&self.result_summary));
        p.insert("error_type".into(), text(&self.error_type));
        p.insert("error_message".into(), text(&self.error_message));
        p.insert("task_pattern_id".into(), text(&self.task_pattern_id));
        p.insert("router_version".into(), text(&self.router_version));
        p.insert("success_score".into(), self.success_score.map_or(Value::Null, Value::from));
        p.insert("feedback".into(), Value::from(self.feedback));
        p.insert("started_at_ms".into(), Value::from(self.started_at_ms));
        p.insert("latency_ms".into(), Value::from(self.latency_ms));
        p.insert(
            "candidate_skill_ids".into(),
            Value::from(self.candidate_skill_ids.iter().map(|s| cut(s)).collect::<Vec<_>>()),
        );
        p.insert("tool_trace".into(), Value::Array(tool_trace));
        p.insert("session_id".into(), session_id.map_or(Value::Null, |s| Value::String(s.to_string())));
        p.insert("dataset_scope".into(), Value::from(vec![dataset.to_string()]));
        p.insert("belongs_to_set".into(), Value::from(vec![self.node_set.trim().to_string()]));
        Ok(SkillRun { id, run_id, payload: p })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn entry(value: Value) -> SkillRunEntry {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_run_is_checked_and_kept_with_its_skill() {
        let run = entry(json!({"type": "skill_run", "selected_skill_id": "s1", "run_id": "r1", "task_text": "  rotate keys ",
                               "success_score": 0.9, "tool_trace": (0..150).map(|i| json!({"i": i})).collect::<Vec<_>>()}))
        .into_run("d", Some("chat"), Some("Key rotation"))
        .unwrap();
        assert_eq!(run.run_id, "r1");
        assert_eq!(run.id, ids::id_for(SKILL_RUN_NODE_TYPE, &["d", "r1"]), "the same run id is the same node");
        assert_eq!(run.payload["task_text"], "rotate keys");
        assert_eq!(run.payload["selected_skill_name"], "Key rotation");
        assert_eq!(run.payload["tool_trace"].as_array().unwrap().len(), MAX_TOOL_TRACE);
        assert_eq!((&run.payload["belongs_to_set"], &run.payload["session_id"]), (&json!(["skills"]), &json!("chat")));
        let fresh = entry(json!({"selected_skill_id": "s1"})).into_run("d", None, None).unwrap();
        assert!(Uuid::parse_str(&fresh.run_id).is_ok(), "a new run id when none is given");
        assert_eq!(fresh.payload["success_score"], Value::Null);
    }

    #[test]
    fn bad_runs_are_refused_by_name() {
        for bad in [
            json!({"selected_skill_id": " "}),
            json!({"selected_skill_id": "s", "success_score": 1.5}),
            json!({"selected_skill_id": "s", "feedback": -2.0}),
            json!({"selected_skill_id": "s", "latency_ms": -1}),
            json!({"selected_skill_id": "s", "node_set": ""}),
            json!({"selected_skill_id": "s", "run_id": " "}),
        ] {
            let err = entry(bad.clone()).into_run("d", None, None).unwrap_err();
            assert_eq!(err.name(), "SkillRunValidationError", "{bad}");
        }
        assert!(serde_json::from_value::<SkillRunEntry>(json!({"run_id": "r"})).is_err(), "the skill id is required");
    }
}
