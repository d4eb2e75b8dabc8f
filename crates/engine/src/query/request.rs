//! One recall's parameters and the checks that need no I/O. The request is
//! also the wire body of `POST /api/v1/recall` (docs/requests.md): Cognee's
//! field names, snake_case or camelCase, unknown fields ignored.

use recall_core::request::{one_or_many, truthy};
use recall_core::{DatasetId, RecallError, Result, SearchOptions, SearchType};
use recall_retrievers::RetrieverOptions;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::scope::{check_tools_trigger, normalize_scope, plan, Plan, ScopeInputs};

/// The longest question accepted: far past any real question, short of
/// what would make one request embed and scan megabytes.
pub const MAX_QUERY_CHARS: usize = 32_768;

/// The parameters of one recall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallRequest {
    /// The question (required on the wire).
    #[serde(rename = "query")]
    pub query_text: String,
    /// `None` lets the engine choose (auto-routing).
    #[serde(default, rename = "search_type", alias = "searchType")]
    pub query_type: Option<SearchType>,
    /// Dataset names, resolved strictly among the caller's own datasets.
    #[serde(default)]
    pub datasets: Option<Vec<String>>,
    /// Dataset ids; take precedence over `datasets`.
    #[serde(default, alias = "datasetIds")]
    pub dataset_ids: Option<Vec<DatasetId>>,
    /// How the search runs (shared with the legacy search).
    #[serde(flatten)]
    pub options: SearchOptions,
    /// Library-only: `false` skips the router (HYBRID_COMPLETION when an LLM is configured).
    #[serde(skip_deserializing, default = "yes")]
    pub auto_route: bool,
    /// Lanes to search (docs/recall.md, "Scopes and lanes"); `None` is `["auto"]`.
    /// One string is a list of one.
    #[serde(default, deserialize_with = "one_or_many")]
    pub scope: Option<Vec<String>>,
    /// `qa` or `agent` (the session-context lane's profile).
    #[serde(default = "qa", alias = "contextProfile")]
    pub context_profile: String,
    /// `always` or `on_empty` (the tools lane).
    #[serde(default = "always", alias = "toolsTrigger")]
    pub tools_trigger: String,
    /// The tools lane's connections by name (`None` or empty: every visible one).
    #[serde(default, alias = "toolConnections")]
    pub tool_connections: Option<Vec<String>>,
    /// The code lane's operation; needs `code` in the scope.
    #[serde(default, alias = "codeQuery")]
    pub code_query: Option<Value>,
}

fn yes() -> bool {
    true
}

fn qa() -> String {
    "qa".into()
}

fn always() -> String {
    "always".into()
}

impl RecallRequest {
    pub fn new(query_text: impl Into<String>) -> Self {
        Self {
            query_text: query_text.into(),
            query_type: None,
            datasets: None,
            dataset_ids: None,
            options: SearchOptions::default(),
            auto_route: true,
            scope: None,
            context_profile: qa(),
            tools_trigger: always(),
            tool_connections: None,
            code_query: None,
        }
    }

    pub fn scope<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.scope = Some(names.into_iter().map(Into::into).collect());
        self
    }

    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.options.session_id = Some(id.into());
        self
    }

    pub fn only_context(mut self, on: bool) -> Self {
        self.options.only_context = on;
        self
    }

    pub fn include_references(mut self, on: bool) -> Self {
        self.options.include_references = on;
        self
    }

    pub fn response_schema(mut self, schema: Value) -> Self {
        self.options.response_schema = Some(schema);
        self
    }

    pub fn node_name<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.options.node_name = Some(names.into_iter().map(Into::into).collect());
        self
    }

    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.options.system_prompt = Some(prompt.into());
        self
    }

    /// Sets one `retriever_specific_config` key.
    pub fn config(mut self, key: &str, value: Value) -> Self {
        self.options.retriever_specific_config.insert(key.to_string(), value);
        self
    }

    pub fn query_type(mut self, t: SearchType) -> Self {
        self.query_type = Some(t);
        self
    }

    pub fn datasets<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.datasets = Some(names.into_iter().map(Into::into).collect());
        self
    }

    pub fn top_k(mut self, k: i64) -> Self {
        self.options.top_k = Some(k);
        self
    }

    /// Whether the request names any dataset, by name or by id.
    pub fn names_datasets(&self) -> bool {
        self.datasets.as_ref().is_some_and(|d| !d.is_empty())
            || self.dataset_ids.as_ref().is_some_and(|d| !d.is_empty())
    }

    /// The lanes this request runs (validates the scope, `tools_trigger` and `code_query`).
    pub fn plan(&self) -> Result<Plan> {
        let scope = normalize_scope(self.scope.as_deref())?;
        check_tools_trigger(&self.tools_trigger)?;
        plan(
            &scope,
            ScopeInputs {
                session_id_set: self.options.session_id.as_deref().is_some_and(|s| !s.is_empty()),
                datasets_given: self.names_datasets(),
                query_type_pinned: self.query_type.is_some(),
                tools_on_empty: self.tools_trigger == "on_empty",
                code_query_given: self.code_query.is_some(),
            },
        )
    }

    /// The checks that need no I/O: the scope, a positive `top_k`, a
    /// non-blank query, the ranges of the graph options and the response
    /// schema. Returns `top_k` as a count (`None`: each retriever's default).
    pub fn validate(&self) -> Result<Option<usize>> {
        self.validated().map(|(_, top_k)| top_k)
    }

    /// [`RecallRequest::validate`], with the plan it made: a recall plans once.
    pub(crate) fn validated(&self) -> Result<(Plan, Option<usize>)> {
        let plan = self.plan()?;
        let o = &self.options;
        if o.top_k.is_some_and(|k| k <= 0) {
            return Err(RecallError::top_k_not_positive());
        }
        if self.query_text.trim().is_empty() {
            return Err(RecallError::empty_query());
        }
        if self.query_text.chars().count() > MAX_QUERY_CHARS {
            return Err(RecallError::QueryValidation(format!(
                "query is too long: at most {MAX_QUERY_CHARS} characters."
            )));
        }
        let positive = |name: &str, v: Option<i64>| match v {
            Some(n) if n <= 0 => Err(RecallError::QueryValidation(format!("{name} must be a positive integer."))),
            _ => Ok(()),
        };
        if let Some(id) = o.session_id.as_deref() {
            recall_core::session::validate_session_id(id)?;
        }
        positive("wide_search_top_k", o.wide_search_top_k)?;
        positive("neighborhood_depth", o.neighborhood_depth)?;
        positive("neighborhood_seed_top_k", o.neighborhood_seed_top_k)?;
        if !(0.0..=1.0).contains(&o.feedback_influence) {
            return Err(RecallError::Validation {
                name: "InvalidFeedbackInfluenceError",
                message: "feedback_influence must be in range [0, 1]".into(),
            });
        }
        if let Some(p) = o.triplet_distance_penalty {
            if !p.is_finite() || p < 0.0 {
                return Err(RecallError::QueryValidation(
                    "triplet_distance_penalty must be a non-negative number.".into(),
                ));
            }
        }
        if let Some(schema) = &o.response_schema {
            recall_retrievers::schema::compile(schema)?;
        }
        let rsc = &o.retriever_specific_config;
        let agentic = self.query_type == Some(recall_core::SearchType::AgenticCompletion);
        if !agentic && (rsc.get("skills").is_some_and(truthy) || rsc.get("tools").is_some_and(|v| !v.is_null())) {
            return Err(RecallError::UnsupportedSearchType(
                "Unsupported search type: skills/tools are supported only with SearchType.AGENTIC_COMPLETION".into(),
            ));
        }
        Ok((plan, o.top_k()))
    }

    /// What every retriever of this request receives.
    pub(crate) fn retriever_options(&self) -> RetrieverOptions {
        RetrieverOptions::new(self.options.clone())
    }
}

