//! `recall()`: validation, the lanes of the request's scope in order, the
//! skill gate beside them, events and `--explain` (docs/recall.md). The graph
//! lane is in `graph_lane`, the per-dataset fan-out in `fan_out`.

use std::sync::Arc;
use std::time::Instant;

use recall_core::{
    CollectEvents, NoEvents, RecallError, RecallEvent, RecallEvents, RecallResponse, Result, SearchType, Stage, User,
};
use serde::Serialize;

use super::dataset_routing::DatasetRouting;
use super::request::RecallRequest;
use super::scope::{Lane, Plan};
use crate::Engine;

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
    pub(crate) fn time(&mut self, stage: &str, started: Instant) {
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
        let (plan, top_k) = request.validated()?;
        events.report(|| RecallEvent::Stage { stage: Stage::Retrieving });
        let mut run = Run { explain: RecallExplain::default(), events };
        // The skill gate runs alongside the lanes, which never wait on it; a
        // failing lane cancels it. Its entries come last.
        let gate = self.skill_gate_applies(request, plan.lanes.contains(&Lane::Graph));
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
        let graph_only = plan.lanes == [Lane::Graph];
        let mut merged: Vec<RecallResponse> = Vec::new();
        for lane in &plan.lanes {
            let started = Instant::now();
            match lane {
                Lane::Graph => {
                    if plan.short_circuit && !merged.is_empty() {
                        break;
                    }
                    run.explain.lanes.push(lane.name().into());
                    merged.extend(self.graph_lane(user, request, graph_only, run).await?);
                }
                Lane::Session | Lane::Trace | Lane::SessionContext => {
                    run.explain.lanes.push(lane.name().into());
                    merged.extend(self.session_lane(user, *lane, request, top_k).await?);
                }
                Lane::Tools => {
                    if request.tools_trigger == "on_empty" && !merged.is_empty() {
                        continue;
                    }
                    run.explain.lanes.push(lane.name().into());
                    merged.extend(self.tools_lane(request).await?);
                }
                // The code graph (Enola) is not part of Recall: CODE has no retriever.
                Lane::Code => return Err(RecallError::unsupported_search_type(SearchType::Code)),
            }
            run.time(&format!("lane:{}", lane.name()), started);
        }
        Ok(merged)
    }

    /// The session, trace and session-context lanes: nothing without a
    /// session id or without session memory.
    async fn session_lane(
        &self,
        user: &User,
        lane: Lane,
        request: &RecallRequest,
        top_k: Option<usize>,
    ) -> Result<Vec<RecallResponse>> {
        let (Some(sessions), Some(session_id)) = (self.sessions.as_ref(), request.options.session_id.as_deref()) else {
            return Ok(Vec::new());
        };
        let q = request.query_text.as_str();
        Ok(match lane {
            Lane::Session => {
                sessions.search_qa(user, session_id, q, top_k).await?.into_iter().map(RecallResponse::Session).collect()
            }
            Lane::Trace => sessions
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
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use recall_core::ports::{
        MockCredentialStore, MockDataStore, MockDatasetStore, MockEmbedder, MockGraphStore, MockPipelineRunStore,
        MockSearchHistoryStore, MockUserStore, MockVectorStore, RelationalPorts,
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
            credentials: Arc::new(MockCredentialStore::new()),
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
