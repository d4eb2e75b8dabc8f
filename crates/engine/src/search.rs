//! The legacy `search()` (docs/recall.md, "Legacy search()"): one explicit
//! search type over the datasets, with `search()`'s own checks in Cognee's
//! order and its backwards-compatible result shape. No router, no warm-up
//! guard, no skill gate, no session lanes, no retry.

use recall_core::{DatasetId, RecallError, Result, SearchType, User};
use recall_retrievers::RetrievedContext;
use serde_json::{json, Map, Value};

use crate::normalise::SearchResultPayload;
use crate::recall::{truthy, RecallRequest};
use crate::Engine;

/// `search()`'s system prompt when none is given.
pub const DEFAULT_SEARCH_SYSTEM_PROMPT: &str =
    "Answer the question using the provided context. Be as brief as possible.";

/// The parameters of one legacy search.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query_text: String,
    /// `cognee.search()` defaults to GRAPH_COMPLETION (the HTTP body to HYBRID_COMPLETION).
    pub query_type: SearchType,
    /// Ignored when `dataset_ids` is non-empty.
    pub datasets: Option<Vec<String>>,
    pub dataset_ids: Option<Vec<DatasetId>>,
    /// `None` is [`DEFAULT_SEARCH_SYSTEM_PROMPT`].
    pub system_prompt: Option<String>,
    pub system_prompt_path: Option<String>,
    pub node_name: Option<Vec<String>>,
    /// AND or OR (any case, surrounding blanks ignored).
    pub node_name_filter_operator: String,
    pub top_k: Option<i64>,
    pub only_context: bool,
    pub session_id: Option<String>,
    /// Per dataset: text, context and objects results, prompts and evidence.
    pub verbose: bool,
    /// AGENTIC_COMPLETION only.
    pub skills: Option<Vec<String>>,
    pub tools: Option<Vec<String>>,
    pub max_iter: Option<i64>,
    pub include_references: bool,
    /// CODE only.
    pub code_query: Option<Value>,
    pub neighborhood_depth: Option<i64>,
    pub neighborhood_seed_top_k: Option<i64>,
    pub wide_search_top_k: Option<i64>,
    pub triplet_distance_penalty: Option<f64>,
    pub feedback_influence: f64,
    pub retriever_specific_config: Map<String, Value>,
    pub response_schema: Option<Value>,
}

impl SearchRequest {
    pub fn new(query_text: impl Into<String>) -> Self {
        Self {
            query_text: query_text.into(),
            query_type: SearchType::GraphCompletion,
            datasets: None,
            dataset_ids: None,
            system_prompt: None,
            system_prompt_path: None,
            node_name: None,
            node_name_filter_operator: "OR".into(),
            top_k: Some(crate::DEFAULT_TOP_K),
            only_context: false,
            session_id: None,
            verbose: false,
            skills: None,
            tools: None,
            max_iter: None,
            include_references: false,
            code_query: None,
            neighborhood_depth: None,
            neighborhood_seed_top_k: None,
            wide_search_top_k: None,
            triplet_distance_penalty: None,
            feedback_influence: 0.0,
            retriever_specific_config: Map::new(),
            response_schema: None,
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
        self.top_k = Some(k);
        self
    }

    pub fn only_context(mut self, on: bool) -> Self {
        self.only_context = on;
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
            ("neighborhood_depth", "InvalidNeighborhoodDepth", self.neighborhood_depth),
            ("neighborhood_seed_top_k", "InvalidNeighborhoodSeedTopK", self.neighborhood_seed_top_k),
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
        let listed = |v: &Option<Vec<String>>| v.as_ref().is_some_and(|l| !l.is_empty());
        if (listed(&self.skills) || listed(&self.tools)) && self.query_type != SearchType::AgenticCompletion {
            return Err(RecallError::Validation {
                name: "InvalidAgenticSearchConfig",
                message: "skills/tools require query_type=SearchType.AGENTIC_COMPLETION.".into(),
            });
        }
        let op = self.node_name_filter_operator.trim().to_uppercase();
        if op != "AND" && op != "OR" {
            return Err(RecallError::Validation {
                name: "CogneeValidationError",
                message: format!(
                    "Invalid node_name_filter_operator: '{}'. Must be one of ['AND', 'OR'].",
                    self.node_name_filter_operator
                ),
            });
        }
        Ok(())
    }

    /// The same search as a pinned, graph-only recall request.
    fn as_recall(&self) -> RecallRequest {
        let mut r = RecallRequest::new(self.query_text.clone()).query_type(self.query_type).scope(["graph"]);
        r.auto_route = false;
        r.datasets =
            if self.dataset_ids.as_ref().is_some_and(|ids| !ids.is_empty()) { None } else { self.datasets.clone() };
        r.dataset_ids = self.dataset_ids.clone();
        r.top_k = self.top_k;
        r.only_context = self.only_context;
        r.node_name = self.node_name.clone();
        r.node_name_filter_operator = self.node_name_filter_operator.trim().to_uppercase();
        r.system_prompt = match (&self.system_prompt, &self.system_prompt_path) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_SEARCH_SYSTEM_PROMPT.to_string()),
        };
        r.system_prompt_path = self.system_prompt_path.clone();
        r.include_references = self.include_references;
        r.response_schema = self.response_schema.clone();
        r.retriever_specific_config = self.retriever_specific_config.clone();
        if let Some(n) = self.max_iter {
            r.retriever_specific_config.entry("max_iter").or_insert(json!(n));
        }
        r.wide_search_top_k = self.wide_search_top_k;
        r.triplet_distance_penalty = self.triplet_distance_penalty;
        r.feedback_influence = self.feedback_influence;
        r.neighborhood_depth = self.neighborhood_depth;
        r.neighborhood_seed_top_k = self.neighborhood_seed_top_k;
        r.session_id = self.session_id.clone();
        r
    }

    /// Exactly one explicit dataset reference (AGENTIC_COMPLETION, SKILLS).
    fn single_dataset_reference(&self) -> bool {
        match self.dataset_ids.as_deref() {
            Some(ids) if !ids.is_empty() => ids.len() == 1,
            _ => self.datasets.as_ref().is_some_and(|d| d.len() == 1),
        }
    }
}

