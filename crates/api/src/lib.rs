//! Recall's application layer: what every front end (the CLI, the HTTP
//! server, the MCP tools) shares. [`Application`] holds the use cases, each
//! written once with its policies (docs/application.md); beside it are the
//! wire request and response types, the legacy search result shapes, the
//! graph exports and the mapping from a `RecallError` to Cognee's HTTP
//! status and body (docs/requests.md).
//!
//! It depends on the engine and the domain, never on a storage adapter.

pub mod dto;
pub mod errors;
pub mod graph_export;
pub mod search_results;
pub mod service;
pub mod wire;

pub use dto::{edge_dto, graph_dto, iso_utc, node_dto, DataDto, DatasetDto};
pub use errors::{error_response, stream_error_frame, ErrorResponse, Route};
pub use graph_export::{bounded_subgraph, render_graph, GraphExport, GraphShape, GraphWriter};
pub use recall_core::{RecallResponse, SearchOptions};
// The engine's request and outcome types, as the front ends name them.
pub use recall_accounts::{validate_email, Accounts, CreatedApiKey, CredentialsConfig, PasswordCheck};
pub use recall_engine::skills::AddedSkill;
pub use recall_engine::{
    AddOutcome, ComponentHealth, DatasetListing, DatasetStatus, ForgetOutcome, ImproveOutcome, NoProgress,
    RecallExplain, RecallRequest, RecordedSkillRun, ReembedOutcome, ReembedProgress, RememberInput, RememberOutcome,
    RememberProgress, SearchRequest, SearchResultPayload, SkillRunEntry, UpdateOutcome, DEFAULT_TOP_K,
};
pub use search_results::search_results;
pub use service::{
    Application, BackgroundError, BackgroundWork, CognifyRun, EmbeddingHealth, ForgetReport, ForgetRequest,
    GrantRequest, ImproveRequest, Improvement, RememberReport, RememberRequest,
};
pub use wire::{HistoryEntry, RecallBody, SearchBody};
