//! The search options recall() and the legacy search() share, as one serde
//! type under Cognee's field names (docs/requests.md).
//!
//! On the wire every field is accepted in snake_case or camelCase, unknown
//! fields are ignored, and the options Cognee does not expose over HTTP
//! (`system_prompt_path`, `node_name_filter_operator`, the graph-tuning knobs,
//! `retriever_specific_config`) are never read from a body: a library caller
//! sets them in code.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `recall()`'s and `search()`'s default `top_k`.
pub const DEFAULT_TOP_K: i64 = 15;

/// The system prompt an HTTP body gets when it does not name one (it is the
/// text of the built-in `answer_simple_question.txt`). An explicit `null`
/// keeps each type's own template.
pub const DEFAULT_SYSTEM_PROMPT: &str = "Answer the question using the provided context. Be as brief as possible.";

/// How a search runs, whatever its type: the options every retriever
/// receives ([`Default`] is the library default; a deserialised body starts
/// from the wire defaults, which differ only in `system_prompt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchOptions {
    /// Must be positive; `None` (an explicit `null`) lets each retriever use its default.
    #[serde(alias = "topK")]
    pub top_k: Option<i64>,
    /// Return what the LLM would receive instead of calling it.
    #[serde(alias = "onlyContext")]
    pub only_context: bool,
    /// Node-set filter.
    #[serde(alias = "nodeName")]
    pub node_name: Option<Vec<String>>,
    /// Overrides the system template of completion types.
    #[serde(alias = "systemPrompt", default = "wire_system_prompt")]
    pub system_prompt: Option<String>,
    /// The `Evidence:` block and `metadata.evidence` (docs/retrievers.md).
    /// On by default over HTTP (seed 001), off in the library.
    #[serde(alias = "includeReferences", default = "wire_include_references")]
    pub include_references: bool,
    /// JSON Schema of a structured answer (docs/structured-output.md).
    #[serde(alias = "responseSchema")]
    pub response_schema: Option<Value>,
    /// The session the session lanes read (recall) and a completion's conversation.
    #[serde(alias = "sessionId")]
    pub session_id: Option<String>,

    // Library-only: not read from a request body (as in Cognee's HTTP API).
    /// `OR` (any node set) or `AND` (all); case and blanks are forgiven.
    #[serde(skip_deserializing)]
    pub node_name_filter_operator: String,
    /// A built-in prompt name or a file from the allowed prompt directories,
    /// used when `system_prompt` is unset.
    #[serde(skip_deserializing)]
    pub system_prompt_path: Option<String>,
    /// Extra per-type settings (`chunks_top_k`, `max_iter`, …; docs/retrievers.md).
    #[serde(skip_deserializing)]
    pub retriever_specific_config: Map<String, Value>,
    /// Graph family: hits per collection (default 100).
    #[serde(skip_deserializing)]
    pub wide_search_top_k: Option<i64>,
    /// Graph family: distance of an element with no vector hit (default 6.5).
    #[serde(skip_deserializing)]
    pub triplet_distance_penalty: Option<f64>,
    /// Graph family: blend of stored feedback weights into triplet scores, in [0, 1].
    #[serde(skip_deserializing)]
    pub feedback_influence: f64,
    /// Graph family: project the k-hop neighbourhood of the seeds instead of 1 hop.
    #[serde(skip_deserializing)]
    pub neighborhood_depth: Option<i64>,
    /// Graph family: how many seeds grow the k-hop neighbourhood (`None`: all).
    #[serde(skip_deserializing)]
    pub neighborhood_seed_top_k: Option<i64>,
}

fn wire_include_references() -> bool {
    true
}

fn wire_system_prompt() -> Option<String> {
    Some(DEFAULT_SYSTEM_PROMPT.to_string())
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            top_k: Some(DEFAULT_TOP_K),
            only_context: false,
            node_name: None,
            system_prompt: None,
            include_references: false,
            response_schema: None,
            session_id: None,
            node_name_filter_operator: "OR".into(),
            system_prompt_path: None,
            retriever_specific_config: Map::new(),
            wide_search_top_k: None,
            triplet_distance_penalty: None,
            feedback_influence: 0.0,
            neighborhood_depth: None,
            neighborhood_seed_top_k: None,
        }
    }
}

/// `node_name_filter_operator`: OR (any) or AND (all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FilterOperator {
    #[default]
    Or,
    And,
}

impl SearchOptions {
    /// `top_k` as a count, once validated positive (`None`: the retriever's default).
    pub fn top_k(&self) -> Option<usize> {
        positive(self.top_k)
    }

    pub fn wide_search_top_k(&self) -> Option<usize> {
        positive(self.wide_search_top_k)
    }

