//! Session memory (docs/sessions.md): conversations kept per (user, session)
//! on a [`SessionStore`], read back by the `session`, `trace` and
//! `session_context` lanes, carried into completions as history and
//! guidance, and rated through feedback. [`Sessions`] is the engine's
//! [`SessionMemory`].

pub mod agent;
pub mod analysis;
pub mod guidance;
pub mod history;
pub mod keyword;
pub mod validation;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use recall_core::ports::{ChatRequest, Embedder, LlmClient};
use recall_core::session::{
    record_kind, CompletedTurn, ContextRecord, Conversation, PendingRating, QaEntry, QaVector, SessionEntry,
    SessionInfo, SessionKey, SessionMemory, SessionStore, StoredEntry, TraceStep, TurnAnalysis, TurnMode, WriteStamp,
};
use recall_core::{
    now_millis, DatasetId, EpochMillis, RecallError, ResponseAgentTraceEntry, ResponseQAEntry,
    ResponseSessionContextEntry, Result, User,
};
use serde_json::Value;
use uuid::Uuid;

use guidance::{GuidanceEntry, Profile};

/// The longest question, answer or context a QA entry keeps, in characters.
pub const MAX_QA_FIELD_CHARS: usize = 65_536;
/// The longest text field of a trace step, in characters.
pub const MAX_TRACE_FIELD_CHARS: usize = 8_192;
/// The longest serialised parameters or return value of a trace step.
pub const MAX_TRACE_JSON_CHARS: usize = 16_384;

/// `memify_metadata` keys of the feedback bookkeeping.
const APPLIED: &str = "feedback_weights_applied";
const ATTEMPTS: &str = "feedback_weights_applied_attempts";
/// Where a turn analysis leaves its rating of the previous answer.
pub const PREVIOUS_ANSWER_RATING: &str = "previous_answer_rating";
/// Attempts after which a rating that cannot be applied is given up.
const MAX_RATING_ATTEMPTS: u32 = 3;

/// How session memory behaves (docs/sessions.md, "Configuration").
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// How long a session lives after its last write; `None`: forever.
    pub ttl: Option<Duration>,
    /// How many recent turns a completion carries as history.
    pub history_last_n: usize,
    /// The least time between two sweeps of expired rows.
    pub purge_interval: Duration,
    /// `AUTO_FEEDBACK`: completions analyse each user message (an LLM call)
    /// for feedback, guidance and a rating of the previous answer.
    pub auto_feedback: bool,
    /// `SESSION_SEARCH_MODE`: the analysis beside retrieval, or before it.
    pub turn_mode: TurnMode,
}

impl Default for SessionConfig {
    /// One year of inactivity, ten turns of history, a sweep at most every 15 minutes.
    fn default() -> Self {
        Self {
            ttl: Some(Duration::from_secs(365 * 24 * 3600)),
            history_last_n: 10,
            purge_interval: Duration::from_secs(900),
            auto_feedback: true,
            turn_mode: TurnMode::Concurrent,
        }
    }
}

/// ISO-8601 UTC with an offset and microseconds, as entries are stamped.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, false)
}

/// The session a completion over `dataset` records in when none is named.
pub fn default_session_id(dataset: Option<DatasetId>) -> String {
    match dataset {
        Some(d) => format!("default_session_{d}"),
        None => "default_session".into(),
    }
}

/// The rendered history block of a completion: each turn with its time,
/// question and answer, oldest first; empty without turns.
pub fn render_history(turns: &[QaEntry]) -> String {
    if turns.is_empty() {
        return String::new();
    }
    let blocks: Vec<String> =
        turns.iter().map(|t| format!("[{}]\nQUESTION: {}\nANSWER: {}", t.time, t.question, t.answer)).collect();
    format!("Previous conversation:\n\n{}", blocks.join("\n\n"))
}

/// Where a guidance entry came from, linked on the entry.
#[derive(Clone, Copy)]
enum Source<'a> {
    Feedback(&'a str),
    Trace(&'a str),
    None,
}

/// Entries of every session's keyword index kept in memory at most.
const INDEXED_ENTRIES: u64 = 500_000;

/// A session's entries as read at one version, indexed by word.
struct Indexed<T> {
    version: i64,
    /// Past this time an entry may have expired: read again.
    trusted_until: EpochMillis,
    index: keyword::KeywordIndex<T>,
}

type IndexCache<T> = moka::future::Cache<SessionKey, Arc<Indexed<T>>>;

fn index_cache<T: Send + Sync + 'static>() -> IndexCache<T> {
    moka::future::Cache::builder()
        .weigher(|_: &SessionKey, v: &Arc<Indexed<T>>| u32::try_from(v.index.len() + 1).unwrap_or(u32::MAX))
        .max_capacity(INDEXED_ENTRIES)
        .build()
}

