//! What `recall()` returns: a list of entries discriminated by `source`
//! (docs/retrievers.md, "Result items").

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::SearchType;

/// One result of `recall()`. Serialised with a `source` field naming the variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source")]
pub enum RecallResponse {
    #[serde(rename = "graph")]
    Graph(ResponseGraphEntry),
    #[serde(rename = "code")]
    Code(ResponseGraphEntry),
    #[serde(rename = "session")]
    Session(ResponseQAEntry),
    #[serde(rename = "trace")]
    Trace(ResponseAgentTraceEntry),
    #[serde(rename = "session_context")]
    SessionContext(ResponseSessionContextEntry),
    #[serde(rename = "tools")]
    Tools(ResponseToolEntry),
    #[serde(rename = "skills")]
    Skills(ResponseSkillEntry),
    #[serde(rename = "system")]
    System(ResponseMarkerEntry),
}

impl RecallResponse {
    pub fn source(&self) -> &'static str {
        match self {
            RecallResponse::Graph(_) => "graph",
            RecallResponse::Code(_) => "code",
            RecallResponse::Session(_) => "session",
            RecallResponse::Trace(_) => "trace",
            RecallResponse::SessionContext(_) => "session_context",
            RecallResponse::Tools(_) => "tools",
            RecallResponse::Skills(_) => "skills",
            RecallResponse::System(_) => "system",
        }
    }

    /// The renderable text of any entry.
    pub fn text(&self) -> &str {
        match self {
            RecallResponse::Graph(e) | RecallResponse::Code(e) => &e.text,
            RecallResponse::Session(e) => &e.answer,
            RecallResponse::Trace(e) => &e.memory_context,
            RecallResponse::SessionContext(e) => &e.content,
            RecallResponse::Tools(e) => &e.text,
            RecallResponse::Skills(e) => &e.text,
            RecallResponse::System(e) => &e.text,
        }
    }
}

/// A permanent-memory result: an answer, a context, a chunk, or structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseGraphEntry {
    pub kind: String,
    pub search_type: SearchType,
    pub text: String,
    /// Set only by an `only_context` call on a type that sends a templated prompt.
    pub system_prompt: Option<String>,
    /// Raw backend distance (lower is better) where the retriever has one.
    pub score: Option<f64>,
    pub dataset_id: Option<String>,
    pub dataset_name: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub raw: Map<String, Value>,
    pub structured: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseQAEntry {
    pub time: String,
    pub question: String,
    pub context: String,
    pub answer: String,
    pub qa_id: String,
    pub feedback_text: Option<String>,
    pub feedback_score: Option<i64>,
    #[serde(default)]
    pub used_graph_element_ids: Option<Value>,
    #[serde(default)]
    pub memify_metadata: Option<Value>,
    #[serde(default)]
    pub used_session_context_ids: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseAgentTraceEntry {
    pub trace_id: String,
    pub origin_function: String,
    pub status: String,
    pub memory_query: String,
    pub memory_context: String,
    pub method_params: Option<Value>,
    pub method_return_value: Option<Value>,
    pub error_message: Option<String>,
    pub session_feedback: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSessionContextEntry {
    pub content: String,
    pub context_profile: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseToolEntry {
    pub tool_name: String,
    pub question: String,
    pub text: String,
    pub success: bool,
    pub error: Option<String>,
    pub structured: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSkillEntry {
    /// `"name: description"`, or the name alone.
    pub text: String,
    /// Metadata only; never the procedure body.
    pub skill: Map<String, Value>,
    pub score: Option<f64>,
}

/// A system marker such as "memory is still warming up".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseMarkerEntry {
    pub status: String,
    pub text: String,
    pub datapoint_count: i64,
    pub threshold: i64,
    pub error_class: Option<String>,
    pub error_message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_entry_serialises_with_source_discriminator() {
        let entry = RecallResponse::Graph(ResponseGraphEntry {
            kind: "chunk".into(),
            search_type: SearchType::Chunks,
            text: "hello".into(),
            system_prompt: None,
            score: Some(0.25),
            dataset_id: None,
            dataset_name: Some("docs".into()),
            metadata: Map::new(),
            raw: Map::new(),
            structured: None,
        });
        let json = serde_json::to_value(&entry).unwrap_or_default();
        assert_eq!(json["source"], "graph");
        assert_eq!(json["search_type"], "CHUNKS");
        assert_eq!(json["score"], 0.25);
        let back: RecallResponse = serde_json::from_value(json).unwrap_or_else(|_| entry.clone());
        assert_eq!(back, entry);
        assert_eq!(back.source(), "graph");
    }
}
