//! `recall()`: validation, dataset resolution, search-type choice, the
//! per-dataset fan-out through the retriever registry, and result assembly
//! (docs/recall.md; docs/retrievers.md).

use std::time::Instant;

use std::sync::Arc;

use futures::future::join_all;
use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::{
    CollectEvents, Dataset, DatasetId, GraphBuildStatus, NoEvents, RecallError, RecallEvent, RecallEvents,
    RecallResponse, ResponseMarkerEntry, Result, SearchRecord, SearchType, Stage, User,
};
use recall_retrievers::{FilterOperator, RetrievalContext, RetrievedContext, RetrieverOptions};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::dataset_routing::{DatasetRouting, RoutingOutcome};
use crate::normalise::{normalise_payload, SearchResultPayload};
use crate::scope::{check_tools_trigger, normalize_scope, plan, Plan, ScopeInputs, Source};
use crate::Engine;

/// `recall()`'s default `top_k`.
pub const DEFAULT_TOP_K: i64 = 15;

/// The parameters of one recall.
#[derive(Debug, Clone)]
pub struct RecallRequest {
    pub query_text: String,
    /// `None` lets the engine choose (auto-routing).
    pub query_type: Option<SearchType>,
    /// Dataset names, resolved strictly among the caller's own datasets.
    pub datasets: Option<Vec<String>>,
    /// Dataset ids; take precedence over `datasets`.
    pub dataset_ids: Option<Vec<DatasetId>>,
    /// Must be positive; `None` lets each retriever use its default.
    pub top_k: Option<i64>,
    pub auto_route: bool,
    pub only_context: bool,
    pub node_name: Option<Vec<String>>,
    /// `"OR"` or `"AND"` (anything but AND means OR).
    pub node_name_filter_operator: String,
    pub system_prompt: Option<String>,
    /// A built-in prompt name or a file; used when `system_prompt` is unset.
    pub system_prompt_path: Option<String>,
    /// The `Evidence:` block and `metadata.evidence` (docs/retrievers.md).
    pub include_references: bool,
    /// JSON Schema for structured answers (the `response_model` of Cognee).
    pub response_schema: Option<Value>,
    /// Extra per-type settings (docs/retrievers.md, "Options on every type"), e.g. `chunks_top_k`, `max_iter`.
    pub retriever_specific_config: Map<String, Value>,
    /// Graph family only; rejected on HYBRID_COMPLETION.
    pub wide_search_top_k: Option<i64>,
    /// Graph family only; rejected on HYBRID_COMPLETION.
    pub triplet_distance_penalty: Option<f64>,
    /// In [0, 1]; > 0 makes HYBRID_COMPLETION defer to GRAPH_COMPLETION.
    pub feedback_influence: f64,
    /// k-hop projection; makes HYBRID_COMPLETION defer to GRAPH_COMPLETION.
    pub neighborhood_depth: Option<i64>,
    pub neighborhood_seed_top_k: Option<i64>,
    /// Lanes to search (docs/recall.md, "Scopes and lanes"); `None` is `["auto"]`.
    pub scope: Option<Vec<String>>,
    /// Turns on the session lanes.
    pub session_id: Option<String>,
    /// `qa` or `agent` (the session-context lane's profile).
    pub context_profile: String,
    /// `always` or `on_empty` (the tools lane).
    pub tools_trigger: String,
    /// The code lane's operation; needs `code` in the scope.
    pub code_query: Option<Value>,
}

impl RecallRequest {
    pub fn new(query_text: impl Into<String>) -> Self {
        Self {
            query_text: query_text.into(),
            query_type: None,
            datasets: None,
            dataset_ids: None,
            top_k: Some(DEFAULT_TOP_K),
            auto_route: true,
            only_context: false,
            node_name: None,
            node_name_filter_operator: "OR".into(),
            system_prompt: None,
            system_prompt_path: None,
            include_references: false,
            response_schema: None,
            retriever_specific_config: Map::new(),
            wide_search_top_k: None,
            triplet_distance_penalty: None,
            feedback_influence: 0.0,
            neighborhood_depth: None,
            neighborhood_seed_top_k: None,
            scope: None,
            session_id: None,
            context_profile: "qa".into(),
            tools_trigger: "always".into(),
            code_query: None,
        }
    }

