//! Session memory (docs/sessions.md): what one conversation keeps — its QA
//! turns, agent-trace steps, guidance and feedback records — and the two
//! ports around it: [`SessionStore`], where it is kept, and [`SessionMemory`],
//! what the engine asks of it.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::ports::Embedder;
use crate::{
    DatasetId, EpochMillis, ResponseAgentTraceEntry, ResponseQAEntry, ResponseSessionContextEntry, Result, User,
};

/// A stored QA turn: the same fields a `session` recall returns.
pub type QaEntry = ResponseQAEntry;

/// A stored agent-trace step: the same fields a `trace` recall returns.
pub type TraceStep = ResponseAgentTraceEntry;

/// The longest session id accepted, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// A session id must be non-blank and at most [`MAX_SESSION_ID_BYTES`]
/// long: `SessionParameterValidationError` (422) otherwise.
pub fn validate_session_id(id: &str) -> Result<()> {
    let message = if id.trim().is_empty() {
        "session_id must be a non-empty string.".to_string()
    } else if id.len() > MAX_SESSION_ID_BYTES {
        format!("session_id is {} bytes long; the limit is {MAX_SESSION_ID_BYTES}.", id.len())
    } else {
        return Ok(());
    };
    Err(crate::RecallError::Validation { name: "SessionParameterValidationError", message })
}

/// Which conversation: a session id is the user's own name for it, so the
/// same id under two users names two sessions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionKey {
    pub user_id: Uuid,
    pub session_id: String,
}

impl SessionKey {
    pub fn new(user_id: Uuid, session_id: impl Into<String>) -> Self {
        Self { user_id, session_id: session_id.into() }
    }
}

/// When a write happens and how long the session lives after it: every write
/// slides the expiry of the session's rows (docs/sessions.md, "Retention").
/// `ttl_ms: None` means nothing expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStamp {
    pub now: EpochMillis,
    pub ttl_ms: Option<i64>,
}

impl WriteStamp {
    /// The expiry a row written now gets.
    pub fn expires_at(&self) -> Option<EpochMillis> {
        self.ttl_ms.map(|ttl| self.now.saturating_add(ttl))
    }

    /// Rows whose expiry is older than this are re-stamped by a write: a row
    /// is re-stamped only once it is more than 5 % of the TTL stale, so a
    /// busy session does not rewrite all its rows on every turn.
    pub fn restamp_before(&self) -> Option<EpochMillis> {
        self.ttl_ms.map(|ttl| self.now.saturating_add(ttl).saturating_sub(ttl / 20))
    }
}

/// The two kinds of record in a session's context table.
pub mod record_kind {
    /// A guidance entry (goals, rules, preferences, …).
    pub const CONTEXT: &str = "context";
    /// A feedback record (what a turn analysis or a user said about answers).
    pub const FEEDBACK: &str = "feedback";
}

/// A guidance entry or a feedback record, as its store keeps it: an id unique
/// within the session (writing an existing id replaces it), a kind
/// ([`record_kind`]) and the entry itself as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextRecord {
    pub id: String,
    pub kind: String,
    pub payload: Value,
}

/// A session's write counter and last write: the counter changes with
/// every write and delete in the session, so a reader that kept what it
/// read can tell whether it is still current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionVersion {
    pub version: i64,
    pub updated_at: EpochMillis,
}

/// A QA entry's embedding (of its question and answer), for recalling
/// older turns of a long session by similarity.
#[derive(Debug, Clone, PartialEq)]
pub struct QaVector {
    /// The embedding model's name: vectors of another model are not compared.
    pub model: String,
    pub vector: Vec<f32>,
}

/// A stored QA embedding: its entry and the session version it was written at.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredQaVector {
    pub qa_id: String,
    pub vector: Vec<f32>,
    pub version: i64,
}

/// A vector as the bytes a store keeps (little-endian `f32`s).
pub fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector [`vector_bytes`] wrote; `None` when the length is not a
/// multiple of four.
pub fn vector_from_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    bytes
        .len()
        .is_multiple_of(4)
        .then(|| bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// One session of a user, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub session_id: String,
    /// The dataset whose searches last wrote to it, when one did.
    pub dataset_id: Option<DatasetId>,
    pub created_at: EpochMillis,
    pub updated_at: EpochMillis,
    pub qa_count: u64,
    pub trace_count: u64,
}

