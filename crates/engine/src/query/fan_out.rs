//! One search type over a list of datasets: each dataset searched
//! concurrently through the retriever's three steps, one payload per
//! dataset, "no data" told apart per dataset, and the history record
//! (docs/retrievers.md). Recall's graph lane and the legacy search share it.

use std::borrow::Cow;
use std::sync::Arc;

use futures::future::join_all;
use recall_core::model::collections::DOCUMENT_CHUNK_TEXT;
use recall_core::{
    Dataset, DatasetId, RecallError, RecallEvent, RecallEvents, Result, SearchRecord, SearchType, Stage, User,
};
use recall_retrievers::{DatasetPorts, LlmContext, RetrieverCall, RetrieverOptions};
use serde_json::Value;

use super::normalise::SearchResultPayload;
use super::request::RecallRequest;
use super::session_turn::{run_steps, Steps};
use crate::Engine;

/// The answer recorded for one dataset: the completion, else the context, as text.
fn history_value(p: &SearchResultPayload) -> String {
    if let Some(completion) = p.completion.as_ref().filter(|c| !c.is_empty()) {
        return match completion.as_slice() {
            [Value::String(s)] => s.clone(),
            items => Value::Array(items.to_vec()).to_string(),
        };
    }
    p.context.as_ref().map(LlmContext::as_text).unwrap_or_default()
}

/// The types whose answer carries the session's conversation and is
/// recorded as a turn: the single-answer completions. CODING_RULES opts out
/// (docs/sessions.md): its rules are not an answer to remember.
fn carries_conversation(t: SearchType) -> bool {
    matches!(
        t,
        SearchType::GraphCompletion
            | SearchType::GraphCompletionCot
            | SearchType::GraphCompletionContextExtension
            | SearchType::GraphSummaryCompletion
            | SearchType::RagCompletion
            | SearchType::HybridCompletion
            | SearchType::TripletCompletion
            | SearchType::Temporal
            | SearchType::AgenticCompletion
    )
}