    pub fn scope<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.scope = Some(names.into_iter().map(Into::into).collect());
        self
    }

    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// The lanes this request runs (validates the scope, `tools_trigger` and `code_query`).
    pub fn plan(&self) -> Result<Plan> {
        let scope = normalize_scope(self.scope.as_deref())?;
        check_tools_trigger(&self.tools_trigger)?;
        plan(
            &scope,
            ScopeInputs {
                session_id_set: self.session_id.as_deref().is_some_and(|s| !s.is_empty()),
                datasets_given: self.datasets.as_ref().is_some_and(|d| !d.is_empty())
                    || self.dataset_ids.as_ref().is_some_and(|d| !d.is_empty()),
                query_type_pinned: self.query_type.is_some(),
                tools_on_empty: self.tools_trigger == "on_empty",
                code_query_given: self.code_query.is_some(),
            },
        )
    }

    pub fn only_context(mut self, on: bool) -> Self {
        self.only_context = on;
        self
    }

    pub fn include_references(mut self, on: bool) -> Self {
        self.include_references = on;
        self
    }

    pub fn response_schema(mut self, schema: Value) -> Self {
        self.response_schema = Some(schema);
        self
    }

    pub fn node_name<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.node_name = Some(names.into_iter().map(Into::into).collect());
        self
    }

    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets one `retriever_specific_config` key.
    pub fn config(mut self, key: &str, value: Value) -> Self {
        self.retriever_specific_config.insert(key.to_string(), value);
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
        self.top_k = Some(k);
        self
    }

    /// The checks that need no I/O: a positive `top_k` and a non-blank query.
    /// Returns `top_k` as a count (`None`: each retriever's default).
    pub fn validate(&self) -> Result<Option<usize>> {
        self.plan()?;
        let top_k = match self.top_k {
            Some(k) if k <= 0 => return Err(RecallError::top_k_not_positive()),
            Some(k) => Some(usize::try_from(k).map_err(|_| RecallError::top_k_not_positive())?),
            None => None,
        };
        if self.query_text.trim().is_empty() {
            return Err(RecallError::empty_query());
        }
        let positive = |name: &str, v: Option<i64>| match v {
            Some(n) if n <= 0 => Err(RecallError::QueryValidation(format!("{name} must be a positive integer."))),
            _ => Ok(()),
        };
        positive("wide_search_top_k", self.wide_search_top_k)?;
        positive("neighborhood_depth", self.neighborhood_depth)?;
        positive("neighborhood_seed_top_k", self.neighborhood_seed_top_k)?;
        if !(0.0..=1.0).contains(&self.feedback_influence) {
            return Err(RecallError::Validation {
                name: "InvalidFeedbackInfluenceError",
                message: "feedback_influence must be in range [0, 1]".into(),
            });
        }
        if let Some(p) = self.triplet_distance_penalty {
            if !p.is_finite() || p < 0.0 {
                return Err(RecallError::QueryValidation(
                    "triplet_distance_penalty must be a non-negative number.".into(),
                ));
            }
        }
        if let Some(schema) = &self.response_schema {
            recall_retrievers::schema::compile(schema)?;
        }
        let rsc = &self.retriever_specific_config;
        if rsc.get("skills").is_some_and(truthy) || rsc.get("tools").is_some_and(|v| !v.is_null()) {
            return Err(RecallError::UnsupportedSearchType(
                "Unsupported search type: skills/tools are supported only with SearchType.AGENTIC_COMPLETION".into(),
            ));
        }
        Ok(top_k)
    }

    pub(crate) fn retriever_options(&self, top_k: Option<usize>) -> RetrieverOptions {
        let as_usize = |v: Option<i64>| v.and_then(|n| usize::try_from(n).ok());
        RetrieverOptions {
            top_k,
            node_name: self.node_name.clone(),
            node_name_filter_operator: if self.node_name_filter_operator.eq_ignore_ascii_case("AND") {
                FilterOperator::And
            } else {
                FilterOperator::Or
            },
            only_context: self.only_context,
            system_prompt: self.system_prompt.clone(),
            system_prompt_path: self.system_prompt_path.clone(),
            prompt_files: Default::default(),
            include_references: self.include_references,
            response_schema: self.response_schema.clone(),
            wide_search_top_k: as_usize(self.wide_search_top_k),
            triplet_distance_penalty: self.triplet_distance_penalty,
            feedback_influence: self.feedback_influence,
            neighborhood_depth: as_usize(self.neighborhood_depth),
            neighborhood_seed_top_k: as_usize(self.neighborhood_seed_top_k),
            retriever_specific_config: self.retriever_specific_config.clone(),
        }
    }
}

/// The answer recorded for one dataset: the completion, else the context, as text.
fn history_value(p: &SearchResultPayload) -> String {
    if let Some(completion) = p.completion.as_ref().filter(|c| !c.is_empty()) {
        return match completion.as_slice() {
            [Value::String(s)] => s.clone(),
            items => Value::Array(items.to_vec()).to_string(),
        };
    }
    p.context.as_ref().map(RetrievedContext::as_text).unwrap_or_default()
}

/// Errors that reject a search type (retried once as HYBRID_COMPLETION after a routed guess).
fn is_type_rejection(e: &RecallError) -> bool {
    matches!(
        e,
        RecallError::UnsupportedSearchType(_)
            | RecallError::SearchTypeDisabled(_)
            | RecallError::SearchTypeNotSupported(_)
    )
}