/// Session memory over a store.
pub struct Sessions {
    store: Arc<dyn SessionStore>,
    config: SessionConfig,
    last_purge: Mutex<EpochMillis>,
    /// The keyword lanes' indexes, kept while the session's version holds
    /// (any write, by this process or another, changes it).
    qa_indexes: IndexCache<QaEntry>,
    trace_indexes: IndexCache<TraceStep>,
    /// Turn analysis needs one.
    llm: Option<Arc<dyn LlmClient>>,
    /// QA turns are embedded with it, for recalling older turns.
    embedder: OnceLock<Arc<dyn Embedder>>,
    qa_vectors: history::VectorCache,
}

impl Sessions {
    pub fn new(store: Arc<dyn SessionStore>, config: SessionConfig) -> Self {
        Self {
            store,
            config,
            last_purge: Mutex::new(0),
            qa_indexes: index_cache(),
            trace_indexes: index_cache(),
            llm: None,
            embedder: OnceLock::new(),
            qa_vectors: history::vector_cache(),
        }
    }

    /// Whether messages and traces are read by an LLM (AUTO_FEEDBACK and an LLM).
    fn learns_with_llm(&self) -> bool {
        self.config.auto_feedback && self.llm.is_some()
    }

    /// The embedder QA turns are embedded with (an engine attaches its own).
    pub fn with_embedder(self, embedder: Arc<dyn Embedder>) -> Self {
        self.attach_embedder(embedder);
        self
    }

