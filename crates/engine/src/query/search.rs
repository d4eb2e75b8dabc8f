//! The legacy `search()` (docs/recall.md, "Legacy search()"): one explicit
//! search type over the datasets, with `search()`'s own checks in Cognee's
//! order. No router, no warm-up guard, no skill gate, no session lanes, no
//! retry. It returns one payload per dataset; the backwards-compatible result
//! shape of Cognee's HTTP API is built by the front ends (`recall-api`).

use std::sync::Arc;

use recall_core::{
    DatasetId, NoEvents, Permission, RecallError, RecallEvent, RecallEvents, Result, SearchOptions, SearchType, Stage,
    User,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::normalise::SearchResultPayload;
use super::request::RecallRequest;
use crate::Engine;

/// The parameters of one legacy search; also the wire body of
/// `POST /api/v1/search` (docs/requests.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRequest {
    /// The question (required on the wire).
    #[serde(rename = "query")]
    pub query_text: String,
    /// `search()` in code defaults to GRAPH_COMPLETION; an HTTP body to
    /// HYBRID_COMPLETION (not nullable).
    #[serde(rename = "search_type", alias = "searchType", default = "hybrid_completion")]
    pub query_type: SearchType,
    /// Ignored when `dataset_ids` is non-empty.
    #[serde(default)]
    pub datasets: Option<Vec<String>>,
    #[serde(default, alias = "datasetIds")]
    pub dataset_ids: Option<Vec<DatasetId>>,
    /// How the search runs (shared with recall). A `system_prompt` of `None`
    /// with no `system_prompt_path` is [`recall_core::DEFAULT_SYSTEM_PROMPT`].
    #[serde(flatten)]
    pub options: SearchOptions,
    /// Per dataset: text, context and objects results, prompts and evidence.
    #[serde(default)]
    pub verbose: bool,
    /// AGENTIC_COMPLETION only.
    #[serde(default)]
    pub skills: Option<Vec<String>>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default, alias = "maxIter")]
    pub max_iter: Option<i64>,
    /// CODE only.
    #[serde(default, alias = "codeQuery")]
    pub code_query: Option<Value>,
}

fn hybrid_completion() -> SearchType {
    SearchType::HybridCompletion
}

impl SearchRequest {
    pub fn new(query_text: impl Into<String>) -> Self {
        Self {
            query_text: query_text.into(),
            query_type: SearchType::GraphCompletion,
            datasets: None,
            dataset_ids: None,
            options: SearchOptions::default(),
            verbose: false,
            skills: None,
            tools: None,
            max_iter: None,
            code_query: None,
        }
    }