/// Python truthiness of a JSON value.
/// Python truthiness of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// What one recall decided, and how long each stage took
/// (`recall recall --explain`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecallExplain {
    /// The lanes run, in order.
    pub lanes: Vec<String>,
    /// The graph lane's search type, and what chose it: `query_type`,
    /// `router:<rule>`, `no_llm` or `auto_route_off`.
    pub search_type: Option<String>,
    pub chosen_by: Option<String>,
    /// Set when a routed guess was retried.
    pub retried_as: Option<String>,
    /// The datasets considered, their routing distances and the selection.
    pub dataset_routing: Option<DatasetRouting>,
    /// The datasets searched (the selection, then the rest when widened).
    pub datasets_searched: Vec<String>,
    /// The selection retrieved nothing and the remaining datasets were searched.
    pub widened: bool,
    /// The warm-up probe's verdict, when it ran.
    pub warmup: Option<String>,
    /// Whether the skill gate fired (and looked up skills), and how many it added.
    pub skill_gate: bool,
    pub skills_added: usize,
    pub timings_ms: Vec<StageTiming>,
}

/// Lets one dataset's answer stream: the first whose answer step starts
/// generating; the answer events of the others are dropped (their answers
/// still arrive in the final results).
struct FirstStream {
    inner: Arc<dyn RecallEvents>,
    owner: Arc<std::sync::Mutex<Option<DatasetId>>>,
}

impl FirstStream {
    fn new(inner: Arc<dyn RecallEvents>) -> Self {
        Self { inner, owner: Default::default() }
    }

    fn for_dataset(&self, dataset: DatasetId) -> DatasetEvents {
        DatasetEvents { inner: self.inner.clone(), owner: self.owner.clone(), dataset }
    }
}

struct DatasetEvents {
    inner: Arc<dyn RecallEvents>,
    owner: Arc<std::sync::Mutex<Option<DatasetId>>>,
    dataset: DatasetId,
}

impl RecallEvents for DatasetEvents {
    fn listening(&self) -> bool {
        self.inner.listening()
    }

    fn wants_deltas(&self) -> bool {
        self.inner.wants_deltas()
    }

    fn emit(&self, event: RecallEvent) {
        let answer_event = matches!(
            event,
            RecallEvent::Stage { stage: Stage::Generating }
                | RecallEvent::Delta { .. }
                | RecallEvent::Reset
                | RecallEvent::AnswerDone
        );
        if answer_event {
            let Ok(mut owner) = self.owner.lock() else { return };
            if *owner.get_or_insert(self.dataset) != self.dataset {
                return;
            }
        }
        self.inner.emit(event);
    }
}

/// One stage's wall time.
#[derive(Debug, Clone, Serialize)]
pub struct StageTiming {
    pub stage: String,
    pub ms: f64,
}

/// One recall as it runs: its decisions, and where its events go.
pub(crate) struct Run {
    pub(crate) explain: RecallExplain,
    pub(crate) events: Arc<dyn RecallEvents>,
}

impl Run {
    /// Reports a stage's wall time.
    fn time(&mut self, stage: &str, started: Instant) {
        self.events.report(|| RecallEvent::timing(stage, started.elapsed()));
    }
}

impl Engine {
    /// Asks memory a question. Validates before any I/O; an invalid request
    /// reads and writes nothing.
    pub async fn recall(&self, user: &User, request: &RecallRequest) -> Result<Vec<RecallResponse>> {
        Ok(self.run_recall(user, request, Arc::new(NoEvents)).await?.0)
    }

    /// [`Engine::recall`], reporting to `events` as it runs: `Stage
    /// (Retrieving)` first, answer tokens when the listener asks for them,
    /// per-stage `Timing`s, and `Final` with the results last
    /// (docs/recall.md, "Events"). An invalid request fails before any event.
    pub async fn recall_with_events(
        &self,
        user: &User,
        request: &RecallRequest,
        events: Arc<dyn RecallEvents>,
    ) -> Result<Vec<RecallResponse>> {
        Ok(self.run_recall(user, request, events).await?.0)
    }

    /// [`Engine::recall`], with what it decided and how long each stage took
    /// (the timings are collected from its events).
    pub async fn recall_explained(
        &self,
        user: &User,
        request: &RecallRequest,
    ) -> Result<(Vec<RecallResponse>, RecallExplain)> {
        let timings = Arc::new(CollectEvents::default());
        let (results, mut explain) = self.run_recall(user, request, timings.clone()).await?;
        explain.timings_ms = timings
            .events()
            .into_iter()
            .filter_map(|e| match e {
                RecallEvent::Timing { stage, ms } => Some(StageTiming { stage, ms }),
                _ => None,
            })
            .collect();
        Ok((results, explain))
    }

