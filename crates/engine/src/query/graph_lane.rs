//! The graph lane of recall (docs/recall.md, "The graph lane"): the search
//! type (pinned, routed or the no-LLM default), strict dataset resolution,
//! dataset routing with widening, the warm-up guard, the retry-once rule for
//! routed guesses, and the history record.

use std::time::Instant;

use recall_core::{
    Dataset, DatasetId, GraphBuildStatus, RecallError, RecallResponse, ResponseMarkerEntry, Result, SearchType, User,
};
use recall_retrievers::{LlmContext, RetrieverOptions};

use super::dataset_routing::{DatasetRouting, RoutingOutcome};
use super::normalise::{normalise_payload, SearchResultPayload};
use super::recall::Run;
use super::request::RecallRequest;
use crate::Engine;

/// Errors that reject a search type (retried once as HYBRID_COMPLETION after a routed guess).
fn is_type_rejection(e: &RecallError) -> bool {
    matches!(
        e,
        RecallError::UnsupportedSearchType(_)
            | RecallError::SearchTypeDisabled(_)
            | RecallError::SearchTypeNotSupported(_)
    )
}

impl Engine {
    /// The graph lane (docs/recall.md, "The graph lane"): type choice, strict dataset
    /// resolution, dataset routing, the warm-up guard, the search with the
    /// retry-once rule.
    pub(crate) async fn graph_lane(
        &self,
        user: &User,
        request: &RecallRequest,
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
        // The type is checked once, before any dataset is touched: a pinned
        // type that cannot run fails here; a routed guess that cannot is
        // retried below as HYBRID_COMPLETION.
        let rejected = match self.check_search_type(search_type, request) {
            Ok(()) => None,
            Err(e) if routed_guess => Some(e),
            Err(e) => return Err(e),
        };

        let started = Instant::now();
        // Before any vector read: another process's writes become visible.
        let readable = self.resolve_datasets(user, request).await?;
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

        if self.config.warmup_shortcircuit && !request.options.only_context {
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
        let mut options = request.retriever_options();
        self.load_prompt_files(&mut options).await?;
        let started = Instant::now();
        let first = match rejected {
            Some(e) => Err(e),
            None => self.search_routed(user, &routing, search_type, request, &options, run).await,
        };
        let (final_type, payloads) = match first {
            Err(e) if routed_guess && is_type_rejection(&e) => {
                tracing::warn!(search_type = %search_type, error = %e, "routed type rejected; retrying once as HYBRID_COMPLETION");
                let retry = SearchType::HybridCompletion;
                run.explain.retried_as = Some(retry.to_string());
                self.check_search_type(retry, request)?;
                (retry, self.search_routed(user, &routing, retry, request, &options, run).await?)
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
                self.check_search_type(retry, request)?;
                (retry, self.search_routed(user, &routing, retry, request, &options, run).await?)
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
        self.config.dataset_routing.enabled && !request.names_datasets() && readable.len() > 1
    }

    /// Searches the routed selection; when it retrieves nothing (judged on the
    /// retrieved context, not the answer), searches the remaining datasets.
    async fn search_routed(
        &self,
        user: &User,
        routing: &DatasetRouting,
        search_type: SearchType,
        request: &RecallRequest,
        options: &RetrieverOptions,
        run: &mut Run,
    ) -> Result<Vec<SearchResultPayload>> {
        run.explain.datasets_searched = routing.selected.iter().map(|d| d.name.clone()).collect();
        let first = self.search_graph(user, &routing.selected, search_type, request, options, &run.events).await;
        if routing.rest.is_empty() {
            return first;
        }
        let nothing = match &first {
            Err(RecallError::NoData(_)) => true,
            Ok(payloads) => payloads.iter().all(|p| p.context.as_ref().is_none_or(LlmContext::is_empty)),
            Err(_) => false,
        };
        if !nothing {
            return first;
        }
        let names: Vec<&str> = routing.rest.iter().map(|d| d.name.as_str()).collect();
        tracing::info!(remaining = ?names, "the routed datasets retrieved nothing; searching the remaining datasets");
        run.explain.widened = true;
        run.explain.datasets_searched.extend(names.iter().map(|n| n.to_string()));
        self.search_graph(user, &routing.rest, search_type, request, options, &run.events).await
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
}