    pub fn query_type(mut self, t: SearchType) -> Self {
        self.query_type = t;
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

    pub fn only_context(mut self, on: bool) -> Self {
        self.options.only_context = on;
        self
    }

    /// `search()`'s own checks, in Cognee's order (docs/recall.md, "Legacy search()"; steps
    /// 1–7), then the checks it shares with recall. No I/O.
    pub fn validate(&self) -> Result<()> {
        self.check_search_parameters()?;
        self.as_recall().validate().map(|_| ())
    }

    /// The checks recall does not have (docs/recall.md, "Legacy search()").
    fn check_search_parameters(&self) -> Result<()> {
        for (name, error, value) in [
            ("neighborhood_depth", "InvalidNeighborhoodDepth", self.options.neighborhood_depth),
            ("neighborhood_seed_top_k", "InvalidNeighborhoodSeedTopK", self.options.neighborhood_seed_top_k),
        ] {
            if value.is_some_and(|v| v <= 0) {
                return Err(RecallError::Validation {
                    name: error,
                    message: format!("{name} must be a positive integer."),
                });
            }
        }
        if self.max_iter.is_some_and(|v| v <= 0) {
            return Err(RecallError::Validation {
                name: "InvalidMaxIter",
                message: "max_iter must be a positive integer.".into(),
            });
        }
        if self.code_query.is_some() && self.query_type != SearchType::Code {
            return Err(RecallError::Validation {
                name: "InvalidCodeSearchConfig",
                message: "code_query requires query_type=SearchType.CODE.".into(),
            });
        }
        // An empty list counts as given.
        if (self.skills.is_some() || self.tools.is_some()) && self.query_type != SearchType::AgenticCompletion {
            return Err(RecallError::Validation {
                name: "InvalidAgenticSearchConfig",
                message: "skills/tools require query_type=SearchType.AGENTIC_COMPLETION.".into(),
            });
        }
        let op = self.options.node_name_filter_operator.trim().to_uppercase();
        if op != "AND" && op != "OR" {
            return Err(RecallError::Validation {
                name: "CogneeValidationError",
                message: format!(
                    "Invalid node_name_filter_operator: '{}'. Must be one of ['AND', 'OR'].",
                    self.options.node_name_filter_operator
                ),
            });
        }
        Ok(())
    }

    /// The same search as a pinned, graph-only recall request.
    fn as_recall(&self) -> RecallRequest {
        let mut options = self.options.clone();
        options.node_name_filter_operator = options.node_name_filter_operator.trim().to_uppercase();
        if options.system_prompt.is_none() && options.system_prompt_path.is_none() {
            options.system_prompt = Some(recall_core::DEFAULT_SYSTEM_PROMPT.to_string());
        }
        if let Some(n) = self.max_iter {
            options.retriever_specific_config.entry("max_iter").or_insert(json!(n));
        }
        for (key, names) in [("skills", &self.skills), ("tools", &self.tools)] {
            if let Some(names) = names {
                options.retriever_specific_config.entry(key).or_insert(json!(names));
            }
        }
        let ids_given = self.dataset_ids.as_ref().is_some_and(|ids| !ids.is_empty());
        RecallRequest {
            query_type: Some(self.query_type),
            datasets: if ids_given { None } else { self.datasets.clone() },
            dataset_ids: self.dataset_ids.clone(),
            options,
            auto_route: false,
            ..RecallRequest::new(self.query_text.clone()).scope(["graph"])
        }
    }

    /// Exactly one explicit dataset reference (AGENTIC_COMPLETION, SKILLS).
    fn single_dataset_reference(&self) -> bool {
        match self.dataset_ids.as_deref() {
            Some(ids) if !ids.is_empty() => ids.len() == 1,
            _ => self.datasets.as_ref().is_some_and(|d| d.len() == 1),
        }
    }
}

impl Engine {
    /// The legacy `search()`: validates in Cognee's order, resolves the
    /// datasets strictly, runs the type on each and records the history
    /// under the requested type. One payload per searched dataset, in
    /// request order (`recall_api::search_results` gives Cognee's
    /// backwards-compatible JSON).
    pub async fn search(&self, user: &User, request: &SearchRequest) -> Result<Vec<SearchResultPayload>> {
        self.search_with_events(user, request, Arc::new(NoEvents)).await
    }