    async fn run_recall(
        &self,
        user: &User,
        request: &RecallRequest,
        events: Arc<dyn RecallEvents>,
    ) -> Result<(Vec<RecallResponse>, RecallExplain)> {
        let top_k = request.validate()?;
        let plan = request.plan()?;
        events.report(|| RecallEvent::Stage { stage: Stage::Retrieving });
        let mut run = Run { explain: RecallExplain::default(), events };
        // The skill gate runs alongside the lanes, which never wait on it; a
        // failing lane cancels it. Its entries come last.
        let gate = self.skill_gate_applies(request, plan.sources.contains(&Source::Graph));
        run.explain.skill_gate = gate;
        let events = run.events.clone();
        let skills = async {
            let started = Instant::now();
            let entries = if gate { self.skill_gate(user, request).await } else { Vec::new() };
            Ok::<_, RecallError>((entries, started.elapsed()))
        };
        let lanes = self.run_lanes(user, request, &plan, top_k, &mut run);
        let (mut merged, (entries, gate_time)) = futures::future::try_join(lanes, skills).await?;
        if gate {
            events.report(|| RecallEvent::timing("skill_gate", gate_time));
            run.explain.skills_added = entries.len();
        }
        merged.extend(entries);
        events.report(|| RecallEvent::Final { results: merged.clone() });
        Ok((merged, run.explain))
    }

    /// The lanes of the plan, in order, merged.
    async fn run_lanes(
        &self,
        user: &User,
        request: &RecallRequest,
        plan: &Plan,
        top_k: Option<usize>,
        run: &mut Run,
    ) -> Result<Vec<RecallResponse>> {
        let graph_only = plan.sources == [Source::Graph];
        let mut merged: Vec<RecallResponse> = Vec::new();
        for source in &plan.sources {
            let started = Instant::now();
            match source {
                Source::Graph => {
                    if plan.short_circuit && !merged.is_empty() {
                        break;
                    }
                    run.explain.lanes.push(source.name().into());
                    merged.extend(self.graph_lane(user, request, top_k, graph_only, run).await?);
                }
                Source::Session | Source::Trace | Source::SessionContext => {
                    run.explain.lanes.push(source.name().into());
                    merged.extend(self.session_lane(user, *source, request, top_k).await?);
                }
                Source::Tools => {
                    if request.tools_trigger == "on_empty" && !merged.is_empty() {
                        continue;
                    }
                    return Err(RecallError::Validation {
                        name: "ToolCallsDisabledError",
                        message: "Recall scope 'tools' requested but tool calls are disabled. Set TOOL_CALLS_ENABLED=true and register a connection with cognee.tools.register_sql_connection(...) to enable it.".into(),
                    });
                }
                // The code graph (Enola) is not part of Recall: CODE has no retriever.
                Source::Code => return Err(RecallError::unsupported_search_type(SearchType::Code)),
            }
            run.time(&format!("lane:{}", source.name()), started);
        }
        Ok(merged)
    }

    /// The session, trace and session-context lanes: nothing without a
    /// session id or without session memory.
    async fn session_lane(
        &self,
        user: &User,
        source: Source,
        request: &RecallRequest,
        top_k: Option<usize>,
    ) -> Result<Vec<RecallResponse>> {
        let (Some(sessions), Some(session_id)) = (self.sessions.as_ref(), request.session_id.as_deref()) else {
            return Ok(Vec::new());
        };
        let q = request.query_text.as_str();
        Ok(match source {
            Source::Session => {
                sessions.search_qa(user, session_id, q, top_k).await?.into_iter().map(RecallResponse::Session).collect()
            }
            Source::Trace => sessions
                .search_traces(user, session_id, q, top_k)
                .await?
                .into_iter()
                .map(RecallResponse::Trace)
                .collect(),
            _ => sessions
                .session_context(user, session_id, q, &request.context_profile)
                .await?
                .into_iter()
                .map(RecallResponse::SessionContext)
                .collect(),
        })
    }