impl Engine {
    /// One search type over the datasets: one payload per dataset. The
    /// caller has checked the type ([`Engine::check_search_type`]) once.
    pub(crate) async fn search_graph(
        &self,
        user: &User,
        datasets: &[Dataset],
        search_type: SearchType,
        request: &RecallRequest,
        options: &RetrieverOptions,
        events: &Arc<dyn RecallEvents>,
    ) -> Result<Vec<SearchResultPayload>> {
        // One dataset's answer streams: the first to start generating.
        let streaming = FirstStream::new(events.clone());
        let tasks = datasets.iter().map(|dataset| {
            let events: Arc<dyn RecallEvents> = Arc::new(streaming.for_dataset(dataset.id));
            self.search_dataset(user, dataset, search_type, request, options, events)
        });
        let outcomes = join_all(tasks).await;
        self.collect_payloads(datasets, outcomes, search_type, request.options.only_context).await
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

    /// The retriever-factory checks that need no I/O (docs/retrievers.md).
    pub(crate) fn check_search_type(&self, search_type: SearchType, request: &RecallRequest) -> Result<()> {
        if matches!(search_type, SearchType::Cypher | SearchType::NaturalLanguage) && !self.config.allow_cypher_query {
            return Err(RecallError::SearchTypeDisabled(search_type));
        }
        if search_type == SearchType::HybridCompletion {
            for (name, set) in [
                ("wide_search_top_k", request.options.wide_search_top_k.is_some()),
                ("triplet_distance_penalty", request.options.triplet_distance_penalty.is_some()),
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

    /// The stores, models and data version for one dataset: the stores as
    /// a search may see them (without what is quarantined, crate::visibility).
    /// Only a search that ranks the graph asks for the sketch cache
    /// (`Retriever::ranks_the_graph`), so one that never does never loads it.
    pub(crate) fn retrieval_context(
        &self,
        dataset: &Dataset,
        events: Arc<dyn RecallEvents>,
        ranks_the_graph: bool,
    ) -> DatasetPorts {
        let hidden = self.hidden(dataset.id);
        let data_version = self.data_version(dataset.id);
        // The cached sketch is the whole dataset's: only where nothing is hidden.
        let sketch = if ranks_the_graph && hidden.is_empty() {
            self.sketches.get(&self.graph, dataset.id, data_version)
        } else {
            None
        };
        let (graph, vectors) = crate::visibility::visible_ports(&self.graph, &self.vectors, hidden);
        DatasetPorts {
            dataset: dataset.clone(),
            graph,
            vectors,
            embedder: self.query_embedder.clone(),
            llm: self.llm.clone(),
            data_version,
            events,
            caller: None,
            sketch,
        }
    }

    /// The type that actually runs on this dataset: FEELING_LUCKY resolved
    /// by the LLM, HYBRID_COMPLETION deferred to GRAPH_COMPLETION where it
    /// cannot run (docs/recall.md, "The graph lane").
    async fn effective_type(
        &self,
        ctx: &DatasetPorts,
        requested: SearchType,
        request: &RecallRequest,
    ) -> Result<SearchType> {
        let mut t = requested;
        if t == SearchType::FeelingLucky {
            t = if ctx.graph.is_empty(ctx.dataset.id).await? {
                SearchType::HybridCompletion
            } else {
                self.select_search_type(ctx, &request.query_text).await
            };
            tracing::info!(search_type = %t, "FEELING_LUCKY chose a search type");
        }
        if t == SearchType::HybridCompletion {
            let defer = request.options.neighborhood_depth.is_some()
                || request.options.feedback_influence > 0.0
                || (!ctx.graph.is_empty(ctx.dataset.id).await?
                    && !ctx.vectors.has_collection(ctx.dataset.id, DOCUMENT_CHUNK_TEXT).await.unwrap_or(true));
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
    async fn select_search_type(&self, ctx: &DatasetPorts, query: &str) -> SearchType {
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

    /// Runs the three retriever steps on one dataset. A completion type
    /// with session memory on carries the session's conversation and
    /// records its turn (docs/sessions.md, "Completion through sessions").
    async fn search_dataset(
        &self,
        user: &User,
        dataset: &Dataset,
        requested: SearchType,
        request: &RecallRequest,
        options: &RetrieverOptions,
        events: Arc<dyn RecallEvents>,
    ) -> Result<SearchResultPayload> {
        self.check_embedding_width(dataset.id).await?;
        // FEELING_LUCKY picks its type with these ports: it may pick a graph type.
        let ranks_the_graph = requested == SearchType::FeelingLucky
            || self.retrievers.get(requested).map_or(true, |r| r.ranks_the_graph());
        let mut ctx = self.retrieval_context(dataset, events, ranks_the_graph);
        let search_type = self.effective_type(&ctx, requested, request).await?;
        if matches!(search_type, SearchType::Cypher | SearchType::NaturalLanguage) && !self.config.allow_cypher_query {
            return Err(RecallError::SearchTypeDisabled(search_type));
        }
        let retriever = self.retrievers.get(search_type)?;
        if search_type == SearchType::AgenticCompletion {
            ctx.caller = Some(self.agent_caller(user, dataset, request).await?);
        }
        let query = request.query_text.as_str();
        let outcome = match self.sessions.clone().filter(|_| carries_conversation(search_type)) {
            Some(sessions) => {
                // The types whose session turns merge a second, conversational retrieval.
                let two_lanes = requested != SearchType::FeelingLucky
                    && matches!(
                        search_type,
                        SearchType::GraphCompletion | SearchType::RagCompletion | SearchType::HybridCompletion
                    );
                self.session_steps(sessions, user, dataset, &ctx, retriever.as_ref(), request, options, two_lanes).await
            }
            None => run_steps(&ctx, retriever.as_ref(), query, options).await.map(|s| (s, Cow::Borrowed(options))),
        };
        // The runs of the skills an agentic loop loaded, failed loops included.
        if let Some(caller) = &ctx.caller {
            self.record_agent_runs(dataset, caller).await;
        }
        let (steps, options) = outcome?;
        let Steps { objects, context, completion, preview } = steps;
        let evidence = if options.search.include_references {
            retriever.get_context_evidence(&RetrieverCall::new(&ctx, query, &options), &objects).await?
        } else {
            Vec::new()
        };
        Ok(SearchResultPayload {
            dataset: Some(dataset.clone()),
            search_type,
            completion,
            context: Some(context),
            only_context: options.search.only_context,
            user_prompt: preview.as_ref().map(|p| p.user_prompt.clone()),
            system_prompt: preview.map(|p| p.system_prompt),
            evidence,
            structured: options.search.response_schema.is_some() && retriever.structured_output(),
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
                context: only_context.then(|| LlmContext::List(Vec::new())),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use recall_core::ports::RelationalPorts;
    use recall_core::SearchType;
    use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};

    use crate::{EngineBuilder, RecallRequest, RememberInput};

    /// Searches that never rank the graph leave the sketch cache alone, however
    /// often they run; a graph search loads it from its second ask.
    #[tokio::test]
    async fn only_searches_that_rank_the_graph_load_the_sketch() {
        let engine = EngineBuilder::new(
            RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
            Arc::new(MemoryGraphStore::new()),
            Arc::new(MemoryVectorStore::new()),
            Arc::new(HashingEmbedder::new(64).unwrap_or_else(|e| panic!("{e}"))),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let user = engine.relational().users.ensure_user("sketch@example.com").await.unwrap_or_else(|e| panic!("{e}"));
        let text = "Ada Lovelace worked with Charles Babbage on the Analytical Engine.";
        engine.remember(&user, "d", &[RememberInput::text(text)]).await.unwrap_or_else(|e| panic!("{e}"));
        let dataset = engine.access().dataset(&user, "d").await.unwrap_or_else(|e| panic!("{e}")).id;
        let ask = |t: SearchType| RecallRequest::new("Who worked with Ada Lovelace?").query_type(t).only_context(true);

        for search_type in
            [SearchType::Chunks, SearchType::ChunksLexical, SearchType::Summaries, SearchType::RagCompletion]
        {
            for _ in 0..3 {
                engine.recall(&user, &ask(search_type)).await.unwrap_or_else(|e| panic!("{search_type}: {e}"));
            }
        }
        engine.settle_caches().await;
        assert!(!engine.sketches.holds(dataset), "no search so far ranked the graph");

        for _ in 0..2 {
            engine.recall(&user, &ask(SearchType::GraphCompletion)).await.unwrap_or_else(|e| panic!("{e}"));
        }
        engine.settle_caches().await;
        assert!(engine.sketches.holds(dataset), "the second graph search loads the sketch");
    }
}