    /// A turn's embedding; `None` (logged) without an embedder or when
    /// embedding fails — the turn is stored all the same.
    async fn embed_text(&self, text: String) -> Option<QaVector> {
        let embedder = self.embedder.get()?;
        if text.is_empty() {
            return None;
        }
        match embedder.embed(&[text]).await {
            Ok(mut v) if v.len() == 1 => Some(QaVector { model: embedder.model(), vector: v.remove(0) }),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "a session turn could not be embedded; it is stored without a vector");
                None
            }
        }
    }

    /// Stores a QA entry with its embedding when one can be made.
    async fn put_embedded_qa(&self, key: &SessionKey, dataset: Option<DatasetId>, entry: &QaEntry) -> Result<()> {
        let vector = self.embed_text(history::qa_vector_text(&entry.question, &entry.answer)).await;
        self.write_qa(key, dataset, entry, vector.as_ref()).await
    }

    /// Older turns like `query`, beyond the `recent` ones carried anyway;
    /// none when the session has no older turns, without an embedder, or
    /// when the recall fails (logged).
    async fn recall_older(&self, key: &SessionKey, query: &str, recent: &[QaEntry]) -> Vec<QaEntry> {
        if recent.len() < self.config.history_last_n.max(1) {
            return Vec::new();
        }
        if query.trim().is_empty() {
            return Vec::new();
        }
        // The text retrieval embeds, so the engine's cache embeds it once.
        let Some(query) = self.embed_text(query.to_string()).await else { return Vec::new() };
        let skip: HashSet<String> = recent.iter().map(|t| t.qa_id.clone()).collect();
        let k = history::VECTOR_RECALL_TOP_K;
        match history::similar_turns(&self.store, &self.qa_vectors, key, &query, &skip, k, now_millis()).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "older turns could not be recalled; the recent ones are carried");
                Vec::new()
            }
        }
    }

    /// The LLM turn analysis uses (none: no turn analysis).
    pub fn with_llm(mut self, llm: Option<Arc<dyn LlmClient>>) -> Self {
        self.llm = llm;
        self
    }

    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The session's entries indexed by word: the kept index while the
    /// session's version is the one it was built at, else read and built
    /// anew. Once the session's last write is 95 % of the TTL old its rows
    /// may start to expire, so the index is read again from then on.
    async fn indexed<T, F, Fut>(
        &self,
        cache: &IndexCache<T>,
        key: &SessionKey,
        load: F,
        text: fn(&T) -> String,
    ) -> Result<Arc<Indexed<T>>>
    where
        T: Clone + Send + Sync + 'static,
        F: FnOnce(EpochMillis) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>>>,
    {
        let now = now_millis();
        let Some(version) = self.store.session_version(key, now).await? else {
            cache.invalidate(key).await;
            return Ok(Arc::new(Indexed {
                version: -1,
                trusted_until: 0,
                index: keyword::KeywordIndex::build(Vec::new(), text),
            }));
        };
        if let Some(kept) = cache.get(key).await.filter(|k| k.version == version.version && now < k.trusted_until) {
            return Ok(kept);
        }
        let ttl_ms = self.stamp().ttl_ms;
        let trusted_until = ttl_ms.map_or(i64::MAX, |ttl| version.updated_at.saturating_add(ttl - ttl / 20));
        let built = Arc::new(Indexed {
            version: version.version,
            trusted_until,
            index: keyword::KeywordIndex::build(load(now).await?, text),
        });
        cache.insert(key.clone(), built.clone()).await;
        Ok(built)
    }

    fn key(user: &User, session_id: &str) -> Result<SessionKey> {
        validation::session_id(session_id)?;
        Ok(SessionKey::new(user.id, session_id))
    }

    fn stamp(&self) -> WriteStamp {
        let ttl_ms = self.config.ttl.filter(|t| !t.is_zero()).map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        WriteStamp { now: now_millis(), ttl_ms }
    }

    /// After a write: sweeps expired rows, at most once per purge interval.
    async fn maybe_purge(&self, now: EpochMillis) {
        let interval = i64::try_from(self.config.purge_interval.as_millis()).unwrap_or(i64::MAX);
        let due = match self.last_purge.lock() {
            Ok(mut last) if now.saturating_sub(*last) >= interval => {
                *last = now;
                true
            }
            _ => false,
        };
        if due {
            match self.store.purge_expired(now).await {
                Ok(n) if n > 0 => tracing::info!(rows = n, "expired session rows purged"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "the sweep of expired session rows failed"),
            }
        }
    }

    /// Stores a QA entry (keeping its stored vector).
    async fn put_qa(&self, key: &SessionKey, dataset: Option<DatasetId>, entry: &QaEntry) -> Result<()> {
        self.write_qa(key, dataset, entry, None).await
    }

    /// Stores a QA entry, with a new vector when given, then sweeps when due.
    async fn write_qa(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        vector: Option<&QaVector>,
    ) -> Result<()> {
        let at = self.stamp();
        match vector {
            Some(vector) => self.store.put_qa_embedded(key, dataset, entry, vector, at).await?,
            None => self.store.put_qa(key, dataset, entry, at).await?,
        }
        self.maybe_purge(at.now).await;
        Ok(())
    }

    async fn guidance_entries(&self, key: &SessionKey) -> Result<Vec<GuidanceEntry>> {
        let records = self.store.records(key, record_kind::CONTEXT, now_millis()).await?;
        Ok(records
            .into_iter()
            .filter_map(|r| match serde_json::from_value::<GuidanceEntry>(r.payload) {
                Ok(e) => Some(e),
                Err(e) => {
                    tracing::warn!(id = %r.id, error = %e, "an unreadable guidance entry is skipped");
                    None
                }
            })
            .collect())
    }

    /// Adds a guidance entry (or links a new source to the same entry when
    /// one with the same profile, section and content exists).
    pub async fn add_guidance(
        &self,
        user: &User,
        session_id: &str,
        profile: Profile,
        section: &str,
        content: &str,
        confidence: f64,
    ) -> Result<GuidanceEntry> {
        let key = Self::key(user, session_id)?;
        let entry = GuidanceEntry::new(profile, section, content, confidence, Utc::now())?;
        self.upsert_guidance(&key, entry, Source::None).await
    }

    /// Stores a new entry, or (same profile, section and normalised
    /// content) links the source to the existing one.
    async fn upsert_guidance(
        &self,
        key: &SessionKey,
        entry: GuidanceEntry,
        source: Source<'_>,
    ) -> Result<GuidanceEntry> {
        let existing = self.guidance_entries(key).await?.into_iter().find(|e| {
            e.context_profile == entry.context_profile
                && e.section == entry.section
                && e.normalized_content == entry.normalized_content
        });
        let mut entry = existing.unwrap_or(entry);
        let (ids, id) = match source {
            Source::Feedback(id) => (&mut entry.source_feedback_ids, id),
            Source::Trace(id) => (&mut entry.source_trace_ids, id),
            Source::None => return self.put_guidance(key, &entry).await.map(|()| entry),
        };
        if !ids.iter().any(|s| s == id) {
            ids.push(id.to_string());
        }
        self.put_guidance(key, &entry).await?;
        Ok(entry)
    }

    /// Stores the candidates that pass the gate (confidence, length,
    /// section) as guidance of `profile`; how many were stored or linked.
    async fn apply_candidates(
        &self,
        key: &SessionKey,
        profile: Profile,
        candidates: &[recall_core::session::GuidanceCandidate],
        source: Source<'_>,
    ) -> Result<usize> {
        let mut applied = 0;
        for candidate in candidates.iter().filter(|c| analysis::acceptable(c)) {
            match GuidanceEntry::new(profile, &candidate.section, &candidate.content, candidate.confidence, Utc::now())
            {
                Ok(entry) => {
                    self.upsert_guidance(key, entry, source).await?;
                    applied += 1;
                }
                Err(e) => tracing::info!(error = %e, "a guidance candidate was not kept"),
            }
        }
        Ok(applied)
    }

    /// Pins an entry's node set on the session (names non-blank, sorted,
    /// de-duplicated). A session keeps the first set pinned:
    /// `SessionNodeSetConflictError` (409) for another one.
    async fn pin_node_set(&self, key: &SessionKey, node_set: Option<Vec<String>>) -> Result<()> {
        let Some(mut names) = node_set else { return Ok(()) };
        if names.iter().any(|n| n.trim().is_empty()) {
            return Err(validation::parameter_error("node_set names must be non-empty strings."));
        }
        names.sort();
        names.dedup();
        let pinned = self.store.pin_node_set(key, &names, self.stamp()).await?;
        if pinned != names {
            return Err(RecallError::Conflict {
                name: "SessionNodeSetConflictError",
                message: format!(
                    "A session's node_set cannot change once pinned (pinned: {pinned:?}, requested: {names:?}); \
                     start a new session"
                ),
            });
        }
        Ok(())
    }

    /// After a trace step is stored (with auto-feedback on): an errored
    /// step's lesson, then an extraction when enough new steps gathered.
    /// Fails open: the step is stored whatever happens here.
    async fn learn_from_trace(&self, key: &SessionKey, step: &TraceStep) {
        if !self.config.auto_feedback {
            return;
        }
        if let Some(lesson) = agent::live_candidate(step) {
            if let Err(e) = self.apply_candidates(key, Profile::Agent, &[lesson], Source::Trace(&step.trace_id)).await {
                tracing::warn!(error = %e, "a failure lesson could not be stored");
            }
        }
        if let Err(e) = self.extract_pending(key, agent::EXTRACTION_INTERVAL).await {
            tracing::warn!(error = %e, "agent-context extraction failed; the steps are read again next time");
        }
    }

    /// Reads the steps not read yet (when at least `min_new`) with the LLM
    /// and stores the lessons it proposes; how many. The mark of the last
    /// step read moves on only after a successful extraction.
    async fn extract_pending(&self, key: &SessionKey, min_new: usize) -> Result<usize> {
        let Some(llm) = &self.llm else { return Ok(0) };
        let now = now_millis();
        // The newest steps only: however long the session, a write reads a bounded window.
        let steps = self.store.trace_steps(key, Some(agent::BATCH_TRACE_LIMIT), now).await?;
        let state = self.store.records(key, agent::STATE_KIND, now).await?;
        let last_read = state
            .iter()
            .find(|r| r.id == agent::STATE_ID)
            .and_then(|r| r.payload.get("last_trace_id"))
            .and_then(Value::as_str);
        let Some(window) = agent::window(&steps, last_read, min_new) else { return Ok(0) };
        let window = &steps[steps.len() - window..];
        let existing = self.guidance_entries(key).await?;
        let request = ChatRequest::new(agent::SYSTEM_PROMPT, agent::batch_input(window, &existing));
        let answer = llm.structured(&request, agent::SCHEMA_NAME, &agent::schema()).await?;
        let applied = self.apply_candidates(key, Profile::Agent, &agent::parse(&answer), Source::None).await?;
        let state = ContextRecord {
            id: agent::STATE_ID.into(),
            kind: agent::STATE_KIND.into(),
            payload: serde_json::json!({
                "last_trace_id": steps.last().map(|s| s.trace_id.clone()),
                "updated_at": iso(Utc::now()),
            }),
        };
        self.store.put_record(key, &state, self.stamp()).await?;
        Ok(applied)
    }

    /// The session's last turn, and the guidance served to it.
    async fn previous_turn(&self, key: &SessionKey) -> Result<(Option<QaEntry>, Vec<GuidanceEntry>)> {
        let previous = self.store.qa_entries(key, Some(1), now_millis()).await?.pop();
        let served_ids = previous.as_ref().and_then(|p| p.used_session_context_ids.clone()).unwrap_or_default();
        let served = if served_ids.is_empty() {
            Vec::new()
        } else {
            self.guidance_entries(key).await?.into_iter().filter(|e| served_ids.contains(&e.id)).collect()
        };
        Ok((previous, served))
    }

    async fn put_guidance(&self, key: &SessionKey, entry: &GuidanceEntry) -> Result<()> {
        let payload = serde_json::to_value(entry).map_err(RecallError::backend)?;
        let record = ContextRecord { id: entry.id.clone(), kind: record_kind::CONTEXT.into(), payload };
        self.store.put_record(key, &record, self.stamp()).await
    }

    /// The guidance block of a session for a query: the entries served and the text.
    pub async fn guidance_block(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        profile: Profile,
    ) -> Result<(Vec<GuidanceEntry>, String)> {
        let key = Self::key(user, session_id)?;
        let entries = self.guidance_entries(&key).await?;
        let chosen = guidance::select(&entries, profile, query);
        let text = guidance::render(&chosen, profile);
        Ok((chosen.into_iter().cloned().collect(), text))
    }

    fn trace_step(entry: SessionEntry) -> Option<TraceStep> {
        let SessionEntry::Trace {
            origin_function,
            status,
            memory_query,
            memory_context,
            method_params,
            method_return_value,
            error_message,
            session_feedback,
            ..
        } = entry
        else {
            return None;
        };
        let text = |s: &str| validation::truncate(s.trim(), MAX_TRACE_FIELD_CHARS);
        let bounded = |v: Option<Value>| {
            v.map(|v| {
                let serialised = v.to_string();
                if serialised.chars().count() > MAX_TRACE_JSON_CHARS {
                    Value::String(validation::truncate(&serialised, MAX_TRACE_JSON_CHARS))
                } else {
                    v
                }
            })
        };
        let session_feedback = session_feedback.map(|s| text(&s)).or_else(|| {
            Some(match status.as_str() {
                "error" => format!("{} failed.", origin_function.trim()),
                _ => format!("{} succeeded.", origin_function.trim()),
            })
        });
        Some(TraceStep {
            trace_id: Uuid::new_v4().to_string(),
            origin_function: text(&origin_function),
            status: status.trim().to_string(),
            memory_query: text(&memory_query),
            memory_context: text(&memory_context),
            method_params: bounded(method_params),
            method_return_value: bounded(method_return_value),
            error_message: error_message.map(|s| text(&s)),
            session_feedback,
        })
    }
}