    /// The graph lane (docs/recall.md, "The graph lane"): type choice, strict dataset
    /// resolution, dataset routing, the warm-up guard, the search with the
    /// retry-once rule.
    async fn graph_lane(
        &self,
        user: &User,
        request: &RecallRequest,
        top_k: Option<usize>,
        graph_only: bool,
        run: &mut Run,
    ) -> Result<Vec<RecallResponse>> {
        let (search_type, routed_guess, chosen_by) = match request.query_type {
            Some(t) => (t, false, "query_type".to_string()),
            None if !self.llm_available() => (SearchType::Chunks, false, "no_llm".to_string()),
            None if request.auto_route => {
                let decision = recall_routing::route_query(&request.query_text);
                tracing::info!(search_type = %decision.search_type, rule = decision.rule, "query routed");
                (decision.search_type, decision.is_routed_guess(), format!("router:{}", decision.rule))
            }
            None => (SearchType::HybridCompletion, false, "auto_route_off".to_string()),
        };
        run.explain.search_type = Some(search_type.to_string());
        run.explain.chosen_by = Some(chosen_by);
        // A pinned type that cannot run fails before any dataset is touched.
        if !routed_guess {
            self.check_search_type(search_type, request)?;
        }

        let started = Instant::now();
        let readable = self.resolve_datasets(user, request).await?;
        // Before any vector read: another process's writes become visible.
        let ids: Vec<DatasetId> = readable.iter().map(|d| d.id).collect();
        self.observe_data_versions(&ids).await?;
        run.time("resolve_datasets", started);

        let started = Instant::now();
        let routing = if self.routes_datasets(request, &readable) {
            let routing = self.route_datasets(&request.query_text, &readable).await;
            run.time("dataset_routing", started);
            routing
        } else {
            DatasetRouting::all(&readable, RoutingOutcome::NotApplicable, Vec::new())
        };
        run.explain.dataset_routing = Some(routing.clone());

        if self.config.warmup_shortcircuit && !request.only_context {
            let started = Instant::now();
            let status = self.build_status(user, &routing.selected).await;
            run.time("warmup_probe", started);
            run.explain.warmup = Some(status.label().into());
            match status {
                GraphBuildStatus::Warm => {}
                _ if !graph_only => return Ok(Vec::new()),
                status => return Ok(vec![RecallResponse::System(self.warmup_marker(status))]),
            }
        }

        // Past the warm-up guard, a caller who can read nothing is refused.
        if readable.is_empty() {
            return Err(RecallError::no_permission_on_any(recall_core::Permission::Read));
        }
        let mut options = request.retriever_options(top_k);
        self.load_prompt_files(&mut options).await?;
        let started = Instant::now();
        let first = self.search_routed(&routing, search_type, request, &options, run).await;
        let (final_type, payloads) = match first {
            Err(e) if routed_guess && is_type_rejection(&e) => {
                tracing::warn!(search_type = %search_type, error = %e, "routed type rejected; retrying once as HYBRID_COMPLETION");
                let retry = SearchType::HybridCompletion;
                run.explain.retried_as = Some(retry.to_string());
                (retry, self.search_routed(&routing, retry, request, &options, run).await?)
            }
            Err(e) => return Err(e),
            Ok(payloads)
                if routed_guess
                    && matches!(search_type, SearchType::ChunksLexical | SearchType::CodingRules)
                    && payloads.iter().all(|p| normalise_payload(p).is_empty()) =>
            {
                tracing::info!(search_type = %search_type, "routed type found nothing; retrying once as HYBRID_COMPLETION");
                let retry = SearchType::HybridCompletion;
                run.explain.retried_as = Some(retry.to_string());
                (retry, self.search_routed(&routing, retry, request, &options, run).await?)
            }
            Ok(payloads) => (search_type, payloads),
        };
        run.time("search", started);
        let started = Instant::now();
        self.log_history(user, request, final_type, &payloads).await?;
        run.time("history", started);
        Ok(payloads.iter().flat_map(normalise_payload).map(RecallResponse::Graph).collect())
    }

    /// Dataset routing applies to an unscoped request over several readable
    /// datasets (docs/recall.md, "The graph lane", step 3).
    fn routes_datasets(&self, request: &RecallRequest, readable: &[Dataset]) -> bool {
        let unscoped = request.datasets.as_ref().is_none_or(Vec::is_empty)
            && request.dataset_ids.as_ref().is_none_or(Vec::is_empty);
        self.config.dataset_routing.enabled && unscoped && readable.len() > 1
    }

    /// Searches the routed selection; when it retrieves nothing (judged on the
    /// retrieved context, not the answer), searches the remaining datasets.
    async fn search_routed(
        &self,
        routing: &DatasetRouting,
        search_type: SearchType,
        request: &RecallRequest,
        options: &RetrieverOptions,
        run: &mut Run,
    ) -> Result<Vec<SearchResultPayload>> {
        run.explain.datasets_searched = routing.selected.iter().map(|d| d.name.clone()).collect();
        let first = self.search_graph(&routing.selected, search_type, request, options, &run.events).await;
        if routing.rest.is_empty() {
            return first;
        }
        let nothing = match &first {
            Err(RecallError::NoData(_)) => true,
            Ok(payloads) => payloads.iter().all(|p| p.context.as_ref().is_none_or(RetrievedContext::is_empty)),
            Err(_) => false,
        };
        if !nothing {
            return first;
        }
        let names: Vec<&str> = routing.rest.iter().map(|d| d.name.as_str()).collect();
        tracing::info!(remaining = ?names, "the routed datasets retrieved nothing; searching the remaining datasets");
        run.explain.widened = true;
        run.explain.datasets_searched.extend(names.iter().map(|n| n.to_string()));
        self.search_graph(&routing.rest, search_type, request, options, &run.events).await
    }