/// Where session memory is kept. Every read takes the current time and never
/// returns a row whose expiry has passed; every write takes a [`WriteStamp`]
/// and slides the expiry of the session's other rows. Rows come back in the
/// order they were first written.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Appends a QA entry, or replaces the entry with the same `qa_id` where
    /// it stands. `dataset` is the dataset whose search wrote it, if any
    /// (forgetting that dataset forgets the entry); a replacement without one
    /// keeps the dataset recorded.
    async fn put_qa(&self, key: &SessionKey, dataset: Option<DatasetId>, entry: &QaEntry, at: WriteStamp)
        -> Result<()>;

    /// [`SessionStore::put_qa`] with the entry's embedding, in the same
    /// write. The vector replaces the entry's earlier one and is stamped
    /// with the session version of this write (what
    /// [`SessionStore::qa_vectors`] reads after). A `put_qa` of the same
    /// entry later keeps the vector.
    async fn put_qa_embedded(
        &self,
        key: &SessionKey,
        dataset: Option<DatasetId>,
        entry: &QaEntry,
        vector: &QaVector,
        at: WriteStamp,
    ) -> Result<()>;

    /// The embeddings of `model` of the session's live QA entries, written
    /// at a session version later than `after` (0: all), oldest first.
    async fn qa_vectors(
        &self,
        key: &SessionKey,
        model: &str,
        after: i64,
        now: EpochMillis,
    ) -> Result<Vec<StoredQaVector>>;

    /// Pins `node_set` on the session unless one is pinned already; the
    /// set pinned after the call (the earlier one when there was one). Does
    /// not count as a write of the session: a session that does not exist
    /// yet is created with it.
    async fn pin_node_set(&self, key: &SessionKey, node_set: &[String], at: WriteStamp) -> Result<Vec<String>>;

    /// The session's QA entries, oldest first; with `last_n`, only the newest
    /// `last_n` of them (still oldest first).
    async fn qa_entries(&self, key: &SessionKey, last_n: Option<usize>, now: EpochMillis) -> Result<Vec<QaEntry>>;

    /// One QA entry by id.
    async fn qa_entry(&self, key: &SessionKey, qa_id: &str, now: EpochMillis) -> Result<Option<QaEntry>>;

    /// Deletes QA entries by id; how many were deleted.
    async fn delete_qa(&self, key: &SessionKey, qa_ids: &[String]) -> Result<u64>;

    /// Appends an agent-trace step.
    async fn append_trace(&self, key: &SessionKey, step: &TraceStep, at: WriteStamp) -> Result<()>;

    /// The session's trace steps, oldest first; with `last_n`, the newest only.
    async fn trace_steps(&self, key: &SessionKey, last_n: Option<usize>, now: EpochMillis) -> Result<Vec<TraceStep>>;

    /// Writes a guidance entry or feedback record (an existing id is replaced where it stands).
    async fn put_record(&self, key: &SessionKey, record: &ContextRecord, at: WriteStamp) -> Result<()>;

    /// The session's records of one kind, oldest first.
    async fn records(&self, key: &SessionKey, kind: &str, now: EpochMillis) -> Result<Vec<ContextRecord>>;

    /// The user's live sessions, most recently written first.
    async fn sessions(&self, user_id: Uuid, now: EpochMillis) -> Result<Vec<SessionInfo>>;

    /// The session's version; `None` for a session that does not exist or expired.
    async fn session_version(&self, key: &SessionKey, now: EpochMillis) -> Result<Option<SessionVersion>>;

    /// Deletes everything of one session; whether there was anything.
    async fn delete_session(&self, key: &SessionKey) -> Result<bool>;

    /// Every live QA entry written by a search of `dataset`, with its session.
    async fn dataset_qa(&self, dataset: DatasetId, now: EpochMillis) -> Result<Vec<(SessionKey, QaEntry)>>;

    /// Forgets what a dataset left in session memory: the QA entries its
    /// searches wrote, and every user's sessions named `session_ids` (its
    /// default sessions). How many rows were deleted.
    async fn forget_dataset(&self, dataset: DatasetId, session_ids: &[String]) -> Result<u64>;

    /// Deletes every row whose expiry has passed; how many.
    async fn purge_expired(&self, now: EpochMillis) -> Result<u64>;
}

/// The conversation a completion carries into its prompts: the rendered
/// history and guidance blocks (empty when there are none), and the ids of
/// the guidance entries served.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// The session the turn is recorded in.
    pub session_id: String,
    pub history: String,
    pub guidance: String,
    pub served_context_ids: Vec<String>,
    /// The query of a second retrieval lane, quoting the last turns
    /// (concurrent mode, when there are earlier turns).
    pub retrieval_query: Option<String>,
}

/// A completed turn to record.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedTurn {
    pub question: String,
    pub answer: String,
    /// `{"node_ids": [...], "edge_ids": [...]}`, the graph elements the answer used.
    pub used_graph_element_ids: Option<Value>,
    pub used_session_context_ids: Vec<String>,
}

