//! What every Recall front end shares (the CLI today, the HTTP and MCP
//! servers next): the wire request and response types, the legacy search
//! result shapes, the graph exports and the mapping from a `RecallError` to
//! Cognee's HTTP status and body (docs/requests.md).
//!
//! It depends on the engine and the domain, never on a storage adapter.

pub mod dto;
pub mod errors;
pub mod graph_export;
pub mod search_results;
pub mod wire;

pub use dto::{edge_dto, graph_dto, iso_utc, node_dto, DataDto, DatasetDto};
pub use errors::{error_response, stream_error_frame, ErrorResponse, Route};
pub use graph_export::{bounded_subgraph, render_graph, GraphExport, GraphShape, GraphWriter};
pub use recall_core::{RecallResponse, SearchOptions};
pub use recall_engine::{RecallRequest, SearchRequest, SearchResultPayload};
pub use search_results::search_results;
pub use wire::{HistoryEntry, RecallBody, SearchBody};