    /// One search type over the datasets: one payload per dataset.
    pub(crate) async fn search_graph(
        &self,
        datasets: &[Dataset],
        search_type: SearchType,
        request: &RecallRequest,
        options: &RetrieverOptions,
        events: &Arc<dyn RecallEvents>,
    ) -> Result<Vec<SearchResultPayload>> {
        self.check_search_type(search_type, request)?;
        // One dataset's answer streams: the first to start generating.
        let streaming = FirstStream::new(events.clone());
        let tasks = datasets.iter().map(|dataset| {
            let events: Arc<dyn RecallEvents> = Arc::new(streaming.for_dataset(dataset.id));
            self.search_dataset(dataset, search_type, request, options, events)
        });
        let outcomes = join_all(tasks).await;
        self.collect_payloads(datasets, outcomes, search_type, request.only_context).await
    }

    /// Records the search (docs/recall.md, "The graph lane", step 7): a question and an answer row
    /// per searched dataset, under the type that finally ran. A failing write
    /// fails the recall.
    pub(crate) async fn log_history(
        &self,
        user: &User,
        request: &RecallRequest,
        search_type: SearchType,
        payloads: &[SearchResultPayload],
    ) -> Result<()> {
        if !self.config.log_search_history {
            return Ok(());
        }
        let answers = if payloads.is_empty() {
            vec![(None, String::new())]
        } else {
            payloads.iter().map(|p| (p.dataset.as_ref().map(|d| d.id), history_value(p))).collect()
        };
        let record = SearchRecord {
            user_id: user.id,
            query_text: request.query_text.clone(),
            query_type: search_type.to_string(),
            answers,
        };
        self.relational.history.record_search(&record).await
    }

    /// The warm-up probe, failing open; only warm verdicts are cached.
    async fn build_status(&self, user: &User, datasets: &[Dataset]) -> GraphBuildStatus {
        let mut ids: Vec<DatasetId> = datasets.iter().map(|d| d.id).collect();
        ids.sort();
        let key = (user.id, ids);
        if self.warm_cache.get(&key).await.is_some() {
            return GraphBuildStatus::Warm;
        }
        match self.relational.runs.graph_build_status(&key.1).await {
            Ok(GraphBuildStatus::Warm) => {
                self.warm_cache.insert(key, ()).await;
                GraphBuildStatus::Warm
            }
            Ok(status) => status,
            Err(e) => {
                tracing::warn!(error = %e, "warm-up probe failed; searching anyway");
                GraphBuildStatus::Warm
            }
        }
    }

    fn warmup_marker(&self, status: GraphBuildStatus) -> ResponseMarkerEntry {
        match status {
            GraphBuildStatus::BuildFailed { error_class, error_message } => {
                let mut desc = error_class.clone().unwrap_or_else(|| "unknown error".into());
                if let Some(m) = error_message.as_deref().filter(|m| !m.is_empty()) {
                    desc.push_str(": ");
                    desc.push_str(m);
                }
                ResponseMarkerEntry {
                    status: "build_failed".into(),
                    text: format!("Memory build failed: the last ingestion for the requested datasets ended in an error ({desc}). Fix the cause and re-run remember() or cognify()."),
                    datapoint_count: 0,
                    threshold: self.config.warmup_threshold,
                    error_class,
                    error_message,
                }
            }
            _ => ResponseMarkerEntry {
                status: "memory_warming_up".into(),
                text: "Memory is still warming up: no knowledge graph data exists yet for the requested datasets."
                    .into(),
                datapoint_count: 0,
                threshold: self.config.warmup_threshold,
                error_class: None,
                error_message: None,
            },
        }
    }

    /// The retriever-factory checks that need no I/O (docs/retrievers.md).
    fn check_search_type(&self, search_type: SearchType, request: &RecallRequest) -> Result<()> {
        if matches!(search_type, SearchType::Cypher | SearchType::NaturalLanguage) && !self.config.allow_cypher_query {
            return Err(RecallError::SearchTypeDisabled(search_type));
        }
        if search_type == SearchType::HybridCompletion {
            for (name, set) in [
                ("wide_search_top_k", request.wide_search_top_k.is_some()),
                ("triplet_distance_penalty", request.triplet_distance_penalty.is_some()),
            ] {
                if set {
                    return Err(RecallError::Validation {
                        name: "InvalidHybridSearchConfig",
                        message: format!("{name} requires query_type=SearchType.GRAPH_COMPLETION."),
                    });
                }
            }
        }
        if search_type != SearchType::FeelingLucky {
            // Unsupported types fail before any dataset is touched.
            self.retrievers.get(search_type)?;
        }
        Ok(())
    }

    /// The stores, models and data version for one dataset.
    pub(crate) fn retrieval_context(&self, dataset: &Dataset, events: Arc<dyn RecallEvents>) -> RetrievalContext {
        RetrievalContext {
            dataset: dataset.clone(),
            graph: self.graph.clone(),
            vectors: self.vectors.clone(),
            embedder: self.query_embedder.clone(),
            llm: self.llm.clone(),
            data_version: self.data_version(dataset.id),
            events,
        }
    }