    /// [`Engine::search`], reporting `Stage(Retrieving)`, answer tokens when
    /// the listener asks for them, and per-stage timings (no `Final`: the
    /// payloads are the return value).
    pub async fn search_with_events(
        &self,
        user: &User,
        request: &SearchRequest,
        events: Arc<dyn RecallEvents>,
    ) -> Result<Vec<SearchResultPayload>> {
        request.check_search_parameters()?;
        let recall = request.as_recall();
        recall.validate()?;
        events.report(|| RecallEvent::Stage { stage: Stage::Retrieving });
        let datasets = self.resolve_datasets(user, &recall).await?;
        if datasets.is_empty() {
            return Err(RecallError::no_permission_on_any(Permission::Read));
        }
        let scope_error = |name: &'static str, t: &str| RecallError::Validation {
            name,
            message: format!("{t} search requires exactly one explicit dataset."),
        };
        match request.query_type {
            SearchType::Skills if !request.single_dataset_reference() => {
                return Err(scope_error("InvalidSkillsDatasetScope", "SKILLS"))
            }
            SearchType::AgenticCompletion if !request.single_dataset_reference() => {
                return Err(scope_error("InvalidAgenticDatasetScope", "Agentic skill"))
            }
            _ => {}
        }
        let mut options = recall.retriever_options();
        self.load_prompt_files(&mut options).await?;
        self.check_search_type(request.query_type, &recall)?;
        let started = std::time::Instant::now();
        let payloads = self.search_graph(user, &datasets, request.query_type, &recall, &options, &events).await?;
        events.report(|| RecallEvent::timing("search", started.elapsed()));
        self.log_history(user, &recall, request.query_type, &payloads).await?;
        Ok(payloads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_run_in_cognees_order() {
        // Every problem at once: the first check in the order wins.
        let mut r = SearchRequest::new("q");
        r.options.neighborhood_depth = Some(0);
        r.max_iter = Some(0);
        r.code_query = Some(json!({}));
        r.tools = Some(vec!["t".into()]);
        r.options.node_name_filter_operator = "XOR".into();
        r.options.top_k = Some(0);
        let mut expect = vec![
            ("InvalidNeighborhoodDepth", "neighborhood_depth must be a positive integer."),
            ("InvalidMaxIter", "max_iter must be a positive integer."),
            ("InvalidCodeSearchConfig", "code_query requires query_type=SearchType.CODE."),
            ("InvalidAgenticSearchConfig", "skills/tools require query_type=SearchType.AGENTIC_COMPLETION."),
            ("CogneeValidationError", "Invalid node_name_filter_operator: 'XOR'. Must be one of ['AND', 'OR']."),
            ("QueryValidationError", "top_k must be a positive integer."),
        ]
        .into_iter();
        loop {
            let err = r.validate().unwrap_err();
            let (name, message) = expect.next().unwrap();
            assert_eq!((err.name(), err.to_string().as_str()), (name, message));
            match name {
                "InvalidNeighborhoodDepth" => r.options.neighborhood_depth = None,
                "InvalidMaxIter" => r.max_iter = None,
                "InvalidCodeSearchConfig" => r.code_query = None,
                "InvalidAgenticSearchConfig" => r.tools = None,
                "CogneeValidationError" => r.options.node_name_filter_operator = " and ".into(),
                _ => break,
            }
        }
        r.options.top_k = Some(3);
        assert!(r.validate().is_ok());
        r.options.neighborhood_seed_top_k = Some(-1);
        assert_eq!(r.validate().unwrap_err().name(), "InvalidNeighborhoodSeedTopK");
    }

    #[test]
    fn the_wire_body_defaults_to_hybrid_and_refuses_a_null_type() {
        let r: SearchRequest = serde_json::from_value(json!({"query": "q", "maxIter": 2, "datasetIds": []})).unwrap();
        assert_eq!(r.query_type, SearchType::HybridCompletion);
        assert_eq!((r.max_iter, r.dataset_ids.as_deref()), (Some(2), Some(&[][..])));
        assert_eq!(r.options.system_prompt.as_deref(), Some(recall_core::DEFAULT_SYSTEM_PROMPT));
        let camel: SearchRequest =
            serde_json::from_value(json!({"query": "q", "searchType": "CHUNKS", "topK": 4})).unwrap();
        assert_eq!((camel.query_type, camel.options.top_k), (SearchType::Chunks, Some(4)));
        assert!(serde_json::from_value::<SearchRequest>(json!({"query": "q", "search_type": null})).is_err());
        assert!(serde_json::from_value::<SearchRequest>(json!({"search_type": "CHUNKS"})).is_err());
    }

    #[test]
    fn as_recall_pins_the_type_and_fills_the_default_prompt() {
        let mut s = SearchRequest::new("q").query_type(SearchType::Chunks).datasets(["a"]);
        s.dataset_ids = Some(vec![DatasetId(uuid::Uuid::nil())]);
        s.max_iter = Some(3);
        s.options.node_name_filter_operator = " and ".into();
        let r = s.as_recall();
        assert_eq!((r.query_type, r.auto_route, r.datasets.clone()), (Some(SearchType::Chunks), false, None));
        assert_eq!(r.scope, Some(vec!["graph".to_string()]));
        assert_eq!(r.options.system_prompt.as_deref(), Some(recall_core::DEFAULT_SYSTEM_PROMPT));
        assert_eq!(r.options.retriever_specific_config.get("max_iter"), Some(&json!(3)));
        assert_eq!(r.options.node_name_filter_operator, "AND");
        // A prompt file keeps its template.
        s.options.system_prompt_path = Some("answer_simple_question.txt".into());
        assert_eq!(s.as_recall().options.system_prompt, None);
    }
}