    pub fn neighborhood_depth(&self) -> Option<usize> {
        positive(self.neighborhood_depth)
    }

    pub fn neighborhood_seed_top_k(&self) -> Option<usize> {
        positive(self.neighborhood_seed_top_k)
    }

    /// AND when the operator says so (any case, blanks ignored), else OR.
    pub fn filter_operator(&self) -> FilterOperator {
        if self.node_name_filter_operator.trim().eq_ignore_ascii_case("AND") {
            FilterOperator::And
        } else {
            FilterOperator::Or
        }
    }
}

fn positive(v: Option<i64>) -> Option<usize> {
    v.filter(|n| *n > 0).and_then(|n| usize::try_from(n).ok())
}

/// Python truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A field Cognee types `str | list[str] | None`: one string is a list of one.
pub fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(deserializer)? {
        None => None,
        Some(OneOrMany::One(s)) => Some(vec![s]),
        Some(OneOrMany::Many(v)) => Some(v),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_body_is_read_in_either_case_with_wire_defaults() {
        let snake: SearchOptions = serde_json::from_value(json!({
            "top_k": 3, "only_context": true, "node_name": ["a"], "include_references": true,
            "response_schema": {"type": "object"}, "session_id": "s"
        }))
        .unwrap();
        let camel: SearchOptions = serde_json::from_value(json!({
            "topK": 3, "onlyContext": true, "nodeName": ["a"], "includeReferences": true,
            "responseSchema": {"type": "object"}, "sessionId": "s"
        }))
        .unwrap();
        assert_eq!(snake, camel);
        assert_eq!(snake.top_k(), Some(3));
        assert_eq!(snake.system_prompt.as_deref(), Some(DEFAULT_SYSTEM_PROMPT));

        let empty: SearchOptions = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty.top_k, Some(DEFAULT_TOP_K));
        assert_eq!(empty.system_prompt.as_deref(), Some(DEFAULT_SYSTEM_PROMPT));
        assert!(empty.include_references, "references are on over HTTP");
        assert!(!SearchOptions::default().include_references, "and off in the library");
        // An explicit null is not the default.
        let nulls: SearchOptions = serde_json::from_value(json!({"top_k": null, "systemPrompt": null})).unwrap();
        assert_eq!((nulls.top_k, nulls.system_prompt), (None, None));
        // The library default keeps each type's own template.
        assert_eq!(SearchOptions::default().system_prompt, None);
    }

    #[test]
    fn library_only_options_are_never_read_from_a_body() {
        let o: SearchOptions = serde_json::from_value(json!({
            "system_prompt_path": "/etc/passwd", "systemPromptPath": "/etc/passwd",
            "wide_search_top_k": 1, "feedback_influence": 0.9, "neighborhood_depth": 3,
            "retriever_specific_config": {"max_iter": 1}, "node_name_filter_operator": "AND",
            "unknown_field": 1
        }))
        .unwrap();
        let defaults = SearchOptions {
            system_prompt: Some(DEFAULT_SYSTEM_PROMPT.into()),
            include_references: true,
            ..Default::default()
        };
        assert_eq!(o, defaults);
    }

    #[test]
    fn wrong_types_are_errors() {
        for body in [json!({"top_k": "three"}), json!({"only_context": "yes"}), json!({"node_name": "a"})] {
            assert!(serde_json::from_value::<SearchOptions>(body.clone()).is_err(), "{body}");
        }
    }

    #[test]
    fn counts_and_operators() {
        let o = SearchOptions {
            top_k: Some(-1),
            neighborhood_depth: Some(2),
            node_name_filter_operator: " and ".into(),
            ..Default::default()
        };
        assert_eq!((o.top_k(), o.neighborhood_depth(), o.wide_search_top_k()), (None, Some(2), None));
        assert_eq!(o.filter_operator(), FilterOperator::And);
        assert_eq!(SearchOptions::default().filter_operator(), FilterOperator::Or);
    }

    #[test]
    fn one_string_is_a_list_of_one() {
        #[derive(Deserialize)]
        struct S {
            #[serde(default, deserialize_with = "one_or_many")]
            scope: Option<Vec<String>>,
        }
        let read = |v: Value| serde_json::from_value::<S>(v).map(|s| s.scope).ok();
        assert_eq!(read(json!({"scope": "graph"})), Some(Some(vec!["graph".to_string()])));
        assert_eq!(read(json!({"scope": ["a", "b"]})), Some(Some(vec!["a".into(), "b".into()])));
        assert_eq!(read(json!({"scope": null})), Some(None));
        assert_eq!(read(json!({})), Some(None));
        assert_eq!(read(json!({"scope": 3})), None);
    }
}