    /// The type that actually runs on this dataset: FEELING_LUCKY resolved
    /// by the LLM, HYBRID_COMPLETION deferred to GRAPH_COMPLETION where it
    /// cannot run (docs/recall.md, "The graph lane").
    async fn effective_type(
        &self,
        ctx: &RetrievalContext,
        requested: SearchType,
        request: &RecallRequest,
    ) -> Result<SearchType> {
        let mut t = requested;
        if t == SearchType::FeelingLucky {
            t = if self.graph.is_empty(ctx.dataset.id).await? {
                SearchType::HybridCompletion
            } else {
                self.select_search_type(ctx, &request.query_text).await
            };
            tracing::info!(search_type = %t, "FEELING_LUCKY chose a search type");
        }
        if t == SearchType::HybridCompletion {
            let defer = request.neighborhood_depth.is_some()
                || request.feedback_influence > 0.0
                || (!self.graph.is_empty(ctx.dataset.id).await?
                    && !self.vectors.has_collection(ctx.dataset.id, DOCUMENT_CHUNK_TEXT).await.unwrap_or(true));
            if defer {
                tracing::warn!(
                    "HYBRID_COMPLETION is not available for this search; answering with GRAPH_COMPLETION instead."
                );
                t = SearchType::GraphCompletion;
            }
        }
        Ok(t)
    }

    /// FEELING_LUCKY: the LLM names a search type; anything unusable is RAG_COMPLETION.
    async fn select_search_type(&self, ctx: &RetrievalContext, query: &str) -> SearchType {
        let Ok(system) = recall_retrievers::prompts::system(recall_retrievers::prompts::SEARCH_TYPE_SELECTOR) else {
            return SearchType::RagCompletion;
        };
        match recall_retrievers::completion::chat(ctx, "FEELING_LUCKY", &system, query).await {
            Ok(answer) => {
                let name = answer.trim().trim_matches(|c: char| c == '`' || c == '"' || c == '.').to_uppercase();
                match name.parse::<SearchType>() {
                    Ok(t)
                        if !matches!(t, SearchType::Code | SearchType::FeelingLucky) && self.retrievers.contains(t) =>
                    {
                        t
                    }
                    _ => SearchType::RagCompletion,
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "FEELING_LUCKY selection failed; using RAG_COMPLETION");
                SearchType::RagCompletion
            }
        }
    }

    /// Runs the three retriever steps on one dataset.
    async fn search_dataset(
        &self,
        dataset: &Dataset,
        requested: SearchType,
        request: &RecallRequest,
        options: &RetrieverOptions,
        events: Arc<dyn RecallEvents>,
    ) -> Result<SearchResultPayload> {
        self.check_embedding_width(dataset.id).await?;
        let ctx = self.retrieval_context(dataset, events);
        let search_type = self.effective_type(&ctx, requested, request).await?;
        if matches!(search_type, SearchType::Cypher | SearchType::NaturalLanguage) && !self.config.allow_cypher_query {
            return Err(RecallError::SearchTypeDisabled(search_type));
        }
        let retriever = self.retrievers.get(search_type)?;
        let query = request.query_text.as_str();
        let objects = retriever.get_retrieved_objects(&ctx, query, options).await?;
        let context = retriever.get_context_from_objects(&ctx, query, &objects, options).await?;
        let (completion, preview) = if options.only_context {
            (None, retriever.prompt_preview(&ctx, query, &context, options).await?)
        } else {
            (retriever.get_completion_from_context(&ctx, query, &objects, &context, options).await?, None)
        };
        let evidence = if options.include_references {
            retriever.get_context_evidence(&ctx, &objects, options).await?
        } else {
            Vec::new()
        };
        Ok(SearchResultPayload {
            dataset: Some(dataset.clone()),
            search_type,
            completion,
            context: Some(context),
            only_context: options.only_context,
            user_prompt: preview.as_ref().map(|p| p.user_prompt.clone()),
            system_prompt: preview.map(|p| p.system_prompt),
            evidence,
            structured: options.response_schema.is_some() && retriever.structured_output(),
            error: None,
            objects,
        })
    }

    /// The datasets this request reads ([`Engine::readable_scope`]).
    pub(crate) async fn resolve_datasets(&self, user: &User, request: &RecallRequest) -> Result<Vec<Dataset>> {
        self.readable_scope(user, request.datasets.as_deref(), request.dataset_ids.as_deref()).await
    }