/// A typed entry remembered into a session directly (`remember/entry`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEntry {
    Qa {
        question: String,
        answer: String,
        #[serde(default)]
        context: String,
        #[serde(default)]
        qa_id: Option<String>,
        #[serde(default)]
        feedback_text: Option<String>,
        #[serde(default)]
        feedback_score: Option<i64>,
        /// `{"node_ids": [...], "edge_ids": [...]}`.
        #[serde(default)]
        used_graph_element_ids: Option<Value>,
        /// Pins the session's node set (the first entry that carries one).
        #[serde(default)]
        node_set: Option<Vec<String>>,
    },
    Trace {
        origin_function: String,
        #[serde(default = "default_trace_status")]
        status: String,
        #[serde(default)]
        memory_query: String,
        #[serde(default)]
        memory_context: String,
        #[serde(default)]
        method_params: Option<Value>,
        #[serde(default)]
        method_return_value: Option<Value>,
        #[serde(default)]
        error_message: Option<String>,
        #[serde(default)]
        session_feedback: Option<String>,
        /// Pins the session's node set (the first entry that carries one).
        #[serde(default)]
        node_set: Option<Vec<String>>,
    },
    Feedback {
        qa_id: String,
        #[serde(default)]
        feedback_text: Option<String>,
        #[serde(default)]
        feedback_score: Option<i64>,
    },
}

fn default_trace_status() -> String {
    "success".into()
}

/// What remembering an entry stored: the id of the QA entry or trace step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEntry {
    pub session_id: String,
    pub entry_type: String,
    pub id: String,
}

/// How a completion runs its turn analysis (`SESSION_SEARCH_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnMode {
    /// Beside retrieval and the answer; the analysis only decides whether
    /// the answer is kept or replaced by an acknowledgement.
    Concurrent,
    /// Before retrieval; a rewritten question steers it.
    Sequential,
}

/// A served guidance entry judged by the user's next message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextRating {
    pub entry_id: String,
    /// `helpful` or `harmful`.
    pub rating: String,
}

/// Guidance the user's message states (a goal, rule, preference or lesson).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuidanceCandidate {
    pub section: String,
    pub content: String,
    pub confidence: f64,
}

/// What a turn analysis read in a user's message (docs/sessions.md, "Turn
/// analysis"): whether it asks something (and what), what to say when it
/// does not, guidance it states, how it judges the guidance served to the
/// previous answer, and its rating of that answer (1..5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnAnalysis {
    #[serde(default)]
    pub response_to_user: Option<String>,
    #[serde(default)]
    pub query_to_answer: Option<String>,
    #[serde(default)]
    pub served_context_ratings: Vec<ContextRating>,
    #[serde(default)]
    pub candidate_context_updates: Vec<GuidanceCandidate>,
    #[serde(default)]
    pub previous_answer_rating: Option<i64>,
}

impl TurnAnalysis {
    /// Anything the analysis found.
    pub fn has_signal(&self) -> bool {
        self.query_to_answer.is_some()
            || self.response_to_user.is_some()
            || !self.served_context_ratings.is_empty()
            || !self.candidate_context_updates.is_empty()
    }

    /// Whether the message gets an answer: it asks something, or the
    /// analysis found nothing, or there is no earlier turn to react to.
    pub fn should_answer(&self, has_previous_turn: bool) -> bool {
        self.query_to_answer.is_some() || !self.has_signal() || !has_previous_turn
    }

    /// What a message that is not a question gets instead of an answer.
    pub fn acknowledgement(&self) -> String {
        self.response_to_user.clone().unwrap_or_else(|| "Got it.".into())
    }
}

/// A rating of an answer, not yet applied to the graph elements the answer
/// used (docs/sessions.md, "Feedback that changes ranking").
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRating {
    pub key: SessionKey,
    pub qa_id: String,
    /// 1..5.
    pub score: i64,
    /// From a turn analysis rather than the user: applied at half strength.
    pub implicit: bool,
    pub node_ids: Vec<Uuid>,
    pub edge_ids: Vec<Uuid>,
    /// Earlier attempts that failed.
    pub attempts: u32,
}

/// What the engine asks of session memory (the sessions crate implements
/// it): the `session`, `trace` and `session_context` lanes of recall, the
/// conversation a completion carries and the turn it records, and the
/// management calls of the CLI and the server. An engine without one
/// (`CACHING=false`) has no session memory: the lanes return nothing and
/// nothing is recorded.
#[async_trait]
pub trait SessionMemory: Send + Sync {
    /// QA entries of the session matching the query, best first, at most `top_k`.
    async fn search_qa(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        top_k: Option<usize>,
    ) -> Result<Vec<ResponseQAEntry>>;