fn context_value(context: &Option<RetrievedContext>) -> Value {
    match context {
        Some(RetrievedContext::Text(s)) => Value::String(s.clone()),
        Some(RetrievedContext::List(l)) => json!(l),
        None => Value::Null,
    }
}

/// The non-verbose `search_result`: the prompt (only_context), else the
/// completion if truthy, else the context if truthy, else the raw objects.
fn search_result(p: &SearchResultPayload) -> Value {
    if p.only_context {
        return match &p.user_prompt {
            Some(prompt) => Value::String(prompt.clone()),
            None => context_value(&p.context),
        };
    }
    let completion = p.completion.clone().map(Value::Array).unwrap_or(Value::Null);
    if truthy(&completion) {
        return completion;
    }
    let context = context_value(&p.context);
    if truthy(&context) {
        return context;
    }
    Value::Array(p.objects.clone())
}

fn verbose_result(p: &SearchResultPayload) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("text_result".into(), p.completion.clone().map(Value::Array).unwrap_or(Value::Null));
    m.insert("context_result".into(), context_value(&p.context));
    m.insert("objects_result".into(), Value::Array(p.objects.clone()));
    m.insert("user_prompt_result".into(), p.user_prompt.clone().map(Value::String).unwrap_or(Value::Null));
    m.insert("system_prompt_result".into(), p.system_prompt.clone().map(Value::String).unwrap_or(Value::Null));
    m.insert("evidence".into(), serde_json::to_value(&p.evidence).unwrap_or(Value::Array(Vec::new())));
    m
}

/// `_backwards_compatible_search_results` (docs/recall.md, "Legacy search()").
fn shape(payloads: &[SearchResultPayload], verbose: bool, access_control: bool) -> Vec<Value> {
    if !access_control {
        let results: Vec<Value> = payloads
            .iter()
            .map(|p| if verbose { Value::Object(verbose_result(p)) } else { search_result(p) })
            .collect();
        if let [Value::Array(inner)] = results.as_slice() {
            if !verbose {
                return inner.clone();
            }
        }
        return results;
    }
    payloads
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("dataset_id".into(), json!(p.dataset.as_ref().map(|d| d.id.to_string())));
            m.insert("dataset_name".into(), json!(p.dataset.as_ref().map(|d| d.name.clone())));
            m.insert(
                "dataset_tenant_id".into(),
                json!(p.dataset.as_ref().and_then(|d| d.tenant_id).map(|t| t.to_string())),
            );
            if verbose {
                m.extend(verbose_result(p));
            } else {
                m.insert("search_result".into(), search_result(p));
            }
            if let Some(error) = &p.error {
                m.insert("error".into(), json!(error));
            }
            Value::Object(m)
        })
        .collect()
}