    /// A dataset's chunk vectors must come from the configured embedding model.
    async fn check_embedding_width(&self, dataset: DatasetId) -> Result<()> {
        let configured = self.embedder.spec();
        match self.vectors.collection_spec(DOCUMENT_CHUNK_TEXT).await? {
            Some(stored) if stored != configured => {
                Err(RecallError::embedding_mismatch(dataset, &stored, &configured.model, configured.dimensions))
            }
            _ => Ok(()),
        }
    }

    /// One payload per dataset, in request order. Any error other than "no
    /// data" fails the search; if every dataset had no data, `NoDataError`
    /// names each; otherwise the empty ones get an empty payload.
    async fn collect_payloads(
        &self,
        datasets: &[Dataset],
        outcomes: Vec<Result<SearchResultPayload>>,
        search_type: SearchType,
        only_context: bool,
    ) -> Result<Vec<SearchResultPayload>> {
        let mut payloads = Vec::with_capacity(outcomes.len());
        let mut no_data = Vec::new();
        for (dataset, outcome) in datasets.iter().zip(outcomes) {
            match outcome {
                Ok(p) => payloads.push(p),
                Err(RecallError::NoData(message)) => {
                    let reason = self.no_data_reason(dataset, message).await?;
                    no_data.push((dataset.clone(), reason));
                }
                Err(e) => return Err(e),
            }
        }
        if !datasets.is_empty() && no_data.len() == datasets.len() {
            let message = if let [(d, reason)] = no_data.as_slice() {
                format!("No searchable memory in dataset '{}' (id: {}): {reason}", d.name, d.id)
            } else {
                let lines: Vec<String> =
                    no_data.iter().map(|(d, reason)| format!("- '{}' (id: {}): {reason}", d.name, d.id)).collect();
                format!("No searchable memory in any of the {} searched datasets:\n{}", no_data.len(), lines.join("\n"))
            };
            return Err(RecallError::NoData(message));
        }
        for (dataset, reason) in no_data {
            payloads.push(SearchResultPayload {
                dataset: Some(dataset),
                search_type,
                completion: None,
                context: only_context.then(|| RetrievedContext::List(Vec::new())),
                only_context,
                user_prompt: None,
                system_prompt: None,
                evidence: Vec::new(),
                structured: false,
                error: Some(reason),
                objects: Vec::new(),
            });
        }
        // Keep request order.
        payloads.sort_by_key(|p| {
            p.dataset.as_ref().and_then(|d| datasets.iter().position(|x| x.id == d.id)).unwrap_or(usize::MAX)
        });
        Ok(payloads)
    }

    async fn no_data_reason(&self, dataset: &Dataset, retriever_message: String) -> Result<String> {
        if !self.graph.is_empty(dataset.id).await? {
            return Ok(retriever_message);
        }
        let items = self.relational.data.count_data(dataset.id).await?;
        Ok(if items > 0 {
            format!("holds {items} data item(s) but its knowledge graph is empty; run cognify on this dataset before searching.")
        } else {
            "no data has been added; add data and run cognify before searching.".to_string()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use recall_core::ports::{
        MockDataStore, MockDatasetStore, MockEmbedder, MockGraphStore, MockPipelineRunStore, MockSearchHistoryStore,
        MockUserStore, MockVectorStore, RelationalPorts,
    };
    use recall_core::User;
    use uuid::Uuid;

    use super::*;
    use crate::EngineBuilder;

    /// An engine whose stores fail the test if touched.
    fn untouchable_engine() -> Engine {
        let relational = RelationalPorts {
            users: Arc::new(MockUserStore::new()),
            datasets: Arc::new(MockDatasetStore::new()),
            data: Arc::new(MockDataStore::new()),
            runs: Arc::new(MockPipelineRunStore::new()),
            history: Arc::new(MockSearchHistoryStore::new()),
        };
        EngineBuilder::new(
            relational,
            Arc::new(MockGraphStore::new()),
            Arc::new(MockVectorStore::new()),
            Arc::new(MockEmbedder::new()),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn caller() -> User {
        User { id: Uuid::nil(), email: "someone@example.com".into(), tenant_id: None }
    }

    #[tokio::test]
    async fn invalid_requests_fail_before_any_store_call() {
        let engine = untouchable_engine();
        let err = engine.recall(&caller(), &RecallRequest::new("q").top_k(0)).await.err();
        assert!(matches!(err, Some(RecallError::QueryValidation(_))));
        let err = engine.recall(&caller(), &RecallRequest::new("\t\n")).await.err();
        assert!(matches!(err, Some(RecallError::QueryValidation(_))));
    }

    #[tokio::test]
    async fn an_unsupported_type_fails_before_datasets_are_read() {
        // MockDatasetStore has no expectations: reading datasets would panic.
        let engine = untouchable_engine();
        let request = RecallRequest::new("q").query_type(SearchType::GraphReport);
        let err = engine.recall(&caller(), &request).await.err();
        assert_eq!(err.map(|e| e.to_string()), Some("Unsupported search type: SearchType.GRAPH_REPORT".into()));
    }
}