    /// Agent-trace steps of the session matching the query.
    async fn search_traces(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        top_k: Option<usize>,
    ) -> Result<Vec<ResponseAgentTraceEntry>>;

    /// The session's guidance block for `profile`, read-only.
    async fn session_context(
        &self,
        user: &User,
        session_id: &str,
        query: &str,
        profile: &str,
    ) -> Result<Vec<ResponseSessionContextEntry>>;

    /// The session a completion over `dataset` records in: `session_id` when
    /// given, else the dataset's default session.
    fn resolve_session_id(&self, session_id: Option<&str>, dataset: Option<DatasetId>) -> String;

    /// Reads the session's trace steps not read yet with the LLM and keeps
    /// the agent lessons it proposes; how many were stored or linked.
    /// `None` when lessons are not extracted (`AUTO_FEEDBACK=false` or no LLM).
    async fn extract_agent_context(&self, _user: &User, _session_id: &str) -> Result<Option<usize>> {
        Ok(None)
    }

    /// The embedder QA turns are embedded with (the engine's, so a question
    /// is embedded once for the session and for retrieval). Without one,
    /// older turns are not recalled by similarity.
    fn attach_embedder(&self, _embedder: Arc<dyn Embedder>) {}

    /// How completions analyse their turns; `None` when they do not
    /// (`AUTO_FEEDBACK=false`, or no LLM).
    fn turn_mode(&self) -> Option<TurnMode> {
        None
    }

    /// Reads the user's message against the session's previous turn (an
    /// LLM call): the analysis, and whether there was a previous turn. Fails
    /// open: an analysis that cannot be made is empty.
    async fn analyze_turn(&self, _user: &User, _session_id: &str, _message: &str) -> Result<(TurnAnalysis, bool)> {
        Ok((TurnAnalysis::default(), false))
    }

    /// Applies an analysis to the session: a feedback record, the guidance
    /// it states, its ratings of the served guidance and of the previous answer.
    async fn apply_turn(
        &self,
        _user: &User,
        _session_id: &str,
        _message: &str,
        _analysis: &TurnAnalysis,
    ) -> Result<()> {
        Ok(())
    }

    /// The history and guidance a completion in this session carries
    /// (serving guidance stamps it unless `preview`).
    async fn conversation(&self, user: &User, session_id: &str, query: &str, preview: bool) -> Result<Conversation>;

    /// Records a completed turn; the stored entry.
    async fn record_turn(
        &self,
        user: &User,
        session_id: &str,
        dataset: Option<DatasetId>,
        turn: CompletedTurn,
    ) -> Result<QaEntry>;

    /// Stores a typed entry into the session; a QA entry records `dataset`
    /// (forgetting the dataset forgets it).
    async fn remember_entry(
        &self,
        user: &User,
        session_id: &str,
        dataset: Option<DatasetId>,
        entry: SessionEntry,
    ) -> Result<StoredEntry>;

    /// The user's sessions, most recently written first.
    async fn list_sessions(&self, user: &User) -> Result<Vec<SessionInfo>>;

    /// The session's QA entries, oldest first (the newest `last_n` with one).
    async fn qa_entries(&self, user: &User, session_id: &str, last_n: Option<usize>) -> Result<Vec<QaEntry>>;

    /// The session's trace steps, oldest first.
    async fn trace_steps(&self, user: &User, session_id: &str, last_n: Option<usize>) -> Result<Vec<TraceStep>>;

    /// Sets a QA entry's feedback (`None` keeps a field); `false` when no such entry.
    async fn add_feedback(
        &self,
        user: &User,
        session_id: &str,
        qa_id: &str,
        text: Option<String>,
        score: Option<i64>,
    ) -> Result<bool>;

    /// Clears a QA entry's feedback; `false` when no such entry.
    async fn delete_feedback(&self, user: &User, session_id: &str, qa_id: &str) -> Result<bool>;

    /// Deletes a session; whether it existed.
    async fn delete_session(&self, user: &User, session_id: &str) -> Result<bool>;

    /// Forgets what a dataset left in session memory: every QA entry its
    /// searches wrote and its default sessions.
    async fn forget_dataset(&self, dataset: DatasetId) -> Result<u64>;

    /// The ratings of `dataset`'s answers that the graph has not taken in yet.
    async fn pending_ratings(&self, dataset: DatasetId) -> Result<Vec<PendingRating>>;

    /// Records that a rating was applied (or that an attempt failed: after
    /// three, it is given up).
    async fn settle_rating(&self, rating: &PendingRating, applied: bool) -> Result<()>;

    /// Forgets the QA entries of `dataset`'s searches that used any of
    /// `element_ids` (graph elements that no longer exist).
    async fn forget_elements(&self, dataset: DatasetId, element_ids: &[Uuid]) -> Result<u64>;
}