impl Engine {
    /// The legacy `search()`: validates in Cognee's order, resolves the
    /// datasets strictly, runs the type on each and records the history
    /// under the requested type. Returns Cognee's backwards-compatible
    /// result list.
    pub async fn search(&self, user: &User, request: &SearchRequest) -> Result<Vec<Value>> {
        self.search_with_events(user, request, std::sync::Arc::new(recall_core::NoEvents)).await
    }

    /// [`Engine::search`], reporting `Stage(Retrieving)`, answer tokens when
    /// the listener asks for them, and per-stage timings (no `Final`: the
    /// legacy result shape is the return value).
    pub async fn search_with_events(
        &self,
        user: &User,
        request: &SearchRequest,
        events: std::sync::Arc<dyn recall_core::RecallEvents>,
    ) -> Result<Vec<Value>> {
        request.check_search_parameters()?;
        let recall = request.as_recall();
        let top_k = recall.validate()?;
        events.report(|| recall_core::RecallEvent::Stage { stage: recall_core::Stage::Retrieving });
        let datasets = self.resolve_datasets(user, &recall).await?;
        let ids: Vec<DatasetId> = datasets.iter().map(|d| d.id).collect();
        self.observe_data_versions(&ids).await?;
        if datasets.is_empty() {
            return Err(RecallError::no_permission_on_any(recall_core::Permission::Read));
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
                return Err(scope_error("InvalidAgenticDatasetScope", "AGENTIC_COMPLETION"))
            }
            _ => {}
        }
        let mut options = recall.retriever_options(top_k);
        self.load_prompt_files(&mut options).await?;
        let started = std::time::Instant::now();
        let payloads = self.search_graph(&datasets, request.query_type, &recall, &options, &events).await?;
        events.report(|| recall_core::RecallEvent::timing("search", started.elapsed()));
        self.log_history(user, &recall, request.query_type, &payloads).await?;
        Ok(shape(&payloads, request.verbose, self.config.access_control))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_run_in_cognees_order() {
        // Every problem at once: the first check in the order wins.
        let mut r = SearchRequest::new("q");
        r.neighborhood_depth = Some(0);
        r.max_iter = Some(0);
        r.code_query = Some(json!({}));
        r.tools = Some(vec!["t".into()]);
        r.node_name_filter_operator = "XOR".into();
        r.top_k = Some(0);
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
                "InvalidNeighborhoodDepth" => r.neighborhood_depth = None,
                "InvalidMaxIter" => r.max_iter = None,
                "InvalidCodeSearchConfig" => r.code_query = None,
                "InvalidAgenticSearchConfig" => r.tools = None,
                "CogneeValidationError" => r.node_name_filter_operator = " and ".into(),
                _ => break,
            }
        }
        r.top_k = Some(3);
        assert!(r.validate().is_ok());
        r.neighborhood_seed_top_k = Some(-1);
        assert_eq!(r.validate().unwrap_err().name(), "InvalidNeighborhoodSeedTopK");
    }

    fn payload(
        completion: Option<Vec<Value>>,
        context: Option<RetrievedContext>,
        objects: Vec<Value>,
    ) -> SearchResultPayload {
        SearchResultPayload {
            dataset: None,
            search_type: SearchType::GraphCompletion,
            completion,
            context,
            only_context: false,
            user_prompt: None,
            system_prompt: None,
            evidence: Vec::new(),
            structured: false,
            error: None,
            objects,
        }
    }

    #[test]
    fn the_result_falls_through_completion_context_and_objects() {
        let answer = payload(Some(vec![json!("Paris")]), Some(RetrievedContext::Text("ctx".into())), vec![]);
        assert_eq!(search_result(&answer), json!(["Paris"]));
        let empty_answer = payload(Some(vec![]), Some(RetrievedContext::Text("ctx".into())), vec![]);
        assert_eq!(search_result(&empty_answer), json!("ctx"));
        let nothing = payload(Some(vec![]), Some(RetrievedContext::Text(String::new())), vec![json!({"a": 1})]);
        assert_eq!(search_result(&nothing), json!([{"a": 1}]));
        // Access control off: a single list result is returned unwrapped.
        assert_eq!(shape(std::slice::from_ref(&answer), false, false), vec![json!("Paris")]);
        assert_eq!(shape(&[answer.clone(), answer], false, false), vec![json!(["Paris"]), json!(["Paris"])]);
    }
}