fn qa_entry(question: &str, context: &str, answer: &str, qa_id: Option<String>) -> QaEntry {
    QaEntry {
        time: iso(Utc::now()),
        question: validation::truncate(question, MAX_QA_FIELD_CHARS),
        context: validation::truncate(context, MAX_QA_FIELD_CHARS),
        answer: validation::truncate(answer, MAX_QA_FIELD_CHARS),
        qa_id: qa_id.unwrap_or_else(|| Uuid::new_v4().to_string()),
        feedback_text: None,
        feedback_score: None,
        used_graph_element_ids: None,
        memify_metadata: None,
        used_session_context_ids: None,
    }
}

/// `used_graph_element_ids` as given: only `node_ids` and `edge_ids`, each a
/// list of strings; an empty object is none.
fn used_elements(value: Value) -> Result<Option<Value>> {
    let Value::Object(map) = value else {
        return Err(validation::parameter_error("used_graph_element_ids must be an object."));
    };
    let mut kept = serde_json::Map::new();
    for (k, v) in map {
        if !matches!(k.as_str(), "node_ids" | "edge_ids") {
            return Err(validation::parameter_error(format!(
                "used_graph_element_ids takes node_ids and edge_ids only, not {k:?}."
            )));
        }
        let ok = v.as_array().is_some_and(|ids| ids.iter().all(Value::is_string));
        if !ok {
            return Err(validation::parameter_error(format!("used_graph_element_ids.{k} must be a list of strings.")));
        }
        if v.as_array().is_some_and(|ids| !ids.is_empty()) {
            kept.insert(k, v);
        }
    }
    Ok((!kept.is_empty()).then_some(Value::Object(kept)))
}