#[cfg(test)]
mod tests {
    use recall_core::DEFAULT_SYSTEM_PROMPT;
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    #[test]
    fn the_wire_body_reads_in_either_case() {
        let id = Uuid::new_v4();
        let snake: RecallRequest = serde_json::from_value(json!({
            "query": "q", "search_type": "CHUNKS", "datasets": ["a"], "dataset_ids": [id],
            "top_k": 3, "only_context": true, "session_id": "s", "scope": "graph",
            "context_profile": "agent", "tools_trigger": "on_empty", "code_query": {"op": "x"}
        }))
        .unwrap();
        let camel: RecallRequest = serde_json::from_value(json!({
            "query": "q", "searchType": "CHUNKS", "datasets": ["a"], "datasetIds": [id],
            "topK": 3, "onlyContext": true, "sessionId": "s", "scope": ["graph"],
            "contextProfile": "agent", "toolsTrigger": "on_empty", "codeQuery": {"op": "x"}
        }))
        .unwrap();
        assert_eq!(snake, camel);
        assert_eq!(snake.query_type, Some(SearchType::Chunks));
        assert_eq!(snake.dataset_ids, Some(vec![DatasetId(id)]));
        assert_eq!(snake.options.top_k(), Some(3));
        assert_eq!(snake.scope, Some(vec!["graph".to_string()]));
    }

    #[test]
    fn wire_defaults_are_cognees() {
        let r: RecallRequest = serde_json::from_value(json!({"query": "q", "auto_route": false})).unwrap();
        assert_eq!(r.query_type, None);
        assert!(r.auto_route, "auto_route is not exposed over HTTP");
        assert_eq!(r.options.top_k, Some(15));
        assert_eq!(r.options.system_prompt.as_deref(), Some(DEFAULT_SYSTEM_PROMPT));
        assert!(r.options.include_references, "references are on over HTTP (seed 001)");
        assert_eq!((r.context_profile.as_str(), r.tools_trigger.as_str()), ("qa", "always"));
        // The same request built in code differs only in the system prompt and references.
        let built = RecallRequest::new("q");
        let wire_only = SearchOptions { system_prompt: None, include_references: false, ..r.options.clone() };
        assert_eq!(RecallRequest { options: wire_only, ..r }, built);
    }

    #[test]
    fn a_body_without_a_query_or_with_a_bad_type_is_refused() {
        assert!(serde_json::from_value::<RecallRequest>(json!({"top_k": 3})).is_err());
        assert!(serde_json::from_value::<RecallRequest>(json!({"query": "q", "search_type": "NOPE"})).is_err());
        assert!(serde_json::from_value::<RecallRequest>(json!({"query": 3})).is_err());
        assert!(serde_json::from_value::<RecallRequest>(json!({"query": "q", "dataset_ids": ["x"]})).is_err());
    }

    #[test]
    fn validation_reads_the_shared_options() {
        assert_eq!(RecallRequest::new("q").top_k(0).validate().unwrap_err().name(), "QueryValidationError");
        let mut r = RecallRequest::new("q");
        r.options.feedback_influence = 1.5;
        assert_eq!(r.validate().unwrap_err().name(), "InvalidFeedbackInfluenceError");
        let mut r = RecallRequest::new("q");
        r.options.top_k = None;
        assert_eq!(r.validate().unwrap(), None);
        assert_eq!(RecallRequest::new("q").top_k(4).validate().unwrap(), Some(4));
    }
}