/// A QA entry's `memify_metadata` as a map to edit (empty when it has none);
/// put it back with `Some(Value::Object(meta))`.
fn take_metadata(entry: &mut QaEntry) -> serde_json::Map<String, Value> {
    match entry.memify_metadata.take() {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// The graph element ids a QA entry's answer used.
fn used_ids(entry: &QaEntry) -> Vec<String> {
    let Some(Value::Object(used)) = &entry.used_graph_element_ids else { return Vec::new() };
    ["node_ids", "edge_ids"]
        .iter()
        .filter_map(|k| used.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[async_trait]
impl SessionMemory for Sessions {
    async fn search_qa(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        top_k: Option<usize>,
    ) -> Result<Vec<ResponseQAEntry>> {
        let key = Self::key(user, session_id)?;
        let store = &self.store;
        let load = |now| store.qa_entries(&key, None, now);
        Ok(self.indexed(&self.qa_indexes, &key, load, keyword::qa_text).await?.index.search(query, top_k))
    }

    async fn search_traces(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        top_k: Option<usize>,
    ) -> Result<Vec<ResponseAgentTraceEntry>> {
        let key = Self::key(user, session_id)?;
        let store = &self.store;
        let load = |now| store.trace_steps(&key, None, now);
        Ok(self.indexed(&self.trace_indexes, &key, load, keyword::trace_text).await?.index.search(query, top_k))
    }

    async fn session_context(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        profile: &str,
    ) -> Result<Vec<ResponseSessionContextEntry>> {
        let profile = Profile::parse(profile)?;
        let (_, text) = self.guidance_block(user, session_id, query, profile).await?;
        Ok(if text.is_empty() {
            Vec::new()
        } else {
            vec![ResponseSessionContextEntry { content: text, context_profile: profile.as_str().into() }]
        })
    }

    fn turn_mode(&self) -> Option<TurnMode> {
        self.learns_with_llm().then_some(self.config.turn_mode)
    }

    async fn analyze_turn(&self, user: &User, session_id: &str, message: &str) -> Result<(TurnAnalysis, bool)> {
        let key = Self::key(user, session_id)?;
        let (previous, served) = self.previous_turn(&key).await?;
        let has_previous = previous.is_some();
        let Some(llm) = self.llm.as_ref().filter(|_| self.config.auto_feedback && !message.trim().is_empty()) else {
            return Ok((TurnAnalysis::default(), has_previous));
        };
        let request = ChatRequest::new(analysis::SYSTEM_PROMPT, analysis::input(message, previous.as_ref(), &served));
        let served_ids: Vec<String> = served.iter().map(|e| e.id.clone()).collect();
        let analysis = match llm.structured(&request, analysis::SCHEMA_NAME, &analysis::schema()).await {
            Ok(value) => analysis::parse(&value, &served_ids),
            Err(e) => {
                tracing::warn!(error = %e, "the turn analysis failed; the turn is answered as asked");
                TurnAnalysis::default()
            }
        };
        Ok((analysis, has_previous))
    }

    async fn apply_turn(&self, user: &User, session_id: &str, message: &str, analysis: &TurnAnalysis) -> Result<()> {
        let key = Self::key(user, session_id)?;
        let (previous, served) = self.previous_turn(&key).await?;
        let rating = analysis.previous_answer_rating.filter(|_| previous.is_some());
        let candidates = &analysis.candidate_context_updates;
        let ratings = &analysis.served_context_ratings;
        if candidates.is_empty() && ratings.is_empty() && rating.is_none() {
            return Ok(());
        }
        let feedback_id = Uuid::new_v4().to_string();
        let record = serde_json::json!({
            "id": feedback_id, "created_at": iso(Utc::now()), "raw_text": message,
            "referenced_qa_ids": previous.iter().map(|p| p.qa_id.clone()).collect::<Vec<_>>(),
            "referenced_qa_rating": rating,
            "influencing_context_ids": served.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
            "candidate_context_entries": candidates,
        });
        let record = ContextRecord { id: feedback_id.clone(), kind: record_kind::FEEDBACK.into(), payload: record };
        self.store.put_record(&key, &record, self.stamp()).await?;
        self.apply_candidates(&key, Profile::Qa, candidates, Source::Feedback(&feedback_id)).await?;
        for r in ratings {
            if let Some(mut entry) = served.iter().find(|e| e.id == r.entry_id).cloned() {
                match r.rating.as_str() {
                    "helpful" => entry.helpful_count += 1,
                    _ => entry.harmful_count += 1,
                }
                self.put_guidance(&key, &entry).await?;
            }
        }
        if let (Some(rating), Some(mut previous)) = (rating, previous) {
            // An implicit rating of the previous answer, for the next improve.
            let mut meta = take_metadata(&mut previous);
            meta.insert(PREVIOUS_ANSWER_RATING.into(), Value::from(rating));
            meta.insert(APPLIED.into(), Value::Bool(false));
            previous.memify_metadata = Some(Value::Object(meta));
            self.put_qa(&key, None, &previous).await?;
        }
        Ok(())
    }

    fn resolve_session_id(&self, session_id: Option<&str>, dataset: Option<DatasetId>) -> String {
        session_id.map(str::to_string).unwrap_or_else(|| default_session_id(dataset))
    }

    async fn extract_agent_context(&self, user: &User, session_id: &str) -> Result<Option<usize>> {
        if !self.learns_with_llm() {
            return Ok(None);
        }
        self.extract_pending(&Self::key(user, session_id)?, 1).await.map(Some)
    }

    fn attach_embedder(&self, embedder: Arc<dyn Embedder>) {
        // The first attached stays: sessions shared by two engines embed alike.
        let _ = self.embedder.set(embedder);
    }

    async fn conversation(&self, user: &User, session_id: &str, query: &str, preview: bool) -> Result<Conversation> {
        let key = Self::key(user, session_id)?;
        let last_n = self.config.history_last_n.max(1);
        let recent = self.store.qa_entries(&key, Some(last_n), now_millis()).await?;
        let recalled = self.recall_older(&key, query, &recent).await;
        let last = &recent[recent.len().saturating_sub(history::CONVERSATIONAL_TURNS)..];
        let retrieval_query = Some(history::conversational_query(query, last)).filter(|q| {
            self.config.turn_mode == TurnMode::Concurrent
                && !last.is_empty()
                && *q != history::conversational_query(query, &[])
        });
        let turns = history::merge_history(recent, recalled);
        let (served, guidance) = self.guidance_block(user, session_id, query, Profile::Qa).await?;
        if !preview {
            // Serving stamps each entry (recency breaks ties in later rankings).
            let now = iso(Utc::now());
            for mut entry in served.clone() {
                entry.last_served_at = Some(now.clone());
                self.put_guidance(&key, &entry).await?;
            }
        }
        Ok(Conversation {
            session_id: session_id.to_string(),
            history: render_history(&turns),
            guidance,
            served_context_ids: served.into_iter().map(|e| e.id).collect(),
            retrieval_query,
        })
    }

    async fn record_turn(
        &self,
        user: &User,
        session_id: &str,
        dataset: Option<DatasetId>,
        turn: CompletedTurn,
    ) -> Result<QaEntry> {
        let key = Self::key(user, session_id)?;
        let mut entry = qa_entry(&turn.question, "", &turn.answer, None);
        entry.used_graph_element_ids = turn.used_graph_element_ids;
        entry.used_session_context_ids = Some(turn.used_session_context_ids).filter(|ids| !ids.is_empty());
        self.put_embedded_qa(&key, dataset, &entry).await?;
        Ok(entry)
    }

    async fn remember_entry(
        &self,
        user: &User,
        session_id: &str,
        dataset: Option<DatasetId>,
        entry: SessionEntry,
    ) -> Result<StoredEntry> {
        let key = Self::key(user, session_id)?;
        let stored = |entry_type: &str, id: String| StoredEntry {
            session_id: session_id.to_string(),
            entry_type: entry_type.into(),
            id,
        };
        match entry {
            SessionEntry::Qa {
                question,
                answer,
                context,
                qa_id,
                feedback_text,
                feedback_score,
                used_graph_element_ids,
                node_set,
            } => {
                if let Some(id) = &qa_id {
                    validation::qa_id(id)?;
                }
                validation::feedback_score(feedback_score)?;
                if question.trim().is_empty() && answer.trim().is_empty() {
                    return Err(validation::parameter_error("A qa entry needs a question or an answer."));
                }
                self.pin_node_set(&key, node_set).await?;
                let mut entry = qa_entry(&question, &context, &answer, qa_id);
                entry.feedback_text = feedback_text.map(|t| validation::truncate(&t, MAX_QA_FIELD_CHARS));
                entry.feedback_score = feedback_score;
                entry.used_graph_element_ids = used_graph_element_ids.map(used_elements).transpose()?.flatten();
                self.put_embedded_qa(&key, dataset, &entry).await?;
                Ok(stored("qa", entry.qa_id))
            }
            SessionEntry::Feedback { qa_id, feedback_text, feedback_score } => {
                if feedback_text.is_none() && feedback_score.is_none() {
                    return Err(validation::parameter_error("A feedback entry needs feedback_text or feedback_score."));
                }
                if !self.add_feedback(user, session_id, &qa_id, feedback_text, feedback_score).await? {
                    return Err(RecallError::NotFound(format!(
                        "QA entry '{qa_id}' was not found in session '{session_id}'."
                    )));
                }
                Ok(stored("feedback", qa_id))
            }
            trace @ SessionEntry::Trace { .. } => {
                let origin_blank =
                    matches!(&trace, SessionEntry::Trace { origin_function, .. } if origin_function.trim().is_empty());
                if origin_blank {
                    return Err(validation::parameter_error("A trace entry needs a non-empty origin_function."));
                }
                if let SessionEntry::Trace { status, node_set, .. } = &trace {
                    if !matches!(status.as_str(), "success" | "error") {
                        return Err(validation::parameter_error(format!(
                            "A trace entry's status must be 'success' or 'error', got {status:?}."
                        )));
                    }
                    self.pin_node_set(&key, node_set.clone()).await?;
                }
                let step = Self::trace_step(trace).ok_or_else(|| validation::parameter_error("not a trace entry"))?;
                let at = self.stamp();
                self.store.append_trace(&key, &step, at).await?;
                self.maybe_purge(at.now).await;
                self.learn_from_trace(&key, &step).await;
                Ok(stored("trace", step.trace_id))
            }
        }
    }

    async fn list_sessions(&self, user: &User) -> Result<Vec<SessionInfo>> {
        self.store.sessions(user.id, now_millis()).await
    }

    async fn qa_entries(&self, user: &User, session_id: &str, last_n: Option<usize>) -> Result<Vec<QaEntry>> {
        validation::last_n(last_n)?;
        self.store.qa_entries(&Self::key(user, session_id)?, last_n, now_millis()).await
    }

    async fn trace_steps(&self, user: &User, session_id: &str, last_n: Option<usize>) -> Result<Vec<TraceStep>> {
        validation::last_n(last_n)?;
        self.store.trace_steps(&Self::key(user, session_id)?, last_n, now_millis()).await
    }

    async fn add_feedback(
        &self,
        user: &User,
        session_id: &str,
        qa_id: &str,
        text: Option<String>,
        score: Option<i64>,
    ) -> Result<bool> {
        let key = Self::key(user, session_id)?;
        validation::qa_id(qa_id)?;
        validation::feedback_score(score)?;
        let Some(mut entry) = self.store.qa_entry(&key, qa_id, now_millis()).await? else { return Ok(false) };
        if let Some(text) = text {
            entry.feedback_text = Some(validation::truncate(&text, MAX_QA_FIELD_CHARS));
        }
        if score.is_some() {
            entry.feedback_score = score;
        }
        // A new rating is applied to the graph again by the next improve.
        let mut meta = take_metadata(&mut entry);
        meta.insert(APPLIED.into(), Value::Bool(false));
        entry.memify_metadata = Some(Value::Object(meta));
        self.put_qa(&key, None, &entry).await?;
        Ok(true)
    }

    async fn delete_feedback(&self, user: &User, session_id: &str, qa_id: &str) -> Result<bool> {
        let key = Self::key(user, session_id)?;
        validation::qa_id(qa_id)?;
        let Some(mut entry) = self.store.qa_entry(&key, qa_id, now_millis()).await? else { return Ok(false) };
        entry.feedback_text = None;
        entry.feedback_score = None;
        self.put_qa(&key, None, &entry).await?;
        Ok(true)
    }

    async fn delete_session(&self, user: &User, session_id: &str) -> Result<bool> {
        self.store.delete_session(&Self::key(user, session_id)?).await
    }

    async fn forget_dataset(&self, dataset: DatasetId) -> Result<u64> {
        self.store.forget_dataset(dataset, &[default_session_id(Some(dataset))]).await
    }

    async fn pending_ratings(&self, dataset: DatasetId) -> Result<Vec<PendingRating>> {
        let mut pending = Vec::new();
        for (key, entry) in self.store.dataset_qa(dataset, now_millis()).await? {
            let meta = entry.memify_metadata.as_ref().and_then(Value::as_object);
            let flag = |k: &str| meta.and_then(|m| m.get(k));
            if flag(APPLIED).and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let implicit_score = flag(PREVIOUS_ANSWER_RATING).and_then(Value::as_i64);
            let (score, implicit) = match (entry.feedback_score, implicit_score) {
                (Some(s), _) => (s, false),
                (None, Some(s)) => (s, true),
                (None, None) => continue,
            };
            let uuids = |k: &str| -> Vec<Uuid> {
                entry
                    .used_graph_element_ids
                    .as_ref()
                    .and_then(|u| u.get(k))
                    .and_then(Value::as_array)
                    .map(|ids| ids.iter().filter_map(|v| v.as_str().and_then(|s| Uuid::parse_str(s).ok())).collect())
                    .unwrap_or_default()
            };
            let (node_ids, edge_ids) = (uuids("node_ids"), uuids("edge_ids"));
            if !(1..=5).contains(&score) || (node_ids.is_empty() && edge_ids.is_empty()) {
                continue;
            }
            let attempts = flag(ATTEMPTS).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
            pending.push(PendingRating { key, qa_id: entry.qa_id, score, implicit, node_ids, edge_ids, attempts });
        }
        Ok(pending)
    }

    async fn settle_rating(&self, rating: &PendingRating, applied: bool) -> Result<()> {
        let Some(mut entry) = self.store.qa_entry(&rating.key, &rating.qa_id, now_millis()).await? else {
            return Ok(());
        };
        let mut meta = take_metadata(&mut entry);
        let attempts = rating.attempts + 1;
        let done = applied || attempts >= MAX_RATING_ATTEMPTS;
        meta.insert(APPLIED.into(), Value::Bool(done));
        meta.insert(ATTEMPTS.into(), Value::from(attempts));
        if applied {
            meta.insert("feedback_weights_applied_score".into(), Value::from(rating.score));
            let source = if rating.implicit { "implicit" } else { "explicit" };
            meta.insert("feedback_weights_applied_source".into(), Value::from(source));
            let ids = |ids: &[Uuid]| Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>());
            meta.insert("feedback_weights_applied_node_ids".into(), ids(&rating.node_ids));
            meta.insert("feedback_weights_applied_edge_ids".into(), ids(&rating.edge_ids));
        }
        entry.memify_metadata = Some(Value::Object(meta));
        self.put_qa(&rating.key, None, &entry).await
    }

    async fn forget_elements(&self, dataset: DatasetId, element_ids: &[Uuid]) -> Result<u64> {
        if element_ids.is_empty() {
            return Ok(0);
        }
        let gone: std::collections::HashSet<String> = element_ids.iter().map(Uuid::to_string).collect();
        let mut by_session: std::collections::BTreeMap<SessionKey, Vec<String>> = Default::default();
        for (key, entry) in self.store.dataset_qa(dataset, now_millis()).await? {
            if used_ids(&entry).iter().any(|id| gone.contains(id)) {
                by_session.entry(key).or_default().push(entry.qa_id);
            }
        }
        let mut deleted = 0;
        for (key, ids) in by_session {
            deleted += self.store.delete_qa(&key, &ids).await?;
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests;
